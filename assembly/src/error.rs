//! The error type of the assembly crate.

/// Everything that can go wrong while building or evaluating the discrete problem.
///
/// Element errors carry the cell index and the cell's name as its mesh gives it
/// ([`mesh::HexMesh::describe_cell`]: `"Gmsh element 42 (cell 1)"` for a cell read from a file,
/// `"cell 1"` for a generated one); build them with [`AssemblyError::invalid_element`] and
/// [`AssemblyError::element_failure`]. The messages include those of the wrapped `fem` errors, which
/// are therefore not also exposed as [`std::error::Error::source`] (a printed error chain would
/// repeat them).
#[derive(Debug, thiserror::Error)]
pub enum AssemblyError {
    /// A named set used by a boundary condition or material does not exist.
    #[error(transparent)]
    Mesh(#[from] mesh::MeshError),
    /// An element kernel could not be built (unsupported order or quadrature rule).
    #[error("element kernel: {0}")]
    Kernel(fem::FemError),
    /// An element's geometry is invalid (det J <= 0 at a quadrature point) in the reference configuration.
    #[error("element geometry invalid in {name}: {error}")]
    InvalidElement {
        cell: usize,
        name: String,
        error: fem::FemError,
    },
    /// An element inverted or left the material's domain during the solve (J <= 0 at a quadrature point).
    #[error("element failure in {name}: {error}")]
    ElementFailure {
        cell: usize,
        name: String,
        error: fem::FemError,
    },
    /// A sparse-layer failure (pattern or plan mismatch).
    #[error(transparent)]
    Linalg(#[from] linalg::LinalgError),
    /// The mesh and the per-cell data disagree in size.
    #[error("{what}: expected {expected} entries, got {got}")]
    SizeMismatch {
        what: &'static str,
        expected: usize,
        got: usize,
    },
    /// A degenerate boundary condition (for instance a zero rotation axis).
    #[error("boundary condition on set '{set}': {reason}")]
    InvalidBoundaryCondition { set: String, reason: String },
    /// An operation the device path does not offer (it names what and what to use instead).
    #[error("device assembly: {what}")]
    DeviceUnsupported { what: String },
    /// Two boundary conditions prescribe one component of one node differently.
    #[error("conflicting constraints on component {component} of node {node}: {first} and {second} prescribe it differently; remove one of them or make them agree")]
    ConflictingConstraints {
        node: usize,
        component: &'static str,
        first: String,
        second: String,
    },
    /// A model problem ([`crate::ex56`]) asked for with sizes it cannot have.
    #[error("{reason}")]
    InvalidModelProblem { reason: String },
}

impl AssemblyError {
    /// Invalid reference geometry of cell `cell`; `tags` are the mesh's element tags
    /// ([`mesh::HexMesh::cell_tags`]).
    pub fn invalid_element(
        tags: Option<&mesh::ElementTags>,
        cell: usize,
        error: fem::FemError,
    ) -> Self {
        Self::InvalidElement {
            cell,
            name: mesh::cell_name(tags, cell),
            error,
        }
    }

    /// Failure of cell `cell` during a solve; `tags` as for [`Self::invalid_element`].
    pub fn element_failure(
        tags: Option<&mesh::ElementTags>,
        cell: usize,
        error: fem::FemError,
    ) -> Self {
        Self::ElementFailure {
            cell,
            name: mesh::cell_name(tags, cell),
            error,
        }
    }

    /// The cell an element error names (`None` for other errors).
    pub fn cell(&self) -> Option<usize> {
        match self {
            Self::InvalidElement { cell, .. } | Self::ElementFailure { cell, .. } => Some(*cell),
            _ => None,
        }
    }
}

/// On the ranks of a distributed problem: an element failure on any rank becomes one on every
/// rank (one scalar reduced; collective), so every rank takes the same branch (a shorter
/// line-search step, a cutback) and none waits in a reduction the failing rank skipped. The
/// failing rank keeps its own error; the others name the lowest failing rank.
pub fn agree_on_element_failure<T>(
    comm: &dyn linalg::comm::Comm,
    local: Result<T, AssemblyError>,
) -> Result<T, AssemblyError> {
    let size = comm.size() as f64;
    // the lowest failing rank wins the maximum of `size - rank`
    let mut flag = [match &local {
        Err(AssemblyError::ElementFailure { .. }) => size - comm.rank() as f64,
        _ => 0.0,
    }];
    comm.allreduce_max(&mut flag)
        .map_err(linalg::LinalgError::from)?;
    match local {
        Ok(_) if flag[0] > 0.0 => Err(AssemblyError::ElementFailure {
            cell: usize::MAX,
            name: format!("a cell of MPI rank {}", (size - flag[0]) as usize),
            error: fem::FemError::NonPositiveJ { j: f64::NAN },
        }),
        other => other,
    }
}
