// kernelfusion_se_block.cl: a squeeze-excitation block in one launch,
// y = x * gate (or x + x * gate), gate = act2(w2 . act1(w1 . mean_hw(x) +
// b1) + b2) per image and channel (PP-OCR cls, rec and det's
// MobileNetV3 blocks: GlobalAveragePool, two 1x1 convolutions, Mul). Made
// by fusion.FuseSEBlock; the GPU launches it through the generic
// KernelFusion lowering where the repeated pooling pays (every group pools
// the whole image: clbackend's seBlockFused), else runs the block's nodes.
//
// Work-size contract (graph.LaunchSEBlock): 1-D NDRange of n work groups of
// L items (L a power of two of at most 256); group r works on image r / G
// and its slice s = r % G of S = ceil(C / G) channels [s*S, min(C,
// (s+1)*S)). Each group pools every channel of its image into local memory
// (item i takes channels i, i + L, ...), runs the first layer (CM outputs,
// one per item in turn) and the second for its slice's channels, then
// scales the slice's elements of x into y (item i the i-th of L contiguous
// runs of them). Arguments: the input x (images
// of C*HW, channel-major), the first layer's weights w1 [CM, C] and bias b1
// [CM], the second's w2 [C, CM] and b2 [C], the output y (x's shape), n =
// the number of groups (images times G), the int array m (m[0] = C, m[1] =
// HW, m[2] = CM, m[3] = G, m[4] and m[5] the layers' activations: 0 none,
// 1 Relu, 2 Sigmoid, 3 HardSigmoid max(0, min(1, alpha*v + beta)), m[6] =
// 1 to add x) and the float params p (p[0], p[1] = the first layer's
// alpha, beta; p[2], p[3] the second's). The local arrays hold SW floats
// each (build option -DSW, at least C and CM, default 64); the pooling
// and the products take VW values at a time (build option -DVW = 4, 8 or
// 16, default 4: the device's preferred float vector width).
// No item returns early (the kernel has barriers): a group past n, or a table its local
// arrays cannot hold (C or CM over SW), skips the whole body alike and
// leaves y alone; every access is within the group's image (C*HW), the
// weights (CM*C) and the biases. Built with -DHALF (f16 activations) the
// tensors hold f16 (half.clh); p stays f32 and the math float.

#include "half.clh"
#include "rows.clh"

#ifndef SW
#define SW 64
#endif

#if VW == 16
#define SE_LVLD(p) vload16(0, (p))
#elif VW == 8
#define SE_LVLD(p) vload8(0, (p))
#else
#define SE_LVLD(p) vload4(0, (p))
#endif

// se_sum returns the sum of the K values at x, VW at a time in two
// interleaved sums.
float se_sum(__global const FT* x, const long K)
{
    fvec a = (fvec)(0.0f), b = (fvec)(0.0f);
    long k = 0;
    for (; k + 2 * VW <= K; k += 2 * VW) {
        a += VLD(x + k);
        b += VLD(x + k + VW);
    }
    for (; k + VW <= K; k += VW) {
        a += VLD(x + k);
    }
    float t = rows_vsum(a + b);
    for (; k < K; ++k) {
        t += LD(x, k);
    }
    return t;
}

// se_dot returns the dot product of the K weights at w with the K values
// of v in local memory, VW at a time in two interleaved sums.
float se_dot(__global const FT* w, __local const float* v, const long K)
{
    fvec a = (fvec)(0.0f), b = (fvec)(0.0f);
    long k = 0;
    for (; k + 2 * VW <= K; k += 2 * VW) {
        a = fma(VLD(w + k), SE_LVLD(v + k), a);
        b = fma(VLD(w + k + VW), SE_LVLD(v + k + VW), b);
    }
    for (; k + VW <= K; k += VW) {
        a = fma(VLD(w + k), SE_LVLD(v + k), a);
    }
    float t = rows_vsum(a + b);
    for (; k < K; ++k) {
        t = fma(LD(w, k), v[k], t);
    }
    return t;
}

// SE_ACT applies activation code a (m[4], m[5]) with post-op parameters
// al, be to v.
#define SE_ACT(v, a, al, be) \
    ((a) == 1 ? fmax((v), 0.0f) : (a) == 2 ? 1.0f / (1.0f + exp(-(v))) : (a) == 3 ? fmax(0.0f, fmin(1.0f, (al) * (v) + (be))) : (v))

__kernel void se_block(__global const FT* x, __global const FT* w1, __global const FT* b1,
                       __global const FT* w2, __global const FT* b2, __global FT* y, const ulong n,
                       __global const int* m, __global const float* p)
{
    __local float pooled[SW];
    __local float mid[SW];
    __local float gate[SW];
    const size_t grp = get_group_id(0);
    const int lid = (int)get_local_id(0);
    const int L = (int)get_local_size(0);
    const long C = m[0], HW = m[1], CM = m[2], G = m[3];
    const int act1 = m[4], act2 = m[5], residual = m[6];
    // A group past n or a table the local arrays cannot hold runs nothing:
    // the whole group skips the body (and its barriers) alike.
    if (grp < n && C >= 1 && C <= SW && CM >= 1 && CM <= SW && HW >= 1 && G >= 1) {
        const ulong base = (ulong)(grp / G) * (ulong)(C * HW);
        const long S = (C + G - 1) / G;
        const long c0 = (long)(grp % G) * S;
        const long c1 = max(c0, min(C, c0 + S)); // empty past C
        const float inv = 1.0f / (float)HW;
        for (long c = lid; c < C; c += L) {
            pooled[c] = se_sum(x + base + (ulong)(c * HW), HW) * inv;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (long j = lid; j < CM; j += L) {
            const float a = LD(b1, j) + se_dot(w1 + j * C, pooled, C);
            mid[j] = SE_ACT(a, act1, p[0], p[1]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (long c = c0 + lid; c < c1; c += L) {
            const float a = LD(b2, c) + se_dot(w2 + c * CM, mid, CM);
            gate[c - c0] = SE_ACT(a, act2, p[2], p[3]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        // The slice's elements in L contiguous runs, one per item, each
        // crossing channels where it must (one division per item).
        const long len = (c1 - c0) * HW;
        const long per = (len + L - 1) / L;
        long e = min(len, (long)lid * per);
        const long end = min(len, e + per);
        long c = c0 + e / HW;
        long i = e - (c - c0) * HW;
        while (e < end) {
            const long run = min(HW - i, end - e);
            const float g = gate[c - c0];
            const ulong o = base + (ulong)(c * HW + i);
            for (long k = 0; k < run; ++k) {
                const float v = LD(x, o + k);
                ST(y, o + k, residual ? v + v * g : v * g);
            }
            e += run;
            ++c;
            i = 0;
        }
    }
}
