// Package servetest holds what the tests and the load test of package
// serve share: a tiny ONNX model whose answer is known, a model
// repository on disk, and a serve.Server on loopback REST and gRPC
// listeners. In the data flow of DESIGN.md it stands where a client and
// an operator would: it writes the repository the server reads and calls
// the server over the wire.
package servetest
