//! The error type of the assembly crate.

/// Everything that can go wrong while building or evaluating the discrete problem.
#[derive(Debug, thiserror::Error)]
pub enum AssemblyError {
    /// A named set used by a boundary condition or material does not exist.
    #[error(transparent)]
    Mesh(#[from] mesh::MeshError),
    /// An element's geometry is invalid (det J <= 0 at a quadrature point) in the reference configuration.
    #[error("element {cell}: {source}")]
    InvalidElement { cell: usize, source: fem::FemError },
    /// An element inverted or left the material's domain during the solve (J <= 0 at a quadrature point).
    #[error("element {cell} inverted: {source}")]
    ElementFailure { cell: usize, source: fem::FemError },
    /// A sparse-layer failure (pattern or plan mismatch).
    #[error(transparent)]
    Linalg(#[from] linalg::LinalgError),
    /// The mesh and the per-cell data disagree in size.
    #[error("{what}: expected {expected} entries, got {got}")]
    SizeMismatch { what: &'static str, expected: usize, got: usize },
    /// A degenerate boundary condition (for instance a zero rotation axis).
    #[error("boundary condition on set '{set}': {reason}")]
    InvalidBoundaryCondition { set: String, reason: String },
}
