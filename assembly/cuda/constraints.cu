// Dirichlet constraints on the device, the twins of linalg's host DofMask kernels and of
// assembly::Constraints::write_prescribed (same operations in the same order: bit-identical).
// bits[i]: bit c set iff component c of node i is constrained (3 unknowns per node).

// v[3 i + c] = 0 where constrained.
extern "C" __global__ void mask_zero(const u32 n_nodes, const u32* __restrict__ bits, double* __restrict__ v) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= 3 * n_nodes) return;
    if (__ldg(bits + t / 3) & (1u << (t % 3))) v[t] = 0.0;
}

// to[3 i + c] = from[3 i + c] where constrained.
extern "C" __global__ void mask_copy(const u32 n_nodes, const u32* __restrict__ bits,
                                     const double* __restrict__ from, double* __restrict__ to) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= 3 * n_nodes) return;
    if (__ldg(bits + t / 3) & (1u << (t % 3))) to[t] = from[t];
}

// Symmetric elimination in the touched 3x3 blocks: flags = row_bits | col_bits << 8 | diagonal << 16.
// A constrained diagonal entry keeps `fraction` of its magnitude (the caller passes linalg's
// ELIMINATED_DIAGONAL_FRACTION), one where it is zero or not finite (linalg's eliminated_diagonal).
// One thread per (touched block, entry).
extern "C" __global__ void mask_eliminate(const u32 n_touched, const u32* __restrict__ slots,
                                          const u32* __restrict__ flags, const double fraction,
                                          double* __restrict__ values) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= 9 * n_touched) return;
    const u32 b = t / 9, e = t % 9, r = e / 3, c = e % 3;
    const u32 f = __ldg(flags + b);
    const u32 row_bits = f & 0xff, col_bits = (f >> 8) & 0xff, diagonal = (f >> 16) & 1;
    if ((row_bits & (1u << r)) || (col_bits & (1u << c))) {
        double* v = values + (size_t)__ldg(slots + b) * 9 + e;
        if (diagonal && r == c) {
            const double before = *v;
            *v = (before != 0.0 && isfinite(before)) ? fraction * fabs(before) : 1.0;
        } else {
            *v = 0.0;
        }
    }
}

// u[3 node + c] = load_factor * value_c for the components in `comp_bits`.
extern "C" __global__ void prescribe_components(const u32 n, const u32* __restrict__ nodes, const u32 comp_bits,
                                                const double load_factor, const double v0, const double v1,
                                                const double v2, double* __restrict__ u) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= 3 * n) return;
    const u32 c = t % 3;
    if (!(comp_bits & (1u << c))) return;
    const double v = c == 0 ? v0 : (c == 1 ? v1 : v2);
    u[(size_t)__ldg(nodes + t / 3) * 3 + c] = load_factor * v;
}

// u[3 node + c] = load_factor * values[3 t + c] for the components in `comp_bits` (an expression
// of the reference position, evaluated per node on the host), or values[3 t + c] itself for the
// components in `timed_bits` (an expression of the time, evaluated by the host per load step).
extern "C" __global__ void prescribe_field(const u32 n, const u32* __restrict__ nodes, const u32 comp_bits,
                                           const u32 timed_bits, const double load_factor,
                                           const double* __restrict__ values, double* __restrict__ u) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= 3 * n) return;
    const u32 c = t % 3;
    if (!(comp_bits & (1u << c))) return;
    const double v = __ldg(values + t);
    u[(size_t)__ldg(nodes + t / 3) * 3 + c] = (timed_bits & (1u << c)) ? v : load_factor * v;
}

// Twist: u = R (x - center) - (x - center) + s, with R and s = load_factor axial n computed on the host.
extern "C" __global__ void prescribe_twist(const u32 n, const u32* __restrict__ nodes,
                                           const double* __restrict__ coords, const double r00, const double r01,
                                           const double r02, const double r10, const double r11,
                                           const double r12, const double r20, const double r21,
                                           const double r22, const double cx, const double cy,
                                           const double cz, const double s0, const double s1,
                                           const double s2, double* __restrict__ u) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const size_t node = __ldg(nodes + t);
    const double r[3] = {__ldg(coords + node * 3) - cx, __ldg(coords + node * 3 + 1) - cy,
                         __ldg(coords + node * 3 + 2) - cz};
    const double rot[9] = {r00, r01, r02, r10, r11, r12, r20, r21, r22};
    const double s[3] = {s0, s1, s2};
    for (int i = 0; i < 3; ++i) {
        // the host's iterator sum (-0.0 + a + b + c, which is a + b + c exactly)
        double rotated = rot[3 * i] * r[0];
        rotated += rot[3 * i + 1] * r[1];
        rotated += rot[3 * i + 2] * r[2];
        u[node * 3 + i] = rotated - r[i] + s[i];
    }
}
