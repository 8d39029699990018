// string_tfidf.cl: TfIdfVectorizer on integer ids: each output of each row
// is the count of one pool n-gram (TF), its weight where it occurs (IDF)
// or the count times the weight (TFIDF), 0 for an index no n-gram has.
//
// Work-size contract: 1-D NDRange with global size >= n; any local size;
// items with i >= n do nothing. n = rows * O outputs; item i computes
// output o = i % O of row i / O of x [rows, C] (IT: int or long, -DIT=...).
// gram[o] is the pool n-gram at output o or -1; the n-gram k's items are
// pool[off[k] .. off[k] + len[k]) (off and len in the int table g: g[2k],
// g[2k+1]) and w[k] its weight. An n-gram is counted at every start and,
// unless it is one item long, at every distance between its items from 1
// to skip + 1; mode is 0 (TF), 1 (IDF) or 2 (TFIDF).

#ifndef IT
#define IT long
#endif

__kernel void tfidf(__global const IT* x, __global float* y, const ulong n, const ulong C, const ulong O,
                    __global const int* gram, __global const int* g, __global const long* pool, __global const float* w,
                    const int skip, const int mode)
{
    const size_t i = get_global_id(0);
    if (i >= n) return;
    const ulong r = i / O, o = i % O;
    const int k = gram[o];
    if (k < 0) {
        y[i] = 0.0f;
        return;
    }
    const int off = g[2 * k], len = g[2 * k + 1];
    const int dists = len == 1 ? 1 : skip + 1;
    __global const IT* row = x + r * C;
    int cnt = 0;
    for (int d = 1; d <= dists; ++d) {
        for (long s = 0; s + (long)(len - 1) * d < (long)C; ++s) {
            int j = 0;
            while (j < len && (long)row[s + (long)j * d] == pool[off + j]) ++j;
            cnt += j == len;
        }
    }
    float v = (float)cnt;
    if (mode == 1) v = cnt > 0 ? w[k] : 0.0f;
    if (mode == 2) v *= w[k];
    y[i] = v;
}
