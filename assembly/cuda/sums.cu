// Sums of a vector on the device in a fixed order (deterministic, not the host's order).

// sums[0] = sum of e[0..n), sums[1] = sum of |e[i]|; ONE block of 256 threads: thread t sums
// e[t], e[t + 256], ... in order, then a fixed tree combines the 256 partial sums.
extern "C" __global__ void sum_and_magnitude(const u32 n, const double* __restrict__ e,
                                             double* __restrict__ sums) {
    __shared__ double s[256];
    __shared__ double a[256];
    const u32 t = threadIdx.x;
    double x = 0.0, y = 0.0;
    for (u32 i = t; i < n; i += 256) {
        const double v = e[i];
        x += v;
        y += fabs(v);
    }
    s[t] = x;
    a[t] = y;
    __syncthreads();
    for (u32 w = 128; w > 0; w >>= 1) {
        if (t < w) {
            s[t] += s[t + w];
            a[t] += a[t + w];
        }
        __syncthreads();
    }
    if (t == 0) {
        sums[0] = s[0];
        sums[1] = a[0];
    }
}
