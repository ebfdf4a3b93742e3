// Rigid-body modes of the deformed configuration x = X + u on the device, the twins of
// assembly::rigid_body_modes_about and of the host's deformed coordinates (the same additions,
// subtractions and negations, no product: bit-identical; compiled without FMA contraction all
// the same). Coordinates and displacements node-major: [3 node + d].

// x_d[node] = X[3 node + d] + u[3 node + d]: the deformed coordinates per direction, for their
// exact sums (the centroid).
extern "C" __global__ void deformed_coordinates(const u32 n_nodes, const double* __restrict__ coords,
                                                const double* __restrict__ u, double* __restrict__ x,
                                                double* __restrict__ y, double* __restrict__ z) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_nodes) return;
    const size_t at = (size_t)3 * t;
    x[t] = coords[at] + u[at];
    y[t] = coords[at + 1] + u[at + 1];
    z[t] = coords[at + 2] + u[at + 2];
}

// modes[(3 node + c) 6 + m]: translations e_x, e_y, e_z, rotations (-y, x, 0), (0, -z, y),
// (z, 0, -x) about the centroid (c0, c1, c2). One thread per row (node, component).
extern "C" __global__ void rigid_body_modes(const u32 n_nodes, const double* __restrict__ coords,
                                            const double* __restrict__ u, const double c0,
                                            const double c1, const double c2,
                                            double* __restrict__ modes) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= 3 * n_nodes) return;
    const u32 node = t / 3, c = t % 3;
    const size_t at = (size_t)3 * node;
    const double x = (coords[at] + u[at]) - c0;
    const double y = (coords[at + 1] + u[at + 1]) - c1;
    const double z = (coords[at + 2] + u[at + 2]) - c2;
    double* row = modes + (size_t)t * 6;
    row[0] = c == 0 ? 1.0 : 0.0;
    row[1] = c == 1 ? 1.0 : 0.0;
    row[2] = c == 2 ? 1.0 : 0.0;
    row[3] = c == 0 ? -y : (c == 1 ? x : 0.0);
    row[4] = c == 0 ? 0.0 : (c == 1 ? -z : y);
    row[5] = c == 0 ? z : (c == 1 ? 0.0 : -x);
}
