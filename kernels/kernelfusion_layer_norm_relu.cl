// kernelfusion_layer_norm_relu.cl: y = max(0, (x - mean) / sqrt(var + eps) * scale +
// bias) over the last axis: LayerNormalization followed by Relu
// (openWakeWord's dense blocks) in one launch. Declared by the
// FuseLayerNormRelu entry of fusion.KernelFusions; the GPU launches it
// through the generic KernelFusion lowering.
//
// Work-size contract (graph.LaunchRows): 1-D NDRange with global size >=
// n; any local size. Work item i normalises row i of the last axis of y;
// items with i >= n do nothing. Arguments: the inputs x, scale and bias,
// the output y, n = the number of rows, the int array m (m[0] = C, the row
// length; then the broadcast table of y: m[1] = rank r, r dims of y, r
// element strides of x, of scale and of bias, 0 on broadcast axes; element
// c of row i is element i*C + c of y) and the float params p (p[0] = eps).
// Built with -DHALF (f16 activations) x, scale, bias and y hold f16
// (half.clh); p stays f32 and the math float.

#include "half.clh"

// offset returns the element offset in input k of element e of y, through
// the broadcast table t (t[0] = rank r, r dims, r strides per input).
long offset(ulong e, __global const int* t, const int k)
{
    const int rank = t[0];
    long off = 0;
    for (int d = rank - 1; d >= 0; --d) {
        const long dim = t[1 + d];
        off += (long)(e % dim) * t[1 + (k + 1) * rank + d];
        e /= dim;
    }
    return off;
}

__kernel void layer_norm_relu(__global const FT* x, __global const FT* scale, __global const FT* bias,
                              __global FT* y, const ulong n, __global const int* m, __global const float* p)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const long C = m[0];
    __global const int* t = m + 1;
    const ulong base = (ulong)gid * C;
    float mean = 0.0f;
    for (long c = 0; c < C; ++c) {
        mean += LD(x, offset(base + c, t, 0));
    }
    mean /= (float)C;
    float var = 0.0f;
    for (long c = 0; c < C; ++c) {
        const float d = LD(x, offset(base + c, t, 0)) - mean;
        var += d * d;
    }
    var /= (float)C;
    const float inv = rsqrt(var + p[0]);
    for (long c = 0; c < C; ++c) {
        const ulong e = base + c;
        const float v = (LD(x, offset(e, t, 0)) - mean) * inv * LD(scale, offset(e, t, 1)) + LD(bias, offset(e, t, 2));
        ST(y, e, fmax(v, 0.0f));
    }
}
