// Vector kernels of CG and the smoothers, bit-identical to linalg::ops on the host
// (compiled with --fmad=false: every a * x + b * y rounds as the host's does).
//
// Reductions (dot products, sums) are exact, as the host's linalg::exact::ExactSum: every term
// (a product rounded as on the host, a value or a magnitude) is split into 32-bit bins of a
// fixed-point integer; integer adds are associative, so the sum does not depend on the order in
// which threads and blocks add; exact_finish rounds once exactly as ExactSum::value does. The
// result is the host's bits for any launch shape.

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

// ---- the scalars of a CG recurrence kept on the device (linalg::CgCoefficients) ---------
//
// One array `s` of 4 S + 1 doubles for S steps: alpha[S] | beta[S] | rz[S + 1] | pq[S]. The
// dots write rz[k] and pq[k] (exact_bins rounding into a slot); the two kernels below evaluate
// the host's conditions (CgCoefficients' host branch) on the same bits and record the
// coefficient, or NaN where the step stops the recurrence (a recorded alpha or beta is never
// NaN: alpha = rz / pq with rz > 0 and pq > 0 finite, beta > 0 and finite), from thread 0 of
// block 0 into a slot no thread of the launch reads; they do their update only where the step
// goes on: after a stop every later launch of the recurrence writes nothing but NaN records.
#define CG_ALPHA(S) 0
#define CG_BETA(S) (S)
#define CG_RZ(S) (2 * (S))
#define CG_PQ(S) (3 * (S) + 1)
#define CG_NONE __longlong_as_double(0x7ff8000000000000ll)

// Step k's alpha: the step goes on where step k - 1 recorded its beta (k == 0: always),
// rz[k] > 0, pq[k] > 0 and finite; then alpha[k] = rz[k] / pq[k] (IEEE division, the host's
// bits) and r -= alpha q over the n entries (the host's axpy with a = -alpha).
extern "C" __global__ void cg_alpha_axpy(const u64 n, const u64 k, const u64 steps,
                                         double* s, const double* __restrict__ q,
                                         double* __restrict__ r) {
    const double rz = s[CG_RZ(steps) + k], pq = s[CG_PQ(steps) + k];
    const bool go = k == 0 || !isnan(s[CG_BETA(steps) + k - 1]);
    const bool ok = go && rz > 0.0 && pq > 0.0 && isfinite(pq);
    const double alpha = rz / pq;
    if (blockIdx.x == 0 && threadIdx.x == 0) s[CG_ALPHA(steps) + k] = ok ? alpha : CG_NONE;
    if (!ok) return;
    const double a = -alpha;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        r[i] += a * q[i];
}

// Step k's beta = rz[k + 1] / rz[k] where step k recorded its alpha, beta > 0 and finite and
// rz[k + 1] > ratio rz[k]; then p = 1 z + beta p over the n entries (the host's axpby).
extern "C" __global__ void cg_beta_axpby(const u64 n, const u64 k, const u64 steps,
                                         const double ratio, double* s,
                                         const double* __restrict__ z, double* __restrict__ p) {
    const double rz = s[CG_RZ(steps) + k], rz_new = s[CG_RZ(steps) + k + 1];
    const double beta = rz_new / rz;
    const bool ok = !isnan(s[CG_ALPHA(steps) + k]) && beta > 0.0 && isfinite(beta) &&
                    !(rz_new <= ratio * rz);
    if (blockIdx.x == 0 && threadIdx.x == 0) s[CG_BETA(steps) + k] = ok ? beta : CG_NONE;
    if (!ok) return;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        p[i] = 1.0 * z[i] + beta * p[i];
}

// ---- exact sums (linalg::exact::ExactSum on the device) ----------------------------------

// Bins of 32 bits covering 2^-1074 .. 2^1024 with head room (ExactSum's N_BINS); word
// EXACT_BINS of the accumulator holds the non-finite flags.
#define EXACT_BINS 68
#define EXACT_BIN_BITS 32
#define NONFINITE_POS_INF 1ull
#define NONFINITE_NEG_INF 2ull
#define NONFINITE_NAN 4ull
// The terms of exact_bins: x_i y_i, x_i or |x_i|.
#define TERM_PRODUCT 0
#define TERM_VALUE 1
#define TERM_MAGNITUDE 2
#define EXACT_THREADS 256

// Adds a lane's four words (bins lo .. lo + 3) to the block's shared bins; zero words add
// nothing and are skipped.
__device__ __forceinline__ void exact_flush(unsigned long long* bins, int lo, long long w0,
                                            long long w1, long long w2, long long w3) {
    if (lo < 0) return;
    // two's complement: unsigned adds of signed words are the signed adds modulo 2^64
    if (w0) atomicAdd(bins + lo, (unsigned long long)w0);
    if (w1) atomicAdd(bins + lo + 1, (unsigned long long)w1);
    if (w2) atomicAdd(bins + lo + 2, (unsigned long long)w2);
    if (w3) atomicAdd(bins + lo + 3, (unsigned long long)w3);
}

// The four words of one lane's window flushed into the block's shared bins, added over the
// warp first where every lane with terms has the same window (the common case: products of
// similar magnitude share a window of two 32-bit bins), so that one lane adds them instead of
// 32 lanes contending for the same shared words. Integer sums: any grouping gives the same
// words.
__device__ __forceinline__ void exact_flush_warp(unsigned long long* bins, int lo, long long a0,
                                                 long long a1, long long a2, long long a3) {
    int top = lo;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) top = max(top, __shfl_xor_sync(FULL_MASK, top, off));
    if (top >= 0 && __all_sync(FULL_MASK, lo == top || lo < 0)) {
        // lanes without terms hold zeros
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            a0 += __shfl_xor_sync(FULL_MASK, a0, off);
            a1 += __shfl_xor_sync(FULL_MASK, a1, off);
            a2 += __shfl_xor_sync(FULL_MASK, a2, off);
            a3 += __shfl_xor_sync(FULL_MASK, a3, off);
        }
        if ((threadIdx.x & 31) == 0) exact_flush(bins, top, a0, a1, a2, a3);
    } else {
        exact_flush(bins, lo, a0, a1, a2, a3);
    }
}

// ExactSum::value's rounding of the accumulator b (EXACT_BINS words, overwritten) with the
// non-finite flags into *out (ties to even; +0 for an exact zero; a subnormal result rounded
// twice, as on the host); NaN or the infinity for non-finite terms. One thread.
__device__ void exact_round(long long* b, const unsigned long long flags, double* out);

// words[0..EXACT_BINS) += the terms' bins (unnormalised, integer atomics: any order gives the
// same words), words[EXACT_BINS] |= the non-finite flags. words must start zeroed; n < 2^30
// keeps every bin's running sum inside 63 bits (each term adds less than 2^33 to a bin).
// A term of bin b adds three words (bins b .. b + 2). Each thread keeps a window of four words
// (bins lo .. lo + 3: the terms of bins lo and lo + 1, which values around a power of 2^32
// straddle) in registers and flushes it to the block's shared bins when a term falls outside
// (at the end over its warp first); blocks then add into words. With `done` (not null; zero before the launch) the last block
// to finish rounds words into out[0] as exact_finish does and leaves words and *done zeroed
// for the next sum.
extern "C" __global__ void __launch_bounds__(EXACT_THREADS)
exact_bins(const u64 n, const double* __restrict__ x, const double* __restrict__ y,
           const int term, unsigned long long* __restrict__ words, unsigned int* done,
           double* __restrict__ out) {
    __shared__ unsigned long long bins[EXACT_BINS];
    __shared__ unsigned long long flags;
    __shared__ bool last;
    for (u32 i = threadIdx.x; i < EXACT_BINS; i += blockDim.x) bins[i] = 0;
    if (threadIdx.x == 0) flags = 0;
    __syncthreads();
    int lo = -1;
    long long a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    unsigned long long my_flags = 0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const double v = __ldg(x + i);
        const double t = term == TERM_PRODUCT ? v * __ldg(y + i) : term == TERM_VALUE ? v : fabs(v);
        const u64 bits = (u64)__double_as_longlong(t);
        const u32 exponent = (u32)((bits >> 52) & 0x7ff);
        if (exponent == 0x7ff) {
            my_flags |= isnan(t) ? NONFINITE_NAN : (t > 0.0 ? NONFINITE_POS_INF : NONFINITE_NEG_INF);
            continue;
        }
        // t = m 2^(position - 1074); subnormals (exponent 0) have no hidden bit
        const u64 normal = exponent != 0;
        const u64 m = (bits & ((1ull << 52) - 1)) | (normal << 52);
        if (m == 0) continue;
        const u32 position = exponent - (u32)normal;
        const u32 shift = position % EXACT_BIN_BITS;
        const u64 low = (m & 0xffffffffull) << shift;
        const u64 high = (m >> 32) << shift;
        const long long sign = (long long)bits >> 63;
        const long long w0 = (long long)(low & 0xffffffffull);
        const long long w1 = (long long)((low >> 32) + (high & 0xffffffffull));
        const long long w2 = (long long)(high >> 32);
        const int b = (int)(position / EXACT_BIN_BITS);
        if (lo < 0 || b < lo || b > lo + 1) {
            exact_flush(bins, lo, a0, a1, a2, a3);
            lo = b;
            a0 = a1 = a2 = a3 = 0;
        }
        const long long s0 = (w0 ^ sign) - sign, s1 = (w1 ^ sign) - sign, s2 = (w2 ^ sign) - sign;
        if (b == lo) {
            a0 += s0;
            a1 += s1;
            a2 += s2;
        } else {
            a1 += s0;
            a2 += s1;
            a3 += s2;
        }
    }
    exact_flush_warp(bins, lo, a0, a1, a2, a3);
    if (my_flags) atomicOr(&flags, my_flags);
    __syncthreads();
    for (u32 i = threadIdx.x; i < EXACT_BINS; i += blockDim.x)
        if (bins[i]) atomicAdd(words + i, bins[i]);
    if (threadIdx.x == 0 && flags) atomicOr(words + EXACT_BINS, flags);
    if (done == nullptr) return;
    // the last block rounds (the threadFenceReduction pattern: every block's additions are
    // visible before its count)
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(done, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last) return;
    // the last block's threads read (and zero) the bins at once, one load latency, into its
    // shared bins (their block sums went into words above); thread 0 rounds
    __threadfence();
    long long* b = (long long*)bins;
    for (u32 i = threadIdx.x; i < EXACT_BINS; i += blockDim.x) {
        b[i] = (long long)__ldcg(words + i);
        words[i] = 0;
    }
    __syncthreads();
    if (threadIdx.x != 0) return;
    const unsigned long long f = __ldcg(words + EXACT_BINS);
    words[EXACT_BINS] = 0;
    *done = 0;
    exact_round(b, f, out);
}

// ExactSum::normalize: every bin but the top one in [0, 2^32), the top one signed (the carry
// into bin i + 1 is that of bin i with the carry into it: kept in a register, so that the
// loads of the bins do not wait on the chain).
__device__ void exact_normalize(long long* b) {
    long long carry = 0;
    for (int i = 0; i < EXACT_BINS - 1; ++i) {
        const long long v = b[i] + carry;
        carry = v >> EXACT_BIN_BITS;  // arithmetic shift
        b[i] = v & 0xffffffffll;
    }
    b[EXACT_BINS - 1] += carry;
}

// 2^k for a normal exponent k (ExactSum's scale_by_power_of_two's power).
__device__ __forceinline__ double exact_power(int k) {
    return __longlong_as_double((long long)(k + 1023) << 52);
}

// out[k] = accumulator k (words[k (EXACT_BINS + 1)..], one per block k) rounded once as
// ExactSum::value rounds (exact_round). One thread per block.
extern "C" __global__ void exact_finish(const unsigned long long* __restrict__ words,
                                        double* __restrict__ out) {
    if (threadIdx.x != 0) return;
    words += (u64)blockIdx.x * (EXACT_BINS + 1);
    out += blockIdx.x;
    __shared__ long long b[EXACT_BINS];
    for (int i = 0; i < EXACT_BINS; ++i) b[i] = (long long)words[i];
    exact_round(b, words[EXACT_BINS], out);
}

__device__ void exact_round(long long* b, const unsigned long long flags, double* out) {
    if (flags) {
        const bool nan = (flags & NONFINITE_NAN) ||
                         (flags & (NONFINITE_POS_INF | NONFINITE_NEG_INF)) ==
                             (NONFINITE_POS_INF | NONFINITE_NEG_INF);
        out[0] = nan ? __longlong_as_double(0x7ff8000000000000ll)
                     : (flags & NONFINITE_POS_INF ? __longlong_as_double(0x7ff0000000000000ll)
                                                  : __longlong_as_double((long long)0xfff0000000000000ull));
        return;
    }
    exact_normalize(b);
    const bool negative = b[EXACT_BINS - 1] < 0;
    if (negative) {
        for (int i = 0; i < EXACT_BINS; ++i) b[i] = -b[i];
        exact_normalize(b);
    }
    int top = EXACT_BINS - 1;
    while (top >= 0 && b[top] == 0) --top;
    if (top < 0) {
        out[0] = 0.0;
        return;
    }
    // head = the top three bins (< 2^96) = h 2^32 + l, a sticky bit for the bins below
    const u64 h = ((u64)b[top] << 32) | (top >= 1 ? (u64)b[top - 1] : 0ull);
    u64 l = top >= 2 ? (u64)b[top - 2] : 0ull;
    for (int i = 0; i < top - 2; ++i)
        if (b[i] != 0) l |= 1;
    // head rounded to the nearest double (ties to even), as Rust's `u128 as f64`
    double head;
    if (h == 0) {
        head = (double)l;  // below 2^32: exact
    } else {
        const int lz = __clzll((long long)h);
        const u64 ll = l << 32;
        u64 lead = lz ? (h << lz) | (ll >> (64 - lz)) : h;  // the 64 leading bits
        if (ll << lz) lead |= 1;  // sticky, 11 bits below the double's last bit
        head = __ull2double_rn(lead) * exact_power(32 - lz);
    }
    // scale_by_power_of_two(head, 32 (top - 2) - 1074), the host's steps
    int k = EXACT_BIN_BITS * (top - 2) - 1074;
    while (k > 1000) {
        head *= exact_power(1000);
        k -= 1000;
    }
    while (k < -1000) {
        head *= exact_power(-1000);
        k += 1000;
    }
    head *= exact_power(k);
    out[0] = negative ? -head : head;
}
