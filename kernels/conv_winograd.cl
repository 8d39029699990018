// conv_winograd.cl: the transforms of the Winograd F(2x2,3x3) convolution
// (3x3 window, stride 1, one group, dilations DH, DW: 1 x 1, or with
// -DDIL_RT read from the int arrays at run time, so that every dilation
// shares one program; the undilated program keeps constant strides,
// 5-10% faster): the input transform V = B^T d B of every 4x4 input tile,
// then (fused_gemm, batched over the 16 transform points) M = U . V with
// the weights U = G g G^T transformed on the host, then the output
// transform Y = A^T m A of every tile with bias and post-ops. An output
// tile is 2x2 pixels DIL apart on each axis (a dilated 3x3 window is a 3x3
// window on the grid of pixels DIL apart, so the same transforms apply):
// along an axis of O outputs and dilation d there are T = ceil(O / 2d) * d
// tiles, tile t starting at output (t / d) * 2d + t % d (with d = 1:
// ceil(O/2) tiles at 2t). Tiles cover TH x TW per image, P tiles in all.
//
// winograd_input_2x2_3x3: x [N, C, H, W] -> v [16][C][P], its 16 planes
// m[10] elements apart and its rows m[11] >= P apart (the GPU device pads
// both, so that the planes and rows touched together do not share the
// cache's sets).
// Work-size contract: 2-D NDRange, global size >= (P, C), any local size; item (p,
// c) transforms the 4x4 tile p of channel c (rows oh0 - PH + i * DH,
// columns ow0 - PW + j * DW for the tile's first output oh0, ow0; 0
// outside the image); items outside do nothing. The int array m holds N,
// C, H, W, TH, TW (tiles per column and row), PH, PW, DH, DW, the plane
// and row strides of v.
//
// winograd_output_2x2_3x3: mt [16][OC][P], planes m[9] and rows m[10] >=
// P elements apart -> out [N, OC, OH, OW].
// Work-size contract: 2-D NDRange, global size >= (P, OC), any local size; item (p,
// oc) writes the up to 2x2 pixels (DIL apart) of tile p of channel oc inside the
// image, each with the bias and the post-op table; items outside do
// nothing. The int array m holds N, OC, OH, OW, TH, TW, has_bias, DH,
// DW, the plane and row strides of mt.
//
// -DHALF (f16 activations): every buffer is f16 through half.clh's
// macros, the math and the post-op tables f32.

#include "half.clh"
#include "post_ops.clh"

// tile_start is the first output of tile t along an axis of dilation d.
inline int tile_start(const int t, const int d) { return (t / d) * 2 * d + t % d; }

__kernel void winograd_input_2x2_3x3(__global const FT* x, __global FT* v, __global const int* m)
{
    const int C = m[1], H = m[2], W = m[3], TH = m[4], TW = m[5], PH = m[6], PW = m[7];
#ifdef DIL_RT
    const int DH = m[8], DW = m[9];
#else
    const int DH = 1, DW = 1;
#endif
    const int P = m[0] * TH * TW;
    const int p = (int)get_global_id(0), c = (int)get_global_id(1);
    if (p >= P || c >= C) return;
    const int b = p / (TH * TW), th = (p / TW) % TH, tw = p % TW;
    const int ih0 = tile_start(th, DH) - PH, iw0 = tile_start(tw, DW) - PW;
    __global const FT* xp = x + ((long)b * C + c) * H * W;
    float d[4][4];
    for (int i = 0; i < 4; ++i) {
        const int ih = ih0 + i * DH;
        for (int j = 0; j < 4; ++j) {
            const int iw = iw0 + j * DW;
            d[i][j] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? LD(xp, (long)ih * W + iw) : 0.0f;
        }
    }
    // t = B^T d (rows), then t B (columns): B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1].
    float t[4][4];
    for (int j = 0; j < 4; ++j) {
        t[0][j] = d[0][j] - d[2][j];
        t[1][j] = d[1][j] + d[2][j];
        t[2][j] = d[2][j] - d[1][j];
        t[3][j] = d[1][j] - d[3][j];
    }
    const long plane = m[10];
    __global FT* vp = v + (long)c * m[11] + p;
    for (int i = 0; i < 4; ++i) {
        ST(vp, (4 * i + 0) * plane, t[i][0] - t[i][2]);
        ST(vp, (4 * i + 1) * plane, t[i][1] + t[i][2]);
        ST(vp, (4 * i + 2) * plane, t[i][2] - t[i][1]);
        ST(vp, (4 * i + 3) * plane, t[i][1] - t[i][3]);
    }
}

__kernel void winograd_output_2x2_3x3(__global const FT* mt, __global const FT* bias, __global const FT* res,
                                      __global FT* out, __global const int* m, __global const int* pm,
                                      __global const float* pf)
{
    const int OC = m[1], OH = m[2], OW = m[3], TH = m[4], TW = m[5];
#ifdef DIL_RT
    const int DH = m[7], DW = m[8];
#else
    const int DH = 1, DW = 1;
#endif
    const int P = m[0] * TH * TW;
    const int p = (int)get_global_id(0), oc = (int)get_global_id(1);
    if (p >= P || oc >= OC) return;
    const long plane = m[9];
    __global const FT* mp = mt + (long)oc * m[10] + p;
    float s[2][4];
    // s = A^T m (rows), then s A (columns): A^T = [1 1 1 0; 0 1 -1 -1].
    for (int j = 0; j < 4; ++j) {
        const float m0 = LD(mp, (0 + j) * plane), m1 = LD(mp, (4 + j) * plane);
        const float m2 = LD(mp, (8 + j) * plane), m3 = LD(mp, (12 + j) * plane);
        s[0][j] = m0 + m1 + m2;
        s[1][j] = m1 - m2 - m3;
    }
    const int b = p / (TH * TW), th = (p / TW) % TH, tw = p % TW;
    const float bv = m[6] ? LD(bias, oc) : 0.0f;
    for (int i = 0; i < 2; ++i) {
        const int oh = tile_start(th, DH) + i * DH;
        if (oh >= OH) break;
        const float y[2] = {s[i][0] + s[i][1] + s[i][2], s[i][1] - s[i][2] - s[i][3]};
        for (int j = 0; j < 2; ++j) {
            const int ow = tile_start(tw, DW) + j * DW;
            if (ow < OW) {
                const ulong o = (((ulong)b * OC + oc) * OH + oh) * OW + ow;
                ST(out, o, post_ops(y[j] + bv, o, pm, pf, res));
            }
        }
    }
}
