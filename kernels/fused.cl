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

#ifndef OCB
#define OCB 1
#endif

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

// post_ops applies the post-op table to v, the output element at flat
// index o.
float post_ops(float v, const ulong o, __global const int* pm, __global const float* pf,
               __global const float* res)
{
    const int np = pm[0];
    for (int i = 0; i < np; ++i) {
        const float a = pf[2 * i], b = pf[2 * i + 1];
        switch (pm[1 + i]) {
        case POST_SUM: {
            const int r = pm[1 + np];
            __global const int* dims = pm + 2 + np;
            __global const int* st = dims + r;
            ulong q = o;
            long off = 0;
            for (int d = r - 1; d >= 0; --d) {
                off += (long)(q % (ulong)dims[d]) * st[d];
                q /= (ulong)dims[d];
            }
            v += res[off];
            break;
        }
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

__kernel void fused_conv2d(__global const float* x, __global const float* w, __global const float* bias,
                           __global const float* res, __global float* out, const ulong n,
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
        acc[j] = m[16] ? bias[oc0 + j] : 0.0f;
    }
    for (int ic = 0; ic < cg; ++ic) {
        __global const float* xp = x + ((b * C + (long)g * cg + ic) * H) * (long)W;
        __global const float* wp = w + (((long)oc0 * cg + ic) * KH) * (long)KW;
        for (int kh = 0; kh < KH; ++kh) {
            const int ih = oh * SH - PH + kh * DH;
            if (ih < 0 || ih >= H) continue;
            for (int kw = 0; kw < KW; ++kw) {
                const int iw = ow * SW - PW + kw * DW;
                if (iw < 0 || iw >= W) continue;
                const float xv = xp[(long)ih * W + iw];
                const int k = kh * KW + kw;
                for (int j = 0; j < OCB; ++j) {
                    acc[j] = fma(xv, wp[j * wstride + k], acc[j]);
                }
            }
        }
    }
    const long plane = (long)OH * OW;
    const long o0 = ((b * OC + oc0) * OH + oh) * (long)OW + ow;
    for (int j = 0; j < OCB; ++j) {
        const long o = o0 + j * plane;
        out[o] = post_ops(acc[j], (ulong)o, pm, pf, res);
    }
}

__kernel void fully_connected(__global const float* a, __global const float* w, __global const float* bias,
                              __global const float* res, __global float* out, const ulong n,
                              const int N, const int K, const int has_bias,
                              __global const int* pm, __global const float* pf)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const long col = (long)(gid % (ulong)N);
    const long row = (long)(gid / (ulong)N);
    __global const float* pa = a + row * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = fma(pa[k], w[(long)k * N + col], acc);
    if (has_bias) acc += bias[col];
    out[gid] = post_ops(acc, (ulong)gid, pm, pf, res);
}
