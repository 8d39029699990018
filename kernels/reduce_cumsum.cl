// reduce_cumsum.cl: CumSum along one axis, inclusive or exclusive, forward or
// reversed.
//
// Build options: -DT=<float|double|char|uchar|short|ushort|int|uint|long|
// ulong> is the element type (default float; double needs cl_khr_fp64,
// which the GPU device checks before it asks for it); -DACC=ulong sums
// integers in 64 bits that wrap (stored modulo 2^bits of T, as numpy;
// default ACC=T); -DIDX=<int|long> is the type of the axis input (default
// long).
//
// Work-size contract: 1-D NDRange with global size >= n (elements of in and
// out); any local size. Items with i >= n do nothing. The int array m holds
// m[0] = rank r >= 1 and the r dims. axis points at one value, the axis (a
// runtime input of the op, negative counts from the end, out-of-range is
// clamped). Work item i sums the elements before (or after) it along the
// axis serially.

#ifndef T
#define T float
#endif
#ifndef ACC
#define ACC T
#endif
#ifndef IDX
#define IDX long
#endif

__kernel void cumsum(__global const T* in, __global T* out, const ulong n, __global const int* m,
                     __global const IDX* axis, const int exclusive, const int reverse)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int r = m[0];
    long ax = (long)axis[0];
    if (ax < 0) ax += r;
    ax = clamp(ax, (long)0, (long)(r - 1));
    ulong inner = 1;
    for (int d = r - 1; d > ax; --d) inner *= (ulong)m[1 + d];
    const ulong len = (ulong)m[1 + ax];
    const ulong k = (gid / inner) % len;
    const ulong first = gid - k * inner;
    ACC acc = (ACC)0;
    if (reverse) {
        for (ulong j = exclusive ? k + 1 : k; j < len; ++j) acc += (ACC)in[first + j * inner];
    } else {
        const ulong end = exclusive ? k : k + 1;
        for (ulong j = 0; j < end; ++j) acc += (ACC)in[first + j * inner];
    }
    out[gid] = (T)acc;
}
