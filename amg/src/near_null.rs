//! [`NearNullSpace`]: the vectors the coarse spaces must reproduce exactly (rigid-body modes in
//! elasticity, built from node coordinates by `assembly::rigid_body_modes`; constants for a
//! Laplacian).
//!
//! Where: the host, or the GPU of the operator (`NearNullSpace::from_vector`).
//!
//! Layout: **node-major** (row-major `n_rows x k`): entry `(row, j)` at `values[row * k + j]`, so the
//! `bs x k` slab of node `i` is contiguous and row-major, exactly the layout of a `bs x k` block of
//! the tentative prolongator.

use crate::AmgError;
use linalg::{ops, Device, Vector};
use rayon::prelude::*;

/// `k` vectors of length `n_rows`, stored node-major (see the module documentation) where they
/// were made: on the host (`from_*` constructors), or on a GPU ([`NearNullSpace::from_vector`]:
/// the rigid-body modes computed there), where the tentative prolongator's QR reads them without
/// a transfer. A hierarchy's coarse near-null spaces live on its device.
#[derive(Debug, Clone, PartialEq)]
pub struct NearNullSpace {
    n_rows: usize,
    k: usize,
    /// Boxed: a near-null space is held beside small values (a solver's state) and moved often.
    values: Box<Vector>,
}

impl NearNullSpace {
    /// Wraps node-major values (`values[row * k + j]`). Fails if `k == 0`, the length is not
    /// `n_rows * k`, or a value is not finite.
    pub fn from_row_major(n_rows: usize, k: usize, values: Vec<f64>) -> Result<Self, AmgError> {
        check_shape(n_rows, k, values.len())?;
        if let Some(p) = values.par_iter().position_first(|v| !v.is_finite()) {
            return Err(AmgError::InvalidNearNullSpace {
                reason: format!("entry (row {}, vector {}) is not finite", p / k, p % k),
            });
        }
        Ok(Self {
            n_rows,
            k,
            values: Box::new(Vector::from_vec(values)),
        })
    }

    /// Wraps node-major values where they live (a device vector stays there). Fails as
    /// [`Self::from_row_major`] does; on a GPU the finiteness check is one exact sum of squares
    /// (a scalar comes down), which names no entry.
    pub fn from_vector(n_rows: usize, k: usize, values: Vector) -> Result<Self, AmgError> {
        if let Ok(host) = values.host() {
            return Self::from_row_major(n_rows, k, host.to_vec());
        }
        check_shape(n_rows, k, values.len())?;
        // any non-finite entry makes the exact sum of squares non-finite (as does a value
        // beyond 1e154, which no near-null space of a mesh has)
        if !ops::dot(&values, &values)?.is_finite() {
            return Err(AmgError::InvalidNearNullSpace {
                reason: "an entry is not finite (or beyond 1e154)".into(),
            });
        }
        Ok(Self {
            n_rows,
            k,
            values: Box::new(values),
        })
    }

    /// The coarse space of a tentative prolongator: `R` of a QR of finite values (finite
    /// itself), where the QR ran; no check, so no wait on a GPU.
    pub(crate) fn from_factors(n_rows: usize, k: usize, values: Vector) -> Result<Self, AmgError> {
        check_shape(n_rows, k, values.len())?;
        Ok(Self {
            n_rows,
            k,
            values: Box::new(values),
        })
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

    /// Where the values live.
    pub fn device(&self) -> Device {
        self.values.device()
    }

    /// The node-major values where they live.
    pub fn values(&self) -> &Vector {
        &self.values
    }

    /// The node-major values as a host view; an error for values on a GPU
    /// ([`Self::to_device`] brings them to the host).
    pub fn row_major(&self) -> Result<&[f64], AmgError> {
        Ok(self.values.host()?)
    }

    /// A copy on `device` (an upload, a download, or a copy on the same device).
    pub fn to_device(&self, device: &Device) -> Result<Self, AmgError> {
        Ok(Self {
            n_rows: self.n_rows,
            k: self.k,
            values: Box::new(self.values.to_device(device)?),
        })
    }

    /// Vector `j` as a new host [`Vector`] (downloaded from a GPU).
    pub fn column(&self, j: usize) -> Result<Vector, AmgError> {
        let values = self.values.to_host_vec()?;
        Ok(Vector::from_vec(
            values.iter().skip(j).step_by(self.k).copied().collect(),
        ))
    }
}

/// `len` values for `n_rows` rows of `k` vectors, `k > 0`.
fn check_shape(n_rows: usize, k: usize, len: usize) -> Result<(), AmgError> {
    if k == 0 {
        return Err(AmgError::InvalidNearNullSpace {
            reason: "no vectors (k = 0)".into(),
        });
    }
    if len != n_rows * k {
        return Err(AmgError::InvalidNearNullSpace {
            reason: format!("{len} values for {n_rows} rows x {k} vectors"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_agree_and_bad_input_is_rejected() {
        let cols = vec![vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 6.0]];
        let b = NearNullSpace::from_columns(&cols).unwrap();
        assert_eq!(b.row_major().unwrap(), &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        assert_eq!(b.column(1).unwrap().host().unwrap(), cols[1]);
        let wrapped = NearNullSpace::from_vector(3, 2, b.values().clone()).unwrap();
        assert_eq!(wrapped, b);
        assert!(NearNullSpace::from_vector(2, 1, Vector::from_vec(vec![1.0, f64::NAN])).is_err());
        assert!(NearNullSpace::from_columns(&[vec![1.0], vec![1.0, 2.0]]).is_err());
        assert!(NearNullSpace::from_row_major(2, 1, vec![1.0, f64::NAN]).is_err());
        assert!(NearNullSpace::from_row_major(2, 0, vec![]).is_err());
    }
}
