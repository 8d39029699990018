// compact_scan.cl: the exclusive prefix sum of i32 counts (flags of kept
// elements, kept boxes per class) that stream compaction scatters by,
// in blocks of WG*4 counts per work group: scan_blocks scans each block
// (4 counts per item, then the items' totals in local memory) and writes
// the block's total; the host scans the totals the same way, level by
// level, and scan_add adds each block's offset to its counts. The total of
// the last level's single block is the number of kept elements.
//
// Work-size contract:
//   scan_blocks: 1-D NDRange of nb*WG items in groups of exactly WG (the
//                build option, default 64), nb = ceil(n / (WG*4)); group g
//                scans counts [g*WG*4, (g+1)*WG*4) of in into out and writes
//                their sum to sums[g]. No item returns early (the scan has
//                barriers): every load and store is bounds-checked
//                against n.
//   scan_add:    1-D NDRange, global size >= n, any local size; item i < n
//                adds offs[i / (WG*4)] to out[i]; items with i >= n do
//                nothing.

#ifndef WG
#define WG 64
#endif

__attribute__((reqd_work_group_size(WG, 1, 1)))
__kernel void scan_blocks(__global const int* in, __global int* out, __global int* sums, const ulong n)
{
    __local int part[WG];
    const size_t l = get_local_id(0), g = get_group_id(0);
    const ulong base = ((ulong)g * WG + l) * 4;
    int v[4];
    int run = 0;
    for (int k = 0; k < 4; ++k) {
        v[k] = run;
        run += base + k < n ? in[base + k] : 0;
    }
    part[l] = run;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint off = 1; off < WG; off <<= 1) {
        const int add = l >= off ? part[l - off] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        part[l] += add;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const int prefix = part[l] - run;
    for (int k = 0; k < 4; ++k) {
        if (base + k < n) out[base + k] = prefix + v[k];
    }
    if (l == WG - 1) sums[g] = part[l];
}

__kernel void scan_add(__global int* out, __global const int* offs, const ulong n)
{
    const size_t gid = get_global_id(0);
    if (gid >= n) return;
    out[gid] += offs[gid / (WG * 4)];
}
