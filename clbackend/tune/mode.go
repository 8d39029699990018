package tune

import (
	"errors"
	"fmt"
	"strings"
)

// Mode is the GPU_TUNING_MODE property: whether and how hard the planner
// searches a kernel family's variants.
type Mode int

// The tuning modes.
const (
	// None plans with the recorded choices and the heuristics; it never
	// times a kernel.
	None Mode = iota
	// Fast times a budgeted subset of each family's candidates (see
	// Budget) for every choice that has no record yet.
	Fast
	// Exhaustive times every candidate the device can launch, and
	// replaces the records Fast made.
	Exhaustive
)

// ErrMode is wrapped by the error of an unknown mode name.
var ErrMode = errors.New("tune: unknown tuning mode")

var modeNames = []string{"NONE", "FAST", "EXHAUSTIVE"}

// String returns the property value ("FAST").
func (m Mode) String() string {
	if m < 0 || int(m) >= len(modeNames) {
		return fmt.Sprintf("Mode(%d)", int(m))
	}
	return modeNames[m]
}

// MarshalText implements encoding.TextMarshaler.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler (flag.TextVar): NONE,
// FAST or EXHAUSTIVE, in any case.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := ParseMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// ParseMode reads a mode name (NONE, FAST, EXHAUSTIVE; any case).
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return Mode(i), nil
		}
	}
	return None, fmt.Errorf("tune: tuning mode %q (accepted: %s): %w", s, strings.Join(modeNames, ", "), ErrMode)
}

// ModeNames returns the accepted mode names.
func ModeNames() []string { return append([]string(nil), modeNames...) }
