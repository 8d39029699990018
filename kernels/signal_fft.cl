// signal_fft.cl: DFT and STFT by a mixed-radix Stockham FFT: fft_load
// gathers M signals of length Lb as complex float pairs (zero-padded,
// windowed, conjugated for an inverse, multiplied by Bluestein's chirp),
// fft_stage runs one radix-R pass (natural order in, natural order out,
// ping-ponging between two buffers), fft_pointmul multiplies by the
// transformed chirp for Bluestein's convolution (lengths with a prime
// factor of 64 or more run as a power-of-two convolution), and fft_store
// writes the first Lout frequencies in the output's layout (unconjugated
// and scaled for an inverse). Complex values are float2 pairs (re, im);
// the math is float.
//
// Work-size contract: 1-D NDRange with global size >= n; any local size;
// items with i >= n do nothing.
//   fft_load:     n = M*Lb; item i writes element i % Lb of signal i / Lb.
//                 m = {Lb, q, s1, s2, s3, tmax, cx, conj, window, chirp}:
//                 signal s starts at element (s / q) * s1 + (s % q) * s2
//                 of x, its samples s3 apart, cx (1 real, 2 complex)
//                 values each; samples t >= tmax are zero.
//   fft_stage:    n = M*L/r; item i computes one radix-r butterfly of
//                 signal i / (L/r) after Ns points of earlier radices: tw
//                 holds exp(-2 pi i k/L), k < L. -DRADIX=2, 3, 4, 5 or 8
//                 unrolls it; RADIX 0 takes any r < 64 (O(r^2)).
//   fft_pointmul: n = M*Lb; item i sets w[i] = conj(w[i] * f[i % Lb]).
//   fft_store:    n = M*Lout; item i writes frequency i % Lout of signal
//                 i / Lout at pair (s / q) * o1 + (s % q) * o2 + k * o3 of
//                 y. m = {Lb, Lout, q, o1, o2, o3, bluestein, inverse}:
//                 bluestein takes conj(v)/Lb times chirp[k]; inverse then
//                 conj(v) * scale.
// -DHALF stores x and y as f16 (half.clh); window, tables and the work
// buffers stay f32.

#include "half.clh"

#ifndef RADIX
#define RADIX 0
#endif

static float2 cmul(const float2 a, const float2 b) { return (float2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

__kernel void fft_load(__global const FT* x, __global const float* win, __global const float2* chirp,
                       __global float2* w, const ulong n, __global const int* m)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const long Lb = m[0], q = m[1], s1 = m[2], s2 = m[3], s3 = m[4], tmax = m[5];
    const int cx = m[6], conj = m[7], use_win = m[8], use_chirp = m[9];
    const long t = (long)(gid % (ulong)Lb), s = (long)(gid / (ulong)Lb);
    float2 v = (float2)(0.0f, 0.0f);
    if (t < tmax) {
        const long p = ((s / q) * s1 + (s % q) * s2 + t * s3) * cx;
        v.x = LD(x, p);
        if (cx == 2) v.y = LD(x, p + 1);
        if (use_win) v *= win[t];
        if (conj) v.y = -v.y;
        if (use_chirp) v = cmul(v, chirp[t]);
    }
    w[gid] = v;
}

// radix-3 and radix-5 constants: cos and sin of 2 pi/3, 2 pi/5, 4 pi/5.
#define C3 -0.5f
#define S3 0.8660254037844386f
#define C51 0.30901699437494745f
#define S51 0.9510565162951535f
#define C52 -0.8090169943749475f
#define S52 0.5877852522924731f

// rot is -i * v (a quarter turn of the forward transform).
static float2 rot(const float2 v) { return (float2)(v.y, -v.x); }

__kernel void fft_stage(__global const float2* in, __global float2* out, __global const float2* tw,
                        const ulong n, const ulong L, const ulong Ns, const int r)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const ulong span = L / (ulong)r;
    const ulong s = gid / span, j = gid % span;
    const ulong k = j % Ns;
    const ulong step = L / (Ns * (ulong)r); // twiddle index per unit of t*k
    __global const float2* src = in + s * L + j;
#if RADIX == 0
    float2 u[64];
#else
    float2 u[RADIX];
#endif
    for (int t = 0; t < r; ++t) {
        float2 v = src[(ulong)t * span];
        if (t > 0 && k > 0) v = cmul(v, tw[((ulong)t * k * step) % L]);
        u[t] = v;
    }
#if RADIX == 2
    const float2 a = u[0], b = u[1];
    u[0] = a + b;
    u[1] = a - b;
#elif RADIX == 4
    const float2 a0 = u[0] + u[2], a1 = u[0] - u[2], a2 = u[1] + u[3], a3 = rot(u[1] - u[3]);
    u[0] = a0 + a2;
    u[1] = a1 + a3;
    u[2] = a0 - a2;
    u[3] = a1 - a3;
#elif RADIX == 8
    const float h = 0.7071067811865476f;
    // Two radix-4 halves on even and odd points, joined by radix 2.
    const float2 e0 = u[0] + u[4], e1 = u[0] - u[4], e2 = u[2] + u[6], e3 = rot(u[2] - u[6]);
    const float2 o0 = u[1] + u[5], o1 = u[1] - u[5], o2 = u[3] + u[7], o3 = rot(u[3] - u[7]);
    const float2 E0 = e0 + e2, E1 = e1 + e3, E2 = e0 - e2, E3 = e1 - e3;
    float2 O0 = o0 + o2, O1 = o1 + o3, O2 = o0 - o2, O3 = o1 - o3;
    O1 = (float2)(h * (O1.x + O1.y), h * (O1.y - O1.x)); // * exp(-i pi/4)
    O2 = rot(O2);                                        // * exp(-i pi/2)
    O3 = (float2)(h * (O3.y - O3.x), -h * (O3.x + O3.y)); // * exp(-3i pi/4)
    u[0] = E0 + O0;
    u[1] = E1 + O1;
    u[2] = E2 + O2;
    u[3] = E3 + O3;
    u[4] = E0 - O0;
    u[5] = E1 - O1;
    u[6] = E2 - O2;
    u[7] = E3 - O3;
#elif RADIX == 3
    const float2 a = u[0], b = u[1], c = u[2];
    const float2 sum = b + c, dif = rot(b - c) * S3;
    u[0] = a + sum;
    u[1] = a + sum * C3 + dif;
    u[2] = a + sum * C3 - dif;
#elif RADIX == 5
    const float2 a = u[0];
    const float2 s1 = u[1] + u[4], d1 = rot(u[1] - u[4]), s2 = u[2] + u[3], d2 = rot(u[2] - u[3]);
    u[0] = a + s1 + s2;
    u[1] = a + s1 * C51 + s2 * C52 + d1 * S51 + d2 * S52;
    u[4] = a + s1 * C51 + s2 * C52 - d1 * S51 - d2 * S52;
    u[2] = a + s1 * C52 + s2 * C51 + d1 * S52 - d2 * S51;
    u[3] = a + s1 * C52 + s2 * C51 - d1 * S52 + d2 * S51;
#else
    float2 v[64];
    for (int f = 0; f < r; ++f) {
        float2 acc = u[0];
        for (int t = 1; t < r; ++t) acc += cmul(u[t], tw[((ulong)(t * f % r) * span) % L]);
        v[f] = acc;
    }
    for (int f = 0; f < r; ++f) u[f] = v[f];
#endif
    __global float2* dst = out + s * L + (j / Ns) * Ns * (ulong)r + k;
    for (int t = 0; t < r; ++t) dst[(ulong)t * Ns] = u[t];
}

__kernel void fft_pointmul(__global float2* w, __global const float2* f, const ulong n, const ulong Lb)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const float2 v = cmul(w[gid], f[gid % Lb]);
    w[gid] = (float2)(v.x, -v.y);
}

__kernel void fft_store(__global const float2* w, __global const float2* chirp, __global FT* y,
                        const ulong n, __global const int* m, const float scale)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const long Lb = m[0], Lout = m[1], q = m[2], o1 = m[3], o2 = m[4], o3 = m[5];
    const int bluestein = m[6], inverse = m[7];
    const long k = (long)(gid % (ulong)Lout), s = (long)(gid / (ulong)Lout);
    float2 v = w[s * Lb + k];
    if (bluestein) v = cmul((float2)(v.x, -v.y) / (float)Lb, chirp[k]);
    if (inverse) v = (float2)(v.x, -v.y) * scale;
    const long p = ((s / q) * o1 + (s % q) * o2 + k * o3) * 2;
    ST(y, p, v.x);
    ST(y, p + 1, v.y);
}
