package hetero

import (
	"fmt"
	"sort"
	"strings"

	"github.com/clinfer/clinfer/plugin/driver"
)

var _ driver.CacheKeyer = (*Plugin)(nil)

// CacheKey implements driver.CacheKeyer: a HETERO compiled model depends on
// the devices it splits across, so the model cache key includes, for each
// device in priority order, its architecture and its read-write
// configuration (what SetDeviceProperties changed, such as the ops a device
// has disabled). CACHE_DIR does not count.
func (p *Plugin) CacheKey(props map[string]string) (string, error) {
	if err := p.check(); err != nil {
		return "", err
	}
	_, devs, err := p.config(props)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, d := range devs {
		dp, err := p.core.Plugin(d)
		if err != nil {
			return "", fmt.Errorf("hetero: cache key: device %s: %w", d, err)
		}
		arch, _ := p.core.Property(d, driver.KeyDeviceArchitecture)
		fmt.Fprintf(&b, "device %s arch %s\x00", d, arch)
		cfg := driver.ConfigFingerprint(dp)
		delete(cfg, driver.KeyCacheDir)
		keys := make([]string, 0, len(cfg))
		for k := range cfg {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "%s=%s\x00", k, cfg[k])
		}
	}
	return b.String(), nil
}
