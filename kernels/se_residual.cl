// se_residual.cl: y = x + x*gate, a squeeze-excitation gate applied with
// its residual (PP-OCRv4 det's RSE blocks: gate [N,C,1,1] broadcast over
// x [N,C,H,W]), in one pass over x instead of a Mul and an Add. Declared
// by the FuseSEResidual entry of fusion.KernelFusions; the GPU launches it
// through the generic KernelFusion lowering.
//
// Work-size contract (graph.LaunchElementwise): 1-D NDRange with global
// size >= n; any local size. Work item i computes output element i; items
// with i >= n do nothing. Arguments: the inputs x and gate, the output y,
// n = the number of elements of y, the int array m (m[0] = rank r, r dims
// of y, then r element strides of x and r of gate, 0 on broadcast axes)
// and the float params p (unused).

__kernel void se_residual(__global const float* x, __global const float* gate, __global float* y,
                          const ulong n, __global const int* m, __global const float* p)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int rank = m[0];
    long ix = 0, ig = 0;
    if (n <= 0xffffffffUL) {
        // 32-bit index arithmetic: 64-bit division is several times slower.
        uint r = (uint)gid;
        for (int d = rank - 1; d >= 0; --d) {
            const uint dim = (uint)m[1 + d];
            const uint c = r % dim;
            r /= dim;
            ix += (long)c * m[1 + rank + d];
            ig += (long)c * m[1 + 2 * rank + d];
        }
    } else {
        ulong r = gid;
        for (int d = rank - 1; d >= 0; --d) {
            const long dim = m[1 + d];
            const long c = (long)(r % dim);
            r /= dim;
            ix += c * m[1 + rank + d];
            ig += c * m[1 + 2 * rank + d];
        }
    }
    const float v = x[ix];
    y[gid] = v + v * gate[ig];
}
