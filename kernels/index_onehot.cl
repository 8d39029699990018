// index_onehot.cl: ONNX OneHot: values[1] where the new axis equals the index
// (negative indices count from depth), values[0] elsewhere; an index
// outside [-depth, depth) gives an all-off fibre.
//
// Build options: -DT is an unsigned type of the output element's size
// (values are copied as bits); -DIDX=<float|double|int|long|...> is the
// type of the indices (floats are truncated toward zero).
//
// Work-size contract: 1-D NDRange with global size >= n = outer * depth *
// inner (output elements); any local size. Items with i >= n do nothing.
// Work item i writes output element i, reading index (i / (depth * inner))
// * inner + i % inner; values holds the off and on values.

#include "index.clh"

__kernel void onehot(__global const IDX* indices, __global const T* values, __global T* out, const ulong n,
                     const ulong depth, const ulong inner)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const ulong d = (gid / inner) % depth;
    long k = (long)indices[(gid / (depth * inner)) * inner + gid % inner];
    if (k < 0) k += (long)depth;
    out[gid] = (k >= 0 && (ulong)k == d) ? values[1] : values[0];
}
