// quant_conv_blocked.cl: qconv2d_blocked and qdwconv2d, the
// register-blocked convolutions of quantized data (graph.OpQuantizedConv)
// with the fused requantization epilogue of quant_block.clh.
//
// qconv2d_blocked: one group, a KH x KW window, strides SH, SW (WIN_H,
// WIN_W, STR_H, STR_W as block.clh), any dilation, MR output channels x VW
// pixels of a row per item, in one of three algorithms (the qconv
// family's):
//   ALG_FMA  (default) weights w - w_zero_point packed as f32
//            [ceil(OC/MR)][C][KH][KW][MR]; the products of x - x_zero_point
//            and the weights summed with fma in f32 over runs of CHUNK
//            input channels, each run's sum (an integer below 2^24, so
//            exact) added to an i32 accumulator; -DONE_RUN when all C
//            channels make one exact run (no i32 accumulator in the loop:
//            the pointwise convolutions of PP-OCR det 1.5-2x faster);
//   ALG_INT  the same weights as i32, the products and sums in i32 vector
//            math (vectorised char arithmetic);
//   ALG_DOT4 raw 8-bit weights packed four input channels to a uint
//            [ceil(OC/MR)][ceil(C/4)][KH][KW][MR], dot products of four
//            packed 8-bit pairs (cl_khr_integer_dot_product's
//            dot_4x8packed_*, -DDOT4=us for uchar data and char weights,
//            uu, su, ss, -DXS_SIGNED for char data; emulated where the
//            device lacks it, for the tests), padding read as
//            x_zero_point, and the zero points
//            applied after: sum(x w) - wz sum(x) - xz sum(w) + K xz wz,
//            with wq[2c] = wz and wq[2c+1] = sum(w) of channel c.
// All three give the exact wrapped i32 sum of (x - xz)(w - wz).
//
// qdwconv2d: depthwise (group = C = OC), RB output rows x VW pixels of one
// plane per item, the weights w - w_zero_point as f32 [C][KH][KW], fma in
// f32 (exact: a window of up to 256 taps).
//
// Both take -DXQ: x holds f32 data, quantized on load with x's scale and
// zero point (quant_block.clh; graph.QuantizesOnLoad).
//
// Work-size contract: qconv2d_blocked: 3-D NDRange, global size >=
// (ceil(OC/MR), OH * ceil(OW/VW), N), any local size; item (i, j, b)
// computes output channels i*MR.. of the VW pixels of row j / tiles at
// column (j % tiles)*VW of image b (tiles = ceil(OW/VW)). qdwconv2d: 3-D
// NDRange, global size >= (ceil(OW/VW), ceil(OH/RB), N*C); item (t, r, z)
// computes the VW pixels at column t*VW of rows r*RB.. of plane z. Items
// outside do nothing. The int array m holds N, C, H, W, OC, OH, OW, pad
// top, pad left, has_bias, w_scale per channel (1) or one (0), K =
// C*KH*KW (read by ALG_DOT4), and dilation h, w (read by qconv2d_blocked). xs, ws: the scales; xz: x's zero point (one
// element); bias: f32 [OC] (read when has_bias); ys, yz: the output's
// scale and zero point (-DQUANT).

#pragma OPENCL FP_CONTRACT OFF

#include "half.clh"
#include "post_ops.clh"
#include "block.clh"
#include "quant.clh"
#include "quant_block.clh"

#ifndef MR
#define MR 8
#endif
#ifndef CHUNK
#define CHUNK 256
#endif
#ifndef RB
#define RB 4
#endif

#if !defined(ALG_INT) && !defined(ALG_DOT4) && !defined(ALG_FMA)
#define ALG_FMA
#endif
// RUN is how many input channels qconv2d_blocked sums before adding the
// sums to its i32 accumulators: CHUNK with ALG_FMA (the planner's bound
// for exact f32 sums), all of them with ONE_RUN (the planner's word that
// all C fit one run, ALG_FMA only) or the i32 algorithms.
#if defined(ONE_RUN) && !defined(ALG_FMA)
#error "quant_conv_blocked.cl: ONE_RUN is an ALG_FMA option"
#endif
#if defined(ALG_FMA) && !defined(ONE_RUN)
#define RUN CHUNK
#else
#define RUN C
#endif
#if defined(ALG_DOT4)
#define WT uint
#elif defined(ALG_INT)
#define WT int
#else
#define WT float
#endif

#ifdef ALG_DOT4
#ifndef cl_khr_integer_dot_product
// The dot products of cl_khr_integer_dot_product, written out on devices
// without the extension (the planner picks ALG_DOT4 only where the device
// has it; the tests run it everywhere).
inline uint dot_4x8packed_uu_uint(const uint a, const uint b)
{
    return (a & 0xffu) * (b & 0xffu) + ((a >> 8) & 0xffu) * ((b >> 8) & 0xffu) + ((a >> 16) & 0xffu) * ((b >> 16) & 0xffu) +
           (a >> 24) * (b >> 24);
}
inline int dot_4x8packed_us_int(const uint a, const uint b)
{
    return (int)(a & 0xffu) * (int)(char)(b & 0xffu) + (int)((a >> 8) & 0xffu) * (int)(char)((b >> 8) & 0xffu) +
           (int)((a >> 16) & 0xffu) * (int)(char)((b >> 16) & 0xffu) + (int)(a >> 24) * (int)(char)(b >> 24);
}
inline int dot_4x8packed_su_int(const uint a, const uint b) { return dot_4x8packed_us_int(b, a); }
inline int dot_4x8packed_ss_int(const uint a, const uint b)
{
    return (int)(char)(a & 0xffu) * (int)(char)(b & 0xffu) + (int)(char)((a >> 8) & 0xffu) * (int)(char)((b >> 8) & 0xffu) +
           (int)(char)((a >> 16) & 0xffu) * (int)(char)((b >> 16) & 0xffu) + (int)(char)(a >> 24) * (int)(char)(b >> 24);
}
#endif
// DOT4 is the packed dot product of the data's and the weights'
// signedness (-DDOT4=us: uchar data, char weights; uu, su, ss), SUM4 the
// data's sum (its dot product with four ones).
#ifndef DOT4
#define DOT4 us
#endif
#define DOT4_uu(a, b) ((int)dot_4x8packed_uu_uint((a), (b)))
#define DOT4_us(a, b) dot_4x8packed_us_int((a), (b))
#define DOT4_su(a, b) dot_4x8packed_su_int((a), (b))
#define DOT4_ss(a, b) dot_4x8packed_ss_int((a), (b))
#define DOT4_OF(sig) QCAT(DOT4_, sig)
#define XDOT DOT4_OF(DOT4)
#if defined(XS_SIGNED)
#define SUM4(a) dot_4x8packed_su_int((a), 0x01010101u)
#else
#define SUM4(a) ((int)dot_4x8packed_uu_uint((a), 0x01010101u))
#endif
#endif

__kernel void qconv2d_blocked(__global const XT* x, __global const WT* w, __global const ZT* xzp,
#ifdef ALG_DOT4
                              __global const int* wq,
#endif
                              __global const float* xs, __global const float* ws, __global const float* bias,
                              __global const FT* res,
#ifdef QUANT
                              __global const float* ys, __global const YT* yzp, __global YT* out,
#else
                              __global float* out,
#endif
                              __global const int* m, __global const int* pm, __global const float* pf)
{
    const int C = m[1], H = m[2], W = m[3], OC = m[4], OH = m[5], OW = m[6], PH = m[7], PW = m[8];
    const int DH = m[12], DW = m[13];
    const int ocb = (int)get_global_id(0), oc0 = ocb * MR;
    const int tiles = (OW + VW - 1) / VW;
    const int oh = (int)get_global_id(1) / tiles, ow0 = ((int)get_global_id(1) % tiles) * VW;
    const long b = (long)get_global_id(2);
    if (oc0 >= OC || oh >= OH || b >= m[0]) return;
    __global const XT* xend = x + (long)m[0] * C * H * W;
    const int xz = (int)xzp[0];
    const int c0 = ow0 * STR_W - PW;
    intv acc[MR];
    UNROLL for (int i = 0; i < MR; ++i) acc[i] = (intv)0;
#if defined(ALG_DOT4)
    const int C4 = (C + 3) / 4;
    __global const WT* wb = w + (long)ocb * C4 * (WIN_H * WIN_W * MR);
    intv sx = (intv)0; // sum of the data (padding read as xz)
    for (int ic = 0; ic < C4; ++ic) {
        __global const WT* wc = wb + ic * (WIN_H * WIN_W * MR);
        UNROLL for (int kh = 0; kh < WIN_H; ++kh) {
            const int ih = oh * STR_H - PH + kh * DH;
            const bool inside = ih >= 0 && ih < H;
            UNROLL for (int kw = 0; kw < WIN_W; ++kw) {
                uintv p = (uintv)0;
                UNROLL for (int j = 0; j < 4; ++j) {
                    const int c = ic * 4 + j;
                    intv v = (intv)(c < C ? xz : 0);
                    if (inside && c < C) {
                        __global const XT* row = x + ((b * C + c) * H + ih) * (long)W;
                        v = qload_row(row, c0 + kw * DW, W, STR_W, xz, x, xend, xs[0]);
                    }
                    p |= (convert_uintv(v) & 0xffu) << (8 * j);
                }
                uint pl[VW];
                QCAT(vstore, VW)(p, 0, pl);
                int a[VW], s[VW];
                UNROLL for (int l = 0; l < VW; ++l) s[l] = SUM4(pl[l]);
                sx += QCAT(vload, VW)(0, s);
                UNROLL for (int i = 0; i < MR; ++i) {
                    const uint wv = wc[(kh * WIN_W + kw) * MR + i];
                    UNROLL for (int l = 0; l < VW; ++l) a[l] = XDOT(pl[l], wv);
                    acc[i] += QCAT(vload, VW)(0, a);
                }
            }
        }
    }
    UNROLL for (int i = 0; i < MR; ++i) {
        const int oc = min(oc0 + i, OC - 1);
        const int wz = wq[2 * oc], sw = wq[2 * oc + 1];
        acc[i] = as_intv(as_uintv(acc[i]) - (uint)wz * as_uintv(sx) - (uint)xz * (uint)sw + (uint)m[11] * (uint)xz * (uint)wz);
    }
#else
    __global const WT* wb = w + (long)ocb * C * (WIN_H * WIN_W * MR);
#ifdef ALG_FMA
    floatv accf[MR];
    UNROLL for (int i = 0; i < MR; ++i) accf[i] = (floatv)0.0f;
#endif
    // Runs of RUN input channels: with ALG_FMA each run's f32 sums are
    // exact integers, added to the i32 accumulators after the run; with
    // ONE_RUN (all C channels make one exact run) the f32 sums are the
    // whole sums and the i32 accumulators are set once at the end, so
    // they take no registers in the loop.
    for (int ic0 = 0; ic0 < C; ic0 += RUN) {
        const int icn = min(C, ic0 + RUN);
        for (int ic = ic0; ic < icn; ++ic) {
            __global const XT* xp = x + (b * C + ic) * H * (long)W;
            __global const WT* wc = wb + ic * (WIN_H * WIN_W * MR);
            UNROLL for (int kh = 0; kh < WIN_H; ++kh) {
                const int ih = oh * STR_H - PH + kh * DH;
                if (ih >= 0 && ih < H) {
                    __global const XT* row = xp + (long)ih * W;
                    UNROLL for (int kw = 0; kw < WIN_W; ++kw) {
                        const intv v = qload_row(row, c0 + kw * DW, W, STR_W, xz, x, xend, xs[0]) - xz;
#ifdef ALG_FMA
                        const floatv vf = convert_floatv(v);
                        UNROLL for (int i = 0; i < MR; ++i) accf[i] = fma((floatv)wc[(kh * WIN_W + kw) * MR + i], vf, accf[i]);
#else
                        UNROLL for (int i = 0; i < MR; ++i) acc[i] += v * wc[(kh * WIN_W + kw) * MR + i];
#endif
                    }
                }
            }
        }
#if defined(ALG_FMA) && !defined(ONE_RUN)
        UNROLL for (int i = 0; i < MR; ++i) {
            acc[i] += convert_intv(accf[i]);
            accf[i] = (floatv)0.0f;
        }
#endif
    }
#ifdef ONE_RUN
    UNROLL for (int i = 0; i < MR; ++i) acc[i] = convert_intv(accf[i]);
#endif
#endif
    const int cnt = min(VW, OW - ow0);
    const float x_scale = xs[0];
#ifdef QUANT
    const float y_scale = ys[0];
    const int yz = (int)yzp[0];
#endif
    UNROLL for (int i = 0; i < MR; ++i) {
        const int oc = oc0 + i;
        if (oc < OC) {
            const float mult = x_scale * ws[m[10] ? oc : 0];
            const float bv = m[9] ? bias[oc] : 0.0f;
            const ulong o = (ulong)(((b * OC + oc) * OH + oh) * OW + ow0);
#ifdef QUANT
            qstore_v(acc[i], mult, bv, out, y_scale, yz, o, cnt, pm, pf, res);
#else
            qstore_v(acc[i], mult, bv, out, o, cnt, pm, pf, res);
#endif
        }
    }
}

// IRB is the number of input rows the RB output rows of a depthwise item
// read.
#define IRB ((RB - 1) * STR_H + WIN_H)

__kernel void qdwconv2d(__global const XT* x, __global const float* w, __global const ZT* xzp,
                        __global const float* xs, __global const float* ws, __global const float* bias,
                        __global const FT* res,
#ifdef QUANT
                        __global const float* ys, __global const YT* yzp, __global YT* out,
#else
                        __global float* out,
#endif
                        __global const int* m, __global const int* pm, __global const float* pf)
{
    const int C = m[1], H = m[2], W = m[3], OH = m[5], OW = m[6], PH = m[7], PW = m[8];
    const int ow0 = (int)get_global_id(0) * VW, oh0 = (int)get_global_id(1) * RB;
    const long z = (long)get_global_id(2);
    if (ow0 >= OW || oh0 >= OH || z >= (long)m[0] * C) return;
    const int c = (int)(z % C);
    const int xz = (int)xzp[0];
    float wr[WIN_H * WIN_W];
    UNROLL for (int i = 0; i < WIN_H * WIN_W; ++i) wr[i] = w[c * (WIN_H * WIN_W) + i];
    __global const XT* xend = x + (long)m[0] * C * H * W;
    floatv acc[RB];
    UNROLL for (int r = 0; r < RB; ++r) acc[r] = (floatv)0.0f;
    __global const XT* xp = x + z * H * (long)W;
    const int c0 = ow0 * STR_W - PW;
    UNROLL for (int ir = 0; ir < IRB; ++ir) {
        const int ih = oh0 * STR_H - PH + ir;
        if (ih >= 0 && ih < H) {
            __global const XT* row = xp + (long)ih * W;
            UNROLL for (int kw = 0; kw < WIN_W; ++kw) {
                const floatv v = convert_floatv(qload_row(row, c0 + kw, W, STR_W, xz, x, xend, xs[0]) - xz);
                UNROLL for (int r = 0; r < RB; ++r) {
                    const int kh = ir - r * STR_H;
                    if (kh >= 0 && kh < WIN_H) acc[r] = fma((floatv)wr[kh * WIN_W + kw], v, acc[r]);
                }
            }
        }
    }
    const int cnt = min(VW, OW - ow0);
    const float mult = xs[0] * ws[m[10] ? c : 0];
    const float bv = m[9] ? bias[c] : 0.0f;
#ifdef QUANT
    const float y_scale = ys[0];
    const int yz = (int)yzp[0];
#endif
    UNROLL for (int r = 0; r < RB; ++r) {
        const int oh = oh0 + r;
        if (oh < OH) {
#ifdef QUANT
            qstore_v(convert_intv(acc[r]), mult, bv, out, y_scale, yz, (ulong)((z * OH + oh) * OW + ow0), cnt, pm, pf, res);
#else
            qstore_v(convert_intv(acc[r]), mult, bv, out, (ulong)((z * OH + oh) * OW + ow0), cnt, pm, pf, res);
#endif
        }
    }
}
