// Package names makes node names unique, for the model frontends (onnx,
// ir) that name nodes after the source model's and must not give two
// nodes one name.
package names

import "strconv"

// Set is the names taken in one graph. Its zero value is empty and ready.
type Set struct {
	used map[string]bool
	// next remembers the last suffix tried per name, so many nodes of one
	// name cost linear time, not quadratic.
	next map[string]int
}

// Unique returns name, or name_1, name_2, ... when taken, and takes it.
func (s *Set) Unique(name string) string {
	if s.used == nil {
		s.used, s.next = map[string]bool{}, map[string]int{}
	}
	if !s.used[name] {
		s.used[name] = true
		return name
	}
	for i := s.next[name] + 1; ; i++ {
		c := name + "_" + strconv.Itoa(i)
		if !s.used[c] {
			s.used[c] = true
			s.next[name] = i
			return c
		}
	}
}

// Take takes name as it is, whether or not it was taken.
func (s *Set) Take(name string) {
	if s.used == nil {
		s.used, s.next = map[string]bool{}, map[string]int{}
	}
	s.used[name] = true
}

// Taken reports whether name is taken.
func (s *Set) Taken(name string) bool { return s.used[name] }
