// strided_copy.cl: copies an N-D strided view of src into an N-D strided
// view of dst. One kernel serves Transpose, Slice, Concat, Split, Expand,
// Tile and the other pure data-movement ops: the host turns each into
// iteration dims and two stride sets.
//
// Build options: -DT=<uchar|ushort|uint|ulong> is an unsigned type of the
// element size (the copy moves bits only).
//
// Work-size contract: 1-D NDRange with global size >= n; any local size.
// Work item i copies iteration element i; items with i >= n do nothing. The
// int array m holds m[0] = rank r, r iteration dims, r source strides, r
// destination strides (in elements; source strides may be 0 or negative),
// then the source and destination element offsets.

#include "nd_index.clh"

#ifndef T
#define T uint
#endif

__kernel void strided_copy(__global const T* src, __global T* dst, const ulong n, __global const int* m)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int rank = m[0];
    const long2 o = nd_offsets2(gid, n, m);
    dst[m[2 + 3 * rank] + o.y] = src[m[1 + 3 * rank] + o.x];
}
