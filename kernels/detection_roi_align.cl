// detection_roi_align.cl: RoiAlign (opset 16) as ONNX Runtime computes it:
// each bin of a roi's output_height x output_width grid averages (or, with
// mode max, takes the largest weighted corner of) a grid of bilinear
// samples of its image's feature map, in float.
//
// Work-size contract: 1-D NDRange with global size >= n; any local size;
// items with i >= n do nothing. n = R * OH * OW * ceil(C / CPI): item i
// computes bin (i / G) % (OH*OW) of roi i / (G*OH*OW) for the CPI channels
// of group i % G (G = ceil(C / CPI)), each sample's corners and weights
// computed once for them. m = {N, C, H, W, OH, OW, sampling_ratio, max
// mode, half_pixel}; rois [R, 4] (x1, y1, x2, y2), batch_indices [R] of
// type IDX (default long; a roi whose index is outside [0, N) writes
// zeros). -DCPI sets the channels per item (default 1), -DHALF stores X
// and Y as f16 (half.clh); rois stay f32.

#include "half.clh"

#ifndef CPI
#define CPI 1
#endif
#ifndef IDX
#define IDX long
#endif

__kernel void roi_align(__global const FT* x, __global const float* rois, __global const IDX* batch, __global FT* y,
                        const ulong n, __global const int* m, const float scale)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const long N = m[0], C = m[1], H = m[2], W = m[3], OH = m[4], OW = m[5];
    const int ratio = m[6], is_max = m[7], half_pixel = m[8];
    const long G = (C + CPI - 1) / CPI;
    const long cg = (long)(gid % (ulong)G);
    const long bin = (long)(gid / (ulong)G) % (OH * OW);
    const long r = (long)(gid / (ulong)G) / (OH * OW);
    const long ph = bin / OW, pw = bin % OW;
    const long b = (long)batch[r];
    const float off = half_pixel ? 0.5f : 0.0f;
    const float x1 = rois[r * 4] * scale - off, y1 = rois[r * 4 + 1] * scale - off;
    float rw = rois[r * 4 + 2] * scale - off - x1, rh = rois[r * 4 + 3] * scale - off - y1;
    if (!half_pixel) {
        rw = fmax(rw, 1.0f);
        rh = fmax(rh, 1.0f);
    }
    const float bh = rh / (float)OH, bw = rw / (float)OW;
    const int gh = ratio > 0 ? ratio : (int)ceil(rh / (float)OH);
    const int gw = ratio > 0 ? ratio : (int)ceil(rw / (float)OW);
    const float count = (float)max(gh * gw, 1);
    float acc[CPI];
    for (int j = 0; j < CPI; ++j) acc[j] = 0.0f;
    const int valid = b >= 0 && b < N;
    for (int iy = 0; valid && iy < gh; ++iy) {
        float yy = y1 + (float)ph * bh + ((float)iy + 0.5f) * bh / (float)gh;
        for (int ix = 0; ix < gw; ++ix) {
            float xx = x1 + (float)pw * bw + ((float)ix + 0.5f) * bw / (float)gw;
            long p[4] = {0, 0, 0, 0};
            float w[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            if (!(yy < -1.0f || yy > (float)H || xx < -1.0f || xx > (float)W)) {
                float sy = fmax(yy, 0.0f), sx = fmax(xx, 0.0f);
                long yl = (long)sy, xl = (long)sx, yh = yl + 1, xh = xl + 1;
                if (yl >= H - 1) { yl = yh = H - 1; sy = (float)yl; }
                if (xl >= W - 1) { xl = xh = W - 1; sx = (float)xl; }
                const float ly = sy - (float)yl, lx = sx - (float)xl, hy = 1.0f - ly, hx = 1.0f - lx;
                p[0] = yl * W + xl; p[1] = yl * W + xh; p[2] = yh * W + xl; p[3] = yh * W + xh;
                w[0] = hy * hx; w[1] = hy * lx; w[2] = ly * hx; w[3] = ly * lx;
            }
            const int first = iy == 0 && ix == 0;
            for (int j = 0; j < CPI; ++j) {
                const long c = cg * CPI + j;
                if (c >= C) break;
                __global const FT* fm = x + (b * C + c) * H * W;
                if (is_max) {
                    const float v = fmax(fmax(w[0] * LD(fm, p[0]), w[1] * LD(fm, p[1])), fmax(w[2] * LD(fm, p[2]), w[3] * LD(fm, p[3])));
                    acc[j] = first ? v : fmax(acc[j], v);
                } else {
                    acc[j] += w[0] * LD(fm, p[0]) + w[1] * LD(fm, p[1]) + w[2] * LD(fm, p[2]) + w[3] * LD(fm, p[3]);
                }
            }
        }
    }
    for (int j = 0; j < CPI; ++j) {
        const long c = cg * CPI + j;
        if (c >= C) break;
        ST(y, ((r * C + c) * OH + ph) * OW + pw, is_max ? acc[j] : acc[j] / count);
    }
}
