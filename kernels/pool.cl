// pool.cl: MaxPool and AveragePool of NC[D]HW data with strides, pads,
// dilations and count_include_pad, up to 3 spatial axes: 2-D pooling is the
// D = 1 case and 1-D pooling the D = H = 1 case.
//
// Build options: -DPOOL_MAX selects max pooling, -DPOOL_LP LpPool (the
// p-norm of the window, p = m[22], padding counting as zeros; default
// average);
// -DPOOL_INDICES (with POOL_MAX) adds the Indices output: the flat index
// into x of the maximum (its first occurrence in window order), row-major
// within the plane, or column-major when col_major is 1 (storage_order).
// -DT is the element type of max pooling (default float; with -DIS_INT,
// char and uchar give the 8-bit integer forms); average and Lp pooling
// are f32. -DT=double -DA=double hold and compute f64 in every mode
// (cl_khr_fp64, which the GPU device checks first; A is the math type,
// default float). -DHALF (T float) reads and writes f16 storage,
// computing in float (half.clh).
//
// Work-size contract: 1-D NDRange with global size >= n = N*C*OD*OH*OW;
// any local size. Work item i computes output element i; items with i >= n
// do nothing. The int array m holds D, H, W, OD, OH, OW, KD, KH, KW, stride
// d/h/w, pad front/top/left, dilation d/h/w, count_include_pad, and the
// padded D, H and W (the input plus both pads: the average's divisor never
// counts past them).

#include "half.clh"

#ifndef T
#define T float
#endif
#ifndef A
#define A float
#endif
// TS is the storage type of x and out: T, or half with -DHALF.
#ifdef HALF
#define TS FT
#else
#define TS T
#endif

__kernel void pool(__global const TS* x, __global TS* out,
#ifdef POOL_INDICES
                   __global long* indices, const int col_major,
#endif
                   const ulong n, __global const int* m)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int D = m[0], H = m[1], W = m[2], OD = m[3], OH = m[4], OW = m[5];
    const int KD = m[6], KH = m[7], KW = m[8], SD = m[9], SH = m[10], SW = m[11];
    const int PD = m[12], PH = m[13], PW = m[14], DD = m[15], DH = m[16], DW = m[17];
    ulong r = gid;
    const int ow = (int)(r % (ulong)OW); r /= (ulong)OW;
    const int oh = (int)(r % (ulong)OH); r /= (ulong)OH;
    const int od = (int)(r % (ulong)OD);
    const long nc = (long)(r / (ulong)OD);
    const long plane = (long)D * H * W;
    __global const TS* xp = x + nc * plane;
#if defined(POOL_MAX) && (defined(POOL_INDICES) || defined(IS_INT))
    // The first maximum in window order (a NaN wins over numbers), with
    // its position.
    T acc = (T)0;
    int have = 0;
    long at = 0;
#elif defined(POOL_MAX)
    A acc = -INFINITY;
#elif defined(POOL_LP)
    const A p = (A)m[22];
    A acc = 0;
#else
    // The divisor: the taps inside the input, or inside the padded input
    // (count_include_pad); both sets are products of per-axis ranges.
    int in_d = 0, in_h = 0, in_w = 0, pad_d = 0, pad_h = 0, pad_w = 0;
    for (int k = 0; k < KD; ++k) {
        const int i = od * SD - PD + k * DD;
        in_d += i >= 0 && i < D;
        pad_d += i + PD < m[19];
    }
    for (int k = 0; k < KH; ++k) {
        const int i = oh * SH - PH + k * DH;
        in_h += i >= 0 && i < H;
        pad_h += i + PH < m[20];
    }
    for (int k = 0; k < KW; ++k) {
        const int i = ow * SW - PW + k * DW;
        in_w += i >= 0 && i < W;
        pad_w += i + PW < m[21];
    }
    A acc = 0;
#endif
    for (int kd = 0; kd < KD; ++kd) {
        const int id = od * SD - PD + kd * DD;
        if (id < 0 || id >= D) continue;
        for (int kh = 0; kh < KH; ++kh) {
            const int ih = oh * SH - PH + kh * DH;
            if (ih < 0 || ih >= H) continue;
            for (int kw = 0; kw < KW; ++kw) {
                const int iw = ow * SW - PW + kw * DW;
                if (iw < 0 || iw >= W) continue;
                const long off = ((long)id * H + ih) * W + iw;
                const T v = LD(xp, off);
#if defined(POOL_MAX) && (defined(POOL_INDICES) || defined(IS_INT))
#ifdef IS_INT
                const int take = !have || v > acc;
#else
                const int take = !have || v > acc || (isnan(v) && !isnan(acc));
#endif
                if (take) {
                    acc = v;
                    at = off;
                    have = 1;
                }
#elif defined(POOL_MAX)
                acc = (isnan(v) || isnan(acc)) ? NAN : fmax(acc, v);
#elif defined(POOL_LP)
                acc += pow(fabs((A)v), p);
#else
                acc += v;
#endif
            }
        }
    }
#if defined(POOL_MAX) && (defined(POOL_INDICES) || defined(IS_INT))
#ifndef IS_INT
    if (!have) acc = -INFINITY;
#endif
    ST(out, gid, acc);
#ifdef POOL_INDICES
    if (col_major) {
        // Column-major within the plane: the first spatial axis varies fastest.
        const long id = at / ((long)H * W), ih = (at / W) % H, iw = at % W;
        at = id + ih * D + iw * (long)D * H;
    }
    indices[gid] = nc * plane + at;
#endif
#elif defined(POOL_MAX)
    ST(out, gid, acc);
#elif defined(POOL_LP)
    ST(out, gid, pow(acc, (A)1 / p));
#else
    ST(out, gid, acc / (A)(m[18] ? pad_d * pad_h * pad_w : in_d * in_h * in_w));
#endif
}
