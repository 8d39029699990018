// kernelfusion_se_residual.cl: y = x + x*gate, a squeeze-excitation gate applied with
// its residual (PP-OCRv4 det's RSE blocks: gate [N,C,1,1] broadcast over
// x [N,C,H,W]), in one pass over x instead of a Mul and an Add. Declared
// by the FuseSEResidual entry of fusion.KernelFusions; the GPU launches it
// through the generic KernelFusion lowering.
//
// Work-size contract (graph.LaunchElementwise): 1-D NDRange with global
// size >= ceil(n / EPT); any local size. Work item i computes output
// elements i*EPT.. (build option EPT, default 1); items with i*EPT >= n do
// nothing. With -DROWS: 2-D NDRange with global size >= (ceil(D / EPT),
// n / D), D the innermost dim of m; item (i, r) computes elements i*EPT..
// of row r; items outside do nothing. Arguments: the inputs x and gate, the output y,
// n = the number of elements of y, the int array m (m[0] = rank r, r dims
// of y, then r element strides of x and r of gate, 0 on broadcast axes)
// and the float params p (unused). Built with -DHALF (f16 activations)
// x, gate and y hold f16 (half.clh); p stays f32 and the math float.

#include "half.clh"
#include "nd_index.clh"

#ifndef EPT
#define EPT 1
#endif

// se_run computes the cnt outputs from flat index i0 on, with x from o.x
// stepping by sx and the gate from o.y stepping by sg (a run inside one
// row): a fixed-length loop over a contiguous x and one gate value, which
// the compiler vectorizes, or a strided loop.
static inline void se_run(__global const FT* x, __global const FT* gate, __global FT* y, const long2 o,
                          const ulong i0, const int sx, const int sg, const int cnt)
{
    if (cnt == EPT && sx == 1 && sg == 0) {
        const float g = LD(gate, o.y);
        for (int e = 0; e < EPT; ++e) {
            const float v = LD(x, o.x + e);
            ST(y, i0 + e, v + v * g);
        }
        return;
    }
    for (int e = 0; e < cnt; ++e) {
        const float v = LD(x, o.x + (long)e * sx);
        ST(y, i0 + e, v + v * LD(gate, o.y + (long)e * sg));
    }
}

__kernel void se_residual(__global const FT* x, __global const FT* gate, __global FT* y,
                          const ulong n, __global const int* m, __global const float* p)
{
    const int rank = m[0];
    const int sx = m[2 * rank], sg = m[3 * rank]; // the innermost axis' strides
#ifdef ROWS
    const uint inner = (uint)m[rank];
    const uint c0 = (uint)get_global_id(0) * EPT;
    const ulong r = get_global_id(1);
    if (c0 >= inner || r * inner >= n) return;
    const long2 o = nd_row2(r, m) + (long2)((long)c0 * sx, (long)c0 * sg);
    se_run(x, gate, y, o, r * inner + c0, sx, sg, (int)min((uint)EPT, inner - c0));
#else
    const ulong i0 = (ulong)get_global_id(0) * EPT;
    if (i0 >= n) return;
    long2 o = nd_offsets2(i0, n, m); // x at o.x, gate at o.y
    uint c = nd_column(i0, m);
    if (EPT == 1 || (i0 + EPT <= n && c + EPT <= (uint)m[rank])) {
        se_run(x, gate, y, o, i0, sx, sg, EPT);
        return;
    }
    const int cnt = (int)min((ulong)EPT, n - i0);
    for (int e = 0; e < cnt; ++e) {
        if (e > 0) o = nd_next2(o, &c, i0 + e, n, m);
        const float v = LD(x, o.x);
        ST(y, i0 + e, v + v * LD(gate, o.y));
    }
#endif
}
