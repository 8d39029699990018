// quant_gemm_blocked.cl: qfc_blocked, graph.OpQuantizedFullyConnected:
// the exact integer product of A [M, K] (XT, minus its zero point) and the
// weights W [K, N] minus their per-column zero points, with the fused
// requantization epilogue of quant_block.clh per column.
//
// Algorithms (the qgemm family's): ALG_FMA (default) the weights as f32,
// fma sums over runs of CHUNK of K (each run's sum an integer below 2^24,
// so exact) added to an i32 accumulator; ALG_INT the weights as i32 and
// i32 vector math. The weights are [K][ceil(N/VW)*VW], zero-padded.
//
// Work-size contract: 2-D NDRange, global size >= (ceil(N/VW), M), any
// local size; item (j, r) computes the VW columns j*VW.. of row r; items
// outside do nothing. The int array m holds M, N, K, has_bias, w_scale
// per column (1) or one (0). xs, ws, xz, bias, ys, yz as in
// quant_conv_blocked.cl.

#pragma OPENCL FP_CONTRACT OFF

#include "half.clh"
#include "post_ops.clh"
#include "block.clh"
#include "quant.clh"
#include "quant_block.clh"

#ifndef CHUNK
#define CHUNK 256
#endif

#ifdef ALG_INT
#define WT int
#define WLOAD(i) QCAT(vload, VW)((i), w)
#else
#define WT float
#define WLOAD(i) QCAT(vload, VW)((i), w)
#endif

__kernel void qfc_blocked(__global const XT* a, __global const WT* w, __global const XT* xzp,
                          __global const float* xs, __global const float* ws, __global const float* bias,
                          __global const FT* res,
#ifdef QUANT
                          __global const float* ys, __global const YT* yzp, __global YT* out,
#else
                          __global float* out,
#endif
                          __global const int* m, __global const int* pm, __global const float* pf)
{
    const int M = m[0], N = m[1], K = m[2];
    const int j = (int)get_global_id(0), r = (int)get_global_id(1);
    const int n0 = j * VW;
    if (n0 >= N || r >= M) return;
    const int NP = (N + VW - 1) / VW; // padded row of the weights, in vectors
    const int xz = (int)xzp[0];
    __global const XT* ar = a + (long)r * K;
    intv acc = (intv)0;
#ifdef ALG_INT
    for (int k = 0; k < K; ++k) {
        acc += ((int)ar[k] - xz) * WLOAD((long)k * NP + j);
    }
#else
    floatv accf = (floatv)0.0f;
    for (int k = 0; k < K; ++k) {
        accf = fma((floatv)(float)((int)ar[k] - xz), WLOAD((long)k * NP + j), accf);
        if ((k + 1) % CHUNK == 0 || k + 1 == K) {
            acc += convert_intv(accf);
            accf = (floatv)0.0f;
        }
    }
#endif
    const float x_scale = xs[0];
    const int cnt = min(VW, N - n0);
    int t[VW];
    QCAT(vstore, VW)(acc, 0, t);
#ifdef QUANT
    const float y_scale = ys[0];
    const int yz = (int)yzp[0];
#endif
    // One column at a time: each has its own multiplier and bias.
    for (int l = 0; l < cnt; ++l) {
        const int n = n0 + l;
        const float mult = x_scale * ws[m[4] ? n : 0];
        const float bv = m[3] ? bias[n] : 0.0f;
        float v = (float)t[l] * mult;
        v = v + bv;
        const ulong o = (ulong)r * N + n;
        v = post_ops(v, o, pm, pf, res);
#ifdef QUANT
        out[o] = (YT)round_sat(quant_div(v, y_scale), yz);
#else
        out[o] = v;
#endif
    }
}
