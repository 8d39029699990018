// conv_transpose.cl: 2-D transposed convolution (NCHW, f32) with groups,
// strides, pads, dilations and an optional bias, as a gather over the
// input (no atomics); 1-D is the H = 1 case.
//
// Build option OCB (default 1) is the output-channel block: each work item
// computes OCB consecutive output channels of one output pixel, sharing
// the input loads (register blocking). The GPU device picks OCB so that it
// divides OC/group.
//
// Work-size contract: 1-D NDRange with global size >= n = N*(OC/OCB)*OH*OW;
// any local size. Work item i = ((b*(OC/OCB) + ob)*OH + oh)*OW + ow computes
// output channels ob*OCB .. ob*OCB+OCB-1 of pixel (b, oh, ow); items with
// i >= n do nothing. The int array m holds N, C, H, W, OC, OH, OW, KH, KW,
// stride h/w, pad top/left, dilation h/w, group, has_bias. Weights are
// [C, OC/group, KH, KW].
//
// Built with -DHALF, x, w, bias and out hold f16 (half.clh); the sums stay
// f32.

#include "half.clh"

#ifndef OCB
#define OCB 1
#endif

__kernel void conv_transpose2d(__global const FT* x, __global const FT* w, __global const FT* bias,
                               __global FT* out, const ulong n, __global const int* m)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int C = m[1], H = m[2], W = m[3], OC = m[4], OH = m[5], OW = m[6];
    const int KH = m[7], KW = m[8], SH = m[9], SW = m[10], PH = m[11], PW = m[12];
    const int DH = m[13], DW = m[14], G = m[15];
    const int OB = OC / OCB;
    const int ow = (int)(gid % (ulong)OW);
    const int oh = (int)((gid / (ulong)OW) % (ulong)OH);
    const int ob = (int)((gid / ((ulong)OW * OH)) % (ulong)OB);
    const long b = (long)(gid / ((ulong)OW * OH * OB));
    const int cg = C / G, ocg = OC / G;
    const int oc0 = ob * OCB;
    const int g = oc0 / ocg, o = oc0 % ocg;
    const long kk = (long)KH * KW; // between output channels in w
    float acc[OCB];
    for (int j = 0; j < OCB; ++j) {
        acc[j] = m[16] ? LD(bias, oc0 + j) : 0.0f;
    }
    for (int ic = 0; ic < cg; ++ic) {
        const long c = (long)g * cg + ic;
        __global const FT* xp = x + ((b * C + c) * H) * (long)W;
        __global const FT* wp = w + (c * ocg + o) * kk;
        for (int kh = 0; kh < KH; ++kh) {
            const int th = oh + PH - kh * DH;
            if (th < 0 || th % SH != 0) continue;
            const int ih = th / SH;
            if (ih >= H) continue;
            for (int kw = 0; kw < KW; ++kw) {
                const int tw = ow + PW - kw * DW;
                if (tw < 0 || tw % SW != 0) continue;
                const int iw = tw / SW;
                if (iw >= W) continue;
                const float xv = LD(xp, (long)ih * W + iw);
                const int k = kh * KW + kw;
                for (int j = 0; j < OCB; ++j) {
                    acc[j] = fma(xv, LD(wp, j * kk + k), acc[j]);
                }
            }
        }
    }
    const long plane = (long)OH * OW;
    __global FT* op = out + ((b * OC + oc0) * OH + oh) * (long)OW + ow;
    for (int j = 0; j < OCB; ++j) {
        ST(op, j * plane, acc[j]);
    }
}
