//! [`NearNullSpace`]: the vectors the coarse spaces must reproduce exactly (rigid-body modes in
//! elasticity, constants for a Laplacian).
//!
//! Layout: **node-major** (row-major `n_rows x k`): entry `(row, j)` at `values[row * k + j]`, so the
//! `bs x k` slab of node `i` is contiguous and row-major, exactly the layout of a `bs x k` block of
//! the tentative prolongator.

use crate::AmgError;

/// `k` vectors of length `n_rows`, stored node-major (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct NearNullSpace {
    n_rows: usize,
    k: usize,
    values: Vec<f64>,
}

impl NearNullSpace {
    /// Wraps node-major values (`values[row * k + j]`). Fails if `k == 0`, the length is not
    /// `n_rows * k`, or a value is not finite.
    pub fn from_row_major(n_rows: usize, k: usize, values: Vec<f64>) -> Result<Self, AmgError> {
        if k == 0 {
            return Err(AmgError::InvalidNearNullSpace {
                reason: "no vectors (k = 0)".into(),
            });
        }
        if values.len() != n_rows * k {
            return Err(AmgError::InvalidNearNullSpace {
                reason: format!("{} values for {n_rows} rows x {k} vectors", values.len()),
            });
        }
        if let Some(p) = values.iter().position(|v| !v.is_finite()) {
            return Err(AmgError::InvalidNearNullSpace {
                reason: format!("entry (row {}, vector {}) is not finite", p / k, p % k),
            });
        }
        Ok(Self { n_rows, k, values })
    }

    /// Builds the space from separate vectors of equal length (user-supplied modes).
    pub fn from_columns(columns: &[Vec<f64>]) -> Result<Self, AmgError> {
        let k = columns.len();
        let n_rows = columns.first().map_or(0, Vec::len);
        if let Some((j, c)) = columns.iter().enumerate().find(|(_, c)| c.len() != n_rows) {
            return Err(AmgError::InvalidNearNullSpace {
                reason: format!("vector {j} has length {}, vector 0 has {n_rows}", c.len()),
            });
        }
        let mut values = vec![0.0; n_rows * k];
        for (j, c) in columns.iter().enumerate() {
            for (i, v) in c.iter().enumerate() {
                values[i * k + j] = *v;
            }
        }
        Self::from_row_major(n_rows, k, values)
    }

    /// The `bs` translations of `n_nodes` nodes with `bs` unknowns each (constants per component).
    pub fn translations(n_nodes: usize, bs: usize) -> Result<Self, AmgError> {
        let mut values = vec![0.0; n_nodes * bs * bs];
        for node in 0..n_nodes {
            for c in 0..bs {
                values[(node * bs + c) * bs + c] = 1.0;
            }
        }
        Self::from_row_major(n_nodes * bs, bs, values)
    }

    /// The 6 rigid-body modes of 3D elasticity for nodes at `coords` (3 unknowns per node):
    /// translations `e_x, e_y, e_z` and rotations `(-y, x, 0)`, `(0, -z, y)`, `(z, 0, -x)`, with
    /// coordinates taken relative to the centroid for conditioning.
    pub fn rigid_body_3d(coords: &[[f64; 3]]) -> Result<Self, AmgError> {
        let n = coords.len();
        let mut c = [0.0; 3];
        for p in coords {
            for d in 0..3 {
                c[d] += p[d] / n.max(1) as f64;
            }
        }
        let mut values = vec![0.0; n * 18];
        for (node, p) in coords.iter().enumerate() {
            let (x, y, z) = (p[0] - c[0], p[1] - c[1], p[2] - c[2]);
            let rows = [
                [1.0, 0.0, 0.0, -y, 0.0, z],
                [0.0, 1.0, 0.0, x, -z, 0.0],
                [0.0, 0.0, 1.0, 0.0, y, -x],
            ];
            for (d, row) in rows.iter().enumerate() {
                values[(node * 3 + d) * 6..(node * 3 + d + 1) * 6].copy_from_slice(row);
            }
        }
        Self::from_row_major(n * 3, 6, values)
    }

    /// Vector length.
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }

    /// Number of vectors `k` (= the coarse block size).
    pub fn n_vectors(&self) -> usize {
        self.k
    }

    /// Node-major values.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Vector `j` as a new `Vec`.
    pub fn column(&self, j: usize) -> Vec<f64> {
        self.values
            .iter()
            .skip(j)
            .step_by(self.k)
            .copied()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_agree_and_bad_input_is_rejected() {
        let cols = vec![vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 6.0]];
        let b = NearNullSpace::from_columns(&cols).unwrap();
        assert_eq!(b.values(), &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        assert_eq!(b.column(1), cols[1]);
        assert!(NearNullSpace::from_columns(&[vec![1.0], vec![1.0, 2.0]]).is_err());
        assert!(NearNullSpace::from_row_major(2, 1, vec![1.0, f64::NAN]).is_err());
        assert!(NearNullSpace::from_row_major(2, 0, vec![]).is_err());
    }

    #[test]
    fn rigid_body_modes_are_rigid_motions() {
        // Displacement of a rotation about z by a small angle: u = theta (-y, x, 0) (about the centroid).
        let coords = [
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 2.0, 0.0],
            [0.0, 0.0, 3.0],
        ];
        let b = NearNullSpace::rigid_body_3d(&coords).unwrap();
        let rz = b.column(3);
        let c = [0.25, 0.5, 0.75];
        for (i, p) in coords.iter().enumerate() {
            assert_eq!(rz[3 * i], -(p[1] - c[1]));
            assert_eq!(rz[3 * i + 1], p[0] - c[0]);
            assert_eq!(rz[3 * i + 2], 0.0);
        }
        // Every mode has zero strain: distances between nodes are preserved to first order,
        // (u_i - u_j) . (x_i - x_j) = 0.
        for j in 0..6 {
            let u = b.column(j);
            for a in 0..4 {
                for bb in 0..4 {
                    let s: f64 = (0..3)
                        .map(|d| (u[3 * a + d] - u[3 * bb + d]) * (coords[a][d] - coords[bb][d]))
                        .sum();
                    assert!(s.abs() < 1e-14);
                }
            }
        }
    }
}
