// Package inferencepb is the Go code protoc generates from the Open
// Inference Protocol's gRPC service (KServe v2, package inference, service
// GRPCInferenceService) with Triton's repository extension: the messages
// and the client and server stubs that package serve implements. In the
// data flow of DESIGN.md it sits in front of serve, at the wire: a gRPC
// client's ModelInfer arrives here as a ModelInferRequest.
//
// grpc_service.proto is a verbatim subset of Triton's published file (see
// README.md for its source, commit and licence); gen.sh regenerates the Go
// files, and TestGeneratedCodeIsUpToDate fails when they are stale.
package inferencepb

//go:generate bash gen.sh
