// Block sparse matrix-vector products, y = alpha op(A) x + beta y, for any block shape
// BR x BC (injected #defines), op(A) = A or A^T.
//
// bsr_spmv_seq: one warp per output block row, bit-identical to the host kernel. The row's
// entries are cut into units (entry q, output component o); a lane computes one unit's
// partial t = sum_i blk[o][i] x[i] with i ascending (the host's row-of-block partial), the
// partials go through shared memory, and lane o adds its row's partials in entry order,
// exactly as the host does (acc = 0 + t_0 + t_1 + ...). Compiled with --fmad=false.
//   TRANSPOSE 0: output row = block row of A, entries its slots; blk[o][i] = A_blk[o][i].
//   TRANSPOSE 1: output row = block row of A^T (a row of a transpose map), entries the
//                map's positions q with source slot slots[q]; blk[o][i] = A_blk[i][o].
//   SLOTS 1: entry q reads block slots[q] (else block q).
//
// Matrix values are `mval`: double, or float with VAL_F32 1 (fp32 storage), loaded widened to
// double; x, y and every sum are double.
//
// bsr_spmv_flat: GROUP lanes per block row stride over the row's values (fully coalesced)
// and reduce with shuffles: same value to rounding, not bit-identical. Kept for comparison.

#ifndef TRANSPOSE
#define TRANSPOSE 0
#endif
#ifndef SLOTS
#define SLOTS 0
#endif
#ifndef VAL_F32
#define VAL_F32 0
#endif
#if VAL_F32
typedef float mval;
#else
typedef double mval;
#endif
#define BL (BR * BC)
#if TRANSPOSE
#define OD BC
#define ID BR
#else
#define OD BR
#define ID BC
#endif
#define WARPS 4

// The warp's sum of block row `row` (lane o < OD returns component o; the others 0): the
// units' partials through the warp's shared row `part`, added in entry order (see above).
__device__ __forceinline__ double seq_row_sum(double* part, const u32 lane, const u32 row,
                                              const u32* __restrict__ row_ptr,
                                              const u32* __restrict__ col_idx,
                                              const u32* __restrict__ slots,
                                              const mval* __restrict__ vals,
                                              const double* __restrict__ x) {
    const u32 first = row_ptr[row];
    const u32 n_units = (row_ptr[row + 1] - first) * OD;
    double acc = 0.0;  // lane o < OD: component o of the row
    for (u32 base = 0; base < n_units; base += 32) {
        const u32 u = base + lane;
        double t = 0.0;
        if (u < n_units) {
            const u32 e = u / OD;
            const u32 o = u - e * OD;
            const u32 q = first + e;
#if SLOTS
            const u32 s = __ldg(slots + q);
#else
            const u32 s = q;
#endif
            const mval* __restrict__ blk = vals + (size_t)s * BL;
            const double* __restrict__ xb = x + (size_t)__ldg(col_idx + q) * ID;
#if TRANSPOSE
            t = (double)__ldg(blk + o) * __ldg(xb);
#pragma unroll
            for (int i = 1; i < ID; ++i) t += (double)__ldg(blk + i * BC + o) * __ldg(xb + i);
#else
            t = (double)__ldg(blk + o * BC) * __ldg(xb);
#pragma unroll
            for (int i = 1; i < ID; ++i) t += (double)__ldg(blk + o * BC + i) * __ldg(xb + i);
#endif
        }
        part[lane] = t;
        __syncwarp();
        if (lane < OD) {
            const u32 limit = min(32u, n_units - base);
            // first unit of this chunk with component `lane`
            for (u32 j = (lane + OD - base % OD) % OD; j < limit; j += OD) acc += part[j];
        }
        __syncwarp();
    }
    return acc;
}

extern "C" __global__ void __launch_bounds__(WARPS * 32)
bsr_spmv_seq(const u32 n_rows, const u32* __restrict__ row_ptr, const u32* __restrict__ col_idx,
             const u32* __restrict__ slots, const mval* __restrict__ vals,
             const double* __restrict__ x, double* __restrict__ y, const double alpha,
             const double beta, const int read_y) {
    __shared__ double part[WARPS][32];
    const u32 warp = threadIdx.x >> 5;
    const u32 lane = threadIdx.x & 31;
    const u32 row = blockIdx.x * WARPS + warp;
    if (row >= n_rows) return;  // the whole warp leaves together
    const double acc = seq_row_sum(part[warp], lane, row, row_ptr, col_idx, slots, vals, x);
    if (lane < OD) {
        const size_t out = (size_t)row * OD + lane;
        y[out] = read_y ? alpha * acc + beta * y[out] : alpha * acc;
    }
}

// Row k's sum added into block row out_rows[k] of y: y = y + sum, the bits of bsr_spmv_seq's
// product followed by that addition (no row listed twice); x is read once the n_wait peer
// sources of exchange `seq` have landed (wait_for_peers; n_wait == 0: x is ready).
extern "C" __global__ void __launch_bounds__(WARPS * 32)
bsr_spmv_seq_add_rows(const u32 n_rows, const u32* __restrict__ row_ptr,
                      const u32* __restrict__ col_idx, const u32* __restrict__ slots,
                      const mval* __restrict__ vals, const double* __restrict__ x,
                      const u32* __restrict__ out_rows, double* __restrict__ y,
                      const u32 n_wait, u64* const* __restrict__ ready, const u64 seq) {
    wait_for_peers(n_wait, ready, seq);
    __shared__ double part[WARPS][32];
    const u32 warp = threadIdx.x >> 5;
    const u32 lane = threadIdx.x & 31;
    const u32 row = blockIdx.x * WARPS + warp;
    if (row >= n_rows) return;  // the whole warp leaves together
    const double acc = seq_row_sum(part[warp], lane, row, row_ptr, col_idx, slots, vals, x);
    if (lane < OD) {
        const size_t out = (size_t)out_rows[row] * OD + lane;
        y[out] += acc;
    }
}

#ifndef GROUP
#define GROUP 32
#endif

extern "C" __global__ void __launch_bounds__(256)
bsr_spmv_flat(const u32 n_rows, const u32* __restrict__ row_ptr, const u32* __restrict__ col_idx,
              const mval* __restrict__ vals, const double* __restrict__ x,
              double* __restrict__ y, const double alpha, const double beta, const int read_y) {
    const u32 tid = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 row = tid / GROUP;
    const u32 lane = tid % GROUP;
    const bool active = row < n_rows;
    double acc[BR];
#pragma unroll
    for (int r = 0; r < BR; ++r) acc[r] = 0.0;
    if (active) {
        const u32 first = row_ptr[row];
        const u32 n_vals = (row_ptr[row + 1] - first) * BL;
        const mval* __restrict__ v = vals + (size_t)first * BL;
        const u32* __restrict__ cols = col_idx + first;
#pragma unroll 4
        for (u32 q = lane; q < n_vals; q += GROUP) {
            const u32 b = q / BL;
            const u32 e = q - b * BL;
            const u32 r = e / BC;
            const u32 c = e - r * BC;
            const double prod = (double)__ldg(v + q) * __ldg(x + (size_t)__ldg(cols + b) * BC + c);
#pragma unroll
            for (int rr = 0; rr < BR; ++rr) acc[rr] += (rr == (int)r) ? prod : 0.0;
        }
    }
#pragma unroll
    for (int rr = 0; rr < BR; ++rr) {
#pragma unroll
        for (int off = GROUP / 2; off > 0; off >>= 1)
            acc[rr] += __shfl_xor_sync(FULL_MASK, acc[rr], off, GROUP);
    }
    if (active) {
#pragma unroll
        for (int rr = 0; rr < BR; ++rr) {
            if ((u32)(rr % GROUP) == lane) {
                const size_t out = (size_t)row * BR + rr;
                y[out] = read_y ? alpha * acc[rr] + beta * y[out] : alpha * acc[rr];
            }
        }
    }
}
