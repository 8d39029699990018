// loss.cl: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (whose
// log-softmax runs on activation_softmax.cl's log_softmax first).
//
// Work-size contract of nll_loss: 1-D NDRange with global size >= n; any
// local size; items with i >= n do nothing. Item i handles target i of
// the n = N*D targets tgt [N, D] (IT: int or long, -DIT=...) over the
// log-probabilities lp [N, C, D]: loss = -lp[n, t, d] * w[t] and the
// target's weight w[t] (1 without weights, has_w = 0; 0 for an ignored
// target, has_ignore != 0 and t == ignore). It writes the loss to y[i]
// (FT) and the weight to ws[i]; -DSUMS makes y a float buffer (the sums of
// loss_reduce read it). A target outside [0, C) gives NaN. -DHALF stores
// lp, w and y as f16 (half.clh), computing in float.
//
// Work-size contract of loss_reduce: exactly one work group of WG items
// (global = local = WG, -DWG=<power of two, at most the device's work
// group size>). No item returns early: every item strides over the n
// losses and weights of nll_loss (floats), guarding each load with i < n,
// and reaches every barrier; item 0 writes y[0] = the loss sum, or with
// mean != 0 the sum divided by the sum of the weights.

#include "half.clh"

#ifndef IT
#define IT long
#endif
#ifndef WG
#define WG 64
#endif

#ifdef SUMS
#define YT float
#define STY(p, i, v) ((p)[i] = (v))
#else
#define YT FT
#define STY(p, i, v) ST(p, i, v)
#endif

__kernel void nll_loss(__global const FT* lp, __global const IT* tgt, __global const FT* w, __global YT* y,
                       __global float* ws, const ulong n, const ulong C, const ulong D, const long ignore,
                       const int has_w, const int has_ignore)
{
    const size_t i = get_global_id(0);
    if (i >= n) return;
    const long t = (long)tgt[i];
    if (has_ignore && t == ignore) {
        STY(y, i, 0.0f);
        ws[i] = 0.0f;
        return;
    }
    if (t < 0 || t >= (long)C) {
        STY(y, i, NAN);
        ws[i] = NAN;
        return;
    }
    const ulong nn = i / D, d = i % D;
    const float wv = has_w ? LD(w, t) : 1.0f;
    STY(y, i, -LD(lp, (nn * C + (ulong)t) * D + d) * wv);
    ws[i] = wv;
}

__kernel void loss_reduce(__global const float* l, __global const float* ws, __global FT* y, const ulong n,
                          const int mean)
{
    __local float sl[WG], sw[WG];
    const size_t lid = get_local_id(0);
    float a = 0.0f, b = 0.0f;
    for (ulong i = lid; i < n; i += WG) {
        a += l[i];
        b += ws[i];
    }
    sl[lid] = a;
    sw[lid] = b;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) {
            sl[lid] += sl[lid + s];
            sw[lid] += sw[lid + s];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) ST(y, 0, mean ? sl[0] / sw[0] : sl[0]);
}
