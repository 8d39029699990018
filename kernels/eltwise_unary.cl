// eltwise_unary.cl: out[i] = UNARY_OP(in[i], p0, p1) for every unary
// activation and math function of the op set.
//
// Build options: -DUNARY_OP=<RELU|SIGMOID|...> selects the operation (the
// catalogue entry supplies it); -DT=<float|int|long|uchar> is the element
// type (default float); -DTO=<uchar|...> is the output type when it differs
// (IS_NAN, IS_INF give bool); -DIS_INT selects the integer forms of RELU,
// NEG, ABS, SIGN and BITWISE_NOT; -DIS_DOUBLE (with T=double, which needs
// cl_khr_fp64: the GPU device checks it first) computes every op in
// double. p0 and p1 carry the op's float attributes (alpha, beta, min, max...).
// -DHALF (with T=float and no TO) reads and writes f16 storage, computing
// in float (half.clh).
//
// Work-size contract: 1-D NDRange with global size >= n; any local size.
// Work item i computes element i; items with i >= n do nothing. in and out
// hold n elements each and may not overlap unless they are the same buffer.

#include "half.clh"

#ifndef UNARY_OP
#error "eltwise_unary.cl: build with -DUNARY_OP=<RELU|SIGMOID|...>"
#endif
#ifndef T
#define T float
#endif
#ifndef TO
#define TO T
#endif
#ifdef HALF
#define TIN FT
#define TOUT FT
#else
#define TIN T
#define TOUT TO
#endif

#include "eltwise_ops.clh"

__kernel void eltwise_unary(__global const TIN* in, __global TOUT* out, const ulong n,
                            const float p0, const float p1)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const T x = LD(in, gid);
    ST(out, gid, (TO)(UNARY_OP(x, p0, p1)));
}
