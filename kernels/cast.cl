// cast.cl: ONNX Cast between the numeric types and bool.
//
// Build options: -DSRC_T and -DDST_T are the OpenCL types (float, int, long,
// char, uchar, short, ushort, uint, ulong); -DSRC_HALF reads f16 storage
// (vload_half, no cl_khr_fp16 needed) and -DDST_HALF writes it rounding to
// nearest even; -DDST_BOOL writes x != 0.
//
// Work-size contract: 1-D NDRange with global size >= n; any local size.
// Work item i converts element i; items with i >= n do nothing.

#ifndef SRC_T
#define SRC_T float
#endif
#ifndef DST_T
#define DST_T float
#endif

#ifdef SRC_HALF
#define SRC_PTR __global const half*
#define LOAD(p, i) vload_half((i), (p))
#else
#define SRC_PTR __global const SRC_T*
#define LOAD(p, i) ((p)[i])
#endif

#ifdef DST_HALF
#define DST_PTR __global half*
#else
#define DST_PTR __global DST_T*
#endif

__kernel void cast(SRC_PTR in, DST_PTR out, const ulong n)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
#if defined(DST_HALF)
    vstore_half_rte((float)LOAD(in, gid), gid, out);
#elif defined(DST_BOOL)
    out[gid] = (DST_T)(LOAD(in, gid) != 0);
#else
    out[gid] = (DST_T)LOAD(in, gid);
#endif
}
