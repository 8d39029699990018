// reduce_topk.cl: ONNX TopK along one axis: the k largest (or, with -DSMALLEST,
// smallest) elements of every fibre, sorted, ties broken by the lower
// index, with their indices.
//
// Build options: -DT=<float|double|int|long|...> is the element type
// (default float; double needs cl_khr_fp64, which the GPU device checks
// before it asks for it); -DIS_FLOAT orders NaN before every number for
// largest and after every number for smallest, so the order is total.
//
// Work-size contract: 1-D NDRange with global size >= n (input elements);
// any local size. Items with i >= n do nothing. Work item i ranks input
// element i within its fibre (len elements with stride inner) by comparing
// it with every other element of the fibre; when its rank r is below k it
// writes values and indices at position r of the output fibre (k elements
// with stride inner). The order is strict and total, so ranks are unique
// and no two items write the same output.

#ifndef T
#define T float
#define IS_FLOAT 1
#endif

// before reports whether element (a, ia) comes before (b, ib) in the output.
static int before(const T a, const ulong ia, const T b, const ulong ib)
{
#ifdef IS_FLOAT
    const int na = isnan(a), nb = isnan(b);
    if (na || nb) {
        if (na && nb) return ia < ib;
#ifdef SMALLEST
        return nb;
#else
        return na;
#endif
    }
#endif
    if (a != b) {
#ifdef SMALLEST
        return a < b;
#else
        return a > b;
#endif
    }
    return ia < ib;
}

__kernel void topk(__global const T* in, __global T* values, __global long* indices, const ulong n,
                   const ulong len, const ulong inner, const ulong k)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const ulong o = gid / (len * inner);
    const ulong j = (gid / inner) % len;
    const ulong i = gid % inner;
    const ulong base = o * len * inner + i;
    const T x = in[gid];
    ulong rank = 0;
    for (ulong j2 = 0; j2 < len && rank < k; ++j2) {
        if (j2 != j && before(in[base + j2 * inner], j2, x, j)) rank++;
    }
    if (rank >= k) return;
    const ulong dst = (o * k + rank) * inner + i;
    values[dst] = x;
    indices[dst] = (long)j;
}
