// resize.cl: N-D Resize of f32 data by per-axis tables the host computes at
// compile time (nearest: one source index; linear: two indices and a
// weight), so every coordinate transformation mode costs the same here.
//
// Work-size contract: 1-D NDRange with global size >= n (output elements);
// any local size. Items with i >= n do nothing. The int array m holds
// m[0] = rank r (at most 8), r output dims, r input strides, r index-table
// offsets into m and r weight-table offsets into w. For output coordinate c
// of axis d the source indices i0, i1 are m[ioff_d + 2c], m[ioff_d + 2c + 1]
// and the weight of i1 is w[woff_d + c] (0 for nearest).

__kernel void resize(__global const float* in, __global float* out, const ulong n,
                     __global const int* m, __global const float* w)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int rank = m[0];
    int i0[8], i1[8];
    float wt[8];
    ulong r = gid;
    for (int d = rank - 1; d >= 0; --d) {
        const ulong dim = (ulong)m[1 + d];
        const int c = (int)(r % dim);
        r /= dim;
        const int off = m[1 + 2 * rank + d];
        i0[d] = m[off + 2 * c];
        i1[d] = m[off + 2 * c + 1];
        wt[d] = w[m[1 + 3 * rank + d] + c];
    }
    // Only axes with a non-zero weight have a second tap: enumerate the
    // corners over those (in the order of the full 2^rank enumeration, so
    // the sum is the same), 1 load for nearest, 4 for bilinear.
    int ad[8];
    int k = 0;
    long base = 0;
    for (int d = 0; d < rank; ++d) {
        base += (long)i0[d] * m[1 + rank + d];
        if (wt[d] != 0.0f) ad[k++] = d;
    }
    float acc = 0.0f;
    for (int corner = 0; corner < (1 << k); ++corner) {
        float f = 1.0f;
        long o = base;
        for (int j = 0; j < k; ++j) {
            const int d = ad[j];
            if ((corner >> j) & 1) {
                f *= wt[d];
                o += (long)(i1[d] - i0[d]) * m[1 + rank + d];
            } else {
                f *= 1.0f - wt[d];
            }
        }
        if (k == 0 || f != 0.0f) acc += f * in[o];
    }
    out[gid] = acc;
}
