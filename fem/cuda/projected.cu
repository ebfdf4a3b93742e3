
// ---- the projected-volume-ratio formulation (fem/src/element/projected.rs) ----
//
// Compiled after element.cu (its defines, kinematics and materials), with one more define:
//   MODES  1 (P0: mean dilatation, Q1) or 4 (P1: Q2-P1), the projection space [1, xi, eta, zeta]
// and one more table after dn: phi[4 q + i] = [1, xi, eta, zeta] at point q
// (fem::ElementKernel::projection_table). Finite strain (every model but the linear one):
// v = J - 1, F_bar = (Theta / J)^{1/3} F; linear (B-bar): v = tr h, h_bar = h + (Theta - tr h)/3 I.
//
// Each cell runs the host's passes in the host's order: (1) weights and measures v per point,
// (2) the cell's orthonormal modes psi (Cholesky of the Gram matrix) and Pi v, (3) per point the
// stress at F_bar, e_F and e_Theta, (4) Pi e_Theta and the residual, (5) per point the Hessian of
// e(F, Theta) = psi(F_bar), (6) the projection's low-rank terms U Z^T + Z U^T and the blocks.
// Every sum over points runs in point order; Rust's float `.sum()` starts from -0.0 and nalgebra's
// matrix dot adds per column four zeros first, which the helpers below repeat (signs of zeros
// included). The energy's Hessian is formed as a 9x9 per point, so the blocks contract it as
// element.cu's full-tangent path does, for every model.

#ifndef MODES
#error "MODES must be defined"
#endif

// Finite strain for every model but the linear one.
#define FINITE (MATERIAL != 0)

// e^y - 1: y + (e^y - 1 - y) by exp_defect's series for |y| < 0.5, else e^y - 1 (the host's
// material::exp_m1).
__device__ __forceinline__ double exp_m1(double y) {
    if (fabs(y) < 0.5) return y + exp_defect(y, 0.0);
    return exp_portable(y) - 1.0;
}

// nalgebra's Matrix3 dot, operation for operation: per column (storage order), four zeros added,
// then the column's three products.
__device__ __forceinline__ double dot3(const double* a, const double* b) {
    double s = 0.0;
    for (int c = 0; c < 3; ++c) {
        s += 0.0;
        s += 0.0;
        s += 0.0;
        s += 0.0;
        for (int r = 0; r < 3; ++r) s += a[3 * r + c] * b[3 * r + c];
    }
    return s;
}

// (A : M)_kL = sum_iJ M_iJ A[3i+J][3k+L] (a row-major; projected.rs::contract).
__device__ __forceinline__ void contract(const double* a, const double* m, double* out) {
    for (int k = 0; k < 3; ++k)
        for (int l = 0; l < 3; ++l) {
            const int col = 3 * k + l;
            double s = 0.0;
            for (int i = 0; i < 3; ++i)
                for (int j = 0; j < 3; ++j) s += m[3 * i + j] * a[(3 * i + j) * 9 + col];
            out[col] = s;
        }
}

// A[3i+J][3k+L] += (c X_iJ) Y_kL (projected.rs::add_dyad; element.cu's add_dyad rounds c (X Y)).
__device__ __forceinline__ void add_dyad_xy(double* a, double c, const double* x, const double* y) {
    for (int r = 0; r < 9; ++r) {
        const double xr = c * x[r];
        for (int col = 0; col < 9; ++col) a[r * 9 + col] += xr * y[col];
    }
}

// (Pi f)(xi_q) = sum_i c_i psi_i(q), summed as Rust's `.sum()` (from -0.0).
__device__ __forceinline__ double projected_value(const double* c, const double* psi_q) {
    double s = -0.0;
    for (int i = 0; i < MODES; ++i) s += c[i] * psi_q[i];
    return s;
}

// The cell's modes psi[q][i], orthonormal in (f, g) = sum_q wd_q f_q g_q, from the weights wd
// (projected.rs::CellProjection::new); false where a pivot is not positive and finite.
__device__ bool cell_modes(const double* wd, const double* __restrict__ phi, double (*psi)[MODES]) {
    double gram[MODES][MODES];
    for (int i = 0; i < MODES; ++i)
        for (int j = 0; j < MODES; ++j) gram[i][j] = 0.0;
    for (int q = 0; q < NQP; ++q) {
        const double w = wd[q];
        for (int i = 0; i < MODES; ++i)
            for (int j = 0; j <= i; ++j) gram[i][j] += w * __ldg(phi + 4 * q + i) * __ldg(phi + 4 * q + j);
    }
    // gram = L L^T, L in the lower triangle.
    for (int j = 0; j < MODES; ++j) {
        double sq = -0.0;
        for (int k = 0; k < j; ++k) sq += gram[j][k] * gram[j][k];
        double d = gram[j][j] - sq;
        if (!(d > 0.0 && isfinite(d))) return false;
        d = sqrt(d);
        gram[j][j] = d;
        for (int i = j + 1; i < MODES; ++i) {
            double s = -0.0;
            for (int k = 0; k < j; ++k) s += gram[i][k] * gram[j][k];
            gram[i][j] = (gram[i][j] - s) / d;
        }
    }
    for (int q = 0; q < NQP; ++q)
        for (int i = 0; i < MODES; ++i) {
            double s = __ldg(phi + 4 * q + i);
            for (int k = 0; k < i; ++k) s -= gram[i][k] * psi[q][k];
            psi[q][i] = s / gram[i][i];
        }
    return true;
}

// The coefficients c_i = sum_q wd_q psi_i(q) f_q of Pi f.
__device__ __forceinline__ void projected_coefficients(const double* wd, const double (*psi)[MODES], const double* f,
                                                       double* c) {
    for (int i = 0; i < MODES; ++i) c[i] = 0.0;
    for (int q = 0; q < NQP; ++q)
        for (int i = 0; i < MODES; ++i) c[i] += wd[q] * psi[q][i] * f[q];
}

// The volume measure of h: J - 1 or tr h.
__device__ __forceinline__ double volume_measure(const double* h) {
#if FINITE
    return j_minus_one(h);
#else
    return tr3(h);
#endif
}

// The kinematics of one point (projected.rs::PointKinematics): h_bar (the material's argument),
// alpha = (Theta / J)^{1/3}, hinv = F^{-T}, b = dv/dF (cofactor), J and Theta (1 linearised).
struct PointKin {
    double hbar[9], alpha, hinv[9], b[9], j, theta;
};

// From h, its measure v and the projected measure theta_m; false where J or Theta is not positive
// and finite (finite strain).
__device__ bool point_kinematics(const double* h, double v, double theta_m, PointKin* pk) {
#if FINITE
    const double j = 1.0 + v, theta = 1.0 + theta_m;
    if (!(j > 0.0 && isfinite(j))) return false;
    if (!(theta > 0.0 && isfinite(theta))) return false;
    const double am1 = exp_m1((ln_1p(theta_m) - ln_1p(v)) / 3.0);
    const double alpha = 1.0 + am1;
    double f[9];
    identity_plus(h, f);
    cofactor3(f, pk->b);
    for (int r = 0; r < 9; ++r) pk->hbar[r] = h[r] * alpha + ((r % 4 == 0) ? am1 : 0.0);
    for (int r = 0; r < 9; ++r) pk->hinv[r] = pk->b[r] / j;
    pk->alpha = alpha;
    pk->j = j;
    pk->theta = theta;
#else
    const double c = (theta_m - v) / 3.0;
    for (int r = 0; r < 9; ++r) {
        const double id = (r % 4 == 0) ? 1.0 : 0.0;
        pk->hbar[r] = h[r] + ((r % 4 == 0) ? c : 0.0);
        pk->hinv[r] = id;
        pk->b[r] = id;
    }
    pk->alpha = 1.0;
    pk->j = 1.0;
    pk->theta = 1.0;
#endif
    return true;
}

// e_F (into ef) and, returned, e_Theta from the material stress pb at F_bar
// (projected.rs::energy_gradient).
__device__ __forceinline__ double energy_gradient(const PointKin& pk, const double* pb, double* ef) {
#if FINITE
    const double s = tr3(pb) + dot3(pb, pk.hbar);
    const double s3 = s / 3.0;
    for (int r = 0; r < 9; ++r) ef[r] = pb[r] * pk.alpha - pk.hinv[r] * s3;
    return s / (3.0 * pk.theta);
#else
    const double s = tr3(pb);
    const double s3 = s / 3.0;
    for (int r = 0; r < 9; ++r) ef[r] = pb[r] - ((r % 4 == 0) ? s3 : 0.0);
    return s3;
#endif
}

// The second derivatives at a point (projected.rs::energy_hessian): a (the material tangent at
// F_bar, row-major) becomes e_FF + q d2v/dF2 in place, c = e_FTheta; returns e_ThetaTheta. pb: the
// material stress at F_bar; q: Pi(e_Theta) at the point.
__device__ double energy_hessian(const PointKin& pk, const double* pb, double* a, double q, double* c) {
#if FINITE
    const double alpha = pk.alpha;
    const double* h = pk.hinv;
    double fb[9], av[9], v[9];
    identity_plus(pk.hbar, fb);
    const double s = dot3(pb, fb);
    contract(a, fb, av);
    const double kb = dot3(av, fb);
    for (int r = 0; r < 9; ++r) v[r] = av[r] + pb[r];
    const double qj = q * pk.j;
    const double aa = alpha * alpha;
    for (int r = 0; r < 81; ++r) a[r] = a[r] * aa;
    add_cross(a, s / 3.0 - qj, h);
    add_dyad_xy(a, (kb + s) / 9.0 + qj, h, h);
    add_dyad_xy(a, -alpha / 3.0, h, v);
    add_dyad_xy(a, -alpha / 3.0, v, h);
    const double ks = (kb + s) / 3.0;
    const double t3 = 3.0 * pk.theta;
    for (int r = 0; r < 9; ++r) c[r] = (v[r] * alpha - h[r] * ks) / t3;
    return (kb - 2.0 * s) / (9.0 * pk.theta * pk.theta);
#else
    const double id[9] = {1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0};
    double ai[9];
    contract(a, id, ai);
    const double t = tr3(ai);
    add_dyad_xy(a, -1.0 / 3.0, ai, id);
    add_dyad_xy(a, -1.0 / 3.0, id, ai);
    add_dyad_xy(a, t / 9.0, id, id);
    const double t3 = t / 3.0;
    for (int r = 0; r < 9; ++r) c[r] = (ai[r] - id[r] * t3) / 3.0;
    return t / 9.0;
#endif
}

// P and the full tangent a[81] (row-major) of any model at h: the split models' tangents formed as
// the host's stress_tangent forms them (linear: mu I + lambda d_iJ d_kL + mu d_iL d_kJ; neo-Hookean:
// mu I + lambda G (x) G + (mu - lambda ln J) G_iL G_kJ).
__device__ bool material_stress_tangent(const double* h, double p0, double p1, double p2, double* p, double* a) {
#if SPLIT
    double g[9], c[3];
    if (!material_split(h, p0, p1, p2, p, g, c)) return false;
    for (int r = 0; r < 81; ++r) a[r] = 0.0;
    add_identity(a, p1);
#if MATERIAL == 0
    for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k) {
            a[(4 * i) * 9 + 4 * k] += p0;
            a[(3 * i + k) * 9 + 3 * k + i] += p1;
        }
#else
    add_dyad(a, p0, g, nullptr);
    add_cross(a, c[2], g);
#endif
    return true;
#else
    return material_full(h, p0, p1, p2, p, a);
#endif
}

// Shared memory of one cell in the blocked kernels.
struct ProjectedShared {
    double x[NODES * 3];
    double u[NODES * 3];
    double g[NQP][NODES * 3];  // grad_X N_a at each point
    double wd[NQP];
    double psi[NQP][MODES];  // the cell's orthonormal modes
    double v[NQP];           // volume measure
    double et[NQP];          // e_Theta (residual pass), then e_ThetaTheta (tangent pass)
    double m9[NQP][9];       // wd e_F (residual pass), then e_FTheta (tangent pass)
    double b[NQP][9];        // dv/dF
    double theta[MODES];     // coefficients of Pi v
    double pressure[MODES];  // coefficients of Pi e_Theta
    double z[MODES][NODES * 3];  // Z_i[a] = sum_q wd psi_i (dv/dF) g_a
    double w[MODES][NODES * 3];  // U_i = Y_i + G_ij Z_j / 2
    double gram[MODES][MODES];   // G_ij = sum_q wd e_ThetaTheta psi_i psi_j
    double d[NQP][81];           // e_FF + Pi(e_Theta) d2v/dF2 (unweighted, row-major)
    int failed;
};

// Passes (1)-(4) of EPB cells on a block: gather, weights and measures, modes, stress at F_bar,
// then each residual entry (with Z_i into s.z where keep_z). A failing cell is flagged in
// s.failed (and *fail) and writes zeros.
__device__ void projected_residual_block(ProjectedShared* sh, const u32 n_group, const u32* __restrict__ group,
                                         const u32* __restrict__ cells, const double* __restrict__ coords,
                                         const double* __restrict__ u, const double* __restrict__ weights,
                                         const double* __restrict__ dn, const double* __restrict__ phi,
                                         const double p0, const double p1, const double p2,
                                         double* __restrict__ r_out, u32* __restrict__ fail, bool keep_z) {
    const u32 first = blockIdx.x * EPB;
    for (int t = threadIdx.x; t < EPB * NODES * 3; t += blockDim.x) {
        const int e = t / (NODES * 3), l = t % (NODES * 3);
        if (first + e >= n_group) continue;
        const u32 cell = CELL_OF(first + e);
        const u32 node = __ldg(cells + (size_t)cell * NODES + l / 3);
        sh[e].x[l] = __ldg(coords + (size_t)node * 3 + l % 3);
        sh[e].u[l] = __ldg(u + (size_t)node * 3 + l % 3);
        if (l == 0) sh[e].failed = 0;
    }
    __syncthreads();
    // (1) per (cell, point): gradients, weight, measure.
    for (int t = threadIdx.x; t < EPB * NQP; t += blockDim.x) {
        const int e = t / NQP, q = t % NQP;
        if (first + e >= n_group) continue;
        ProjectedShared& s = sh[e];
        double wd = 0.0, h[9];
        if (point_gradients(s.x, dn + (size_t)q * NODES * 3, __ldg(weights + q), s.g[q], &wd)) {
            displacement_gradient(s.u, s.g[q], h);
            s.v[q] = volume_measure(h);
        } else {
            s.failed = 1;
            s.v[q] = 0.0;
        }
        s.wd[q] = wd;
    }
    __syncthreads();
    // (2) per cell: modes and Pi v.
    for (int e = threadIdx.x; e < EPB; e += blockDim.x) {
        if (first + e >= n_group) continue;
        ProjectedShared& s = sh[e];
        if (!s.failed && !cell_modes(s.wd, phi, s.psi)) s.failed = 1;
        if (!s.failed) projected_coefficients(s.wd, s.psi, s.v, s.theta);
    }
    __syncthreads();
    // (3) per (cell, point): F_bar, the stress there, e_F and e_Theta.
    for (int t = threadIdx.x; t < EPB * NQP; t += blockDim.x) {
        const int e = t / NQP, q = t % NQP;
        if (first + e >= n_group) continue;
        ProjectedShared& s = sh[e];
        if (s.failed) continue;
        double h[9], pb[9], ef[9];
        PointKin pk;
        displacement_gradient(s.u, s.g[q], h);
        const double theta_m = projected_value(s.theta, s.psi[q]);
        if (!point_kinematics(h, s.v[q], theta_m, &pk) || !material_stress(pk.hbar, p0, p1, p2, pb)) {
            s.failed = 1;
            continue;
        }
        s.et[q] = energy_gradient(pk, pb, ef);
        for (int r = 0; r < 9; ++r) s.m9[q][r] = ef[r] * s.wd[q];
        for (int r = 0; r < 9; ++r) s.b[q][r] = pk.b[r];
    }
    __syncthreads();
    // (4) per cell: Pi e_Theta; its failure reported once.
    for (int e = threadIdx.x; e < EPB; e += blockDim.x) {
        if (first + e >= n_group) continue;
        ProjectedShared& s = sh[e];
        if (s.failed) atomicMin(fail, CELL_OF(first + e));
        else projected_coefficients(s.wd, s.psi, s.et, s.pressure);
    }
    __syncthreads();
    // Residual entries (cell, a, i): sum_q wd e_F g_a, then + sum_i c_i Z_i[a].
    for (int t = threadIdx.x; t < EPB * NODES * 3; t += blockDim.x) {
        const int e = t / (NODES * 3), l = t % (NODES * 3), a = l / 3, i = l % 3;
        if (first + e >= n_group) continue;
        const u32 cell = CELL_OF(first + e);
        ProjectedShared& s = sh[e];
        if (s.failed) {
            r_out[(size_t)cell * NODES * 3 + l] = 0.0;
            continue;
        }
        double acc = 0.0;
        for (int q = 0; q < NQP; ++q)
            acc += s.m9[q][3 * i] * s.g[q][3 * a] + s.m9[q][3 * i + 1] * s.g[q][3 * a + 1] +
                   s.m9[q][3 * i + 2] * s.g[q][3 * a + 2];
        double z[MODES];
        for (int m = 0; m < MODES; ++m) {
            double zm = 0.0;
            for (int q = 0; q < NQP; ++q) {
                const double sc = s.wd[q] * s.psi[q][m];
                zm += s.b[q][3 * i] * sc * s.g[q][3 * a] + s.b[q][3 * i + 1] * sc * s.g[q][3 * a + 1] +
                      s.b[q][3 * i + 2] * sc * s.g[q][3 * a + 2];
            }
            z[m] = zm;
            if (keep_z) s.z[m][l] = zm;
        }
        for (int m = 0; m < MODES; ++m) acc += s.pressure[m] * z[m];
        r_out[(size_t)cell * NODES * 3 + l] = acc;
    }
}

// Residual and tangent blocks of EPB cells per block (projected.rs::residual_tangent).
extern "C" __global__ void projected_residual_tangent(const u32 n_group, const u32* __restrict__ group,
                                                      const u32* __restrict__ cells,
                                                      const double* __restrict__ coords,
                                                      const double* __restrict__ u,
                                                      const double* __restrict__ weights,
                                                      const double* __restrict__ dn,
                                                      const double* __restrict__ phi, const double p0,
                                                      const double p1, const double p2,
                                                      double* __restrict__ r_out, double* __restrict__ k_out,
                                                      u32* __restrict__ fail) {
    __shared__ ProjectedShared sh[EPB];
    static_assert(sizeof(ProjectedShared) * EPB <= 49152, "EPB cells exceed 48 KiB of shared memory");
    projected_residual_block(sh, n_group, group, cells, coords, u, weights, dn, phi, p0, p1, p2, r_out, fail, true);
    const u32 first = blockIdx.x * EPB;
    __syncthreads();
    // (5) per (cell, point): the Hessian of e(F, Theta), e_FTheta and e_ThetaTheta.
    for (int t = threadIdx.x; t < EPB * NQP; t += blockDim.x) {
        const int e = t / NQP, q = t % NQP;
        if (first + e >= n_group) continue;
        ProjectedShared& s = sh[e];
        if (s.failed) continue;
        double h[9], pb[9];
        PointKin pk;
        displacement_gradient(s.u, s.g[q], h);
        const double theta_m = projected_value(s.theta, s.psi[q]);
        // Cannot fail where pass (3) passed at the same point (same operations).
        if (!point_kinematics(h, s.v[q], theta_m, &pk) ||
            !material_stress_tangent(pk.hbar, p0, p1, p2, pb, s.d[q])) {
            s.failed = 1;
            atomicMin(fail, CELL_OF(first + e));
            continue;
        }
        const double pressure = projected_value(s.pressure, s.psi[q]);
        s.et[q] = energy_hessian(pk, pb, s.d[q], pressure, s.m9[q]);
    }
    __syncthreads();
    // Per cell: G_ij = sum_q wd e_ThetaTheta psi_i psi_j.
    for (int e = threadIdx.x; e < EPB; e += blockDim.x) {
        if (first + e >= n_group) continue;
        ProjectedShared& s = sh[e];
        if (s.failed) continue;
        for (int i = 0; i < MODES; ++i)
            for (int j = 0; j < MODES; ++j) s.gram[i][j] = 0.0;
        for (int q = 0; q < NQP; ++q)
            for (int i = 0; i < MODES; ++i)
                for (int j = 0; j < MODES; ++j) s.gram[i][j] += s.wd[q] * s.et[q] * s.psi[q][i] * s.psi[q][j];
    }
    __syncthreads();
    // (6) per (cell, a, i): U_m = Y_m + sum_j G_mj Z_j / 2, Y_m[a] = sum_q wd psi_m e_FTheta g_a.
    for (int t = threadIdx.x; t < EPB * NODES * 3; t += blockDim.x) {
        const int e = t / (NODES * 3), l = t % (NODES * 3), a = l / 3, i = l % 3;
        if (first + e >= n_group) continue;
        ProjectedShared& s = sh[e];
        if (s.failed) continue;
        for (int m = 0; m < MODES; ++m) {
            double y = 0.0;
            for (int q = 0; q < NQP; ++q) {
                const double sc = s.wd[q] * s.psi[q][m];
                y += s.m9[q][3 * i] * sc * s.g[q][3 * a] + s.m9[q][3 * i + 1] * sc * s.g[q][3 * a + 1] +
                     s.m9[q][3 * i + 2] * sc * s.g[q][3 * a + 2];
            }
            for (int j = 0; j < MODES; ++j) y += 0.5 * s.gram[m][j] * s.z[j][l];
            s.w[m][l] = y;
        }
    }
    __syncthreads();
    // Tangent blocks (cell, a, b): block (lo, hi) integrated as the host does for b >= a (the
    // Hessian contracted point after point, then the low-rank terms mode after mode), written
    // transposed when a > b (the host's mirror).
    for (int t = threadIdx.x; t < EPB * NODES * NODES; t += blockDim.x) {
        const int e = t / (NODES * NODES), ab = t % (NODES * NODES), a = ab / NODES, b = ab % NODES;
        if (first + e >= n_group) continue;
        const u32 cell = CELL_OF(first + e);
        const ProjectedShared& s = sh[e];
        double* out = k_out + ((size_t)cell * NODES * NODES + ab) * 9;
        if (s.failed) {
            for (int r = 0; r < 9; ++r) out[r] = 0.0;
            continue;
        }
        const int lo = a < b ? a : b, hi = a < b ? b : a;
        double k[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
        for (int q = 0; q < NQP; ++q) {
            const double* ga = s.g[q] + 3 * lo;
            const double* gb = s.g[q] + 3 * hi;
            const double wd = s.wd[q];
            const double gw[3] = {wd * ga[0], wd * ga[1], wd * ga[2]};
            const double* am = s.d[q];
            // Read column by column, as the host reads nalgebra's column-major storage.
            for (int i = 0; i < 3; ++i) {
                double gaa[9];
                for (int c = 0; c < 9; ++c)
                    gaa[c] = gw[0] * am[c * 9 + 3 * i] + gw[1] * am[c * 9 + 3 * i + 1] + gw[2] * am[c * 9 + 3 * i + 2];
                for (int kk = 0; kk < 3; ++kk)
                    k[3 * i + kk] += gaa[3 * kk] * gb[0] + gaa[3 * kk + 1] * gb[1] + gaa[3 * kk + 2] * gb[2];
            }
        }
        for (int m = 0; m < MODES; ++m)
            for (int i = 0; i < 3; ++i)
                for (int kk = 0; kk < 3; ++kk)
                    k[3 * i + kk] += s.w[m][3 * lo + i] * s.z[m][3 * hi + kk] + s.z[m][3 * lo + i] * s.w[m][3 * hi + kk];
        if (a <= b) {
            for (int r = 0; r < 9; ++r) out[r] = k[r];
        } else {
            for (int i = 0; i < 3; ++i)
                for (int kk = 0; kk < 3; ++kk) out[3 * i + kk] = k[3 * kk + i];
        }
    }
}

// Residual only (line searches; projected.rs::residual): passes (1)-(4).
extern "C" __global__ void projected_residual(const u32 n_group, const u32* __restrict__ group,
                                              const u32* __restrict__ cells, const double* __restrict__ coords,
                                              const double* __restrict__ u, const double* __restrict__ weights,
                                              const double* __restrict__ dn, const double* __restrict__ phi,
                                              const double p0, const double p1, const double p2,
                                              double* __restrict__ r_out, u32* __restrict__ fail) {
    __shared__ ProjectedShared sh[EPB];
    projected_residual_block(sh, n_group, group, cells, coords, u, weights, dn, phi, p0, p1, p2, r_out, fail, false);
}

// One cell on one thread: its nodes, weights, measures, modes and Pi v (projected.rs::CellVolume::new);
// false where the map is inverted or the projection singular.
struct CellVolume {
    double x[NODES * 3], u[NODES * 3], wd[NQP], v[NQP], psi[NQP][MODES], theta[MODES];
};

__device__ bool cell_volume(u32 cell, const u32* __restrict__ cells, const double* __restrict__ coords,
                            const double* __restrict__ u, const double* __restrict__ weights,
                            const double* __restrict__ dn, const double* __restrict__ phi, CellVolume* cv) {
    for (int l = 0; l < NODES * 3; ++l) {
        const u32 node = __ldg(cells + (size_t)cell * NODES + l / 3);
        cv->x[l] = __ldg(coords + (size_t)node * 3 + l % 3);
        cv->u[l] = __ldg(u + (size_t)node * 3 + l % 3);
    }
    double g[NODES * 3], h[9];
    for (int q = 0; q < NQP; ++q) {
        if (!point_gradients(cv->x, dn + (size_t)q * NODES * 3, __ldg(weights + q), g, cv->wd + q)) return false;
        displacement_gradient(cv->u, g, h);
        cv->v[q] = volume_measure(h);
    }
    if (!cell_modes(cv->wd, phi, cv->psi)) return false;
    projected_coefficients(cv->wd, cv->psi, cv->v, cv->theta);
    return true;
}

// h_bar at point q of a cell whose pass (1) succeeded (the point's gradients recomputed, as the
// host's second pass does); false where J, Theta is not positive.
__device__ bool modified_gradient(const CellVolume& cv, int q, const double* __restrict__ weights,
                                  const double* __restrict__ dn, double* wd, double* hbar) {
    double g[NODES * 3], h[9];
    if (!point_gradients(cv.x, dn + (size_t)q * NODES * 3, __ldg(weights + q), g, wd)) return false;
    displacement_gradient(cv.u, g, h);
    PointKin pk;
    if (!point_kinematics(h, cv.v[q], projected_value(cv.theta, cv.psi[q]), &pk)) return false;
    for (int r = 0; r < 9; ++r) hbar[r] = pk.hbar[r];
    return true;
}

// Strain energy sum_q wd psi(F_bar) of every cell (one thread per cell).
extern "C" __global__ void projected_energy(const u32 n_group, const u32* __restrict__ group,
                                           const u32* __restrict__ cells, const double* __restrict__ coords,
                                           const double* __restrict__ u, const double* __restrict__ weights,
                                           const double* __restrict__ dn, const double* __restrict__ phi,
                                           const double p0, const double p1, const double p2,
                                           double* __restrict__ energy_out, u32* __restrict__ fail) {
    const u32 slot = blockIdx.x * blockDim.x + threadIdx.x;
    if (slot >= n_group) return;
    const u32 cell = CELL_OF(slot);
    CellVolume cv;
    bool ok = cell_volume(cell, cells, coords, u, weights, dn, phi, &cv);
    double energy = 0.0;
    for (int q = 0; q < NQP && ok; ++q) {
        double wd, hbar[9], psi;
        ok = modified_gradient(cv, q, weights, dn, &wd, hbar) && material_energy(hbar, p0, p1, p2, &psi);
        if (ok) energy += wd * psi;
    }
    if (!ok) {
        atomicMin(fail, cell);
        energy = 0.0;
    }
    energy_out[cell] = energy;
}

// Output fields of every cell at F_bar (element_cell_fields' averages and widths; one thread per cell).
extern "C" __global__ void projected_cell_fields(const u32 n_group, const u32* __restrict__ group,
                                                 const u32* __restrict__ cells, const double* __restrict__ coords,
                                                 const double* __restrict__ u, const double* __restrict__ weights,
                                                 const double* __restrict__ dn, const double* __restrict__ phi,
                                                 const double p0, const double p1, const double p2, const u32 width,
                                                 double* __restrict__ out, u32* __restrict__ fail) {
    const u32 slot = blockIdx.x * blockDim.x + threadIdx.x;
    if (slot >= n_group) return;
    const u32 cell = CELL_OF(slot);
    CellVolume cv;
    bool ok = cell_volume(cell, cells, coords, u, weights, dn, phi, &cv);
    CellFieldSums sums = {};
    for (int q = 0; q < NQP && ok; ++q) {
        double wd, hbar[9];
        ok = modified_gradient(cv, q, weights, dn, &wd, hbar) && add_cell_fields(hbar, wd, p0, p1, p2, &sums);
    }
    if (!ok) atomicMin(fail, cell);
    write_cell_outputs(ok ? &sums : nullptr, width, cell, out);
}
