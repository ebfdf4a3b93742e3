// Numeric sparse block products on host-built patterns, owner computes: one thread per output
// block, which it sums in a fixed order and writes once (no atomics).
//
// spgemm_nn: C = A B, A: AR x AK blocks, B: AK x BC blocks. Block (i, J) of C sums
//   A_ik B_kJ over the columns k of A's row i, ascending, B_kJ found by binary search in B's
//   row k (ILP searches at a time, see find_sorted_ilp). Each product is formed as the host's
//   block product: t = sum over m ascending of a[r][m] b[m][j], then acc[r][j] += t. With
//   --fmad=false this is bit-identical to the host's SpGEMM and to the rows W = A P of its
//   Galerkin product.
//
// ptw_tn: A_c = P^T W, P: AK x BC blocks (fine x coarse), W: AK x BC blocks. Block (I, J) of
//   A_c sums P_iI^T W_iJ over the fine rows i of row I of P^T, ascending (P's block found
//   through the P^T slot map), W_iJ found by binary search in W's row i. The host's streamed
//   Galerkin product sums in the same order.
//
// Both take the row of every output slot (c_row) so that threads map to slots directly.

// Value types (value types only; the thread mapping is the same for all): the left operand
// (A, or P in the P^T W pass) is `lval`, the right operand (B, P or W) `rval`, the output
// `oval`; each is float where its L_F32 / R_F32 / O_F32 is 1 (fp32 storage of mixed-precision
// AMG), loaded widened to double; every sum is double and an fp32 output is rounded once.
#ifndef L_F32
#define L_F32 0
#endif
#if L_F32
typedef float lval;
#else
typedef double lval;
#endif
#ifndef R_F32
#define R_F32 0
#endif
#if R_F32
typedef float rval;
#else
typedef double rval;
#endif
#ifndef O_F32
#define O_F32 0
#endif
#if O_F32
typedef float oval;
#else
typedef double oval;
#endif
#define CL (AR * BC)

// Terms whose operand searches run together (set per block shape by the host, 4 by default):
// the searches are chains of dependent loads, so several in flight per thread hide their
// latency. Sums keep the ascending order.
#ifndef ILP
#define ILP 4
#endif

// The slots of `key` in ILP sorted ranges a[lo[u]..hi[u]) (NOT_FOUND where absent), the ILP
// binary searches advanced in lockstep so that their loads are independent.
__device__ __forceinline__ void find_sorted_ilp(const u32* __restrict__ a, u32 (&lo)[ILP],
                                                u32 (&hi)[ILP], const u32 key, u32 (&out)[ILP]) {
#pragma unroll
    for (int u = 0; u < ILP; ++u) out[u] = NOT_FOUND;
    bool active = true;
    while (active) {
        active = false;
#pragma unroll
        for (int u = 0; u < ILP; ++u) {
            if (lo[u] < hi[u]) {
                const u32 mid = lo[u] + ((hi[u] - lo[u]) >> 1);
                const u32 v = __ldg(a + mid);
                if (v < key) {
                    lo[u] = mid + 1;
                } else if (v > key) {
                    hi[u] = mid;
                } else {
                    out[u] = mid;
                    hi[u] = lo[u];
                }
                active |= lo[u] < hi[u];
            }
        }
    }
}

// One thread per (output slot, row r of its block): AR threads share a slot (adjacent lanes, so
// their index and operand loads coalesce or broadcast), each with BC accumulators: few registers,
// many threads in flight for these latency-bound searches. Each entry is summed exactly as in a
// whole-block loop, so the split changes no bit.
//
// Row r of output slot s = (row, J): the terms of the left operand's row `row` (slots
// left_ptr[row]..left_ptr[row + 1], ascending), each paired with the right operand's block in
// row left_col[q], column J (binary search). The left block is AR x AK (slot q) or, if
// LEFT_TRANSPOSED, AK x AR (slot left_slot[q]: P's block in P^T W); the right block is AK x BC.
template <bool LEFT_TRANSPOSED>
__device__ __forceinline__ void searched_terms(
    const u32 c_nnz, const u32* __restrict__ c_row, const u32* __restrict__ c_col,
    const u32* __restrict__ left_ptr, const u32* __restrict__ left_col,
    const u32* __restrict__ left_slot, const lval* __restrict__ left_vals,
    const u32* __restrict__ right_ptr, const u32* __restrict__ right_col,
    const rval* __restrict__ right_vals, oval* __restrict__ c_vals) {
    const u64 t = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    if (t >= (u64)c_nnz * AR) return;
    const u32 s = (u32)(t / AR);
    const u32 r = (u32)(t - (u64)s * AR);
    const u32 row = __ldg(c_row + s);
    const u32 J = __ldg(c_col + s);
    double acc[BC];
#pragma unroll
    for (int j = 0; j < BC; ++j) acc[j] = 0.0;
    const u32 end = __ldg(left_ptr + row + 1);
    for (u32 base = __ldg(left_ptr + row); base < end; base += ILP) {
        // the searches of ILP terms run together (independent loads in flight); the terms are
        // then added in ascending order, as one at a time
        u32 lo[ILP], hi[ILP], found[ILP];
#pragma unroll
        for (int u = 0; u < ILP; ++u) {
            lo[u] = 0;
            hi[u] = 0;
            if (base + u < end) {
                const u32 k = __ldg(left_col + base + u);
                lo[u] = __ldg(right_ptr + k);
                hi[u] = __ldg(right_ptr + k + 1);
            }
        }
        find_sorted_ilp(right_col, lo, hi, J, found);
#pragma unroll
        for (int u = 0; u < ILP; ++u) {
            if (found[u] == NOT_FOUND) continue;
            const u32 q = base + u;
            const lval* __restrict__ l =
                left_vals + (size_t)(LEFT_TRANSPOSED ? __ldg(left_slot + q) : q) * (AR * AK);
            const rval* __restrict__ rt = right_vals + (size_t)found[u] * (AK * BC);
            double lr[AK];
#pragma unroll
            for (int m = 0; m < AK; ++m)
                lr[m] = (double)__ldg(LEFT_TRANSPOSED ? l + m * AR + r : l + r * AK + m);
#pragma unroll
            for (int j = 0; j < BC; ++j) {
                double tt = 0.0;
#pragma unroll
                for (int m = 0; m < AK; ++m) tt += lr[m] * (double)__ldg(rt + m * BC + j);
                acc[j] += tt;
            }
        }
    }
    oval* __restrict__ c = c_vals + (size_t)s * CL + r * BC;
#pragma unroll
    for (int j = 0; j < BC; ++j) c[j] = (oval)acc[j];
}

// C = A B: left = A (AR x AK blocks), right = B (AK x BC).
extern "C" __global__ void __launch_bounds__(128)
spgemm_nn(const u32 c_nnz, const u32* __restrict__ c_row, const u32* __restrict__ c_col,
          const u32* __restrict__ a_ptr, const u32* __restrict__ a_col,
          const lval* __restrict__ a_vals, const u32* __restrict__ b_ptr,
          const u32* __restrict__ b_col, const rval* __restrict__ b_vals,
          oval* __restrict__ c_vals) {
    searched_terms<false>(c_nnz, c_row, c_col, a_ptr, a_col, nullptr, a_vals, b_ptr, b_col,
                          b_vals, c_vals);
}

// A_c = P^T W: left = P (AK x AR blocks, fine x coarse, found through the P^T slot map), right =
// W (AK x BC). Here AR = BC = coarse block size, AK = fine block size.
extern "C" __global__ void __launch_bounds__(128)
ptw_tn(const u32 c_nnz, const u32* __restrict__ c_row, const u32* __restrict__ c_col,
       const u32* __restrict__ pt_ptr, const u32* __restrict__ pt_col,
       const u32* __restrict__ pt_slot, const lval* __restrict__ p_vals,
       const u32* __restrict__ w_ptr, const u32* __restrict__ w_col,
       const rval* __restrict__ w_vals, oval* __restrict__ c_vals) {
    searched_terms<true>(c_nnz, c_row, c_col, pt_ptr, pt_col, pt_slot, p_vals, w_ptr, w_col,
                         w_vals, c_vals);
}

// The same two products with each output slot's terms listed by the host plan (pair lists,
// ascending in the order the searching kernels visit them, so the sums are bit-identical):
// term t of slot s is (first[t], second[t]) = (A slot, B slot) for spgemm_nn_pairs and
// (P slot, W slot) for ptw_tn_pairs. No search: two dependent loads per term instead of a
// binary search's chain.
//
// Threads per output slot: (AR / RPT) x (BC / CPT), each summing RPT rows x CPT columns of the
// block (adjacent lanes over the column groups, then the row groups). Many short sums (the fine
// level's W) take whole blocks per thread, which loads each operand block once; few long sums
// (coarse levels) are split to keep the device busy. Each entry's sum keeps its order, so every
// split gives the same bits.
#ifndef RPT
#define RPT 1
#endif
#ifndef CPT
#define CPT BC
#endif
#define ROW_GROUPS (AR / RPT)
#define COL_GROUPS (BC / CPT)

// Slot s's terms of `left right` for rows r0.. r0+RPT and columns j0.. j0+CPT of the output
// block, written once to c_vals. The left block is AR x AK or, if LEFT_TRANSPOSED, AK x AR (P's
// blocks in P^T W); the right block is AK x BC.
template <bool LEFT_TRANSPOSED>
__device__ __forceinline__ void pair_terms(const u32 s, const u32 r0, const u32 j0,
                                           const u32* __restrict__ term_ptr,
                                           const u32* __restrict__ first,
                                           const u32* __restrict__ second,
                                           const lval* __restrict__ left,
                                           const rval* __restrict__ right,
                                           oval* __restrict__ c_vals) {
    double acc[RPT][CPT];
#pragma unroll
    for (int r = 0; r < RPT; ++r)
#pragma unroll
        for (int j = 0; j < CPT; ++j) acc[r][j] = 0.0;
    const u32 end = __ldg(term_ptr + s + 1);
    for (u32 q = __ldg(term_ptr + s); q < end; ++q) {
        const lval* __restrict__ l = left + (size_t)__ldg(first + q) * (AR * AK);
        const rval* __restrict__ rt = right + (size_t)__ldg(second + q) * (AK * BC) + j0;
        if (RPT == 1) {
            // one row: the right block's values are used once, loaded where they are needed
            double lr[AK];
#pragma unroll
            for (int m = 0; m < AK; ++m)
                lr[m] = (double)__ldg(LEFT_TRANSPOSED ? l + m * AR + r0 : l + r0 * AK + m);
#pragma unroll
            for (int j = 0; j < CPT; ++j) {
                double tt = 0.0;
#pragma unroll
                for (int m = 0; m < AK; ++m) tt += lr[m] * (double)__ldg(rt + m * BC + j);
                acc[0][j] += tt;
            }
            continue;
        }
        // several rows share the right block's columns: load them once
        double rc[AK][CPT];
#pragma unroll
        for (int m = 0; m < AK; ++m)
#pragma unroll
            for (int j = 0; j < CPT; ++j) rc[m][j] = (double)__ldg(rt + m * BC + j);
#pragma unroll
        for (int r = 0; r < RPT; ++r) {
            double lr[AK];
#pragma unroll
            for (int m = 0; m < AK; ++m)
                lr[m] = (double)__ldg(LEFT_TRANSPOSED ? l + m * AR + r0 + r : l + (r0 + r) * AK + m);
#pragma unroll
            for (int j = 0; j < CPT; ++j) {
                double tt = 0.0;
#pragma unroll
                for (int m = 0; m < AK; ++m) tt += lr[m] * rc[m][j];
                acc[r][j] += tt;
            }
        }
    }
#pragma unroll
    for (int r = 0; r < RPT; ++r) {
        oval* __restrict__ c = c_vals + (size_t)s * CL + (r0 + r) * BC + j0;
#pragma unroll
        for (int j = 0; j < CPT; ++j) c[j] = (oval)acc[r][j];
    }
}

// The thread's (slot, first row, first column) of c_nnz output slots; false past the last.
__device__ __forceinline__ bool pair_thread(const u32 c_nnz, u32& s, u32& r0, u32& j0) {
    const u64 t = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    if (t >= (u64)c_nnz * (ROW_GROUPS * COL_GROUPS)) return false;
    s = (u32)(t / (ROW_GROUPS * COL_GROUPS));
    const u32 within = (u32)(t - (u64)s * (ROW_GROUPS * COL_GROUPS));
    const u32 rg = within / COL_GROUPS;
    r0 = rg * RPT;
    j0 = (within - rg * COL_GROUPS) * CPT;
    return true;
}

// W = A P: left = A (AR x AK blocks), right = P (AK x BC).
extern "C" __global__ void __launch_bounds__(128)
spgemm_nn_pairs(const u32 c_nnz, const u32* __restrict__ term_ptr,
                const u32* __restrict__ first, const u32* __restrict__ second,
                const lval* __restrict__ a_vals, const rval* __restrict__ b_vals,
                oval* __restrict__ c_vals) {
    u32 s, r, j0;
    if (!pair_thread(c_nnz, s, r, j0)) return;
    pair_terms<false>(s, r, j0, term_ptr, first, second, a_vals, b_vals, c_vals);
}

// A_c = P^T W: left = P (AK x AR blocks, fine x coarse), right = W (AK x BC).
extern "C" __global__ void __launch_bounds__(128)
ptw_tn_pairs(const u32 c_nnz, const u32* __restrict__ term_ptr,
             const u32* __restrict__ first, const u32* __restrict__ second,
             const lval* __restrict__ p_vals, const rval* __restrict__ w_vals,
             oval* __restrict__ c_vals) {
    u32 s, r, j0;
    if (!pair_thread(c_nnz, s, r, j0)) return;
    pair_terms<true>(s, r, j0, term_ptr, first, second, p_vals, w_vals, c_vals);
}
