// conv_blocked.cl: fused_conv2d_blocked, the register-blocked direct
// convolution (block.clh) with the post-op table.
//
// fused_conv2d_blocked: conv2d of one group (NCHW, f32) with a KH x KW
// window, strides SH, SW and dilations DH, DW (build options WIN_H, WIN_W,
// STR_H, STR_W, DIL_H, DIL_W; default 3, 3, 1, 1, 1, 1: U-Net-like models'
// dilated 3x3 convolutions run here too), pads, bias, post-ops, on weights packed as
// [ceil(OC/MR)][C][KH][KW][MR] (zero-padded). Build options MR (output
// channels per item, default 8) and NV (vectors of VW pixels of a row per
// item, default 1: each weight loaded feeds NV fmas). Work-size contract:
// 3-D NDRange, global size >= (ceil(OC/MR), OH * ceil(OW/(NV*VW)), N), any
// local size; item (i, j, b) computes output channels i*MR.. of the NV*VW
// pixels of row j / tiles at column (j % tiles)*NV*VW of image b (tiles =
// ceil(OW/(NV*VW))), each as a serial
// f32 fma sum in input channel, kernel row, kernel column order, then
// bias, then the post-ops; items outside do nothing. The int array m holds
// N, C, H, W, OC, OH, OW, pad top, pad left, has_bias.
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

__kernel void fused_conv2d_blocked(__global const FT* x, __global const FT* w, __global const FT* bias,
                                   __global const FT* res, __global FT* out, __global const int* m,
                                   __global const int* pm, __global const float* pf)
{
    const int C = m[1], H = m[2], W = m[3], OC = m[4], OH = m[5], OW = m[6], PH = m[7], PW = m[8];
    const int ocb = (int)get_global_id(0), oc0 = ocb * MR;
    const int tiles = (OW + NR - 1) / NR;
    const int oh = (int)get_global_id(1) / tiles, ow0 = ((int)get_global_id(1) % tiles) * NR;
    const long b = (long)get_global_id(2);
    if (oc0 >= OC || oh >= OH || b >= m[0]) return;
    __global const FT* xend = x + (long)m[0] * C * H * W;
    floatv acc[MR][NV];
    UNROLL for (int i = 0; i < MR; ++i) UNROLL for (int j = 0; j < NV; ++j) acc[i][j] = (floatv)0.0f;
    __global const FT* wb = w + (long)ocb * C * (WIN_H * WIN_W * MR);
    const int c0 = ow0 * STR_W - PW;
    for (int ic = 0; ic < C; ++ic) {
        __global const FT* xp = x + (b * C + ic) * H * (long)W;
        __global const FT* wc = wb + ic * (WIN_H * WIN_W * MR);
        UNROLL for (int kh = 0; kh < WIN_H; ++kh) {
            const int ih = oh * STR_H - PH + kh * DIL_H;
            if (ih >= 0 && ih < H) {
                __global const FT* row = xp + (long)ih * W;
                UNROLL for (int kw = 0; kw < WIN_W; ++kw) {
                    floatv xv[NV];
                    UNROLL for (int j = 0; j < NV; ++j) xv[j] = load_row(row, c0 + j * VW * STR_W + kw * DIL_W, W, STR_W, x, xend);
                    UNROLL for (int i = 0; i < MR; ++i) {
                        const floatv wv = (floatv)LD(wc, (kh * WIN_W + kw) * MR + i);
                        UNROLL for (int j = 0; j < NV; ++j) acc[i][j] = fma(wv, xv[j], acc[i][j]);
                    }
                }
            }
        }
    }
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
