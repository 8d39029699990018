// gemm_tiled.cl: fused_gemm_tiled, the local-memory tiled GEMM for
// GPU-type devices (work groups of 64-256 items sharing tiles), with
// fused_gemm's arguments, bias modes and post-op table; built with
// -DIM2COL it is the implicit-GEMM convolution (catalogue entry
// conv2d_implicit_gemm).
//
// fused_gemm_tiled: out = post(alpha * A.B + bias) over a batch, with A
// [M, K] (any strides), B [K, N] with unit column stride and out [M, N]
// with leading dimension ldo. The int array m is fused_gemm's (M, N, K,
// A's row and k strides, B's k stride, ldo, the bias mode: 0 none, 1
// bias[row], 2 bias[column], 3 beta * C; C's row and column strides; the
// batch rank q, q batch dims and q batch strides each of A, B and out).
// Build options TS_M, TS_N, TS_K (tile sizes, default 64, 64, 16), WPT_M,
// WPT_N (outputs per item, default 4, 4), VW (1, 2 or 4: an item's
// columns in runs of VW; WPT_N % VW == 0).
//
// -DIM2COL: B is not a matrix but the patches of a convolution's input x
// [C, H, W] per image (the batch axis), element (k, n) being x[c, oh *
// STR_H - PH + kh * DH, ow * STR_W - PW + kw * DW] (0 outside) for
// k = (c * WIN_H + kh) * WIN_W + kw and n = oh * OW + ow; A holds the
// weights [OC, C * WIN_H * WIN_W]. m then continues after the batch part
// with C, H, W, OW, PH, PW, DH, DW. Window and strides are the build
// options WIN_H, WIN_W, STR_H, STR_W (default 3, 3, 1, 1); the dilations
// are 1 x 1, or with -DDIL_RT DH, DW at run time (every dilation shares
// one program).
//
// Work-size contract: 2-D or 3-D NDRange, local size exactly (TS_N /
// WPT_N, TS_M / WPT_M, 1) (the kernel requires it), global size
// (ceil(N / TS_N) * TS_N / WPT_N, ceil(M / TS_M) * TS_M / WPT_M, batch).
// Work group (gx, gy, z) computes the TS_M x TS_N tile of batch z at rows
// gy*TS_M, columns gx*TS_N, staging TS_M x TS_K of A and TS_K x TS_N of B
// in local memory per step of K; item (lx, ly) keeps outputs (ly + i *
// TS_M/WPT_M, VW * (lx + j * TS_N/(WPT_N/VW)... ) in registers as serial
// f32 fma sums over k. No item returns early (the tile loop has
// barriers): loads outside A or B read 0 and stores outside out are
// skipped.
//
// -DHALF (f16 activations): buffers are f16 through half.clh's macros,
// the tiles, the math and the post-op tables f32.

#include "half.clh"
#include "post_ops.clh"

#ifndef TS_M
#define TS_M 64
#endif
#ifndef TS_N
#define TS_N 64
#endif
#ifndef TS_K
#define TS_K 16
#endif
#ifndef WPT_M
#define WPT_M 4
#endif
#ifndef WPT_N
#define WPT_N 4
#endif
#ifndef VW
#define VW 1
#endif
#ifndef WIN_H
#define WIN_H 3
#endif
#ifndef WIN_W
#define WIN_W 3
#endif
#ifndef STR_H
#define STR_H 1
#endif
#ifndef STR_W
#define STR_W 1
#endif
#if VW == 1
#define floatv float
#define LOADV(i, p) ((p)[i])
#define STOREV(v, p) ((p)[0] = (v))
#elif VW == 2
#define floatv float2
#define LOADV(i, p) vload2((i), (p))
#define STOREV(v, p) vstore2((v), 0, (p))
#elif VW == 4
#define floatv float4
#define LOADV(i, p) vload4((i), (p))
#define STOREV(v, p) vstore4((v), 0, (p))
#else
#error "gemm_tiled.cl: VW must be 1, 2 or 4"
#endif
#define NVT (WPT_N / VW)
#define RTS_M (TS_M / WPT_M)
#define RTS_N (TS_N / WPT_N)
#define LSIZE (RTS_M * RTS_N)

// store_out writes output element o of row r, column c: alpha, the bias
// mode, then the post-ops. noinline: an item stores WPT_M x WPT_N outputs,
// and inlining the post-ops into each of them multiplies the program.
__attribute__((noinline)) void store_out(float v, const int r, const int c, const long o, __global FT* out,
                                         __global const FT* bias, __global const int* m, const float alpha,
                                         const float beta, __global const int* pm, __global const float* pf,
                                         __global const FT* res)
{
    v *= alpha;
    const int mode = m[7];
    if (mode == 1) {
        v += LD(bias, r);
    } else if (mode == 2) {
        v += LD(bias, c);
    } else if (mode == 3) {
        v = fma(beta, LD(bias, (long)r * m[8] + (long)c * m[9]), v);
    }
    ST(out, o, post_ops(v, (ulong)o, pm, pf, res));
}

__attribute__((reqd_work_group_size(RTS_N, RTS_M, 1)))
__kernel void fused_gemm_tiled(__global const FT* a, __global const FT* b, __global const FT* bias,
                               __global const FT* res, __global FT* out, __global const int* m,
                               const float alpha, const float beta, __global const int* pm, __global const float* pf)
{
    __local float as[TS_K][TS_M];
    __local float bs[TS_K][TS_N];
    const int M = m[0], N = m[1], K = m[2];
    const long a_rs = m[3], a_ks = m[4], b_ks = m[5], ldo = m[6];
    const int q = m[10];
    const int lx = (int)get_local_id(0), ly = (int)get_local_id(1);
    const int tid = ly * RTS_N + lx;
    const int row0 = (int)get_group_id(1) * TS_M;
    const int col0 = (int)get_group_id(0) * TS_N;
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
    const int live = z == 0; // items past the batch load nothing and store nothing
#ifdef IM2COL
    __global const int* g = m + 11 + 4 * q;
    const int C = g[0], H = g[1], W = g[2], OW = g[3], PH = g[4], PW = g[5];
#ifdef DIL_RT
    const int DH = g[6], DW = g[7];
#else
    const int DH = 1, DW = 1;
#endif
#endif

    floatv acc[WPT_M][NVT];
    for (int i = 0; i < WPT_M; ++i)
        for (int j = 0; j < NVT; ++j) acc[i][j] = (floatv)0.0f;

    for (int k0 = 0; k0 < K; k0 += TS_K) {
        // Consecutive items load consecutive k of A and n of B.
        for (int e = tid; e < TS_M * TS_K; e += LSIZE) {
            const int kk = e % TS_K, mm = e / TS_K;
            const int r = row0 + mm, k = k0 + kk;
            as[kk][mm] = (live && r < M && k < K) ? LD(a, oa + r * a_rs + k * a_ks) : 0.0f;
        }
        for (int e = tid; e < TS_K * TS_N; e += LSIZE) {
            const int nn = e % TS_N, kk = e / TS_N;
            const int col = col0 + nn, k = k0 + kk;
            float v = 0.0f;
#ifdef IM2COL
            if (live && col < N && k < K) {
                const int c = k / (WIN_H * WIN_W), kh = (k / WIN_W) % WIN_H, kw = k % WIN_W;
                const int ih = (col / OW) * STR_H - PH + kh * DH, iw = (col % OW) * STR_W - PW + kw * DW;
                if (ih >= 0 && ih < H && iw >= 0 && iw < W) v = LD(b, ob + ((long)c * H + ih) * W + iw);
            }
#else
            if (live && col < N && k < K) v = LD(b, ob + k * b_ks + col);
#endif
            bs[kk][nn] = v;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < TS_K; ++kk) {
            float ra[WPT_M];
            floatv rb[NVT];
            for (int i = 0; i < WPT_M; ++i) ra[i] = as[kk][ly + i * RTS_M];
            for (int j = 0; j < NVT; ++j) rb[j] = LOADV(lx + j * RTS_N, &bs[kk][0]);
            for (int i = 0; i < WPT_M; ++i)
                for (int j = 0; j < NVT; ++j) acc[i][j] = fma((floatv)ra[i], rb[j], acc[i][j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    for (int i = 0; i < WPT_M; ++i) {
        const int r = row0 + ly + i * RTS_M;
        for (int j = 0; j < NVT; ++j) {
            float blk[VW];
            STOREV(acc[i][j], blk);
            for (int v = 0; v < VW; ++v) {
                const int col = col0 + (lx + j * RTS_N) * VW + v;
                if (live && r < M && col < N) store_out(blk[v], r, col, oo + r * ldo + col, out, bias, m, alpha, beta, pm, pf, res);
            }
        }
    }
}
