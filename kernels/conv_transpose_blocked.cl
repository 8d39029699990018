// conv_transpose_blocked.cl: fused_deconv2d, the register-blocked
// ConvTranspose whose kernel equals its stride (block.clh), with the
// post-op table.
//
// fused_deconv2d: ConvTranspose of one group whose kernel equals its
// stride (STR_H x STR_W, build options; no pads, no output padding,
// dilation 1), so that each output pixel (oh, ow) reads the one input
// pixel (oh / SH, ow / SW) with kernel tap (oh % SH, ow % SW); bias and
// post-ops. STR_W must divide VW. The weights are packed as
// [ceil(OC/MR)][C][SH][MR][VW]: lane l of the vector for output channel oc
// and row tap kh holds w[c, oc, kh, l % SW] (zero-padded channels). Build
// option MR (output channels per item). Work-size contract: 3-D NDRange,
// global size >= (ceil(OC/MR), OH * ceil(OW/VW), N), any local size; item
// (i, j, b) computes output channels i*MR.. of the VW pixels of row j /
// tiles at column (j % tiles)*VW of image b as serial f32 fma sums over
// the input channels, then bias, then the post-ops; items outside do
// nothing. The int array m holds N, C, H, W, OC, OH, OW, has_bias.
//
// -DHALF (f16 activations): buffers are f16 through half.clh's macros,
// the math and the post-op tables f32.

#include "half.clh"
#include "post_ops.clh"
#ifndef STR_H
#define STR_H 2
#endif
#ifndef STR_W
#define STR_W 2
#endif
#include "block.clh"

#ifndef MR
#define MR 8
#endif

__kernel void fused_deconv2d(__global const FT* x, __global const FT* w, __global const FT* bias,
                             __global const FT* res, __global FT* out, __global const int* m,
                             __global const int* pm, __global const float* pf)
{
    const int C = m[1], H = m[2], W = m[3], OC = m[4], OH = m[5], OW = m[6];
    const int ocb = (int)get_global_id(0), oc0 = ocb * MR;
    const int tiles = (OW + VW - 1) / VW;
    const int oh = (int)get_global_id(1) / tiles, ow0 = ((int)get_global_id(1) % tiles) * VW;
    const long b = (long)get_global_id(2);
    if (oc0 >= OC || oh >= OH || b >= m[0]) return;
    const int ih = oh / STR_H, kh = oh % STR_H;
    __global const FT* xend = x + (long)m[0] * C * H * W;
    floatv acc[MR];
    UNROLL for (int i = 0; i < MR; ++i) acc[i] = (floatv)0.0f;
    __global const FT* wb = w + ((long)ocb * C * STR_H + kh) * (MR * VW);
    __global const FT* xr = x + (b * C * H + ih) * (long)W;
    for (int ic = 0; ic < C; ++ic) {
        // Lane l reads input column ow0/SW + l/SW.
        const floatv xv = shuffle(load_row(xr + (long)ic * H * W, ow0 / STR_W, W, 1, x, xend), as_uintv(LANES / STR_W));
        __global const FT* wc = wb + (long)ic * (STR_H * MR * VW);
        UNROLL for (int i = 0; i < MR; ++i) acc[i] = fma(LDV(wc, i), xv, acc[i]);
    }
    const int cnt = min(VW, OW - ow0);
    UNROLL for (int i = 0; i < MR; ++i) {
        const int oc = oc0 + i;
        if (oc < OC) {
            floatv v = acc[i];
            if (m[7]) v += LD(bias, oc);
            store_v(v, out, (ulong)(((b * OC + oc) * OH + oh) * OW + ow0), cnt, pm, pf, res);
        }
    }
}
