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

#ifndef T
#define T uint
#endif

__kernel void strided_copy(__global const T* src, __global T* dst, const ulong n, __global const int* m)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int rank = m[0];
    long is = m[1 + 3 * rank], id = m[2 + 3 * rank];
    if (rank == 1) {
        // One run (the host collapses dense blocks): no index division.
        is += (long)gid * m[2];
        id += (long)gid * m[3];
    } else if (n <= 0xffffffffUL) {
        // 32-bit index arithmetic: 64-bit division is several times slower.
        uint r = (uint)gid;
        for (int d = rank - 1; d >= 0; --d) {
            const uint dim = (uint)m[1 + d];
            const uint c = r % dim;
            r /= dim;
            is += (long)c * m[1 + rank + d];
            id += (long)c * m[1 + 2 * rank + d];
        }
    } else {
        ulong r = gid;
        for (int d = rank - 1; d >= 0; --d) {
            const long dim = m[1 + d];
            const long c = (long)(r % dim);
            r /= dim;
            is += c * m[1 + rank + d];
            id += c * m[1 + 2 * rank + d];
        }
    }
    dst[id] = src[is];
}
