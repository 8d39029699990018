// detection_nms.cl: NonMaxSuppression as ONNX Runtime computes it, per
// segment s = (batch, class): the boxes whose score is above the
// threshold (when given) by descending score (ties: lower index first),
// each kept unless its IoU with a kept box exceeds iou, at most maxk.
// The counts per segment are prefix-summed (compact_scan.cl) and their
// total read back once; nms_scatter then writes the (batch, class, box)
// rows. IoU is computed in float as the CPU reference does.
//
// Boxes are [B, N, 4] (corners y1,x1,y2,x2 in any order, or with center
// x,y,w,h), scores [B, C, N]; P is N rounded up to a power of two; order
// holds a segment's candidates in P slots (N marks an empty one), sel
// maxk box indices per segment.
//
// Work-size contract: 1-D NDRange with global size >= n; any local size
// unless said; items with i >= n do nothing.
//   nms_serial:       n = S segments; item s heaps its candidates in
//                     order's slots and pops them in order while it
//                     selects.
//   nms_init:         n = S*P: slot t of segment s holds t if box t is a
//                     candidate, else N.
//   nms_sort_step:    n = S*P/2: one compare-exchange of the bitonic
//                     network's step (j, k) within a segment.
//   nms_select_group: n = S; one work group of exactly WG items (build
//                     option, default 64) per segment: the group tests each
//                     sorted candidate against the kept boxes, held in
//                     local memory (at most KEPT, default 128).
//                     No item returns early (barriers); the group of an
//                     index >= n runs no candidate and stores nothing.
//   nms_scatter:      n = S*maxk: item (s, j) with j < counts[s] writes row
//                     offs[s] + j of out [k, 3] (i64).

#ifndef WG
#define WG 64
#endif
#ifndef KEPT
#define KEPT 128
#endif

// corners returns box b as (x1, y1, x2, y2) with x1 <= x2, y1 <= y2.
static float4 corners(__global const float* b, const int center)
{
    if (center) {
        const float hw = b[2] / 2.0f, hh = b[3] / 2.0f;
        return (float4)(b[0] - hw, b[1] - hh, b[0] + hw, b[1] + hh);
    }
    return (float4)(fmin(b[1], b[3]), fmin(b[0], b[2]), fmax(b[1], b[3]), fmax(b[0], b[2]));
}

// suppresses reports whether boxes a and b overlap by more than iou.
static int suppresses(const float4 a, const float4 b, const float iou)
{
    const float ix1 = fmax(a.x, b.x), ix2 = fmin(a.z, b.z);
    if (ix2 <= ix1) return 0;
    const float iy1 = fmax(a.y, b.y), iy2 = fmin(a.w, b.w);
    if (iy2 <= iy1) return 0;
    const float inter = (ix2 - ix1) * (iy2 - iy1);
    const float area_a = (a.z - a.x) * (a.w - a.y), area_b = (b.z - b.x) * (b.w - b.y);
    const float uni = area_a + area_b - inter;
    if (inter <= 0.0f || area_a <= 0.0f || area_b <= 0.0f || uni <= 0.0f) return 0;
    return inter / uni > iou;
}

// before reports whether candidate a precedes candidate b (N: none).
static int before(__global const float* sc, const int a, const int b, const int N)
{
    if (a >= N) return 0;
    if (b >= N) return 1;
    return sc[a] > sc[b] || (sc[a] == sc[b] && a < b);
}

static int candidate(__global const float* sc, const int t, const int use_th, const float th)
{
    return !use_th || sc[t] > th;
}

// sift moves slot i of heap h (of len slots, the candidate that precedes
// the others at the root) down to its place.
static void sift(__global int* h, __global const float* sc, long i, const long len, const int N)
{
    for (;;) {
        long c = 2 * i + 1;
        if (c >= len) return;
        if (c + 1 < len && before(sc, h[c + 1], h[c], N)) c++;
        if (!before(sc, h[c], h[i], N)) return;
        const int t = h[i];
        h[i] = h[c];
        h[c] = t;
        i = c;
    }
}

__kernel void nms_serial(__global const float* boxes, __global const float* scores, __global int* order, __global int* sel,
                         __global int* counts, const ulong n, __global const int* m, const float th, const float iou)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int N = m[0], P = m[1], C = m[2], maxk = m[3], center = m[4], use_th = m[5];
    __global const float* sc = scores + gid * (ulong)N;
    __global const float* bx = boxes + (gid / (ulong)C) * (ulong)N * 4;
    __global int* h = order + gid * (ulong)P;
    long len = 0;
    for (int t = 0; t < N; ++t) {
        if (candidate(sc, t, use_th, th)) h[len++] = t;
    }
    // A heap of the candidates, popped in order only as far as the
    // selection goes (at most maxk kept): O(N + pops log N).
    for (long i = len / 2 - 1; i >= 0; --i) sift(h, sc, i, len, N);
    int kept = 0;
    __global int* out = sel + gid * (ulong)maxk;
    while (len > 0 && kept < maxk) {
        const int top = h[0];
        h[0] = h[--len];
        sift(h, sc, 0, len, N);
        const float4 a = corners(bx + top * 4, center);
        int ok = 1;
        for (int j = 0; j < kept && ok; ++j) ok = !suppresses(a, corners(bx + out[j] * 4, center), iou);
        if (ok) out[kept++] = top;
    }
    counts[gid] = kept;
}

__kernel void nms_init(__global const float* scores, __global int* order, const ulong n, __global const int* m, const float th)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int N = m[0], P = m[1], use_th = m[5];
    const int t = (int)(gid % (ulong)P);
    order[gid] = t < N && candidate(scores + (gid / (ulong)P) * (ulong)N, t, use_th, th) ? t : N;
}

__kernel void nms_sort_step(__global const float* scores, __global int* order, const ulong n, __global const int* m,
                            const ulong j, const ulong k)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int N = m[0], P = m[1];
    const ulong s = gid / (ulong)(P / 2), i = gid % (ulong)(P / 2);
    const ulong lo = ((i & ~(j - 1)) << 1) | (i & (j - 1)), hi = lo | j;
    __global const float* sc = scores + s * (ulong)N;
    __global int* o = order + s * (ulong)P;
    const int a = o[lo], b = o[hi];
    if ((lo & k) == 0 ? before(sc, b, a, N) : before(sc, a, b, N)) {
        o[lo] = b;
        o[hi] = a;
    }
}

__attribute__((reqd_work_group_size(WG, 1, 1)))
__kernel void nms_select_group(__global const float* boxes, __global const int* order, __global int* sel, __global int* counts,
                               const ulong n, __global const int* m, const float iou)
{
    __local float4 kb[KEPT];
    __local int hit, kept;
    const int N = m[0], P = m[1], C = m[2], maxk = m[3], center = m[4];
    const ulong g = get_group_id(0);
    const int l = (int)get_local_id(0);
    const int live = g < n;
    __global const float* bx = boxes + (live ? g / (ulong)C : 0) * (ulong)N * 4;
    if (l == 0) kept = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = 0; t < N; ++t) {
        const int idx = live ? order[g * (ulong)P + t] : N;
        if (idx >= N || kept >= maxk) break; // the same for every item
        const float4 a = corners(bx + idx * 4, center);
        if (l == 0) hit = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int j = l; j < kept; j += WG) {
            if (suppresses(a, kb[j], iou)) atomic_or(&hit, 1);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l == 0 && !hit) {
            kb[kept] = a;
            sel[g * (ulong)maxk + kept] = idx;
            kept++;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0 && live) counts[g] = kept;
}

__kernel void nms_scatter(__global const int* sel, __global const int* counts, __global const int* offs, __global long* out,
                          const ulong n, const ulong C, const ulong maxk)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const ulong s = gid / maxk, j = gid % maxk;
    if ((int)j >= counts[s]) return;
    const ulong row = (ulong)offs[s] + j;
    out[row * 3] = (long)(s / C);
    out[row * 3 + 1] = (long)(s % C);
    out[row * 3 + 2] = sel[gid];
}
