// Numeric sparse block products on host-built patterns, owner computes: one thread per output
// block, which it sums in a fixed order and writes once (no atomics).
//
// spgemm_nn: C = A B, A: AR x AK blocks, B: AK x BC blocks. Block (i, J) of C sums
//   A_ik B_kJ over the columns k of A's row i, ascending, B_kJ found by binary search in B's
//   row k. Each product is formed as the host's block product: t = sum over m ascending of
//   a[r][m] b[m][j], then acc[r][j] += t. With --fmad=false this is bit-identical to the host's
//   SpGEMM and to the rows W = A P of its Galerkin product.
//
// ptw_tn: A_c = P^T W, P: AK x BC blocks (fine x coarse), W: AK x BC blocks. Block (I, J) of
//   A_c sums P_iI^T W_iJ over the fine rows i of row I of P^T, ascending (P's block found
//   through the P^T slot map), W_iJ found by binary search in W's row i. The host's streamed
//   Galerkin product sums in the same order.
//
// Both take the row of every output slot (c_row) so that threads map to slots directly.

#define CL (AR * BC)

extern "C" __global__ void __launch_bounds__(128)
spgemm_nn(const u32 c_nnz, const u32* __restrict__ c_row, const u32* __restrict__ c_col,
          const u32* __restrict__ a_ptr, const u32* __restrict__ a_col,
          const double* __restrict__ a_vals, const u32* __restrict__ b_ptr,
          const u32* __restrict__ b_col, const double* __restrict__ b_vals,
          double* __restrict__ c_vals) {
    const u32 s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= c_nnz) return;
    const u32 i = __ldg(c_row + s);
    const u32 J = __ldg(c_col + s);
    double acc[CL];
#pragma unroll
    for (int k = 0; k < CL; ++k) acc[k] = 0.0;
    const u32 a_end = __ldg(a_ptr + i + 1);
    for (u32 sa = __ldg(a_ptr + i); sa < a_end; ++sa) {
        const u32 k = __ldg(a_col + sa);
        const u32 sb = find_sorted(b_col, __ldg(b_ptr + k), __ldg(b_ptr + k + 1), J);
        if (sb == NOT_FOUND) continue;
        const double* __restrict__ a = a_vals + (size_t)sa * (AR * AK);
        const double* __restrict__ b = b_vals + (size_t)sb * (AK * BC);
        double bb[AK * BC];
#pragma unroll
        for (int m = 0; m < AK * BC; ++m) bb[m] = __ldg(b + m);
#pragma unroll
        for (int r = 0; r < AR; ++r) {
            double ar[AK];
#pragma unroll
            for (int m = 0; m < AK; ++m) ar[m] = __ldg(a + r * AK + m);
#pragma unroll
            for (int j = 0; j < BC; ++j) {
                double t = 0.0;
#pragma unroll
                for (int m = 0; m < AK; ++m) t += ar[m] * bb[m * BC + j];
                acc[r * BC + j] += t;
            }
        }
    }
    double* __restrict__ c = c_vals + (size_t)s * CL;
#pragma unroll
    for (int k = 0; k < CL; ++k) c[k] = acc[k];
}

// Here AR = BC = coarse block size, AK = fine block size.
extern "C" __global__ void __launch_bounds__(128)
ptw_tn(const u32 c_nnz, const u32* __restrict__ c_row, const u32* __restrict__ c_col,
       const u32* __restrict__ pt_ptr, const u32* __restrict__ pt_col,
       const u32* __restrict__ pt_slot, const double* __restrict__ p_vals,
       const u32* __restrict__ w_ptr, const u32* __restrict__ w_col,
       const double* __restrict__ w_vals, double* __restrict__ c_vals) {
    const u32 s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= c_nnz) return;
    const u32 I = __ldg(c_row + s);
    const u32 J = __ldg(c_col + s);
    double acc[CL];
#pragma unroll
    for (int k = 0; k < CL; ++k) acc[k] = 0.0;
    const u32 q_end = __ldg(pt_ptr + I + 1);
    for (u32 q = __ldg(pt_ptr + I); q < q_end; ++q) {
        const u32 i = __ldg(pt_col + q);
        const u32 sw = find_sorted(w_col, __ldg(w_ptr + i), __ldg(w_ptr + i + 1), J);
        if (sw == NOT_FOUND) continue;
        // P block: AK x AR (fine x coarse), used transposed; W block: AK x BC.
        const double* __restrict__ p = p_vals + (size_t)__ldg(pt_slot + q) * (AK * AR);
        const double* __restrict__ w = w_vals + (size_t)sw * (AK * BC);
        double ww[AK * BC];
#pragma unroll
        for (int m = 0; m < AK * BC; ++m) ww[m] = __ldg(w + m);
#pragma unroll
        for (int r = 0; r < AR; ++r) {
            double pr[AK];
#pragma unroll
            for (int m = 0; m < AK; ++m) pr[m] = __ldg(p + m * AR + r);
#pragma unroll
            for (int j = 0; j < BC; ++j) {
                double t = 0.0;
#pragma unroll
                for (int m = 0; m < AK; ++m) t += pr[m] * ww[m * BC + j];
                acc[r * BC + j] += t;
            }
        }
    }
    double* __restrict__ c = c_vals + (size_t)s * CL;
#pragma unroll
    for (int k = 0; k < CL; ++k) c[k] = acc[k];
}
