// activation_hardmax.cl: ONNX Hardmax along one axis of f32 data: 1 at the first
// maximum of every fibre, 0 elsewhere (a NaN is never the maximum, as in
// the CPU device). Build option: -DT=double holds f64 (cl_khr_fp64, which
// the GPU device checks first); default float.
//
// Work-size contract: 1-D NDRange with global size >= n = outer * inner
// (the fibres); any local size. Work item i scans fibre i (len elements
// with stride inner, starting at (i / inner) * len * inner + i % inner) and
// writes all of its len outputs; items with i >= n do nothing. len >= 1.

#ifndef T
#define T float
#endif

__kernel void hardmax(__global const T* in, __global T* out, const ulong n, const ulong len,
                      const ulong inner)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const ulong base = (gid / inner) * len * inner + gid % inner;
    ulong best = 0;
    T mx = in[base];
    for (ulong j = 1; j < len; ++j) {
        const T v = in[base + j * inner];
        if (v > mx) {
            mx = v;
            best = j;
        }
    }
    for (ulong j = 0; j < len; ++j) out[base + j * inner] = j == best ? (T)1 : (T)0;
}
