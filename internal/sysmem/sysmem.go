// Package sysmem reports the machine's physical memory, from which the
// runtime's default memory budgets are derived (tensor.AllocLimit, the
// devices' MAX_HOST_MEMORY).
//
// Where it sits in the data flow: beneath everything; read once.
package sysmem

import "sync"

// fallback is the physical memory assumed where it cannot be read.
const fallback = 8 << 30

// Physical returns the machine's physical memory in bytes (8 GiB when the
// platform does not say).
var Physical = sync.OnceValue(func() int64 {
	if n := physical(); n > 0 {
		return n
	}
	return fallback
})
