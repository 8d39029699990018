// pool_max2d.cl: max_pool2d, MaxPool over the two spatial axes of NCHW
// data (f32, or f16 storage with -DHALF, computed in float) with any
// window, strides and pads and dilation 1, by runs of an output row: the
// downsampling of U-Net-like models (IS-Net's 2x2 stride-2 ceil_mode
// pools over 1024 to 32 pixel planes) without pool.cl's index divisions
// per element.
//
// Work-size contract: 2-D NDRange with global size >= (ceil(OW / RUN),
// rows = N*C*OH); any local size. Item (i, r) computes the outputs
// RUN*i .. RUN*i + RUN - 1 below OW of output row r (plane r / OH, row
// r % OH): the maximum over the window's taps inside the input (pads
// are never taken), NaN when one of them is NaN, -inf for a window with
// none; items outside do nothing. Build option RUN (default 8). The int
// array m holds H, W, OH, OW, KH, KW, stride h/w, pad top/left, rows.

#include "half.clh"

#ifndef RUN
#define RUN 8
#endif

__kernel void max_pool2d(__global const FT* x, __global FT* out, __global const int* m)
{
    const int H = m[0], W = m[1], OH = m[2], OW = m[3], KH = m[4], KW = m[5];
    const int SH = m[6], SW = m[7], PH = m[8], PW = m[9];
    const int r = (int)get_global_id(1), o0 = (int)get_global_id(0) * RUN;
    if (r >= m[10] || o0 >= OW) return;
    const int oh = r % OH;
    __global const FT* xp = x + (long)(r / OH) * H * W;
    __global FT* op = out + (long)r * OW;
    const int h0 = max(oh * SH - PH, 0), h1 = min(oh * SH - PH + KH, H);
    const int o1 = min(OW, o0 + RUN);
    for (int o = o0; o < o1; ++o) {
        const int w0 = max(o * SW - PW, 0), w1 = min(o * SW - PW + KW, W);
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
    }
}
