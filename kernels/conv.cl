// conv.cl: direct 2-D convolution (NCHW, f32) with groups, strides, pads,
// dilations and an optional bias; 1-D convolution is the H = 1 case.
//
// Build option OCB (default 1) is the output-channel block: each work item
// computes OCB consecutive output channels of one output pixel, so every
// input element it loads feeds OCB accumulators (register blocking). The
// GPU device picks OCB so that it divides OC/group.
//
// Work-size contract: 1-D NDRange with global size >= n = N*(OC/OCB)*OH*OW;
// any local size. Work item i computes, for pixel (b, oh, ow) and channel
// block ob, where i = ((b*(OC/OCB) + ob)*OH + oh)*OW + ow, output channels
// ob*OCB .. ob*OCB+OCB-1, each as a serial f32 sum (fma, in input channel
// then kernel row then kernel column order) over its group's input
// channels and the kernel window; items with i >= n do nothing. The int
// array m holds N, C, H, W, OC, OH, OW, KH, KW, stride h/w, pad top/left,
// dilation h/w, group, has_bias.
//
// Built with -DHALF, x, w, bias and out hold f16 (half.clh); the sums stay
// f32.

#include "half.clh"
#include "conv_acc.clh"

__kernel void conv2d(__global const FT* x, __global const FT* w, __global const FT* bias,
                     __global FT* out, const ulong n, __global const int* m)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    float acc[OCB];
    long plane;
    const long o0 = conv_acc(gid, x, w, bias, m, acc, &plane);
    for (int j = 0; j < OCB; ++j) {
        ST(out, o0 + j * plane, acc[j]);
    }
}
