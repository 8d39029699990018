// conv_col2im.cl: Col2Im, the inverse of im2col: each image element sums
// the column values whose block position and in-block offset land on it.
//
// Work-size contract: 1-D NDRange with global size >= n; any local size;
// items with i >= n do nothing. n = N*C*D*H*W image elements of y [N, C,
// D, H, W] (up to 3 spatial axes, the missing leading ones of size 1);
// item i gathers from x [N, C*KD*KH*KW, L] (L = BD*BH*BW block
// positions). The int array m holds per axis (d, h, w) the image size,
// block size, block positions, stride, dilation and begin pad: m[6a..6a+5].
// -DHALF stores x and y as f16 (half.clh), summing in float. -DT=<type>
// -DACC=<type> store x and y as T and sum in ACC: double for f64
// (cl_khr_fp64, which the GPU device checks first), ulong for integers
// (wrapping, stored modulo 2^bits of T); with -DIS_BOOL (T=uchar) y is
// whether the sum is nonzero.

#include "half.clh"

#ifdef T
#define XT T
#define LDX(p, i) ((p)[i])
#ifdef IS_BOOL
#define STX(p, i, v) ((p)[i] = (T)((v) != 0))
#else
#define STX(p, i, v) ((p)[i] = (T)(v))
#endif
#else
#define XT FT
#define ACC float
#define LDX(p, i) LD(p, i)
#define STX(p, i, v) ST(p, i, v)
#endif

__kernel void col2im(__global const XT* x, __global XT* y, const ulong n, __global const int* m)
{
    const size_t i = get_global_id(0);
    if (i >= n) return;
    const long D = m[0], H = m[6], W = m[12];
    const long KD = m[1], KH = m[7], KW = m[13];
    const long BD = m[2], BH = m[8], BW = m[14];
    const long K = KD * KH * KW, L = BD * BH * BW;
    const long w = (long)i % W, h = ((long)i / W) % H, d = ((long)i / (W * H)) % D;
    const long nc = (long)i / (W * H * D);
    ACC s = 0;
    for (long kd = 0; kd < KD; ++kd) {
        const long qd = d + m[5] - kd * m[4];
        if (qd < 0 || qd % m[3] != 0 || qd / m[3] >= BD) continue;
        for (long kh = 0; kh < KH; ++kh) {
            const long qh = h + m[11] - kh * m[10];
            if (qh < 0 || qh % m[9] != 0 || qh / m[9] >= BH) continue;
            for (long kw = 0; kw < KW; ++kw) {
                const long qw = w + m[17] - kw * m[16];
                if (qw < 0 || qw % m[15] != 0 || qw / m[15] >= BW) continue;
                const long k = (kd * KH + kh) * KW + kw;
                const long l = ((qd / m[3]) * BH + qh / m[9]) * BW + qw / m[15];
                s += (ACC)LDX(x, (nc * K + k) * L + l);
            }
        }
    }
    STX(y, i, s);
}
