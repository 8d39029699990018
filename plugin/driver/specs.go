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

// StreamsSpec is NUM_STREAMS: AUTO (stored as "AUTO", also accepted as
// "-1" as OpenVINO does) or an integer >= 1.
func StreamsSpec(def string) PropertySpec {
	return PropertySpec{
		Key: KeyNumStreams, Mutable: true, Default: def,
		Accepted: "AUTO or an integer >= 1",
		Parse: func(s string) (string, error) {
			n, err := ParseNumStreams(s)
			if err != nil {
				return "", errors.New("not AUTO or an integer >= 1")
			}
			return FormatNumStreams(n), nil
		},
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
		StreamsSpec(FormatNumStreams(0)),
		BoolSpec(KeyEnableProfiling, false),
		PrecisionSpec(tensor.F32, tensor.F32, tensor.F16, tensor.BF16),
		EnumSpec(KeyExecutionModeHint, ModePerformance.String(), ModePerformance.String(), ModeAccuracy.String()),
		StringSpec(KeyCacheDir, ""),
		EnumSpec(KeyModelPriority, PriorityMedium.String(), PriorityLow.String(), PriorityMedium.String(), PriorityHigh.String()),
		EnumSpec(KeyLogLevel, LogNone.String(), LogNone.String(), LogError.String(), LogWarning.String(), LogInfo.String(), LogDebug.String(), LogTrace.String()),
		BoolSpec(KeyDisableTransformations, false),
		BoolSpec(KeyExclusiveAsyncRequests, false),
		BytesSpec(KeyMaxHostMemory, tensor.DefaultAllocLimit()),
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

// ParseNumStreams parses a NUM_STREAMS value: AUTO (or -1) is 0, otherwise
// an integer >= 1.
func ParseNumStreams(s string) (int, error) {
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "AUTO") {
		return 0, nil
	}
	n, err := strconv.Atoi(t)
	if err != nil {
		return 0, errorf(ErrInvalidArgument, "plugin: NUM_STREAMS %q is not AUTO or an integer", s)
	}
	if n == -1 {
		return 0, nil
	}
	if n < 1 {
		return 0, errorf(ErrInvalidArgument, "plugin: NUM_STREAMS %d is less than 1", n)
	}
	return n, nil
}

// FormatNumStreams formats n as NUM_STREAMS: 0 (or less) is AUTO.
func FormatNumStreams(n int) string {
	if n <= 0 {
		return "AUTO"
	}
	return strconv.Itoa(n)
}
