// Package npy reads and writes NumPy .npy files (format versions 1.0, 2.0 and
// 3.0) as clinfer tensors.
//
// It is the exchange format at the edges of the data flow in DESIGN.md:
// cmd/infer reads its inputs from and writes its outputs to .npy files, and
// the real-model tests compare clinfer's outputs with ONNX Runtime's
// reference outputs stored as .npy under tests/testdata/realmodels.
//
// Supported dtypes are f4, f2, f8, i8, i4, i2, i1, u1 and b1, little-endian
// ('<'), native ('='), not applicable ('|') or big-endian ('>', converted on
// read). Only C order (fortran_order False) is supported. Write always emits
// little-endian, C-order files, version 1.0 unless the header needs 2.0.
package npy
