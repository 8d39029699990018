// cast.cl: ONNX Cast between the numeric types and bool.
//
// Build options: -DSRC_T and -DDST_T are the OpenCL types (float, double,
// int, long, char, uchar, short, ushort, uint, ulong); double needs
// cl_khr_fp64, which the GPU device checks before it asks for it.
// -DSRC_HALF reads f16 storage (vload_half, no cl_khr_fp16 needed) and
// -DDST_HALF writes it rounding to nearest even; -DSRC_BF16 reads bfloat16
// storage (the high 16 bits of a float) and -DDST_BF16 writes it rounding
// to nearest even (a NaN stays a quiet NaN); -DDST_BOOL writes x != 0.
// -DSRC_F8=<code> reads and -DDST_F8=<code> writes an 8-bit float of
// f8.clh's format code (1 E4M3FN, 2 E4M3FNUZ, 3 E5M2, 4 E5M2FNUZ) through
// float, saturating out-of-range values unless -DF8_NOSAT (ONNX Cast's
// saturate=0).
// Half and bfloat16 go through float, so f64 -> f16 rounds twice, as the
// CPU device and ONNX Runtime do.
//
// Work-size contract: 1-D NDRange with global size >= n; any local size.
// Work item i converts element i; items with i >= n do nothing.

#include "f8.clh"

#ifndef SRC_T
#define SRC_T float
#endif
#ifndef DST_T
#define DST_T float
#endif

#if defined(SRC_HALF)
#define SRC_PTR __global const half*
#define LOAD(p, i) vload_half((i), (p))
#elif defined(SRC_BF16)
#define SRC_PTR __global const ushort*
#define LOAD(p, i) as_float((uint)(p)[i] << 16)
#elif defined(SRC_F8)
#define SRC_PTR __global const uchar*
#define LOAD(p, i) f8_decode((p)[i], SRC_F8)
#else
#define SRC_PTR __global const SRC_T*
#define LOAD(p, i) ((p)[i])
#endif

#if defined(DST_HALF)
#define DST_PTR __global half*
#elif defined(DST_BF16)
#define DST_PTR __global ushort*
#elif defined(DST_F8)
#define DST_PTR __global uchar*
#else
#define DST_PTR __global DST_T*
#endif

__kernel void cast(SRC_PTR in, DST_PTR out, const ulong n)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
#if defined(DST_HALF)
    vstore_half_rte((float)LOAD(in, gid), gid, out);
#elif defined(DST_BF16)
    const uint b = as_uint((float)LOAD(in, gid));
    if ((b & 0x7f800000u) == 0x7f800000u && (b & 0x7fffffu) != 0) {
        out[gid] = (ushort)((b >> 16) | 0x40u);
    } else {
        out[gid] = (ushort)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
    }
#elif defined(DST_F8)
#ifdef F8_NOSAT
    out[gid] = f8_encode((float)LOAD(in, gid), DST_F8, 0);
#else
    out[gid] = f8_encode((float)LOAD(in, gid), DST_F8, 1);
#endif
#elif defined(DST_BOOL)
    out[gid] = (DST_T)(LOAD(in, gid) != 0);
#else
    out[gid] = (DST_T)LOAD(in, gid);
#endif
}
