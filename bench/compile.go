package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/cliutil"
	"github.com/clinfer/clinfer/onnx"
	"github.com/clinfer/clinfer/plugin/driver"
	"github.com/clinfer/clinfer/tensor"
)

// ParseInput splits "name=AxBxC" ("name=" for a scalar), the input
// spelling ORTSpec and CompileWithInputs share.
func ParseInput(spec string) (string, tensor.Shape, error) {
	name, dims, ok := strings.Cut(spec, "=")
	if !ok || name == "" {
		return "", nil, fmt.Errorf("input %q: want name=AxBxC", spec)
	}
	sh := tensor.Shape{}
	if dims == "" {
		return name, sh, nil
	}
	for _, d := range strings.Split(dims, "x") {
		n, err := strconv.ParseInt(d, 10, 64)
		if err != nil || n < 1 {
			return "", nil, fmt.Errorf("input %q: bad dimension %q", spec, d)
		}
		sh = append(sh, n)
	}
	return name, sh, nil
}

// CompileWithInputs reads the model at path, fixes its inputs to the
// shapes of inputs ("name=AxBxC", as ORTSpec's), compiles it on device
// with props, creates a request and binds seeded random inputs (seed 1,
// as bench.js's) or the one value values gives an input
// ("name=V[:type]"). It returns CompileModel's time too (with the
// device's warm-up, without reading the model). The caller closes the
// request and the model.
func CompileWithInputs(ctx context.Context, core *driver.Core, path string, inputs, values []string, device string, props map[string]string) (_ driver.CompiledModel, _ driver.InferRequest, compile time.Duration, err error) {
	model, err := onnx.ReadFile(path)
	if err != nil {
		return nil, nil, 0, err
	}
	reshape := map[string]graph.PartialShape{}
	shapes := map[string]tensor.Shape{}
	for _, spec := range inputs {
		name, sh, err := ParseInput(spec)
		if err != nil {
			return nil, nil, 0, err
		}
		reshape[name] = graph.StaticShape(sh)
		shapes[name] = sh
	}
	if err := model.Reshape(reshape); err != nil {
		return nil, nil, 0, fmt.Errorf("reshaping to %s: %w", strings.Join(inputs, " "), err)
	}
	data, err := cliutil.RandomInputs(model, shapes, 1)
	if err != nil {
		return nil, nil, 0, err
	}
	for _, v := range values {
		name, val, _ := strings.Cut(v, "=")
		val, _, _ = strings.Cut(val, ":")
		f, err := strconv.ParseFloat(val, 64)
		x := data[name]
		if err != nil || x == nil {
			return nil, nil, 0, fmt.Errorf("value %q: want name=V:type for an input", v)
		}
		if data[name], err = tensor.FromFloat64s(x.Type(), x.Shape(), []float64{f}); err != nil {
			return nil, nil, 0, fmt.Errorf("value %q: %w", v, err)
		}
	}
	t0 := time.Now()
	cm, err := core.CompileModel(ctx, model, device, props)
	compile = time.Since(t0)
	if err != nil {
		return nil, nil, 0, err
	}
	req, err := cm.CreateInferRequest()
	if err != nil {
		return nil, nil, 0, errors.Join(err, cm.Close())
	}
	for _, p := range cm.Inputs() { // a stateful model's states are its request's
		if err := req.SetTensor(p.Name, data[p.Name]); err != nil {
			return nil, nil, 0, errors.Join(err, req.Close(), cm.Close())
		}
	}
	return cm, req, compile, nil
}
