// norm.cl: normalisations of f32 data: BatchNormalization (inference form),
// InstanceNormalization and LayerNormalization, with f32 accumulation.
// -DHALF holds f16 (half.clh), computing in float; -DDOUBLE holds and
// computes f64 (cl_khr_fp64, which the GPU device checks first).
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

// XT is the storage type of the tensors, A the math type.
#ifdef DOUBLE
#define XT double
#define A double
#define LDX(p, i) ((p)[i])
#define STX(p, i, v) ((p)[i] = (v))
#else
#define XT FT
#define A float
#define LDX(p, i) LD(p, i)
#define STX(p, i, v) ST(p, i, v)
#endif

__kernel void batch_norm(__global const XT* x, __global const XT* scale, __global const XT* bias,
                         __global const XT* mean, __global const XT* var, __global XT* out,
                         const ulong n, const ulong C, const ulong inner, const float eps)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const ulong c = (gid / inner) % C;
    STX(out, gid, (LDX(x, gid) - LDX(mean, c)) / sqrt(LDX(var, c) + eps) * LDX(scale, c) + LDX(bias, c));
}

// row_stats returns the mean of the inner elements of xp and sets *inv to
// 1 / sqrt(their population variance + eps).
static A row_stats(__global const XT* xp, const ulong inner, const float eps, A* inv)
{
    A mean = 0;
    for (ulong k = 0; k < inner; ++k) mean += LDX(xp, k);
    mean /= (A)inner;
    A var = 0;
    for (ulong k = 0; k < inner; ++k) { const A d = LDX(xp, k) - mean; var += d * d; }
    var /= (A)inner;
    *inv = (A)1 / sqrt(var + eps);
    return mean;
}

__kernel void instance_norm(__global const XT* x, __global const XT* scale, __global const XT* bias,
                            __global XT* out, const ulong n, const ulong C, const ulong inner, const float eps)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    __global const XT* xp = x + gid * inner;
    A inv;
    const A mean = row_stats(xp, inner, eps, &inv);
    const ulong c = gid % C;
    for (ulong k = 0; k < inner; ++k) STX(out, gid * inner + k, (LDX(xp, k) - mean) * inv * LDX(scale, c) + LDX(bias, c));
}

__kernel void layer_norm(__global const XT* x, __global const XT* scale, __global const XT* bias,
                         __global XT* out,
#ifdef LN_STATS
                         __global float* mean_out, __global float* inv_std_out,
#endif
                         const ulong n, const ulong inner, const float eps, const uint has_bias)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    __global const XT* xp = x + gid * inner;
    A inv;
    const A mean = row_stats(xp, inner, eps, &inv);
#ifdef LN_STATS
    mean_out[gid] = mean;
    inv_std_out[gid] = inv;
#endif
    for (ulong k = 0; k < inner; ++k) {
        A v = (LDX(xp, k) - mean) * inv * LDX(scale, k);
        if (has_bias) v += LDX(bias, k);
        STX(out, gid * inner + k, v);
    }
}
