// quant.cl: QuantizeLinear, DequantizeLinear and the range reduction and
// parameters of DynamicQuantizeLinear, bit for bit the integer semantics
// of the CPU reference (cpu_fallback/ref/ops_quant.go):
//
//   quantize:   q = clamp(rne(x / scale) + zero_point, QMIN, QMAX), the
//               quotient in f32 (a NaN quotient gives the zero point);
//   dequantize: y = (float)(q - zero_point) * scale, stored in the
//               scale's type.
//
// Build options: -DQT (char, uchar, short, ushort: the quantized storage,
// 4-bit types held one per byte), -DQMIN and -DQMAX (its range); the data
// -DX_INT (quantize an i32 input), -DX_HALF or -DX_BF16 (f16, bf16
// storage; f32 otherwise); the scale -DS_HALF or -DS_BF16 (its storage,
// which is also dequantize's output type); -DHAS_ZP (a zero point is
// bound); -DDIV_F64 (the quotient in double, correctly rounded to float,
// on devices whose float division is not); -DDYNAMIC (a scale of 0
// quantizes to 0: DynamicQuantizeLinear of all-zero data).
//
// Geometry table m: m[0] = mode (0: one scale, 1: per axis, 2: blocked),
// m[1] = elements after the axis, m[2] = the axis' size, m[3] = the block
// size, m[4] = blocks on the axis (ceil(m[2] / m[3])).
//
// Work-size contract of quantize_linear and dequantize_linear: 1-D
// NDRange with global size >= n; any local size. Work item i converts
// element i; items with i >= n do nothing. quantize_linear with -DQV=w
// (w = 4, 8 or 16; one scale and zero point, m[0] = 0, f32 data): global
// size >= ceil(n / w); item i converts elements wi..wi+w-1 (those below
// n) with w-wide vector math. quant_minmax: 1-D NDRange
// with global size >= g (any local size); item i < g folds the i-th of g
// contiguous runs of x's n elements into part[2i] (min, with 0) and
// part[2i+1] (max, with 0); items with i >= g do nothing. quant_dynamic_params: 1-D NDRange of any size, item 0 folds the g pairs of part
// into DynamicQuantizeLinear's scale and zero point; other items return.

#pragma OPENCL FP_CONTRACT OFF

#ifndef QT
#define QT uchar
#endif

#include "quant.clh"

// QVEC(t) is the QV-wide vector of scalar type t.
#define QVEC(t) QCAT(t, QV)

#if defined(X_HALF)
#define X_PTR __global const half*
#define X_LOAD(p, i) vload_half((i), (p))
#elif defined(X_BF16)
#define X_PTR __global const ushort*
#define X_LOAD(p, i) as_float((uint)(p)[i] << 16)
#elif defined(X_INT)
#define X_PTR __global const int*
#define X_LOAD(p, i) ((float)(p)[i])
#else
#define X_PTR __global const float*
#define X_LOAD(p, i) ((p)[i])
#endif

#if defined(S_HALF)
#define S_PTR __global const half*
#define Y_PTR __global half*
#define S_LOAD(p, i) vload_half((i), (p))
#define Y_STORE(p, i, v) vstore_half_rte((v), (i), (p))
#elif defined(S_BF16)
#define S_PTR __global const ushort*
#define Y_PTR __global ushort*
#define S_LOAD(p, i) as_float((uint)(p)[i] << 16)
#define Y_STORE(p, i, v) ((p)[i] = bf16_rne(v))
#else
#define S_PTR __global const float*
#define Y_PTR __global float*
#define S_LOAD(p, i) ((p)[i])
#define Y_STORE(p, i, v) ((p)[i] = (v))
#endif

#ifdef S_BF16
// bf16_rne rounds v to bfloat16 bits, to nearest even (a NaN stays a quiet
// NaN), as tensor.Float32ToBF16 does.
inline ushort bf16_rne(float v)
{
    const uint b = as_uint(v);
    if ((b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu) != 0) {
        return (ushort)((b >> 16) | 0x40u);
    }
    return (ushort)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}
#endif

// param_index is the position of element i's scale and zero point.
inline long param_index(const long i, __global const int* m)
{
    if (m[0] == 0) {
        return 0;
    }
    const long inner = m[1], dim = m[2];
    if (m[0] == 1) {
        return (i / inner) % dim;
    }
    const long o = i / (inner * dim), a = (i / inner) % dim, r = i % inner;
    return (o * m[4] + a / m[3]) * inner + r;
}

__kernel void quantize_linear(X_PTR x, S_PTR scale,
#ifdef HAS_ZP
                              __global const QT* zp,
#endif
                              __global QT* y, const ulong n, __global const int* m)
{
#ifdef QV
    // One scale: QV elements per item in QV-wide vector math, each lane
    // rounded as round_sat does.
    const ulong i0 = (ulong)get_global_id(0) * QV;
    if (i0 >= n) return;
    const float s = S_LOAD(scale, 0);
#ifdef HAS_ZP
    const int z = (int)zp[0];
#else
    const int z = 0;
#endif
#ifdef DYNAMIC
    if (s == 0.0f) {
        for (ulong i = i0; i < min(i0 + QV, n); ++i) y[i] = (QT)0;
        return;
    }
#endif
    QVEC(float) v;
    if (i0 + QV <= n) {
        v = QCAT(vload, QV)(0, x + i0);
    } else {
        float a[QV];
        for (int l = 0; l < QV; ++l) a[l] = i0 + l < n ? x[i0 + l] : 0.0f;
        v = QCAT(vload, QV)(0, a);
    }
#ifdef DIV_F64
    // Lane by lane (double vectors are twice as wide as the device's).
    float qa[QV];
    QCAT(vstore, QV)(v, 0, qa);
    for (int l = 0; l < QV; ++l) qa[l] = quant_div(qa[l], s);
    const QVEC(float) q = QCAT(vload, QV)(0, qa);
#else
    const QVEC(float) q = v / s;
#endif
    // (Vector bounds: oclgrind applies scalar ones to lane 0 only.)
    const QVEC(float) c = clamp(q, (QVEC(float))(-QRANGE), (QVEC(float))QRANGE);
    const QVEC(int) r = QCAT(convert_int, QV)((c + QRINT_MAGIC) - QRINT_MAGIC) + z;
    const QVEC(int) t = select(clamp(r, (QVEC(int))QMIN, (QVEC(int))QMAX), (QVEC(int))z, isnan(q));
    if (i0 + QV <= n) {
        QCAT(vstore, QV)(QCAT(convert_, QVEC(QT))(t), 0, y + i0);
        return;
    }
    int b[QV];
    QCAT(vstore, QV)(t, 0, b);
    for (ulong i = i0; i < n; ++i) y[i] = (QT)b[i - i0];
#else
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const long j = param_index((long)gid, m);
    const float s = S_LOAD(scale, j);
#ifdef HAS_ZP
    const int z = (int)zp[j];
#else
    const int z = 0;
#endif
#ifdef DYNAMIC
    if (s == 0.0f) {
        y[gid] = (QT)0;
        return;
    }
#endif
    y[gid] = (QT)round_sat(quant_div(X_LOAD(x, gid), s), z);
#endif
}

__kernel void dequantize_linear(__global const QT* x, S_PTR scale,
#ifdef HAS_ZP
                                __global const QT* zp,
#endif
                                Y_PTR y, const ulong n, __global const int* m)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const long j = param_index((long)gid, m);
#ifdef HAS_ZP
    const long z = (long)zp[j];
#else
    const long z = 0;
#endif
    const float v = (float)((long)x[gid] - z) * S_LOAD(scale, j);
    Y_STORE(y, gid, v);
}

__kernel void quant_minmax(__global const float* x, __global float* part, const ulong n, const ulong g)
{
    const size_t i = get_global_id(0);
    if (i >= g) return;
    // Item i folds the i-th of g contiguous runs of n / g elements (rounded
    // up to a multiple of 16), four at a time (float4: every target's
    // vector ABI passes it).
    const ulong per = ((n + g - 1) / g + 15) / 16 * 16;
    const ulong lo_i = min(n, i * per), hi_i = min(n, lo_i + per);
    float4 lo4 = (float4)0.0f, hi4 = (float4)0.0f;
    ulong k = lo_i;
    for (; k + 4 <= hi_i; k += 4) {
        const float4 v = vload4(0, x + k);
        lo4 = fmin(lo4, v); // fmin/fmax skip a NaN, as the CPU's comparisons do
        hi4 = fmax(hi4, v);
    }
    float lo = fmin(fmin(lo4.s0, lo4.s1), fmin(lo4.s2, lo4.s3));
    float hi = fmax(fmax(hi4.s0, hi4.s1), fmax(hi4.s2, hi4.s3));
    for (; k < hi_i; ++k) {
        lo = fmin(lo, x[k]);
        hi = fmax(hi, x[k]);
    }
    part[2 * i] = lo;
    part[2 * i + 1] = hi;
}

__kernel void quant_dynamic_params(__global const float* part, __global float* scale, __global uchar* zp, const ulong g)
{
    if (get_global_id(0) >= 1) return;
    float lo = 0.0f, hi = 0.0f;
    for (ulong k = 0; k < g; ++k) {
        lo = fmin(lo, part[2 * k]);
        hi = fmax(hi, part[2 * k + 1]);
    }
    const float s = quant_div(hi - lo, 255.0f);
    scale[0] = s;
    if (s == 0.0f) {
        zp[0] = 0;
        return;
    }
    zp[0] = (uchar)round_sat(0.0f - quant_div(lo, s), 0);
}
