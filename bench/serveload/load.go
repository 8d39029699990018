package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/clinfer/clinfer/serve"
	"github.com/clinfer/clinfer/serve/inferencepb"
)

// Protocols are the ways the load test talks to the server.
var Protocols = []string{"rest-json", "rest-binary", "grpc"}

// target is a server and the model to load it with.
type target struct {
	url, grpcAddr, model string
	input                string  // input name
	shape                []int64 // input shape (batch 1)
	data                 []float32
	outputs              int // how many outputs each response must carry
}

// result is one load point: how many requests, in what time, and their
// latencies.
type result struct {
	Protocol   string    `json:"protocol"`
	Clients    int       `json:"clients"`
	Count      int       `json:"count"`
	Errors     int       `json:"errors"`
	FirstError string    `json:"first_error,omitempty"`
	Seconds    float64   `json:"seconds"`
	PerSecond  float64   `json:"per_second"`
	P50MS      float64   `json:"p50_ms"`
	P99MS      float64   `json:"p99_ms"`
	latencies  []float64 // ms
}

// requester sends one request and checks the answer.
type requester func(ctx context.Context) error

// newRequester prepares one protocol's request (encoded once) and returns
// what sends it, and what to close after.
func newRequester(tg target, protocol string, clients int) (requester, func(), error) {
	switch protocol {
	case "rest-json", "rest-binary":
		tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
		client := &http.Client{Transport: tr, Timeout: time.Minute}
		url := tg.url + "/v2/models/" + tg.model + "/infer"
		var body []byte
		hl := ""
		if protocol == "rest-json" {
			body, _ = json.Marshal(map[string]any{"inputs": []any{map[string]any{"name": tg.input, "shape": tg.shape, "datatype": "FP32", "data": tg.data}}})
		} else {
			raw := f32Bytes(tg.data)
			head := fmt.Sprintf(`{"inputs":[{"name":%q,"shape":%s,"datatype":"FP32","parameters":{"binary_data_size":%d}}],"parameters":{"binary_data_output":true}}`,
				tg.input, mustJSON(tg.shape), len(raw))
			hl = strconv.Itoa(len(head))
			body = append([]byte(head), raw...)
		}
		send := func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
			if err != nil {
				return err
			}
			if hl != "" {
				req.Header.Set(serve.HeaderLength, hl)
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return err
			}
			if resp.StatusCode != 200 {
				return fmt.Errorf("status %d: %.200s", resp.StatusCode, b)
			}
			return nil
		}
		return send, tr.CloseIdleConnections, nil
	case "grpc":
		nconn := min(clients, 8)
		conns := make([]*grpc.ClientConn, nconn)
		stubs := make([]inferencepb.GRPCInferenceServiceClient, nconn)
		for i := range conns {
			c, err := grpc.NewClient(tg.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30)))
			if err != nil {
				return nil, nil, err
			}
			conns[i], stubs[i] = c, inferencepb.NewGRPCInferenceServiceClient(c)
		}
		req := &inferencepb.ModelInferRequest{ModelName: tg.model,
			Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{{Name: tg.input, Datatype: "FP32", Shape: tg.shape}},
			RawInputContents: [][]byte{f32Bytes(tg.data)}}
		var next atomic.Int64
		send := func(ctx context.Context) error {
			resp, err := stubs[next.Add(1)%int64(nconn)].ModelInfer(ctx, req)
			if err != nil {
				return err
			}
			if len(resp.RawOutputContents) != tg.outputs {
				return fmt.Errorf("%d outputs, want %d", len(resp.RawOutputContents), tg.outputs)
			}
			return nil
		}
		return send, func() {
			for _, c := range conns {
				c.Close()
			}
		}, nil
	}
	return nil, nil, fmt.Errorf("unknown protocol %q (want %v)", protocol, Protocols)
}

// load runs clients closed-loop clients of one protocol for at most d and
// at most n requests in all.
func load(tg target, protocol string, clients int, d time.Duration, n int) (result, error) {
	send, closeFn, err := newRequester(tg, protocol, clients)
	if err != nil {
		return result{}, err
	}
	defer closeFn()
	r := result{Protocol: protocol, Clients: clients}
	deadline := time.Now().Add(d)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	// The deadline is checked on the clock too: ctx's timer may fire late
	// on a busy machine, while gRPC already fails calls past it.
	over := func() bool { return ctx.Err() != nil || !time.Now().Before(deadline) }
	var issued atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() { // ends at the deadline or the count
			defer wg.Done()
			var lat []float64
			var errs int
			var first string
			for !over() && issued.Add(1) <= int64(n) {
				t0 := time.Now()
				err := send(ctx)
				if over() {
					break // cut by the deadline: not counted
				}
				if err != nil {
					errs++
					if first == "" {
						first = err.Error()
					}
					continue
				}
				lat = append(lat, float64(time.Since(t0).Microseconds())/1000)
			}
			mu.Lock()
			r.latencies = append(r.latencies, lat...)
			r.Errors += errs
			if r.FirstError == "" {
				r.FirstError = first
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	r.Seconds = time.Since(start).Seconds()
	r.Count = len(r.latencies)
	if r.Count > 0 {
		r.PerSecond = float64(r.Count) / r.Seconds
		slices.Sort(r.latencies)
		r.P50MS = percentile(r.latencies, 0.50)
		r.P99MS = percentile(r.latencies, 0.99)
	}
	return r, nil
}

// percentile of sorted values (nearest rank).
func percentile(sorted []float64, p float64) float64 {
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, f := range v {
		b = appendF32(b, f)
	}
	return b
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
