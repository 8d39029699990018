// movement_copy.cl: copies a buffer element by element (Identity, and the
// Parameter/Result moves of the launch plan).
//
// Work-size contract: 1-D NDRange with global size >= n (the host rounds it
// up to a multiple of its preferred work-group size); any local size. Work
// item i copies element i; items with i >= n do nothing.
//
// Entry points:
//   copy_bytes(src, dst, n)  n elements of 1 byte (any element type, n = bytes)
//   copy_words(src, dst, n)  n elements of 4 bytes (any 4-byte-aligned type)

__kernel void copy_bytes(__global const uchar* src, __global uchar* dst, const ulong n)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    dst[gid] = src[gid];
}

__kernel void copy_words(__global const uint* src, __global uint* dst, const ulong n)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    dst[gid] = src[gid];
}
