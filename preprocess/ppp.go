package preprocess

import (
	"fmt"

	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/internal/sentinel"
	"github.com/clinfer/clinfer/tensor"
)

// ErrInvalid is wrapped by every error Build returns about a
// configuration that does not fit the model (an unknown input, a layout
// without the axes a step needs, a resize to a dynamic size...). It
// matches the user API's ErrInvalidArgument too.
var ErrInvalid = sentinel.Errorf(sentinel.ErrInvalidArgument, "preprocess: invalid configuration")

// ColorFormat is an image's colour format.
type ColorFormat int

// The colour formats.
const (
	// ColorUndefined: the tensor's channels are taken as they are.
	ColorUndefined ColorFormat = iota
	// RGB and BGR are three channels in that order.
	RGB
	BGR
	// GRAY is one channel.
	GRAY
	// NV12TwoPlanes is NV12 in two inputs: the luma plane Y [N,H,W,1] and
	// the interleaved chroma plane UV [N,H/2,W/2,2], both u8 (or float).
	// The input becomes two Parameters named "<name>/y" and "<name>/uv".
	NV12TwoPlanes
	// NV12SinglePlane is NV12 in one input [N,H*3/2,W,1]: Y then UV.
	NV12SinglePlane
)

// String names the format as OpenVINO does.
func (f ColorFormat) String() string {
	switch f {
	case RGB:
		return "RGB"
	case BGR:
		return "BGR"
	case GRAY:
		return "GRAY"
	case NV12TwoPlanes:
		return "NV12_TWO_PLANES"
	case NV12SinglePlane:
		return "NV12_SINGLE_PLANE"
	}
	return "UNDEFINED"
}

// ResizeAlgorithm is a Resize step's interpolation.
type ResizeAlgorithm int

// The interpolations, as OpenVINO's PrePostProcessor makes them (an
// Interpolate-11 of its default attributes): each samples at half-pixel
// centres, (x + 0.5) * in / out - 0.5, clamped to the image; linear and
// cubic (a = -0.75) weigh the neighbours, nearest takes the pixel at that
// coordinate rounded, halves down.
const (
	ResizeLinear ResizeAlgorithm = iota
	ResizeNearest
	ResizeCubic
)

// CustomStep is a step written by the user: it takes the value so far and
// returns the value the next step takes, adding graph nodes as it likes.
type CustomStep func(x graph.Output) (graph.Output, error)

// PrePostProcessor adds pre- and post-processing to a model, as OpenVINO's
// ov::preprocess::PrePostProcessor does: per input, what the tensor the
// user passes is (element type, layout, colour format, spatial size) and
// the steps that make it the model's input; per output, the steps that
// make the model's output the tensor the user gets. Build returns a new
// model whose graph contains the steps as nodes, so that a device
// compiles them as it compiles the model (the GPU runs them; the first
// convolution absorbs what it can), and they are exported and cached
// with it.
//
// The setters return their receiver for chaining; a mistake is reported
// by Build, which also checks the configuration against the model.
type PrePostProcessor struct {
	m       *graph.Model
	inputs  []*InputInfo
	outputs []*OutputInfo
}

// New returns a PrePostProcessor for m, which Build does not modify.
func New(m *graph.Model) *PrePostProcessor { return &PrePostProcessor{m: m} }

// Input returns the configuration of the input named name.
func (p *PrePostProcessor) Input(name string) *InputInfo {
	for _, in := range p.inputs {
		if in.name == name {
			return in
		}
	}
	in := &InputInfo{name: name, index: -1}
	in.tensor.info, in.steps.info, in.model.info = in, in, in
	p.inputs = append(p.inputs, in)
	return in
}

// InputAt returns the configuration of input i (the model's i-th
// Parameter).
func (p *PrePostProcessor) InputAt(i int) *InputInfo {
	name := ""
	if i >= 0 && i < len(p.m.Parameters) {
		name = p.m.Parameters[i].Name
	}
	in := p.Input(name)
	if name == "" {
		in.index = i
	}
	return in
}

// Output returns the configuration of the output named name.
func (p *PrePostProcessor) Output(name string) *OutputInfo {
	for _, o := range p.outputs {
		if o.name == name {
			return o
		}
	}
	o := &OutputInfo{name: name, index: -1}
	o.tensor.info, o.steps.info, o.model.info = o, o, o
	p.outputs = append(p.outputs, o)
	return o
}

// OutputAt returns the configuration of output i (the model's i-th
// Result).
func (p *PrePostProcessor) OutputAt(i int) *OutputInfo {
	name := ""
	if i >= 0 && i < len(p.m.Results) {
		name = p.m.Results[i].Name
	}
	o := p.Output(name)
	if name == "" {
		o.index = i
	}
	return o
}

// InputInfo configures one input.
type InputInfo struct {
	name  string
	index int // set when InputAt named no input
	errs  []error

	tensor InputTensorInfo
	steps  PreProcessSteps
	model  InputModelInfo

	elem        tensor.ElementType
	layout      Layout
	modelLayout Layout
	color       ColorFormat
	spatialHW   [2]int64 // -1: dynamic; 0: the model's
	list        []step
}

// Tensor is what the user's tensor is.
func (in *InputInfo) Tensor() *InputTensorInfo { return &in.tensor }

// Preprocess is the steps from the user's tensor to the model's input.
func (in *InputInfo) Preprocess() *PreProcessSteps { return &in.steps }

// Model is what the model's input is.
func (in *InputInfo) Model() *InputModelInfo { return &in.model }

// InputTensorInfo describes the tensor the user passes for an input.
type InputTensorInfo struct{ info *InputInfo }

// SetElementType sets the tensor's element type (u8, f16, f32...).
func (t *InputTensorInfo) SetElementType(e tensor.ElementType) *InputTensorInfo {
	t.info.elem = e
	return t
}

// SetLayout sets the tensor's layout ("NHWC").
func (t *InputTensorInfo) SetLayout(l string) *InputTensorInfo {
	t.info.layout = t.info.parse(l)
	return t
}

// SetColorFormat sets the tensor's colour format.
func (t *InputTensorInfo) SetColorFormat(f ColorFormat) *InputTensorInfo {
	t.info.color = f
	return t
}

// SetSpatialDynamicShape makes the tensor's height and width dynamic: each
// request passes images of its own size, which a Resize step brings to
// the model's.
func (t *InputTensorInfo) SetSpatialDynamicShape() *InputTensorInfo {
	t.info.spatialHW = [2]int64{-1, -1}
	return t
}

// SetSpatialStaticShape fixes the tensor's height and width.
func (t *InputTensorInfo) SetSpatialStaticShape(h, w int64) *InputTensorInfo {
	if h < 1 || w < 1 {
		t.info.errs = append(t.info.errs, fmt.Errorf("%w: input %q: spatial shape %dx%d is not positive", ErrInvalid, t.info.name, h, w))
	}
	t.info.spatialHW = [2]int64{h, w}
	return t
}

func (in *InputInfo) parse(s string) Layout {
	l, err := ParseLayout(s)
	if err != nil {
		in.errs = append(in.errs, fmt.Errorf("input %q: %w", in.name, err))
	}
	return l
}

// InputModelInfo describes the model's side of an input.
type InputModelInfo struct{ info *InputInfo }

// SetLayout sets the model's layout of the input ("NCHW"). An IR model's
// layout runtime info sets it too.
func (m *InputModelInfo) SetLayout(l string) *InputModelInfo {
	m.info.modelLayout = m.info.parse(l)
	return m
}

// stepKind is what a step does.
type stepKind int

const (
	stepConvertElementType stepKind = iota
	stepConvertLayout
	stepConvertColor
	stepResize
	stepMean
	stepScale
	stepReverseChannels
	stepCustom
)

// step is one recorded step.
type step struct {
	kind   stepKind
	elem   tensor.ElementType
	layout Layout
	color  ColorFormat
	alg    ResizeAlgorithm
	hw     [2]int64 // resize target; 0: the model's
	values []float32
	custom CustomStep
}

// PreProcessSteps are an input's steps, run in the order they are added.
type PreProcessSteps struct{ info *InputInfo }

func (s *PreProcessSteps) add(st step) *PreProcessSteps {
	s.info.list = append(s.info.list, st)
	return s
}

// ConvertElementType converts the values to e.
func (s *PreProcessSteps) ConvertElementType(e tensor.ElementType) *PreProcessSteps {
	return s.add(step{kind: stepConvertElementType, elem: e})
}

// ConvertLayout transposes the tensor to layout l (the model's layout
// when l is ""); the layout the steps before it see is the tensor's.
func (s *PreProcessSteps) ConvertLayout(l string) *PreProcessSteps {
	var lay Layout
	if l != "" {
		lay = s.info.parse(l)
	}
	return s.add(step{kind: stepConvertLayout, layout: lay})
}

// ConvertColor converts the image to colour format f: NV12 to RGB or BGR,
// RGB to BGR and back.
func (s *PreProcessSteps) ConvertColor(f ColorFormat) *PreProcessSteps {
	return s.add(step{kind: stepConvertColor, color: f})
}

// Resize resizes the image to the model's height and width with alg.
func (s *PreProcessSteps) Resize(alg ResizeAlgorithm) *PreProcessSteps {
	return s.add(step{kind: stepResize, alg: alg})
}

// ResizeTo resizes the image to h x w with alg.
func (s *PreProcessSteps) ResizeTo(alg ResizeAlgorithm, h, w int64) *PreProcessSteps {
	return s.add(step{kind: stepResize, alg: alg, hw: [2]int64{h, w}})
}

// Mean subtracts mean values: one for every value, or one per channel.
func (s *PreProcessSteps) Mean(values ...float32) *PreProcessSteps {
	return s.add(step{kind: stepMean, values: append([]float32(nil), values...)})
}

// Scale divides by scale values: one for every value, or one per channel.
func (s *PreProcessSteps) Scale(values ...float32) *PreProcessSteps {
	return s.add(step{kind: stepScale, values: append([]float32(nil), values...)})
}

// ReverseChannels reverses the order of the channels (RGB <-> BGR).
func (s *PreProcessSteps) ReverseChannels() *PreProcessSteps {
	return s.add(step{kind: stepReverseChannels})
}

// Custom adds a step of the user's.
func (s *PreProcessSteps) Custom(f CustomStep) *PreProcessSteps {
	return s.add(step{kind: stepCustom, custom: f})
}

// OutputInfo configures one output.
type OutputInfo struct {
	name  string
	index int // set when OutputAt named no output
	errs  []error

	tensor OutputTensorInfo
	steps  PostProcessSteps
	model  OutputModelInfo

	elem        tensor.ElementType
	layout      Layout
	modelLayout Layout
	list        []step
}

// Tensor is what the user gets for the output.
func (o *OutputInfo) Tensor() *OutputTensorInfo { return &o.tensor }

// Postprocess is the steps from the model's output to the user's tensor.
func (o *OutputInfo) Postprocess() *PostProcessSteps { return &o.steps }

// Model is what the model's output is.
func (o *OutputInfo) Model() *OutputModelInfo { return &o.model }

// OutputModelInfo describes the model's side of an output.
type OutputModelInfo struct{ info *OutputInfo }

// SetLayout sets the model's layout of the output ("NCHW").
func (m *OutputModelInfo) SetLayout(l string) *OutputModelInfo {
	m.info.modelLayout = m.info.parse(l)
	return m
}

func (o *OutputInfo) parse(s string) Layout {
	l, err := ParseLayout(s)
	if err != nil {
		o.errs = append(o.errs, fmt.Errorf("output %q: %w", o.name, err))
	}
	return l
}

// OutputTensorInfo describes the tensor the user gets for an output.
type OutputTensorInfo struct{ info *OutputInfo }

// SetElementType sets the element type the output is converted to.
func (t *OutputTensorInfo) SetElementType(e tensor.ElementType) *OutputTensorInfo {
	t.info.elem = e
	return t
}

// SetLayout sets the layout the output is transposed to.
func (t *OutputTensorInfo) SetLayout(l string) *OutputTensorInfo {
	t.info.layout = t.info.parse(l)
	return t
}

// PostProcessSteps are an output's steps, run in the order they are added.
type PostProcessSteps struct{ info *OutputInfo }

// ConvertElementType converts the values to e.
func (s *PostProcessSteps) ConvertElementType(e tensor.ElementType) *PostProcessSteps {
	s.info.list = append(s.info.list, step{kind: stepConvertElementType, elem: e})
	return s
}

// ConvertLayout transposes the output to layout l.
func (s *PostProcessSteps) ConvertLayout(l string) *PostProcessSteps {
	s.info.list = append(s.info.list, step{kind: stepConvertLayout, layout: s.info.parse(l)})
	return s
}

// Custom adds a step of the user's.
func (s *PostProcessSteps) Custom(f CustomStep) *PostProcessSteps {
	s.info.list = append(s.info.list, step{kind: stepCustom, custom: f})
	return s
}
