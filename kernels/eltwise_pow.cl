// eltwise_pow.cl: ONNX Pow where the exponent's type differs from the base's, or
// both are integers (f32 ** f32 is eltwise_binary's POW): out, of the
// base's type, is base ** exponent with numpy broadcasting.
//
// Build options: -DTA and -DTB are the OpenCL types of the base and the
// exponent; -DTC=<float|double> is the type non-integer powers are
// computed in (double needs cl_khr_fp64, which the GPU device checks
// before it asks for it); -DA_INT and -DB_INT mark integer types. Integer
// ** integer, and an integer base with an integral float exponent, are
// exact (by squaring, wrapping on overflow; a negative exponent gives the
// truncated real result: 0 unless the base is 1 or -1), as in the CPU
// device; otherwise the power is computed in TC and converted to TA
// (truncated and saturated for integers, NaN giving 0). -DHALF (with
// TA=float) stores the base and out as f16 (half.clh), computing in TC.
//
// Work-size contract: 1-D NDRange with global size >= n; any local size.
// Work item i computes output element i; items with i >= n do nothing. The
// int array m describes the (collapsed) broadcast as for eltwise_binary:
// m[0] = rank r, then r output dims, r element strides of a and r of b.

#ifndef TA
#define TA float
#endif
#ifndef TB
#define TB int
#define B_INT 1
#endif
#ifndef TC
#define TC float
#endif

#include "half.clh"

// TAS is the storage type of a and out: TA, or half with -DHALF.
#ifdef HALF
#define TAS FT
#else
#define TAS TA
#endif

#define CONVERT_SAT_(t) convert_##t##_sat
#define CONVERT_SAT(t) CONVERT_SAT_(t)

// ipow is integer exponentiation by squaring.
static long ipow(long base, long e)
{
    if (e < 0) {
        if (base == 1) return 1;
        if (base == -1) return (e & 1) ? -1 : 1;
        return 0;
    }
    long r = 1;
    while (e > 0) {
        if (e & 1) r *= base;
        base *= base;
        e >>= 1;
    }
    return r;
}

__kernel void pow_mixed(__global const TAS* a, __global const TB* b, __global TAS* out, const ulong n,
                        __global const int* m)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int rank = m[0];
    long ia = 0, ib = 0;
    ulong r = gid;
    for (int d = rank - 1; d >= 0; --d) {
        const ulong dim = (ulong)m[1 + d];
        const long c = (long)(r % dim);
        r /= dim;
        ia += c * m[1 + rank + d];
        ib += c * m[1 + 2 * rank + d];
    }
    const TA x = LD(a, ia);
    const TB y = b[ib];
#if defined(A_INT) && defined(B_INT)
    ST(out, gid, (TA)ipow((long)x, (long)y));
#elif defined(A_INT)
    const TC e = (TC)y;
    if (e == rint(e) && fabs(e) < (TC)9.0e18) {
        ST(out, gid, (TA)ipow((long)x, (long)e));
    } else {
        ST(out, gid, CONVERT_SAT(TA)(pow((TC)x, e)));
    }
#else
    ST(out, gid, (TA)pow((TC)x, (TC)y));
#endif
}
