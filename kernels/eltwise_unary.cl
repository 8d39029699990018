// eltwise_unary.cl: out[i] = UNARY_OP(in[i]) on f32 tensors.
//
// Build options: -DUNARY_OP=<RELU> selects the operation (the catalogue
// entry supplies it).
//
// Work-size contract: 1-D NDRange with global size >= n; any local size.
// Work item i computes element i; items with i >= n do nothing. in and out
// hold n floats each and may not overlap unless they are the same buffer.

#ifndef UNARY_OP
#error "eltwise_unary.cl: build with -DUNARY_OP=<RELU>"
#endif

#define RELU(x) fmax((x), 0.0f)

__kernel void eltwise_unary_f32(__global const float* in, __global float* out, const ulong n)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    out[gid] = UNARY_OP(in[gid]);
}
