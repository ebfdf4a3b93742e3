//! Errors of the direct solver.

use crate::LinalgError;

/// Failures of [`super::DirectSymbolic`] and [`super::DirectSolver`].
///
/// Transitional: `ZeroPivot` and `InvalidPermutation` are meant to become `LinalgError`
/// variants (requested in crates/linalg/REQUESTS), after which this enum can go.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DirectError {
    #[error(transparent)]
    Linalg(#[from] LinalgError),
    /// The pivot of scalar row `row` (original numbering) vanished: the matrix is singular or
    /// not factorizable without pivoting.
    #[error("zero pivot {pivot:e} at scalar row {row} (diagonal entry {diagonal:e})")]
    ZeroPivot {
        row: usize,
        pivot: f64,
        diagonal: f64,
    },
    /// A user ordering is not a permutation of the block rows.
    #[error("ordering is not a permutation of 0..{n}: entry {position} = {value}")]
    InvalidPermutation {
        n: usize,
        position: usize,
        value: usize,
    },
}
