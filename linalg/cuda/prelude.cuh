// Shared by every hexfem kernel source: prepended by linalg::backend::cuda::nvrtc before the
// block-shape #defines and the source itself. fp64 throughout.
typedef unsigned int u32;
typedef unsigned long long u64;
#define FULL_MASK 0xffffffffu
#define NOT_FOUND 0xffffffffu

// This warp's row (blocks of whole warps, a warp a row): n past the last one, the same for
// every lane of the warp.
__device__ __forceinline__ u32 warp_row(const u32 n) {
    const u64 i = (blockIdx.x * (u64)blockDim.x + threadIdx.x) / 32;
    return i < n ? (u32)i : n;
}

// Position of `key` in the ascending `a[lo..hi)`, or NOT_FOUND.
__device__ __forceinline__ u32 find_sorted(const u32* __restrict__ a, u32 lo, u32 hi, u32 key) {
    while (lo < hi) {
        const u32 mid = lo + ((hi - lo) >> 1);
        const u32 v = __ldg(a + mid);
        if (v < key) {
            lo = mid + 1;
        } else if (v > key) {
            hi = mid;
        } else {
            return mid;
        }
    }
    return NOT_FOUND;
}

// A system-scope acquire load (flags other GPUs raise with system-scope release stores).
__device__ __forceinline__ u64 load_acquire_sys(const u64* p) {
    u64 v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

// A peer exchange's wait, done by the kernel that first reads its messages: thread 0 of each
// block spins until each of the n_wait sources has raised ready[s] >= seq, then the block
// goes on (n_wait == 0: nothing to wait for). Call it first, before any thread leaves.
__device__ __forceinline__ void wait_for_peers(const u32 n_wait, u64* const* ready, const u64 seq) {
    if (n_wait == 0) return;
    if (threadIdx.x == 0) {
        for (u32 s = 0; s < n_wait; ++s) {
            while (load_acquire_sys(ready[s]) < seq) {
            }
        }
    }
    __syncthreads();
}
