// Package tests holds cross-package tests: the ONNX backend suite and the
// real-model tests run on each device through the device-parameterised
// suites in tests/conformance (tests/devicetest holds the plugin behaviour
// suite).
package tests
