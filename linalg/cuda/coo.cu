// COO scatter-sum through an uploaded CooPlan (BL values per block injected): owner computes,
// one thread per (slot, value of the block), no atomics. Slot s sums the blocks of its
// contributions contrib[slot_ptr[s]..slot_ptr[s+1]] (ascending, as the plan orders them) as
// 0 + c1 + c2 + ..., exactly the host's sum, so the result is bit-identical.

extern "C" __global__ void coo_sum(const u32 nnz, const u32* __restrict__ slot_ptr,
                                   const u32* __restrict__ contrib,
                                   const double* __restrict__ values, double* __restrict__ out) {
    const u64 t = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    if (t >= (u64)nnz * BL) return;
    const u32 s = (u32)(t / BL);
    const u32 e = (u32)(t - (u64)s * BL);
    const u32 end = __ldg(slot_ptr + s + 1);
    double acc = 0.0;
    for (u32 k = __ldg(slot_ptr + s); k < end; ++k)
        acc += __ldg(values + (size_t)__ldg(contrib + k) * BL + e);
    out[t] = acc;
}
