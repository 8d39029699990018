// gemm_det.cl: Det, the determinant of each m x m matrix of x [batch, m, m]
// by Gaussian elimination with partial pivoting.
//
// Work-size contract: 1-D NDRange with global size >= n; any local size;
// items with i >= n do nothing. Item i computes y[i], the determinant of
// matrix i of the n, eliminating in its own m*m slice of the scratch
// buffer s (CT, the compute type: -DCT=double on a device with doubles,
// float by default). -DHALF stores x and y as f16 (half.clh); -DDOUBLE
// makes them double (and CT double).

#include "half.clh"

#if defined(DOUBLE) && !defined(CT)
#define CT double
#endif
#ifndef CT
#define CT float
#endif

__kernel void det(__global const FT* x, __global FT* y, __global CT* s, const ulong n, const ulong m)
{
    const size_t i = get_global_id(0);
    if (i >= n) return;
    __global CT* a = s + i * m * m;
    for (ulong k = 0; k < m * m; ++k) a[k] = (CT)LD(x, i * m * m + k);
    CT d = 1;
    for (ulong c = 0; c < m; ++c) {
        ulong p = c;
        for (ulong r = c + 1; r < m; ++r)
            if (fabs(a[r * m + c]) > fabs(a[p * m + c])) p = r;
        if (a[p * m + c] == 0) {
            d = 0;
            break;
        }
        if (p != c) {
            for (ulong k = 0; k < m; ++k) {
                const CT t = a[c * m + k];
                a[c * m + k] = a[p * m + k];
                a[p * m + k] = t;
            }
            d = -d;
        }
        d *= a[c * m + c];
        for (ulong r = c + 1; r < m; ++r) {
            const CT f = a[r * m + c] / a[c * m + c];
            for (ulong k = c + 1; k < m; ++k) a[r * m + k] -= f * a[c * m + k];
        }
    }
    ST(y, i, d);
}
