// reduce.cl: ReduceSum/Mean/Max/Min (and Global pools) over any set of
// axes of an f32 tensor, accumulating in f32.
//
// Build options: -DREDUCE_OP=<SUM|MEAN|MAX|MIN> selects the reduction.
//
// Work-size contract: 1-D NDRange with global size >= n (output elements);
// any local size. Items with i >= n do nothing. The int array m holds
// m[0] = nk kept axes, nk kept dims, nk kept input strides, then nr reduced
// axes, nr reduced dims, nr reduced input strides, then the reduced count.
// Work item i reduces its count input elements serially.

#ifndef REDUCE_OP
#error "reduce.cl: build with -DREDUCE_OP=<SUM|MEAN|MAX|MIN>"
#endif
#define SUM 0
#define MEAN 1
#define MAX 2
#define MIN 3

__kernel void reduce(__global const float* in, __global float* out, const ulong n, __global const int* m)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int nk = m[0];
    long base = 0;
    ulong r = gid;
    for (int d = nk - 1; d >= 0; --d) {
        const long dim = m[1 + d];
        base += (long)(r % dim) * m[1 + nk + d];
        r /= dim;
    }
    __global const int* red = m + 1 + 2 * nk;
    const int nr = red[0];
    const long count = red[1 + 2 * nr];
#if REDUCE_OP == MAX
    float acc = -INFINITY;
#elif REDUCE_OP == MIN
    float acc = INFINITY;
#else
    float acc = 0.0f;
#endif
    for (long k = 0; k < count; ++k) {
        long off = base;
        long q = k;
        for (int d = nr - 1; d >= 0; --d) {
            const long dim = red[1 + d];
            off += (q % dim) * red[1 + nr + d];
            q /= dim;
        }
        const float v = in[off];
#if REDUCE_OP == MAX
        acc = (isnan(v) || isnan(acc)) ? NAN : fmax(acc, v);
#elif REDUCE_OP == MIN
        acc = (isnan(v) || isnan(acc)) ? NAN : fmin(acc, v);
#else
        acc += v;
#endif
    }
#if REDUCE_OP == MEAN
    acc = count > 0 ? acc / (float)count : NAN;
#endif
    out[gid] = acc;
}
