// activation_softmax_rows.cl: softmax_rows, Softmax and LogSoftmax of f32
// data (or f16 storage with -DHALF, computed in float) along the last
// axis, one work group per row: the class scores of a recognizer head
// (PP-OCR rec's 40 rows of 6625) and attention weights, where
// activation_softmax.cl's one serial item per row left the device idle
// and computed every exponential twice.
//
// Build options: -DLOG_SOFTMAX computes log(softmax(x)); -DVW=4, 8 or 16
// (default 4) is the elements an item takes at a time (the device's
// preferred vector width; rows.clh).
//
// Work-size contract: 1-D NDRange of rows work groups of L items, L a
// power of two of at most 256 (any L: the whole group of an out-of-range
// row returns); group r normalises row r of len elements (in and out are
// rows x len, contiguous). Item i takes the chunks of VW elements that
// start at i*VW, (i+L)*VW, ... (a whole chunk as one vector, the last,
// partial one element by element): the row's maximum, then the sum of
// exp(x - max), each reduced over the group in local memory, then the
// outputs. Softmax keeps each exp(x - max) in out between the passes
// (f32; f16 storage computes it again).

#include "half.clh"
#include "rows.clh"

__kernel void softmax_rows(__global const FT* in, __global FT* out, const ulong rows, const int len)
{
    __local float red[ROWS_MAX_GROUP];
    const size_t row = get_group_id(0);
    const int lid = (int)get_local_id(0);
    const int L = (int)get_local_size(0);
    if (row >= rows || L > ROWS_MAX_GROUP) return; // the whole group alike
    __global const FT* x = in + row * (ulong)len;
    __global FT* y = out + row * (ulong)len;
    const int step = L * VW;
    fvec mv = (fvec)(-INFINITY);
    float ms = -INFINITY;
    for (int c0 = lid * VW; c0 < len; c0 += step) {
        if (c0 + VW <= len) {
            mv = fmax(mv, VLD(x + c0));
            continue;
        }
        for (int c = c0; c < len; ++c) ms = fmax(ms, LD(x, c));
    }
    const float mx = rows_fold(fmax(rows_vmax(mv), ms), 1, red, lid, L);
    fvec sv = (fvec)(0.0f);
    float ss = 0.0f;
    for (int c0 = lid * VW; c0 < len; c0 += step) {
        if (c0 + VW <= len) {
            const fvec e = exp(VLD(x + c0) - mx);
#if !defined(LOG_SOFTMAX) && !defined(HALF)
            VST(y + c0, e);
#endif
            sv += e;
            continue;
        }
        for (int c = c0; c < len; ++c) {
            const float e = exp(LD(x, c) - mx);
#if !defined(LOG_SOFTMAX) && !defined(HALF)
            ST(y, c, e);
#endif
            ss += e;
        }
    }
    const float sum = rows_fold(rows_vsum(sv) + ss, 0, red, lid, L);
#ifdef LOG_SOFTMAX
    const float sh = mx + log(sum);
#else
    const float inv = 1.0f / sum;
#endif
    for (int c0 = lid * VW; c0 < len; c0 += step) {
        if (c0 + VW <= len) {
#if defined(LOG_SOFTMAX)
            VST(y + c0, VLD(x + c0) - sh);
#elif defined(HALF)
            VST(y + c0, exp(VLD(x + c0) - mx) * inv);
#else
            VST(y + c0, VLD(y + c0) * inv);
#endif
            continue;
        }
        for (int c = c0; c < len; ++c) {
#if defined(LOG_SOFTMAX)
            ST(y, c, LD(x, c) - sh);
#elif defined(HALF)
            ST(y, c, exp(LD(x, c) - mx) * inv);
#else
            ST(y, c, LD(y, c) * inv);
#endif
        }
    }
}
