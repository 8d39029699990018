// reduce_arg.cl: ArgMax/ArgMin along one axis; the output is the i64 index
// of the first (or, with select_last, the last) extreme element.
//
// Build options: -DARG_MIN selects ArgMin (default ArgMax); -DT=<float|int|
// long|...> is the element type (default float).
//
// Work-size contract: 1-D NDRange with global size >= n, where
// n = outer * inner is the number of output elements; any local size. Items
// with i >= n do nothing. The input is [outer, len, inner] contiguous with
// len >= 1; work item i scans its len elements serially.

#ifndef T
#define T float
#endif

__kernel void arg_reduce(__global const T* in, __global long* out, const ulong n,
                         const ulong len, const ulong inner, const int select_last)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const ulong o = gid / inner, i = gid % inner;
    __global const T* p = in + o * len * inner + i;
    T best = p[0];
    long at = 0;
    for (ulong k = 1; k < len; ++k) {
        const T v = p[k * inner];
#ifdef ARG_MIN
        const int better = select_last ? v <= best : v < best;
#else
        const int better = select_last ? v >= best : v > best;
#endif
        if (better) {
            best = v;
            at = (long)k;
        }
    }
    out[gid] = at;
}
