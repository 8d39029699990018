// compact_select.cl: NonZero and Compress by stream compaction: the flags
// kernels mark the kept elements (or slices) with 1, compact_scan.cl sums
// them (their offsets and count, read back once), and the scatter kernels,
// launched once the output's size is known, copy each kept one to its
// offset.
//
// Work-size contract: 1-D NDRange with global size >= n; any local size;
// items with i >= n do nothing.
//   nonzero_flags:    n = elements of x (type T, -DT=float, int, ...;
//                     with -DMASK=m the bits & m are tested instead:
//                     f16, bf16 as ushort): flags[i] = x[i] != 0.
//   nonzero_scatter:  n = elements; a kept element i writes its coordinates
//                     to column offs[i] of out [rank, k] (i64). m = {rank,
//                     dims..., strides...}.
//   compress_flags:   n = slices along the axis: flags[i] = i < clen &&
//                     cond[i] (bool).
//   compress_scatter: n = outer*dim*inner elements of x (bits of type T);
//                     element (o, s, t) of a kept slice s goes to
//                     (o, offs[s], t) of y [outer, k, inner].

#ifndef T
#define T float
#endif

__kernel void nonzero_flags(__global const T* x, __global int* flags, const ulong n)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
#ifdef MASK
    flags[gid] = (x[gid] & MASK) != 0;
#else
    flags[gid] = x[gid] != (T)0;
#endif
}

__kernel void nonzero_scatter(__global const int* flags, __global const int* offs, __global long* out,
                              const ulong n, __global const int* m, const ulong k)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    if (!flags[gid]) return;
    const int r = m[0];
    for (int d = 0; d < r; ++d) {
        out[(ulong)d * k + (ulong)offs[gid]] = (long)((gid / (ulong)m[1 + r + d]) % (ulong)m[1 + d]);
    }
}

__kernel void compress_flags(__global const uchar* cond, __global int* flags, const ulong n, const ulong clen)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    flags[gid] = gid < clen && cond[gid] != 0;
}

__kernel void compress_scatter(__global const T* x, __global const int* flags, __global const int* offs, __global T* y,
                               const ulong n, const ulong dim, const ulong inner, const ulong k)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const ulong s = (gid / inner) % dim;
    if (!flags[s]) return;
    const ulong o = gid / (inner * dim), t = gid % inner;
    y[(o * k + (ulong)offs[s]) * inner + t] = x[gid];
}
