// resize.cl: N-D Resize of f32 data by per-axis tap tables the host
// computes at compile time (nearest: one source index of weight 1; linear:
// two; cubic: four), so every coordinate transformation mode costs the same
// here. The interpolation is separable: an output element is the sum over
// every combination of one tap per axis of the product of the tap weights
// times the input element at the taps' indices.
//
// Work-size contract: 1-D NDRange with global size >= n (output elements);
// any local size. Items with i >= n do nothing. The int array m holds
// m[0] = rank r (at most 8), r output dims, r input strides, r tap counts,
// r index-table offsets into m and r weight-table offsets into w. For
// output coordinate c of axis d with T taps, tap t reads input index
// m[ioff_d + T*c + t] with weight w[woff_d + T*c + t]. A first index of -1
// marks c as outside the crop (tf_crop_and_resize): the output element is
// then extrapolation.

__kernel void resize(__global const float* in, __global float* out, const ulong n,
                     __global const int* m, __global const float* w, const float extrapolation)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int rank = m[0];
    // Axes with one tap add a fixed offset and factor; the others (at most
    // 8, with at most 4 taps each) are enumerated below, their taps'
    // offsets and weights loaded once into private memory.
    long base = 0;
    float wbase = 1.0f;
    long toff[8][4];
    float twt[8][4];
    int ntaps[8];
    int na = 0, total = 1;
    ulong r = gid;
    for (int d = rank - 1; d >= 0; --d) {
        const ulong dim = (ulong)m[1 + d];
        const int c = (int)(r % dim);
        r /= dim;
        const int taps = m[1 + 2 * rank + d];
        __global const int* ix = m + m[1 + 3 * rank + d] + taps * c;
        __global const float* wx = w + m[1 + 4 * rank + d] + taps * c;
        if (ix[0] < 0) {
            out[gid] = extrapolation;
            return;
        }
        const long stride = m[1 + rank + d];
        if (taps == 1) {
            base += ix[0] * stride;
            wbase *= wx[0];
            continue;
        }
        for (int t = 0; t < taps; ++t) {
            toff[na][t] = ix[t] * stride;
            twt[na][t] = wx[t];
        }
        ntaps[na++] = taps;
        total *= taps;
    }
    float acc = 0.0f;
    int digit[8];
    for (int j = 0; j < na; ++j) digit[j] = 0;
    for (int k = 0; k < total; ++k) {
        float f = wbase;
        long o = base;
        for (int j = 0; j < na; ++j) {
            f *= twt[j][digit[j]];
            o += toff[j][digit[j]];
        }
        if (f != 0.0f) acc += f * in[o];
        for (int j = 0; j < na; ++j) {
            if (++digit[j] < ntaps[j]) break;
            digit[j] = 0;
        }
    }
    out[gid] = acc;
}
