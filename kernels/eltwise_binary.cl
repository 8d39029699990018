// eltwise_binary.cl: out[i] = BINARY_OP(a[i], b[i]) on f32 tensors, where
// either operand may be a scalar broadcast to every element.
//
// Build options: -DBINARY_OP=<ADD|MUL> selects the operation (the catalogue
// entry supplies it).
//
// Work-size contract: 1-D NDRange with global size >= n; any local size.
// Work item i computes element i; items with i >= n do nothing. out holds n
// floats; a holds n floats, or 1 when a_scalar != 0 (likewise b).

#ifndef BINARY_OP
#error "eltwise_binary.cl: build with -DBINARY_OP=<ADD|MUL>"
#endif

#define ADD(x, y) ((x) + (y))
#define MUL(x, y) ((x) * (y))

__kernel void eltwise_binary_f32(__global const float* a, __global const float* b,
                                 __global float* out, const ulong n,
                                 const uint a_scalar, const uint b_scalar)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const float x = a[a_scalar ? 0 : gid];
    const float y = b[b_scalar ? 0 : gid];
    out[gid] = BINARY_OP(x, y);
}
