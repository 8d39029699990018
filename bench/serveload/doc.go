// Command serveload is the load test of cmd/serve: a Go client that drives
// the server over REST (JSON and binary tensors) and gRPC with 1, 8 and 64
// concurrent clients, next to the same model run in-process by
// cmd/benchmark with as many requests in flight, in one run.
//
//	serveload [-m MODEL.onnx] [-shape x=[1,3,48,192]] [-d GPU] [-batch 8] [-batch_delay_ms 2]
//	          [-clients 1,8,64] [-t 10] [-n 100000] [-json FILE]
//
// Without -m it loads PP-OCR's cls model from .cache/models (`make
// models`). It builds cmd/serve and cmd/benchmark, starts the server on
// 127.0.0.1 (loopback only) with -batch (dynamic batching on BATCH over
// -d), and for each client count runs cmd/benchmark -nireq N on
// BATCH:-d(batch) for -t seconds and then N closed-loop clients per
// protocol, each bounded by -t seconds and -n requests. Request bodies
// are encoded once per protocol, so the client's own encoding stays out of
// the server's figures. It prints throughput and p50/p99 latency per point, and the
// server's overhead per request: its request time minus queue and compute
// time, from its /metrics (decoding, checking, encoding), and the
// end-to-end difference from in-process at one client. `make bench-serve`
// runs it.
package main
