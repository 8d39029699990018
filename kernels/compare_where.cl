// compare_where.cl: out = cond ? x : y with numpy broadcasting of all three inputs.
//
// Build options: -DT=<uchar|ushort|uint|ulong> is an unsigned type of the
// element size of x, y and out (the select moves bits only).
//
// Work-size contract: 1-D NDRange with global size >= n; any local size.
// Work item i computes output element i; items with i >= n do nothing. The
// int array m holds m[0] = rank r, then r output dims, then r element
// strides each of cond, x and y (0 on broadcast axes).

#ifndef T
#define T uint
#endif

__kernel void where_select(__global const uchar* cond, __global const T* x, __global const T* y,
                           __global T* out, const ulong n, __global const int* m)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int rank = m[0];
    long ic = 0, ix = 0, iy = 0;
    ulong r = gid;
    for (int d = rank - 1; d >= 0; --d) {
        const long dim = m[1 + d];
        const long c = (long)(r % dim);
        r /= dim;
        ic += c * m[1 + rank + d];
        ix += c * m[1 + 2 * rank + d];
        iy += c * m[1 + 3 * rank + d];
    }
    out[gid] = cond[ic] ? x[ix] : y[iy];
}
