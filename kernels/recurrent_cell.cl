// recurrent_cell.cl: the gates of one step of ONNX LSTM, GRU and RNN, for
// every direction, batch entry and hidden unit at once. The products with
// the weights are GEMMs the planner emits around these kernels: xw = X.W^T
// for every step up front ([D, rows, G*H]), and, per step, rh = h.R^T for
// every direction and batch entry ([D, N, G*H]); GRU without
// linear_before_reset adds gru_reset (r . h) and its product with R's h
// rows (rhh, [D, N, H]). Gate order is ONNX's: LSTM i, o, f, c; GRU z, r,
// h; RNN one. b holds W's biases then R's, [D, 2*G*H]; the states h and c
// are [D, N, H], updated in place (the step's GEMM has read h before).
//
// Work-size contract: 1-D NDRange with global size >= n = D * N * H; any
// local size. Items with i >= n do nothing. Item i is unit j = i % H of
// batch entry (i / H) % N in direction i / (N * H); it writes state element
// i and its element of y. A batch entry whose sequence (lens, when flag
// bit 0 is set) ended before this step keeps its state and gets a zero
// row of y.
//
// The int table m: m[0] D, m[1] N, m[2] H, m[3] S (steps), m[4] the step,
// m[5] flags (1 lens, 2 peepholes, 4 LSTM input_forget, 8 GRU
// linear_before_reset), m[6] directions run backward (bit d), m[7] xw's
// row stride per step and m[8] per batch entry (in rows), m[9] xw's
// stride per direction (elements), m[10] y's stride per step, m[11] per
// direction and m[12] per batch entry (elements), m[13 + 3d + k] the code
// of direction d's activation k (recActivation). The float table p: p[0]
// clip (0: none), then alpha and beta of each activation, in m's order.

// recActivation applies activation code k to x (alpha a, beta b): 0
// sigmoid, 1 tanh, 2 relu, 3 affine, 4 leaky relu, 5 thresholded relu, 6
// scaled tanh, 7 hard sigmoid, 8 elu, 9 softsign, 10 softplus.
inline float recActivation(int k, float x, float a, float b)
{
    switch (k) {
    case 0: return 1.0f / (1.0f + exp(-x));
    case 1: return tanh(x);
    case 2: return fmax(x, 0.0f);
    case 3: return a * x + b;
    case 4: return x >= 0.0f ? x : a * x;
    case 5: return x > a ? x : 0.0f;
    case 6: return a * tanh(b * x);
    case 7: return fmin(fmax(a * x + b, 0.0f), 1.0f);
    case 8: return x >= 0.0f ? x : a * expm1(x);
    case 9: return x / (1.0f + fabs(x));
    case 10: return log1p(exp(x));
    }
    return x;
}

// recClip bounds a gate's input to [-c, c] when c > 0.
inline float recClip(float x, float c) { return c > 0.0f ? fmin(fmax(x, -c), c) : x; }

// recAct applies activation k of direction d with its parameters to a
// gate's input, clipped.
inline float recAct(__global const int* m, __global const float* p, int d, int k, float x)
{
    const int i = 3 * d + k;
    return recActivation(m[13 + i], recClip(x, p[0]), p[1 + 2 * i], p[2 + 2 * i]);
}

// recOut applies LSTM's output activation (k = 2 of direction d) to the
// cell state, which clip does not bound.
inline float recOut(__global const int* m, __global const float* p, int d, float x)
{
    const int i = 3 * d + 2;
    return recActivation(m[13 + i], x, p[1 + 2 * i], p[2 + 2 * i]);
}

// recStep locates item gid: its direction, batch entry and unit, the time
// index it reads and writes, and whether its sequence has ended.
typedef struct {
    int d, b, j, t;
    bool done;
} recItem;

inline recItem recLocate(size_t gid, __global const int* m, __global const int* lens)
{
    recItem it;
    const int N = m[1], H = m[2], S = m[3], step = m[4];
    it.j = (int)(gid % (size_t)H);
    it.b = (int)((gid / (size_t)H) % (size_t)N);
    it.d = (int)(gid / ((size_t)H * (size_t)N));
    const int len = (m[5] & 1) ? clamp(lens[it.b], 0, S) : S;
    it.done = step >= len;
    it.t = it.done ? step : (((m[6] >> it.d) & 1) ? len - 1 - step : step);
    return it;
}

// recRow is xw's row of item it: G*H gate inputs.
inline __global const float* recRow(__global const float* xw, __global const int* m, recItem it, int gh)
{
    return xw + (size_t)it.d * (size_t)m[9] + ((size_t)it.t * (size_t)m[7] + (size_t)it.b * (size_t)m[8]) * (size_t)gh;
}

// recY is item it's element of y.
inline size_t recY(__global const int* m, recItem it)
{
    return (size_t)it.t * (size_t)m[10] + (size_t)it.d * (size_t)m[11] + (size_t)it.b * (size_t)m[12] + (size_t)it.j;
}

__kernel void lstm_cell(__global const float* xw, __global const float* rh, __global const float* bias,
                        __global const float* peep, __global const int* lens, __global float* h, __global float* c,
                        __global float* y, const ulong n, __global const int* m, __global const float* p)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const recItem it = recLocate(gid, m, lens);
    if (it.done) {
        y[recY(m, it)] = 0.0f;
        return;
    }
    const int H = m[2], j = it.j, d = it.d;
    __global const float* x = recRow(xw, m, it, 4 * H);
    __global const float* r = rh + ((size_t)d * (size_t)m[1] + (size_t)it.b) * (size_t)(4 * H);
    __global const float* bw = bias + (size_t)d * (size_t)(8 * H);
    __global const float* bh = bw + 4 * H;
    const bool hasP = (m[5] & 2) != 0;
    __global const float* pp = peep + (size_t)d * (size_t)(3 * H);
    const float cp = c[gid];
    const float gi = recAct(m, p, d, 0, x[j] + r[j] + bw[j] + bh[j] + (hasP ? pp[j] * cp : 0.0f));
    float gf = recAct(m, p, d, 0, x[2 * H + j] + r[2 * H + j] + bw[2 * H + j] + bh[2 * H + j] + (hasP ? pp[2 * H + j] * cp : 0.0f));
    if (m[5] & 4) gf = 1.0f - gi;
    const float gc = recAct(m, p, d, 1, x[3 * H + j] + r[3 * H + j] + bw[3 * H + j] + bh[3 * H + j]);
    const float cn = gf * cp + gi * gc;
    const float go = recAct(m, p, d, 0, x[H + j] + r[H + j] + bw[H + j] + bh[H + j] + (hasP ? pp[H + j] * cn : 0.0f));
    const float hn = go * recOut(m, p, d, cn);
    c[gid] = cn;
    h[gid] = hn;
    y[recY(m, it)] = hn;
}

// gru_reset: rst = r . h for GRU without linear_before_reset (0 where the
// sequence ended), the left side of the h gate's product with R.
__kernel void gru_reset(__global const float* xw, __global const float* rh, __global const float* bias,
                        __global const int* lens, __global const float* h, __global float* rst, const ulong n,
                        __global const int* m, __global const float* p)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const recItem it = recLocate(gid, m, lens);
    if (it.done) {
        rst[gid] = 0.0f;
        return;
    }
    const int H = m[2], j = it.j, d = it.d;
    __global const float* x = recRow(xw, m, it, 3 * H);
    __global const float* r = rh + ((size_t)d * (size_t)m[1] + (size_t)it.b) * (size_t)(3 * H);
    __global const float* bw = bias + (size_t)d * (size_t)(6 * H);
    const float gr = recAct(m, p, d, 0, x[H + j] + r[H + j] + bw[H + j] + bw[4 * H + j]);
    rst[gid] = gr * h[gid];
}

// gru_cell: the GRU update; rhh is (r . h).Rh^T without linear_before_reset
// (unused with it).
__kernel void gru_cell(__global const float* xw, __global const float* rh, __global const float* rhh,
                       __global const float* bias, __global const int* lens, __global float* h, __global float* y,
                       const ulong n, __global const int* m, __global const float* p)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const recItem it = recLocate(gid, m, lens);
    if (it.done) {
        y[recY(m, it)] = 0.0f;
        return;
    }
    const int H = m[2], j = it.j, d = it.d;
    __global const float* x = recRow(xw, m, it, 3 * H);
    __global const float* r = rh + ((size_t)d * (size_t)m[1] + (size_t)it.b) * (size_t)(3 * H);
    __global const float* bw = bias + (size_t)d * (size_t)(6 * H);
    __global const float* bh = bw + 3 * H;
    const float z = recAct(m, p, d, 0, x[j] + r[j] + bw[j] + bh[j]);
    float hc;
    if (m[5] & 8) {
        const float gr = recAct(m, p, d, 0, x[H + j] + r[H + j] + bw[H + j] + bh[H + j]);
        hc = recAct(m, p, d, 1, x[2 * H + j] + bw[2 * H + j] + gr * (r[2 * H + j] + bh[2 * H + j]));
    } else {
        hc = recAct(m, p, d, 1, x[2 * H + j] + bw[2 * H + j] + rhh[gid] + bh[2 * H + j]);
    }
    const float hn = (1.0f - z) * hc + z * h[gid];
    h[gid] = hn;
    y[recY(m, it)] = hn;
}

__kernel void rnn_cell(__global const float* xw, __global const float* rh, __global const float* bias,
                       __global const int* lens, __global float* h, __global float* y, const ulong n,
                       __global const int* m, __global const float* p)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const recItem it = recLocate(gid, m, lens);
    if (it.done) {
        y[recY(m, it)] = 0.0f;
        return;
    }
    const int H = m[2], j = it.j, d = it.d;
    __global const float* x = recRow(xw, m, it, H);
    __global const float* r = rh + ((size_t)d * (size_t)m[1] + (size_t)it.b) * (size_t)H;
    __global const float* bw = bias + (size_t)d * (size_t)(2 * H);
    const float hn = recAct(m, p, d, 0, x[j] + r[j] + bw[j] + bw[H + j]);
    h[gid] = hn;
    y[recY(m, it)] = hn;
}

// lstm_step: a whole LSTM of one step (S = 1, layout 0, no sequence_lens)
// in one launch: the products with W and R and the gates together, so a
// streaming model's cell (Silero VAD's) is one command instead of two
// GEMMs, the cell and the state copies around them. wt is W blocked by
// VW units, [D, H/VW, I, 4, VW] (element (d, u, k, q, l) is W's row
// q*H + u*VW + l, column k, of direction d), rt R the same, [D, H/VW, H,
// 4, VW] (laid out at plan time), so that an item reads its weights in one
// contiguous run instead of a VW-wide piece of every 4H-long row; x
// is [N, I]; h0 and c0 [D, N, H]; y, yh and yc [D, N, H] (Y's one step,
// Y_h, Y_c). m and p are the cells' tables with m[3] = I (the input
// size) and m[4], m[6]..m[12] unused.
//
// Work-size contract: 1-D NDRange with global size >= n = D*N*H/VW (build
// option VW: 4, 8 or 16, dividing H); any local size. Items with i >= n do
// nothing. Item i computes units VW*(i % (H/VW)).. of batch entry
// (i / (H/VW)) % N in direction i / (N*H/VW): VW-wide fma sums along W's
// and R's transposed rows, then each unit's gates as lstm_cell's.

#ifndef VW
#define VW 4
#endif
#if VW == 4
#define stepv float4
#define STEP_LOAD vload4
#define STEP_STORE vstore4
#elif VW == 8
#define stepv float8
#define STEP_LOAD vload8
#define STEP_STORE vstore8
#elif VW == 16
#define stepv float16
#define STEP_LOAD vload16
#define STEP_STORE vstore16
#else
#error "lstm_step: VW must be 4, 8 or 16"
#endif

// lstmStepSum adds v[k] times the item's block k of a blocked weight w
// (4 gates of VW units each, blocks 4*VW apart) to the gates g, for k < K.
inline void lstmStepSum(__global const float* v, __global const float* w, int K, stepv* g)
{
    for (int k = 0; k < K; ++k, w += 4 * VW) {
        const stepv s = (stepv)v[k];
        for (int q = 0; q < 4; ++q) g[q] = fma(s, STEP_LOAD(0, w + q * VW), g[q]);
    }
}

__kernel void lstm_step(__global const float* x, __global const float* wt, __global const float* rt,
                        __global const float* bias, __global const float* peep, __global const float* h0,
                        __global const float* c0, __global float* y, __global float* yh, __global float* yc,
                        const ulong n, __global const int* m, __global const float* p)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int N = m[1], H = m[2], I = m[3], G4 = 4 * H, HV = H / VW;
    const int j = (int)(gid % (size_t)HV) * VW;
    const int b = (int)((gid / (size_t)HV) % (size_t)N);
    const int d = (int)(gid / ((size_t)HV * (size_t)N));
    // Gates i, o, f, c (ONNX's order): W's biases plus R's, then the
    // products.
    __global const float* bw = bias + (size_t)d * (size_t)(2 * G4) + j;
    stepv g[4];
    for (int q = 0; q < 4; ++q) g[q] = STEP_LOAD(0, bw + q * H) + STEP_LOAD(0, bw + G4 + q * H);
    const size_t row = ((size_t)d * (size_t)N + (size_t)b) * (size_t)H;
    const size_t blk = (size_t)d * (size_t)HV + (size_t)(j / VW); // the item's block of units
    lstmStepSum(x + (size_t)b * (size_t)I, wt + blk * (size_t)I * (size_t)(4 * VW), I, g);
    lstmStepSum(h0 + row, rt + blk * (size_t)H * (size_t)(4 * VW), H, g);
    float ai[VW], ao[VW], af[VW], ac[VW];
    STEP_STORE(g[0], 0, ai);
    STEP_STORE(g[1], 0, ao);
    STEP_STORE(g[2], 0, af);
    STEP_STORE(g[3], 0, ac);
    const bool hasP = (m[5] & 2) != 0;
    __global const float* pp = peep + (size_t)d * (size_t)(3 * H) + j;
    for (int l = 0; l < VW; ++l) {
        const size_t o = row + (size_t)(j + l);
        const float cp = c0[o];
        const float i_ = recAct(m, p, d, 0, ai[l] + (hasP ? pp[l] * cp : 0.0f));
        float f_ = recAct(m, p, d, 0, af[l] + (hasP ? pp[2 * H + l] * cp : 0.0f));
        if (m[5] & 4) f_ = 1.0f - i_;
        const float c_ = recAct(m, p, d, 1, ac[l]);
        const float cn = f_ * cp + i_ * c_;
        const float o_ = recAct(m, p, d, 0, ao[l] + (hasP ? pp[H + l] * cn : 0.0f));
        const float hn = o_ * recOut(m, p, d, cn);
        y[o] = hn;
        yh[o] = hn;
        yc[o] = cn;
    }
}
