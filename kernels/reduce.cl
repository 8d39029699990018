// reduce.cl: ReduceSum/Mean/Max/Min/Prod/SumSquare/L1/L2/LogSumExp
// (and Global pools) over any set of axes of an f32 (or f64) tensor,
// accumulating in the element type, or of an integer tensor.
//
// Build options: -DREDUCE_OP=<SUM|MEAN|MAX|MIN|PROD|SUM_SQUARE|L1|L2|
// LOG_SUM_EXP> selects the reduction; -DT=<float|double> is the element
// type (default float; double needs cl_khr_fp64, which the GPU device
// checks before it asks for it). -DHALF (with T=float) reads and writes
// f16 storage, accumulating in float (half.clh). -DIS_INT with T one of
// char, uchar, short, ushort, int, uint, long, ulong reduces integers as
// the CPU reference does: MAX and MIN in T, the others in 64 bits that
// wrap (the sums and products modulo 2^64, stored modulo 2^bits of T, as
// numpy), MEAN the 64-bit sum divided by the count truncating toward zero,
// L1 the sum of magnitudes, L2 the floor of the square root of the sum of
// squares (LOG_SUM_EXP has no integer form: the GPU runs it in f64).
//
// Work-size contract: 1-D NDRange with global size >= n (output elements);
// any local size. Items with i >= n do nothing. The int array m holds
// m[0] = nk kept axes, nk kept dims, nk kept input strides, then nr reduced
// axes, nr reduced dims, nr reduced input strides, then the reduced count.
// Work item i reduces its count input elements serially. The host merges
// adjacent reduced axes (and adjacent kept ones), so a reduction over
// contiguous axes is one strided walk.
//
// reduce_wg (entries reduce_wg_<op>) takes the same arguments with one work
// group per output: build option WG (default 64), the group size. Work-size
// contract: 1-D NDRange, local size exactly WG (the kernel requires it),
// global size n * WG; group g folds the elements k = l, l + WG, ... of
// output g in item l, then the partial results in a tree in local memory,
// and item 0 stores. No item returns early (the tree has barriers).

#include "half.clh"

#ifndef T
#define T float
#endif
// TS is the storage type of in and out: T, or half with -DHALF.
#ifdef HALF
#define TS FT
#else
#define TS T
#endif

#ifndef REDUCE_OP
#error "reduce.cl: build with -DREDUCE_OP=<SUM|MEAN|MAX|MIN|PROD|SUM_SQUARE|L1|L2|LOG_SUM_EXP>"
#endif
#define SUM 0
#define MEAN 1
#define MAX 2
#define MIN 3
#define PROD 4
#define SUM_SQUARE 5
#define L1 6
#define L2 7
#define LOG_SUM_EXP 8

#ifdef IS_INT
#if REDUCE_OP == LOG_SUM_EXP
#error "reduce.cl: LOG_SUM_EXP has no integer form"
#endif
// T_MIN and T_MAX are the range of the integer type T.
#define T_MIN ((T)-1 > (T)0 ? (T)0 : (T)((ulong)1 << (8 * sizeof(T) - 1)))
#define T_MAX ((T)~(ulong)T_MIN)
#if REDUCE_OP == MAX
#define ACC T
#define INIT T_MIN
#define MERGE(a, b) max((a), (b))
#define STEP(acc, v) ((acc) = max((acc), (v)))
#elif REDUCE_OP == MIN
#define ACC T
#define INIT T_MAX
#define MERGE(a, b) min((a), (b))
#define STEP(acc, v) ((acc) = min((acc), (v)))
#else
// Unsigned 64-bit accumulation wraps (signed overflow is undefined in C).
#define ACC ulong
#if REDUCE_OP == PROD
#define INIT ((ulong)1)
#define MERGE(a, b) ((a) * (b))
#define STEP(acc, v) ((acc) *= (ulong)(v))
#elif REDUCE_OP == SUM_SQUARE || REDUCE_OP == L2
#define INIT ((ulong)0)
#define MERGE(a, b) ((a) + (b))
#define STEP(acc, v) do { const ulong v_ = (ulong)(v); (acc) += v_ * v_; } while (0)
#elif REDUCE_OP == L1
#define INIT ((ulong)0)
#define MERGE(a, b) ((a) + (b))
// |v| as v times its sign (abs() becomes llvm.abs, which oclgrind cannot run).
#define STEP(acc, v) do { const T v_ = (v); (acc) += (ulong)v_ * (ulong)(long)((v_ > 0) - (v_ < 0)); } while (0)
#else
#define INIT ((ulong)0)
#define MERGE(a, b) ((a) + (b))
#define STEP(acc, v) ((acc) += (ulong)(v))
#endif
#endif
#else
#define ACC T
// INIT is the identity of the reduction, STEP(acc, v) folds one element
// into acc and MERGE(a, b) combines two partial results (NaN propagates
// through MAX and MIN, as in the ONNX reference).
#if REDUCE_OP == MAX || REDUCE_OP == LOG_SUM_EXP
#define INIT (-INFINITY)
#define MERGE(a, b) ((isnan(a) || isnan(b)) ? NAN : fmax((a), (b)))
#define STEP(acc, v) ((acc) = MERGE((acc), (v)))
#elif REDUCE_OP == MIN
#define INIT INFINITY
#define MERGE(a, b) ((isnan(a) || isnan(b)) ? NAN : fmin((a), (b)))
#define STEP(acc, v) ((acc) = MERGE((acc), (v)))
#elif REDUCE_OP == PROD
#define INIT ((T)1)
#define MERGE(a, b) ((a) * (b))
#define STEP(acc, v) ((acc) *= (v))
#elif REDUCE_OP == SUM_SQUARE || REDUCE_OP == L2
#define INIT ((T)0)
#define MERGE(a, b) ((a) + (b))
#define STEP(acc, v) do { const T v_ = (v); (acc) += v_ * v_; } while (0)
#elif REDUCE_OP == L1
#define INIT ((T)0)
#define MERGE(a, b) ((a) + (b))
#define STEP(acc, v) ((acc) += fabs(v))
#else
#define INIT ((T)0)
#define MERGE(a, b) ((a) + (b))
#define STEP(acc, v) ((acc) += (v))
#endif
#endif

// FINISH(acc, count) turns the folded acc of count elements into the
// result: the mean, the square root (L2); the identity otherwise.
#ifdef IS_INT
// isqrt is floor(sqrt(v)) of the sum of squares read as an int64 (0 for a
// negative one), exactly: a float estimate corrected by integer steps.
static ulong isqrt(const ulong u)
{
    if ((long)u <= 0) return 0;
    ulong r = (ulong)sqrt((float)u);
    while (r > 0 && (r > 0xffffffffUL || r * r > u)) --r;
    while (r < 0xffffffffUL && (r + 1) * (r + 1) <= u) ++r;
    return r;
}
#if REDUCE_OP == MEAN
#define FINISH(acc, count) ((acc) = (count) > 0 ? (ulong)((long)(acc) / (count)) : 0)
#elif REDUCE_OP == L2
#define FINISH(acc, count) ((acc) = isqrt(acc))
#else
#define FINISH(acc, count)
#endif
#define STORE(p, i, v) ((p)[i] = (T)(v))
#else
#if REDUCE_OP == MEAN
#define FINISH(acc, count) ((acc) = (count) > 0 ? (acc) / (T)(count) : NAN)
#elif REDUCE_OP == L2
#define FINISH(acc, count) ((acc) = sqrt(acc))
#else
#define FINISH(acc, count)
#endif
#define STORE(p, i, v) ST(p, i, v)
#endif

#ifndef WG
#define WG 64
#endif

// kept_offset is the input offset of the first element reduced into
// output i.
static long kept_offset(ulong i, __global const int* m)
{
    const int nk = m[0];
    long base = 0;
    for (int d = nk - 1; d >= 0; --d) {
        const long dim = m[1 + d];
        base += (long)(i % dim) * m[1 + nk + d];
        i /= dim;
    }
    return base;
}

// tree folds the WG partial results of part into part[0] with MERGE.
static void tree(__local ACC* part, const int l)
{
    for (int s = WG / 2; s > 0; s /= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < s) part[l] = MERGE(part[l], part[l + s]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
}

// reduce_offset is the input offset of the k-th reduced element.
static long reduce_offset(long base, long k, __global const int* red, const int nr)
{
    long off = base;
    for (int d = nr - 1; d >= 0; --d) {
        const long dim = red[1 + d];
        off += (k % dim) * red[1 + nr + d];
        k /= dim;
    }
    return off;
}

__kernel void reduce(__global const TS* in, __global TS* out, const ulong n, __global const int* m)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int nk = m[0];
    const long base = kept_offset(gid, m);
    __global const int* red = m + 1 + 2 * nk;
    const int nr = red[0];
    const long count = red[1 + 2 * nr];
    ACC acc = INIT;
    if (nr == 1) {
        // One (collapsed) reduced axis: a strided walk with four partial
        // results, so the adds do not wait on each other.
        const long st = red[2];
        __global const TS* p = in + base;
        ACC a1 = INIT, a2 = INIT, a3 = INIT;
        long k = 0;
        for (; k + 4 <= count; k += 4) {
            STEP(acc, LD(p, k * st));
            STEP(a1, LD(p, (k + 1) * st));
            STEP(a2, LD(p, (k + 2) * st));
            STEP(a3, LD(p, (k + 3) * st));
        }
        for (; k < count; ++k) STEP(acc, LD(p, k * st));
        acc = MERGE(MERGE(acc, a1), MERGE(a2, a3));
    } else {
        for (long k = 0; k < count; ++k) STEP(acc, LD(in, reduce_offset(base, k, red, nr)));
    }
    FINISH(acc, count);
#if REDUCE_OP == LOG_SUM_EXP
    // Second pass, shifted by the maximum so that exp cannot overflow.
    if (isfinite(acc)) {
        const T mx = acc;
        T s = 0;
        for (long k = 0; k < count; ++k) {
            s += exp(LD(in, reduce_offset(base, k, red, nr)) - mx);
        }
        acc = mx + log(s);
    }
#endif
    STORE(out, gid, acc);
}

__attribute__((reqd_work_group_size(WG, 1, 1)))
__kernel void reduce_wg(__global const TS* in, __global TS* out, const ulong n, __global const int* m)
{
    __local ACC part[WG];
    const ulong g = get_group_id(0);
    const int l = (int)get_local_id(0);
    const int live = g < n;
    const int nk = m[0];
    __global const int* red = m + 1 + 2 * nk;
    const int nr = red[0];
    const long count = live ? red[1 + 2 * nr] : 0;
    const long base = live ? kept_offset(g, m) : 0;
    ACC acc = INIT;
    for (long k = l; k < count; k += WG) STEP(acc, LD(in, reduce_offset(base, k, red, nr)));
    part[l] = acc;
    tree(part, l);
    acc = part[0];
#if REDUCE_OP == LOG_SUM_EXP
    // Second pass, shifted by the maximum so that exp cannot overflow.
    const T mx = acc;
    T s = 0;
    if (isfinite(mx)) {
        for (long k = l; k < count; k += WG) s += exp(LD(in, reduce_offset(base, k, red, nr)) - mx);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    part[l] = s;
    for (int h = WG / 2; h > 0; h /= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < h) part[l] += part[l + h];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (isfinite(mx)) acc = mx + log(part[0]);
#else
    FINISH(acc, count);
#endif
    if (live && l == 0) STORE(out, g, acc);
}
