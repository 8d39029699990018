// movement_reverse_sequence.cl: ONNX ReverseSequence: for each batch entry
// b, the first lens[b] slices along the time axis in reverse order, the
// rest as they are, for any element type moved as bits. The time and
// batch axes are the first two (in either order); inner is the size of a
// slice of the other axes.
//
// Build options: -DT=<uchar|ushort|uint|ulong> is the element bits type.
//
// Work-size contract: 1-D NDRange with global size >= n (elements of in and
// out); any local size. Items with i >= n do nothing. Item i writes
// output element i from one element of in; lens holds one i64 per batch
// entry (clamped to [0, steps]).

#ifndef T
#define T uint
#endif

__kernel void reverse_sequence(__global const T* in, __global const long* lens, __global T* out, const ulong n,
                               const ulong steps, const ulong batch, const ulong inner, const int time_first)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const ulong i = gid / inner;
    const ulong t = time_first ? i / batch : i % steps;
    const ulong b = time_first ? i % batch : i / steps;
    const ulong len = (ulong)clamp(lens[b], (long)0, (long)steps);
    const ulong src = t < len ? len - 1 - t : t;
    const ulong row = time_first ? src * batch + b : b * steps + src;
    out[gid] = in[row * inner + gid % inner];
}
