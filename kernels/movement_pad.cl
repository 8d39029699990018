// movement_pad.cl: ONNX Pad in constant, reflect, edge and wrap modes.
//
// Build options: -DT=<float|int|long|uchar> is the element type.
//
// Work-size contract: 1-D NDRange with global size >= n (output elements);
// any local size. Items with i >= n do nothing. The int array m holds
// m[0] = rank r, r output dims, r input dims, r input strides, r leading
// pads (may be negative, cropping). mode: 0 constant, 1 reflect, 2 edge,
// 3 wrap; value is the constant.

#ifndef T
#define T float
#endif

__kernel void pad(__global const T* in, __global T* out, const ulong n, __global const int* m,
                  const int mode, const float value)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int rank = m[0];
    long off = 0;
    ulong r = gid;
    for (int d = rank - 1; d >= 0; --d) {
        const long dim = m[1 + d];
        const long c = (long)(r % dim);
        r /= dim;
        const long in_dim = m[1 + rank + d];
        long s = c - m[1 + 3 * rank + d];
        if (s < 0 || s >= in_dim) {
            if (mode == 0 || in_dim == 0) {
                out[gid] = (T)value;
                return;
            } else if (mode == 1) {
                const long period = in_dim > 1 ? 2 * (in_dim - 1) : 1;
                s = s % period;
                if (s < 0) s += period;
                if (s >= in_dim) s = period - s;
            } else if (mode == 2) {
                s = s < 0 ? 0 : in_dim - 1;
            } else {
                s = s % in_dim;
                if (s < 0) s += in_dim;
            }
        }
        off += s * m[1 + 2 * rank + d];
    }
    out[gid] = in[off];
}
