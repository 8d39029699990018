package driver

import "sync"

// maxVerdicts bounds a Verdicts cache; past it the cache starts again.
const maxVerdicts = 256

// Verdicts remembers the result of a check a device runs before an
// inference, per key (the inputs' shapes): the CPU's MAX_HOST_MEMORY peak,
// HETERO's check that the whole model takes the inputs. Its zero value is
// ready; it is safe for concurrent use.
type Verdicts struct {
	mu sync.Mutex
	m  map[string]error
}

// Check returns the verdict for key, running check the first time (two
// callers with a new key may both run it).
func (v *Verdicts) Check(key string, check func() error) error {
	v.mu.Lock()
	err, ok := v.m[key]
	v.mu.Unlock()
	if ok {
		return err
	}
	err = check()
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil || len(v.m) >= maxVerdicts {
		v.m = map[string]error{}
	}
	v.m[key] = err
	return err
}
