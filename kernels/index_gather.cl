// index_gather.cl: ONNX Gather: out[outer, j, inner] = data[outer, idx[j], inner].
//
// Build options: -DT=<uchar|ushort|uint|ulong> is an unsigned type of the
// data element size; -DIDX=<int|long> is the index type.
//
// Work-size contract: 1-D NDRange with global size >= n (the number of
// output elements); any local size. Items with i >= n do nothing. Negative
// indices count from the end of the axis; indices still out of range are
// clamped so that no work item reads outside data.

#include "index.clh"

__kernel void gather(__global const T* data, __global const IDX* idx, __global T* out,
                     const ulong n, const ulong inner, const ulong axis_dim, const ulong nidx)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const ulong i = gid % inner;
    const ulong t = gid / inner;
    const ulong j = t % nidx;
    const ulong outer = t / nidx;
    const long k = index_at((long)idx[j], (long)axis_dim);
    out[gid] = data[(outer * axis_dim + (ulong)k) * inner + i];
}
