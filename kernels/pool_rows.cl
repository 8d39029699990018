// pool_rows.cl: max_pool2d (-DPOOL_MAX) and avg_pool2d, MaxPool and
// AveragePool over the two spatial axes of NCHW data (f32, or f16 storage
// with -DHALF, computed in float) with any window, strides and pads and
// dilation 1, by runs of an output row: the downsampling of U-Net-like
// models (IS-Net's 2x2 stride-2 ceil_mode pools over 1024 to 32 pixel
// planes) and PP-OCRv4 rec's 3x2 average pool without pool.cl's index
// divisions and window-count loops per element.
//
// Work-size contract: 2-D NDRange with global size >= (ceil(OW / RUN),
// rows = N*C*OH); any local size. Item (i, r) computes the outputs
// RUN*i .. RUN*i + RUN - 1 below OW of output row r (plane r / OH, row
// r % OH); items outside do nothing. Max: the maximum over the window's
// taps inside the input (pads are never taken), NaN when one of them is
// NaN, -inf for a window with none. Average: the sum over the window's
// taps inside the input divided by their count, or (count_include_pad)
// by the count of its taps inside the padded input (a ceil_mode window's
// taps past the end pads are never counted). Build option RUN (default
// 8). The int array m holds H, W, OH, OW, KH, KW, stride h/w, pad
// top/left, rows, then (average only) count_include_pad and the ends of
// the padded input: H + pad bottom, W + pad right. With -DWIN2
// (max_pool2d_2x2, whose table must be a 2x2 window of stride 2 without a
// top or left pad) and RUN a multiple of 8, each 8 outputs of a run wholly
// inside the input read their two rows as vectors of 16 and take the
// maxima of their pairs: U-Nets' downsampling at memory speed (the general
// loop gathers a tap at a time); the run's other outputs take the loop.
// Build option PV (4, 8 or 16; default 4) is the width of those vectors:
// with PV 8 or 16 (a CPU device's own width, AVX or AVX-512) the parts are
// max(8, PV) outputs, RUN a multiple of that. A longer run (32 on a CPU
// device) shares one item's index arithmetic (a division by OH) among
// more outputs.

#include "half.clh"

#ifndef RUN
#define RUN 8
#endif

#ifndef PV
#define PV 4
#endif
#if PV == 16
#define floatp float16
#define LDP LD16
#define STP ST16
#elif PV == 8
#define floatp float8
#define LDP LD8
#define STP ST8
#else
#define floatp float4
#define LDP LD4
#define STP ST4
#endif
// BLK is the outputs a vector step takes (at least 8: RUN's unit).
#define BLK (PV > 8 ? PV : 8)

#if defined(POOL_MAX) && defined(WIN2) && RUN % BLK == 0
#define VEC2X2 1
// MAX_NAN is the maximum of a and b per lane, NaN where either is NaN
// (on float4: a wider vector passed to a builtin changes the ABI on a
// target without AVX).
#define MAX_NAN(a, b) select((b), (a), isgreater((a), (b)) | isnan(a))
#endif

__kernel void pool_rows(__global const FT* x, __global FT* out, __global const int* m)
{
    const int H = m[0], W = m[1], OH = m[2], OW = m[3], KH = m[4], KW = m[5];
    const int SH = m[6], SW = m[7], PH = m[8], PW = m[9];
    const int r = (int)get_global_id(1), o0 = (int)get_global_id(0) * RUN;
    if (r >= m[10] || o0 >= OW) return;
    const int oh = r % OH;
    __global const FT* xp = x + (long)(r / OH) * H * W;
    __global FT* op = out + (long)r * OW;
    const int hs = oh * SH - PH;
    const int h0 = max(hs, 0), h1 = min(hs + KH, H);
    const int o1 = min(OW, o0 + RUN);
#ifndef POOL_MAX
    const int inc = m[11], HE = m[12], WE = m[13];
    const int hn = inc ? min(hs + KH, HE) - hs : h1 - h0;
#endif
#ifdef VEC2X2
    for (int c0 = o0; c0 < o1; c0 += BLK) { // BLK outputs at a time
        const int c1 = min(o1, c0 + BLK);
        if (c1 - c0 == BLK && 2 * c1 <= W && hs + 1 < H) {
            __global const FT* row = xp + (long)hs * W + 2 * c0;
            for (int q = 0; q < BLK / PV; ++q, row += 2 * PV) { // PV outputs from 2*PV columns
                const floatp m0 = MAX_NAN(LDP(row, 0), LDP(row + W, 0));
                const floatp m1 = MAX_NAN(LDP(row, 1), LDP(row + W, 1));
                STP(op + c0 + PV * q, 0, MAX_NAN((floatp)(m0.even, m1.even), (floatp)(m0.odd, m1.odd)));
            }
            continue;
        }
#else
    {
        const int c0 = o0, c1 = o1;
#endif
        for (int o = c0; o < c1; ++o) {
            const int ws = o * SW - PW;
            const int w0 = max(ws, 0), w1 = min(ws + KW, W);
#ifdef POOL_MAX
            float acc = -INFINITY;
            int nan = 0;
            for (int ih = h0; ih < h1; ++ih) {
                __global const FT* row = xp + (long)ih * W;
                for (int iw = w0; iw < w1; ++iw) {
                    const float v = LD(row, iw);
                    nan |= isnan(v);
                    acc = fmax(acc, v);
                }
            }
            ST(op, o, nan ? NAN : acc);
#else
            const int wn = inc ? min(ws + KW, WE) - ws : w1 - w0;
            float acc = 0.0f;
            for (int ih = h0; ih < h1; ++ih) {
                __global const FT* row = xp + (long)ih * W;
                for (int iw = w0; iw < w1; ++iw) acc += LD(row, iw);
            }
            ST(op, o, acc / (float)(hn * wn));
#endif
        }
    }
}
