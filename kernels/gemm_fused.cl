// gemm_fused.cl: fused_gemm, the register-blocked GEMM behind MatMul, Gemm,
// 1x1 convolutions and FullyConnected (block.clh), with the post-op table.
//
// fused_gemm: out = post(alpha * A.B + bias) over a batch, with A [M, K]
// (any strides, or packed, below), B [K, N] with unit column stride and
// out [M, N] with leading dimension ldo. Build options MR (rows per item,
// default 8), NV (vectors per row, default 2: NR = NV*VW columns per
// item), A_PACKED (A is laid out as [ceil(M/MR)][K][MR], zero-padded: row
// block mb starts at a + mb*K*MR and element (i, k) of it is at k*MR + i).
// Work-size contract: 3-D NDRange, global size >= (ceil(M/MR),
// ceil(N/NR), batch), any local size; item (i, j, z) computes rows
// i*MR.., columns j*NR.. of batch z as serial f32 fma sums over k, then
// alpha, the bias, the post-ops; items outside do nothing. The int array m
// holds M, N, K, A's row and k strides, B's k stride, ldo, the bias mode
// (0 none, 1 bias[row], 2 bias[column], 3 beta * C with C's row and column
// strides next), C's row and column strides, then the batch rank q, q
// batch dims and q batch strides each of A, B and out.
//
// -DHALF (f16 activations): buffers are f16 through half.clh's macros,
// the math and the post-op tables f32.

#include "half.clh"
#include "post_ops.clh"
#include "block.clh"

#ifndef MR
#define MR 8
#endif
#ifndef NV
#define NV 2
#endif

// A_AT is element (i, k) of the item's row block of A.
#ifdef A_PACKED
#define A_AT(i, k) LD(ap, (long)(k) * MR + (i))
#else
#define A_AT(i, k) LD(ap, arow[i] + (long)(k) * a_ks)
#endif

__kernel void fused_gemm(__global const FT* a, __global const FT* b, __global const FT* bias,
                         __global const FT* res, __global FT* out, __global const int* m,
                         const float alpha, const float beta, __global const int* pm, __global const float* pf)
{
    const int M = m[0], N = m[1], K = m[2];
    const int mb = (int)get_global_id(0);
    const int m0 = mb * MR, n0 = (int)get_global_id(1) * NR;
    if (m0 >= M || n0 >= N) return;
    const long a_rs = m[3], a_ks = m[4], b_ks = m[5], ldo = m[6];
    const int q = m[10];
    ulong z = get_global_id(2);
    long oa = 0, ob = 0, oo = 0;
    for (int d = q - 1; d >= 0; --d) {
        const ulong dim = (ulong)m[11 + d];
        const long c = (long)(z % dim);
        z /= dim;
        oa += c * m[11 + q + d];
        ob += c * m[11 + 2 * q + d];
        oo += c * m[11 + 3 * q + d];
    }
    if (z != 0) return;
#ifdef A_PACKED
    __global const FT* ap = a + oa + (long)mb * K * MR;
#else
    __global const FT* ap = a + oa;
    long arow[MR];
    UNROLL for (int i = 0; i < MR; ++i) arow[i] = (long)min(m0 + i, M - 1) * a_rs; // rows past M: any valid row
#endif
    __global const FT* bp = b + ob + n0;
    floatv acc[MR][NV];
    UNROLL for (int i = 0; i < MR; ++i) UNROLL for (int j = 0; j < NV; ++j) acc[i][j] = (floatv)0.0f;
    const int nn = N - n0; // columns left in this row
    if (nn >= NR) {
        for (int k = 0; k < K; ++k) {
            floatv bv[NV];
            UNROLL for (int j = 0; j < NV; ++j) bv[j] = LDV(bp + k * b_ks, j);
            UNROLL for (int i = 0; i < MR; ++i) {
                const floatv av = (floatv)A_AT(i, k);
                UNROLL for (int j = 0; j < NV; ++j) acc[i][j] = fma(av, bv[j], acc[i][j]);
            }
        }
    } else if (N >= VW) {
        // The row's last columns: the vectors N fills are vector loads
        // (N = 240 with NR = 32 leaves one full vector of 16), the one N
        // ends inside is the row's last VW columns (from N - VW, inside
        // the row), its lanes moved into place once after the sums; those
        // past N are zeros. A lane-by-lane load of that vector per k made
        // the edge items of a 10x10 image (N = 100, NR = 32: a quarter of
        // the items) cost several full ones.
        const int full = nn / VW, part = nn % VW ? full : NV;
        for (int k = 0; k < K; ++k) {
            floatv bv[NV];
            UNROLL for (int j = 0; j < NV; ++j) {
                if (j < full) {
                    bv[j] = LDV(bp + k * b_ks, j);
                } else if (j == part) {
                    bv[j] = LDV(bp + k * b_ks + nn - VW, 0);
                } else {
                    bv[j] = (floatv)0.0f;
                }
            }
            UNROLL for (int i = 0; i < MR; ++i) {
                const floatv av = (floatv)A_AT(i, k);
                UNROLL for (int j = 0; j < NV; ++j) acc[i][j] = fma(av, bv[j], acc[i][j]);
            }
        }
        if (part < NV) {
            // Lane l of the shifted vector is column N - VW + l: column
            // part * VW + l of the item is lane l + s.
            const int s = (part + 1) * VW - nn;
            UNROLL for (int i = 0; i < MR; ++i) {
                float t[VW];
                UNROLL for (int j = 0; j < NV; ++j) {
                    if (j == part) {
                        STOREV(acc[i][j], 0, t);
                        for (int l = 0; l < VW; ++l) t[l] = l + s < VW ? t[l + s] : 0.0f;
                        acc[i][j] = LOADV(0, t);
                    }
                }
            }
        }
    } else {
        // Fewer columns than a vector: lane by lane.
        for (int k = 0; k < K; ++k) {
            floatv bv[NV];
            UNROLL for (int j = 0; j < NV; ++j) {
                if (j * VW >= nn) {
                    bv[j] = (floatv)0.0f;
                } else {
                    float t[VW];
                    for (int l = 0; l < VW; ++l) {
                        const int c = j * VW + l;
                        t[l] = c < nn ? LD(bp, k * b_ks + c) : 0.0f;
                    }
                    bv[j] = LOADV(0, t);
                }
            }
            UNROLL for (int i = 0; i < MR; ++i) {
                const floatv av = (floatv)A_AT(i, k);
                UNROLL for (int j = 0; j < NV; ++j) acc[i][j] = fma(av, bv[j], acc[i][j]);
            }
        }
    }
    const int mode = m[7];
    const long c_rs = m[8], c_cs = m[9];
    UNROLL for (int i = 0; i < MR; ++i) {
        const int r = m0 + i;
        if (r < M) {
            UNROLL for (int j = 0; j < NV; ++j) {
                const int c0 = n0 + j * VW, cnt = min(VW, N - c0);
                if (cnt > 0) {
                    floatv v = alpha * acc[i][j];
                    if (mode == 1) {
                        v += LD(bias, r);
                    } else if (mode == 2) {
                        if (cnt == VW) {
                            v += LDV(bias + c0, 0);
                        } else {
                            float t[VW];
                            STOREV(v, 0, t);
                            for (int l = 0; l < cnt; ++l) t[l] += LD(bias, c0 + l);
                            v = LOADV(0, t);
                        }
                    } else if (mode == 3) {
                        float t[VW];
                        STOREV(v, 0, t);
                        for (int l = 0; l < cnt; ++l) t[l] = fma(beta, LD(bias, r * c_rs + (c0 + l) * c_cs), t[l]);
                        v = LOADV(0, t);
                    }
                    store_v(v, out, (ulong)(oo + r * ldo + c0), cnt, pm, pf, res);
                }
            }
        }
    }
}
