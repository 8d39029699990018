// conv_depthwise_local.cl: fused_dwconv2d_local, the depthwise convolution
// shaped for GPU-type devices: a TX x TY work group stages the input tile
// its outputs read (with the window's halo) in local memory, then each item
// computes one output pixel from it, with the bias and the post-op table.
//
// fused_dwconv2d_local: depthwise conv2d (group = C = OC) with a KH x KW
// window, strides SH, SW, dilation 1 (build options WIN_H, WIN_W, STR_H,
// STR_W; default 3, 3, 1, 1), pads, bias and post-ops; weights [C, 1, KH,
// KW]. Build options TX, TY (default 16, 8): the work group.
// Work-size contract: 3-D NDRange, local size exactly (TX, TY, 1) (the
// kernel requires it), global size (ceil(OW/TX)*TX, ceil(OH/TY)*TY, N*C); group
// (gx, gy, z) computes the output pixels of rows gy*TY.. and columns
// gx*TX.. of plane z (image z / C, channel z % C), item (lx, ly) the one
// at (gy*TY + ly, gx*TX + lx) as a serial f32 fma sum in kernel row,
// kernel column order, then bias, then the post-ops. No item returns early
// (the tile load ends at a barrier): every item loads its share of the
// tile, items outside the output store nothing. The int array m holds N, C,
// H, W, OH, OW, pad top, pad left, has_bias.
//
// -DHALF (f16 activations): buffers are f16 through half.clh's macros,
// the tile, the math and the post-op tables f32.

#include "half.clh"
#include "post_ops.clh"

#ifndef TX
#define TX 16
#endif
#ifndef TY
#define TY 8
#endif
#ifndef WIN_H
#define WIN_H 3
#endif
#ifndef WIN_W
#define WIN_W 3
#endif
#ifndef STR_H
#define STR_H 1
#endif
#ifndef STR_W
#define STR_W 1
#endif
// The input tile of a group: its rows and columns.
#define IT_H ((TY - 1) * STR_H + WIN_H)
#define IT_W ((TX - 1) * STR_W + WIN_W)

__attribute__((reqd_work_group_size(TX, TY, 1)))
__kernel void fused_dwconv2d_local(__global const FT* x, __global const FT* w, __global const FT* bias,
                                   __global const FT* res, __global FT* out, __global const int* m,
                                   __global const int* pm, __global const float* pf)
{
    __local float tile[IT_H * IT_W];
    const int C = m[1], H = m[2], W = m[3], OH = m[4], OW = m[5], PH = m[6], PW = m[7];
    const int lx = (int)get_local_id(0), ly = (int)get_local_id(1);
    const int ow0 = (int)get_group_id(0) * TX, oh0 = (int)get_group_id(1) * TY;
    const long z = (long)get_global_id(2);
    const int c = (int)(z % C);
    const int ih0 = oh0 * STR_H - PH, iw0 = ow0 * STR_W - PW;
    __global const FT* xp = x + z * H * (long)W;
    for (int e = ly * TX + lx; e < IT_H * IT_W; e += TX * TY) {
        const int ih = ih0 + e / IT_W, iw = iw0 + e % IT_W;
        tile[e] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? LD(xp, (long)ih * W + iw) : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int oh = oh0 + ly, ow = ow0 + lx;
    if (oh < OH && ow < OW) {
        __global const FT* wc = w + c * (WIN_H * WIN_W);
        float acc = 0.0f;
        for (int kh = 0; kh < WIN_H; ++kh)
            for (int kw = 0; kw < WIN_W; ++kw)
                acc = fma(LD(wc, kh * WIN_W + kw), tile[(ly * STR_H + kh) * IT_W + lx * STR_W + kw], acc);
        if (m[8]) acc += LD(bias, c);
        const ulong o = ((ulong)z * OH + oh) * OW + ow;
        ST(out, o, post_ops(acc, o, pm, pf, res));
    }
}
