//! Rigid-body modes of 3D elasticity, the near-null space handed to smoothed aggregation.

use linalg::exact::ExactSum;
use rayon::prelude::*;

/// Nodes per task of the parallel loops here.
const NODES_PER_TASK: usize = 4096;

/// Number of rigid-body modes in 3D: three translations and three rotations.
pub const RIGID_BODY_MODES_3D: usize = 6;

/// Rigid-body modes at the given node coordinates, node-major: entry
/// `[(3 * node + component) * 6 + mode]`.
///
/// Modes: translations `e_x, e_y, e_z`, then rotations `(-y, x, 0)`, `(0, -z, y)`, `(z, 0, -x)`, taken
/// about the centroid of the nodes so that the columns are well conditioned.
pub fn rigid_body_modes(coords: &[[f64; 3]]) -> Vec<f64> {
    let n = coords.len().max(1) as f64;
    let centroid = coordinate_sums(coords).map(|s| s.value() / n);
    rigid_body_modes_about(coords, centroid)
}

/// The exact sums of the coordinates (per direction): the centroid of [`rigid_body_modes`] is
/// their value over the node count, the same bits however the nodes are ordered or split over
/// ranks (combine the ranks' sums with `linalg::exact::ExactSum::allreduce`).
pub fn coordinate_sums(coords: &[[f64; 3]]) -> [ExactSum; 3] {
    let zero = || [ExactSum::new(), ExactSum::new(), ExactSum::new()];
    coords
        .par_chunks(NODES_PER_TASK)
        .map(|chunk| {
            let mut sums = zero();
            for x in chunk {
                for d in 0..3 {
                    sums[d].add(x[d]);
                }
            }
            sums
        })
        .reduce(zero, |mut a, b| {
            for d in 0..3 {
                a[d].merge(&b[d]);
            }
            a
        })
}

/// [`rigid_body_modes`] with the rotations about `centroid`.
pub fn rigid_body_modes_about(coords: &[[f64; 3]], centroid: [f64; 3]) -> Vec<f64> {
    let mut modes = vec![0.0; coords.len() * 3 * RIGID_BODY_MODES_3D];
    modes
        .par_chunks_mut(3 * RIGID_BODY_MODES_3D)
        .zip(coords.par_iter())
        .with_min_len(NODES_PER_TASK)
        .for_each(|(out, x)| {
            let [x, y, z] = [x[0] - centroid[0], x[1] - centroid[1], x[2] - centroid[2]];
            out.copy_from_slice(&[
                1.0, 0.0, 0.0, -y, 0.0, z, //
                0.0, 1.0, 0.0, x, -z, 0.0, //
                0.0, 0.0, 1.0, 0.0, y, -x,
            ]);
        });
    modes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rigid motion u = t + w x (X - c) is reproduced exactly by a combination of the modes.
    #[test]
    fn modes_span_infinitesimal_rigid_motions() {
        let coords = [
            [0.0, 0.0, 0.0],
            [1.0, 0.2, 0.0],
            [0.3, 1.0, 0.5],
            [0.1, 0.4, 2.0],
        ];
        let modes = rigid_body_modes(&coords);
        let c = [0.35, 0.4, 0.625];
        // rotation vector w: u = w x r, r = X - c
        let (t, w) = ([0.1, -0.2, 0.3], [0.5, -0.7, 0.9]);
        // mode 3 rotates about z, mode 4 about x, mode 5 about y
        let coef = [t[0], t[1], t[2], w[2], w[0], w[1]];
        for (node, x) in coords.iter().enumerate() {
            let r = [x[0] - c[0], x[1] - c[1], x[2] - c[2]];
            let u = [
                w[1] * r[2] - w[2] * r[1],
                w[2] * r[0] - w[0] * r[2],
                w[0] * r[1] - w[1] * r[0],
            ];
            for d in 0..3 {
                let combo: f64 = (0..6)
                    .map(|m| modes[(3 * node + d) * 6 + m] * coef[m])
                    .sum();
                assert!(
                    (combo - (t[d] + u[d])).abs() < 1e-14,
                    "node {node} comp {d}"
                );
            }
        }
    }
}
