package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/clinfer/clinfer"
	"github.com/clinfer/clinfer/tensor"
)

// HeaderLength is the binary tensor data extension's header: the length
// of the JSON part of a body whose tensors follow it in binary.
const HeaderLength = "Inference-Header-Content-Length"

// HeaderRequestID carries a request's ID; the server echoes it, or makes
// one.
const HeaderRequestID = "X-Request-Id"

// restInferRequest is the JSON part of a REST inference request.
type restInferRequest struct {
	ID         string           `json:"id,omitempty"`
	Parameters restParameters   `json:"parameters,omitempty"`
	Inputs     []restInput      `json:"inputs"`
	Outputs    []restOutputSpec `json:"outputs,omitempty"`
}

type restInput struct {
	Name       string          `json:"name"`
	Shape      []int64         `json:"shape"`
	Datatype   string          `json:"datatype"`
	Parameters restParameters  `json:"parameters,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
}

type restOutputSpec struct {
	Name       string         `json:"name"`
	Parameters restParameters `json:"parameters,omitempty"`
}

// restParameters are the parameters the server reads; others are ignored.
type restParameters struct {
	BinaryDataSize   *int64 `json:"binary_data_size,omitempty"`
	BinaryData       bool   `json:"binary_data,omitempty"`
	BinaryDataOutput bool   `json:"binary_data_output,omitempty"`
}

// infer serves POST /v2/models/{name}[/versions/{version}]/infer.
func (s *Server) infer(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	name, ver := r.PathValue("name"), r.PathValue("version")
	v, err := s.acquire(name, ver)
	if err != nil {
		s.observe(r.Context(), "rest", name, ver, nil, start, timing{}, err)
		writeError(w, err)
		return
	}
	defer v.release()
	var tm timing
	// Admitted before the body is read: the queue bounds the bodies in
	// memory as well as the inferences.
	done, err := v.enqueue()
	if err != nil {
		s.observe(r.Context(), "rest", name, ver, v, start, tm, err)
		writeError(w, err)
		return
	}
	defer done()
	body, err := readBody(w, r, s.opts.MaxRequestBytes)
	if err == nil {
		var resp []byte
		var headerLen int
		resp, headerLen, tm, err = s.inferREST(r, v, body)
		if err == nil {
			h := w.Header()
			if headerLen >= 0 {
				h.Set("Content-Type", "application/octet-stream")
				h.Set(HeaderLength, strconv.Itoa(headerLen))
			} else {
				h.Set("Content-Type", "application/json")
			}
			h.Set("Content-Length", strconv.Itoa(len(resp)))
			_, _ = w.Write(resp)
		}
	}
	s.observe(r.Context(), "rest", name, ver, v, start, tm, err)
	if err != nil {
		writeError(w, err)
	}
}

// readBody reads a body of at most limit bytes; a larger one is refused
// from its Content-Length before anything is read, or once the limit is
// passed.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, errorf(codeTooLarge, "request body of %d bytes is over the server's limit of %d", r.ContentLength, limit)
	}
	buf := make([]byte, 0, max(min(r.ContentLength, limit), 512))
	body, err := readAll(http.MaxBytesReader(w, r.Body, limit), buf)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, errorf(codeTooLarge, "request body is over the server's limit of %d bytes", limit)
	case err != nil:
		return nil, classify(fmt.Errorf("reading the request body: %w", err))
	}
	return body, nil
}

// readAll is io.ReadAll into buf.
func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// inferREST decodes a request body, runs it and encodes the response. The
// returned header length is -1 for an all-JSON response.
func (s *Server) inferREST(r *http.Request, v *version, body []byte) ([]byte, int, timing, error) {
	jsonPart, bin := body, []byte(nil)
	if h := r.Header.Get(HeaderLength); h != "" {
		n, err := strconv.Atoi(h)
		if err != nil || n < 0 || n > len(body) {
			return nil, -1, timing{}, errorf(codeInvalid, "%s: %q is not a length within the body's %d bytes", HeaderLength, h, len(body))
		}
		jsonPart, bin = body[:n], body[n:]
	}
	var req restInferRequest
	if err := json.Unmarshal(jsonPart, &req); err != nil {
		return nil, -1, timing{}, errorf(codeInvalid, "malformed inference request JSON: %v", err)
	}
	inputs, err := s.restInputs(v, req.Inputs, bin)
	if err != nil {
		return nil, -1, timing{}, err
	}
	outs, binOut, err := requestedOutputs(v, req)
	if err != nil {
		return nil, -1, timing{}, err
	}
	results, tm, err := v.run(r.Context(), inputs)
	if err != nil {
		return nil, -1, tm, err
	}
	resp, hl := encodeREST(v, req.ID, outs, binOut, results)
	return resp, hl, tm, nil
}

// restInputs makes the input tensors, every size checked before its
// tensor is allocated.
func (s *Server) restInputs(v *version, ins []restInput, bin []byte) (map[string]*tensor.Tensor, error) {
	inputs := make(map[string]*tensor.Tensor, len(ins))
	for _, in := range ins {
		p, ok := v.input(in.Name)
		if !ok {
			return nil, errorf(codeInvalid, "unknown input %q: model %q has inputs %s", in.Name, v.model, portNames(v.inputs))
		}
		if _, dup := inputs[in.Name]; dup {
			return nil, errorf(codeInvalid, "input %q given twice", in.Name)
		}
		t, n, err := checkInput(p, in.Datatype, in.Shape, s.opts.MaxTensorBytes)
		if err != nil {
			return nil, err
		}
		var x *tensor.Tensor
		if bs := in.Parameters.BinaryDataSize; bs != nil {
			if *bs < 0 || *bs > int64(len(bin)) {
				return nil, errorf(codeInvalid, "input %q: binary_data_size %d is more than the %d binary bytes left in the body", in.Name, *bs, len(bin))
			}
			x, err = fromRaw(in.Name, t, in.Shape, n, bin[:*bs])
			bin = bin[*bs:]
		} else if len(in.Data) == 0 {
			return nil, errorf(codeInvalid, "input %q has neither data nor binary_data_size", in.Name)
		} else {
			x, err = fromJSON(in.Name, t, in.Shape, in.Data)
		}
		if err != nil {
			return nil, err
		}
		inputs[in.Name] = x
	}
	if len(bin) > 0 {
		return nil, errorf(codeInvalid, "%d binary bytes after the last input's binary_data_size", len(bin))
	}
	for _, p := range v.inputs {
		if _, ok := inputs[p.Name]; !ok {
			return nil, errorf(codeInvalid, "input %q (%s%v) missing: model %q has inputs %s", p.Name, datatypeName(p.Type), portShape(p), v.model, portNames(v.inputs))
		}
	}
	return inputs, nil
}

// requestedOutputs are the outputs to return (all when none is named)
// and whether each goes in binary.
func requestedOutputs(v *version, req restInferRequest) ([]string, []bool, error) {
	if len(req.Outputs) == 0 {
		names := make([]string, len(v.outputs))
		bin := make([]bool, len(v.outputs))
		for i, p := range v.outputs {
			names[i], bin[i] = p.Name, req.Parameters.BinaryDataOutput
		}
		return names, bin, nil
	}
	var names []string
	var bin []bool
	for _, o := range req.Outputs {
		if _, ok := v.output(o.Name); !ok {
			return nil, nil, errorf(codeInvalid, "unknown output %q: model %q has outputs %s", o.Name, v.model, portNames(v.outputs))
		}
		names = append(names, o.Name)
		bin = append(bin, o.Parameters.BinaryData || req.Parameters.BinaryDataOutput)
	}
	return names, bin, nil
}

// encodeREST writes the response: JSON, then the binary outputs in order.
func encodeREST(v *version, id string, names []string, bin []bool, results map[string]*tensor.Tensor) ([]byte, int) {
	b := make([]byte, 0, 256)
	b = append(b, `{"model_name":`...)
	b = appendString(b, v.model)
	b = append(b, `,"model_version":"`...)
	b = strconv.AppendInt(b, v.number, 10)
	b = append(b, '"')
	if id != "" {
		b = append(b, `,"id":`...)
		b = appendString(b, id)
	}
	b = append(b, `,"outputs":[`...)
	var blobs [][]byte
	for i, name := range names {
		x := results[name].Contiguous()
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = appendString(b, name)
		b = append(b, `,"datatype":"`...)
		b = append(b, datatypeName(x.Type())...)
		b = append(b, `","shape":[`...)
		for j, d := range x.Shape() {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, d, 10)
		}
		b = append(b, ']')
		if bin[i] {
			raw := x.Bytes()
			b = append(b, `,"parameters":{"binary_data_size":`...)
			b = strconv.AppendInt(b, int64(len(raw)), 10)
			b = append(b, '}')
			blobs = append(blobs, raw)
		} else {
			b = append(b, `,"data":`...)
			b = appendJSON(b, x)
		}
		b = append(b, '}')
	}
	b = append(b, "]}"...)
	if len(blobs) == 0 {
		return b, -1
	}
	hl := len(b)
	for _, raw := range blobs {
		b = append(b, raw...)
	}
	return b, hl
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// portNames lists port names for messages.
func portNames(ps []clinfer.PortInfo) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = strconv.Quote(p.Name)
	}
	return strings.Join(names, ", ")
}

// writeError writes the protocol's error body {"error": "..."} with the
// error's status.
func writeError(w http.ResponseWriter, err error) {
	ae := classify(err)
	b := append(append([]byte(`{"error":`), appendString(nil, ae.msg)...), '}')
	h := w.Header()
	h.Del(HeaderLength)
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(codeInfo[ae.code].http)
	_, _ = w.Write(b)
}

// writeJSON writes v as a 200 JSON response.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
