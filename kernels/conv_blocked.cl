// conv_blocked.cl: fused_conv2d_blocked, the register-blocked direct
// convolution (block.clh) with the post-op table.
//
// fused_conv2d_blocked: conv2d of one group (NCHW, f32) with a KH x KW
// window, strides SH, SW (build options WIN_H, WIN_W, STR_H, STR_W;
// default 3, 3, 1, 1) and dilations DH, DW: 1 x 1, or with -DDIL_RT any,
// read from m[10], m[11] at run time (U-Net-like models' dilated 3x3
// convolutions share one program per variant, one build and one
// work-group compilation, instead of one per dilation; the undilated
// program keeps constant offsets, which run up to 1.3x faster), pads,
// bias, post-ops, on weights packed as
// [ceil(OC/MR)][C][KH][KW][MR] (zero-padded). Build options MR (output
// channels per block, default 8), NV (vectors of VW pixels of a row per
// item, default 1: each weight loaded feeds NV fmas), OCG (blocks per
// item, default 1) and CK (input channels per chunk, default 16). With
// OCG > 1 an item runs its OCG blocks in turn over each chunk of CK input
// channels, keeping their partial sums in private memory, so the chunk's
// input rows, loaded into the cache by the first block, serve the others
// from it (with OCG 1 the sum runs over all C in registers).
// Work-size contract: 3-D NDRange, global size >= (OH * ceil(OW/(NV*VW)),
// ceil(ceil(OC/MR)/OCG), N), any local size; item (j, i, b) computes output
// channels i*OCG*MR.. (OCG*MR of them, those below OC) of the NV*VW
// pixels of row j / tiles at column (j % tiles)*NV*VW of image b (tiles =
// ceil(OW/(NV*VW))), each as a serial f32 fma sum in input channel,
// kernel row, kernel column order (the chunks keep it), then bias, then
// the post-ops; items outside do nothing. The pixels run along the first
// dimension, as in conv_bcast.cl: the items one core of a CPU device runs
// in turn share their block of weights in its cache. The int array m holds
// N, C, H, W, OC, OH, OW, pad top, pad left, has_bias, DH, DW.
//
// -DHALF (f16 activations): buffers are f16 through half.clh's macros,
// the math and the post-op tables f32.

#include "half.clh"
#include "post_ops.clh"
#include "block.clh"

#ifndef MR
#define MR 8
#endif
#ifndef NV
#define NV 1
#endif
#ifndef OCG
#define OCG 1
#endif
#ifndef CK
#define CK 16
#endif

// conv_chunk adds to acc the input channels [ic0, ic1) of the block of MR
// output channels whose packed weights start at wb, for the NV vectors of
// output row oh whose first input column is c0 (image plane xb); inside
// (a constant after inlining, block.clh's ROW_*) says where the taps'
// columns lie: inside the row, its loads need no check; at an end of the
// row, on a 16-register ISA, a select zeroes the lanes outside (with
// branches per tap the compiler hoisted the weight broadcasts above them
// and parked them on the stack: pthread-haswell's code stored and
// reloaded 43-46 vectors per 24 fmas).
__attribute__((always_inline)) inline void conv_chunk(floatv acc[MR][NV], __global const FT* xb, __global const FT* wb,
                                                      const int ic0, const int ic1, const int ih0, const int c0,
                                                      const int H, const int W, const int DH, const int DW,
                                                      __global const FT* x, __global const FT* xend, const int inside)
{
    for (int ic = ic0; ic < ic1; ++ic) {
        __global const FT* xp = xb + (long)ic * H * W;
        __global const FT* wc = wb + ic * (WIN_H * WIN_W * MR);
        UNROLL for (int kh = 0; kh < WIN_H; ++kh) {
            const int ih = ih0 + kh * DH;
            if (ih >= 0 && ih < H) {
                __global const FT* row = xp + (long)ih * W;
                UNROLL for (int kw = 0; kw < WIN_W; ++kw) {
                    floatv xv[NV];
                    UNROLL for (int j = 0; j < NV; ++j) xv[j] = load_row_in(row, c0 + j * VW * STR_W + kw * DW, W, STR_W, x, xend, inside);
                    UNROLL for (int i = 0; i < MR; ++i) {
                        const floatv wv = (floatv)LD(wc, (kh * WIN_W + kw) * MR + i);
                        UNROLL for (int j = 0; j < NV; ++j) acc[i][j] = fma(wv, xv[j], acc[i][j]);
                    }
                }
            }
        }
    }
}

// conv_store stores block acc (output channels oc0.. below OC) of row oh
// from column ow0 of image b, each with its bias and the post-ops.
__attribute__((always_inline)) inline void conv_store(floatv acc[MR][NV], const int oc0, const long b, const int oh,
                                                      const int ow0, __global const int* m, __global const FT* bias,
                                                      __global const FT* res, __global FT* out, __global const int* pm,
                                                      __global const float* pf)
{
    const int OC = m[4], OH = m[5], OW = m[6];
    UNROLL for (int i = 0; i < MR; ++i) {
        const int oc = oc0 + i;
        if (oc < OC) {
            const float bv = m[9] ? LD(bias, oc) : 0.0f;
            UNROLL for (int j = 0; j < NV; ++j) {
                const int o = ow0 + j * VW;
                if (o < OW) store_v(acc[i][j] + bv, out, (ulong)(((b * OC + oc) * OH + oh) * OW + o), min(VW, OW - o), pm, pf, res);
            }
        }
    }
}

__kernel void fused_conv2d_blocked(__global const FT* x, __global const FT* w, __global const FT* bias,
                                   __global const FT* res, __global FT* out, __global const int* m,
                                   __global const int* pm, __global const float* pf)
{
    const int C = m[1], H = m[2], W = m[3], OC = m[4], OH = m[5], OW = m[6], PH = m[7], PW = m[8];
#ifdef DIL_RT
    const int DH = m[10], DW = m[11];
#else
    const int DH = 1, DW = 1; // constants after inlining: the undilated loops stay as fast as before
#endif
    const int ocg = (int)get_global_id(1), oc0 = ocg * OCG * MR;
    const int tiles = (OW + NR - 1) / NR;
    const int oh = (int)get_global_id(0) / tiles, ow0 = ((int)get_global_id(0) % tiles) * NR;
    const long b = (long)get_global_id(2);
    if (oc0 >= OC || oh >= OH || b >= m[0]) return;
    __global const FT* xend = x + (long)m[0] * C * H * W;
    __global const FT* xb = x + b * C * H * (long)W;
    __global const FT* wb = w + (long)ocg * OCG * C * (WIN_H * WIN_W * MR);
    const int ih0 = oh * STR_H - PH, c0 = ow0 * STR_W - PW;
    // Every tap's columns inside the row (all but a row's first and last
    // items): loads with no check; at a row's ends (ROW_EDGE_SELECT) the
    // vectors with their outside lanes zeroed where no vector crosses an
    // end of the buffer (all but the first channel's first rows and the
    // last's last), else load_row. Strides 1 and 2; others load_row.
    const long plane = (long)b * C * H;
    const int mode = row_mode(plane + max(ih0, 0), plane + (long)(C - 1) * H + min(ih0 + (WIN_H - 1) * DH, H - 1), c0,
                              c0 + NR * STR_W + (WIN_W - 1) * DW, W, x, xend);
    floatv acc[MR][NV];
#if OCG == 1
    UNROLL for (int i = 0; i < MR; ++i) UNROLL for (int j = 0; j < NV; ++j) acc[i][j] = (floatv)0.0f;
    if (mode == ROW_INSIDE) {
        conv_chunk(acc, xb, wb, 0, C, ih0, c0, H, W, DH, DW, x, xend, ROW_INSIDE);
    } else if (mode == ROW_EDGE) {
        conv_chunk(acc, xb, wb, 0, C, ih0, c0, H, W, DH, DW, x, xend, ROW_EDGE);
    } else {
        conv_chunk(acc, xb, wb, 0, C, ih0, c0, H, W, DH, DW, x, xend, ROW_CHECKED);
    }
    conv_store(acc, oc0, b, oh, ow0, m, bias, res, out, pm, pf);
#else
    const int nb = min(OCG, (OC - oc0 + MR - 1) / MR); // blocks below OC
    floatv part[OCG][MR][NV];
    for (int ic0 = 0; ic0 < C; ic0 += CK) {
        for (int g = 0; g < nb; ++g) {
            UNROLL for (int i = 0; i < MR; ++i) UNROLL for (int j = 0; j < NV; ++j) acc[i][j] = ic0 == 0 ? (floatv)0.0f : part[g][i][j];
            __global const FT* wg = wb + (long)g * C * (WIN_H * WIN_W * MR);
            const int ic1 = min(C, ic0 + CK);
            if (mode == ROW_INSIDE) {
                conv_chunk(acc, xb, wg, ic0, ic1, ih0, c0, H, W, DH, DW, x, xend, ROW_INSIDE);
            } else if (mode == ROW_EDGE) {
                conv_chunk(acc, xb, wg, ic0, ic1, ih0, c0, H, W, DH, DW, x, xend, ROW_EDGE);
            } else {
                conv_chunk(acc, xb, wg, ic0, ic1, ih0, c0, H, W, DH, DW, x, xend, ROW_CHECKED);
            }
            UNROLL for (int i = 0; i < MR; ++i) UNROLL for (int j = 0; j < NV; ++j) part[g][i][j] = acc[i][j];
        }
    }
    for (int g = 0; g < nb; ++g) {
        UNROLL for (int i = 0; i < MR; ++i) UNROLL for (int j = 0; j < NV; ++j) acc[i][j] = part[g][i][j];
        conv_store(acc, oc0 + g * MR, b, oh, ow0, m, bias, res, out, pm, pf);
    }
#endif
}
