//! The error type of the `fem` crate.

use thiserror::Error;

/// Everything that can go wrong in `fem`: bad construction arguments, mismatched buffer lengths and
/// inadmissible deformations (inverted elements, non-positive volume ratio).
#[derive(Debug, Clone, PartialEq, Error)]
pub enum FemError {
    /// Lagrange order outside the supported set {1, 2}.
    #[error("unsupported Lagrange order {order} (supported: 1, 2)")]
    UnsupportedOrder { order: usize },

    /// Gauss-Legendre rule size outside `1..=6`.
    #[error("unsupported Gauss-Legendre rule with {points} points (supported: 1..=6)")]
    UnsupportedQuadrature { points: usize },

    /// A material parameter is outside its admissible range.
    #[error("invalid material parameter {name} = {value}: {requirement}")]
    InvalidMaterial {
        name: &'static str,
        value: f64,
        requirement: &'static str,
    },

    /// A buffer handed to a kernel has the wrong length.
    #[error("{what}: expected length {expected}, got {got}")]
    LengthMismatch {
        what: &'static str,
        expected: usize,
        got: usize,
    },

    /// The volume ratio `J = det F` is not positive (or not finite), so a finite-strain energy is
    /// undefined there.
    #[error("non-positive volume ratio J = det F = {j}")]
    NonPositiveJ { j: f64 },

    /// The isoparametric map is inverted or degenerate at a quadrature point (`det dX/dxi <= 0`).
    #[error("non-positive Jacobian determinant {det} at quadrature point {qp}")]
    NonPositiveJacobian { qp: usize, det: f64 },

    /// The projected formulation's `P1` projection (Q2) needs at least two Gauss points per
    /// direction.
    #[error("the projected formulation of order-{order} cells needs at least {min} Gauss points per direction, got {points}")]
    ProjectionQuadrature {
        order: usize,
        points: usize,
        min: usize,
    },

    /// A cell's projection onto `P_k` is singular (its Gram matrix has a non-positive pivot):
    /// the cell's quadrature weights are degenerate.
    #[error("the projection of the cell's volume ratio is singular (Gram pivot {pivot})")]
    SingularProjection { pivot: f64 },
}

/// `Result` with [`FemError`].
pub type Result<T, E = FemError> = std::result::Result<T, E>;
