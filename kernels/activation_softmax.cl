// activation_softmax.cl: Softmax and LogSoftmax of f32 data along one axis.
//
// Build options: -DLOG_SOFTMAX computes log(softmax(x)); -DHALF reads and
// writes f16 storage, computing in float (half.clh).
//
// Work-size contract: 1-D NDRange with global size >= n = outer * inner
// (the tensor viewed as [outer, axis_len, inner]); any local size. Work item
// i handles the row (i / inner, :, i % inner) in three passes; items with
// i >= n do nothing.

#include "half.clh"

__kernel void softmax(__global const FT* in, __global FT* out, const ulong n,
                      const ulong axis_len, const ulong inner)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const ulong base = (gid / inner) * axis_len * inner + gid % inner;
    float mx = -INFINITY;
    for (ulong k = 0; k < axis_len; ++k) mx = fmax(mx, LD(in, base + k * inner));
    float sum = 0.0f;
    for (ulong k = 0; k < axis_len; ++k) sum += exp(LD(in, base + k * inner) - mx);
#ifdef LOG_SOFTMAX
    const float ls = log(sum);
    for (ulong k = 0; k < axis_len; ++k) ST(out, base + k * inner, LD(in, base + k * inner) - mx - ls);
#else
    for (ulong k = 0; k < axis_len; ++k) ST(out, base + k * inner, exp(LD(in, base + k * inner) - mx) / sum);
#endif
}
