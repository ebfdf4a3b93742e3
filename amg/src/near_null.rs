//! [`NearNullSpace`]: the vectors the coarse spaces must reproduce exactly (rigid-body modes in
//! elasticity, built from node coordinates by `assembly::rigid_body_modes`; constants for a
//! Laplacian).
//!
//! Layout: **node-major** (row-major `n_rows x k`): entry `(row, j)` at `values[row * k + j]`, so the
//! `bs x k` slab of node `i` is contiguous and row-major, exactly the layout of a `bs x k` block of
//! the tentative prolongator.

use crate::AmgError;
use linalg::Vector;

/// `k` vectors of length `n_rows`, stored node-major (see the module documentation). Host set-up
/// data: the tentative prolongator's QR reads it on the host.
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

    /// Vector length.
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }

    /// Number of vectors `k` (= the coarse block size).
    pub fn n_vectors(&self) -> usize {
        self.k
    }

    /// The node-major values (a host view).
    pub fn row_major(&self) -> &[f64] {
        &self.values
    }

    /// Vector `j` as a new host [`Vector`].
    pub fn column(&self, j: usize) -> Vector {
        Vector::from_vec(
            self.values
                .iter()
                .skip(j)
                .step_by(self.k)
                .copied()
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_agree_and_bad_input_is_rejected() {
        let cols = vec![vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 6.0]];
        let b = NearNullSpace::from_columns(&cols).unwrap();
        assert_eq!(b.row_major(), &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        assert_eq!(b.column(1).host().unwrap(), cols[1]);
        assert!(NearNullSpace::from_columns(&[vec![1.0], vec![1.0, 2.0]]).is_err());
        assert!(NearNullSpace::from_row_major(2, 1, vec![1.0, f64::NAN]).is_err());
        assert!(NearNullSpace::from_row_major(2, 0, vec![]).is_err());
    }
}
