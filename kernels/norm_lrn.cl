// norm_lrn.cl: LRN, local response normalisation across channels:
// y = x / (bias + alpha/size * S)^beta, S the sum of the squares of the
// size channels around x's (floor((size-1)/2) before, ceil((size-1)/2)
// after, clipped at the ends), computed in float.
//
// Work-size contract: 1-D NDRange with global size >= n; any local size;
// items with i >= n do nothing. n = N*C*inner elements of x [N, C, inner];
// item i computes element i. p = {alpha / size, beta, bias}. -DHALF stores
// x and y as f16 (half.clh).

#include "half.clh"

__kernel void lrn(__global const FT* x, __global FT* y, const ulong n, const ulong C, const ulong inner,
                  const int before, const int after, __global const float* p)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const long c = (long)((gid / inner) % C);
    const long base = (long)gid - c * (long)inner; // channel 0 of this pixel
    const long lo = max(c - before, 0L), hi = min(c + after, (long)C - 1);
    float s = 0.0f;
    for (long k = lo; k <= hi; ++k) {
        const float v = LD(x, base + k * (long)inner);
        s += v * v;
    }
    ST(y, gid, LD(x, gid) / pow(p[2] + p[0] * s, p[1]));
}
