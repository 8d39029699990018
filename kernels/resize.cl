// resize.cl: N-D Resize of f32 data by per-axis tap tables the host
// computes at compile time (nearest: one source index of weight 1; linear:
// two; cubic: four), so every coordinate transformation mode costs the same
// here. The interpolation is separable: an output element is the sum over
// every combination of one tap per axis of the product of the tap weights
// times the input element at the taps' indices.
//
// Work-size contract: 1-D NDRange with global size >= n (output elements);
// any local size. Items with i >= n do nothing. The int array m holds
// m[0] = rank r (at most 8), r output dims, r input strides, r tap counts,
// r index-table offsets into m and r weight-table offsets into w. For
// output coordinate c of axis d with T taps, tap t reads input index
// m[ioff_d + T*c + t] with weight w[woff_d + T*c + t]. A first index of -1
// marks c as outside the crop (tf_crop_and_resize): the output element is
// then extrapolation.
//
// resize_nearest is the gather for tables where every axis has one tap of
// weight 1 (nearest mode), with the same m (w is not read). Work-size
// contract: 3-D NDRange of at least (last output dim, second-to-last output
// dim or 1, the product of the other output dims), rank >= 1; any local
// size. Item (x, y, z) writes output element (z * H + y) * W + x; items
// past W, H or n do nothing. No index division for rank <= 3.
//
// resize_upsample is nearest upsampling by integer factors SH, SW (build
// options, default 2, 2) of the last two axes, out[z, y, x] = in[z, y /
// SH, x / SW], for the tables where nearest mode comes to that; build
// options VW (default 1): output pixels per item, RY (default 1): output
// rows per item. Work-size contract: 3-D NDRange, global size >=
// (ceil(IW * SW / VW), ceil(IH * SH / RY), planes), any local size; item
// (i, j, z) writes output pixels i*VW.. of rows j*RY.. of plane z; items
// outside do nothing. The int array u holds IH, IW, planes.
//
// resize_linear2d is the separable interpolation of the last two axes
// with at most two taps each (linear mode, or a nearest or identity axis
// as two taps of weights 1 and 0), the other axes being identities:
// out[z, y, x] = sum over taps of wy * wx * in[z, iy, ix]. Build option
// VW (default 1): consecutive output pixels of a row per item, each input
// row pair located once. Work-size contract: 3-D NDRange, global size >=
// (ceil(OW / VW), OH, planes), any local size; item (i, y, z) writes
// pixels i*VW.. of row y of plane z; items outside do nothing. The int
// array u holds IH, IW, OH, OW, planes, up2, then 2*OH row indices (two
// per output row) and 2*OW column indices; the float array w the 2*OH row
// weights and 2*OW column weights. up2 (non-zero) says the columns are a
// 2x upsampling's: output column x reads input columns (x - 1) / 2 and
// (x + 1) / 2 for 0 < x < OW - 1 (the host checks the table); then with
// VW 4 or 8 the items inside the row run their VW pixels as vectors of 4
// (the input columns loaded once, spread to the taps by shuffles; the
// same products, selects and sum per lane as the scalar loop), the items
// at the row's ends the scalar loop.
//
// -DHALF stores in and out as f16 (half.clh); the weights w stay f32 and
// the interpolation is computed in float, without fused multiply-adds:
// the sum is the CPU reference's and ONNX Runtime's to the bit.

#pragma OPENCL FP_CONTRACT OFF

#include "half.clh"

// -DDOUBLE (the non-vector kernels resize and resize_nearest) holds f64
// data (half.clh: f64 tensors, and the integers the GPU device widens to
// f64) and computes in double, as the CPU reference does; AT is the type
// resize computes in.
#ifdef DOUBLE
#define AT double
#else
#define AT float
#endif

__kernel void resize(__global const FT* in, __global FT* out, const ulong n,
                     __global const int* m, __global const float* w, const float extrapolation)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    const int rank = m[0];
    // Axes with one tap add a fixed offset and factor; the others (at most
    // 8, with at most 4 taps each) are enumerated below, their taps'
    // offsets and weights loaded once into private memory.
    long base = 0;
    AT wbase = 1.0f;
    long toff[8][4];
    float twt[8][4];
    int ntaps[8];
    int na = 0, total = 1;
    ulong r = gid;
    for (int d = rank - 1; d >= 0; --d) {
        const ulong dim = (ulong)m[1 + d];
        const int c = (int)(r % dim);
        r /= dim;
        const int taps = m[1 + 2 * rank + d];
        __global const int* ix = m + m[1 + 3 * rank + d] + taps * c;
        __global const float* wx = w + m[1 + 4 * rank + d] + taps * c;
        if (ix[0] < 0) {
            ST(out, gid, extrapolation);
            return;
        }
        const long stride = m[1 + rank + d];
        if (taps == 1) {
            base += ix[0] * stride;
            wbase *= wx[0];
            continue;
        }
        for (int t = 0; t < taps; ++t) {
            toff[na][t] = ix[t] * stride;
            twt[na][t] = wx[t];
        }
        ntaps[na++] = taps;
        total *= taps;
    }
    AT acc = 0.0f;
    int digit[8];
    for (int j = 0; j < na; ++j) digit[j] = 0;
    for (int k = 0; k < total; ++k) {
        AT f = wbase;
        long o = base;
        for (int j = 0; j < na; ++j) {
            f *= twt[j][digit[j]];
            o += toff[j][digit[j]];
        }
        if (f != 0.0f) acc += f * LD(in, o);
        for (int j = 0; j < na; ++j) {
            if (++digit[j] < ntaps[j]) break;
            digit[j] = 0;
        }
    }
    ST(out, gid, acc);
}

__kernel void resize_nearest(__global const FT* in, __global FT* out, const ulong n,
                             __global const int* m, __global const float* w, const float extrapolation)
{
    const int rank = m[0];
    const uint W = (uint)m[rank], H = rank >= 2 ? (uint)m[rank - 1] : 1u;
    const uint x = (uint)get_global_id(0), y = (uint)get_global_id(1);
    const ulong gid = ((ulong)get_global_id(2) * H + y) * W + x;
    if (x >= W || y >= H || gid >= n) return;
    __global const int* ioff = m + 1 + 3 * rank;
    __global const int* st = m + 1 + rank;
    const int ix = m[ioff[rank - 1] + x];
    int outside = ix < 0;
    long o = (long)ix * st[rank - 1];
    if (rank >= 2) {
        const int iy = m[ioff[rank - 2] + y];
        outside |= iy < 0;
        o += (long)iy * st[rank - 2];
    }
    ulong r = get_global_id(2);
    for (int d = rank - 3; d >= 0; --d) {
        const ulong dim = (ulong)m[1 + d];
        ulong c = r;
        if (r >= dim) { // outer axes are usually short: divide only when needed
            c = r % dim;
            r /= dim;
        } else {
            r = 0;
        }
        const int i = m[ioff[d] + (long)c];
        outside |= i < 0;
        o += (long)i * st[d];
    }
    ST(out, gid, outside ? extrapolation : LD(in, outside ? 0 : o));
}

#ifndef SH
#define SH 2
#endif
#ifndef SW
#define SW 2
#endif
#ifndef VW
#define VW 1
#endif
#ifndef RY
#define RY 1
#endif
// UP_SPLAT(w, p, a) stores w copies of a at p (w: 4, 8 or 16).
#define UP_SPLAT(w, p, a) UP_SPLAT_(w, p, a)
#define UP_SPLAT_(w, p, a) ST##w(p, 0, (float##w)(a))

__kernel void resize_upsample(__global const FT* in, __global FT* out, __global const int* u)
{
    const int IH = u[0], IW = u[1];
    const int OW = IW * SW, OH = IH * SH;
    const int x0 = (int)get_global_id(0) * VW, y0 = (int)get_global_id(1) * RY;
    const long z = (long)get_global_id(2);
    if (x0 >= OW || y0 >= OH || z >= u[2]) return;
    const int y1 = min(y0 + RY, OH);
    for (int y = y0; y < y1; ++y) {
        __global const FT* ip = in + (z * IH + y / SH) * IW;
        __global FT* op = out + (z * OH + y) * (long)OW;
        if (x0 + VW <= OW) {
#if SW == 2 && (VW == 4 || VW == 8 || VW == 16)
            // Doubling columns: VW/2 contiguous loads spread over a vector
            // store of VW (x0 is a multiple of VW, so of 2).
#if VW == 4
            const float a = LD(ip, x0 / 2), b = LD(ip, x0 / 2 + 1);
            ST4(op + x0, 0, ((float4)(a, a, b, b)));
#elif VW == 8
            const float4 v = LD4(ip + x0 / 2, 0);
            ST8(op + x0, 0, ((float8)(v.s0, v.s0, v.s1, v.s1, v.s2, v.s2, v.s3, v.s3)));
#else
            const float8 v = LD8(ip + x0 / 2, 0);
            ST16(op + x0, 0, ((float16)(v.s0, v.s0, v.s1, v.s1, v.s2, v.s2, v.s3, v.s3, v.s4, v.s4, v.s5, v.s5, v.s6, v.s6, v.s7, v.s7)));
#endif
#elif (SW == 4 || SW == 8 || SW == 16) && (VW == 4 || VW == 8 || VW == 16)
            // Factors of 4 and more: each input pixel fills SW output pixels,
            // stored as splat vectors (x0 is a multiple of VW; VW and SW are
            // powers of two, so one divides the other).
#if VW <= SW
            UP_SPLAT(VW, op + x0, LD(ip, x0 / SW));
#else
            for (int k = 0; k < VW / SW; ++k) UP_SPLAT(SW, op + x0 + k * SW, LD(ip, x0 / SW + k));
#endif
#else
            // A full run of the output row: VW stores, VW / SW loads.
            for (int j = 0; j < VW; ++j) ST(op, x0 + j, LD(ip, (x0 + j) / SW));
#endif
            continue;
        }
        for (int x = x0; x < OW; ++x) ST(op, x, LD(ip, x / SW));
    }
}

#if VW == 4 || VW == 8
// up2_quad stores the 4 output pixels from column x of output row op of a
// 2x column upsampling (pixel x + l reads input columns k + (l + 1) / 2
// and the next, k = x / 2 - 1; x even, 0 < x, x + 4 < OW) from input
// rows r0, r1 of weights a, b: the scalar loop's products, zero weights
// selected away and sum, lane by lane. Vectors of 4 only, which every
// target takes (wider ones change the call ABI on SSE and AVX2).
__attribute__((always_inline)) inline void up2_quad(__global const FT* r0, __global const FT* r1,
                                                   __global const float* wx, const int x, const float a,
                                                   const float b, __global FT* op)
{
    const int k = x / 2 - 1;
    const float4 s0 = LD4(r0 + k, 0), s1 = LD4(r1 + k, 0); // columns k .. k+3
    const float4 v00 = shuffle(s0, (uint4)(0, 1, 1, 2)), v01 = shuffle(s0, (uint4)(1, 2, 2, 3));
    const float4 v10 = shuffle(s1, (uint4)(0, 1, 1, 2)), v11 = shuffle(s1, (uint4)(1, 2, 2, 3));
    const float4 w0 = vload4(0, wx + 2 * x), w1 = vload4(0, wx + 2 * x + 4); // (c, d) pairs
    const float4 c = shuffle2(w0, w1, (uint4)(0, 2, 4, 6)), d = shuffle2(w0, w1, (uint4)(1, 3, 5, 7));
    const float4 f00 = c * a, f01 = d * a, f10 = c * b, f11 = d * b;
    float4 acc = (float4)0.0f;
    acc += select((float4)0.0f, f00 * v00, f00 != 0.0f);
    acc += select((float4)0.0f, f01 * v01, f01 != 0.0f);
    acc += select((float4)0.0f, f10 * v10, f10 != 0.0f);
    acc += select((float4)0.0f, f11 * v11, f11 != 0.0f);
    ST4(op + x, 0, acc);
}
#endif

__kernel void resize_linear2d(__global const FT* in, __global FT* out, __global const int* u, __global const float* w)
{
    const int IH = u[0], IW = u[1], OH = u[2], OW = u[3];
    const int x0 = (int)get_global_id(0) * VW, y = (int)get_global_id(1);
    const long z = (long)get_global_id(2);
    if (x0 >= OW || y >= OH || z >= u[4]) return;
    __global const int* ty = u + 6;
    __global const int* tx = ty + 2 * OH;
    __global const float* wy = w;
    __global const float* wx = w + 2 * OH;
    __global const FT* r0 = in + (z * IH + ty[2 * y]) * (long)IW;
    __global const FT* r1 = in + (z * IH + ty[2 * y + 1]) * (long)IW;
    const float a = wy[2 * y], b = wy[2 * y + 1];
    __global FT* op = out + (z * OH + y) * (long)OW;
#if VW == 4 || VW == 8
    if (u[5] && x0 > 0 && x0 + VW < OW) {
        for (int q = 0; q < VW; q += 4) up2_quad(r0, r1, wx, x0 + q, a, b, op);
        return;
    }
#endif
    const int x1 = min(x0 + VW, OW);
    for (int x = x0; x < x1; ++x) {
        const int i0 = tx[2 * x], i1 = tx[2 * x + 1];
        const float c = wx[2 * x], d = wx[2 * x + 1];
        // resize's sum exactly: the four taps x fastest, each weight the
        // product of its column's and its row's, a zero weight skipped
        // (it adds +0, which leaves the sum as it is, since the sum from
        // +0 is never -0, and never multiplies an inf or NaN tap): all
        // four loaded and selected, with no branch per tap.
        const float f00 = c * a, f01 = d * a, f10 = c * b, f11 = d * b;
        const float v00 = LD(r0, i0), v01 = LD(r0, i1), v10 = LD(r1, i0), v11 = LD(r1, i1);
        float acc = 0.0f;
        acc += f00 != 0.0f ? f00 * v00 : 0.0f;
        acc += f01 != 0.0f ? f01 * v01 : 0.0f;
        acc += f10 != 0.0f ? f10 * v10 : 0.0f;
        acc += f11 != 0.0f ? f11 * v11 : 0.0f;
        ST(op, x, acc);
    }
}
