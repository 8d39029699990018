// movement_strided_copy.cl: copies an N-D strided view of src into an N-D strided
// view of dst. One kernel serves Transpose, Slice, Concat, Split, Expand,
// Tile and the other pure data-movement ops: the host turns each into
// iteration dims and two stride sets.
//
// Build options: -DT=<uchar|ushort|uint|ulong> is an unsigned type of the
// element size (the copy moves bits only).
//
// Work-size contract: 1-D NDRange with global size >= ceil(n / EPT); any
// local size. Work item i copies iteration elements i*EPT.. (build option
// EPT, default 1); items with i*EPT >= n do nothing. With -DROWS: 2-D
// NDRange with global size >= (ceil(D / EPT), n / D), D the innermost
// iteration dim; item (i, r) copies elements i*EPT.. of row r; items
// outside do nothing. The int array m holds m[0] = rank r, r iteration
// dims, r source strides, r destination strides (in elements; source
// strides may be 0 or negative), then the source and destination element
// offsets.

#include "nd_index.clh"

#ifndef T
#define T uint
#endif

#ifndef EPT
#define EPT 1
#endif

// copy_run copies cnt elements from src + o.x stepping by ss to dst + o.y
// stepping by ds (a run inside one row): a contiguous fixed-length loop
// the compiler vectorizes, or a strided one.
static inline void copy_run(__global const T* src, __global T* dst, const long2 o, const int ss, const int ds, const int cnt)
{
    if (cnt == EPT && ss == 1 && ds == 1) {
        for (int e = 0; e < EPT; ++e) dst[o.y + e] = src[o.x + e];
        return;
    }
    for (int e = 0; e < cnt; ++e) dst[o.y + (long)e * ds] = src[o.x + (long)e * ss];
}

__kernel void strided_copy(__global const T* src, __global T* dst, const ulong n, __global const int* m)
{
    const int rank = m[0];
    const int ss = m[2 * rank], ds = m[3 * rank]; // the innermost axis' strides
    const long2 base = (long2)(m[1 + 3 * rank], m[2 + 3 * rank]);
#ifdef ROWS
    const uint inner = (uint)m[rank];
    const uint c0 = (uint)get_global_id(0) * EPT;
    const ulong r = get_global_id(1);
    if (c0 >= inner || r * inner >= n) return;
    const long2 o = base + nd_row2(r, m) + (long2)((long)c0 * ss, (long)c0 * ds);
    copy_run(src, dst, o, ss, ds, (int)min((uint)EPT, inner - c0));
#else
    const ulong i0 = (ulong)get_global_id(0) * EPT;
    if (i0 >= n) return;
    long2 o = nd_offsets2(i0, n, m);
    uint c = nd_column(i0, m);
    if (EPT == 1 || (i0 + EPT <= n && c + EPT <= (uint)m[rank])) {
        copy_run(src, dst, base + o, ss, ds, EPT);
        return;
    }
    const int cnt = (int)min((ulong)EPT, n - i0);
    for (int e = 0; e < cnt; ++e) {
        if (e > 0) o = nd_next2(o, &c, i0 + e, n, m);
        dst[base.y + o.y] = src[base.x + o.x];
    }
#endif
}
