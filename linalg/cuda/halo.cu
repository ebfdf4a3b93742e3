// Halo exchange of distributed vectors on the device: whole blocks of `bs` entries gathered
// from a vector into one send buffer, and received blocks added into a vector. Plain copies and
// one addition per entry: bit-identical to the host loops of linalg::dist.

// out[k bs + c] = x[idx[k] bs + c] for the n listed blocks.
extern "C" __global__ void gather_blocks(const u64 n, const u32 bs, const u32* __restrict__ idx,
                                         const double* __restrict__ x, double* __restrict__ out) {
    const u64 total = n * bs;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        const u64 k = i / bs;
        out[i] = x[(u64)idx[k] * bs + (i - k * bs)];
    }
}

// y[idx[k] bs + c] += buf[k bs + c] for the n listed blocks k = first, ..., first + n - 1 (no
// block listed twice among them).
extern "C" __global__ void scatter_add_blocks(const u64 first, const u64 n, const u32 bs,
                                              const u32* __restrict__ idx,
                                              const double* __restrict__ buf, double* __restrict__ y) {
    const u64 total = n * bs;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        const u64 k = first + i / bs;
        const u64 c = i % bs;
        y[(u64)idx[k] * bs + c] += buf[k * bs + c];
    }
}
