// The strength graph and the aggregation around an MIS on the device (amg::strength_graph,
// amg::aggregation's roots and leftover rounds), the same edges, weights and aggregates as the
// host: the per-edge arithmetic is the host's IEEE operations (a product, a correctly rounded
// sqrt and division, --fmad=false), the scans (symbolic.cu's) are integer sums, and every
// aggregation round reads the previous round's array only (owner-computes, no atomics on values).

#define UNAGG 0xffffffffu
#define FULL_WARP 0xffffffffu
#define MIS_IN 0ull
#define MIS_OUT 0xffffffffffffffffull

// ---- strength graph (amg::strength_graph) ----

// dnorm[i] = norms[diagonal slot of row i]; a row without one raises *missing to n - i
// (atomicMax: the first such row wins) and gets 0.
extern "C" __global__ void strength_diagonal(const u32 n, const u32* __restrict__ row_ptr,
                                             const u32* __restrict__ col,
                                             const double* __restrict__ norms,
                                             double* __restrict__ dnorm, u32* __restrict__ missing) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const u32 k = find_sorted(col, row_ptr[i], row_ptr[i + 1], i);
    if (k == NOT_FOUND) {
        atomicMax(missing, n - i);
        dnorm[i] = 0.0;
    } else {
        dnorm[i] = norms[k];
    }
}

// The host's weight_of(i, k): true with *w = norms[k] / sqrt(dnorm[i] dnorm[j]) when slot k
// (column j) is an off-diagonal nonzero block of weight >= threshold.
// The weight of a block of norm nk between rows of diagonal norms di and dj: true with
// *w = nk / sqrt(di dj) when the block is off the diagonal, nonzero and of weight >= threshold.
__device__ __forceinline__ bool strong_weight_of(const bool diagonal, const double nk,
                                                 const double di, const double dj,
                                                 const double threshold, double* w) {
    const double denom = sqrt(di * dj);
    if (diagonal || nk == 0.0 || denom == 0.0) return false;
    *w = nk / denom;
    return *w >= threshold;
}
__device__ __forceinline__ bool strong_weight(const u32 i, const u32 j, const double nk,
                                              const double* __restrict__ dnorm,
                                              const double threshold, double* w) {
    return strong_weight_of(j == i, nk, dnorm[i], dnorm[j], threshold, w);
}

// The three passes below run one warp a row (i, and so every loop bound, is the same on all
// lanes; lane l takes the row's slots l, l + 32, ...): a coarse level's rows hold a hundred
// blocks and more, each weight a correctly rounded sqrt and division. Each slot's arithmetic is
// the sequential loop's; counts are sums, and the fill keeps the column order (ballots).
// warp_row (the prelude): this warp's row (or vertex, in the aggregate kernels).

// coupled[i] = 1 when row i keeps at least one off-diagonal edge (the host's pass 1).
extern "C" __global__ void strength_coupled(const u32 n, const u32* __restrict__ row_ptr,
                                            const u32* __restrict__ col,
                                            const double* __restrict__ norms,
                                            const double* __restrict__ dnorm, const double threshold,
                                            u32* __restrict__ coupled) {
    const u32 i = warp_row(n), lane = threadIdx.x % 32;
    if (i >= n) return;
    const u32 lo = row_ptr[i], hi = row_ptr[i + 1];
    bool any = false;
    double w;
    for (u32 base = lo; base < hi && !any; base += 32) {
        const u32 k = base + lane;
        any = __any_sync(FULL_WARP,
                         k < hi && strong_weight(i, col[k], norms[k], dnorm, threshold, &w));
    }
    if (lane == 0) coupled[i] = any ? 1u : 0u;
}

// Whether slot k (< hi) of row i is a kept edge: strong, between two coupled rows; *w its weight.
__device__ __forceinline__ bool kept_edge(const u32 i, const u32 k, const u32 hi,
                                          const u32* __restrict__ col,
                                          const double* __restrict__ norms,
                                          const double* __restrict__ dnorm, const double threshold,
                                          const u32* __restrict__ coupled, double* w) {
    if (k >= hi) return false;
    const u32 j = col[k];
    return coupled[j] && strong_weight(i, j, norms[k], dnorm, threshold, w);
}

// counts[i] = the kept edges of row i: strong, between two coupled rows (the host's pass 2).
extern "C" __global__ void strength_count(const u32 n, const u32* __restrict__ row_ptr,
                                          const u32* __restrict__ col,
                                          const double* __restrict__ norms,
                                          const double* __restrict__ dnorm, const double threshold,
                                          const u32* __restrict__ coupled, u32* __restrict__ counts) {
    const u32 i = warp_row(n), lane = threadIdx.x % 32;
    if (i >= n) return;
    u32 c = 0;
    double w;
    if (coupled[i]) {
        const u32 lo = row_ptr[i], hi = row_ptr[i + 1];
        for (u32 base = lo; base < hi; base += 32)
            c += __popc(__ballot_sync(
                FULL_WARP, kept_edge(i, base + lane, hi, col, norms, dnorm, threshold, coupled, &w)));
    }
    if (lane == 0) counts[i] = c;
}

// The kept edges of row i at g_ptr[i].., in the operator's column order.
extern "C" __global__ void strength_fill(const u32 n, const u32* __restrict__ row_ptr,
                                         const u32* __restrict__ col,
                                         const double* __restrict__ norms,
                                         const double* __restrict__ dnorm, const double threshold,
                                         const u32* __restrict__ coupled,
                                         const u32* __restrict__ g_ptr, u32* __restrict__ g_col,
                                         double* __restrict__ g_w) {
    const u32 i = warp_row(n), lane = threadIdx.x % 32;
    if (i >= n || !coupled[i]) return;
    const u32 lo = row_ptr[i], hi = row_ptr[i + 1];
    const u32 below = (1u << lane) - 1u;
    u32 p = g_ptr[i];
    for (u32 base = lo; base < hi; base += 32) {
        const u32 k = base + lane;
        double w = 0.0;
        const bool keep = kept_edge(i, k, hi, col, norms, dnorm, threshold, coupled, &w);
        const u32 kept = __ballot_sync(FULL_WARP, keep);
        if (keep) {
            const u32 q = p + __popc(kept & below);
            g_col[q] = col[k];
            g_w[q] = w;
        }
        p += __popc(kept);
    }
}

// ---- MIS priorities (amg::aggregation::priority) ----
// 1 + (min(degree, 2^14 - 1) << 48 | (splitmix64(id) & 0xffff) << 32 | id): ascending degree,
// then a hash, then the id (the vertex's, or on ranks its serial id).
__device__ __forceinline__ u64 mis_priority(const u64 id, const u64 degree) {
    u64 z = id + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z = z ^ (z >> 31);
    const u64 deg = degree < 16383ull ? degree : 16383ull;
    return 1ull + ((deg << 48) | ((z & 0xffffull) << 32) | id);
}
// status[v] = MIS_OUT for an isolated vertex, else its priority.
extern "C" __global__ void mis_priorities(const u32 n, const u32* __restrict__ g_ptr,
                                          u64* __restrict__ status) {
    const u32 v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    const u64 degree = g_ptr[v + 1] - g_ptr[v];
    status[v] = degree == 0 ? MIS_OUT : mis_priority((u64)v, degree);
}

// ---- aggregation around the roots (amg::aggregation::aggregate_with_roots) ----

// is_root[v] = 1 for the vertices in the set (the scan's input: roots numbered in vertex order).
extern "C" __global__ void root_flags(const u32 n, const u64* __restrict__ status,
                                      u32* __restrict__ is_root) {
    const u32 v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    is_root[v] = status[v] == MIS_IN ? 1u : 0u;
}

// root_id[v] = the root's number (the scan of root_flags) for a root, UNAGG otherwise.
extern "C" __global__ void root_ids(const u32 n, const u64* __restrict__ status,
                                    const u32* __restrict__ scanned, u32* __restrict__ root_id) {
    const u32 v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    root_id[v] = status[v] == MIS_IN ? scanned[v] : UNAGG;
}

// amg::aggregation::most_connected_neighbour_aggregate: over v's edges in order, the aggregates
// (UNAGG skipped) in order of first appearance, each with its edges counted; the most edges win,
// ties to the smallest aggregate; UNAGG without one. The weights are not read (they decided which
// edges the graph kept).
// The aggregates of an array, one u32 a vertex.
struct VertexAggregates {
    const u32* __restrict__ agg;
    __device__ u32 operator()(const u32 u) const { return agg[u]; }
};
// One warp a vertex (the kernels below run 32 threads a vertex; v, and so every loop bound, is
// the same on all lanes): each lane takes every 32nd edge's aggregate as a candidate and counts
// its edges over the whole row (the row's labels passed round the warp 32 at a time), then the
// warp keeps the candidate of most edges, ties to the smallest: the sequential scan's answer
// (a total order), in about deg^2 / 32 steps a lane instead of deg^2 (coarse levels' rows have a
// hundred edges and more). Every lane returns it.
template <class Aggregates>
__device__ u32 most_connected_neighbour(const u32 v, const u32* __restrict__ g_ptr,
                                        const u32* __restrict__ g_col, const Aggregates agg) {
    const u32 lane = threadIdx.x % 32;
    const u32 lo = g_ptr[v], hi = g_ptr[v + 1];
    u32 best = UNAGG;
    u32 best_n = 0;
    for (u32 base = lo; base < hi; base += 32) {
        const u32 k = base + lane;
        const u32 a = k < hi ? agg(g_col[k]) : UNAGG;
        u32 n = 0;
        for (u32 chunk = lo; chunk < hi; chunk += 32) {
            const u32 q = chunk + lane;
            const u32 x = q < hi ? agg(g_col[q]) : UNAGG;
            const u32 m = min(32u, hi - chunk);
            for (u32 s = 0; s < m; ++s) n += __shfl_sync(FULL_WARP, x, s) == a ? 1u : 0u;
        }
        if (a != UNAGG && (n > best_n || (n == best_n && a < best))) {
            best = a;
            best_n = n;
        }
    }
    for (u32 w = 16; w > 0; w >>= 1) {
        const u32 o = __shfl_xor_sync(FULL_WARP, best, w);
        const u32 on = __shfl_xor_sync(FULL_WARP, best_n, w);
        if (on > best_n || (on == best_n && o < best)) {
            best = o;
            best_n = on;
        }
    }
    return best;
}

// Roots take their neighbours: agg[v] = root_id[v] for a root, UNAGG for an isolated vertex,
// else the neighbouring root's aggregate it has the most edges to. One warp a vertex.
extern "C" __global__ void aggregate_roots(const u32 n, const u32* __restrict__ g_ptr,
                                           const u32* __restrict__ g_col,
                                           const u32* __restrict__ root_id, u32* __restrict__ agg) {
    const u32 v = warp_row(n);
    if (v >= n) return;
    const bool lead = threadIdx.x % 32 == 0;
    if (root_id[v] != UNAGG) {
        if (lead) agg[v] = root_id[v];
    } else if (g_ptr[v + 1] == g_ptr[v]) {
        if (lead) agg[v] = UNAGG;
    } else {
        const u32 b = most_connected_neighbour(v, g_ptr, g_col, VertexAggregates{root_id});
        if (lead) agg[v] = b;
    }
}

// One leftover round: an unaggregated, non-isolated vertex joins the neighbouring aggregate of
// `prev` it has the most edges to; *changed counts the vertices that joined. One warp a vertex.
extern "C" __global__ void aggregate_round(const u32 n, const u32* __restrict__ g_ptr,
                                           const u32* __restrict__ g_col,
                                           const u32* __restrict__ prev, u32* __restrict__ next,
                                           u32* __restrict__ changed) {
    const u32 v = warp_row(n);
    if (v >= n) return;
    const bool lead = threadIdx.x % 32 == 0;
    const u32 a = prev[v];
    if (a != UNAGG || g_ptr[v + 1] == g_ptr[v]) {
        if (lead) next[v] = a;
        return;
    }
    const u32 b = most_connected_neighbour(v, g_ptr, g_col, VertexAggregates{prev});
    if (lead) {
        next[v] = b;
        if (b != UNAGG) atomicAdd(changed, 1u);
    }
}

// ---- on ranks (amg::dist_aggregation) ----
// A rank's local vertices: its owned rows 0..n, then the ghosts of its operator's halo (local
// column n + c of the off-diagonal part's column c). A vertex's state is an owned array and the
// ghosts' array the halo filled: 8-byte values (u64 states and labels as the bits of doubles, so
// the exchange copies them unchanged).
__device__ __forceinline__ u64 local_state(const u64* __restrict__ owned,
                                           const u64* __restrict__ ghost, const u32 n,
                                           const u32 u) {
    return u < n ? owned[u] : ghost[u - n];
}
__device__ __forceinline__ double local_value(const double* __restrict__ owned,
                                              const double* __restrict__ ghost, const u32 n,
                                              const u32 u) {
    return u < n ? owned[u] : ghost[u - n];
}
// The aggregate labels of owned and ghost vertices (u64 values below 2^32).
struct LocalAggregates {
    const u64* __restrict__ owned;
    const u64* __restrict__ ghost;
    u32 n;
    __device__ u32 operator()(const u32 u) const { return (u32)local_state(owned, ghost, n, u); }
};
// The passes below run one warp an owned row (as the serial passes): the row's slots are the
// diagonal part's, then the off-diagonal part's, slot t of the row being lane t % 32's.
struct DistRow {
    u32 n, i, d_lo, d_n, o_lo, o_n;
    const u32* __restrict__ d_col;
    const double* __restrict__ d_norms;
    const u32* __restrict__ o_col;
    const double* __restrict__ o_norms;
    const double* __restrict__ dnorm;
    const double* __restrict__ dnorm_ghost;
    double threshold;
    __device__ u32 slots() const { return d_n + o_n; }
    // Whether slot t (< slots()) is strong (dist_strength_graph's pass 1 weight); its local
    // column (n + c for the off-diagonal part's column c) in *j, its weight in *w.
    __device__ bool strong(const u32 t, u32* j, double* w) const {
        if (t < d_n) {
            const u32 k = d_lo + t;
            *j = d_col[k];
            return strong_weight_of(*j == i, d_norms[k], dnorm[i], dnorm[*j], threshold, w);
        }
        const u32 k = o_lo + (t - d_n), c = o_col[k];
        *j = n + c;
        return strong_weight_of(false, o_norms[k], dnorm[i], dnorm_ghost[c], threshold, w);
    }
};
__device__ __forceinline__ DistRow dist_row(
    const u32 n, const u32 i, const u32* __restrict__ d_ptr, const u32* __restrict__ d_col,
    const double* __restrict__ d_norms, const u32* __restrict__ o_ptr,
    const u32* __restrict__ o_col, const double* __restrict__ o_norms,
    const double* __restrict__ dnorm, const double* __restrict__ dnorm_ghost,
    const double threshold) {
    return DistRow{n,      i,       d_ptr[i], d_ptr[i + 1] - d_ptr[i], o_ptr[i],
                   o_ptr[i + 1] - o_ptr[i], d_col, d_norms, o_col, o_norms, dnorm,
                   dnorm_ghost, threshold};
}
// Whether slot t of the row is a kept edge (strong, to a coupled column), *j and *w as strong.
__device__ __forceinline__ bool dist_kept(const DistRow& r, const u32 t,
                                          const double* __restrict__ coupled,
                                          const double* __restrict__ coupled_ghost, u32* j,
                                          double* w) {
    if (t >= r.slots()) return false;
    if (!r.strong(t, j, w)) return false;
    return (*j < r.n ? coupled[*j] : coupled_ghost[*j - r.n]) == 1.0;
}
// coupled[i] = 1.0 when owned row i keeps an off-diagonal edge (dist_strength_graph's pass 1)
// in its diagonal part (columns 0..n) or its off-diagonal part (columns n + c).
extern "C" __global__ void dist_strength_coupled(
    const u32 n, const u32* __restrict__ d_ptr, const u32* __restrict__ d_col,
    const double* __restrict__ d_norms, const u32* __restrict__ o_ptr,
    const u32* __restrict__ o_col, const double* __restrict__ o_norms,
    const double* __restrict__ dnorm, const double* __restrict__ dnorm_ghost,
    const double threshold, double* __restrict__ coupled) {
    const u32 i = warp_row(n), lane = threadIdx.x % 32;
    if (i >= n) return;
    const DistRow r =
        dist_row(n, i, d_ptr, d_col, d_norms, o_ptr, o_col, o_norms, dnorm, dnorm_ghost, threshold);
    bool any = false;
    u32 j;
    double w;
    for (u32 base = 0; base < r.slots() && !any; base += 32) {
        const u32 t = base + lane;
        any = __any_sync(FULL_WARP, t < r.slots() && r.strong(t, &j, &w));
    }
    if (lane == 0) coupled[i] = any ? 1.0 : 0.0;
}
// counts[i] = the kept edges of owned row i (dist_strength_graph's count pass).
extern "C" __global__ void dist_strength_count(
    const u32 n, const u32* __restrict__ d_ptr, const u32* __restrict__ d_col,
    const double* __restrict__ d_norms, const u32* __restrict__ o_ptr,
    const u32* __restrict__ o_col, const double* __restrict__ o_norms,
    const double* __restrict__ dnorm, const double* __restrict__ dnorm_ghost,
    const double threshold, const double* __restrict__ coupled,
    const double* __restrict__ coupled_ghost, u32* __restrict__ counts) {
    const u32 i = warp_row(n), lane = threadIdx.x % 32;
    if (i >= n) return;
    u32 c = 0;
    if (coupled[i] == 1.0) {
        const DistRow r = dist_row(n, i, d_ptr, d_col, d_norms, o_ptr, o_col, o_norms, dnorm,
                                   dnorm_ghost, threshold);
        u32 j;
        double w;
        for (u32 base = 0; base < r.slots(); base += 32)
            c += __popc(__ballot_sync(
                FULL_WARP, dist_kept(r, base + lane, coupled, coupled_ghost, &j, &w)));
    }
    if (lane == 0) counts[i] = c;
}
// The kept edges of owned row i at g_ptr[i].., ordered by their columns' serial ids (unique):
// each kept edge goes to g_ptr[i] + the number of the row's kept edges of smaller serial id
// (the keys passed round the warp 32 at a time), the one order the serial graph has.
extern "C" __global__ void dist_strength_fill(
    const u32 n, const u32* __restrict__ d_ptr, const u32* __restrict__ d_col,
    const double* __restrict__ d_norms, const u32* __restrict__ o_ptr,
    const u32* __restrict__ o_col, const double* __restrict__ o_norms,
    const double* __restrict__ dnorm, const double* __restrict__ dnorm_ghost,
    const double threshold, const double* __restrict__ coupled,
    const double* __restrict__ coupled_ghost, const u64* __restrict__ serial,
    const u64* __restrict__ serial_ghost, const u32* __restrict__ g_ptr, u32* __restrict__ g_col,
    double* __restrict__ g_w) {
    const u32 i = warp_row(n), lane = threadIdx.x % 32;
    if (i >= n || coupled[i] != 1.0) return;
    const DistRow r =
        dist_row(n, i, d_ptr, d_col, d_norms, o_ptr, o_col, o_norms, dnorm, dnorm_ghost, threshold);
    const u32 lo = g_ptr[i];
    for (u32 base = 0; base < r.slots(); base += 32) {
        u32 j = 0;
        double w = 0.0;
        const bool keep = dist_kept(r, base + lane, coupled, coupled_ghost, &j, &w);
        const u64 key = keep ? local_state(serial, serial_ghost, n, j) : 0;
        u32 below = 0;
        for (u32 other = 0; other < r.slots(); other += 32) {
            u32 oj = 0;
            double ow;
            const bool okeep = dist_kept(r, other + lane, coupled, coupled_ghost, &oj, &ow);
            const u64 okey = okeep ? local_state(serial, serial_ghost, n, oj) : 0;
            const u32 kept = __ballot_sync(FULL_WARP, okeep);
            for (u32 s = 0; s < 32; ++s) {
                const u64 k = __shfl_sync(FULL_WARP, okey, s);
                if ((kept >> s) & 1u) below += k < key ? 1u : 0u;
            }
        }
        if (keep) {
            g_col[lo + below] = j;
            g_w[lo + below] = w;
        }
    }
}
// status[v] of owned vertex v: MIS_OUT when isolated, else the priority of its serial id
// (mis_priorities' formula at the serial id: the serial run's priority).
extern "C" __global__ void dist_mis_priorities(const u32 n, const u32* __restrict__ g_ptr,
                                               const u64* __restrict__ serial,
                                               u64* __restrict__ status) {
    const u32 v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    const u64 degree = g_ptr[v + 1] - g_ptr[v];
    status[v] = degree == 0 ? MIS_OUT : mis_priority(serial[v], degree);
}
// m[v] = the minimum of s over owned vertex v and its neighbours (owned or ghost).
extern "C" __global__ void dist_closed_min(const u32 n, const u32* __restrict__ g_ptr,
                                           const u32* __restrict__ g_col,
                                           const u64* __restrict__ s,
                                           const u64* __restrict__ s_ghost,
                                           u64* __restrict__ m) {
    const u32 v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    u64 r = s[v];
    for (u32 k = g_ptr[v]; k < g_ptr[v + 1]; ++k) r = min(r, local_state(s, s_ghost, n, g_col[k]));
    m[v] = r;
}
// label[v] = the serial id of a root (the set's vertices), UNAGG for the others; a root whose
// id does not fit a u32 label raises *too_large to its id (atomicMax: the largest).
extern "C" __global__ void dist_root_labels(const u32 n, const u64* __restrict__ status,
                                            const u64* __restrict__ serial,
                                            u64* __restrict__ label, u64* __restrict__ too_large) {
    const u32 v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    if (status[v] != MIS_IN) {
        label[v] = UNAGG;
    } else if (serial[v] > 0xffffffffull) {
        label[v] = UNAGG;
        atomicMax((unsigned long long*)too_large, (unsigned long long)serial[v]);
    } else {
        label[v] = serial[v];
    }
}
// Roots take their neighbours: agg[v] = a root's own label, UNAGG for an isolated vertex, else
// the label of the neighbouring root it has the most edges to (owned or ghost). One warp a vertex.
extern "C" __global__ void dist_aggregate_roots(const u32 n, const u32* __restrict__ g_ptr,
                                                const u32* __restrict__ g_col,
                                                const u64* __restrict__ root,
                                                const u64* __restrict__ root_ghost,
                                                u64* __restrict__ agg) {
    const u32 v = warp_row(n);
    if (v >= n) return;
    const bool lead = threadIdx.x % 32 == 0;
    if (root[v] != UNAGG) {
        if (lead) agg[v] = root[v];
    } else if (g_ptr[v + 1] == g_ptr[v]) {
        if (lead) agg[v] = UNAGG;
    } else {
        const u32 b =
            most_connected_neighbour(v, g_ptr, g_col, LocalAggregates{root, root_ghost, n});
        if (lead) agg[v] = b;
    }
}
// One leftover round on ranks: an unaggregated, non-isolated owned vertex joins the neighbouring
// aggregate of `prev` (owned or ghost) it has the most edges to; *changed counts the vertices
// that joined. One warp a vertex.
extern "C" __global__ void dist_aggregate_round(const u32 n, const u32* __restrict__ g_ptr,
                                                const u32* __restrict__ g_col,
                                                const u64* __restrict__ prev,
                                                const u64* __restrict__ prev_ghost,
                                                u64* __restrict__ next, u32* __restrict__ changed) {
    const u32 v = warp_row(n);
    if (v >= n) return;
    const bool lead = threadIdx.x % 32 == 0;
    const u64 a = prev[v];
    if (a != UNAGG || g_ptr[v + 1] == g_ptr[v]) {
        if (lead) next[v] = a;
        return;
    }
    const u32 b = most_connected_neighbour(v, g_ptr, g_col, LocalAggregates{prev, prev_ghost, n});
    if (lead) {
        next[v] = b;
        if (b != UNAGG) atomicAdd(changed, 1u);
    }
}
