// kernelfusion_fc_layer_norm_relu.cl: y = max(0, LayerNorm(x.w + b) * scale
// + beta) over the last axis: a FullyConnected (x rows of K, w [K, C]),
// LayerNormalization over its C outputs and Relu (openWakeWord's dense
// layers) in one launch. Declared by the FuseFCLayerNormRelu entry of
// fusion.KernelFusions; the GPU launches it through the generic
// KernelFusion lowering.
//
// Work-size contract (graph.LaunchGEMMRows): 1-D NDRange of n work groups
// of L items, L a power of two of at most 256; group r computes row r of y
// (groups with r >= n do nothing). The row's columns go in chunks of VW
// (build option -DVW=4, 8 or 16, default 4): item i takes chunks i, i + L,
// ... (a whole chunk as one vector,
// the last, partial one column by column), each an f32 fma sum over k
// (four interleaved sums for a whole chunk);
// then the row's mean and variance are reduced over the group in local
// memory. Arguments: the inputs x (n rows of K), w ([K, C], row-major), b,
// scale and beta ([C]), the output y (n rows of C), n = the number of
// rows, the int array m (m[0] = C, m[1] = K) and the float params p (p[0] =
// the epsilon). Built with -DHALF (f16 activations) the tensors hold f16
// (half.clh); p stays f32 and the math float. y holds the row's products
// between the passes, as the unfused FullyConnected's output would.

#include "half.clh"
#include "rows.clh"

__kernel void fc_layer_norm_relu(__global const FT* x, __global const FT* w, __global const FT* b,
                                 __global const FT* scale, __global const FT* beta, __global FT* y,
                                 const ulong n, __global const int* m, __global const float* p)
{
    __local float red[ROWS_MAX_GROUP];
    const size_t row = get_group_id(0);
    const int lid = (int)get_local_id(0);
    const int L = (int)get_local_size(0);
    if (row >= n || L > ROWS_MAX_GROUP) return; // the whole group alike
    const long C = m[0];
    const long K = m[1];
    const ulong xo = (ulong)row * K;
    __global FT* yr = y + (ulong)row * C;
    float sum = 0.0f;
    for (long c0 = (long)lid * VW; c0 < C; c0 += (long)L * VW) {
        if (c0 + VW <= C) {
            fvec a = VLD(b + c0);
#define FC_X(k) LD(x, xo + (k))
            ROWS_FMA_COLUMNS(a, FC_X, w, K, C, c0);
#undef FC_X
            VST(yr + c0, a);
            sum += rows_vsum(VLD(yr + c0));
            continue;
        }
        for (long c = c0; c < C; ++c) {
            float acc = LD(b, c);
            for (long k = 0; k < K; ++k) {
                acc = fma(LD(x, xo + k), LD(w, k * C + c), acc);
            }
            ST(yr, c, acc);
            sum += LD(yr, c);
        }
    }
    const float mean = rows_fold(sum, 0, red, lid, L) / (float)C;
    float sq = 0.0f;
    for (long c0 = (long)lid * VW; c0 < C; c0 += (long)L * VW) {
        if (c0 + VW <= C) {
            const fvec d = VLD(yr + c0) - mean;
            sq += rows_vsum(d * d);
            continue;
        }
        for (long c = c0; c < C; ++c) {
            const float d = LD(yr, c) - mean;
            sq += d * d;
        }
    }
    const float inv = rsqrt(rows_fold(sq, 0, red, lid, L) / (float)C + p[0]);
    for (long c0 = (long)lid * VW; c0 < C; c0 += (long)L * VW) {
        if (c0 + VW <= C) {
            const fvec v = (VLD(yr + c0) - mean) * inv * VLD(scale + c0) + VLD(beta + c0);
            VST(yr + c0, fmax(v, 0.0f));
            continue;
        }
        for (long c = c0; c < C; ++c) {
            const float v = (LD(yr, c) - mean) * inv * LD(scale, c) + LD(beta, c);
            ST(yr, c, fmax(v, 0.0f));
        }
    }
}
