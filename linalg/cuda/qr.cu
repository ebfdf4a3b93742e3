// Householder thin QR of row groups (the tentative prolongator's per-aggregate QR): one thread
// per group, the operations of the host's `linalg::grouped_qr::thin_qr` one for one (compiled
// without FMA contraction), so Q and R are the host's bit for bit.
//
// Defines: BS (rows per block row), K (columns).
// Group g is the m x K matrix of block rows members[offsets[g] .. offsets[g + 1]] of `b`
// (row-major, BS * K values per block row), m = BS * (its block rows). Row i of the group lives,
// during the factorisation and as Q at the end, at q[(slots[offsets[g] + i / BS] * BS + i % BS)
// * K + c]; v (group-major, the Householder vectors) at v[(offsets[g] * BS + i) * K + c]; R at
// r[g * K * K ..].

extern "C" __global__ void grouped_qr(unsigned n_groups, const unsigned* __restrict__ offsets,
                                      const unsigned* __restrict__ members,
                                      const unsigned* __restrict__ slots,
                                      const double* __restrict__ b, double* __restrict__ q,
                                      double* __restrict__ v, double* __restrict__ r) {
    unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= n_groups) return;
    const unsigned s0 = offsets[g];
    const unsigned m = (offsets[g + 1] - s0) * BS;
    const unsigned long long v0 = (unsigned long long)s0 * BS;
#define A(i, c) q[((unsigned long long)slots[s0 + (i) / BS] * BS + (i) % BS) * K + (c)]
#define V(i, c) v[(v0 + (i)) * K + (c)]
    // gather the group's rows of b into Q's rows
    for (unsigned i = 0; i < m; ++i) {
        const unsigned long long src = ((unsigned long long)members[s0 + i / BS] * BS + i % BS) * K;
        for (unsigned c = 0; c < K; ++c) A(i, c) = b[src + c];
    }
    double betas[K];
    for (unsigned j = 0; j < K; ++j) {
        double norm2 = 0.0;
        for (unsigned i = j; i < m; ++i) norm2 += A(i, j) * A(i, j);
        const double norm = sqrt(norm2);
        const double x0 = A(j, j);
        if (norm == 0.0) {
            betas[j] = 0.0;
            continue;
        }
        const double alpha = x0 >= 0.0 ? -norm : norm;
        double vtv = 0.0;
        for (unsigned i = j; i < m; ++i) {
            const double vi = i == j ? x0 - alpha : A(i, j);
            V(i, j) = vi;
            vtv += vi * vi;
        }
        const double beta = vtv > 0.0 ? 2.0 / vtv : 0.0;
        betas[j] = beta;
        for (unsigned c = j; c < K; ++c) {
            double s = 0.0;
            for (unsigned i = j; i < m; ++i) s += V(i, j) * A(i, c);
            s *= beta;
            for (unsigned i = j; i < m; ++i) A(i, c) -= s * V(i, j);
        }
    }
    double* rg = r + (unsigned long long)g * K * K;
    for (unsigned i = 0; i < K; ++i)
        for (unsigned c = 0; c < K; ++c) rg[i * K + c] = c >= i ? A(i, c) : 0.0;
    for (unsigned i = 0; i < m; ++i)
        for (unsigned c = 0; c < K; ++c) A(i, c) = i == c ? 1.0 : 0.0;
    for (int j = K - 1; j >= 0; --j) {
        const double beta = betas[j];
        if (beta == 0.0) continue;
        for (unsigned c = j; c < K; ++c) {
            double s = 0.0;
            for (unsigned i = j; i < m; ++i) s += V(i, j) * A(i, c);
            s *= beta;
            for (unsigned i = j; i < m; ++i) A(i, c) -= s * V(i, j);
        }
    }
#undef A
#undef V
}
