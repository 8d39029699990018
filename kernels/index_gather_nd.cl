// index_gather_nd.cl: ONNX GatherND with batch_dims: every index tuple of
// indices [..., k] selects a slice of data, copied as bits.
//
// Build options: -DT is an unsigned type of the element size; -DIDX=<int|
// long> is the type of the indices.
//
// Work-size contract: 1-D NDRange with global size >= n = tuples * slice
// (output elements); any local size. Items with i >= n do nothing. Work
// item i copies element i % slice of the slice of tuple t = i / slice. The
// int array m holds k, slice, the tuples per batch, the data elements per
// batch, then the k indexed data dims and their k element strides. A
// negative index counts from the end of its dim; an index still outside
// the dim is clamped to it.

#include "index.clh"

__kernel void gather_nd(__global const T* data, __global const IDX* indices, __global T* out, const ulong n,
                        __global const int* m)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int k = m[0];
    const ulong slice = (ulong)m[1];
    const ulong t = gid / slice;
    long off = (long)(t / (ulong)m[2]) * m[3];
    for (int j = 0; j < k; ++j) {
        const long dim = m[4 + j];
        off += index_at((long)indices[t * (ulong)k + (ulong)j], dim) * m[4 + k + j];
    }
    out[gid] = data[off + (long)(gid % slice)];
}
