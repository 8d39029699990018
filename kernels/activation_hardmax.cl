// activation_hardmax.cl: ONNX Hardmax along one axis of f32 data: 1 at the first
// maximum of every fibre, 0 elsewhere (a NaN is never the maximum, as in
// the CPU device).
//
// Work-size contract: 1-D NDRange with global size >= n = outer * inner
// (the fibres); any local size. Work item i scans fibre i (len elements
// with stride inner, starting at (i / inner) * len * inner + i % inner) and
// writes all of its len outputs; items with i >= n do nothing. len >= 1.

__kernel void hardmax(__global const float* in, __global float* out, const ulong n, const ulong len,
                      const ulong inner)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const ulong base = (gid / inner) * len * inner + gid % inner;
    ulong best = 0;
    float mx = in[base];
    for (ulong j = 1; j < len; ++j) {
        const float v = in[base + j * inner];
        if (v > mx) {
            mx = v;
            best = j;
        }
    }
    for (ulong j = 0; j < len; ++j) out[base + j * inner] = j == best ? 1.0f : 0.0f;
}
