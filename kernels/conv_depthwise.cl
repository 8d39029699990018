// conv_depthwise.cl: fused_dwconv2d, the register-blocked depthwise
// convolution (block.clh) with the post-op table.
//
// fused_dwconv2d: depthwise conv2d (group = C = OC) with a KH x KW window,
// strides SH, SW, dilation 1 (build options WIN_H, WIN_W, STR_H, STR_W;
// default 3, 3, 1, 1), pads, bias and
// post-ops; weights [C, 1, KH, KW]. Build option RB (output rows per item,
// default 4). Work-size contract: 3-D NDRange, global size >=
// (ceil(OW/VW), ceil(OH/RB), N*C), any local size; item (t, r, z) computes
// the VW pixels at column t*VW of rows r*RB.. of plane z (image z / C,
// channel z % C) as serial f32 fma sums in kernel row, kernel column
// order, then bias, then the post-ops; items outside do nothing. The int
// array m holds N, C, H, W, OH, OW, pad top, pad left, has_bias.
//
// -DHALF (f16 activations): buffers are f16 through half.clh's macros,
// the math and the post-op tables f32.

#include "half.clh"
#include "post_ops.clh"
#include "block.clh"

#ifndef RB
#define RB 4
#endif

// IRB is the number of input rows the RB output rows of a depthwise item
// read.
#define IRB ((RB - 1) * STR_H + WIN_H)

// dw_rows adds to acc the IRB input rows of the item's RB output rows
// (plane xp, first input column c0); inside (a constant after inlining)
// says that every tap's columns lie inside the row.
__attribute__((always_inline)) inline void dw_rows(floatv acc[RB], __global const FT* xp, const float wr[WIN_H * WIN_W],
                                                   const int oh0, const int c0, const int H, const int W, const int PH,
                                                   const int inside, __global const FT* x, __global const FT* xend)
{
    UNROLL for (int ir = 0; ir < IRB; ++ir) {
        const int ih = oh0 * STR_H - PH + ir;
        if (ih >= 0 && ih < H) {
            __global const FT* row = xp + (long)ih * W;
            UNROLL for (int kw = 0; kw < WIN_W; ++kw) {
                const floatv v = load_row_in(row, c0 + kw, W, STR_W, x, xend, inside);
                UNROLL for (int r = 0; r < RB; ++r) {
                    const int kh = ir - r * STR_H;
                    if (kh >= 0 && kh < WIN_H) acc[r] = fma((floatv)wr[kh * WIN_W + kw], v, acc[r]);
                }
            }
        }
    }
}

__kernel void fused_dwconv2d(__global const FT* x, __global const FT* w, __global const FT* bias,
                             __global const FT* res, __global FT* out, __global const int* m,
                             __global const int* pm, __global const float* pf)
{
    const int C = m[1], H = m[2], W = m[3], OH = m[4], OW = m[5], PH = m[6], PW = m[7];
    const int ow0 = (int)get_global_id(0) * VW, oh0 = (int)get_global_id(1) * RB;
    const long z = (long)get_global_id(2);
    if (ow0 >= OW || oh0 >= OH || z >= (long)m[0] * C) return;
    const int c = (int)(z % C);
    float wr[WIN_H * WIN_W];
    UNROLL for (int i = 0; i < WIN_H * WIN_W; ++i) wr[i] = LD(w, c * (WIN_H * WIN_W) + i);
    __global const FT* xend = x + (long)m[0] * C * H * W;
    floatv acc[RB];
    UNROLL for (int r = 0; r < RB; ++r) acc[r] = (floatv)0.0f;
    __global const FT* xp = x + z * H * (long)W;
    const int c0 = ow0 * STR_W - PW;
    // An item whose columns and window lie inside the row (every tile but
    // a row's first and last) loads each tap as vectors with no check;
    // the others through load_row, which zeroes the columns outside.
#if STR_W == 1 || STR_W == 2
    const bool inside = c0 >= 0 && c0 + STR_W * VW + WIN_W - 1 <= W;
#else
    const bool inside = false; // load_row's lanes
#endif
    if (inside) {
        dw_rows(acc, xp, wr, oh0, c0, H, W, PH, 1, x, xend);
    } else {
        dw_rows(acc, xp, wr, oh0, c0, H, W, PH, 0, x, xend);
    }
    const int cnt = min(VW, OW - ow0);
    const float bv = m[8] ? LD(bias, c) : 0.0f;
    UNROLL for (int r = 0; r < RB; ++r) {
        const int oh = oh0 + r;
        if (oh < OH) store_v(acc[r] + bv, out, (ulong)((z * OH + oh) * OW + ow0), cnt, pm, pf, res);
    }
}
