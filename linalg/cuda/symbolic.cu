// Symbolic phases on the device, built from patterns already there (u32 row offsets and sorted,
// unique columns per row): prefix sums of counts, the pattern of a product C = L R, the
// transpose of a pattern with its slot map, the row of every slot and the terms per row of a
// product. Integers only and no order left to chance: every output equals the host's
// (linalg::spgemm::product_pattern, linalg::transpose::transpose_pattern) entry for entry.

// ---- exclusive prefix sums of u32 counts (three passes; sums in u64) ----
//
// scan_tiles: the sum of each tile of SCAN_TILE counts; scan_tile_sums (one block): their
// exclusive prefix in place, the total after the last; scan_write: each count's exclusive
// prefix (u32: the host checks the total fits first) and the total at out[n].
#define SCAN_THREADS 256
#define SCAN_ITEMS 8
#define SCAN_TILE (SCAN_THREADS * SCAN_ITEMS)

// The exclusive prefix of v over the block's threads; *total: the block's sum. Every thread of
// the block must call it (it synchronises).
__device__ __forceinline__ u64 block_exclusive_scan(const u64 v, u64* total) {
    __shared__ u64 sh[SCAN_THREADS];
    sh[threadIdx.x] = v;
    __syncthreads();
    for (u32 off = 1; off < SCAN_THREADS; off <<= 1) {
        const u64 add = threadIdx.x >= off ? sh[threadIdx.x - off] : 0;
        __syncthreads();
        sh[threadIdx.x] += add;
        __syncthreads();
    }
    const u64 inclusive = sh[threadIdx.x];
    *total = sh[SCAN_THREADS - 1];
    __syncthreads();
    return inclusive - v;
}

// The counts thread threadIdx.x of tile `tile` holds, summed (items t*ITEMS.. of the tile).
__device__ __forceinline__ u64 thread_items_sum(const u64 n, const u32* __restrict__ counts,
                                                const u64 tile) {
    const u64 first = tile * SCAN_TILE + (u64)threadIdx.x * SCAN_ITEMS;
    u64 s = 0;
#pragma unroll
    for (u32 u = 0; u < SCAN_ITEMS; ++u) {
        if (first + u < n) s += counts[first + u];
    }
    return s;
}

// Launched with SCAN_THREADS threads per block, one block per tile.
extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
scan_tiles(const u64 n, const u32* __restrict__ counts, u64* __restrict__ tile_sums) {
    u64 total;
    block_exclusive_scan(thread_items_sum(n, counts, blockIdx.x), &total);
    if (threadIdx.x == 0) tile_sums[blockIdx.x] = total;
}

// One block of SCAN_THREADS threads; tile_sums holds n_tiles + 1 values, *total_out the sum.
extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
scan_tile_sums(const u64 n_tiles, u64* __restrict__ tile_sums, u64* __restrict__ total_out) {
    u64 carry = 0;
    for (u64 base = 0; base < n_tiles; base += SCAN_THREADS) {
        const u64 i = base + threadIdx.x;
        const u64 v = i < n_tiles ? tile_sums[i] : 0;
        u64 total;
        const u64 before = block_exclusive_scan(v, &total);
        if (i < n_tiles) tile_sums[i] = carry + before;
        carry += total;
    }
    if (threadIdx.x == 0) {
        tile_sums[n_tiles] = carry;
        *total_out = carry;
    }
}

// Launched as scan_tiles; out holds n + 1 values.
extern "C" __global__ void __launch_bounds__(SCAN_THREADS)
scan_write(const u64 n, const u32* __restrict__ counts, const u64* __restrict__ tile_offsets,
           u32* __restrict__ out) {
    u64 total;
    u64 run = tile_offsets[blockIdx.x] +
              block_exclusive_scan(thread_items_sum(n, counts, blockIdx.x), &total);
    const u64 first = blockIdx.x * (u64)SCAN_TILE + (u64)threadIdx.x * SCAN_ITEMS;
#pragma unroll
    for (u32 u = 0; u < SCAN_ITEMS; ++u) {
        if (first + u < n) {
            out[first + u] = (u32)run;
            run += counts[first + u];
        }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) out[n] = (u32)tile_offsets[gridDim.x];
}

// ---- the pattern of C = L R by a hash table per row (many short rows: A P, A P0) ----
//
// A warp a row i of C: the lanes take L's slots e of the row (lane, lane + 32, ...) and insert
// the columns of R's row l_col[e] into the warp's table in shared memory (open addressing,
// linear probing; a plain read first, an atomicCAS only into an empty slot). The table holds
// hash_size(terms) slots, twice the row's terms rounded up to a power of two, at most
// HASH_CAP: rows of more distinct columns than that ("full") go to the merge below, listed by
// product_hash_count. product_hash_count writes each row's number of distinct columns;
// product_hash_fill inserts them again, packs the table's columns to its front and writes each
// at c_ptr[i] + its rank among them (ascending, unique: the merge's row, the host's).
// Launched with HASH_WARPS warps a block.
#ifndef HASH_CAP
#define HASH_CAP 1024
#endif
#define HASH_WARPS 4

__device__ __forceinline__ u32 hash_size(const u64 terms) {
    u32 size = 32;
    while (size < HASH_CAP && size < 2 * terms) size <<= 1;
    return size;
}

// Inserts row i's columns into `table` (cleared here); returns the row's distinct columns
// (the same on every lane), or NOT_FOUND where they do not fit (full). *size: the table's size.
__device__ __forceinline__ u32 hash_row(const u32 i, const u32 lane,
                                        const u32* __restrict__ l_ptr,
                                        const u32* __restrict__ l_col,
                                        const u32* __restrict__ r_ptr,
                                        const u32* __restrict__ r_col, u32* table, u32* size) {
    const u32 lo = l_ptr[i], hi = l_ptr[i + 1];
    u64 terms = 0;
    for (u32 e = lo + lane; e < hi; e += 32) {
        const u32 k = l_col[e];
        terms += r_ptr[k + 1] - r_ptr[k];
    }
    for (u32 w = 16; w > 0; w >>= 1) terms += __shfl_xor_sync(FULL_MASK, terms, w);
    const u32 n = hash_size(terms);
    *size = n;
    for (u32 s = lane; s < n; s += 32) table[s] = NOT_FOUND;
    __syncwarp();
    const u32 shift = 32u - (u32)(__ffs((int)n) - 1);
    volatile u32* seen = table;
    u32 mine = 0;
    bool full = false;
    for (u32 e = lo + lane; e < hi && !full; e += 32) {
        const u32 k = l_col[e];
        for (u32 r = r_ptr[k]; r < r_ptr[k + 1] && !full; ++r) {
            const u32 c = r_col[r];
            u32 s = (c * 0x9E3779B1u) >> shift;
            u32 probes = 0;
            for (;;) {
                const u32 v = seen[s];
                if (v == c) break;
                if (v == NOT_FOUND) {
                    const u32 old = atomicCAS(table + s, NOT_FOUND, c);
                    if (old == NOT_FOUND) {
                        ++mine;
                        break;
                    }
                    if (old == c) break;
                }
                if (++probes == n) {
                    full = true;
                    break;
                }
                s = (s + 1) & (n - 1);
            }
        }
    }
    __syncwarp();
    if (__any_sync(FULL_MASK, full)) return NOT_FOUND;
    for (u32 w = 16; w > 0; w >>= 1) mine += __shfl_xor_sync(FULL_MASK, mine, w);
    return mine;
}

// `full` receives the rows that do not fit (in any order), *n_full their number (zeroed).
extern "C" __global__ void __launch_bounds__(HASH_WARPS * 32)
product_hash_count(const u32 n_rows, const u32* __restrict__ l_ptr,
                   const u32* __restrict__ l_col, const u32* __restrict__ r_ptr,
                   const u32* __restrict__ r_col, u32* __restrict__ count,
                   u32* __restrict__ full, u32* __restrict__ n_full) {
    __shared__ u32 tables[HASH_WARPS][HASH_CAP];
    const u32 i = warp_row(n_rows), lane = threadIdx.x % 32;
    if (i >= n_rows) return;
    u32 size;
    const u32 n = hash_row(i, lane, l_ptr, l_col, r_ptr, r_col, tables[threadIdx.x / 32], &size);
    if (lane != 0) return;
    if (n == NOT_FOUND) {
        full[atomicAdd(n_full, 1u)] = i;
        count[i] = 0;
    } else {
        count[i] = n;
    }
}

extern "C" __global__ void __launch_bounds__(HASH_WARPS * 32)
product_hash_fill(const u32 n_rows, const u32* __restrict__ l_ptr,
                  const u32* __restrict__ l_col, const u32* __restrict__ r_ptr,
                  const u32* __restrict__ r_col, const u32* __restrict__ c_ptr,
                  u32* __restrict__ c_col) {
    __shared__ u32 tables[HASH_WARPS][HASH_CAP];
    const u32 i = warp_row(n_rows), lane = threadIdx.x % 32;
    if (i >= n_rows) return;
    u32* table = tables[threadIdx.x / 32];
    u32 size;
    if (hash_row(i, lane, l_ptr, l_col, r_ptr, r_col, table, &size) == NOT_FOUND) return;
    // pack: a position is read by its lane before any lane of its 32 writes (at or before it)
    u32 packed = 0;
    for (u32 base = 0; base < size; base += 32) {
        const u32 v = table[base + lane];
        const u32 taken = __ballot_sync(FULL_MASK, v != NOT_FOUND);
        __syncwarp();
        if (v != NOT_FOUND) table[packed + __popc(taken & ((1u << lane) - 1u))] = v;
        packed += __popc(taken);
        __syncwarp();
    }
    const u32 out = c_ptr[i];
    for (u32 t = lane; t < packed; t += 32) {
        const u32 c = table[t];
        u32 rank = 0;
        for (u32 q = 0; q < packed; ++q) rank += table[q] < c ? 1u : 0u;
        c_col[out + rank] = c;
    }
}

// ---- the rows that do not fit a table: a merge of R's rows, one thread a row ----
//
// Row i of C is the sorted union of R's rows k over the columns k of L's row i, found by a merge:
// state[e] = (position in R's row l_col[e], the column there, or NOT_FOUND past its end) for
// each slot e of L's row; each step outputs the smallest column and advances every row that
// holds it (R's rows are sorted and unique, so the output is too). `state` holds a uint2 per
// slot of L (scratch, written before it is read). product_merge_count writes the listed rows'
// lengths, product_merge_fill their columns at c_ptr[i]; both walk the same merge.
template <bool FILL>
__device__ __forceinline__ void merge_row(const u32 i, const u32* __restrict__ l_ptr,
                                          const u32* __restrict__ l_col,
                                          const u32* __restrict__ r_ptr,
                                          const u32* __restrict__ r_col, uint2* __restrict__ state,
                                          u32* __restrict__ count, const u32* __restrict__ c_ptr,
                                          u32* __restrict__ c_col) {
    const u32 lo = l_ptr[i], hi = l_ptr[i + 1];
    u32 next = NOT_FOUND;
    for (u32 e = lo; e < hi; ++e) {
        const u32 k = l_col[e];
        const u32 p = r_ptr[k];
        const u32 col = p < r_ptr[k + 1] ? r_col[p] : NOT_FOUND;
        state[e] = make_uint2(p, col);
        next = min(next, col);
    }
    u32 n = 0;
    const u32 out = FILL ? c_ptr[i] : 0;
    while (next != NOT_FOUND) {
        const u32 m = next;
        if (FILL) c_col[out + n] = m;
        ++n;
        next = NOT_FOUND;
        for (u32 e = lo; e < hi; ++e) {
            uint2 s = state[e];
            if (s.y == m) {
                const u32 k = l_col[e];
                s.x += 1;
                s.y = s.x < r_ptr[k + 1] ? r_col[s.x] : NOT_FOUND;
                state[e] = s;
            }
            next = min(next, s.y);
        }
    }
    if (!FILL) count[i] = n;
}

// One thread a listed row (rows[0..n_listed)).
extern "C" __global__ void product_merge_count(const u32 n_listed, const u32* __restrict__ rows,
                                               const u32* __restrict__ l_ptr,
                                               const u32* __restrict__ l_col,
                                               const u32* __restrict__ r_ptr,
                                               const u32* __restrict__ r_col,
                                               uint2* __restrict__ state, u32* __restrict__ count) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_listed) return;
    merge_row<false>(rows[t], l_ptr, l_col, r_ptr, r_col, state, count, nullptr, nullptr);
}

extern "C" __global__ void product_merge_fill(const u32 n_listed, const u32* __restrict__ rows,
                                              const u32* __restrict__ l_ptr,
                                              const u32* __restrict__ l_col,
                                              const u32* __restrict__ r_ptr,
                                              const u32* __restrict__ r_col,
                                              uint2* __restrict__ state,
                                              const u32* __restrict__ c_ptr,
                                              u32* __restrict__ c_col) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_listed) return;
    merge_row<true>(rows[t], l_ptr, l_col, r_ptr, r_col, state, nullptr, c_ptr, c_col);
}

// ---- the pattern of C = L R by a bitmap per row (few, long rows: P^T W) ----
//
// product_bits_mark: a block a row i of L, its bitmap (words_per_row u32) in dynamic shared
// memory where `in_shared` (written to row i of `bitmap` at the end), else in row i of
// `bitmap` itself (zeroed); each warp takes slots e of the row and its lanes the columns of R's
// row l_col[e], setting their bits (a plain read first, an atomic OR only for a bit not yet
// set: the bits do not depend on the order); count[i]: the row's bits. product_bits_fill: a
// warp a row, the set bits of row i, low word and low bit first (ascending columns: the
// merge's row), at c_ptr[i]. (A thread per slot of L, all ORing into one row's words in global
// memory, serialised on those words: 29 ms for the ranks' fine P_owned^T (A P) at 104^3 on one rank.)
#define BITMAP_THREADS 256

extern "C" __global__ void __launch_bounds__(BITMAP_THREADS)
product_bits_mark(const u32 n_rows, const u32* __restrict__ l_ptr, const u32* __restrict__ l_col,
                  const u32* __restrict__ r_ptr, const u32* __restrict__ r_col,
                  const u32 words_per_row, const u32 in_shared, u32* __restrict__ bitmap,
                  u32* __restrict__ count) {
    extern __shared__ u32 shared_words[];
    __shared__ u32 warp_bits[BITMAP_THREADS / 32];
    const u32 i = blockIdx.x;
    if (i >= n_rows) return;
    u32* global_row = bitmap + (u64)i * words_per_row;
    u32* row = in_shared ? shared_words : global_row;
    if (in_shared) {
        for (u32 w = threadIdx.x; w < words_per_row; w += blockDim.x) row[w] = 0;
    }
    __syncthreads();
    volatile u32* seen = row;
    const u32 warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
    for (u32 e = l_ptr[i] + warp; e < l_ptr[i + 1]; e += warps) {
        const u32 k = l_col[e];
        for (u32 r = r_ptr[k] + lane; r < r_ptr[k + 1]; r += 32) {
            const u32 c = r_col[r];
            const u32 bit = 1u << (c & 31u);
            if ((seen[c >> 5] & bit) == 0u) atomicOr(row + (c >> 5), bit);
        }
    }
    __syncthreads();
    u32 n = 0;
    for (u32 w = threadIdx.x; w < words_per_row; w += blockDim.x) {
        const u32 v = row[w];
        if (in_shared) global_row[w] = v;
        n += __popc(v);
    }
    for (u32 w = 16; w > 0; w >>= 1) n += __shfl_xor_sync(FULL_MASK, n, w);
    if (lane == 0) warp_bits[warp] = n;
    __syncthreads();
    if (threadIdx.x == 0) {
        u32 total = 0;
        for (u32 w = 0; w < warps; ++w) total += warp_bits[w];
        count[i] = total;
    }
}

extern "C" __global__ void product_bits_fill(const u32 n_rows, const u32 words_per_row,
                                             const u32* __restrict__ bitmap,
                                             const u32* __restrict__ c_ptr,
                                             u32* __restrict__ c_col) {
    const u32 i = warp_row(n_rows), lane = threadIdx.x % 32;
    if (i >= n_rows) return;
    const u32* row = bitmap + (u64)i * words_per_row;
    u32 out = c_ptr[i];
    for (u32 base = 0; base < words_per_row; base += 32) {
        const u32 w = base + lane;
        u32 bits = w < words_per_row ? row[w] : 0u;
        const u32 n = __popc(bits);
        // this lane's first place: the bits of the lanes before it (an inclusive scan less n)
        u32 before = n;
        for (u32 d = 1; d < 32; d <<= 1) {
            const u32 o = __shfl_up_sync(FULL_MASK, before, d);
            if (lane >= d) before += o;
        }
        const u32 total = __shfl_sync(FULL_MASK, before, 31);
        u32 at = out + before - n;
        while (bits != 0u) {
            const u32 b = (u32)(__ffs((int)bits) - 1);
            c_col[at++] = (w << 5) | b;
            bits &= bits - 1u;
        }
        out += total;
    }
}

// Terms of row i of C = L R: the sum of the lengths of R's rows k over the columns k of L's row
// i (saturating at 2^32 - 1).
extern "C" __global__ void product_terms(const u32 n_rows, const u32* __restrict__ l_ptr,
                                         const u32* __restrict__ l_col,
                                         const u32* __restrict__ r_ptr, u32* __restrict__ terms) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_rows) return;
    u64 t = 0;
    for (u32 e = l_ptr[i]; e < l_ptr[i + 1]; ++e) {
        const u32 k = l_col[e];
        t += r_ptr[k + 1] - r_ptr[k];
    }
    terms[i] = t > 0xffffffffull ? 0xffffffffu : (u32)t;
}

// ---- the transpose of a pattern and its slot map ----
//
// transpose_count: the blocks of each column (atomic increments of integers: the counts do not
// depend on the order). transpose_fill: each block's slot k and row i at its column's next
// place (in any order); transpose_rank then moves each column's blocks to their order by slot,
// which orders them by row as the host's serial walk does (slots ascend with rows, one block
// per row and column).
extern "C" __global__ void transpose_count(const u32 n_rows, const u32* __restrict__ ptr,
                                           const u32* __restrict__ col, u32* __restrict__ count) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_rows) return;
    for (u32 k = ptr[i]; k < ptr[i + 1]; ++k) atomicAdd(count + col[k], 1u);
}

// `placed` starts at zero (one counter per column).
extern "C" __global__ void transpose_fill(const u32 n_rows, const u32* __restrict__ ptr,
                                          const u32* __restrict__ col,
                                          const u32* __restrict__ t_ptr, u32* __restrict__ placed,
                                          u32* __restrict__ t_col, u32* __restrict__ t_slot) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_rows) return;
    for (u32 k = ptr[i]; k < ptr[i + 1]; ++k) {
        const u32 j = col[k];
        const u32 at = t_ptr[j] + atomicAdd(placed + j, 1u);
        t_col[at] = i;
        t_slot[at] = k;
    }
}

// One warp per column j of the transpose: each of the column's blocks, placed in any order by
// transpose_fill into u_col / u_slot, goes to its rank by slot (slots are unique: the ranks are
// 0..len in a column), which orders the column by slot, hence by row, as the host's serial walk
// does. The lanes read the column's slots together (one broadcast per step): quadratic in a
// column's length, but every column in parallel (an insertion sort per thread was serial over
// the few, long columns of P on the coarse side: 6,649 threads for 1.2 M blocks at 66^3).
extern "C" __global__ void transpose_rank(const u32 n_cols, const u32* __restrict__ t_ptr,
                                          const u32* __restrict__ u_col,
                                          const u32* __restrict__ u_slot,
                                          u32* __restrict__ t_col, u32* __restrict__ t_slot) {
    const u64 j = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const u32 lane = threadIdx.x & 31u;
    if (j >= n_cols) return;
    const u32 lo = t_ptr[j], hi = t_ptr[j + 1];
    for (u32 a = lo + lane; a < hi; a += 32u) {
        const u32 s = u_slot[a];
        u32 rank = 0;
        for (u32 b = lo; b < hi; ++b) rank += u_slot[b] < s ? 1u : 0u;
        t_col[lo + rank] = u_col[a];
        t_slot[lo + rank] = s;
    }
}

// ---- where one pattern's blocks sit in another ----
//
// For each slot of `outer` (row i, column j), the slot of `inner` holding block (i, j), or
// NOT_FOUND (a merge of the two sorted rows); *found counts the blocks of `inner` found (all of
// them where `inner` lies inside `outer`).
extern "C" __global__ void inner_slots(const u32 n_rows, const u32* __restrict__ o_ptr,
                                       const u32* __restrict__ o_col,
                                       const u32* __restrict__ i_ptr,
                                       const u32* __restrict__ i_col, u32* __restrict__ slot,
                                       u32* __restrict__ found) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_rows) return;
    u32 q = i_ptr[i];
    const u32 q_end = i_ptr[i + 1];
    u32 n = 0;
    for (u32 t = o_ptr[i]; t < o_ptr[i + 1]; ++t) {
        const u32 j = o_col[t];
        while (q < q_end && i_col[q] < j) ++q;
        if (q < q_end && i_col[q] == j) {
            slot[t] = q;
            ++n;
        } else {
            slot[t] = NOT_FOUND;
        }
    }
    if (n) atomicAdd(found, n);
}

// ---- the row of every slot ----
extern "C" __global__ void slot_rows(const u32 n_rows, const u32* __restrict__ ptr,
                                     u32* __restrict__ rows) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_rows) return;
    for (u32 s = ptr[i]; s < ptr[i + 1]; ++s) rows[s] = i;
}

// ---- pair lists ----
//
// Pair lists of C = L R built on the device (the host's term_pairs, the same lists), found
// from the output side: slot s of C (row c_row[s], column j = c_col[s]) has a term for each entry e
// of L's row (ascending) whose R row k = l_col[e] holds column j, at r (a search; R's rows are
// unique, so one r at most per e). The row walk lists a slot's terms in ascending e as well,
// hence the same order. Every slot is a thread (the row walk had one thread per row: 6,649
// threads for the fine level's A_c at 66^3, each walking about 2,000 terms). A term landing
// outside C is not seen here: the caller compares the listed total with the product's terms.
template <bool FILL, bool MAPPED>
__device__ __forceinline__ void slot_terms(const u32 n_slots, const u32* __restrict__ c_row,
                                           const u32* __restrict__ c_col,
                                           const u32* __restrict__ l_ptr,
                                           const u32* __restrict__ l_col,
                                           const u32* __restrict__ left_slot,
                                           const u32* __restrict__ r_ptr,
                                           const u32* __restrict__ r_col, u32* __restrict__ count,
                                           const u32* __restrict__ ptr, u32* __restrict__ first,
                                           u32* __restrict__ second) {
    const u32 s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= n_slots) return;
    const u32 i = c_row[s], j = c_col[s];
    u32 t = FILL ? ptr[s] : 0u;
    for (u32 e = l_ptr[i]; e < l_ptr[i + 1]; ++e) {
        const u32 k = l_col[e];
        const u32 r = find_sorted(r_col, r_ptr[k], r_ptr[k + 1], j);
        if (r == NOT_FOUND) continue;
        if (FILL) {
            first[t] = MAPPED ? left_slot[e] : e;
            second[t] = r;
        }
        ++t;
    }
    if (!FILL) count[s] = t;
}

extern "C" __global__ void term_pairs_slot_count(const u32 n_slots, const u32* __restrict__ c_row,
                                                 const u32* __restrict__ c_col,
                                                 const u32* __restrict__ l_ptr,
                                                 const u32* __restrict__ l_col,
                                                 const u32* __restrict__ r_ptr,
                                                 const u32* __restrict__ r_col,
                                                 u32* __restrict__ count) {
    slot_terms<false, false>(n_slots, c_row, c_col, l_ptr, l_col, nullptr, r_ptr, r_col, count,
                             nullptr, nullptr, nullptr);
}

extern "C" __global__ void term_pairs_slot_fill(const u32 n_slots, const u32* __restrict__ c_row,
                                                const u32* __restrict__ c_col,
                                                const u32* __restrict__ l_ptr,
                                                const u32* __restrict__ l_col,
                                                const u32* __restrict__ r_ptr,
                                                const u32* __restrict__ r_col,
                                                const u32* __restrict__ ptr,
                                                u32* __restrict__ first, u32* __restrict__ second) {
    slot_terms<true, false>(n_slots, c_row, c_col, l_ptr, l_col, nullptr, r_ptr, r_col, nullptr,
                            ptr, first, second);
}

extern "C" __global__ void term_pairs_slot_fill_mapped(
    const u32 n_slots, const u32* __restrict__ c_row, const u32* __restrict__ c_col,
    const u32* __restrict__ l_ptr, const u32* __restrict__ l_col,
    const u32* __restrict__ left_slot, const u32* __restrict__ r_ptr,
    const u32* __restrict__ r_col, const u32* __restrict__ ptr, u32* __restrict__ first,
    u32* __restrict__ second) {
    slot_terms<true, true>(n_slots, c_row, c_col, l_ptr, l_col, left_slot, r_ptr, r_col, nullptr,
                           ptr, first, second);
}

// ---- the slots of a square pattern's diagonal ----
//
// slot[i]: the slot of block (i, i) (a search in row i), NOT_FOUND where row i stores none;
// *missing counts those rows.
extern "C" __global__ void diagonal_slots(const u32 n_rows, const u32* __restrict__ ptr,
                                          const u32* __restrict__ col, u32* __restrict__ slot,
                                          u32* __restrict__ missing) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_rows) return;
    const u32 s = find_sorted(col, ptr[i], ptr[i + 1], i);
    slot[i] = s;
    if (s == NOT_FOUND) atomicAdd(missing, 1u);
}

// ---- the rows of two column blocks joined under a column map ----------------------------
//
// Row i of [L | R] (R's column c is column n_left + c of the joined matrix) with each column j
// renamed position[j], the row ordered by new column (a row's new columns are distinct):
// out_ptr[i] = l_ptr[i] + r_ptr[i] (the last thread also writes out_ptr[n_rows]); each block's
// place is the number of the row's blocks with a smaller new column, its slot in
// [L's slots; R's slots] (R's slot s is l_nnz + s) goes to out_slot there. One thread a row.
extern "C" __global__ void joined_by_position(const u32 n_rows, const u32* __restrict__ l_ptr,
                                              const u32* __restrict__ l_col,
                                              const u32* __restrict__ r_ptr,
                                              const u32* __restrict__ r_col,
                                              const u32* __restrict__ position,
                                              const u32 n_left, const u32 l_nnz,
                                              u32* __restrict__ out_ptr,
                                              u32* __restrict__ out_col,
                                              u32* __restrict__ out_slot) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_rows) return;
    const u32 l0 = l_ptr[i], l1 = l_ptr[i + 1], r0 = r_ptr[i], r1 = r_ptr[i + 1];
    const u32 first = l0 + r0;
    out_ptr[i] = first;
    if (i + 1 == n_rows) out_ptr[n_rows] = l1 + r1;
    const u32 n_l = l1 - l0, len = n_l + (r1 - r0);
    for (u32 e = 0; e < len; ++e) {
        const u32 c = e < n_l ? position[l_col[l0 + e]] : position[n_left + r_col[r0 + e - n_l]];
        u32 place = 0;
        for (u32 f = 0; f < len; ++f) {
            const u32 d =
                f < n_l ? position[l_col[l0 + f]] : position[n_left + r_col[r0 + f - n_l]];
            place += d < c;
        }
        out_col[first + place] = c;
        out_slot[first + place] = e < n_l ? l0 + e : l_nnz + r0 + e - n_l;
    }
}

// ---- the element blocks' COO plan (linalg::CooPlan::of_cell_blocks) ----
//
// From the incidence plan (pattern n_nodes x 1, inc_rows its row offsets; node i's incidences
// k = e npc + a, ascending, are inc_contrib[inc_slot_ptr[s]..inc_slot_ptr[s + 1]] for its slot s)
// and the cells' nodes (npc a cell): row i of the tangent holds contribution c = k npc + b of
// each incidence k and local trial node b, at column cells[e npc + b]. cell_rows_count (a thread
// a row): the contributions of each row; cell_rows_fill: a row's contributions grouped by column
// (ascending) and ascending within a column (the host's order), and its count of distinct
// columns; cell_rows_slots: the row's columns and each one's first contribution (slot_ptr), and
// slot_ptr[nnz] = the contribution count. The last two take a warp a row: lane l takes the
// row's positions l, l + 32, ...

// The column of contribution c = (e npc + a) npc + b: the node of cell e at b.
__device__ __forceinline__ u32 cell_block_column(const u32* __restrict__ cells, const u32 npc,
                                                 const u32 c) {
    const u32 cell_block = npc * npc;
    return __ldg(cells + (u64)(c / cell_block) * npc + c % npc);
}

extern "C" __global__ void cell_rows_count(const u32 n_rows, const u32* __restrict__ inc_rows,
                                           const u32* __restrict__ inc_slot_ptr, const u32 npc,
                                           u32* __restrict__ row_len) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_rows) return;
    const u32 s0 = inc_rows[i], s1 = inc_rows[i + 1];
    row_len[i] = s0 == s1 ? 0 : (inc_slot_ptr[s1] - inc_slot_ptr[s0]) * npc;
}

// Position x of a row's contributions in the incidence order (p0: the row's first incidence):
// contribution inc_contrib[p0 + x / npc] npc + x % npc, all of them ascending.
__device__ __forceinline__ u32 cell_row_contribution(const u32* __restrict__ inc_contrib,
                                                     const u32 p0, const u32 npc, const u32 x) {
    return __ldg(inc_contrib + p0 + x / npc) * npc + x % npc;
}

// Each position's place in the grouped order is its rank: the positions of a smaller column,
// or of the same column and a smaller position (a stable sort by column). A position is its
// column's first when no smaller position shares its column.
extern "C" __global__ void cell_rows_fill(const u32 n_rows, const u32* __restrict__ inc_rows,
                                          const u32* __restrict__ inc_slot_ptr,
                                          const u32* __restrict__ inc_contrib,
                                          const u32* __restrict__ cells, const u32 npc,
                                          const u32* __restrict__ row_start,
                                          u32* __restrict__ contrib, u32* __restrict__ row_nnz) {
    const u32 i = warp_row(n_rows), lane = threadIdx.x % 32;
    if (i >= n_rows) return;
    const u32 s0 = inc_rows[i], s1 = inc_rows[i + 1];
    const u32 p0 = s0 == s1 ? 0 : inc_slot_ptr[s0];
    const u32 len = s0 == s1 ? 0 : (inc_slot_ptr[s1] - p0) * npc;
    const u32 begin = row_start[i];
    u32 distinct = 0;
    for (u32 xb = 0; xb < len; xb += 32) {
        const u32 x = xb + lane;
        const bool mine = x < len;
        const u32 v = mine ? cell_row_contribution(inc_contrib, p0, npc, x) : 0;
        const u32 col = mine ? cell_block_column(cells, npc, v) : 0;
        u32 rank = 0;
        bool first = true;
        for (u32 yb = 0; yb < len; yb += 32) {
            const u32 y = yb + lane;
            const u32 y_col =
                y < len ? cell_block_column(cells, npc, cell_row_contribution(inc_contrib, p0, npc, y))
                        : 0;
            const u32 m = min(32u, len - yb);
            for (u32 t = 0; t < m; ++t) {
                const u32 c = __shfl_sync(FULL_MASK, y_col, t);
                const bool before = yb + t < x;
                rank += c < col || (c == col && before) ? 1u : 0u;
                first = first && !(c == col && before);
            }
        }
        if (mine) contrib[begin + rank] = v;
        distinct += __popc(__ballot_sync(FULL_MASK, mine && first));
    }
    if (lane == 0) row_nnz[i] = distinct;
}

extern "C" __global__ void cell_rows_slots(const u32 n_rows, const u32* __restrict__ row_start,
                                           const u32* __restrict__ contrib,
                                           const u32* __restrict__ cells, const u32 npc,
                                           const u32* __restrict__ row_ptr,
                                           u32* __restrict__ col_idx, u32* __restrict__ slot_ptr) {
    const u32 i = warp_row(n_rows), lane = threadIdx.x % 32;
    if (i >= n_rows) return;
    const u32 begin = row_start[i], end = row_start[i + 1];
    u32 out = row_ptr[i];
    for (u32 xb = begin; xb < end; xb += 32) {
        const u32 x = xb + lane;
        const bool mine = x < end;
        const u32 col = mine ? cell_block_column(cells, npc, contrib[x]) : 0;
        const bool first =
            mine && (x == begin || cell_block_column(cells, npc, contrib[x - 1]) != col);
        const u32 firsts = __ballot_sync(FULL_MASK, first);
        if (first) {
            const u32 o = out + __popc(firsts & ((1u << lane) - 1));
            col_idx[o] = col;
            slot_ptr[o] = x;
        }
        out += __popc(firsts);
    }
    if (i + 1 == n_rows && lane == 0) slot_ptr[row_ptr[n_rows]] = row_start[n_rows];
}
