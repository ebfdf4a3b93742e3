// Shared by every hexfem kernel source: prepended by linalg::backend::cuda::nvrtc before the
// block-shape #defines and the source itself. fp64 throughout.
typedef unsigned int u32;
typedef unsigned long long u64;
#define FULL_MASK 0xffffffffu
#define NOT_FOUND 0xffffffffu

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
