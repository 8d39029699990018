// activation_softmax.cl: Softmax and LogSoftmax of f32 data along one axis.
//
// Build options: -DLOG_SOFTMAX computes log(softmax(x)); -DHALF reads and
// writes f16 storage, computing in float (half.clh); -DIS_DOUBLE holds and
// computes f64 (cl_khr_fp64, which the GPU device checks first).
//
// Work-size contract: 1-D NDRange with global size >= n = outer * inner
// (the tensor viewed as [outer, axis_len, inner]); any local size. Work item
// i handles the row (i / inner, :, i % inner) in three passes; items with
// i >= n do nothing.

#include "half.clh"

// ST_T is the storage type and A the math type.
#ifdef IS_DOUBLE
#define ST_T double
#define A double
#define LDX(p, i) ((p)[i])
#define STX(p, i, v) ((p)[i] = (v))
#else
#define ST_T FT
#define A float
#define LDX(p, i) LD(p, i)
#define STX(p, i, v) ST(p, i, v)
#endif

__kernel void softmax(__global const ST_T* in, __global ST_T* out, const ulong n,
                      const ulong axis_len, const ulong inner)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const ulong base = (gid / inner) * axis_len * inner + gid % inner;
    A mx = -INFINITY;
    for (ulong k = 0; k < axis_len; ++k) mx = fmax(mx, LDX(in, base + k * inner));
    A sum = 0;
    for (ulong k = 0; k < axis_len; ++k) sum += exp(LDX(in, base + k * inner) - mx);
#ifdef LOG_SOFTMAX
    const A ls = log(sum);
    for (ulong k = 0; k < axis_len; ++k) STX(out, base + k * inner, LDX(in, base + k * inner) - mx - ls);
#else
    for (ulong k = 0; k < axis_len; ++k) STX(out, base + k * inner, exp(LDX(in, base + k * inner) - mx) / sum);
#endif
}
