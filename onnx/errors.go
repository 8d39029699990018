package onnx

import "errors"

// Sentinel errors; every error the package returns wraps one of them (or an
// os error for unreadable files), so callers can use errors.Is.
var (
	// ErrInvalidModel is wrapped by errors about malformed protobuf data or
	// graphs that break ONNX's rules (undefined values, bad tensors).
	ErrInvalidModel = errors.New("onnx: invalid model")
	// ErrUnsupportedOp is wrapped by errors about an op type, domain or
	// opset version the frontend cannot import.
	ErrUnsupportedOp = errors.New("onnx: unsupported op")
	// ErrUnsupportedAttribute is wrapped by errors about an attribute value
	// whose meaning the op set cannot express.
	ErrUnsupportedAttribute = errors.New("onnx: unsupported attribute")
	// ErrUnsupportedType is wrapped by errors about an ONNX data type clinfer
	// has no element type for.
	ErrUnsupportedType = errors.New("onnx: unsupported data type")
	// ErrExternalData is wrapped by errors about tensors stored outside the
	// model file: a missing base directory, a location escaping it, or a
	// file too short.
	ErrExternalData = errors.New("onnx: bad external data")
)
