// Point-block Jacobi on BS x BS diagonal blocks (BS injected), bit-identical to the host's
// (amg::dense::invert_in_place and the apply kernel; compiled with --fmad=false).
// Every register array is indexed with compile-time constants only (loops fully unrolled;
// run-time pivot rows are selected with predicates), so nothing spills to local memory.

// Operator values are `aval` (float with A_F32 1), inverses `dval` (float with D_F32 1): loaded
// widened to double; the inversion and every sum run in double, an fp32 inverse is rounded once
// when stored.
#ifndef A_F32
#define A_F32 0
#endif
#if A_F32
typedef float aval;
#else
typedef double aval;
#endif
#ifndef D_F32
#define D_F32 0
#endif
#if D_F32
typedef float dval;
#else
typedef double dval;
#endif
#define BL (BS * BS)

// Inverts the diagonal block of block row b (slot diag_slot[b] of a_vals) into inv[b] by
// Gauss-Jordan with partial pivoting. A pivot not above rtol * max|block| fails: the smallest
// failing (block, column) is kept in *fail as ~(block * 64 + column) (atomicMax on the
// complement of an index, so that a zeroed *fail means none failed and needs no upload; values
// are never combined across threads).
extern "C" __global__ void block_invert(const u32 n_blocks, const u32* __restrict__ diag_slot,
                                        const aval* __restrict__ a_vals,
                                        dval* __restrict__ inv, const double rtol,
                                        u64* __restrict__ fail) {
    const u32 b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= n_blocks) return;
    const aval* __restrict__ src = a_vals + (size_t)__ldg(diag_slot + b) * BL;
    double a[BL];
    double scale = 0.0;
#pragma unroll
    for (int k = 0; k < BL; ++k) {
        a[k] = (double)src[k];
        scale = fmax(scale, fabs(a[k]));
    }
    const double tol = rtol * scale;
    int perm[BS];
#pragma unroll
    for (int k = 0; k < BS; ++k) {
        int piv_row = k;
        double piv_val = fabs(a[k * BS + k]);
#pragma unroll
        for (int i = k + 1; i < BS; ++i) {
            const double v = fabs(a[i * BS + k]);
            if (v > piv_val) {
                piv_row = i;
                piv_val = v;
            }
        }
        if (!(piv_val > tol)) {
            atomicMax(fail, ~((u64)b * 64 + (u64)k));
            return;
        }
        perm[k] = piv_row;
#pragma unroll
        for (int i = k + 1; i < BS; ++i) {
            if (i == piv_row) {
#pragma unroll
                for (int j = 0; j < BS; ++j) {
                    const double t = a[k * BS + j];
                    a[k * BS + j] = a[i * BS + j];
                    a[i * BS + j] = t;
                }
            }
        }
        const double inv_p = 1.0 / a[k * BS + k];
        a[k * BS + k] = 1.0;
#pragma unroll
        for (int j = 0; j < BS; ++j) a[k * BS + j] *= inv_p;
#pragma unroll
        for (int i = 0; i < BS; ++i) {
            if (i == k) continue;
            const double f = a[i * BS + k];
            if (f != 0.0) {
                a[i * BS + k] = 0.0;
#pragma unroll
                for (int j = 0; j < BS; ++j) a[i * BS + j] -= f * a[k * BS + j];
            }
        }
    }
    // Undo the row interchanges as column interchanges, in reverse order.
#pragma unroll
    for (int k = BS - 1; k >= 0; --k) {
        const int p = perm[k];
#pragma unroll
        for (int c = k + 1; c < BS; ++c) {
            if (c == p) {
#pragma unroll
                for (int i = 0; i < BS; ++i) {
                    const double t = a[i * BS + k];
                    a[i * BS + k] = a[i * BS + c];
                    a[i * BS + c] = t;
                }
            }
        }
    }
    dval* __restrict__ dst = inv + (size_t)b * BL;
#pragma unroll
    for (int k = 0; k < BL; ++k) dst[k] = (dval)a[k];
}

// s = (D^-1 r)_i for scalar row i = b * BS + o (the host's order: s = 0 + d_o0 r_0 + ...).
__device__ __forceinline__ double inv_row_times(const dval* __restrict__ inv,
                                                const double* __restrict__ r, const u32 b,
                                                const u32 o) {
    const dval* __restrict__ d = inv + (size_t)b * BL + o * BS;
    const double* __restrict__ rb = r + (size_t)b * BS;
    double s = 0.0;
#pragma unroll
    for (int j = 0; j < BS; ++j) s += (double)__ldg(d + j) * __ldg(rb + j);
    return s;
}

// x = omega D^-1 r + beta x, one thread per scalar row; with read_x == 0 the old x is not read.
extern "C" __global__ void block_apply(const u32 n_blocks, const double omega,
                                       const dval* __restrict__ inv,
                                       const double* __restrict__ r, const double beta,
                                       double* __restrict__ x, const int read_x) {
    const u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    if (i >= (u64)n_blocks * BS) return;
    const u32 b = (u32)(i / BS);
    const u32 o = (u32)(i - (u64)b * BS);
    const double s = inv_row_times(inv, r, b, o);
    x[i] = read_x ? omega * s + beta * x[i] : omega * s;
}

// One Chebyshev step after r has been updated: d = a D^-1 r + b d (read_d == 0: d = a D^-1 r),
// then x += d (x_mode 1) or x = d (x_mode 0), as the host smoother's apply_axpby and axpy.
extern "C" __global__ void cheb_update(const u32 n_blocks, const double a,
                                       const dval* __restrict__ inv,
                                       const double* __restrict__ r, const double b,
                                       double* __restrict__ d, double* __restrict__ x,
                                       const int read_d, const int x_mode) {
    const u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    if (i >= (u64)n_blocks * BS) return;
    const u32 blk = (u32)(i / BS);
    const u32 o = (u32)(i - (u64)blk * BS);
    const double s = inv_row_times(inv, r, blk, o);
    const double dn = read_d ? a * s + b * d[i] : a * s;
    d[i] = dn;
    if (x_mode) {
        x[i] += 1.0 * dn;
    } else {
        x[i] = dn;
    }
}
