// random.cl: the random ops on Philox4x32-10 (philox.clh), the generator
// the CPU reference computes too (internal/philox): element i of a node's
// tensor is word i%4 of the block at counter (i/4, stream) under the key,
// so every device makes the same values from a seed.
//
// Work-size contract: 1-D NDRange with global size >= n; any local size;
// items with i >= n do nothing. Item i computes output element i (for
// multinomial: sample i of the n = batch * samples; for normals: element
// i from words 2(i%2), 2(i%2)+1 of block i/2). Every kernel takes the
// request's seed buffer seed (one ulong), the node's key and stream, and
// own: when own != 0 the key is the node's (its seed attribute), else
// seed[0]. FT is the float buffer type (half.clh: -DHALF stores f16;
// -DDOUBLE makes FT double, computing normals and dropout's scaling in
// double as the CPU does; the device must have doubles);
// OT is bernoulli's and multinomial's output type (-DOT=..., -DOUT_HALF
// for f16 0/1 values). Uniforms are computed in float (exact: 24 bits over
// 2^24), so CPU and GPU agree bit for bit; normals agree to rounding.

#pragma OPENCL FP_CONTRACT OFF

#include "half.clh"
#include "philox.clh"

#ifdef DOUBLE
#define MT double
#else
#define MT float
#endif

// exp as the CPU computes it (in double, rounded to float) where the
// device has doubles (-DEXP_DOUBLE), else in float.
#ifdef EXP_DOUBLE
#define EXPF(v) ((float)exp((double)(v)))
#else
#define EXPF(v) exp(v)
#endif

#ifndef OT
#define OT float
#endif

#ifdef OUT_HALF
#define STO(p, i, v) vstore_half_rte((float)(v), (i), (__global half*)(p))
#else
#define STO(p, i, v) ((p)[i] = (OT)(v))
#endif

// the key of a node: its own, or the request's seed.
#define KEY(seed, key, own) ((own) ? (key) : (seed)[0])

__kernel void random_uniform(__global FT* y, const ulong n, __global const ulong* seed, const ulong key,
                             const ulong stream, const int own, const float low, const float range)
{
    const size_t i = get_global_id(0);
    if (i >= n) return;
    const float u = philox_uniform(philox_word(KEY(seed, key, own), stream, i));
    const float v = low + (float)(u * range);
    ST(y, i, v);
}

__kernel void random_normal(__global FT* y, const ulong n, __global const ulong* seed, const ulong key,
                            const ulong stream, const int own, const float mean, const float scale)
{
    const size_t i = get_global_id(0);
    if (i >= n) return;
    const uint4 b = philox_block(KEY(seed, key, own), i / 2, stream);
    const uint w1 = (i % 2) ? b.z : b.x, w2 = (i % 2) ? b.w : b.y;
    const MT u1 = ((MT)(w1 >> 8) + 1) * (MT)(1.0 / 16777216.0);
    const MT u2 = (MT)(w2 >> 8) * (MT)(1.0 / 16777216.0);
    const MT z = sqrt(-2 * log(u1)) * cos((MT)(2 * M_PI) * u2);
    ST(y, i, (MT)mean + (MT)scale * z);
}

__kernel void bernoulli(__global const FT* p, __global OT* y, const ulong n, __global const ulong* seed,
                        const ulong key, const ulong stream, const int own)
{
    const size_t i = get_global_id(0);
    if (i >= n) return;
    const float u = philox_uniform(philox_word(KEY(seed, key, own), stream, i));
#ifdef DOUBLE
    const int hit = (double)u < p[i];
#else
    const int hit = u < LD(p, i);
#endif
    STO(y, i, hit ? 1 : 0);
}

// multinomial: x [B, C] unnormalised log-probabilities; sample i = b * S +
// s is the first class whose cumulative exp(x - max) exceeds u * sum.
__kernel void multinomial(__global const FT* x, __global OT* y, const ulong n, const ulong C, const ulong S,
                          __global const ulong* seed, const ulong key, const ulong stream, const int own)
{
    const size_t i = get_global_id(0);
    if (i >= n) return;
    __global const FT* row = x + (i / S) * C;
    float m = -INFINITY;
    for (ulong c = 0; c < C; ++c) m = fmax(m, (float)LD(row, c));
    float sum = 0.0f;
    for (ulong c = 0; c < C; ++c) sum += EXPF((float)LD(row, c) - m);
    const float u = philox_uniform(philox_word(KEY(seed, key, own), stream, i)) * sum;
    float cum = 0.0f;
    ulong c = 0;
    for (; c + 1 < C; ++c) {
        cum += EXPF((float)LD(row, c) - m);
        if (u < cum) break;
    }
    y[i] = (OT)c;
}

// dropout_train: Dropout with a training_mode input: while training[0],
// element i is kept (scaled by 1/(1-ratio)) where its uniform is at least
// ratio and zeroed elsewhere; otherwise every element is kept as is. The
// mask (bytes) says which were kept.
__kernel void dropout_train(__global const FT* x, __global const FT* ratio, __global const uchar* training,
                            __global FT* y, __global uchar* mask, const ulong n, __global const ulong* seed,
                            const ulong key, const ulong stream, const int own)
{
    const size_t i = get_global_id(0);
    if (i >= n) return;
    if (!training[0]) {
        ST(y, i, LD(x, i));
        mask[i] = 1;
        return;
    }
    const float r = LD(ratio, 0);
    const float u = philox_uniform(philox_word(KEY(seed, key, own), stream, i));
    const int keep = u >= r;
    ST(y, i, keep ? (MT)LD(x, i) * ((MT)1 / ((MT)1 - (MT)r)) : (MT)0);
    mask[i] = keep;
}
