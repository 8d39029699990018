package tensor

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"

	"github.com/clinfer/clinfer/internal/sysmem"
)

// ErrTooLarge is wrapped by errors about a tensor whose size overflows
// int64 or is over AllocLimit. New returns it instead of asking the Go
// runtime for memory it cannot have (which is a fatal error, not a
// panic). Devices report it as plugin.ErrResourceExhausted with the node.
var ErrTooLarge = errors.New("tensor: too large")

// allocLimit is SetAllocLimit's value; 0 means DefaultAllocLimit.
var allocLimit atomic.Int64

// DefaultAllocLimit is the largest tensor New makes by default: half the
// machine's physical memory.
func DefaultAllocLimit() int64 { return sysmem.Physical() / 2 }

// AllocLimit returns the largest tensor, in bytes, that New makes.
func AllocLimit() int64 {
	if n := allocLimit.Load(); n > 0 {
		return n
	}
	return DefaultAllocLimit()
}

// SetAllocLimit sets the largest tensor New makes, for the whole process,
// and returns the previous setting; n <= 0 restores DefaultAllocLimit. It is
// a last line of defence below the devices' budgets (MAX_HOST_MEMORY),
// which check whole inferences.
func SetAllocLimit(n int64) int64 {
	if n < 0 {
		n = 0
	}
	return allocLimit.Swap(n)
}

// Bytes returns the size in bytes of a tensor of type t and shape s, and
// false when it overflows int64 (or a dimension is negative).
func (s Shape) Bytes(t ElementType) (int64, bool) {
	n := uint64(t.Size())
	for _, d := range s {
		if d < 0 {
			return 0, false
		}
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, false
		}
		n = lo
	}
	return int64(n), true
}

// checkSize returns an error wrapping ErrTooLarge when a tensor of type t
// and shape s overflows or is over AllocLimit.
func checkSize(t ElementType, s Shape) (int64, error) {
	n, ok := s.Bytes(t)
	if !ok {
		return 0, fmt.Errorf("%w: %v%v: the size overflows int64", ErrTooLarge, t, s)
	}
	if limit := AllocLimit(); n > limit {
		return 0, fmt.Errorf("%w: %v%v needs %s, over the %s a tensor may take (tensor.AllocLimit)", ErrTooLarge, t, s, FormatBytes(n), FormatBytes(limit))
	}
	return n, nil
}

// FormatBytes writes a byte count for people: "64.0 GiB", "512 B".
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n), 0
	for v >= unit && i < 5 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[i-1])
}
