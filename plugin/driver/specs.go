package driver

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/clinfer/clinfer/tensor"
)

// EnumSpec is a read-write key whose value is one of values (matched
// case-insensitively and stored as listed).
func EnumSpec(key, def string, values ...string) PropertySpec {
	return PropertySpec{
		Key: key, Mutable: true, Default: def,
		Accepted: strings.Join(values, ", "),
		Parse: func(s string) (string, error) {
			for _, v := range values {
				if strings.EqualFold(strings.TrimSpace(s), v) {
					return v, nil
				}
			}
			return "", errors.New("not one of the accepted values")
		},
	}
}

// BoolSpec is a read-write YES/NO key; it also accepts true/false, 1/0 and
// any case, and stores YES or NO.
func BoolSpec(key string, def bool) PropertySpec {
	return PropertySpec{
		Key: key, Mutable: true, Default: FormatBool(def),
		Accepted: "YES, NO (or true, false)",
		Parse: func(s string) (string, error) {
			b, err := ParseBool(s)
			if err != nil {
				return "", errors.New("not a boolean")
			}
			return FormatBool(b), nil
		},
	}
}

// IntSpec is a read-write integer key with a lower bound; values are stored
// in decimal without sign or leading zeros ("+007" -> "7").
func IntSpec(key string, def, min int) PropertySpec {
	return PropertySpec{
		Key: key, Mutable: true, Default: strconv.Itoa(def),
		Accepted: fmt.Sprintf("an integer >= %d", min),
		Parse: func(s string) (string, error) {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				return "", errors.New("not an integer")
			}
			if n < min {
				return "", fmt.Errorf("less than %d", min)
			}
			return strconv.Itoa(n), nil
		},
	}
}

// BytesSpec is a read-write size in bytes: a positive integer, optionally
// with a unit (K, M, G, T for powers of 1024; KiB, MiB, GiB, TiB, KB, MB,
// GB, TB likewise), stored as the number of bytes.
func BytesSpec(key string, def int64) PropertySpec {
	return PropertySpec{
		Key: key, Mutable: true, Default: strconv.FormatInt(def, 10),
		Accepted: "a positive number of bytes, e.g. 8589934592 or 8GiB",
		Parse: func(s string) (string, error) {
			n, err := ParseBytes(s)
			if err != nil {
				return "", err
			}
			return strconv.FormatInt(n, 10), nil
		},
	}
}

// ParseBytes parses a positive byte count with an optional unit (see
// BytesSpec).
func ParseBytes(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"TIB", 40}, {"GIB", 30}, {"MIB", 20}, {"KIB", 10}, {"TB", 40}, {"GB", 30}, {"MB", 20}, {"KB", 10}, {"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}, {"B", 0}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), int64(1)<<u.shift
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.New("not a positive number of bytes")
	}
	if n > (1<<63-1)/mult {
		return 0, errors.New("too large")
	}
	return n * mult, nil
}

// StringSpec is a read-write key that takes any string without NUL bytes.
func StringSpec(key, def string) PropertySpec {
	return PropertySpec{
		Key: key, Mutable: true, Default: def,
		Accepted: "any string without NUL bytes",
		Parse: func(s string) (string, error) {
			if strings.IndexByte(s, 0) >= 0 {
				return "", errors.New("contains a NUL byte")
			}
			return s, nil
		},
	}
}

// ReadOnlySpec is a read-only key with a fixed value.
func ReadOnlySpec(key, value string) PropertySpec {
	return PropertySpec{Key: key, Default: value}
}

// ComputedSpec is a read-only key whose value get computes on each read.
func ComputedSpec(key string, get func() (string, error)) PropertySpec {
	return PropertySpec{Key: key, Get: get}
}

// StreamsSpec is NUM_STREAMS with OpenVINO's values (ov::streams::Num):
// AUTO (stored as "AUTO"; -1, its numeric value, is accepted as AUTO) or a
// number of streams from 1 to max; max <= 0 is no bound (a virtual device
// that passes the value on to devices which check their own). A value the
// device cannot run is refused with the reason, never clamped: 0, NUMA
// (-2: streams are not placed on NUMA nodes) and more streams than the
// device runs at once (RANGE_FOR_STREAMS, which StreamSpecs declares with
// the same max).
func StreamsSpec(def string, max int) PropertySpec {
	acc := "AUTO (or -1) or an integer >= 1"
	if max > 0 {
		acc = fmt.Sprintf("AUTO (or -1) or an integer from 1 to %d", max)
	}
	return PropertySpec{
		Key: KeyNumStreams, Mutable: true, Default: def,
		Accepted: acc,
		Parse: func(s string) (string, error) {
			n, why := numStreams(s)
			if why != "" {
				return "", errors.New(why)
			}
			if max > 0 && n > max {
				return "", fmt.Errorf("this device runs at most %d streams at once (%s is \"1 %d\")", max, KeyRangeForStreams, max)
			}
			return FormatNumStreams(n), nil
		},
	}
}

// StreamSpecs are NUM_STREAMS (StreamsSpec, default AUTO) and
// RANGE_FOR_STREAMS ("1 max") of a device that runs at most max streams at
// once, so that the range it declares is the range it accepts.
func StreamSpecs(max int) []PropertySpec {
	return []PropertySpec{
		StreamsSpec(FormatNumStreams(0), max),
		ReadOnlySpec(KeyRangeForStreams, fmt.Sprintf("1 %d", max)),
	}
}

// PrecisionSpec is INFERENCE_PRECISION_HINT restricted to allowed (any
// spelling tensor.ParseElementType knows, stored as "f32", "f16", "bf16").
// A device that only computes in f32 uses PrecisionSpec(tensor.F32,
// tensor.F32) to replace the common spec.
func PrecisionSpec(def tensor.ElementType, allowed ...tensor.ElementType) PropertySpec {
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = a.String()
	}
	return PropertySpec{
		Key: KeyInferencePrecisionHint, Mutable: true, Default: def.String(),
		Accepted: strings.Join(names, ", "),
		Parse: func(s string) (string, error) {
			t, err := tensor.ParseElementType(s)
			if err != nil {
				return "", errors.New("not an element type")
			}
			for _, a := range allowed {
				if a == t {
					return t.String(), nil
				}
			}
			return "", fmt.Errorf("%s is not supported by this device", t)
		},
	}
}

// CommonSpecs returns the read-write properties every device shares, at
// these defaults:
//
//	PERFORMANCE_HINT          LATENCY (as OpenVINO; THROUGHPUT, CUMULATIVE_THROUGHPUT)
//	NUM_REQUESTS              0 (no bound)
//	NUM_STREAMS               AUTO (the device derives it from the hint)
//	ENABLE_PROFILING          NO
//	INFERENCE_PRECISION_HINT  f32 (f16, bf16; devices may restrict)
//	EXECUTION_MODE_HINT       PERFORMANCE (ACCURACY)
//	CACHE_DIR                 "" (no cache)
//	MODEL_PRIORITY            MEDIUM (LOW, HIGH)
//	LOG_LEVEL                 LOG_NONE
//	DISABLE_TRANSFORMATIONS   NO
//	EXCLUSIVE_ASYNC_REQUESTS  NO
//
// There is no "no hint" value: OpenVINO's UNDEFINED hint is gone, and
// LATENCY is what it defaults to. The slice is new on every call.
func CommonSpecs() []PropertySpec {
	return []PropertySpec{
		EnumSpec(KeyPerformanceHint, HintLatency.String(), HintLatency.String(), HintThroughput.String(), HintCumulativeThroughput.String()),
		IntSpec(KeyNumRequests, 0, 0),
		StreamsSpec(FormatNumStreams(0), 0),
		BoolSpec(KeyEnableProfiling, false),
		PrecisionSpec(tensor.F32, tensor.F32, tensor.F16, tensor.BF16),
		EnumSpec(KeyExecutionModeHint, ModePerformance.String(), ModePerformance.String(), ModeAccuracy.String()),
		StringSpec(KeyCacheDir, ""),
		EnumSpec(KeyModelPriority, PriorityMedium.String(), PriorityLow.String(), PriorityMedium.String(), PriorityHigh.String()),
		EnumSpec(KeyLogLevel, LogNone.String(), LogNone.String(), LogError.String(), LogWarning.String(), LogInfo.String(), LogDebug.String(), LogTrace.String()),
		BoolSpec(KeyDisableTransformations, false),
		BoolSpec(KeyExclusiveAsyncRequests, false),
		BytesSpec(KeyMaxHostMemory, tensor.DefaultAllocLimit()),
		{
			Key: KeyRandomSeed, Mutable: true, Default: "0", Accepted: "an unsigned 64-bit integer",
			Parse: func(s string) (string, error) {
				n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
				if err != nil {
					return "", errors.New("not an unsigned 64-bit integer")
				}
				return strconv.FormatUint(n, 10), nil
			},
		},
	}
}

// ParseBool parses YES/NO, true/false, 1/0 and ON/OFF, in any case.
func ParseBool(s string) (bool, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "YES", "TRUE", "1", "ON":
		return true, nil
	case "NO", "FALSE", "0", "OFF":
		return false, nil
	}
	return false, errorf(ErrInvalidArgument, "plugin: %q is not a boolean (accepted: YES, NO, true, false)", s)
}

// FormatBool formats b as YES or NO.
func FormatBool(b bool) string {
	if b {
		return "YES"
	}
	return "NO"
}

// ParseNumStreams parses a NUM_STREAMS value as OpenVINO's
// ov::streams::Num: AUTO, or -1 (AUTO's numeric value), is 0 (the device
// derives the number from PERFORMANCE_HINT); otherwise an integer >= 1.
// Anything else is an error wrapping ErrInvalidArgument that says why.
func ParseNumStreams(s string) (int, error) {
	n, why := numStreams(s)
	if why != "" {
		return 0, errorf(ErrInvalidArgument, "plugin: bad value %q for property %s: %s (accepted: AUTO (or -1) or an integer >= 1)", s, KeyNumStreams, why)
	}
	return n, nil
}

// numStreams is ParseNumStreams' parse: the number (0 for AUTO), or why s
// is not one.
func numStreams(s string) (int, string) {
	t := strings.TrimSpace(s)
	switch {
	case strings.EqualFold(t, "AUTO"):
		return 0, ""
	case strings.EqualFold(t, "NUMA"), t == "-2":
		return 0, "NUMA (-2) is not supported: clinfer does not place streams on NUMA nodes"
	}
	n, err := strconv.Atoi(t)
	switch {
	case err != nil:
		return 0, "not AUTO or an integer"
	case n == -1:
		return 0, ""
	case n == 0:
		return 0, "0 streams cannot run a request; AUTO lets the device choose"
	case n < 0:
		return 0, "a number of streams is at least 1; -1 is AUTO"
	}
	return n, ""
}

// FormatNumStreams formats n as NUM_STREAMS: 0 (or less) is AUTO.
func FormatNumStreams(n int) string {
	if n <= 0 {
		return "AUTO"
	}
	return strconv.Itoa(n)
}
