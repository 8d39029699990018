package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/ir"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/plugin/driver"
)

// Core reads models, compiles them for devices by name and answers device
// properties. Devices are constructed on first use and kept until Close. It
// is safe for concurrent use, and its zero value is ready to use, like a
// sync.Mutex's: NewCore is only a convenience.
//
// A device whose construction fails is not retried: the error (which says
// what is missing, e.g. no OpenCL driver, and how to install it) is kept
// and returned on every later use of that device by this Core. Install the
// missing piece and make a new Core to retry.
//
// Devices register themselves when their package is imported; the root
// package github.com/clinfer/clinfer imports every device.
type Core struct {
	d driver.Core
}

// NewCore returns a Core over the registered devices. It constructs none.
func NewCore() *Core { return &Core{} }

// ReadModel reads a model file: OpenVINO IR when path ends in .xml (its
// weights from the .bin file beside it; see ReadModelWithWeights), ONNX
// otherwise (external tensor data resolved relative to the file's
// directory). The returned model describes its ports (Inputs, Outputs)
// with their dynamic dimensions before it is compiled. A missing file is
// an error wrapping ErrNotFound (and fs.ErrNotExist), a malformed model
// ErrInvalidArgument, an op or type clinfer cannot import ErrUnsupported;
// each also wraps the frontend's own sentinel (onnx's or ir's). After
// Close it is an error wrapping ErrClosed.
func (c *Core) ReadModel(path string) (*graph.Model, error) {
	if err := c.d.Check(fmt.Sprintf("read model %q", path)); err != nil {
		return nil, err
	}
	if isIRPath(path) {
		m, err := ir.ReadFile(path)
		return m, readError(err)
	}
	m, err := onnx.ReadFile(path)
	return m, readError(err)
}

// ReadModelWithWeights reads an OpenVINO IR model whose weights are in
// the file weights rather than beside it, as OpenVINO's
// Core::read_model(model, weights) does.
func (c *Core) ReadModelWithWeights(path, weights string) (*graph.Model, error) {
	if err := c.d.Check(fmt.Sprintf("read model %q", path)); err != nil {
		return nil, err
	}
	m, err := ir.ReadFile(path, ir.WithWeightsFile(weights))
	return m, readError(err)
}

// isIRPath reports whether path names an IR document.
func isIRPath(path string) bool { return strings.EqualFold(filepath.Ext(path), ".xml") }

// ReadModelFrom reads a model from r, as ReadModel reads a file: an IR
// document (which must then need no weights: use ReadIRFrom) or ONNX. A
// model with external tensor data cannot be read this way: use ReadModel
// on its file. After Close it is an error wrapping ErrClosed.
func (c *Core) ReadModelFrom(r io.Reader) (*graph.Model, error) {
	if err := c.d.Check("read model"); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, driver.Errorf(ErrInvalidArgument, "plugin: read model: %w", err)
	}
	if ir.IsIR(data) {
		m, err := ir.Read(data)
		return m, readError(err)
	}
	m, err := onnx.Read(data)
	return m, readError(err)
}

// ReadIRFrom reads an OpenVINO IR model from its document and its weights
// (nil when it has none).
func (c *Core) ReadIRFrom(doc, weights io.Reader) (*graph.Model, error) {
	if err := c.d.Check("read model"); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(doc)
	if err != nil {
		return nil, driver.Errorf(ErrInvalidArgument, "plugin: read model: %w", err)
	}
	var opts []ir.Option
	if weights != nil {
		w, err := io.ReadAll(weights)
		if err != nil {
			return nil, driver.Errorf(ErrInvalidArgument, "plugin: read weights: %w", err)
		}
		opts = append(opts, ir.WithWeights(w))
	}
	m, err := ir.Read(data, opts...)
	return m, readError(err)
}

// readError adds the plugin sentinel that matches a frontend error.
func readError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return driver.Errorf(ErrNotFound, "%w", err)
	case errors.Is(err, onnx.ErrUnsupportedOp), errors.Is(err, onnx.ErrUnsupportedAttribute), errors.Is(err, onnx.ErrUnsupportedType),
		errors.Is(err, ir.ErrUnsupportedOp), errors.Is(err, ir.ErrUnsupportedAttribute), errors.Is(err, ir.ErrUnsupportedType):
		return driver.Errorf(ErrUnsupported, "%w", err)
	}
	return driver.Errorf(ErrInvalidArgument, "%w", err)
}

// CompileModel compiles m for the device named by device ("CPU", "GPU",
// "GPU.1" for DEVICE_ID=1, "HETERO:GPU,CPU" for DEVICE_PRIORITIES=GPU,CPU)
// with the device's configuration overridden by props (nil for none; see
// Props and the With options); m and props are not modified. It returns
// ctx's error if ctx is done before compilation starts.
//
// An unknown device is an error wrapping ErrNotFound, an op the device
// cannot run ErrUnsupported naming the node, a bad property
// ErrInvalidArgument naming the key and the accepted values.
//
// With CACHE_DIR set (in props or on the device) and a device that can
// import what it exports, the compiled model is cached in CACHE_DIR, one
// blob per model, device and configuration, and a later call imports it
// (LOADED_FROM_CACHE=YES) instead of compiling.
func (c *Core) CompileModel(ctx context.Context, m *graph.Model, device string, props map[string]string) (*CompiledModel, error) {
	cm, err := c.d.CompileModel(ctx, m, device, props)
	if err != nil {
		return nil, err
	}
	return newCompiledModel(cm, device), nil
}

// ImportModel reads a compiled model that CompiledModel.Export wrote for
// the same device. A blob of another format version, device or device
// architecture is an error wrapping ErrIncompatible that names both
// values, a damaged one ErrCorrupt; props override the configuration the
// model was exported with. The imported model reports
// LOADED_FROM_CACHE=YES.
func (c *Core) ImportModel(ctx context.Context, r io.Reader, device string, props map[string]string) (*CompiledModel, error) {
	cm, err := c.d.ImportModel(ctx, r, device, props)
	if err != nil {
		return nil, err
	}
	return newCompiledModel(cm, device), nil
}

// QueryModel asks the device which nodes of m it can run: friendly node
// name -> device name. HETERO uses the answers to split a model. A device
// that cannot answer is an error wrapping ErrNotImplemented.
func (c *Core) QueryModel(ctx context.Context, m *graph.Model, device string, props map[string]string) (map[string]string, error) {
	return c.d.QueryModel(ctx, m, device, props)
}

// SetProperties sets read-write properties of a device ("GPU.1" sets them
// on device 1); later compilations start from them. An unknown or
// read-only key or a bad value is an error naming the key and the
// accepted values, and then nothing changes. props is not modified.
func (c *Core) SetProperties(device string, props map[string]string) error {
	return c.d.SetProperties(device, props)
}

// Property returns a property of a device as a string (see the Key
// constants); an unknown key is an error wrapping ErrNotFound that lists
// the device's keys.
func (c *Core) Property(device, key string) (string, error) {
	return c.d.Property(device, key)
}

// AvailableDevices lists the devices that work, sorted: "CPU", "GPU" (or
// "GPU.0", "GPU.1" with several), "HETERO". A device whose construction
// fails is left out; CompileModel on it says why.
func (c *Core) AvailableDevices() []string { return c.d.AvailableDevices() }

// Close closes every device the Core constructed and joins their errors;
// close the compiled models first. Later calls return nil; using the Core
// afterwards is an error wrapping ErrClosed.
func (c *Core) Close() error { return c.d.Close() }

// Devices returns the sorted names of the registered devices ("CPU",
// "GPU", "HETERO"), whether or not they work here; it constructs none.
// Core.AvailableDevices lists the ones that work.
func Devices() []string { return driver.Devices() }
