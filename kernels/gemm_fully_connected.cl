// gemm_fully_connected.cl: fully_connected, the FullyConnected op
// (graph.OpFullyConnected) with the post-op table (post_ops.clh).
//
// fully_connected: out[r, c] = post(sum_k a[r, k] * w[k, c] + bias[c]) for
// a contiguous A of R rows of K and W [K, N]. Work-size contract: 1-D
// NDRange with global size >= n = R*N; any local size; work item i
// computes out[i / N, i % N] as a serial f32 fma sum over k; items with
// i >= n do nothing. has_bias selects the bias.
//
// -DHALF (f16 activations): buffers are f16 through half.clh's macros,
// the math and the post-op tables f32.

#include "half.clh"
#include "post_ops.clh"

__kernel void fully_connected(__global const FT* a, __global const FT* w, __global const FT* bias,
                              __global const FT* res, __global FT* out, const ulong n,
                              const int N, const int K, const int has_bias,
                              __global const int* pm, __global const float* pf)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const long col = (long)(gid % (ulong)N);
    const long row = (long)(gid / (ulong)N);
    __global const FT* pa = a + row * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = fma(LD(pa, k), LD(w, (long)k * N + col), acc);
    if (has_bias) acc += LD(bias, col);
    ST(out, gid, post_ops(acc, (ulong)gid, pm, pf, res));
}
