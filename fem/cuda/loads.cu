
// ---- dead loads (fem/cuda/loads.cu, compiled after element.cu with its defines) ----
// The device twins of fem::ElementKernel's body-force term at zero displacement and of
// fem::FaceKernel::nodal_forces, operation for operation (--fmad=false), so the bits are the
// host's. Loads that are fields come as values per quadrature point (evaluated by the host at the
// points fem::ElementKernel::quadrature_points / fem::FaceKernel::quadrature_points give).

// Body-force contributions of every cell in the assembler's residual layout
// r[(c NODES + a) 3 + i] = - sum_q (w det)_q N_a(xi_q) f_q,i (the element residual at u = 0, where
// every material's stress vanishes exactly), f_q = force[(c NQP + q) 3 + i]. values: N_a(xi_q) as
// values[q NODES + a]. One thread per cell.
extern "C" __global__ void body_force_contributions(const u32 n_cells, const u32* __restrict__ cells,
                                                    const double* __restrict__ coords,
                                                    const double* __restrict__ weights,
                                                    const double* __restrict__ dn,
                                                    const double* __restrict__ values,
                                                    const double* __restrict__ force,
                                                    double* __restrict__ r_out, u32* __restrict__ fail) {
    const u32 cell = blockIdx.x * blockDim.x + threadIdx.x;
    if (cell >= n_cells) return;
    double x[NODES * 3], g[NODES * 3], r[NODES * 3];
    for (int l = 0; l < NODES * 3; ++l) {
        x[l] = __ldg(coords + (size_t)__ldg(cells + (size_t)cell * NODES + l / 3) * 3 + l % 3);
        r[l] = 0.0;
    }
    for (int q = 0; q < NQP; ++q) {
        double wd;
        if (!point_gradients(x, dn + (size_t)q * NODES * 3, __ldg(weights + q), g, &wd)) {
            atomicMin(fail, cell);
            wd = 0.0;
        }
        const double* f = force + ((size_t)cell * NQP + q) * 3;
        for (int a = 0; a < NODES; ++a) {
            const double na = __ldg(values + q * NODES + a);
            for (int i = 0; i < 3; ++i) r[3 * a + i] -= wd * na * __ldg(f + i);
        }
    }
    for (int l = 0; l < NODES * 3; ++l) r_out[(size_t)cell * NODES * 3 + l] = r[l];
}

// Traction forces of every face: out[(face nf + a) 3 + d] = sum_q (w dA)_q N_a(eta_q) t_q,d with
// dA = |dX/deta_1 x dX/deta_2| and t_q = traction[(face nq + q) 3 + d]. face_nodes: the mesh nodes
// of each face in the face basis order (nf per face); values[q nf + a] = N_a, grads[(q nf + a) 2 +
// e] = dN_a/deta_e. One thread per face; nf <= 9.
extern "C" __global__ void traction_contributions(const u32 n_faces, const u32 nf, const u32 nq,
                                                  const u32* __restrict__ face_nodes,
                                                  const double* __restrict__ coords,
                                                  const double* __restrict__ weights,
                                                  const double* __restrict__ values,
                                                  const double* __restrict__ grads,
                                                  const double* __restrict__ traction,
                                                  double* __restrict__ out) {
    const u32 face = blockIdx.x * blockDim.x + threadIdx.x;
    if (face >= n_faces) return;
    double x[9][3], fa[9][3];
    for (u32 a = 0; a < nf; ++a) {
        const size_t node = __ldg(face_nodes + (size_t)face * nf + a);
        for (int d = 0; d < 3; ++d) {
            x[a][d] = __ldg(coords + node * 3 + d);
            fa[a][d] = 0.0;
        }
    }
    for (u32 q = 0; q < nq; ++q) {
        double t1[3] = {0.0, 0.0, 0.0}, t2[3] = {0.0, 0.0, 0.0};
        for (u32 a = 0; a < nf; ++a)
            for (int d = 0; d < 3; ++d) {
                t1[d] += __ldg(grads + ((size_t)q * nf + a) * 2) * x[a][d];
                t2[d] += __ldg(grads + ((size_t)q * nf + a) * 2 + 1) * x[a][d];
            }
        const double c0 = t1[1] * t2[2] - t1[2] * t2[1];
        const double c1 = t1[2] * t2[0] - t1[0] * t2[2];
        const double c2 = t1[0] * t2[1] - t1[1] * t2[0];
        const double wda = __ldg(weights + q) * sqrt(c0 * c0 + c1 * c1 + c2 * c2);
        const double* t = traction + ((size_t)face * nq + q) * 3;
        for (u32 a = 0; a < nf; ++a) {
            const double na = __ldg(values + (size_t)q * nf + a);
            for (int d = 0; d < 3; ++d) fa[a][d] += wda * na * __ldg(t + d);
        }
    }
    for (u32 a = 0; a < nf; ++a)
        for (int d = 0; d < 3; ++d) out[((size_t)face * nf + a) * 3 + d] = fa[a][d];
}

// f[3 node_k + d] += sum over j in [row_ptr[k], row_ptr[k+1]) of contributions[3 entries[j] + d],
// added one by one in plan order (the host's face order), from the value f already holds.
extern "C" __global__ void gather_add(const u32 n_rows, const u32* __restrict__ nodes,
                                      const u32* __restrict__ row_ptr, const u32* __restrict__ entries,
                                      const double* __restrict__ contributions, double* __restrict__ f) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= 3 * n_rows) return;
    const u32 k = t / 3, d = t % 3;
    const size_t at = (size_t)__ldg(nodes + k) * 3 + d;
    double acc = f[at];
    for (u32 j = __ldg(row_ptr + k); j < __ldg(row_ptr + k + 1); ++j)
        acc += __ldg(contributions + (size_t)__ldg(entries + j) * 3 + d);
    f[at] = acc;
}

// Follower pressure on every face at the current positions x = X + u (fem::FaceKernel::
// pressure_residual_tangent, operation for operation): per face node a,
// r[(face nf + a) 3 + d] = sum_q s p w_q N_a (x,1 x x,2)_d and, with `with_tangent`, the blocks
// k[((face nf + a) nf + b) 9 + e] = sum_q s p w_q N_a (N_b,2 [x,1]x - N_b,1 [x,2]x)_e, s the face's
// orientation. One thread per (face, a); nf <= 9.
extern "C" __global__ void pressure_contributions(const u32 n_faces, const u32 nf, const u32 nq,
                                                  const u32* __restrict__ face_nodes,
                                                  const double* __restrict__ orientation,
                                                  const double* __restrict__ coords,
                                                  const double* __restrict__ u,
                                                  const double* __restrict__ weights,
                                                  const double* __restrict__ values,
                                                  const double* __restrict__ grads, const double p,
                                                  const u32 with_tangent, double* __restrict__ r_out,
                                                  double* __restrict__ k_out) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_faces * nf) return;
    const u32 face = t / nf, a = t % nf;
    double x[9][3], r[3] = {0.0, 0.0, 0.0}, k[9][9];
    for (u32 b = 0; b < nf; ++b) {
        const size_t node = __ldg(face_nodes + (size_t)face * nf + b);
        for (int d = 0; d < 3; ++d) x[b][d] = __ldg(coords + node * 3 + d) + __ldg(u + node * 3 + d);
        for (int e = 0; e < 9; ++e) k[b][e] = 0.0;
    }
    const double orient = __ldg(orientation + face);
    for (u32 q = 0; q < nq; ++q) {
        double t1[3] = {0.0, 0.0, 0.0}, t2[3] = {0.0, 0.0, 0.0};
        for (u32 b = 0; b < nf; ++b)
            for (int d = 0; d < 3; ++d) {
                t1[d] += __ldg(grads + ((size_t)q * nf + b) * 2) * x[b][d];
                t2[d] += __ldg(grads + ((size_t)q * nf + b) * 2 + 1) * x[b][d];
            }
        const double c[3] = {t1[1] * t2[2] - t1[2] * t2[1], t1[2] * t2[0] - t1[0] * t2[2],
                             t1[0] * t2[1] - t1[1] * t2[0]};
        const double scale = orient * p * __ldg(weights + q);
        const double na = __ldg(values + (size_t)q * nf + a);
        for (int d = 0; d < 3; ++d) r[d] += scale * na * c[d];
        if (with_tangent) {
            const double s1[9] = {0.0, -t1[2], t1[1], t1[2], 0.0, -t1[0], -t1[1], t1[0], 0.0};
            const double s2[9] = {0.0, -t2[2], t2[1], t2[2], 0.0, -t2[0], -t2[1], t2[0], 0.0};
            const double f = scale * na;
            for (u32 b = 0; b < nf; ++b) {
                const double d0 = __ldg(grads + ((size_t)q * nf + b) * 2);
                const double d1 = __ldg(grads + ((size_t)q * nf + b) * 2 + 1);
                for (int e = 0; e < 9; ++e) k[b][e] += f * (d1 * s1[e] - d0 * s2[e]);
            }
        }
    }
    for (int d = 0; d < 3; ++d) r_out[(size_t)t * 3 + d] = r[d];
    if (with_tangent)
        for (u32 b = 0; b < nf; ++b)
            for (int e = 0; e < 9; ++e) k_out[((size_t)t * nf + b) * 9 + e] = k[b][e];
}

// values[9 slot_k + e] += sum over j in [row_ptr[k], row_ptr[k+1]) of contributions[9 entries[j] + e],
// one by one in plan order (the host's face order), onto the block the tangent already holds.
extern "C" __global__ void gather_add_blocks(const u32 n_rows, const u32* __restrict__ slots,
                                             const u32* __restrict__ row_ptr, const u32* __restrict__ entries,
                                             const double* __restrict__ contributions,
                                             double* __restrict__ values) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= 9 * n_rows) return;
    const u32 k = t / 9, e = t % 9;
    const size_t at = (size_t)__ldg(slots + k) * 9 + e;
    double acc = values[at];
    for (u32 j = __ldg(row_ptr + k); j < __ldg(row_ptr + k + 1); ++j)
        acc += __ldg(contributions + (size_t)__ldg(entries + j) * 9 + e);
    values[at] = acc;
}
