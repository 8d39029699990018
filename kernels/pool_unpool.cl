// pool_unpool.cl: MaxUnpool: y, a zero tensor, receives x's values at
// their indices (what MaxPool's Indices say, in the default output shape
// d, mapped to the same coordinates of the output shape o).
//
// Work-size contract: 1-D NDRange with global size >= n; any local size;
// items with i >= n do nothing. unpool_zero: item i zeroes output element
// i of the n. unpool_scatter: item i places x[i] (n = x's elements) at its
// index idx[i] mapped through the int table m (m[0] = rank r, then r dims
// of d, then r of o); an index outside either shape is skipped. T moves
// bits (-DT=uchar, ushort, uint or ulong by element size).

#ifndef T
#define T uint
#endif

__kernel void unpool_zero(__global T* y, const ulong n)
{
    const size_t i = get_global_id(0);
    if (i >= n) return;
    y[i] = (T)0;
}

__kernel void unpool_scatter(__global const T* x, __global const long* idx, __global T* y, const ulong n,
                             __global const int* m)
{
    const size_t i = get_global_id(0);
    if (i >= n) return;
    const int r = m[0];
    long at = idx[i], o = 0, mul = 1;
    if (at < 0) return;
    for (int d = r - 1; d >= 0; --d) {
        const long c = at % m[1 + d];
        at /= m[1 + d];
        if (c >= m[1 + r + d]) return;
        o += c * mul;
        mul *= m[1 + r + d];
    }
    if (at != 0) return;
    y[o] = x[i];
}
