// color_nv12.cl: NV12 to RGB or BGR (OpenVINO's NV12toRGB/NV12toBGR, ITU-R
// BT.601 limited range; graph/ops_color.go): each pixel of an [N, H, W, 3]
// image from its luma value and the chroma pair of its 2x2 block,
//
//     R = 1.164 (Y-16) + 1.596 (V-128)
//     G = 1.164 (Y-16) - 0.813 (V-128) - 0.391 (U-128)
//     B = 1.164 (Y-16) + 2.018 (U-128)
//
// clamped to [0, 255] (u8 rounded to nearest even). The luma of pixel
// (b, r, c) is y[b*ystride + r*w + c]; its chroma pair is at
// uv[b*uvstride + uvoff + (r/2)*uvrow + (c/2)*2] and the next element
// (two planes: uvoff 0, uvrow w; one plane: y and uv are the same buffer,
// uvoff h*w past the luma rows, uvrow w).
//
// Build options: -DT=<uchar|float> is the element type (-DHALF: f16 stored
// as half, computed in float); -DU8 rounds and clamps to uchar; -DBGR
// writes blue first.
//
// Work-size contract: 1-D NDRange with global size >= n (pixels,
// N*H*W); any local size. Items with i >= n do nothing. Item i writes the
// three channels of pixel i.

#include "half.clh"

#ifndef T
#define T float
#endif
#ifdef HALF
#define LDT(p, i) LD(p, i)
#define STT(p, i, v) ST(p, i, v)
#define ET FT
#else
#define LDT(p, i) ((float)(p)[i])
#ifdef U8
#define STT(p, i, v) ((p)[i] = convert_uchar_sat(rint(v)))
#else
#define STT(p, i, v) ((p)[i] = (T)(v))
#endif
#define ET T
#endif

__kernel void nv12_to_rgb(__global const ET* y, __global const ET* uv, __global ET* out, const ulong n,
                          const ulong h, const ulong w, const ulong ystride, const ulong uvstride,
                          const ulong uvoff, const ulong uvrow)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const ulong c = gid % w;
    const ulong r = (gid / w) % h;
    const ulong b = gid / (w * h);
    const float yy = 1.164f * (LDT(y, b * ystride + r * w + c) - 16.0f);
    const ulong ci = b * uvstride + uvoff + (r / 2) * uvrow + (c / 2) * 2;
    const float u = LDT(uv, ci) - 128.0f;
    const float v = LDT(uv, ci + 1) - 128.0f;
    float red = clamp(yy + 1.596f * v, 0.0f, 255.0f);
    const float green = clamp(yy - 0.813f * v - 0.391f * u, 0.0f, 255.0f);
    float blue = clamp(yy + 2.018f * u, 0.0f, 255.0f);
#ifdef BGR
    const float t = red;
    red = blue;
    blue = t;
#endif
    STT(out, gid * 3, red);
    STT(out, gid * 3 + 1, green);
    STT(out, gid * 3 + 2, blue);
}
