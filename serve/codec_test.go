package serve

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/clinfer/clinfer"
	"github.com/clinfer/clinfer/graph"
	"github.com/clinfer/clinfer/tensor"
)

// clsVersion is a version with PP-OCR cls's ports (x f32[?,3,48,192] ->
// y f32[?,2]) and no compiled model: enough to decode and encode.
func clsVersion() *version {
	dims := []graph.Dim{{Size: -1}, {Size: 3}, {Size: 48}, {Size: 192}}
	return &version{model: "cls", number: 1,
		inputs:  []clinfer.PortInfo{{Name: "x", Type: tensor.F32, Shape: graph.PartialShape{Dims: dims, RankKnown: true}}},
		outputs: []clinfer.PortInfo{{Name: "y", Type: tensor.F32, Shape: graph.PartialShape{Dims: []graph.Dim{{Size: -1}, {Size: 2}}, RankKnown: true}}}}
}

// clsBodies are a cls request as JSON and as binary tensor data.
func clsBodies() (jsonBody, binBody []byte, headerLen int) {
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 3*48*192)
	for i := range x {
		x[i] = r.Float32()*2 - 1
	}
	jsonBody, _ = json.Marshal(map[string]any{"inputs": []any{map[string]any{"name": "x", "shape": []int{1, 3, 48, 192}, "datatype": "FP32", "data": x}}})
	head := fmt.Sprintf(`{"inputs":[{"name":"x","shape":[1,3,48,192],"datatype":"FP32","parameters":{"binary_data_size":%d}}]}`, 4*len(x))
	xt, _ := tensor.FromF32(tensor.Shape{1, 3, 48, 192}, x)
	return jsonBody, append([]byte(head), xt.Bytes()...), len(head)
}

// TestJSONAndBinaryAgree: the same cls input decodes to the same tensor
// from JSON and from binary data, and a JSON round trip of an output keeps
// every float32.
func TestJSONAndBinaryAgree(t *testing.T) {
	s := &Server{opts: Options{MaxTensorBytes: 1 << 30}}
	v := clsVersion()
	jb, bb, hl := clsBodies()
	var jr, br restInferRequest
	if err := json.Unmarshal(jb, &jr); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(bb[:hl], &br); err != nil {
		t.Fatal(err)
	}
	a, err := s.restInputs(v, jr.Inputs, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.restInputs(v, br.Inputs, bb[hl:])
	if err != nil {
		t.Fatal(err)
	}
	if string(a["x"].Bytes()) != string(b["x"].Bytes()) {
		t.Fatal("JSON and binary data decode differently")
	}
	out := appendJSON(nil, a["x"])
	var back []float32
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	for i, f := range a["x"].F32() {
		if back[i] != f {
			t.Fatalf("value %d: %v came back as %v", i, f, back[i])
		}
	}
}

// BenchmarkDecode is the server's own work per request before the
// inference, for a PP-OCR cls input (1x3x48x192 f32): parsing the body and
// making the input tensor, JSON against binary tensor data.
func BenchmarkDecode(b *testing.B) {
	s := &Server{opts: Options{MaxTensorBytes: 1 << 30}}
	v := clsVersion()
	jb, bb, hl := clsBodies()
	for _, c := range []struct {
		name string
		body []byte
		hl   int
	}{{"json", jb, -1}, {"binary", bb, hl}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			cpu0 := cpuTime()
			for b.Loop() {
				req := httptest.NewRequest("POST", "/v2/models/cls/infer", nil)
				if c.hl >= 0 {
					req.Header.Set(HeaderLength, strconv.Itoa(c.hl))
				}
				jsonPart, bin := c.body, []byte(nil)
				if c.hl >= 0 {
					jsonPart, bin = c.body[:c.hl], c.body[c.hl:]
				}
				var r restInferRequest
				if err := json.Unmarshal(jsonPart, &r); err != nil {
					b.Fatal(err)
				}
				if _, err := s.restInputs(v, r.Inputs, bin); err != nil {
					b.Fatal(err)
				}
			}
			// CPU time, unlike wall time, holds on a shared machine.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// decodeREST is the decoding half of inferREST, for the fuzz target.
func decodeREST(s *Server, v *version, body []byte, headerLen int) (map[string]*tensor.Tensor, error) {
	jsonPart, bin := body, []byte(nil)
	if headerLen >= 0 {
		if headerLen > len(body) {
			return nil, errorf(codeInvalid, "header length past the body")
		}
		jsonPart, bin = body[:headerLen], body[headerLen:]
	}
	var req restInferRequest
	if err := json.Unmarshal(jsonPart, &req); err != nil {
		return nil, errorf(codeInvalid, "malformed: %v", err)
	}
	if _, _, err := requestedOutputs(v, req); err != nil {
		return nil, err
	}
	return s.restInputs(v, req.Inputs, bin)
}

// FuzzDecodeREST: any body decodes to tensors that fit the model's input
// or to a 4xx error, never a panic or a tensor over the size limit.
func FuzzDecodeREST(f *testing.F) {
	jb, bb, hl := clsBodies()
	f.Add(jb, -1)
	f.Add(bb, hl)
	f.Add([]byte(`{"inputs":[{"name":"x","shape":[1,3,48,192],"datatype":"FP32","data":[[1,2],[3]]}]}`), -1)
	f.Add([]byte(`{"inputs":[{"name":"x","shape":[0,3,48,192],"datatype":"FP32","data":[]}],"outputs":[{"name":"y"}]}`), -1)
	f.Add([]byte(`{"inputs":[{"name":"x","shape":[1,3,48,192],"datatype":"FP32","parameters":{"binary_data_size":-4}}]}`), 90)
	f.Add([]byte(`{"inputs":[{"name":"x","shape":[99999999999,3,48,192],"datatype":"FP32","data":[1]}]}`), -1)
	s := &Server{opts: Options{MaxTensorBytes: 1 << 22}}
	v := clsVersion()
	f.Fuzz(func(t *testing.T, body []byte, headerLen int) {
		ins, err := decodeREST(s, v, body, headerLen)
		if err != nil {
			if c := codeInfo[classify(err).code].http; c < 400 || c > 499 {
				t.Fatalf("a bad body answered %d: %v", c, err)
			}
			return
		}
		x := ins["x"]
		if x == nil || len(ins) != 1 {
			t.Fatalf("decoded %v", ins)
		}
		if !v.inputs[0].Shape.Compatible(x.Shape()) || x.ByteSize() > s.opts.MaxTensorBytes {
			t.Fatalf("decoded %v, which the model's %v does not take or is over the limit", x, v.inputs[0].Shape)
		}
	})
}
