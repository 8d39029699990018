// eltwise_binary.cl: out = BINARY_OP(a, b) with numpy broadcasting, for
// arithmetic, comparison and logic ops.
//
// Build options: -DBINARY_OP=<ADD|SUB|MUL|DIV|POW|MOD|MAX|MIN|PRELU|EQUAL|
// LESS|GREATER|LESS_EQUAL|GREATER_EQUAL|AND|OR|XOR|SHL|SHR|BIT_AND|BIT_OR|
// BIT_XOR> selects the operation
// (the catalogue entry supplies it); -DT=<float|double|int|long|uchar|...> is
// the input type (default float; double needs cl_khr_fp64, which the GPU
// device checks before it asks for it) and -DTO the output type (default T;
// uchar for comparisons); -DIS_FLOAT selects the NaN-propagating float
// forms. -DHALF_IN reads f16 inputs and -DHALF_OUT writes an f16 output
// (vload_half/vstore_half_rte, computing in T=float: no cl_khr_fp16 needed).
// -DINT_FMOD makes integer MOD truncate (the sign of the dividend, ONNX
// fmod=1) instead of flooring; an integer MOD by zero gives 0.
//
// Work-size contract: 1-D NDRange with global size >= ceil(n / EPT); any
// local size. Work item i computes output elements i*EPT.. (build option
// EPT, default 1); items with i*EPT >= n do nothing. With -DROWS: 2-D
// NDRange with global size >= (ceil(D / EPT), n / D), D the innermost
// dim of m; item (i, r) computes elements i*EPT.. of row r (no index
// division for rank 2); items outside do nothing. The
// int array m describes the (collapsed) broadcast: m[0] = rank r, then r
// output dims, r element strides of a and r of b (0 on broadcast axes).

#include "nd_index.clh"

#ifndef BINARY_OP
#error "eltwise_binary.cl: build with -DBINARY_OP=<ADD|SUB|...>"
#endif
#ifndef T
#define T float
#define IS_FLOAT 1
#endif
#ifndef TO
#define TO T
#endif
#ifdef HALF_IN
#define TIN half
#define LOAD(p, i) vload_half((i), (p))
#else
#define TIN T
#define LOAD(p, i) ((p)[i])
#endif
#ifdef HALF_OUT
#define TOUT half
#define STORE(i, v) vstore_half_rte((float)(v), (i), out)
#else
#define TOUT TO
#define STORE(i, v) (out[i] = (TO)(v))
#endif

#include "eltwise_ops.clh"

#ifndef EPT
#define EPT 1
#endif

// eltwise_run computes the cnt outputs from flat index i0 on, whose
// operands start at o and step by sa and sb (a run inside one row):
// fixed-length loops over contiguous (stride 1) or broadcast (stride 0)
// operands, which the compiler vectorizes, and a strided loop otherwise.
static inline void eltwise_run(__global const TIN* a, __global const TIN* b, __global TOUT* out, const long2 o,
                               const ulong i0, const int sa, const int sb, const int cnt)
{
    if (cnt == EPT && sa == 1 && sb == 0) {
        const T y = LOAD(b, o.y);
        for (int e = 0; e < EPT; ++e) STORE(i0 + e, BINARY_OP((T)LOAD(a, o.x + e), y));
    } else if (cnt == EPT && sa == 0 && sb == 1) {
        const T x = LOAD(a, o.x);
        for (int e = 0; e < EPT; ++e) STORE(i0 + e, BINARY_OP(x, (T)LOAD(b, o.y + e)));
    } else if (cnt == EPT && sa == 1 && sb == 1) {
        for (int e = 0; e < EPT; ++e) STORE(i0 + e, BINARY_OP((T)LOAD(a, o.x + e), (T)LOAD(b, o.y + e)));
    } else {
        for (int e = 0; e < cnt; ++e) STORE(i0 + e, BINARY_OP((T)LOAD(a, o.x + (long)e * sa), (T)LOAD(b, o.y + (long)e * sb)));
    }
}

__kernel void eltwise_binary(__global const TIN* a, __global const TIN* b, __global TOUT* out,
                             const ulong n, __global const int* m)
{
    const int rank = m[0];
    const int sa = m[2 * rank], sb = m[3 * rank]; // the innermost axis' strides
#ifdef ROWS
    const uint inner = (uint)m[rank];
    const uint c0 = (uint)get_global_id(0) * EPT;
    const ulong r = get_global_id(1);
    if (c0 >= inner || r * inner >= n) return;
    const long2 o = nd_row2(r, m) + (long2)((long)c0 * sa, (long)c0 * sb);
    eltwise_run(a, b, out, o, r * inner + c0, sa, sb, (int)min((uint)EPT, inner - c0));
#else
    const ulong i0 = (ulong)get_global_id(0) * EPT;
    if (i0 >= n) return;
    // Same shapes, or one side a scalar, is rank 1: no index division.
    long2 o = nd_offsets2(i0, n, m);
    uint c = nd_column(i0, m);
    if (EPT == 1 || (i0 + EPT <= n && c + EPT <= (uint)m[rank])) {
        eltwise_run(a, b, out, o, i0, sa, sb, EPT);
        return;
    }
    const int cnt = (int)min((ulong)EPT, n - i0);
    for (int e = 0; e < cnt; ++e) {
        if (e > 0) o = nd_next2(o, &c, i0 + e, n, m);
        STORE(i0 + e, BINARY_OP((T)LOAD(a, o.x), (T)LOAD(b, o.y)));
    }
#endif
}
