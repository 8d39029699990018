// index_gather_elements.cl: GatherElements: out[j] = data[j with its axis
// coordinate replaced by indices[j]], for any element type moved as bits.
//
// Build options: -DT=<uchar|ushort|uint|ulong> is the element bits type;
// -DIDX=<int|long> is the index type.
//
// Work-size contract: 1-D NDRange with global size >= n (output elements,
// the indices' count); any local size. Items with i >= n do nothing. The
// int array m holds m[0] = rank r, r output dims, r data strides, the axis
// and the data's size along it. Negative indices count from the end;
// indices still out of range are clamped so that no access leaves data.

#include "index.clh"

__kernel void gather_elements(__global const T* data, __global const IDX* idx, __global T* out,
                              const ulong n, __global const int* m)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int r = m[0];
    const int axis = m[1 + 2 * r];
    const long adim = m[2 + 2 * r];
    const long k = index_at((long)idx[gid], adim);
    long off = 0;
    ulong q = gid;
    for (int d = r - 1; d >= 0; --d) {
        const long dim = m[1 + d];
        const long c = (long)(q % dim);
        q /= dim;
        off += (d == axis ? k : c) * m[1 + r + d];
    }
    out[gid] = data[off];
}
