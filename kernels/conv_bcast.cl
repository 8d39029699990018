// conv_bcast.cl: fused_conv2d_bcast, the direct convolution whose inner
// loop broadcasts one input value against vectors of output-channel
// weights (the loop of ONNX Runtime's NCHWc kernels, on NCHW activations),
// with the post-op table.
//
// fused_conv2d_bcast: conv2d of one group (NCHW, f32) with a KH x KW
// window, strides SH, SW (build options WIN_H, WIN_W, STR_H, STR_W;
// default 3, 3, 1, 1) and dilations DH, DW: 1 x 1, or with -DDIL_RT any,
// read from m[10], m[11] at run time (one program for every dilation; the
// undilated program keeps constant tap offsets, which run up to 1.5x
// faster), pads, bias, post-ops, on weights packed as
// [ceil(OC/(OB*VW))][C][KH][KW][OB*VW] (zero-padded), so that one tap's
// weights of the OB*VW output channels are OB contiguous vectors. Build
// options OB (vectors of VW output channels per item, default 2), NP
// (pixels of a row per tile, default 12), TL (tiles per item, default 1)
// and CK (input channels per chunk, default 16). Each weight vector loaded
// feeds NP fmas and each input value OB, into OB*NP accumulator vectors.
// With TL > 1 an item runs its TL tiles in turn over each chunk of CK
// input channels, keeping their partial sums in private memory, so the
// chunk's weights, loaded into the cache by the first tile, serve the
// others from it (with TL 1 the sum runs over all C in registers). Tiles
// whose window stays inside the row load without checks; those at a
// row's ends check each column.
// Work-size contract: 3-D NDRange, global size >= (OH * ceil(OW/(TL*NP)),
// ceil(OC/(OB*VW)), N), any local size (private memory: TL*OB*NP*VW
// floats of partial sums and as many for the store); item (j, i, b)
// computes output channels i*OB*VW.. (OB*VW of them, those below OC) of
// the TL*NP pixels of row j / tiles from column (j % tiles)*TL*NP of
// image b (tiles = ceil(OW/(TL*NP)), those below OW), each as a serial f32
// fma sum in input channel, kernel row, kernel column order (the chunks
// keep it), then bias, then the post-ops; items outside do nothing. The
// pixels run along the first dimension, which a CPU driver's groups follow
// first: the items one core runs in turn share their block of weights
// (C*KH*KW*OB*VW floats, 1.2 MB for IS-Net's 1024 input channels), which
// stays in its cache, and two of their three input rows. The int array m
// holds N, C, H, W, OC, OH, OW, pad top, pad left, has_bias, DH, DW.
//
// -DHALF (f16 activations): buffers are f16 through half.clh's macros,
// the math and the post-op tables f32.

#include "half.clh"
#include "post_ops.clh"
#include "block.clh"

#ifndef OB
#define OB 2
#endif
#ifndef NP
#define NP 12
#endif
#ifndef TL
#define TL 1
#endif
#ifndef CK
#define CK 16
#endif
#define OCV (OB * VW)
// SPAN is the columns of a row one tile's taps read (dilation 1; with
// DIL_RT the edge tiles check each tap's column instead).
#define SPAN ((NP - 1) * STR_W + (WIN_W - 1) + 1)

// bcast_taps adds to acc the taps of input channels [ic0, ic1) of the tile whose
// window starts at input row ih0 and column c0 of image plane xb, weights
// wb; edge checks each column against [0, W) (a constant after inlining):
// once per column of the row, not once per tap (with DIL_RT once per tap).
__attribute__((always_inline)) inline void bcast_taps(floatv acc[OB][NP], __global const FT* xb,
                                                      __global const FT* wb, const int ic0, const int ic1, const int H,
                                                      const int W, const int DH, const int DW, const int ih0, const int c0,
                                                      const bool edge)
{
    for (int ic = ic0; ic < ic1; ++ic) {
        __global const FT* xp = xb + (long)ic * H * W;
        __global const FT* wc = wb + (long)ic * (WIN_H * WIN_W * OCV);
        UNROLL for (int kh = 0; kh < WIN_H; ++kh) {
            const int ih = ih0 + kh * DH;
            if (ih < 0 || ih >= H) continue;
            __global const FT* row = xp + (long)ih * W;
            // Inside the row the taps are constant offsets from rp. At a
            // row's ends the SPAN columns the tile's taps read are loaded
            // once (0 outside [0, W)) into xr, which the taps then index
            // by constants, as they index rp.
            __global const FT* rp = row + (edge ? 0 : c0);
#ifndef DIL_RT
            float xr[SPAN];
            if (edge) {
                UNROLL for (int q = 0; q < SPAN; ++q) {
                    const int c = c0 + q;
                    const float v = LD(row, clamp(c, 0, W - 1));
                    xr[q] = (c >= 0 && c < W) ? v : 0.0f;
                }
            }
#endif
            UNROLL for (int kw = 0; kw < WIN_W; ++kw) {
                floatv wv[OB];
                UNROLL for (int o = 0; o < OB; ++o) wv[o] = LDV(wc + (kh * WIN_W + kw) * OCV, o);
                UNROLL for (int p = 0; p < NP; ++p) {
#ifdef DIL_RT
                    // The run-time dilation sizes no array: each column
                    // checked at each tap.
                    float xv;
                    if (edge) {
                        const int c = c0 + p * STR_W + kw * DW;
                        xv = LD(row, clamp(c, 0, W - 1));
                        xv = (c >= 0 && c < W) ? xv : 0.0f;
                    } else {
                        xv = LD(rp, p * STR_W + kw * DW);
                    }
#else
                    const float xv = edge ? xr[p * STR_W + kw] : LD(rp, p * STR_W + kw);
#endif
                    UNROLL for (int o = 0; o < OB; ++o) acc[o][p] = fma((floatv)xv, wv[o], acc[o][p]);
                }
            }
        }
    }
}

// bcast_store stores the ntl tiles held in blk (the item's accumulators
// [ntl][OB][NP][VW] as floats: output channels oc0.. below OC, pixels
// ow0.. below OW of row oh of image b), each with its bias and the
// post-ops: one call per item (noinline, as store_v: the post-ops are
// compiled into it once). It first transposes blk into rows of pixels per
// output channel (private memory), then stores each row by vectors of VW
// pixels (the last ones of the row through store_v), so the output is
// written row by row.
__attribute__((noinline)) void bcast_store(const float* blk, const int ntl, const int oc0, const long b, const int oh,
                                           const int ow0, __global const int* m, __global const FT* bias,
                                           __global const FT* res, __global FT* out, __global const int* pm,
                                           __global const float* pf)
{
    const int OC = m[4], OH = m[5], OW = m[6];
    const int npx = min(ntl * NP, OW - ow0), nc = min(OCV, OC - oc0);
    float tb[OCV * TL * NP + VW]; // rows of TL*NP pixels; VW floats of slack for the last vector load
    for (int c = 0; c < nc; ++c) {
        const int o = c / VW, l = c % VW;
        const float bv = m[9] ? LD(bias, oc0 + c) : 0.0f;
        for (int q = 0; q < npx; ++q) tb[c * (TL * NP) + q] = blk[(((q / NP) * OB + o) * NP + q % NP) * VW + l] + bv;
    }
    for (int c = 0; c < nc; ++c) {
        const ulong row = (ulong)(((b * OC + oc0 + c) * OH + oh) * OW + ow0);
        for (int q0 = 0; q0 < npx; q0 += VW) {
            const floatv v = LOADV(0, tb + c * (TL * NP) + q0);
            if (q0 + VW <= npx) {
                STV(out + row + q0, 0, post_ops_v(v, row + q0, pm, pf, res));
            } else {
                store_v(v, out, row + q0, npx - q0, pm, pf, res); // the row's last pixels
            }
        }
    }
}

__kernel void fused_conv2d_bcast(__global const FT* x, __global const FT* w, __global const FT* bias,
                                 __global const FT* res, __global FT* out, __global const int* m,
                                 __global const int* pm, __global const float* pf)
{
    const int C = m[1], H = m[2], W = m[3], OC = m[4], OH = m[5], OW = m[6], PH = m[7], PW = m[8];
#ifdef DIL_RT
    const int DH = m[10], DW = m[11];
#else
    const int DH = 1, DW = 1; // constants after inlining: the undilated loops stay as fast as before
#endif
    const int ob = (int)get_global_id(1), oc0 = ob * OCV;
    const int tiles = (OW + TL * NP - 1) / (TL * NP);
    const int oh = (int)get_global_id(0) / tiles, ow0 = ((int)get_global_id(0) % tiles) * (TL * NP);
    const long b = (long)get_global_id(2);
    if (oc0 >= OC || oh >= OH || b >= m[0]) return;
    __global const FT* xb = x + b * C * H * (long)W;
    __global const FT* wb = w + (long)ob * C * (WIN_H * WIN_W * OCV);
    const int ih0 = oh * STR_H - PH, c0 = ow0 * STR_W - PW;
    floatv acc[OB][NP];
#if TL == 1
    UNROLL for (int o = 0; o < OB; ++o) UNROLL for (int p = 0; p < NP; ++p) acc[o][p] = (floatv)0.0f;
    if (c0 >= 0 && c0 + (NP - 1) * STR_W + (WIN_W - 1) * DW < W) {
        bcast_taps(acc, xb, wb, 0, C, H, W, DH, DW, ih0, c0, false);
    } else {
        bcast_taps(acc, xb, wb, 0, C, H, W, DH, DW, ih0, c0, true);
    }
    floatv blk[OB][NP]; // a copy in memory: acc itself stays in registers
    UNROLL for (int o = 0; o < OB; ++o) UNROLL for (int p = 0; p < NP; ++p) blk[o][p] = acc[o][p];
    bcast_store((const float*)blk, 1, oc0, b, oh, ow0, m, bias, res, out, pm, pf);
#else
    const int nt = min(TL, (OW - ow0 + NP - 1) / NP); // tiles below OW
    floatv part[TL][OB][NP];
    for (int ic0 = 0; ic0 < C; ic0 += CK) {
        const int ic1 = min(C, ic0 + CK);
        for (int t = 0; t < nt; ++t) {
            UNROLL for (int o = 0; o < OB; ++o) UNROLL for (int p = 0; p < NP; ++p) acc[o][p] = ic0 == 0 ? (floatv)0.0f : part[t][o][p];
            const int ct = c0 + t * NP * STR_W;
            if (ct >= 0 && ct + (NP - 1) * STR_W + (WIN_W - 1) * DW < W) {
                bcast_taps(acc, xb, wb, ic0, ic1, H, W, DH, DW, ih0, ct, false);
            } else {
                bcast_taps(acc, xb, wb, ic0, ic1, H, W, DH, DW, ih0, ct, true);
            }
            UNROLL for (int o = 0; o < OB; ++o) UNROLL for (int p = 0; p < NP; ++p) part[t][o][p] = acc[o][p];
        }
    }
    bcast_store((const float*)part, nt, oc0, b, oh, ow0, m, bias, res, out, pm, pf);
#endif
}
