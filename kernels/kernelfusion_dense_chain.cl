// kernelfusion_dense_chain.cl: a chain of up to DENSE_MAX_LAYERS dense
// layers in one launch, each y = act(LayerNorm?(x.w + b)) over the row
// (openWakeWord's heads: FullyConnected + LayerNormalization + Relu twice,
// then FullyConnected + Sigmoid). Made by fusion.FuseDenseChain for a chain
// small enough for one work group; the GPU launches it through the generic
// KernelFusion lowering.
//
// Work-size contract (graph.LaunchDenseChain): 1-D NDRange of n work
// groups of L items, L a power of two of at most 256; group r computes row
// r of y (groups with r >= n do nothing). The first layer reads the row
// of x where it lies; every layer writes its row into local memory (two
// halves of DW floats each: build option -DDW, at least every layer's
// width C, default 64), the next reads it from there, and the last row is
// stored in y.
// A layer's columns go in chunks of VW (build option -DVW=4, 8 or 16,
// default 4): item i takes chunks i, i + L, ... (a whole chunk as one
// vector, the last, partial one column by column); a normalising layer
// then reduces the row's mean and variance over the group. Arguments: the
// input x (n rows of K0), DENSE_MAX_LAYERS slots of four buffers (layer
// l's matrix w [K, C] row-major, bias b [C], scale and shift [C]; the
// slots of absent layers and of the scale and shift of a layer that does
// not normalise may be any buffer, never read), the output y (n rows of
// the last layer's C), n = the number of rows, the int array m (m[0] =
// the number of layers, then per layer K, C, norm (1: LayerNormalization
// over the row) and act (0 none, 1 Relu, 2 Sigmoid)) and the float params
// p (p[l] = layer l's epsilon). No item returns early (the kernel has
// barriers): a group whose row is past n, or a table the group's local
// arrays cannot hold (a width over DW, more than DENSE_MAX_LAYERS layers),
// skips the whole body alike and leaves y alone; every access is within
// the row of x (K0) or a layer's K and C, each at most DW. Built with
// -DHALF (f16 activations) the tensors hold f16
// (half.clh); p stays f32 and the math float.

#include "half.clh"
#include "rows.clh"

#ifndef DW
#define DW 64
#endif

// DENSE_MAX_LAYERS is the most layers of one chain (the kernel's slots).
#define DENSE_MAX_LAYERS 4

#if VW == 16
#define LVST(p, v) vstore16((v), 0, (p))
#elif VW == 8
#define LVST(p, v) vstore8((v), 0, (p))
#else
#define LVST(p, v) vstore4((v), 0, (p))
#endif

// DENSE_PRODUCT writes v[c] = b[c] + sum_k X(k) w[k*C + c] for the
// group's columns (X a macro of one argument: the row, in global or local
// memory).
#define DENSE_PRODUCT(X) \
    for (long c0 = (long)lid * VW; c0 < C; c0 += (long)L * VW) { \
        if (c0 + VW <= C) { \
            fvec a = VLD(b + c0); \
            ROWS_FMA_COLUMNS(a, X, w, K, C, c0); \
            LVST(v + c0, a); \
            continue; \
        } \
        for (long c = c0; c < C; ++c) { \
            float acc = LD(b, c); \
            for (long k = 0; k < K; ++k) { \
                acc = fma(X(k), LD(w, k * C + c), acc); \
            } \
            v[c] = acc; \
        } \
    }

// dense_product_global is DENSE_PRODUCT of the row of K at x + xo (the
// first layer reads its row where it lies); dense_product_local of the
// row x in local memory (the later layers).
void dense_product_global(__global const FT* x, const ulong xo, __global const FT* w, __global const FT* b,
                          __local float* v, const long K, const long C, const int lid, const int L)
{
#define DENSE_XG(k) LD(x, xo + (k))
    DENSE_PRODUCT(DENSE_XG)
#undef DENSE_XG
}

void dense_product_local(__local const float* x, __global const FT* w, __global const FT* b, __local float* v,
                         const long K, const long C, const int lid, const int L)
{
#define DENSE_XL(k) x[k]
    DENSE_PRODUCT(DENSE_XL)
#undef DENSE_XL
}

__kernel void dense_chain(__global const FT* x, __global const FT* w0, __global const FT* b0,
                          __global const FT* s0, __global const FT* t0, __global const FT* w1,
                          __global const FT* b1, __global const FT* s1, __global const FT* t1,
                          __global const FT* w2, __global const FT* b2, __global const FT* s2,
                          __global const FT* t2, __global const FT* w3, __global const FT* b3,
                          __global const FT* s3, __global const FT* t3, __global FT* y, const ulong n,
                          __global const int* m, __global const float* p)
{
    __local float red[ROWS_MAX_GROUP];
    __local float buf[2 * DW];
    const size_t row = get_group_id(0);
    const int lid = (int)get_local_id(0);
    const int L = (int)get_local_size(0);
    const int layers = m[0];
    // A row past n or a table the local arrays cannot hold runs nothing:
    // the whole group skips the body (and its barriers) alike.
    int ok = row < n && L <= ROWS_MAX_GROUP && layers >= 1 && layers <= DENSE_MAX_LAYERS;
    for (int l = 0; ok && l < layers; ++l) { // the first layer's K is x's row, in global memory
        ok = m[1 + 4 * l] >= 1 && (l == 0 || m[1 + 4 * l] <= DW) && m[2 + 4 * l] >= 1 && m[2 + 4 * l] <= DW;
    }
    if (ok) {
        for (int l = 0; l < layers; ++l) {
            const long K = m[1 + 4 * l];
            const long C = m[2 + 4 * l];
            const int norm = m[3 + 4 * l];
            const int act = m[4 + 4 * l];
            __global const FT* w = l == 0 ? w0 : l == 1 ? w1 : l == 2 ? w2 : w3;
            __global const FT* b = l == 0 ? b0 : l == 1 ? b1 : l == 2 ? b2 : b3;
            __global const FT* s = l == 0 ? s0 : l == 1 ? s1 : l == 2 ? s2 : s3;
            __global const FT* t = l == 0 ? t0 : l == 1 ? t1 : l == 2 ? t2 : t3;
            __local const float* in = buf + (l % 2) * DW;
            __local float* v = buf + ((l + 1) % 2) * DW;
            if (l == 0) {
                dense_product_global(x, (ulong)row * K, w, b, v, K, C, lid, L);
            } else {
                dense_product_local(in, w, b, v, K, C, lid, L);
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            float mean = 0.0f, inv = 1.0f;
            if (norm) {
                float sum = 0.0f;
                for (long c = lid; c < C; c += L) {
                    sum += v[c];
                }
                mean = rows_fold(sum, 0, red, lid, L) / (float)C;
                float sq = 0.0f;
                for (long c = lid; c < C; c += L) {
                    const float d = v[c] - mean;
                    sq += d * d;
                }
                inv = rsqrt(rows_fold(sq, 0, red, lid, L) / (float)C + p[l]);
            }
            for (long c = lid; c < C; c += L) {
                float u = v[c];
                if (norm) {
                    u = (u - mean) * inv * LD(s, c) + LD(t, c);
                }
                if (act == 1) {
                    u = fmax(u, 0.0f);
                } else if (act == 2) {
                    u = 1.0f / (1.0f + exp(-u));
                }
                v[c] = u;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        const long C = m[2 + 4 * (layers - 1)];
        __local const float* out = buf + (layers % 2) * DW;
        for (long c = lid; c < C; c += L) {
            ST(y, (ulong)row * C + c, out[c]);
        }
    }
}
