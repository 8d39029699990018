// gemm_sgemm.cl: tiled, register-blocked f32 GEMM, C = alpha * A.B + beta * C,
// with A [M, K] and B [K, N] addressed through row and column strides (so a
// transpose is a stride swap) and C [M, N] row-major with leading dimension
// ldc. f32 accumulation.
//
// Work-size contract: 2-D NDRange, local size exactly (TS_N / WPT_N,
// TS_M / WPT_M) (16 x 16 by default; the kernel requires it), global size
// (ceil(N / TS_N) * TS_N / WPT_N, ceil(M / TS_M) * TS_M / WPT_M). Work group
// (gx, gy) computes the TS_M x TS_N tile of C at rows gy*TS_M, columns
// gx*TS_N: it stages TS_M x TS_K of A and TS_K x TS_N of B in local memory
// per step of K, and each work item accumulates a WPT_M x WPT_N block of C
// in registers (rows ly + i*TS_M/WPT_M, columns lx + j*TS_N/WPT_N, so that
// neighbouring items touch neighbouring columns; see VW). No item returns early
// (the tile loop has barriers): loads outside A or B read 0 and stores
// outside C are skipped. With beta == 0, C is not read.
//
// Build options: -DTS_M, -DTS_N, -DTS_K (tile sizes, default 64, 64, 16),
// -DWPT_M, -DWPT_N (block per item, default 4, 4), -DVW (1, 2, 4 or 8,
// default 1: an item's columns come in runs of VW, held in vector
// registers, so its columns are VW*(lx + j*TS_N/WPT_N) + v); TS_M % WPT_M
// == 0, TS_N % WPT_N == 0, WPT_N % VW == 0, and the local size must divide
// TS_K * TS_M and TS_K * TS_N.

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
#elif VW == 8
#define floatv float8
#define LOADV(i, p) vload8((i), (p))
#define STOREV(v, p) vstore8((v), 0, (p))
#else
#error "gemm_sgemm.cl: VW must be 1, 2, 4 or 8"
#endif
#define NV (WPT_N / VW)
#define RTS_M (TS_M / WPT_M)
#define RTS_N (TS_N / WPT_N)
#define LSIZE (RTS_M * RTS_N)

__attribute__((reqd_work_group_size(RTS_N, RTS_M, 1)))
__kernel void sgemm(const int M, const int N, const int K, const float alpha,
           __global const float* a, const long a_off, const long a_rs, const long a_cs,
           __global const float* b, const long b_off, const long b_rs, const long b_cs,
           const float beta, __global float* c, const long c_off, const long ldc)
{
    __local float as[TS_K][TS_M];
    __local float bs[TS_K][TS_N];
    const int lx = (int)get_local_id(0), ly = (int)get_local_id(1);
    const int tid = ly * RTS_N + lx;
    const int row0 = (int)get_group_id(1) * TS_M;
    const int col0 = (int)get_group_id(0) * TS_N;

    floatv acc[WPT_M][NV];
    for (int i = 0; i < WPT_M; ++i)
        for (int j = 0; j < NV; ++j) acc[i][j] = (floatv)0.0f;

    for (int k0 = 0; k0 < K; k0 += TS_K) {
        // Consecutive items load consecutive k of A and n of B: contiguous
        // for row-major operands.
        for (int e = tid; e < TS_M * TS_K; e += LSIZE) {
            const int kk = e % TS_K, mm = e / TS_K;
            const int r = row0 + mm, k = k0 + kk;
            as[kk][mm] = (r < M && k < K) ? a[a_off + r * a_rs + k * a_cs] : 0.0f;
        }
        for (int e = tid; e < TS_K * TS_N; e += LSIZE) {
            const int nn = e % TS_N, kk = e / TS_N;
            const int col = col0 + nn, k = k0 + kk;
            bs[kk][nn] = (col < N && k < K) ? b[b_off + k * b_rs + col * b_cs] : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < TS_K; ++kk) {
            float ra[WPT_M];
            floatv rb[NV];
            for (int i = 0; i < WPT_M; ++i) ra[i] = as[kk][ly + i * RTS_M];
            for (int j = 0; j < NV; ++j) rb[j] = LOADV(lx + j * RTS_N, &bs[kk][0]);
            for (int i = 0; i < WPT_M; ++i)
                for (int j = 0; j < NV; ++j) acc[i][j] = fma((floatv)ra[i], rb[j], acc[i][j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    for (int i = 0; i < WPT_M; ++i) {
        const int r = row0 + ly + i * RTS_M;
        if (r >= M) continue;
        for (int j = 0; j < NV; ++j) {
            float blk[VW];
            STOREV(acc[i][j], blk);
            for (int v = 0; v < VW; ++v) {
                const int col = col0 + (lx + j * RTS_N) * VW + v;
                if (col >= N) continue;
                __global float* p = c + c_off + r * ldc + col;
                float x = alpha * blk[v];
                if (beta != 0.0f) x = fma(beta, *p, x);
                *p = x;
            }
        }
    }
}
