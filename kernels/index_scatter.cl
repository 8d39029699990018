// index_scatter.cl: ONNX ScatterElements and ScatterND with reduction (none,
// add, mul, max, min), applied to an output that already holds a copy of
// data. Updates that hit the same output element are applied in the order
// of the updates tensor (the last one wins for none), by one work item, so
// the result is deterministic and there are no races.
//
// Build options: -DT is the element type: an OpenCL arithmetic type
// (float, double, int, long, ...; double needs cl_khr_fp64, which the GPU
// device checks before it asks for it), or an unsigned type of the element
// size when reduction is none; -DIS_FLOAT selects NaN-propagating max and
// min; -DIDX=<int|long> is the type of the indices. The runtime argument
// reduction is 0 none, 1 add, 2 mul, 3 max, 4 min. A negative index counts
// from the end of its dim; an index still outside the dim is clamped to it.
//
// Work-size contract: 1-D NDRange with global size >= n; any local size;
// items with i >= n do nothing.
//   scatter_elements: n = update elements / updates dim along the axis.
//     Work item i owns the line of updates that differ only along the axis
//     (they all land in one line of the output) and applies them in order.
//     The int array m holds rank r, the r updates dims, the r output
//     strides, the axis and the output dim along it.
//   scatter_nd: n = slice (elements of one update slice). Work item i
//     applies element i of every slice, tuple by tuple. The int array m
//     holds k, the number of tuples, slice, then the k indexed output dims
//     and their k element strides.

#ifndef T
#define T float
#define IS_FLOAT 1
#endif
#ifndef IDX
#define IDX long
#endif

// combine applies the reduction to an output element and an update.
static T combine(const T o, const T u, const int reduction)
{
    switch (reduction) {
    case 1:
        return o + u;
    case 2:
        return o * u;
#ifdef IS_FLOAT
    case 3:
        return (isnan(o) || isnan(u)) ? o + u : fmax(o, u);
    case 4:
        return (isnan(o) || isnan(u)) ? o + u : fmin(o, u);
#else
    case 3:
        return o > u ? o : u;
    case 4:
        return o < u ? o : u;
#endif
    }
    return u;
}

// wrap_index makes a negative index count from the end and clamps it.
static long wrap_index(long c, const long dim)
{
    if (c < 0) c += dim;
    return clamp(c, (long)0, dim - 1);
}

__kernel void scatter_elements(__global const IDX* indices, __global const T* updates, __global T* out,
                               const ulong n, __global const int* m, const int reduction)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int r = m[0];
    const int axis = m[1 + 2 * r];
    const long dim = m[2 + 2 * r];
    const long len = m[1 + axis];
    ulong inner = 1;
    for (int d = r - 1; d > axis; --d) inner *= (ulong)m[1 + d];
    // Output offset of the line without its axis coordinate.
    long base = 0;
    ulong rest = gid;
    for (int d = r - 1; d >= 0; --d) {
        if (d == axis) continue;
        const ulong ud = (ulong)m[1 + d];
        base += (long)(rest % ud) * m[1 + r + d];
        rest /= ud;
    }
    const ulong first = (gid / inner) * (ulong)len * inner + gid % inner;
    const long astride = m[1 + r + axis];
    for (long j = 0; j < len; ++j) {
        const ulong u = first + (ulong)j * inner;
        const long o = base + wrap_index((long)indices[u], dim) * astride;
        out[o] = combine(out[o], updates[u], reduction);
    }
}

__kernel void scatter_nd(__global const IDX* indices, __global const T* updates, __global T* out,
                         const ulong n, __global const int* m, const int reduction)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int k = m[0];
    const long tuples = m[1];
    const ulong slice = (ulong)m[2];
    for (long t = 0; t < tuples; ++t) {
        long off = 0;
        for (int j = 0; j < k; ++j) {
            off += wrap_index((long)indices[t * k + j], m[3 + j]) * m[3 + k + j];
        }
        const long o = off + (long)gid;
        out[o] = combine(out[o], updates[(ulong)t * slice + gid], reduction);
    }
}
