// resize_grid_sample.cl: GridSample (opset 20) on 1 to 3 spatial axes:
// X [N, C, D0..D(r-1)] sampled at grid [N, O..., r] (normalised
// coordinates, x, the last axis, first) by nearest, linear or cubic taps,
// with zeros, border or reflection padding, computed in float.
//
// Work-size contract: 1-D NDRange with global size >= n; any local size;
// items with i >= n do nothing. n = N * P * ceil(C / CPI), P the output
// points per image: item i samples point p = (i / G) % P of image
// i / (G * P) for the CPI channels of group i % G (G = ceil(C / CPI)),
// computing the taps' offsets and weights once for them. m = {r, C, P,
// D0..D(r-1)}; mode 0 nearest, 1 linear, 2 cubic (r = 2); pad 0 zeros,
// 1 border, 2 reflection; align: align_corners. -DCPI sets the channels
// per item (default 1), -DHALF stores X and Y as f16
// (half.clh); the grid stays f32.

#include "half.clh"

#ifndef CPI
#define CPI 1
#endif

// reflect folds x into [lo, hi] as often as needed.
static float gs_reflect(float x, const float lo, const float hi)
{
    const float rng = hi - lo;
    if (x < lo) {
        const float dx = lo - x;
        const float k = trunc(dx / rng);
        const float r = dx - k * rng;
        return fmod(k, 2.0f) == 0.0f ? lo + r : hi - r;
    }
    if (x > hi) {
        const float dx = x - hi;
        const float k = trunc(dx / rng);
        const float r = dx - k * rng;
        return fmod(k, 2.0f) == 0.0f ? hi - r : lo + r;
    }
    return x;
}

// gs_cubic writes the Keys cubic weights (alpha -0.75) of fraction t.
static void gs_cubic(const float t, float* w)
{
    const float a = -0.75f;
    const float x = fabs(t);
    w[0] = ((a * (x + 1.0f) - 5.0f * a) * (x + 1.0f) + 8.0f * a) * (x + 1.0f) - 4.0f * a;
    w[1] = ((a + 2.0f) * x - (a + 3.0f)) * x * x + 1.0f;
    w[2] = ((a + 2.0f) * (1.0f - x) - (a + 3.0f)) * (1.0f - x) * (1.0f - x) + 1.0f;
    w[3] = ((a * (2.0f - x) - 5.0f * a) * (2.0f - x) + 8.0f * a) * (2.0f - x) - 4.0f * a;
}

__kernel void grid_sample(__global const FT* x, __global const float* grid, __global FT* y, const ulong n,
                          __global const int* m, const int mode, const int pad, const int align)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int r = m[0];
    const long C = m[1], P = m[2];
    const long G = (C + CPI - 1) / CPI;
    const long cg = (long)(gid % (ulong)G);
    const long p = (long)(gid / (ulong)G) % P;
    const long b = (long)(gid / (ulong)G) / P;
    const int taps = mode == 0 ? 1 : (mode == 1 ? 2 : 4);
    long first[3];
    float w[3][4];
    long dim[3], stride[3];
    long plane = 1;
    for (int d = r - 1; d >= 0; --d) {
        dim[d] = m[3 + d];
        stride[d] = plane;
        plane *= dim[d];
    }
    for (int d = 0; d < r; ++d) {
        const float v = grid[(b * P + p) * r + (r - 1 - d)];
        const float D = (float)dim[d];
        float c = align ? (v + 1.0f) * 0.5f * (D - 1.0f) : ((v + 1.0f) * D - 1.0f) * 0.5f;
        const float lo = align ? 0.0f : -0.5f, hi = align ? D - 1.0f : D - 0.5f;
        if (mode == 0) c = r == 3 ? round(c) : rint(c);
        if (c < lo || c > hi) {
            if (pad == 1) c = clamp(c, 0.0f, D - 1.0f);
            else if (pad == 2) c = gs_reflect(c, lo, hi);
        }
        const float f = floor(c);
        if (mode == 0) {
            first[d] = (long)c;
            w[d][0] = 1.0f;
        } else if (mode == 1) {
            first[d] = (long)f;
            w[d][0] = 1.0f - (c - f);
            w[d][1] = c - f;
        } else {
            first[d] = (long)f - 1;
            gs_cubic(c - f, w[d]);
        }
    }
    // The taps: offsets into a channel plane (-1 reads zero) and weights.
    long off[16];
    float wt[16];
    int nt = 1;
    for (int d = 0; d < r; ++d) nt *= taps;
    for (int t = 0; t < nt; ++t) {
        int rem = t;
        long o = 0;
        float wv = 1.0f;
        for (int d = r - 1; d >= 0; --d) {
            const int k = rem % taps;
            rem /= taps;
            long i = first[d] + k;
            const float lo = align ? 0.0f : -0.5f, hi = align ? (float)(dim[d] - 1) : (float)dim[d] - 0.5f;
            if (pad == 1) i = clamp(i, 0L, dim[d] - 1);
            else if (pad == 2) i = (long)gs_reflect((float)i, lo, hi);
            if (i < 0 || i >= dim[d]) { o = -1; break; }
            o += i * stride[d];
            wv *= w[d][k];
        }
        off[t] = o;
        wt[t] = wv;
    }
    for (int j = 0; j < CPI; ++j) {
        const long c = cg * CPI + j;
        if (c >= C) break;
        __global const FT* src = x + (b * C + c) * plane;
        float acc = 0.0f;
        for (int t = 0; t < nt; ++t) {
            if (off[t] >= 0) acc += wt[t] * LD(src, off[t]);
        }
        ST(y, (b * C + c) * P + p, acc);
    }
}
