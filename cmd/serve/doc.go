// Command serve serves models over the Open Inference Protocol (KServe v2)
// on REST and gRPC, as OpenVINO Model Server and Triton do, so KServe,
// Triton and KServe v2 clients talk to it unchanged.
//
//	serve [-repository DIR [-poll 10s] | -model FILE.onnx [-name NAME]]
//	      [-http :8000] [-grpc :8001] [-d AUTO] [-hint throughput] [-nstreams N]
//	      [-batch N -batch_delay_ms MS] [-shape NAME=[1,3,48,192]] [-cache_dir DIR]
//	      [-queue N] [-infer_timeout 30s] [-max_request_bytes N] [-max_connections 1024]
//	      [-token TOKEN | -token_file FILE] [-tls_cert FILE -tls_key FILE]
//	      [-drain_timeout 30s] [-log_level info] [-log_format json|text]
//
// With -repository it serves a model repository (see package serve:
// <model>/<version>/model.onnx with an optional <model>/config.json), with
// -model one ONNX file (version 1) configured by the flags, and with
// neither the embedded default model as "smallcnn" (`make serve`). The
// REST side (with /metrics) listens on -http, the gRPC side on -grpc
// ("" turns one off). On SIGTERM or SIGINT it reports not ready, answers
// the requests it has (for at most -drain_timeout) and exits 0. Logs are
// log/slog records on standard error.
package main
