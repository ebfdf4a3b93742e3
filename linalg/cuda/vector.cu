// Vector kernels of CG and the smoothers, bit-identical to linalg::ops on the host
// (compiled with --fmad=false: every a * x + b * y rounds as the host's does).
//
// dot: the host sums fixed chunks of DOT_CHUNK entries, each with four interleaved
// accumulators and a tail, (acc0 + acc1) + (acc2 + acc3) + tail, then adds the chunk sums in
// order. dot_chunks computes one chunk per thread the same way; dot_sum adds the chunk sums
// in order. Fixed work split, fixed order: the same bits on every run and as on the host.

#ifndef DOT_CHUNK
#error "DOT_CHUNK (linalg::ops::REDUCTION_CHUNK) must be defined"
#endif

extern "C" __global__ void fill(const u64 n, const double a, double* __restrict__ y) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        y[i] = a;
}

// y = a x + b y; with read_y == 0 the old y is not read.
extern "C" __global__ void axpby(const u64 n, const double a, const double* __restrict__ x,
                                 const double b, double* __restrict__ y, const int read_y) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        y[i] = read_y ? a * x[i] + b * y[i] : a * x[i];
}

// y += a x (the host's axpy: one rounding of a * x, one of the sum).
extern "C" __global__ void axpy(const u64 n, const double a, const double* __restrict__ x,
                                double* __restrict__ y) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        y[i] += a * x[i];
}

// z = a x + b y + c z; with read_z == 0 the old z is not read.
extern "C" __global__ void axpbypcz(const u64 n, const double a, const double* __restrict__ x,
                                    const double b, const double* __restrict__ y, const double c,
                                    double* __restrict__ z, const int read_z) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        z[i] = read_z ? a * x[i] + b * y[i] + c * z[i] : a * x[i] + b * y[i];
}

// CG update: x += alpha p; r -= alpha q (as the host's two axpy calls).
extern "C" __global__ void cg_update(const u64 n, const double alpha, const double* __restrict__ p,
                                     const double* __restrict__ q, double* __restrict__ x,
                                     double* __restrict__ r) {
    const double m = -alpha;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        x[i] += alpha * p[i];
        r[i] += m * q[i];
    }
}

// One warp per chunk of DOT_CHUNK entries: sums[chunk] = the host's dot_chunk. The warp forms
// the products of a tile of DOT_TILE entries (coalesced loads) in shared memory; lane k < 4 then
// adds the products of entries 4i + k in order, as the host's accumulator k does. Products and
// sums round exactly as on the host (--fmad=false), so only the schedule differs.
#define DOT_TILE 1024
#define DOT_WARPS 4
extern "C" __global__ void __launch_bounds__(DOT_WARPS * 32)
dot_chunks(const u64 n, const double* __restrict__ x, const double* __restrict__ y,
           double* __restrict__ sums) {
    __shared__ double prod[DOT_WARPS][DOT_TILE];
    const u32 warp = threadIdx.x >> 5;
    const u32 lane = threadIdx.x & 31;
    const u64 chunk = blockIdx.x * (u64)DOT_WARPS + warp;
    const u64 start = chunk * DOT_CHUNK;
    if (start >= n) return;  // the whole warp leaves together
    const u32 len = (u32)min((u64)DOT_CHUNK, n - start);
    const u32 quads = len / 4;
    const double* __restrict__ a = x + start;
    const double* __restrict__ b = y + start;
    double* __restrict__ p = prod[warp];
    double acc = 0.0;  // lane k < 4: the host's acc[k]
    for (u32 base = 0; base < quads * 4; base += DOT_TILE) {
        const u32 tile = min((u32)DOT_TILE, quads * 4 - base);
        for (u32 e = lane; e < tile; e += 32) p[e] = __ldg(a + base + e) * __ldg(b + base + e);
        __syncwarp();
        if (lane < 4) {
#pragma unroll 8
            for (u32 e = lane; e < tile; e += 4) acc += p[e];
        }
        __syncwarp();
    }
    // (acc0 + acc1) + (acc2 + acc3) + tail, with the host's grouping.
    const double a1 = __shfl_sync(FULL_MASK, acc, 1);
    const double a2 = __shfl_sync(FULL_MASK, acc, 2);
    const double a3 = __shfl_sync(FULL_MASK, acc, 3);
    if (lane == 0) {
        double tail = 0.0;
        for (u32 k = quads * 4; k < len; ++k) tail += a[k] * b[k];
        sums[chunk] = (acc + a1) + (a2 + a3) + tail;
    }
}

// out[0] = sums[0] + sums[1] + ... in order (the host's iterator sum).
extern "C" __global__ void dot_sum(const u64 n_chunks, const double* __restrict__ sums,
                                   double* __restrict__ out) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    double s = n_chunks > 0 ? sums[0] : 0.0;
    for (u64 k = 1; k < n_chunks; ++k) s += sums[k];
    out[0] = s;
}
