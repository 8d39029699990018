// eltwise_unary.cl: out[i] = UNARY_OP(in[i], p0, p1) for every unary
// activation and math function of the op set.
//
// Build options: -DUNARY_OP=<RELU|SIGMOID|...> selects the operation (the
// catalogue entry supplies it); -DT=<float|int|long|uchar> is the element
// type (default float); -DTO=<uchar|...> is the output type when it differs
// (IS_NAN, IS_INF give bool); -DIS_INT selects the integer forms of NEG, ABS
// and SIGN. p0 and p1 carry the op's float attributes (alpha, beta, min, max...).
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

#define IDENTITY(x, a, b) (x)
#define RELU(x, a, b) fmax((x), 0.0f)
#define LEAKY_RELU(x, a, b) ((x) < 0.0f ? (a) * (x) : (x))
#define SIGMOID(x, a, b) (1.0f / (1.0f + exp(-(x))))
#define TANH(x, a, b) tanh(x)
#define HARD_SIGMOID(x, a, b) fmax(0.0f, fmin(1.0f, (a) * (x) + (b)))
#define HARD_SWISH(x, a, b) ((x) * fmax(0.0f, fmin(1.0f, (x) / 6.0f + 0.5f)))
#define CLIP(x, a, b) (isnan(x) ? (x) : fmin(fmax((x), (a)), (b)))
#define ELU(x, a, b) ((x) < 0.0f ? (a) * (exp(x) - 1.0f) : (x))
#define SELU(x, a, b) ((x) <= 0.0f ? (b) * (a) * (exp(x) - 1.0f) : (b) * (x))
#define CELU(x, a, b) (fmax(0.0f, (x)) + fmin(0.0f, (a) * (exp((x) / (a)) - 1.0f)))
#define GELU(x, a, b) (0.5f * (x) * (1.0f + erf((x) * 0.70710678118654752f)))
#define GELU_TANH(x, a, b) (0.5f * (x) * (1.0f + tanh(0.79788456080286536f * ((x) + 0.044715f * (x) * (x) * (x)))))
#define SOFTPLUS(x, a, b) ((x) > 20.0f ? (x) : log1p(exp(x)))
#define SOFTSIGN(x, a, b) ((x) / (1.0f + fabs(x)))
#define MISH(x, a, b) ((x) * tanh(SOFTPLUS((x), a, b)))
#define THRESHOLDED_RELU(x, a, b) ((x) > (a) ? (x) : 0.0f)
#define SQRT(x, a, b) sqrt(x)
#define EXP(x, a, b) exp(x)
#define LOG(x, a, b) log(x)
#define ERF(x, a, b) erf(x)
#define RECIPROCAL(x, a, b) (1.0f / (x))
#define FLOOR(x, a, b) floor(x)
#define CEIL(x, a, b) ceil(x)
#define ROUND(x, a, b) rint(x)
#define SIN(x, a, b) sin(x)
#define COS(x, a, b) cos(x)
#define TAN(x, a, b) tan(x)
#define ASIN(x, a, b) asin(x)
#define ACOS(x, a, b) acos(x)
#define ATAN(x, a, b) atan(x)
#define SINH(x, a, b) sinh(x)
#define COSH(x, a, b) cosh(x)
#define ASINH(x, a, b) asinh(x)
#define ACOSH(x, a, b) acosh(x)
#define ATANH(x, a, b) atanh(x)
#define NOT(x, a, b) ((T)!(x))
#define SHRINK(x, a, b) ((x) < -(a) ? (x) + (b) : ((x) > (a) ? (x) - (b) : 0.0f))
#define IS_NAN(x, a, b) isnan(x)
#define IS_INF(x, a, b) (isinf(x) && ((x) > 0.0f ? (a) != 0.0f : (b) != 0.0f))
#ifdef IS_INT
#define BITWISE_NOT(x, a, b) (~(x))
#define NEG(x, a, b) (-(x))
#define ABS(x, a, b) ((x) < 0 ? -(x) : (x))
#define SIGN(x, a, b) ((T)(((x) > 0) - ((x) < 0)))
#else
#define BITWISE_NOT(x, a, b) ((x) * 0) // integers only (graph refuses floats); buildable as float
#define NEG(x, a, b) (-(x))
#define ABS(x, a, b) fabs(x)
#define SIGN(x, a, b) ((x) > 0.0f ? 1.0f : ((x) < 0.0f ? -1.0f : (x)))
#endif

__kernel void eltwise_unary(__global const TIN* in, __global TOUT* out, const ulong n,
                            const float p0, const float p1)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const T x = LD(in, gid);
    ST(out, gid, (TO)(UNARY_OP(x, p0, p1)));
}
