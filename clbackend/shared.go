package clbackend

import (
	"io"
	"sync"
)

// shared is an OpenCL object with several owners: the plugin (context,
// program cache) and the compiled models that use it. Each owner holds one
// reference; the last release closes the object, so a compiled model keeps
// working after the plugin is closed.
type shared[T io.Closer] struct {
	val T

	mu   sync.Mutex
	refs int
}

// newShared returns v with one reference, the caller's.
func newShared[T io.Closer](v T) *shared[T] { return &shared[T]{val: v, refs: 1} }

// acquire adds a reference. Acquiring a released object is a programmer
// error of this package.
func (s *shared[T]) acquire() T {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refs <= 0 {
		panic("clbackend: acquire of a released shared object")
	}
	s.refs++
	return s.val
}

// release drops a reference and closes the object with the last one,
// returning Close's error.
func (s *shared[T]) release() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refs <= 0 {
		return nil
	}
	s.refs--
	if s.refs == 0 {
		return s.val.Close()
	}
	return nil
}
