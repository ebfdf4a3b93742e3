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

// The same factorisation with K threads ("lanes") per group, lane c owning column c: gathering
// the rows, applying each reflection to column c and accumulating column c of Q are column
// by column in `thin_qr` (no sum crosses columns), so each lane runs the host's operations of
// its column in the host's order; the norm of column j and the vector v_j are computed by every
// lane alike (the same sums, so the same bits), lane j stores v_j. Barriers separate the reads
// of column j from its update. Groups of a block: blockDim.x / K; every thread of the block
// passes every barrier (the loops around them run K times for all). The group is factored in
// rows of its own, contiguous, then Q goes to its slots in q: in shared memory where every
// group of the launch fits (`cap` > 0 rows per group: the block's groups side by side, each its
// rows then its Householder vectors, cap x K values each; dynamic shared memory), else in `w`
// and `v` (group-major: w[(offsets[g] * BS + i) * K + c]). The same operations on either.
extern "C" __global__ void grouped_qr_lanes(unsigned n_groups, const unsigned* __restrict__ offsets,
                                            const unsigned* __restrict__ members,
                                            const unsigned* __restrict__ slots,
                                            const double* __restrict__ b, double* __restrict__ q,
                                            double* __restrict__ v, double* __restrict__ w,
                                            double* __restrict__ r, unsigned cap) {
    extern __shared__ double rows_of_groups[];
    const unsigned per_block = blockDim.x / K;
    const unsigned lane = threadIdx.x % K;
    const unsigned local = threadIdx.x / K;
    const unsigned g = blockIdx.x * per_block + local;
    const bool active = local < per_block && g < n_groups;
    unsigned s0 = 0, m = 0;
    if (active) {
        s0 = offsets[g];
        m = (offsets[g + 1] - s0) * BS;
    }
    const unsigned long long v0 = (unsigned long long)s0 * BS;
    double* const a = cap > 0 ? rows_of_groups + (unsigned long long)local * 2 * cap * K : w + v0 * K;
    double* const hv = cap > 0 ? a + (unsigned long long)cap * K : v + v0 * K;
#define A(i, c) a[(unsigned long long)(i) * K + (c)]
#define V(i, c) hv[(unsigned long long)(i) * K + (c)]
    // gather column `lane` of the group's rows of b
    for (unsigned i = 0; i < m; ++i) {
        const unsigned long long src = ((unsigned long long)members[s0 + i / BS] * BS + i % BS) * K;
        A(i, lane) = b[src + lane];
    }
    __syncthreads();
    double betas[K];
    for (unsigned j = 0; j < K; ++j) {
        double norm2 = 0.0;
        for (unsigned i = j; i < m; ++i) norm2 += A(i, j) * A(i, j);
        const double norm = sqrt(norm2);
        const double x0 = active ? A(j, j) : 0.0;
        double beta = 0.0;
        if (norm != 0.0) {
            const double alpha = x0 >= 0.0 ? -norm : norm;
            double vtv = 0.0;
            for (unsigned i = j; i < m; ++i) {
                const double vi = i == j ? x0 - alpha : A(i, j);
                if (lane == j) V(i, j) = vi;
                vtv += vi * vi;
            }
            beta = vtv > 0.0 ? 2.0 / vtv : 0.0;
        }
        betas[j] = beta;
        __syncthreads(); // column j read by every lane, v_j stored
        if (norm != 0.0 && lane >= j) {
            const unsigned c = lane;
            double s = 0.0;
            for (unsigned i = j; i < m; ++i) s += V(i, j) * A(i, c);
            s *= beta;
            for (unsigned i = j; i < m; ++i) A(i, c) -= s * V(i, j);
        }
        __syncthreads(); // column j + 1 updated before it is read
    }
    if (!active) return; // no barrier below
    double* rg = r + (unsigned long long)g * K * K;
    for (unsigned i = 0; i < K; ++i) rg[i * K + lane] = lane >= i ? A(i, lane) : 0.0;
    for (unsigned i = 0; i < m; ++i) A(i, lane) = i == lane ? 1.0 : 0.0;
    for (int j = K - 1; j >= 0; --j) {
        const double beta = betas[j];
        if (beta == 0.0 || lane < (unsigned)j) continue;
        const unsigned c = lane;
        double s = 0.0;
        for (unsigned i = j; i < m; ++i) s += V(i, j) * A(i, c);
        s *= beta;
        for (unsigned i = j; i < m; ++i) A(i, c) -= s * V(i, j);
    }
    // column `lane` of Q to the group's slots
    for (unsigned i = 0; i < m; ++i)
        q[((unsigned long long)slots[s0 + i / BS] * BS + i % BS) * K + lane] = A(i, lane);
#undef A
#undef V
}

// The number of members of the largest group (atomicMax into `largest`, zeroed by the caller):
// the shared memory a factorisation needs.
extern "C" __global__ void largest_group(unsigned n_groups, const unsigned* __restrict__ offsets,
                                         unsigned* __restrict__ largest) {
    const unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= n_groups) return;
    atomicMax(largest, offsets[g + 1] - offsets[g]);
}

// ---- the plan from a row -> group assignment (GroupedQrPlan::from_assignment) ----
//
// Row i is in group assignment[i], or in none (NO_GROUP). The output pattern has one block in
// each grouped row, in its group's column: grouped_rows_count writes 1 per grouped row (the
// prefix sum of these is the pattern's row offsets), grouped_rows_fill the column of each
// grouped row's block. The groups' member lists are then the pattern's transpose
// (symbolic.cu's transpose_*: each group's rows ascending, their slots beside them).
#define NO_GROUP 0xffffffffu

extern "C" __global__ void grouped_rows_count(unsigned n_rows,
                                              const unsigned* __restrict__ assignment,
                                              unsigned* __restrict__ count) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_rows) return;
    count[i] = assignment[i] != NO_GROUP ? 1u : 0u;
}

extern "C" __global__ void grouped_rows_fill(unsigned n_rows,
                                             const unsigned* __restrict__ assignment,
                                             const unsigned* __restrict__ row_ptr,
                                             unsigned* __restrict__ col) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_rows) return;
    const unsigned g = assignment[i];
    if (g != NO_GROUP) col[row_ptr[i]] = g;
}
#undef NO_GROUP
