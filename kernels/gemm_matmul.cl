// gemm_matmul.cl: batched f32 GEMM with broadcasting, out = alpha * A.B + beta * C,
// serving MatMul and Gemm (transposes are strides).
//
// Work-size contract: 1-D NDRange with global size >= n = batch * M * N;
// any local size. Work item i computes out[b, r, c] with i = (b*M + r)*N + c
// by a serial dot product over K (f32 accumulation); items with i >= n do
// nothing. The int array m holds M, N, K, A's row and column strides, B's
// row and column strides, C's row and column strides, has_c, then the batch
// rank q, q batch dims, q batch strides each of A, B and C.
//
// Built with -DHALF, a, b, cin and out hold f16 (half.clh); the sums stay
// f32. Built with -DT=double (cl_khr_fp64, which the GPU device checks
// first) they hold f64 and the sums are f64.

#include "half.clh"

#ifndef T
#define T float
#endif
// TS is the storage type: T, or half with -DHALF.
#ifdef HALF
#define TS FT
#else
#define TS T
#endif

__kernel void matmul(__global const TS* a, __global const TS* b, __global const TS* cin,
                     __global TS* out, const ulong n, __global const int* m,
                     const float alpha, const float beta)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const long M = m[0], N = m[1], K = m[2];
    const long col = (long)(gid % (ulong)N);
    const long row = (long)((gid / (ulong)N) % (ulong)M);
    ulong bt = gid / (ulong)(M * N);
    const int q = m[10];
    long oa = 0, ob = 0, oc = 0;
    for (int d = q - 1; d >= 0; --d) {
        const long dim = m[11 + d];
        const long c = (long)(bt % dim);
        bt /= dim;
        oa += c * m[11 + q + d];
        ob += c * m[11 + 2 * q + d];
        oc += c * m[11 + 3 * q + d];
    }
    __global const TS* pa = a + oa + row * m[3];
    __global const TS* pb = b + ob + col * m[6];
    T acc = 0;
    for (long k = 0; k < K; ++k) acc = fma((T)LD(pa, k * m[4]), (T)LD(pb, k * m[5]), acc);
    T v = (T)alpha * acc;
    if (m[9]) v += (T)beta * (T)LD(cin, oc + row * m[7] + col * m[8]);
    ST(out, gid, v);
}
