// norm.cl: normalisations of f32 data: BatchNormalization (inference form),
// InstanceNormalization and LayerNormalization, with f32 accumulation.
//
// Work-size contract: 1-D NDRange with global size >= n; any local size;
// items with i >= n do nothing.
//   batch_norm:    n = all elements; element i is in channel (i / inner) % C.
//   instance_norm: n = N*C; item i normalises the inner elements of (n, c).
//   layer_norm:    n = outer rows; item i normalises a row of inner elements,
//                  scale and bias (if has_bias) holding inner values. Built
//                  with -DLN_STATS it also writes the row's mean and
//                  1/sqrt(var + eps) to element i of mean_out and inv_std_out.
//
// -DHALF stores every FT buffer (all but the f32 statistics mean_out and
// inv_std_out) as f16, computing in float (half.clh).

#include "half.clh"

__kernel void batch_norm(__global const FT* x, __global const FT* scale, __global const FT* bias,
                         __global const FT* mean, __global const FT* var, __global FT* out,
                         const ulong n, const ulong C, const ulong inner, const float eps)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const ulong c = (gid / inner) % C;
    ST(out, gid, (LD(x, gid) - LD(mean, c)) / sqrt(LD(var, c) + eps) * LD(scale, c) + LD(bias, c));
}

__kernel void instance_norm(__global const FT* x, __global const FT* scale, __global const FT* bias,
                            __global FT* out, const ulong n, const ulong C, const ulong inner, const float eps)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    __global const FT* xp = x + gid * inner;
    float mean = 0.0f;
    for (ulong k = 0; k < inner; ++k) mean += LD(xp, k);
    mean /= (float)inner;
    float var = 0.0f;
    for (ulong k = 0; k < inner; ++k) { const float d = LD(xp, k) - mean; var += d * d; }
    var /= (float)inner;
    const float inv = 1.0f / sqrt(var + eps);
    const ulong c = gid % C;
    for (ulong k = 0; k < inner; ++k) ST(out, gid * inner + k, (LD(xp, k) - mean) * inv * LD(scale, c) + LD(bias, c));
}

__kernel void layer_norm(__global const FT* x, __global const FT* scale, __global const FT* bias,
                         __global FT* out,
#ifdef LN_STATS
                         __global float* mean_out, __global float* inv_std_out,
#endif
                         const ulong n, const ulong inner, const float eps, const uint has_bias)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    __global const FT* xp = x + gid * inner;
    float mean = 0.0f;
    for (ulong k = 0; k < inner; ++k) mean += LD(xp, k);
    mean /= (float)inner;
    float var = 0.0f;
    for (ulong k = 0; k < inner; ++k) { const float d = LD(xp, k) - mean; var += d * d; }
    var /= (float)inner;
    const float inv = 1.0f / sqrt(var + eps);
#ifdef LN_STATS
    mean_out[gid] = mean;
    inv_std_out[gid] = inv;
#endif
    for (ulong k = 0; k < inner; ++k) {
        float v = (LD(xp, k) - mean) * inv * LD(scale, k);
        if (has_bias) v += LD(bias, k);
        ST(out, gid * inner + k, v);
    }
}
