// conv_fused.cl: fused_conv2d, the FusedConv op (graph.OpFusedConv) on
// the direct path: conv.cl's convolution plus bias and the post-op table
// (post_ops.clh).
//
// fused_conv2d: conv2d of conv.cl (NCHW, f32, groups, strides, pads,
// dilations, bias, build option OCB = output-channel block) plus post-ops.
// Work-size contract: 1-D NDRange with global size >= n = N*(OC/OCB)*OH*OW;
// any local size; work item i computes output channels ob*OCB ..
// ob*OCB+OCB-1 of pixel (b, oh, ow), i = ((b*(OC/OCB) + ob)*OH + oh)*OW +
// ow, each as a serial f32 fma sum in input channel, kernel row, kernel
// column order, then bias, then the post-ops; items with i >= n do nothing.
// The int array m is conv.cl's: N, C, H, W, OC, OH, OW, KH, KW, stride h/w,
// pad top/left, dilation h/w, group, has_bias.
//
// -DHALF (f16 activations): buffers are f16 through half.clh's macros,
// the math and the post-op tables f32.

#include "half.clh"
#include "post_ops.clh"
#include "conv_acc.clh"

__kernel void fused_conv2d(__global const FT* x, __global const FT* w, __global const FT* bias,
                           __global const FT* res, __global FT* out, const ulong n,
                           __global const int* m, __global const int* pm, __global const float* pf)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    float acc[OCB];
    long plane;
    const long o0 = conv_acc(gid, x, w, bias, m, acc, &plane);
    for (int j = 0; j < OCB; ++j) {
        const long o = o0 + j * plane;
        ST(out, o, post_ops(acc[j], (ulong)o, pm, pf, res));
    }
}
