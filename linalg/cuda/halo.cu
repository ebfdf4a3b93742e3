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
// block listed twice among them), once the n_wait peer sources of exchange `seq` have landed
// (wait_for_peers; n_wait == 0: buf is ready).
extern "C" __global__ void scatter_add_blocks(const u64 first, const u64 n, const u32 bs,
                                              const u32* __restrict__ idx,
                                              const double* __restrict__ buf, double* __restrict__ y,
                                              const u32 n_wait, u64* const* __restrict__ ready,
                                              const u64 seq) {
    wait_for_peers(n_wait, ready, seq);
    const u64 total = n * bs;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        const u64 k = first + i / bs;
        const u64 c = i % bs;
        y[(u64)idx[k] * bs + c] += buf[k * bs + c];
    }
}

// ---- Peer writes (CUDA IPC between the ranks' GPUs of one node) ----
//
// Each exchange of a channel has a sequence number `seq` (1, 2, ...; the same on every rank of
// the channel). Flags are u64 counters in the receiving GPU's memory, written by peers with
// system-scope release stores and read with system-scope acquire loads:
//   ready: the sender's messages of exchange `seq` have landed (written after all its data);
//   free:  the receiver has finished every kernel queued before exchange `seq` (so the data of
//          earlier exchanges is consumed and its buffers may be overwritten).

__device__ __forceinline__ void store_release_sys(u64* p, u64 v) {
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// One exchange's sends, written straight into the destinations' memory. Destination d gets
// blocks first[d], ..., first[d + 1] - 1 of the list `idx` (blocks of `x`, `bs` entries each),
// stored from dst[d] on. Before writing: block 0 tells this exchange's n_src sources that
// everything queued before it here is done (free_remote[s] = seq - 1), and every block waits
// until each destination has said the same (free_local[d] >= seq - 1). After writing: the last
// block to finish sets ready_remote[d] = seq. `counter` (zero between launches) counts the
// finished blocks; the grid must fit on the device at once (it spins).
extern "C" __global__ void peer_put(const u32 n_dst, const u32* __restrict__ first,
                                    const u32* __restrict__ idx, const u32 bs,
                                    const double* __restrict__ x, double* const* __restrict__ dst,
                                    const u32 n_src, u64* const* __restrict__ free_remote,
                                    u64* const* __restrict__ ready_remote,
                                    u64* const* __restrict__ free_local, u32* counter,
                                    const u64 seq) {
    if (blockIdx.x == 0) {
        for (u32 s = threadIdx.x; s < n_src; s += blockDim.x) {
            store_release_sys(free_remote[s], seq - 1);
        }
    }
    if (threadIdx.x == 0) {
        for (u32 d = 0; d < n_dst; ++d) {
            while (load_acquire_sys(free_local[d]) < seq - 1) {
            }
        }
    }
    __syncthreads();
    const u64 total = (u64)first[n_dst] * bs;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        const u64 k = i / bs;
        u32 d = 0;
        while (k >= first[d + 1]) {
            ++d;
        }
        dst[d][(k - first[d]) * bs + (i - k * bs)] = x[(u64)idx[k] * bs + (i - k * bs)];
    }
    __threadfence_system();
    __syncthreads();
    if (threadIdx.x == 0) {
        const u32 done = atomicAdd(counter, 1u);
        if (done == gridDim.x - 1) {
            *counter = 0;
            __threadfence_system();
            for (u32 d = 0; d < n_dst; ++d) {
                store_release_sys(ready_remote[d], seq);
            }
        }
    }
}

// Waits until each of the n_src sources has set ready_local[s] >= seq (one block).
extern "C" __global__ void peer_wait(const u32 n_src, u64* const* __restrict__ ready_local,
                                     const u64 seq) {
    for (u32 s = threadIdx.x; s < n_src; s += blockDim.x) {
        while (load_acquire_sys(ready_local[s]) < seq) {
        }
    }
}
