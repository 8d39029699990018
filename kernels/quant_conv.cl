// quant_conv.cl: ConvInteger and QLinearConv (1-D and 2-D, NCHW): the
// exact integer convolution of (x - x_zero_point) and (w - w_zero_point),
// padding contributing 0, accumulated in 32 bits with wrap-around, as the
// CPU reference computes it (cpu_fallback/ref/ops_quant_integer.go).
//
// Build options: -DXT and -DWT are the operands' types (char or uchar).
// Without -DREQUANT or -DFUSED the output is the i32 accumulator
// (ConvInteger). With -DREQUANT (QLinearConv) the accumulator plus the
// i32 bias is requantized: y = clamp(rne((float)acc * m) + y_zero_point,
// QMIN, QMAX) with m = (x_scale * w_scale[c]) / y_scale rounded to float
// at each step, in -DYT (char or uchar) with -DQMIN and -DQMAX. With
// -DFUSED (graph.OpQuantizedConv's generic form) the accumulator goes
// through quant_block.clh's epilogue (f32 bias, post-ops, requantized
// with -DQUANT, else f32 out). -DDIV_F64 divides in double (correctly
// rounded) on devices whose float division is not.
//
// Work-size contract: 1-D NDRange with global size >= n = N*OC*OH*OW; any
// local size. Work item i computes the output element i = ((b*OC + oc)*OH
// + oh)*OW + ow; items with i >= n do nothing. The int array m holds N, C,
// H, W, OC, OH, OW, KH, KW, stride h/w, pad top/left, dilation h/w, group,
// has_bias, w_zero_point per channel (1) or one (0), w_scale per channel
// (1) or one (0); with -DFUSED pm and pf are the post-op tables
// (post_ops.clh).

#pragma OPENCL FP_CONTRACT OFF

#ifndef XT
#define XT uchar
#endif
#ifndef WT
#define WT char
#endif
#ifndef YT
#define YT uchar
#endif

#include "quant.clh"
#ifdef FUSED
#include "half.clh"
#include "post_ops.clh"
#endif

__kernel void conv_integer(__global const XT* x, __global const WT* w, __global const XT* xzp, __global const WT* wzp,
#ifdef FUSED
                           __global const float* bias, __global const float* xs, __global const float* ws,
                           __global const FT* res,
#ifdef QUANT
                           __global const float* ys, __global const YT* yzp, __global YT* y,
#else
                           __global float* y,
#endif
#else
#ifdef REQUANT
                           __global const int* bias, __global const float* xs, __global const float* ws,
                           __global const float* ys, __global const YT* yzp, __global YT* y,
#else
                           __global int* y,
#endif
#endif
                           const ulong n, __global const int* m
#ifdef FUSED
                           , __global const int* pm, __global const float* pf
#endif
                           )
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int C = m[1], H = m[2], W = m[3], OC = m[4], OH = m[5], OW = m[6], KH = m[7], KW = m[8];
    const int SH = m[9], SW = m[10], PH = m[11], PW = m[12], DH = m[13], DW = m[14], G = m[15];
    const int ow = gid % OW;
    const int oh = (gid / OW) % OH;
    const int oc = (gid / ((size_t)OW * OH)) % OC;
    const long b = gid / ((size_t)OW * OH * OC);
    const int cg = C / G, ocg = OC / G, g = oc / ocg;
    const int xz = (int)xzp[0];
    const int wz = (int)wzp[m[17] ? oc : 0];
    uint acc = 0; // wraps like the i32 accumulator, without signed overflow
    for (int c = 0; c < cg; ++c) {
        __global const XT* xc = x + ((b * C) + g * cg + c) * (long)H * W;
        __global const WT* wc = w + ((long)oc * cg + c) * KH * KW;
        for (int kh = 0; kh < KH; ++kh) {
            const int ih = oh * SH - PH + kh * DH;
            if (ih < 0 || ih >= H) continue;
            for (int kw = 0; kw < KW; ++kw) {
                const int iw = ow * SW - PW + kw * DW;
                if (iw < 0 || iw >= W) continue;
                acc += (uint)(((int)xc[ih * W + iw] - xz) * ((int)wc[kh * KW + kw] - wz));
            }
        }
    }
#if defined(FUSED)
    float v = (float)as_int(acc) * (xs[0] * ws[m[18] ? oc : 0]);
    v = v + (m[16] ? bias[oc] : 0.0f);
    v = post_ops(v, gid, pm, pf, res);
#ifdef QUANT
    y[gid] = (YT)round_sat(quant_div(v, ys[0]), (int)yzp[0]);
#else
    y[gid] = v;
#endif
#elif defined(REQUANT)
    if (m[16]) {
        acc += (uint)bias[oc];
    }
    const float mult = quant_div(xs[0] * ws[m[18] ? oc : 0], ys[0]);
    y[gid] = (YT)round_sat((float)as_int(acc) * mult, (int)yzp[0]);
#else
    y[gid] = as_int(acc);
#endif
}
