// movement_trilu.cl: Trilu: keeps the upper (or lower) triangle of the last two
// dimensions from diagonal k on and zeroes the rest, for any element type
// moved as bits.
//
// Build options: -DT=<uchar|ushort|uint|ulong> is the element bits type.
//
// Work-size contract: 1-D NDRange with global size >= n (elements of in and
// out, a batch of rows x cols matrices); any local size. Items with i >= n
// do nothing. k points at one i64, the diagonal offset (a runtime input
// of the op, so it is read on the device).

#ifndef T
#define T uint
#endif

__kernel void trilu(__global const T* in, __global T* out, const ulong n,
                    const ulong rows, const ulong cols, __global const long* kp, const int upper)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const long k = kp[0];
    const long c = (long)(gid % cols);
    const long r = (long)((gid / cols) % rows);
    const int keep = upper ? (c - r >= k) : (c - r <= k);
    out[gid] = keep ? in[gid] : (T)0;
}
