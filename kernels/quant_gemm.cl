// quant_gemm.cl: MatMulInteger and QLinearMatMul over broadcast batches:
// the exact product of (a - a_zero_point) and (b - b_zero_point)
// accumulated in 32 bits with wrap-around, as the CPU reference computes
// it (cpu_fallback/ref/ops_quant_integer.go).
//
// Build options: -DAT and -DBT are the operands' types (char or uchar).
// Without -DREQUANT the output is the i32 accumulator (MatMulInteger);
// with it (QLinearMatMul) y = clamp(rne((float)acc * mult) + y_zero_point,
// QMIN, QMAX) with mult = (a_scale[row] * b_scale[col]) / y_scale rounded
// to float at each step, in -DYT with -DQMIN and -DQMAX; -DDIV_F64 as in
// quant.clh.
//
// Work-size contract: 1-D NDRange with global size >= n (the output's
// elements); any local size. Work item i computes output element i (row
// r, column c of batch matrix bi: i = (bi*M + r)*N + c); items with i >=
// n do nothing. The int array m holds M, N, K, q (batch rank), the q
// batch dims of the output, the q batch strides of a and of b (in
// matrices, 0 on broadcast axes), then per-row a_zero_point (1) or one
// (0), per-column b_zero_point, per-row a_scale, per-column b_scale.

#pragma OPENCL FP_CONTRACT OFF

#ifndef AT
#define AT uchar
#endif
#ifndef BT
#define BT char
#endif
#ifndef YT
#define YT uchar
#endif

#include "quant.clh"

__kernel void matmul_integer(__global const AT* a, __global const BT* b, __global const AT* azp, __global const BT* bzp,
#ifdef REQUANT
                             __global const float* as, __global const float* bs, __global const float* ys,
                             __global const YT* yzp, __global YT* y,
#else
                             __global int* y,
#endif
                             const ulong n, __global const int* m)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int M = m[0], N = m[1], K = m[2], q = m[3];
    const int col = gid % N;
    const int row = (gid / N) % M;
    long bi = gid / ((size_t)M * N);
    long aoff = 0, boff = 0;
    for (int d = q - 1; d >= 0; --d) {
        const long i = bi % m[4 + d];
        bi /= m[4 + d];
        aoff += i * m[4 + q + d];
        boff += i * m[4 + 2 * q + d];
    }
    __global const int* f = m + 4 + 3 * q; // the per-row / per-column flags
    const int az = (int)azp[f[0] ? row : 0];
    const int bz = (int)bzp[f[1] ? col : 0];
    __global const AT* ar = a + aoff * M * K + (long)row * K;
    __global const BT* bc = b + boff * K * N + col;
    uint acc = 0; // wraps like the i32 accumulator, without signed overflow
    for (int k = 0; k < K; ++k) {
        acc += (uint)(((int)ar[k] - az) * ((int)bc[(long)k * N] - bz));
    }
#ifdef REQUANT
    const float mult = quant_div(as[f[2] ? row : 0] * bs[f[3] ? col : 0], ys[0]);
    y[gid] = (YT)round_sat((float)as_int(acc) * mult, (int)yzp[0]);
#else
    y[gid] = as_int(acc);
#endif
}
