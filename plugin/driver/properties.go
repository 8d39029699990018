package driver

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/clinfer/clinfer/internal/suggest"
)

// PropertySpec describes one property key of a device: whether users may
// set it, its default, and how a value is checked and normalised. Devices
// build their configuration from a table of specs: CommonSpecs plus their
// own read-only facts.
type PropertySpec struct {
	// Key is the property name ("PERFORMANCE_HINT").
	Key string
	// Mutable reports whether users may set the key (RW) or only read it
	// (RO).
	Mutable bool
	// Default is the initial value (ignored when Get is set).
	Default string
	// Accepted describes the accepted values for error messages
	// ("LATENCY, THROUGHPUT, CUMULATIVE_THROUGHPUT").
	Accepted string
	// Parse checks a value and returns its normal form ("true" -> "YES");
	// nil accepts any value unchanged. Its error explains what is wrong;
	// Set adds the key, the value and Accepted.
	Parse func(string) (string, error)
	// Get computes a read-only value on each read (e.g. a device's free
	// memory); nil means the stored value is returned.
	Get func() (string, error)
	// RuntimeOnly marks a read-write key that changes how a compiled
	// model runs but not what compiling it makes (GPU_WAIT_SPIN_US: how
	// long a wait polls): it stays out of the model cache's key and out
	// of the configuration an imported blob's recorded plan is checked
	// against, so that a model compiled under one value imports from the
	// cache under another (and runs with the other). CACHING_PROPERTIES
	// lists the read-write keys that are not runtime-only.
	RuntimeOnly bool
}

// Properties is a device's or compiled model's configuration: the values
// of a fixed set of keys described by PropertySpecs. It is safe for
// concurrent use. The zero value has no keys; use NewProperties.
type Properties struct {
	mu     sync.RWMutex
	order  []string
	specs  map[string]PropertySpec
	values map[string]string
}

// NewProperties returns properties with the given specs, each key at its
// default. A later spec with the same key replaces an earlier one, so a
// device can restrict a common spec:
//
//	driver.NewProperties(append(driver.CommonSpecs(),
//		driver.PrecisionSpec(tensor.F32, tensor.F32))...)
//
// SUPPORTED_PROPERTIES is added when no spec names it. NewProperties panics
// on a spec with an empty key or an invalid default, which are programmer
// errors found the first time the device is constructed.
func NewProperties(specs ...PropertySpec) *Properties {
	p := &Properties{specs: map[string]PropertySpec{}, values: map[string]string{}}
	p.add(specs...)
	if _, ok := p.specs[KeySupportedProperties]; !ok {
		p.add(PropertySpec{Key: KeySupportedProperties, Get: p.supported})
	}
	return p
}

// addCaching installs CACHING_PROPERTIES once a spec is runtime-only; the
// caller holds mu or owns p exclusively.
func (p *Properties) addCaching() {
	if _, ok := p.specs[KeyCachingProperties]; ok {
		return
	}
	for _, s := range p.specs {
		if s.RuntimeOnly && s.Mutable {
			p.order = append(p.order, KeyCachingProperties)
			p.specs[KeyCachingProperties] = PropertySpec{Key: KeyCachingProperties, Get: p.caching}
			return
		}
	}
}

// rebind points the computed keys that describe p itself
// (SUPPORTED_PROPERTIES, CACHING_PROPERTIES) at p: a copy must describe the
// copy. The caller owns p exclusively.
func (p *Properties) rebind() {
	if s, ok := p.specs[KeySupportedProperties]; ok && s.Get != nil && !s.Mutable {
		s.Get = p.supported
		p.specs[KeySupportedProperties] = s
	}
	if s, ok := p.specs[KeyCachingProperties]; ok && s.Get != nil && !s.Mutable {
		s.Get = p.caching
		p.specs[KeyCachingProperties] = s
	}
}

// CachingKeys returns the read-write keys that decide what compiling
// makes, in spec order: all of them but the runtime-only ones (see
// PropertySpec.RuntimeOnly) and CACHE_DIR.
func (p *Properties) CachingKeys() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var keys []string
	for _, k := range p.order {
		if s := p.specs[k]; s.Mutable && !s.RuntimeOnly && k != KeyCacheDir {
			keys = append(keys, k)
		}
	}
	return keys
}

// caching is CACHING_PROPERTIES' value: CachingKeys, space-separated.
func (p *Properties) caching() (string, error) {
	return strings.Join(p.CachingKeys(), " "), nil
}

// add installs specs; the caller holds mu or owns p exclusively.
func (p *Properties) add(specs ...PropertySpec) {
	for _, s := range specs {
		if s.Key == "" {
			panic("plugin: PropertySpec with an empty key")
		}
		if CanonicalKey(s.Key) != s.Key {
			panic("plugin: PropertySpec key " + s.Key + " is an alias of " + CanonicalKey(s.Key))
		}
		v := s.Default
		if s.Get == nil && s.Parse != nil {
			n, err := s.Parse(v)
			if err != nil {
				panic("plugin: PropertySpec " + s.Key + " default " + v + " is invalid: " + err.Error())
			}
			v = n
		}
		if _, seen := p.specs[s.Key]; !seen {
			p.order = append(p.order, s.Key)
		}
		p.specs[s.Key] = s
		if s.Get == nil {
			p.values[s.Key] = v
		} else {
			delete(p.values, s.Key)
		}
	}
	p.addCaching()
}

// Extend returns a copy of p with more specs (or replaced ones) at their
// defaults; the values p already holds for other keys are kept. Compiled
// models use it to add their read-only facts (NETWORK_NAME,
// OPTIMAL_NUMBER_OF_INFER_REQUESTS) to the plugin's configuration.
func (p *Properties) Extend(specs ...PropertySpec) *Properties {
	c := p.Clone()
	c.add(specs...)
	c.rebind() // SUPPORTED_PROPERTIES must describe the copy, not p
	return c
}

// Clone returns an independent copy; setting values on it leaves p as it is.
// Computed (Get) specs are shared.
func (p *Properties) Clone() *Properties {
	p.mu.RLock()
	defer p.mu.RUnlock()
	c := &Properties{
		order:  slices.Clone(p.order),
		specs:  maps.Clone(p.specs),
		values: maps.Clone(p.values),
	}
	if c.specs == nil {
		c.specs = map[string]PropertySpec{}
		c.values = map[string]string{}
	}
	c.rebind()
	return c
}

// Keys returns every key in the order the specs were given.
func (p *Properties) Keys() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return slices.Clone(p.order)
}

// Spec returns the spec of key (or of the key it is an alias of).
func (p *Properties) Spec(key string) (PropertySpec, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	s, ok := p.specs[CanonicalKey(key)]
	return s, ok
}

// Has reports whether key (or the key it is an alias of) is supported.
func (p *Properties) Has(key string) bool {
	_, ok := p.Spec(key)
	return ok
}

// Get returns the value of key. An unknown key is an error wrapping
// ErrNotFound that lists the supported keys.
func (p *Properties) Get(key string) (string, error) {
	p.mu.RLock()
	s, ok := p.specs[CanonicalKey(key)]
	v := p.values[CanonicalKey(key)]
	p.mu.RUnlock()
	if !ok {
		return "", p.unknown(key)
	}
	if s.Get != nil {
		// Outside the lock: Get may read other properties.
		return s.Get()
	}
	return v, nil
}

// Values returns the stored values of all keys without a computed Get, by
// key. The map is a copy.
func (p *Properties) Values() map[string]string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return maps.Clone(p.values)
}

// Set validates every entry of props and then applies them all, or none:
// an unknown key is an error wrapping ErrNotFound that names the key and
// lists the supported keys; a read-only key, or a value the key's Parse
// rejects, is an error wrapping ErrInvalidArgument that names the key, the
// value and the accepted values. Entries are checked in key order, so the
// error is deterministic. Values are stored in normal form.
func (p *Properties) Set(props map[string]string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parsed := make(map[string]string, len(props))
	for _, k := range keys {
		v := props[k]
		ck := CanonicalKey(k)
		s, ok := p.specs[ck]
		if !ok {
			return p.unknownLocked(k)
		}
		if !s.Mutable {
			return errorf(ErrInvalidArgument, "plugin: property %s is read-only (cannot set it to %q)", k, v)
		}
		n := v
		if s.Parse != nil {
			var err error
			if n, err = s.Parse(v); err != nil {
				return errorf(ErrInvalidArgument, "plugin: bad value %q for property %s: %w (accepted: %s)", v, k, err, accepted(s))
			}
		}
		if prev, dup := parsed[ck]; dup && prev != n {
			return errorf(ErrInvalidArgument, "plugin: property %s given twice with different values (%q and %q, one through an alias)", ck, prev, n)
		}
		parsed[ck] = n
	}
	for k, v := range parsed {
		p.values[k] = v
	}
	return nil
}

// accepted is the accepted-values text of s for messages.
func accepted(s PropertySpec) string {
	if s.Accepted != "" {
		return s.Accepted
	}
	return "any string"
}

// SupportedProperties renders the keys as SUPPORTED_PROPERTIES does: a
// space-separated list of "KEY:RW" and "KEY:RO".
func (p *Properties) SupportedProperties() string {
	s, _ := p.supported()
	return s
}

func (p *Properties) supported() (string, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	parts := make([]string, len(p.order))
	for i, k := range p.order {
		if p.specs[k].Mutable {
			parts[i] = k + ":RW"
		} else {
			parts[i] = k + ":RO"
		}
	}
	return strings.Join(parts, " "), nil
}

// ParseSupportedProperties splits a SUPPORTED_PROPERTIES value into its
// keys and whether each is read-write. A malformed entry is an error
// wrapping ErrInvalidArgument.
func ParseSupportedProperties(s string) (keys []string, rw map[string]bool, err error) {
	rw = map[string]bool{}
	for _, f := range strings.Fields(s) {
		k, mode, ok := strings.Cut(f, ":")
		if !ok || k == "" || (mode != "RW" && mode != "RO") {
			return nil, nil, errorf(ErrInvalidArgument, "plugin: bad SUPPORTED_PROPERTIES entry %q (want KEY:RW or KEY:RO)", f)
		}
		keys = append(keys, k)
		rw[k] = mode == "RW"
	}
	return keys, rw, nil
}

func (p *Properties) unknown(key string) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.unknownLocked(key)
}

func (p *Properties) unknownLocked(key string) error {
	keys := slices.Clone(p.order)
	sort.Strings(keys)
	return errorf(ErrNotFound, "plugin: unknown property %s%s (supported: %s)", key, suggest.DidYouMean(key, keys), strings.Join(keys, ", "))
}
