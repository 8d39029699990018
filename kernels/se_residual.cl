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
// and the float params p (unused). Built with -DHALF (f16 activations)
// x, gate and y hold f16 (half.clh); p stays f32 and the math float.

#include "half.clh"
#include "nd_index.clh"

__kernel void se_residual(__global const FT* x, __global const FT* gate, __global FT* y,
                          const ulong n, __global const int* m, __global const float* p)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const long2 o = nd_offsets2(gid, n, m); // x at o.x, gate at o.y
    const float v = LD(x, o.x);
    ST(y, gid, v + v * LD(gate, o.y));
}
