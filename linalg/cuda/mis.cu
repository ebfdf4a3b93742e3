// Luby-style maximal independent set rounds (amg::aggregation::mis, Jacobi-style: each round
// reads the previous round's state only), so the device's set is the host's exactly. status[v]:
// 0 = in the set, ~0 = out, else the vertex's priority (smaller wins). Integer only.

#define MIS_IN 0ull
#define MIS_OUT 0xffffffffffffffffull

// The rounds may be queued several at a time (graph.rs's mis_rounds): counts[r] is round r's
// number of moved vertices, and round r > 0 does nothing where round r - 1 moved none (the set
// is then final: a further round would change nothing, so skipping it keeps the same set).
__device__ __forceinline__ bool mis_round_done(const u32* __restrict__ counts, const u32 round) {
    return round > 0 && counts[round - 1] == 0;
}

// m[v] = min of s over v and its neighbours (one thread a vertex: a warp a vertex loses on the
// fine levels' rows of about 27 edges, where a pass is one load an edge).
extern "C" __global__ void closed_min(const u32 n, const u32* __restrict__ row_ptr,
                                      const u32* __restrict__ col, const u64* __restrict__ s,
                                      u64* __restrict__ m, const u32* __restrict__ counts,
                                      const u32 round) {
    const u32 v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n || mis_round_done(counts, round)) return;
    u64 r = s[v];
    for (u32 k = row_ptr[v]; k < row_ptr[v + 1]; ++k) r = min(r, s[col[k]]);
    m[v] = r;
}

// closed_min with a warp a vertex: for graphs of long rows (coarse levels: hundreds of edges a
// row, where a thread a vertex waits on one load after another). The same minimum.
extern "C" __global__ void closed_min_warp(const u32 n, const u32* __restrict__ row_ptr,
                                           const u32* __restrict__ col, const u64* __restrict__ s,
                                           u64* __restrict__ m, const u32* __restrict__ counts,
                                           const u32 round) {
    const u64 v = (blockIdx.x * (u64)blockDim.x + threadIdx.x) / 32;
    const u32 lane = threadIdx.x & 31;
    // v is the same for the warp's lanes: they leave together
    if (v >= n || mis_round_done(counts, round)) return;
    u64 r = lane == 0 ? s[v] : MIS_OUT;
    for (u32 k = row_ptr[v] + lane; k < row_ptr[v + 1]; k += 32) r = min(r, s[col[k]]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) r = min(r, __shfl_xor_sync(FULL_MASK, r, off));
    if (lane == 0) m[v] = r;
}

// A vertex whose reach holds an IN leaves; one whose reach is its own priority joins.
// counts[round] counts the vertices that moved (an integer counter, not a value).
extern "C" __global__ void mis_update(const u32 n, u64* __restrict__ status,
                                      const u64* __restrict__ reach, u32* __restrict__ counts,
                                      const u32 round) {
    const u32 v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n || mis_round_done(counts, round)) return;
    const u64 s = status[v];
    if (s == MIS_IN || s == MIS_OUT) return;
    const u64 r = reach[v];
    if (r == MIS_IN) {
        status[v] = MIS_OUT;
        atomicAdd(counts + round, 1u);
    } else if (r == s) {
        status[v] = MIS_IN;
        atomicAdd(counts + round, 1u);
    }
}
