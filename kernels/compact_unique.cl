// compact_unique.cl: Unique by sorting and compaction: the items (the
// elements of x, or its slices along an axis) are ordered by a bitonic
// sort of their indices (by value, lexicographically for slices, NaNs
// equal and last, ties by index so that each run starts with its first
// occurrence); a flag marks each run's start, compact_scan.cl numbers the
// runs (their count is read back once), and, the output size known, the
// groups, ranks and outputs are written.
//
// Work-size contract: 1-D NDRange with global size >= n; any local size;
// items with i >= n do nothing. x holds T (-DT=float, int, ...; -DIS_FLOAT
// for float types), viewed as [outer, dim, inner] (m = {outer, dim,
// inner}); the items are its dim slices; P is dim rounded up to a power of
// two, order's indices >= dim sorting last.
//   unique_init:      n = P: order[i] = i.
//   unique_sort_step: n = P/2: item i compares and orders one pair of the
//                     bitonic network's step (j, k).
//   unique_flags:     n = dim: flags[t] = 1 where sorted item t differs
//                     from item t-1 (always for t = 0).
//   unique_groups:    n = dim: group g of sorted item t (offs[t] + flags[t]
//                     - 1) goes to inverse[order[t]]; a run start records
//                     first[g] = order[t], start[g] = t, and isfirst marks
//                     whether item order[t] starts its run.
//   unique_outputs:   n = outer*k*inner: the element (o, g, t) of group g's
//                     slice goes to position id of y [outer, k, inner], id
//                     = g (sorted), else rank[first[g]] (the rank of its
//                     first occurrence); the items with o = t = 0 write
//                     indices[id] and counts[id].
//   unique_remap:     n = dim: inverse[i] = rank[first[inverse[i]]]
//                     (unsorted outputs).

#ifndef T
#define T float
#endif
// KEY(p, i) is the value item i of p sorts by, of type KT: the element, or
// with -DKEY_HALF (T=ushort, f16 storage) or -DKEY_BF16 (T=ushort,
// bfloat16 storage) its float value.
#if defined(KEY_HALF)
#define KT float
#define KEY(p, i) vload_half((i), (__global const half*)(p))
#elif defined(KEY_BF16)
#define KT float
#define KEY(p, i) as_float((uint)(p)[i] << 16)
#else
#define KT T
#define KEY(p, i) ((p)[i])
#endif

static int cmpv(const KT a, const KT b)
{
#ifdef IS_FLOAT
    const int an = isnan(a), bn = isnan(b);
    if (an || bn) return an == bn ? 0 : (an ? 1 : -1);
#endif
    return a < b ? -1 : (a > b ? 1 : 0);
}

static int cmp_items(__global const T* x, const long a, const long b, __global const int* m)
{
    const long outer = m[0], dim = m[1], inner = m[2];
    for (long o = 0; o < outer; ++o) {
        for (long t = 0; t < inner; ++t) {
            const int c = cmpv(KEY(x, (o * dim + a) * inner + t), KEY(x, (o * dim + b) * inner + t));
            if (c != 0) return c;
        }
    }
    return 0;
}

// before reports whether item a sorts before item b.
static int before(__global const T* x, const long a, const long b, __global const int* m)
{
    if (a >= m[1]) return 0;
    if (b >= m[1]) return 1;
    const int c = cmp_items(x, a, b, m);
    return c < 0 || (c == 0 && a < b);
}

__kernel void unique_init(__global int* order, const ulong n)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    order[gid] = (int)gid;
}

__kernel void unique_sort_step(__global const T* x, __global int* order, const ulong n, __global const int* m,
                               const ulong j, const ulong k)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const ulong lo = ((gid & ~(j - 1)) << 1) | (gid & (j - 1)), hi = lo | j;
    const int a = order[lo], b = order[hi];
    const int asc = (lo & k) == 0;
    if (asc ? before(x, b, a, m) : before(x, a, b, m)) {
        order[lo] = b;
        order[hi] = a;
    }
}

__kernel void unique_flags(__global const T* x, __global const int* order, __global int* flags, const ulong n,
                           __global const int* m)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    flags[gid] = gid == 0 || cmp_items(x, order[gid - 1], order[gid], m) != 0;
}

__kernel void unique_groups(__global const int* order, __global const int* flags, __global const int* offs,
                            __global int* first, __global int* start, __global long* inverse, __global int* isfirst,
                            const ulong n)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int g = offs[gid] + flags[gid] - 1;
    inverse[order[gid]] = g;
    isfirst[order[gid]] = flags[gid];
    if (flags[gid]) {
        first[g] = order[gid];
        start[g] = (int)gid;
    }
}

__kernel void unique_outputs(__global const T* x, __global const int* first, __global const int* start,
                             __global const int* rank, __global T* y, __global long* indices, __global long* counts,
                             const ulong n, __global const int* m, const ulong k, const int sorted)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const long dim = m[1], inner = m[2];
    const long t = (long)(gid % (ulong)inner), g = (long)((gid / (ulong)inner) % k), o = (long)(gid / ((ulong)inner * k));
    const long f = first[g];
    const long id = sorted ? g : rank[f];
    y[(o * (long)k + id) * inner + t] = x[(o * dim + f) * inner + t];
    if (o == 0 && t == 0) {
        indices[id] = f;
        counts[id] = (g + 1 < (long)k ? start[g + 1] : dim) - start[g];
    }
}

__kernel void unique_remap(__global long* inverse, __global const int* first, __global const int* rank, const ulong n)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    inverse[gid] = rank[first[inverse[gid]]];
}
