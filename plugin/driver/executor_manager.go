package driver

import (
	"errors"
	"sort"
	"sync"
)

// ExecutorManager shares executors by name among the compiled models of one
// plugin, as OpenVINO's executor manager does: Acquire returns the running
// executor of that name or starts one, Release gives a reference back, and
// an executor stops when its last reference is released. Close, called by
// the owning plugin's Close (after its compiled models are closed, as
// Plugin.Close requires), stops whatever is left. Its zero value is ready to
// use; it is safe for concurrent use.
type ExecutorManager struct {
	mu     sync.Mutex
	closed bool
	execs  map[string]*managedExecutor
}

type managedExecutor struct {
	e    *Executor
	refs int
}

// Acquire returns the executor called cfg.Name, starting it with cfg if
// none runs, and takes a reference to it; give it back with Release. An
// executor of that name with a different Streams or Queue is an error
// wrapping ErrInvalidArgument that names it (put the configuration in the
// name: "CPU.task.4"). After Close it fails with ErrClosed.
func (m *ExecutorManager) Acquire(cfg ExecutorConfig) (*Executor, error) {
	cfg.Streams = max(cfg.Streams, 1)
	cfg.Queue = max(cfg.Queue, 0)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errorf(ErrClosed, "plugin: executor manager is closed (executor %q)", cfg.Name)
	}
	if me, ok := m.execs[cfg.Name]; ok {
		if me.e.cfg != cfg {
			return nil, errorf(ErrInvalidArgument, "plugin: executor %q already runs with %d streams and queue %d, asked for %d and %d",
				cfg.Name, me.e.cfg.Streams, me.e.cfg.Queue, cfg.Streams, cfg.Queue)
		}
		me.refs++
		return me.e, nil
	}
	if m.execs == nil {
		m.execs = map[string]*managedExecutor{}
	}
	e := NewExecutor(cfg)
	m.execs[cfg.Name] = &managedExecutor{e: e, refs: 1}
	return e, nil
}

// Release gives back a reference taken by Acquire; the last one stops the
// executor (waiting for its queued tasks). Releasing an executor the
// manager does not hold is an error wrapping ErrNotFound.
func (m *ExecutorManager) Release(e *Executor) error {
	m.mu.Lock()
	me, ok := m.execs[e.cfg.Name]
	if !ok || me.e != e {
		m.mu.Unlock()
		return errorf(ErrNotFound, "plugin: executor manager does not hold executor %q", e.cfg.Name)
	}
	me.refs--
	if me.refs > 0 {
		m.mu.Unlock()
		return nil
	}
	delete(m.execs, e.cfg.Name)
	m.mu.Unlock()
	return e.Close()
}

// Stats returns the counters of every running executor, sorted by name.
func (m *ExecutorManager) Stats() []ExecutorStats {
	m.mu.Lock()
	names := make([]string, 0, len(m.execs))
	execs := make(map[string]*Executor, len(m.execs))
	for name, me := range m.execs {
		names = append(names, name)
		execs[name] = me.e
	}
	m.mu.Unlock()
	sort.Strings(names)
	out := make([]ExecutorStats, len(names))
	for i, n := range names {
		out[i] = execs[n].Stats()
	}
	return out
}

// Close refuses new executors and stops every executor the manager holds,
// referenced or not, after its queued tasks ran; later Release calls of
// those executors return ErrNotFound, and their Run and Submit ErrClosed.
// Close is idempotent.
func (m *ExecutorManager) Close() error {
	m.mu.Lock()
	m.closed = true
	execs := m.execs
	m.execs = nil
	m.mu.Unlock()
	var errs []error
	for _, name := range sortedNames(execs) {
		errs = append(errs, execs[name].e.Close())
	}
	return errors.Join(errs...)
}
