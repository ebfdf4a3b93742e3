// The remaining kernels behind linalg's Device::Cuda: scaling, hashed fill, max norm, block
// norms, prolongator smoothing and the coarsest level's dense inverse. Compiled with
// --fmad=false: each mirrors its host kernel's operations (bit-identical where the host's order
// is sequential; the dense inverse equals the host's Cholesky/LU solve to rounding).

// x = a x
extern "C" __global__ void scale(const u64 n, const double a, double* __restrict__ x) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        x[i] *= a;
}

// x[i] = signed_unit(splitmix64((first + i) ^ seed_rot)) (linalg::hash, blas1::fill_hashed).
extern "C" __global__ void fill_hashed(const u64 n, const u64 first, const u64 seed_rot,
                                       double* __restrict__ x) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        u64 z = ((first + i) ^ seed_rot) + 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z = z ^ (z >> 31);
        x[i] = (double)(z >> 11) / 4503599627370496.0 - 1.0;
    }
}

__device__ __forceinline__ double max_nan(double a, double b) {
    return (isnan(a) || isnan(b)) ? (a + b) : fmax(a, b);
}

// partial[block] = max |x_i| over the block's grid-stride share (NaN if any entry is NaN).
#define MAX_THREADS 256
extern "C" __global__ void __launch_bounds__(MAX_THREADS)
max_abs_blocks(const u64 n, const double* __restrict__ x, double* __restrict__ partial) {
    __shared__ double s[MAX_THREADS];
    double m = 0.0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        m = max_nan(m, fabs(x[i]));
    s[threadIdx.x] = m;
    __syncthreads();
    for (u32 w = blockDim.x / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) s[threadIdx.x] = max_nan(s[threadIdx.x], s[threadIdx.x + w]);
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

extern "C" __global__ void max_abs_final(const u32 m, const double* __restrict__ partial,
                                         double* __restrict__ out) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    double r = 0.0;
    for (u32 k = 0; k < m; ++k) r = max_nan(r, partial[k]);
    out[0] = r;
}

// norms[k] = Frobenius norm of block k (entries summed in order, as the host).
extern "C" __global__ void block_norms(const u64 nnz, const u32 bl, const double* __restrict__ v,
                                       double* __restrict__ norms) {
    for (u64 k = blockIdx.x * (u64)blockDim.x + threadIdx.x; k < nnz; k += (u64)gridDim.x * blockDim.x) {
        const double* b = v + k * bl;
        double s = 0.0;
        for (u32 t = 0; t < bl; ++t) s += b[t] * b[t];
        norms[k] = sqrt(s);
    }
}

#if defined(BS) && defined(K)
// W_iJ <- P0_iJ - omega (D_i^{-1} W_iJ), one thread per block of W (owner computes): the host's
// smooth_prolongator entry by entry ((-omega) * s, then + P0 where P0 has the block).
#define SBL (BS * K)
extern "C" __global__ void smooth_prolongator(const u32 nnz, const u32* __restrict__ slot_row,
                                              const u32* __restrict__ p0_slot,
                                              const double* __restrict__ dinv,
                                              const double* __restrict__ p0,
                                              double* __restrict__ w, const double omega) {
    const u32 s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= nnz) return;
    const u32 i = slot_row[s];
    double blk[SBL];
#pragma unroll
    for (int t = 0; t < SBL; ++t) blk[t] = w[(size_t)s * SBL + t];
    const double* __restrict__ d = dinv + (size_t)i * BS * BS;
    const u32 q = p0_slot[s];
#pragma unroll
    for (int r = 0; r < BS; ++r) {
#pragma unroll
        for (int c = 0; c < K; ++c) {
            double sum = 0.0;
#pragma unroll
            for (int m = 0; m < BS; ++m) sum += d[r * BS + m] * blk[m * K + c];
            double t = -omega * sum;
            if (q != NOT_FOUND) t += p0[(size_t)q * SBL + r * K + c];
            w[(size_t)s * SBL + r * K + c] = t;
        }
    }
}
#endif

// dense[(br * row + r) * n_cols + bc * col + c] = block values (one thread per value; dense zeroed).
extern "C" __global__ void bsr_to_dense(const u64 n_values, const u32 br, const u32 bc,
                                        const u32* __restrict__ slot_row,
                                        const u32* __restrict__ col_idx,
                                        const double* __restrict__ v, const u32 n_cols,
                                        double* __restrict__ dense) {
    for (u64 e = blockIdx.x * (u64)blockDim.x + threadIdx.x; e < n_values; e += (u64)gridDim.x * blockDim.x) {
        const u64 slot = e / (br * bc);
        const u32 rc = (u32)(e % (br * bc));
        const u32 r = rc / bc, c = rc % bc;
        const u64 row = (u64)slot_row[slot] * br + r;
        const u64 col = (u64)col_idx[slot] * bc + c;
        dense[row * n_cols + col] = v[e];
    }
}

// The pivot row of column k: the largest |a_ik| over rows i >= k, ties to the smallest row
// (a total order: any reduction order gives the same row). Every thread of the block gets it.
// Warp shuffles, then one value a warp through s_val/s_idx (32 entries each).
__device__ __forceinline__ void column_pivot(const u32 n, const u32 k, const double* a,
                                             double* s_val, u32* s_idx, double* v_out,
                                             u32* idx_out) {
    const u32 tid = threadIdx.x, T = blockDim.x;
    double v = -1.0;
    u32 idx = k;
    for (u32 i = k + tid; i < n; i += T) {
        const double x = fabs(a[(u64)i * n + k]);
        if (x > v) {
            v = x;
            idx = i;
        }
    }
    for (u32 w = 16; w > 0; w >>= 1) {
        const double o = __shfl_down_sync(0xffffffffu, v, w);
        const u32 oi = __shfl_down_sync(0xffffffffu, idx, w);
        if (o > v || (o == v && oi < idx)) {
            v = o;
            idx = oi;
        }
    }
    const u32 lane = tid % 32, warp = tid / 32, warps = T / 32;
    __syncthreads();  // s_val/s_idx free again (their last readers are past)
    if (lane == 0) {
        s_val[warp] = v;
        s_idx[warp] = idx;
    }
    __syncthreads();
    if (warp == 0) {
        v = lane < warps ? s_val[lane] : -1.0;
        idx = lane < warps ? s_idx[lane] : k;
        for (u32 w = 16; w > 0; w >>= 1) {
            const double o = __shfl_down_sync(0xffffffffu, v, w);
            const u32 oi = __shfl_down_sync(0xffffffffu, idx, w);
            if (o > v || (o == v && oi < idx)) {
                v = o;
                idx = oi;
            }
        }
        if (lane == 0) {
            s_val[32] = v;
            s_idx[32] = idx;
        }
    }
    __syncthreads();
    *v_out = s_val[32];
    *idx_out = s_idx[32];
}

// In-place inverse of the row-major n x n matrix a by Gauss-Jordan with partial pivoting, the
// host's dense::invert_in_place step for step, by one thread block (a multiple of 32 threads).
// a and f (scratch of n) are global or shared memory. A pivot not above rtol * max|a| stores
// the complement of its column (~k) in *fail (zeroed by the caller: no upload) and stops.
// perm (n) is scratch.
#define INV_THREADS 1024
__device__ void gauss_jordan_block(const u32 n, double* a, u32* __restrict__ perm, double* f,
                                   const double rtol, u64* __restrict__ fail) {
    __shared__ double s_val[33];
    __shared__ u32 s_idx[33];
    __shared__ double s_tol, s_inv;
    const u32 tid = threadIdx.x, T = blockDim.x;
    const u64 nn = (u64)n * n;
    double m = 0.0;
    for (u64 e = tid; e < nn; e += T) m = fmax(m, fabs(a[e]));
    for (u32 w = 16; w > 0; w >>= 1) m = fmax(m, __shfl_down_sync(0xffffffffu, m, w));
    if (tid % 32 == 0) s_val[tid / 32] = m;
    __syncthreads();
    if (tid == 0) {
        double t = s_val[0];
        for (u32 w = 1; w < T / 32; ++w) t = fmax(t, s_val[w]);
        s_tol = rtol * t;
    }
    __syncthreads();
    const double tol = s_tol;
    // this thread's first entry (i0, j0) and its stride T in (rows, columns): the update
    // loop below walks the entries without a division per entry
    const u32 i0 = tid / n, j0 = tid % n, step_i = T / n, step_j = T % n;
    for (u32 k = 0; k < n; ++k) {
        double best;
        u32 p;
        column_pivot(n, k, a, s_val, s_idx, &best, &p);
        if (!(best > tol)) {
            if (tid == 0) fail[0] = ~(u64)k;
            return;
        }
        if (tid == 0) perm[k] = p;
        if (p != k) {
            for (u32 j = tid; j < n; j += T) {
                const double t = a[(u64)k * n + j];
                a[(u64)k * n + j] = a[(u64)p * n + j];
                a[(u64)p * n + j] = t;
            }
        }
        __syncthreads();
        if (tid == 0) {
            s_inv = 1.0 / a[(u64)k * n + k];
            a[(u64)k * n + k] = 1.0;
        }
        __syncthreads();
        for (u32 j = tid; j < n; j += T) a[(u64)k * n + j] *= s_inv;
        for (u32 i = tid; i < n; i += T) f[i] = (i == k) ? 0.0 : a[(u64)i * n + k];
        __syncthreads();
        u32 i = i0, j = j0;
        for (u64 e = tid; e < nn; e += T) {
            const double fi = f[i];
            if (i != k && fi != 0.0) {
                if (j == k) {
                    a[e] = 0.0 - fi * a[(u64)k * n + k];
                } else {
                    a[e] -= fi * a[(u64)k * n + j];
                }
            }
            i += step_i;
            j += step_j;
            if (j >= n) {
                j -= n;
                ++i;
            }
        }
        __syncthreads();
    }
    for (int k = (int)n - 1; k >= 0; --k) {
        const u32 p = perm[k];
        if (p != (u32)k) {
            for (u32 i = tid; i < n; i += T) {
                const double t = a[(u64)i * n + k];
                a[(u64)i * n + k] = a[(u64)i * n + p];
                a[(u64)i * n + p] = t;
            }
        }
        __syncthreads();
    }
}

// The inverse in global memory, one block (n too large for a multiprocessor's shared memory).
extern "C" __global__ void __launch_bounds__(INV_THREADS)
dense_invert(const u32 n, double* __restrict__ a, u32* __restrict__ perm, double* __restrict__ f,
             const double rtol, u64* __restrict__ fail) {
    gauss_jordan_block(n, a, perm, f, rtol, fail);
}

// The inverse in shared memory (n * n + n values, dynamic), one block: the matrix is read in,
// inverted there by the same operations (the same bits) and written back. Against global
// memory each step's update no longer waits on L2 for every entry (1.3 ms -> about 0.3 at 144
// unknowns on an H200).
extern "C" __global__ void __launch_bounds__(INV_THREADS)
dense_invert_shared(const u32 n, double* __restrict__ a, u32* __restrict__ perm,
                    const double rtol, u64* __restrict__ fail) {
    extern __shared__ double s_a[];
    const u32 tid = threadIdx.x, T = blockDim.x;
    const u64 nn = (u64)n * n;
    for (u64 e = tid; e < nn; e += T) s_a[e] = a[e];
    __syncthreads();
    gauss_jordan_block(n, s_a, perm, s_a + nn, rtol, fail);
    __syncthreads();
    for (u64 e = tid; e < nn; e += T) a[e] = s_a[e];
}

// The same Gauss-Jordan inverse over several launches, for larger n (one block is bound by
// its multiprocessor's share of L2 bandwidth there): dense_invert_tol, then per column k
// dense_invert_pivot (one block: pivot, row swap, row scaling, multipliers) and
// dense_invert_update (every entry, the whole grid), then dense_invert_unpermute. Each entry
// sees the single-block kernel's operations in its order: the same bits. *fail holds
// INV_OK (zero) until a pivot fails, then ~column; the later launches then return at once.
#define INV_OK 0ULL
extern "C" __global__ void __launch_bounds__(INV_THREADS)
dense_invert_tol(const u32 n, const double* __restrict__ a, const double rtol,
                 double* __restrict__ tol) {
    __shared__ double s_val[INV_THREADS];
    const u32 tid = threadIdx.x, T = blockDim.x;
    const u64 nn = (u64)n * n;
    double m = 0.0;
    for (u64 e = tid; e < nn; e += T) m = fmax(m, fabs(a[e]));
    s_val[tid] = m;
    __syncthreads();
    for (u32 w = T / 2; w > 0; w >>= 1) {
        if (tid < w) s_val[tid] = fmax(s_val[tid], s_val[tid + w]);
        __syncthreads();
    }
    if (tid == 0) tol[0] = rtol * s_val[0];
}

extern "C" __global__ void __launch_bounds__(INV_THREADS)
dense_invert_pivot(const u32 n, const u32 k, double* __restrict__ a, u32* __restrict__ perm,
                   double* __restrict__ f, const double* __restrict__ tol,
                   u64* __restrict__ fail) {
    __shared__ double s_val[33];
    __shared__ u32 s_idx[33];
    __shared__ double s_inv;
    __shared__ int s_bad;
    const u32 tid = threadIdx.x, T = blockDim.x;
    if (fail[0] != INV_OK) return;
    double best;
    u32 p;
    column_pivot(n, k, a, s_val, s_idx, &best, &p);
    if (tid == 0) {
        s_bad = 0;
        if (!(best > tol[0])) {
            s_bad = 1;
            fail[0] = ~(u64)k;
        }
        perm[k] = p;
    }
    __syncthreads();
    if (s_bad) return;
    if (p != k) {
        for (u32 j = tid; j < n; j += T) {
            const double t = a[(u64)k * n + j];
            a[(u64)k * n + j] = a[(u64)p * n + j];
            a[(u64)p * n + j] = t;
        }
    }
    __syncthreads();
    if (tid == 0) {
        s_inv = 1.0 / a[(u64)k * n + k];
        a[(u64)k * n + k] = 1.0;
    }
    __syncthreads();
    for (u32 j = tid; j < n; j += T) a[(u64)k * n + j] *= s_inv;
    for (u32 i = tid; i < n; i += T) f[i] = (i == k) ? 0.0 : a[(u64)i * n + k];
}

// Every entry outside row k: a_ij -= f_i a_kj (column k: 0 - f_i a_kk), as the single-block
// kernel's update. n * n < 2^32 (the callers' limit).
extern "C" __global__ void dense_invert_update(const u32 n, const u32 k, double* __restrict__ a,
                                               const double* __restrict__ f,
                                               const u64* __restrict__ fail) {
    if (fail[0] != INV_OK) return;
    const u32 nn = n * n;
    for (u32 e = blockIdx.x * blockDim.x + threadIdx.x; e < nn; e += gridDim.x * blockDim.x) {
        const u32 i = e / n, j = e % n;
        const double fi = f[i];
        if (i == k || fi == 0.0) continue;
        if (j == k) {
            a[e] = 0.0 - fi * a[(u64)k * n + k];
        } else {
            a[e] -= fi * a[(u64)k * n + j];
        }
    }
}

extern "C" __global__ void __launch_bounds__(INV_THREADS)
dense_invert_unpermute(const u32 n, double* __restrict__ a, const u32* __restrict__ perm,
                       const u64* __restrict__ fail) {
    const u32 tid = threadIdx.x, T = blockDim.x;
    if (fail[0] != INV_OK) return;
    for (int k = (int)n - 1; k >= 0; --k) {
        const u32 p = perm[k];
        if (p != (u32)k) {
            for (u32 i = tid; i < n; i += T) {
                const double t = a[(u64)i * n + k];
                a[(u64)i * n + k] = a[(u64)i * n + p];
                a[(u64)i * n + p] = t;
            }
        }
        __syncthreads();
    }
}

// y = M x for the dense row-major n x n M, one thread per row (entries in order).
extern "C" __global__ void dense_matvec(const u32 n, const double* __restrict__ m,
                                        const double* __restrict__ x, double* __restrict__ y) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const double* row = m + (u64)i * n;
    double s = 0.0;
    for (u32 j = 0; j < n; ++j) s += row[j] * x[j];
    y[i] = s;
}

// Stored-precision conversions (mixed-precision AMG): y = (float)x (round to nearest), and
// y = (double)x (exact).
extern "C" __global__ void narrow_to_f32(const u64 n, const double* __restrict__ x,
                                         float* __restrict__ y) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        y[i] = (float)x[i];
}

extern "C" __global__ void widen_to_f64(const u64 n, const float* __restrict__ x,
                                        double* __restrict__ y) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        y[i] = (double)x[i];
}
