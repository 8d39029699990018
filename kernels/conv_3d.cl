// conv_3d.cl: 3-D Conv and ConvTranspose of f32 NCDHW data, direct: each
// work item computes one output element over its window, with groups,
// strides, pads (the begin pads; the end pads only shape the output) and
// dilations. (1-D and 2-D convolutions have their own kernels in conv.cl
// and conv_transpose.cl.)
//
// Work-size contract: 1-D NDRange with global size >= n = N*OC*OD*OH*OW;
// any local size. Work item i computes output element i; items with i >= n
// do nothing. The int array m holds N, C, D, H, W, OC, OD, OH, OW, KD, KH,
// KW, stride d/h/w, pad d/h/w, dilation d/h/w, group and has_bias (bias is
// not read when 0). Weights are [OC, C/group, KD, KH, KW] for conv3d and
// [C, OC/group, KD, KH, KW] for conv_transpose3d.
//
// Built with -DHALF, x, w, bias and y hold f16 (half.clh); the sums stay
// f32.

#include "half.clh"

__kernel void conv3d(__global const FT* x, __global const FT* w, __global const FT* bias,
                     __global FT* y, const ulong n, __global const int* m)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int C = m[1], D = m[2], H = m[3], W = m[4], OC = m[5], OD = m[6], OH = m[7], OW = m[8];
    const int KD = m[9], KH = m[10], KW = m[11];
    const int group = m[21];
    ulong r = gid;
    const int ow = (int)(r % (ulong)OW); r /= (ulong)OW;
    const int oh = (int)(r % (ulong)OH); r /= (ulong)OH;
    const int od = (int)(r % (ulong)OD); r /= (ulong)OD;
    const int oc = (int)(r % (ulong)OC);
    const long b = (long)(r / (ulong)OC);
    const int icg = C / group;
    const int g = oc / (OC / group);
    float acc = m[22] ? LD(bias, oc) : 0.0f;
    for (int ic = 0; ic < icg; ++ic) {
        __global const FT* xp = x + ((b * C + g * icg + ic) * (long)D) * H * W;
        __global const FT* wp = w + ((long)oc * icg + ic) * KD * KH * KW;
        for (int kd = 0; kd < KD; ++kd) {
            const int id = od * m[12] - m[15] + kd * m[18];
            if (id < 0 || id >= D) continue;
            for (int kh = 0; kh < KH; ++kh) {
                const int ih = oh * m[13] - m[16] + kh * m[19];
                if (ih < 0 || ih >= H) continue;
                for (int kw = 0; kw < KW; ++kw) {
                    const int iw = ow * m[14] - m[17] + kw * m[20];
                    if (iw < 0 || iw >= W) continue;
                    acc += LD(xp, ((long)id * H + ih) * W + iw) * LD(wp, (kd * KH + kh) * KW + kw);
                }
            }
        }
    }
    ST(y, gid, acc);
}

__kernel void conv_transpose3d(__global const FT* x, __global const FT* w, __global const FT* bias,
                               __global FT* y, const ulong n, __global const int* m)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int C = m[1], D = m[2], H = m[3], W = m[4], OC = m[5], OD = m[6], OH = m[7], OW = m[8];
    const int KD = m[9], KH = m[10], KW = m[11];
    const int SD = m[12], SH = m[13], SW = m[14];
    const int group = m[21];
    ulong r = gid;
    const int ow = (int)(r % (ulong)OW); r /= (ulong)OW;
    const int oh = (int)(r % (ulong)OH); r /= (ulong)OH;
    const int od = (int)(r % (ulong)OD); r /= (ulong)OD;
    const int oc = (int)(r % (ulong)OC);
    const long b = (long)(r / (ulong)OC);
    const int icg = C / group;
    const int ocg = OC / group;
    const int g = oc / ocg;
    float acc = m[22] ? LD(bias, oc) : 0.0f;
    for (int ic = g * icg; ic < (g + 1) * icg; ++ic) {
        __global const FT* xp = x + ((b * C + ic) * (long)D) * H * W;
        __global const FT* wp = w + ((long)ic * ocg + oc % ocg) * KD * KH * KW;
        for (int kd = 0; kd < KD; ++kd) {
            const int td = od + m[15] - kd * m[18];
            if (td < 0 || td % SD != 0 || td / SD >= D) continue;
            for (int kh = 0; kh < KH; ++kh) {
                const int th = oh + m[16] - kh * m[19];
                if (th < 0 || th % SH != 0 || th / SH >= H) continue;
                for (int kw = 0; kw < KW; ++kw) {
                    const int tw = ow + m[17] - kw * m[20];
                    if (tw < 0 || tw % SW != 0 || tw / SW >= W) continue;
                    acc += LD(xp, ((long)(td / SD) * H + th / SH) * W + tw / SW) * LD(wp, (kd * KH + kh) * KW + kw);
                }
            }
        }
    }
    ST(y, gid, acc);
}
