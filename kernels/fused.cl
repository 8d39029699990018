// fused.cl: the fused ops the fusion passes produce (graph.OpFusedConv and
// graph.OpFullyConnected), each a GEMM-shaped core followed by a runtime
// list of post-ops applied to every output element in list order.
//
// Post-op table (shared by both kernels): the int array pm holds np (the
// number of post-ops), np kind codes (POST_* below, in graph.PostOps
// order), then the residual broadcast table of a "sum" post-op: rank r, r
// output dims and r element strides of the residual operand res (0 on
// broadcast axes). The float array pf holds alpha, beta of each post-op.
// res is read only by a "sum" post-op.
//
// fused_conv2d: conv2d of conv.cl (NCHW, f32, groups, strides, pads,
// dilations, bias, build option OCB = output-channel block) plus post-ops.
// Work-size contract: 1-D NDRange with global size >= n = N*(OC/OCB)*OH*OW;
// any local size; work item i computes output channels ob*OCB ..
// ob*OCB+OCB-1 of pixel (b, oh, ow), i = ((b*(OC/OCB) + ob)*OH + oh)*OW +
// ow, each as a serial f32 fma sum in input channel, kernel row, kernel
// column order, then bias, then the post-ops; items with i >= n do nothing.
// The int array m is conv.cl's: N, C, H, W, OC, OH, OW, KH, KW, stride h/w,
// pad top/left, dilation h/w, group, has_bias.
//
// fully_connected: out[r, c] = post(sum_k a[r, k] * w[k, c] + bias[c]) for
// a contiguous A of R rows of K and W [K, N]. Work-size contract: 1-D
// NDRange with global size >= n = R*N; any local size; work item i
// computes out[i / N, i % N] as a serial f32 fma sum over k; items with
// i >= n do nothing. has_bias selects the bias.
//
// The register-blocked kernels below (fused_gemm, fused_conv2d_blocked,
// fused_dwconv2d) keep a block of outputs per work item in VW-wide vector
// registers and read their operands straight from global memory (no local
// memory, no barriers): on CPU OpenCL devices (POCL) this runs 10-50x
// faster than one output per item or local-memory tiles. Each block is a
// run of VW consecutive outputs of one row; blocks that cross the end of a
// row are computed with bounds-checked loads and stored element by
// element, so any M, N, K and any image size work. Build options: VW (4, 8
// or 16, default 16), and per kernel the block sizes and window below.
// The post-op table of these kernels may mark the residual as dense (rank
// -1: it has the output's shape), which lets a block read it as a vector.
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
// fused_conv2d_blocked: conv2d of one group (NCHW, f32) with a KH x KW
// window, strides SH, SW and dilation 1 (build options WIN_H, WIN_W,
// STR_H, STR_W for KH, KW, SH, SW; default 3, 3, 1, 1), pads, bias, post-ops, on weights packed as
// [ceil(OC/MR)][C][KH][KW][MR] (zero-padded). Build option MR (output
// channels per item, default 8). Work-size contract: 3-D NDRange, global
// size >= (ceil(OC/MR), OH * ceil(OW/VW), N), any local size; item (i, j,
// b) computes output channels i*MR.. of the VW pixels of row j / tiles at
// column (j % tiles)*VW of image b (tiles = ceil(OW/VW)), each as a serial
// f32 fma sum in input channel, kernel row, kernel column order, then
// bias, then the post-ops; items outside do nothing. The int array m holds
// N, C, H, W, OC, OH, OW, pad top, pad left, has_bias.
//
// fused_dwconv2d: depthwise conv2d (group = C = OC) with a KH x KW window,
// strides SH, SW, dilation 1 (build options as above), pads, bias and
// post-ops; weights [C, 1, KH, KW]. Build option RB (output rows per item,
// default 4). Work-size contract: 3-D NDRange, global size >=
// (ceil(OW/VW), ceil(OH/RB), N*C), any local size; item (t, r, z) computes
// the VW pixels at column t*VW of rows r*RB.. of plane z (image z / C,
// channel z % C) as serial f32 fma sums in kernel row, kernel column
// order, then bias, then the post-ops; items outside do nothing. The int
// array m holds N, C, H, W, OH, OW, pad top, pad left, has_bias.
//
// fused_deconv2d: ConvTranspose of one group whose kernel equals its
// stride (STR_H x STR_W, build options; no pads, no output padding,
// dilation 1), so that each output pixel (oh, ow) reads the one input
// pixel (oh / SH, ow / SW) with kernel tap (oh % SH, ow % SW); bias and
// post-ops. STR_W must divide VW. The weights are packed as
// [ceil(OC/MR)][C][SH][MR][VW]: lane l of the vector for output channel oc
// and row tap kh holds w[c, oc, kh, l % SW] (zero-padded channels). Build
// option MR (output channels per item). Work-size contract: 3-D NDRange,
// global size >= (ceil(OC/MR), OH * ceil(OW/VW), N), any local size; item
// (i, j, b) computes output channels i*MR.. of the VW pixels of row j /
// tiles at column (j % tiles)*VW of image b as serial f32 fma sums over
// the input channels, then bias, then the post-ops; items outside do
// nothing. The int array m holds N, C, H, W, OC, OH, OW, has_bias.
//
// Built with -DHALF (INFERENCE_PRECISION_HINT=f16) every tensor buffer (x,
// a, b, w, bias, res, out) holds f16 and is read and written through
// half.clh's macros; the math, the accumulators and the tables pm and pf
// stay f32.

#include "half.clh"

#ifndef OCB
#define OCB 1
#endif
#ifndef VW
#define VW 16
#endif
#ifndef MR
#define MR 8
#endif
#ifndef NV
#define NV 2
#endif
#ifndef RB
#define RB 4
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
#if VW == 4
#define floatv float4
#define intv int4
#define LOADV vload4
#define STOREV vstore4
#define LDV LD4
#define STV ST4
#define LANES ((int4)(0, 1, 2, 3))
#define as_uintv as_uint4
#elif VW == 8
#define floatv float8
#define intv int8
#define LOADV vload8
#define STOREV vstore8
#define LDV LD8
#define STV ST8
#define LANES ((int8)(0, 1, 2, 3, 4, 5, 6, 7))
#define as_uintv as_uint8
#elif VW == 16
#define floatv float16
#define intv int16
#define LOADV vload16
#define STOREV vstore16
#define LDV LD16
#define STV ST16
#define LANES ((int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
#define as_uintv as_uint16
#else
#error "fused.cl: VW must be 4, 8 or 16"
#endif
// LOADV and STOREV move a floatv from and to private float arrays, LDV and
// STV from and to the FT buffers.
#define NR (NV * VW)
#define UNROLL _Pragma("unroll")

#define POST_SUM 0
#define POST_RELU 1
#define POST_CLIP 2
#define POST_HARDSWISH 3
#define POST_HARDSIGMOID 4
#define POST_SIGMOID 5
#define POST_SWISH 6
#define POST_GELU 7
#define POST_LEAKYRELU 8
#define POST_TANH 9
#define POST_LINEAR 10

// res_offset is the residual element of output element o (the broadcast
// table after the np kind codes; rank -1: dense, the same index).
long res_offset(const ulong o, __global const int* pm, const int np)
{
    const int r = pm[1 + np];
    if (r < 0) return (long)o;
    __global const int* dims = pm + 2 + np;
    __global const int* st = dims + r;
    ulong q = o;
    long off = 0;
    for (int d = r - 1; d >= 0; --d) {
        off += (long)(q % (ulong)dims[d]) * st[d];
        q /= (ulong)dims[d];
    }
    return off;
}

// post_ops applies the post-op table to v, the output element at flat
// index o.
float post_ops(float v, const ulong o, __global const int* pm, __global const float* pf,
               __global const FT* res)
{
    const int np = pm[0];
    for (int i = 0; i < np; ++i) {
        const float a = pf[2 * i], b = pf[2 * i + 1];
        switch (pm[1 + i]) {
        case POST_SUM:
            v += LD(res, res_offset(o, pm, np));
            break;
        case POST_RELU:
            v = v < 0.0f ? 0.0f : v; // NaN passes through
            break;
        case POST_CLIP:
            v = v < a ? a : (v > b ? b : v);
            break;
        case POST_HARDSWISH:
            v = v * fmax(0.0f, fmin(1.0f, v / 6.0f + 0.5f));
            break;
        case POST_HARDSIGMOID:
            v = fmax(0.0f, fmin(1.0f, a * v + b));
            break;
        case POST_SIGMOID:
            v = 1.0f / (1.0f + exp(-v));
            break;
        case POST_SWISH:
            v = v / (1.0f + exp(-a * v));
            break;
        case POST_GELU:
            if (a != 0.0f) {
                v = 0.5f * v * (1.0f + tanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));
            } else {
                v = 0.5f * v * (1.0f + erf(v * 0.70710678118654752f));
            }
            break;
        case POST_LEAKYRELU:
            v = v < 0.0f ? a * v : v;
            break;
        case POST_TANH:
            v = tanh(v);
            break;
        case POST_LINEAR:
            v = a * v + b;
            break;
        }
    }
    return v;
}

// post_ops_v is post_ops on the VW consecutive output elements o, o+1, ...
// held in v.
floatv post_ops_v(floatv v, const ulong o, __global const int* pm, __global const float* pf,
                  __global const FT* res)
{
    const int np = pm[0];
    const floatv zero = (floatv)0.0f, one = (floatv)1.0f;
    for (int i = 0; i < np; ++i) {
        const float a = pf[2 * i], b = pf[2 * i + 1];
        switch (pm[1 + i]) {
        case POST_SUM:
            if (pm[1 + np] < 0) {
                v += LDV(res + o, 0);
            } else {
                float t[VW];
                STOREV(v, 0, t);
                for (int l = 0; l < VW; ++l) t[l] += LD(res, res_offset(o + l, pm, np));
                v = LOADV(0, t);
            }
            break;
        case POST_RELU:
            v = select(v, zero, v < zero); // NaN passes through
            break;
        case POST_CLIP:
            v = select(v, (floatv)a, v < (floatv)a);
            v = select(v, (floatv)b, v > (floatv)b);
            break;
        case POST_HARDSWISH:
            v = v * fmax(zero, fmin(one, v / 6.0f + 0.5f));
            break;
        case POST_HARDSIGMOID:
            v = fmax(zero, fmin(one, a * v + b));
            break;
        case POST_SIGMOID:
            v = one / (one + exp(-v));
            break;
        case POST_SWISH:
            v = v / (one + exp(-a * v));
            break;
        case POST_GELU:
            if (a != 0.0f) {
                v = 0.5f * v * (one + tanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));
            } else {
                v = 0.5f * v * (one + erf(v * 0.70710678118654752f));
            }
            break;
        case POST_LEAKYRELU:
            v = select(v, a * v, v < zero);
            break;
        case POST_TANH:
            v = tanh(v);
            break;
        case POST_LINEAR:
            v = a * v + b;
            break;
        }
    }
    return v;
}

// store_v stores the VW outputs of v at out + o, the first n of them when
// n < VW (a block that crosses the end of a row), each through the
// post-ops.
__attribute__((always_inline)) inline void store_v(floatv v, __global FT* out, const ulong o, const int n,
                                                   __global const int* pm, __global const float* pf,
                                                   __global const FT* res)
{
    if (n >= VW) {
        STV(out + o, 0, post_ops_v(v, o, pm, pf, res));
        return;
    }
    float t[VW];
    STOREV(v, 0, t);
    for (int l = 0; l < n; ++l) ST(out, o + l, post_ops(t[l], o + l, pm, pf, res));
}

// load_row_lanes is load_row lane by lane, for blocks at the very ends of
// the buffer.
__attribute__((noinline)) floatv load_row_lanes(__global const FT* row, const int c0, const int W, const int S)
{
    float t[VW];
    for (int l = 0; l < VW; ++l) {
        const int c = c0 + l * S;
        t[l] = (c >= 0 && c < W) ? LD(row, c) : 0.0f;
    }
    return LOADV(0, t);
}

// load_row returns row[c0 + l*S] for the VW lanes l, 0 where that column
// is outside [0, W). S is 1 or 2 (the lanes of two vector loads, evens),
// other strides go lane by lane. Inside the row it is a vector load;
// across an end of the row it loads the vector anyway (neighbouring rows'
// data, inside the buffer [lo, hi)) and zeroes the lanes outside; only at
// the ends of the buffer does it go lane by lane.
__attribute__((always_inline)) inline floatv load_row(__global const FT* row, const int c0, const int W, const int S,
                                                      __global const FT* lo, __global const FT* hi)
{
    if (S != 1 && S != 2) return load_row_lanes(row, c0, W, S);
    if (c0 >= 0 && c0 + S * VW <= W) {
        __global const FT* p = row + c0;
        if (S == 1) return LDV(p, 0);
        const floatv a = LDV(p, 0), b = LDV(p, 1);
        return (floatv)(a.even, b.even);
    }
    const long off = (long)(row - lo) + c0;
    if (off < 0 || off + S * VW > (long)(hi - lo)) return load_row_lanes(row, c0, W, S);
    __global const FT* p = lo + off;
    const intv col = S * LANES + c0;
    floatv v;
    if (S == 1) {
        v = LDV(p, 0);
    } else {
        const floatv a = LDV(p, 0), b = LDV(p, 1);
        v = (floatv)(a.even, b.even);
    }
    return select((floatv)0.0f, v, (col >= 0) & (col < W));
}

__kernel void fused_conv2d(__global const FT* x, __global const FT* w, __global const FT* bias,
                           __global const FT* res, __global FT* out, const ulong n,
                           __global const int* m, __global const int* pm, __global const float* pf)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int C = m[1], H = m[2], W = m[3], OC = m[4], OH = m[5], OW = m[6];
    const int KH = m[7], KW = m[8], SH = m[9], SW = m[10], PH = m[11], PW = m[12];
    const int DH = m[13], DW = m[14], G = m[15];
    const int OB = OC / OCB;
    const int ow = (int)(gid % (ulong)OW);
    const int oh = (int)((gid / (ulong)OW) % (ulong)OH);
    const int ob = (int)((gid / ((ulong)OW * OH)) % (ulong)OB);
    const long b = (long)(gid / ((ulong)OW * OH * OB));
    const int cg = C / G, ocg = OC / G;
    const int oc0 = ob * OCB;
    const int g = oc0 / ocg;
    const long wstride = (long)cg * KH * KW; // between output channels
    float acc[OCB];
    for (int j = 0; j < OCB; ++j) {
        acc[j] = m[16] ? LD(bias, oc0 + j) : 0.0f;
    }
    for (int ic = 0; ic < cg; ++ic) {
        __global const FT* xp = x + ((b * C + (long)g * cg + ic) * H) * (long)W;
        __global const FT* wp = w + (((long)oc0 * cg + ic) * KH) * (long)KW;
        for (int kh = 0; kh < KH; ++kh) {
            const int ih = oh * SH - PH + kh * DH;
            if (ih < 0 || ih >= H) continue;
            for (int kw = 0; kw < KW; ++kw) {
                const int iw = ow * SW - PW + kw * DW;
                if (iw < 0 || iw >= W) continue;
                const float xv = LD(xp, (long)ih * W + iw);
                const int k = kh * KW + kw;
                for (int j = 0; j < OCB; ++j) {
                    acc[j] = fma(xv, LD(wp, j * wstride + k), acc[j]);
                }
            }
        }
    }
    const long plane = (long)OH * OW;
    const long o0 = ((b * OC + oc0) * OH + oh) * (long)OW + ow;
    for (int j = 0; j < OCB; ++j) {
        const long o = o0 + j * plane;
        ST(out, o, post_ops(acc[j], (ulong)o, pm, pf, res));
    }
}

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
    } else {
        for (int k = 0; k < K; ++k) {
            floatv bv[NV];
            UNROLL for (int j = 0; j < NV; ++j) {
                float t[VW];
                for (int l = 0; l < VW; ++l) {
                    const int c = j * VW + l;
                    t[l] = c < nn ? LD(bp, k * b_ks + c) : 0.0f;
                }
                bv[j] = LOADV(0, t);
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

__kernel void fused_conv2d_blocked(__global const FT* x, __global const FT* w, __global const FT* bias,
                                   __global const FT* res, __global FT* out, __global const int* m,
                                   __global const int* pm, __global const float* pf)
{
    const int C = m[1], H = m[2], W = m[3], OC = m[4], OH = m[5], OW = m[6], PH = m[7], PW = m[8];
    const int ocb = (int)get_global_id(0), oc0 = ocb * MR;
    const int tiles = (OW + VW - 1) / VW;
    const int oh = (int)get_global_id(1) / tiles, ow0 = ((int)get_global_id(1) % tiles) * VW;
    const long b = (long)get_global_id(2);
    if (oc0 >= OC || oh >= OH || b >= m[0]) return;
    __global const FT* xend = x + (long)m[0] * C * H * W;
    floatv acc[MR];
    UNROLL for (int i = 0; i < MR; ++i) acc[i] = (floatv)0.0f;
    __global const FT* wb = w + (long)ocb * C * (WIN_H * WIN_W * MR);
    const int c0 = ow0 * STR_W - PW;
    for (int ic = 0; ic < C; ++ic) {
        __global const FT* xp = x + (b * C + ic) * H * (long)W;
        __global const FT* wc = wb + ic * (WIN_H * WIN_W * MR);
        UNROLL for (int kh = 0; kh < WIN_H; ++kh) {
            const int ih = oh * STR_H - PH + kh;
            if (ih >= 0 && ih < H) {
                __global const FT* row = xp + (long)ih * W;
                UNROLL for (int kw = 0; kw < WIN_W; ++kw) {
                    const floatv xv = load_row(row, c0 + kw, W, STR_W, x, xend);
                    UNROLL for (int i = 0; i < MR; ++i) acc[i] = fma((floatv)LD(wc, (kh * WIN_W + kw) * MR + i), xv, acc[i]);
                }
            }
        }
    }
    const int cnt = min(VW, OW - ow0);
    UNROLL for (int i = 0; i < MR; ++i) {
        const int oc = oc0 + i;
        if (oc < OC) {
            floatv v = acc[i];
            if (m[9]) v += LD(bias, oc);
            store_v(v, out, (ulong)(((b * OC + oc) * OH + oh) * OW + ow0), cnt, pm, pf, res);
        }
    }
}

// IRB is the number of input rows the RB output rows of a depthwise item
// read.
#define IRB ((RB - 1) * STR_H + WIN_H)

__kernel void fused_dwconv2d(__global const FT* x, __global const FT* w, __global const FT* bias,
                             __global const FT* res, __global FT* out, __global const int* m,
                             __global const int* pm, __global const float* pf)
{
    const int C = m[1], H = m[2], W = m[3], OH = m[4], OW = m[5], PH = m[6], PW = m[7];
    const int ow0 = (int)get_global_id(0) * VW, oh0 = (int)get_global_id(1) * RB;
    const long z = (long)get_global_id(2);
    if (ow0 >= OW || oh0 >= OH || z >= (long)m[0] * C) return;
    const int c = (int)(z % C);
    float wr[WIN_H * WIN_W];
    UNROLL for (int i = 0; i < WIN_H * WIN_W; ++i) wr[i] = LD(w, c * (WIN_H * WIN_W) + i);
    __global const FT* xend = x + (long)m[0] * C * H * W;
    floatv acc[RB];
    UNROLL for (int r = 0; r < RB; ++r) acc[r] = (floatv)0.0f;
    __global const FT* xp = x + z * H * (long)W;
    const int c0 = ow0 * STR_W - PW;
    UNROLL for (int ir = 0; ir < IRB; ++ir) {
        const int ih = oh0 * STR_H - PH + ir;
        if (ih >= 0 && ih < H) {
            __global const FT* row = xp + (long)ih * W;
            UNROLL for (int kw = 0; kw < WIN_W; ++kw) {
                const floatv v = load_row(row, c0 + kw, W, STR_W, x, xend);
                UNROLL for (int r = 0; r < RB; ++r) {
                    const int kh = ir - r * STR_H;
                    if (kh >= 0 && kh < WIN_H) acc[r] = fma((floatv)wr[kh * WIN_W + kw], v, acc[r]);
                }
            }
        }
    }
    const int cnt = min(VW, OW - ow0);
    const float bv = m[8] ? LD(bias, c) : 0.0f;
    UNROLL for (int r = 0; r < RB; ++r) {
        const int oh = oh0 + r;
        if (oh < OH) store_v(acc[r] + bv, out, (ulong)((z * OH + oh) * OW + ow0), cnt, pm, pf, res);
    }
}

__kernel void fused_deconv2d(__global const FT* x, __global const FT* w, __global const FT* bias,
                             __global const FT* res, __global FT* out, __global const int* m,
                             __global const int* pm, __global const float* pf)
{
    const int C = m[1], H = m[2], W = m[3], OC = m[4], OH = m[5], OW = m[6];
    const int ocb = (int)get_global_id(0), oc0 = ocb * MR;
    const int tiles = (OW + VW - 1) / VW;
    const int oh = (int)get_global_id(1) / tiles, ow0 = ((int)get_global_id(1) % tiles) * VW;
    const long b = (long)get_global_id(2);
    if (oc0 >= OC || oh >= OH || b >= m[0]) return;
    const int ih = oh / STR_H, kh = oh % STR_H;
    __global const FT* xend = x + (long)m[0] * C * H * W;
    floatv acc[MR];
    UNROLL for (int i = 0; i < MR; ++i) acc[i] = (floatv)0.0f;
    __global const FT* wb = w + ((long)ocb * C * STR_H + kh) * (MR * VW);
    __global const FT* xr = x + (b * C * H + ih) * (long)W;
    for (int ic = 0; ic < C; ++ic) {
        // Lane l reads input column ow0/SW + l/SW.
        const floatv xv = shuffle(load_row(xr + (long)ic * H * W, ow0 / STR_W, W, 1, x, xend), as_uintv(LANES / STR_W));
        __global const FT* wc = wb + (long)ic * (STR_H * MR * VW);
        UNROLL for (int i = 0; i < MR; ++i) acc[i] = fma(LDV(wc, i), xv, acc[i]);
    }
    const int cnt = min(VW, OW - ow0);
    UNROLL for (int i = 0; i < MR; ++i) {
        const int oc = oc0 + i;
        if (oc < OC) {
            floatv v = acc[i];
            if (m[7]) v += LD(bias, oc);
            store_v(v, out, (ulong)(((b * OC + oc) * OH + oh) * OW + ow0), cnt, pm, pf, res);
        }
    }
}
