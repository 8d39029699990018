// pool.cl: 2-D MaxPool and AveragePool (NCHW, f32) with strides, pads,
// dilations and count_include_pad; 1-D pooling is the H = 1 case.
//
// Build options: -DPOOL_MAX selects max pooling (default average).
//
// Work-size contract: 1-D NDRange with global size >= n = N*C*OH*OW; any
// local size. Work item i computes output element i; items with i >= n do
// nothing. The int array m holds H, W, OH, OW, KH, KW, stride h/w, pad
// top/left, dilation h/w, count_include_pad, padded H, padded W (H and W
// plus both pads: the average's divisor never counts past them).

__kernel void pool2d(__global const float* x, __global float* out, const ulong n, __global const int* m)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int H = m[0], W = m[1], OH = m[2], OW = m[3], KH = m[4], KW = m[5];
    const int SH = m[6], SW = m[7], PH = m[8], PW = m[9], DH = m[10], DW = m[11];
    const int ow = (int)(gid % (ulong)OW);
    const int oh = (int)((gid / (ulong)OW) % (ulong)OH);
    const long nc = (long)(gid / ((ulong)OW * OH));
    __global const float* xp = x + nc * H * (long)W;
#ifdef POOL_MAX
    float acc = -INFINITY;
#else
    float acc = 0.0f;
    int cnt = 0, cnt_pad = 0;
#endif
    for (int kh = 0; kh < KH; ++kh) {
        const int ih = oh * SH - PH + kh * DH;
        for (int kw = 0; kw < KW; ++kw) {
            const int iw = ow * SW - PW + kw * DW;
#ifndef POOL_MAX
            if (ih + PH < m[13] && iw + PW < m[14]) cnt_pad++;
#endif
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            const float v = xp[(long)ih * W + iw];
#ifdef POOL_MAX
            acc = (isnan(v) || isnan(acc)) ? NAN : fmax(acc, v);
#else
            acc += v;
            cnt++;
#endif
        }
    }
#ifdef POOL_MAX
    out[gid] = acc;
#else
    out[gid] = acc / (float)(m[12] ? cnt_pad : cnt);
#endif
}
