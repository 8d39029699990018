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
// first) they hold f64 and the sums are f64. Built with -DIS_INT and T an
// integer type (char ... ulong) they hold integers, as the CPU reference
// computes them: the products summed in 64 bits that wrap, then
// alpha * sum + beta * c with alpha and beta whole numbers in 64 bits that
// wrap, stored modulo 2^bits of T (numpy's wraparound); with -DINT_SCALED
// (alpha or beta not whole; needs cl_khr_fp64) that is computed in double
// and converted to T truncating toward zero and saturating (NaN gives 0),
// as Cast does.

#include "half.clh"

#ifndef T
#define T float
#endif
#ifdef IS_INT
// CVT_SAT(t, x) converts double x to integer type t, rounding toward zero
// and saturating.
#define CVT_SAT_(t, x) convert_##t##_sat(x)
#define CVT_SAT(t, x) CVT_SAT_(t, x)
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
#ifdef IS_INT
    ulong acc = 0; // unsigned: wraps (signed overflow is undefined in C)
    for (long k = 0; k < K; ++k) acc += (ulong)pa[k * m[4]] * (ulong)pb[k * m[5]];
    const T c = m[9] ? cin[oc + row * m[7] + col * m[8]] : (T)0;
#ifdef INT_SCALED
    const int is_signed = (T)-1 < (T)0;
    const double s = is_signed ? (double)(long)acc : (double)acc;
    out[gid] = CVT_SAT(T, (double)alpha * s + (m[9] ? (double)beta * (double)c : 0.0));
#else
    out[gid] = (T)((ulong)(long)alpha * acc + (m[9] ? (ulong)(long)beta * (ulong)c : 0));
#endif
#else
    T acc = 0;
    for (long k = 0; k < K; ++k) acc = fma((T)LD(pa, k * m[4]), (T)LD(pb, k * m[5]), acc);
    T v = (T)alpha * acc;
    if (m[9]) v += (T)beta * (T)LD(cin, oc + row * m[7] + col * m[8]);
    ST(out, gid, v);
#endif
}
