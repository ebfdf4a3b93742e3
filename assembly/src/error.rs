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
/// failing rank keeps its own error (its local cell); the others name the lowest failing rank.
/// A rank that knows its cells' serial numbers agrees with
/// [`agree_on_serial_element_failure`] instead: the serial run's error on every rank.
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

/// On the ranks of a distributed problem: an element failure on any rank becomes, on every
/// rank, the one a serial run reports for the same state: its lowest failing cell, by its
/// number in the whole mesh and named as the serial run names it (its element tag and serial
/// number: [`mesh::part_cell_name`]), with that cell's error. Collective: one scalar reduced
/// where no rank failed (every rank then takes the same branch, as with
/// [`agree_on_element_failure`]), the failures gathered where one did.
///
/// `cell_serial_ids` are the serial numbers of the rank's local cells (ascending, as
/// [`mesh::MeshPart::cell_serial_ids`]: the element loop's first failing cell, the lowest
/// local one, is then the rank's lowest serial one, and the lowest over the ranks is the
/// serial run's) and `tags` the local cells' element tags. An error that is not an element
/// failure stays the rank's own.
pub fn agree_on_serial_element_failure<T>(
    comm: &dyn linalg::comm::Comm,
    cell_serial_ids: &[u64],
    tags: Option<&mesh::ElementTags>,
    local: Result<T, AssemblyError>,
) -> Result<T, AssemblyError> {
    // this rank's failure in the serial numbering
    let local = local.map_err(|e| match e {
        AssemblyError::ElementFailure { cell, name, error } => match cell_serial_ids.get(cell) {
            Some(&serial) => AssemblyError::ElementFailure {
                cell: serial as usize,
                name: mesh::part_cell_name(tags, cell, serial),
                error,
            },
            None => AssemblyError::ElementFailure { cell, name, error },
        },
        other => other,
    });
    let mut failed = [match &local {
        Err(AssemblyError::ElementFailure { .. }) => 1.0,
        _ => 0.0,
    }];
    comm.allreduce_max(&mut failed)
        .map_err(linalg::LinalgError::from)?;
    if failed[0] == 0.0 {
        return local;
    }
    let mine = match &local {
        Err(AssemblyError::ElementFailure { cell, name, error }) => {
            ElementFailureRecord::new(*cell as u64, name, error).encode()
        }
        _ => Vec::new(),
    };
    let all = comm
        .allgatherv_bytes(&mine)
        .map_err(linalg::LinalgError::from)?;
    // the lowest serial cell (then the lowest rank: a ghost cell fails on its owner too)
    let first = all
        .iter()
        .enumerate()
        .filter_map(|(rank, bytes)| Some((ElementFailureRecord::decode(bytes)?, rank)))
        .min_by_key(|(record, rank)| (record.cell, *rank));
    match (local, first) {
        // a rank whose error is not an element failure keeps it
        (Err(e), _) if !matches!(e, AssemblyError::ElementFailure { .. }) => Err(e),
        (_, Some((record, _))) => Err(record.into_error()),
        // no failure could be read back (cannot happen: one rank failed); keep this rank's
        (Err(e), None) => Err(e),
        (Ok(_), None) => Err(AssemblyError::ElementFailure {
            cell: usize::MAX,
            name: "a cell of another MPI rank".into(),
            error: fem::FemError::NonPositiveJ { j: f64::NAN },
        }),
    }
}

/// An element failure as it crosses ranks: the cell's serial number, its name and its error.
/// The errors an element evaluation can give during a solve travel exactly (their numbers'
/// bits); one that cannot (a parameter or length error: a defect, not a state) travels as
/// [`fem::FemError::NonPositiveJ`] with `J = NaN` and its text in the name.
struct ElementFailureRecord {
    cell: u64,
    name: String,
    error: fem::FemError,
}

impl ElementFailureRecord {
    fn new(cell: u64, name: &str, error: &fem::FemError) -> Self {
        let (name, error) = match Self::numbers(error) {
            Some(_) => (name.to_owned(), error.clone()),
            None => (
                format!("{name} ({error})"),
                fem::FemError::NonPositiveJ { j: f64::NAN },
            ),
        };
        ElementFailureRecord { cell, name, error }
    }

    /// The error's variant and numbers (`None`: a variant with texts).
    fn numbers(error: &fem::FemError) -> Option<(u8, [u64; 3])> {
        use fem::FemError as F;
        Some(match *error {
            F::NonPositiveJ { j } => (0, [j.to_bits(), 0, 0]),
            F::NonPositiveJacobian { qp, det } => (1, [qp as u64, det.to_bits(), 0]),
            F::SingularProjection { pivot } => (2, [pivot.to_bits(), 0, 0]),
            F::UnsupportedOrder { order } => (3, [order as u64, 0, 0]),
            F::UnsupportedQuadrature { points } => (4, [points as u64, 0, 0]),
            F::ProjectionQuadrature { order, points, min } => {
                (5, [order as u64, points as u64, min as u64])
            }
            F::InvalidMaterial { .. } | F::LengthMismatch { .. } => return None,
        })
    }

    /// The error of [`Self::numbers`].
    fn error_of(variant: u8, [a, b, c]: [u64; 3]) -> Option<fem::FemError> {
        use fem::FemError as F;
        Some(match variant {
            0 => F::NonPositiveJ {
                j: f64::from_bits(a),
            },
            1 => F::NonPositiveJacobian {
                qp: a as usize,
                det: f64::from_bits(b),
            },
            2 => F::SingularProjection {
                pivot: f64::from_bits(a),
            },
            3 => F::UnsupportedOrder { order: a as usize },
            4 => F::UnsupportedQuadrature { points: a as usize },
            5 => F::ProjectionQuadrature {
                order: a as usize,
                points: b as usize,
                min: c as usize,
            },
            _ => return None,
        })
    }

    /// `cell`, the variant, its three numbers (little-endian), then the name's UTF-8.
    fn encode(&self) -> Vec<u8> {
        let (variant, numbers) = Self::numbers(&self.error).unwrap_or((u8::MAX, [0; 3]));
        let mut bytes = Vec::with_capacity(33 + self.name.len());
        bytes.extend_from_slice(&self.cell.to_le_bytes());
        bytes.push(variant);
        for n in numbers {
            bytes.extend_from_slice(&n.to_le_bytes());
        }
        bytes.extend_from_slice(self.name.as_bytes());
        bytes
    }

    /// The record of [`Self::encode`]'s bytes (`None`: none, or not a record).
    fn decode(bytes: &[u8]) -> Option<Self> {
        let word = |at: usize| -> Option<u64> {
            Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
        };
        let cell = word(0)?;
        let variant = *bytes.get(8)?;
        let numbers = [word(9)?, word(17)?, word(25)?];
        let name = String::from_utf8(bytes.get(33..)?.to_vec()).ok()?;
        Some(ElementFailureRecord {
            cell,
            name,
            error: Self::error_of(variant, numbers)?,
        })
    }

    fn into_error(self) -> AssemblyError {
        AssemblyError::ElementFailure {
            cell: self.cell as usize,
            name: self.name,
            error: self.error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every error an element gives during a solve crosses ranks unchanged (its numbers' bits,
    /// a NaN's too); one with texts keeps its text in the name.
    #[test]
    fn element_failures_cross_ranks_unchanged() {
        use fem::FemError as F;
        let errors = [
            F::NonPositiveJ { j: -0.25 },
            F::NonPositiveJ { j: f64::NAN },
            F::NonPositiveJacobian {
                qp: 7,
                det: -1e-300,
            },
            F::SingularProjection { pivot: 0.0 },
            F::UnsupportedOrder { order: 3 },
            F::UnsupportedQuadrature { points: 9 },
            F::ProjectionQuadrature {
                order: 2,
                points: 1,
                min: 2,
            },
        ];
        for error in errors {
            let record = ElementFailureRecord::new(41, "Gmsh element 108 (cell 41)", &error);
            let back = ElementFailureRecord::decode(&record.encode()).unwrap();
            assert_eq!(back.cell, 41);
            assert_eq!(back.name, "Gmsh element 108 (cell 41)");
            assert_eq!(back.error.to_string(), error.to_string());
            let text = back.into_error().to_string();
            assert_eq!(
                text,
                format!("element failure in Gmsh element 108 (cell 41): {error}")
            );
        }
        let length = F::LengthMismatch {
            what: "x",
            expected: 8,
            got: 7,
        };
        let record = ElementFailureRecord::new(3, "cell 3", &length);
        let back = ElementFailureRecord::decode(&record.encode()).unwrap();
        assert_eq!(back.name, format!("cell 3 ({length})"));
        assert!(ElementFailureRecord::decode(&[]).is_none());
        assert!(ElementFailureRecord::decode(&[0; 20]).is_none());
    }
}
