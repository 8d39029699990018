// conv.cl: direct 2-D convolution (NCHW, f32) with groups, strides, pads,
// dilations and an optional bias; 1-D convolution is the H = 1 case.
//
// Build option OCB (default 1) is the output-channel block: each work item
// computes OCB consecutive output channels of one output pixel, so every
// input element it loads feeds OCB accumulators (register blocking). The
// GPU device picks OCB so that it divides OC/group.
//
// Work-size contract: 1-D NDRange with global size >= n = N*(OC/OCB)*OH*OW;
// any local size. Work item i computes, for pixel (b, oh, ow) and channel
// block ob, where i = ((b*(OC/OCB) + ob)*OH + oh)*OW + ow, output channels
// ob*OCB .. ob*OCB+OCB-1, each as a serial f32 sum (fma, in input channel
// then kernel row then kernel column order) over its group's input
// channels and the kernel window; items with i >= n do nothing. The int
// array m holds N, C, H, W, OC, OH, OW, KH, KW, stride h/w, pad top/left,
// dilation h/w, group, has_bias.
//
// Built with -DHALF, x, w, bias and out hold f16 (half.clh); the sums stay
// f32.

#include "half.clh"

#ifndef OCB
#define OCB 1
#endif

__kernel void conv2d(__global const FT* x, __global const FT* w, __global const FT* bias,
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
    const int g = oc0 / ocg;
    const long wstride = (long)cg * KH * KW; // between output channels
    float acc[OCB];
    for (int j = 0; j < OCB; ++j) {
        acc[j] = m[16] ? LD(bias, oc0 + j) : 0.0f;
    }
    for (int ic = 0; ic < cg; ++ic) {
        __global const FT* xp = x + ((b * C + (long)g * cg + ic) * H) * (long)W;
        __global const FT* wp = w + (((long)oc0 * cg + ic) * KH) * (long)KW;
        for (int kh = 0; kh < KH; ++kh) {
            const int ih = oh * SH - PH + kh * DH;
            if (ih < 0 || ih >= H) continue;
            for (int kw = 0; kw < KW; ++kw) {
                const int iw = ow * SW - PW + kw * DW;
                if (iw < 0 || iw >= W) continue;
                const float xv = LD(xp, (long)ih * W + iw);
                const int k = kh * KW + kw;
                for (int j = 0; j < OCB; ++j) {
                    acc[j] = fma(xv, LD(wp, j * wstride + k), acc[j]);
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
