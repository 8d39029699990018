// resize_affine_grid.cl: AffineGrid, the sampling grid of GridSample: each
// point's normalised base coordinates (x along the last axis first, then
// y, then z) times theta.
//
// Work-size contract: 1-D NDRange with global size >= n; any local size;
// items with i >= n do nothing. n = N * D * H * W points (D = 1 in 2-D,
// dims = 2); item i computes the dims values of point i of grid [N, (D,)
// H, W, dims] from theta [N, dims, dims+1]. align != 0 puts the base
// coordinates on linspace(-1, 1, size) (0 when size is 1, as
// graph.AffineGridBase), else on the centres of size cells.
// -DHALF stores theta and the grid as f16 (half.clh).

#include "half.clh"

static float affine_base(const long i, const long size, const int align)
{
    if (align) return size == 1 ? 0.0f : -1.0f + 2.0f * (float)i / (float)(size - 1);
    return (2.0f * (float)i + 1.0f) / (float)size - 1.0f;
}

__kernel void affine_grid(__global const FT* theta, __global FT* grid, const ulong n, const int dims, const long D,
                          const long H, const long W, const int align)
{
    const size_t i = get_global_id(0);
    if (i >= n) return;
    const long pts = D * H * W;
    const long b = (long)i / pts, p = (long)i % pts;
    float base[4];
    base[0] = affine_base(p % W, W, align);
    base[1] = affine_base((p / W) % H, H, align);
    base[2] = affine_base(p / (W * H), D, align);
    base[dims] = 1.0f;
    __global const FT* m = theta + b * dims * (dims + 1);
    for (int r = 0; r < dims; ++r) {
        float s = 0.0f;
        for (int c = 0; c <= dims; ++c) s += LD(m, r * (dims + 1) + c) * base[c];
        ST(grid, i * dims + r, s);
    }
}
