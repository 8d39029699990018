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

__kernel void batch_norm(__global const float* x, __global const float* scale, __global const float* bias,
                         __global const float* mean, __global const float* var, __global float* out,
                         const ulong n, const ulong C, const ulong inner, const float eps)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const ulong c = (gid / inner) % C;
    out[gid] = (x[gid] - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c];
}

__kernel void instance_norm(__global const float* x, __global const float* scale, __global const float* bias,
                            __global float* out, const ulong n, const ulong C, const ulong inner, const float eps)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    __global const float* xp = x + gid * inner;
    float mean = 0.0f;
    for (ulong k = 0; k < inner; ++k) mean += xp[k];
    mean /= (float)inner;
    float var = 0.0f;
    for (ulong k = 0; k < inner; ++k) { const float d = xp[k] - mean; var += d * d; }
    var /= (float)inner;
    const float inv = 1.0f / sqrt(var + eps);
    const ulong c = gid % C;
    for (ulong k = 0; k < inner; ++k) out[gid * inner + k] = (xp[k] - mean) * inv * scale[c] + bias[c];
}

__kernel void layer_norm(__global const float* x, __global const float* scale, __global const float* bias,
                         __global float* out,
#ifdef LN_STATS
                         __global float* mean_out, __global float* inv_std_out,
#endif
                         const ulong n, const ulong inner, const float eps, const uint has_bias)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    __global const float* xp = x + gid * inner;
    float mean = 0.0f;
    for (ulong k = 0; k < inner; ++k) mean += xp[k];
    mean /= (float)inner;
    float var = 0.0f;
    for (ulong k = 0; k < inner; ++k) { const float d = xp[k] - mean; var += d * d; }
    var /= (float)inner;
    const float inv = 1.0f / sqrt(var + eps);
#ifdef LN_STATS
    mean_out[gid] = mean;
    inv_std_out[gid] = inv;
#endif
    for (ulong k = 0; k < inner; ++k) {
        float v = (xp[k] - mean) * inv * scale[k];
        if (has_bias) v += bias[k];
        out[gid * inner + k] = v;
    }
}
