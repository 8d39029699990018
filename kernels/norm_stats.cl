// norm_stats.cl: the normalisations by the input's own statistics, after
// reduce.cl has reduced them (sums, means, norms): MeanVarianceNormalization,
// LpNormalization and training-mode BatchNormalization, all in float
// (lp_norm_apply in T: -DT=double holds f64, cl_khr_fp64, which the GPU
// device checks first; default float).
//
// Work-size contract: 1-D NDRange with global size >= n; any local size;
// items with i >= n do nothing. mvn_apply and lp_norm_apply: item i
// computes element i of y (n = x's elements); the int array m is the
// broadcast table of x against the reduced statistics (nd_index.clh's
// nd_offsets2: rank, dims, x's strides, the statistics' strides).
// bn_train_apply: item i computes element i of y [N, C, inner];
// bn_train_stats: item c (n = C) computes channel c's running statistics.

#include "nd_index.clh"

#ifndef T
#define T float
#endif

// mvn_apply: (x - mean) / (sqrt(ss * inv - mean^2) + 1e-9), ss the sum of
// squares of the group, inv 1 / its size.
__kernel void mvn_apply(__global const float* x, __global const float* mean, __global const float* ss,
                        __global float* y, const ulong n, __global const int* m, const float inv)
{
    const size_t i = get_global_id(0);
    if (i >= n) return;
    const long2 o = nd_offsets2(i, n, m);
    const float mu = mean[o.y];
    const float sd = sqrt(fmax(ss[o.y] * inv - mu * mu, 0.0f)) + 1e-9f;
    y[o.x] = (x[o.x] - mu) / sd;
}

// lp_norm_apply: x / norm, 0 where the norm is 0.
__kernel void lp_norm_apply(__global const T* x, __global const T* norm, __global T* y, const ulong n,
                            __global const int* m)
{
    const size_t i = get_global_id(0);
    if (i >= n) return;
    const long2 o = nd_offsets2(i, n, m);
    const T d = norm[o.y];
    y[o.x] = d != 0 ? x[o.x] / d : (T)0;
}

// bn_train_apply: (x - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c],
// var = ss * inv - mean^2 (the population variance).
__kernel void bn_train_apply(__global const float* x, __global const float* mean, __global const float* ss,
                             __global const float* scale, __global const float* bias, __global float* y,
                             const ulong n, const ulong C, const ulong inner, const float inv, const float eps)
{
    const size_t i = get_global_id(0);
    if (i >= n) return;
    const ulong c = (i / inner) % C;
    const float mu = mean[c], var = fmax(ss[c] * inv - mean[c] * mean[c], 0.0f);
    y[i] = (x[i] - mu) / sqrt(var + eps) * scale[c] + bias[c];
}

// bn_train_stats: the running statistics input * momentum + batch * (1 -
// momentum).
__kernel void bn_train_stats(__global const float* mean, __global const float* ss, __global const float* in_mean,
                             __global const float* in_var, __global float* out_mean, __global float* out_var,
                             const ulong n, const float inv, const float momentum)
{
    const size_t c = get_global_id(0);
    if (c >= n) return;
    const float var = fmax(ss[c] * inv - mean[c] * mean[c], 0.0f);
    out_mean[c] = in_mean[c] * momentum + mean[c] * (1.0f - momentum);
    out_var[c] = in_var[c] * momentum + var * (1.0f - momentum);
}
