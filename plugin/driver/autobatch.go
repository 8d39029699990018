package driver

import (
	"context"
	"errors"
	"maps"
	"strings"

	"github.com/clinfer/clinfer/graph"
)

// BatchDeviceName is the name the automatic batching device registers
// under (package github.com/clinfer/clinfer/batch).
const BatchDeviceName = "BATCH"

// autoBatch reports whether CompileModel on ref goes through the BATCH
// device, as OpenVINO's Core does: BATCH is registered, the device lists
// ALLOW_AUTO_BATCHING and it is YES, and PERFORMANCE_HINT is THROUGHPUT
// (props win over the device's own values). A device name with a list
// ("HETERO:GPU,CPU") never is.
func (c *Core) autoBatch(ref deviceRef, props map[string]string) bool {
	if ref.priorities != "" || ref.name == BatchDeviceName {
		return false
	}
	if _, ok := factory(BatchDeviceName); !ok {
		return false
	}
	allow, ok := c.effective(ref, props, KeyAllowAutoBatching)
	if !ok {
		return false
	}
	if on, err := ParseBool(allow); err != nil || !on {
		return false
	}
	hint, ok := c.effective(ref, props, KeyPerformanceHint)
	return ok && strings.EqualFold(strings.TrimSpace(hint), HintThroughput.String())
}

// effective is the value of key for a compilation on ref: props' (under
// any alias), else the device's; false when the device has no such key.
func (c *Core) effective(ref deviceRef, props map[string]string, key string) (string, bool) {
	v, err := c.Property(ref.full, key)
	if err != nil {
		return "", false
	}
	for k, pv := range props {
		if CanonicalKey(k) == key {
			v = pv
		}
	}
	return v, true
}

// compileAutoBatch compiles m on the BATCH device over ref. An error other
// than ctx's means BATCH cannot batch the model (no batch dimension, a
// dynamic one it cannot fix); CompileModel then compiles on the device
// itself, unbatched, since the user asked for the device, not for BATCH.
func (c *Core) compileAutoBatch(ctx context.Context, m *graph.Model, ref deviceRef, props map[string]string) (CompiledModel, error) {
	bp, err := c.plugin(BatchDeviceName)
	if err != nil {
		return nil, err
	}
	bprops := maps.Clone(props)
	for k := range bprops {
		if ck := CanonicalKey(k); ck == KeyDeviceID || ck == KeyDevicePriorities {
			delete(bprops, k)
		}
	}
	bprops[KeyDevicePriorities] = ref.full
	cm, err := bp.CompileModel(ctx, m, bprops)
	if err != nil && ctx.Err() != nil {
		return nil, errors.Join(ctx.Err(), err)
	}
	return cm, err
}
