package driver

import (
	"context"
	"strconv"
)

// randomSeedKey is the context key of a request's random seed.
type randomSeedKey struct{}

// WithRandomSeed returns a context whose inferences draw the random ops
// without a seed attribute from seed, instead of the compiled model's
// RANDOM_SEED: pass it to one Infer to make that inference reproducible
// on its own. The same seed gives the same tensors on every device.
func WithRandomSeed(ctx context.Context, seed uint64) context.Context {
	return context.WithValue(ctx, randomSeedKey{}, seed)
}

// RequestSeed is the seed an inference under ctx draws from: the one
// WithRandomSeed set, else the compiled model's RANDOM_SEED in props.
func RequestSeed(ctx context.Context, props *Properties) uint64 {
	if s, ok := ctx.Value(randomSeedKey{}).(uint64); ok {
		return s
	}
	if props != nil {
		if v, err := props.Get(KeyRandomSeed); err == nil {
			if s, err := strconv.ParseUint(v, 10, 64); err == nil {
				return s
			}
		}
	}
	return 0
}
