// The distributed Galerkin product's numeric steps on the device (amg::dist_cycle's hot
// update): whole blocks gathered from two sources (a distributed matrix's diagonal and
// off-diagonal parts, or a rank's own partial blocks and the blocks received from other ranks),
// and each coarse block summed from its listed contributions in the listed order. Plain copies
// and one addition per entry in the host's order: bit-identical to the host loops of
// amg::dist_galerkin.

// Source block j of the virtual concatenation [a; b] (n0 blocks in a).
__device__ __forceinline__ const double* block_of(const u64 j, const u64 n0, const u32 bl,
                                                 const double* __restrict__ a,
                                                 const double* __restrict__ b) {
    return j < n0 ? a + j * bl : b + (j - n0) * bl;
}

// out[k bl + c] = [a; b][idx[k] bl + c] for the n listed blocks.
extern "C" __global__ void gather_blocks_two(const u64 n, const u32 bl, const u32* __restrict__ idx,
                                             const u64 n0, const double* __restrict__ a,
                                             const double* __restrict__ b, double* __restrict__ out) {
    const u64 total = n * bl;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        const u64 k = i / bl;
        out[i] = block_of(idx[k], n0, bl, a, b)[i - k * bl];
    }
}

// out[s bl + c] = the sum over t = ptr[s], ..., ptr[s + 1] - 1 of [a; b][contrib[t] bl + c],
// the first assigned and the later ones added in order (every slot has one at least).
extern "C" __global__ void sum_blocks_in_order(const u64 n, const u32 bl, const u32* __restrict__ ptr,
                                               const u32* __restrict__ contrib, const u64 n0,
                                               const double* __restrict__ a,
                                               const double* __restrict__ b,
                                               double* __restrict__ out) {
    const u64 total = n * bl;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        const u64 s = i / bl;
        const u64 c = i - s * bl;
        const u32 end = ptr[s + 1];
        u32 t = ptr[s];
        double acc = block_of(contrib[t], n0, bl, a, b)[c];
        for (++t; t < end; ++t) {
            acc += block_of(contrib[t], n0, bl, a, b)[c];
        }
        out[i] = acc;
    }
}

// out[k] = the transpose of the br x bc block src[idx[k]] (a bc x br block, row-major), for the
// n listed blocks: a block transpose's numeric step (plain copies).
extern "C" __global__ void gather_transposed_blocks(const u64 n, const u32 br, const u32 bc,
                                                    const u32* __restrict__ idx,
                                                    const double* __restrict__ src,
                                                    double* __restrict__ out) {
    const u32 bl = br * bc;
    const u64 total = n * bl;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        const u64 k = i / bl;
        const u32 e = (u32)(i - k * bl);
        // output entry (r, c) of the bc x br block is source entry (c, r)
        out[i] = src[(u64)idx[k] * bl + (e % br) * bc + e / br];
    }
}
