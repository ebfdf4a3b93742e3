//! The crate's error type.

use linalg::LinalgError;

/// Errors of the `amg` crate. Every variant names the offending level, row or sizes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AmgError {
    /// An error reported by `linalg` (pattern, block size or plan mismatch).
    #[error("linalg: {0}")]
    Linalg(#[from] LinalgError),
    /// Operand dimensions do not fit together.
    #[error("{what}: found {found}, expected {expected}")]
    DimensionMismatch {
        what: &'static str,
        expected: usize,
        found: usize,
    },
    /// An operation needs square blocks (bs x bs) and got rectangular ones.
    #[error("{what}: blocks are {block_rows}x{block_cols}, square blocks required")]
    NonSquareBlocks {
        what: &'static str,
        block_rows: usize,
        block_cols: usize,
    },
    /// A diagonal block could not be inverted (zero or relatively tiny pivot).
    #[error("level {level}: diagonal block of block row {row} is singular (pivot {pivot:e} in column {column})")]
    SingularDiagonalBlock {
        level: usize,
        row: usize,
        column: usize,
        pivot: f64,
    },
    /// The dense coarsest-level matrix is singular (neither Cholesky nor LU succeeded).
    #[error("coarsest level ({n} unknowns) is singular: pivot {pivot:e} at row {row}")]
    SingularCoarseMatrix { n: usize, row: usize, pivot: f64 },
    /// A value is NaN or infinite where a finite number is required.
    #[error("{what} is not finite")]
    NonFinite { what: &'static str },
    /// A parameter is outside its valid range.
    #[error("parameter {name} = {value}: {reason}")]
    InvalidParameter {
        name: &'static str,
        value: String,
        reason: &'static str,
    },
    /// The near-null space does not fit the operator.
    #[error("near-null space: {reason}")]
    InvalidNearNullSpace { reason: String },
    /// `update` was given an operator of other dimensions than the one the hierarchy was built for.
    #[error("update: operator has {found} block rows of size {found_bs}, hierarchy expects {expected} of size {expected_bs}")]
    OperatorChanged {
        expected: usize,
        expected_bs: usize,
        found: usize,
        found_bs: usize,
    },
    /// The fine operator given to `with_operator` has another pattern than the one of the last setup
    /// or update.
    #[error("fine operator pattern differs from the one the hierarchy was set up or updated with: call update first")]
    OperatorPatternChanged,
    /// The Lanczos estimate of the largest eigenvalue of `D^{-1} A` broke down (zero or indefinite operator).
    #[error("level {level}: eigenvalue estimate of D^-1 A failed (operator zero or not SPD)")]
    EigenEstimateFailed { level: usize },
    /// A preconditioner was applied while another thread used its own workspace: give each
    /// concurrent caller a workspace ([`crate::Hierarchy::workspace`], [`crate::VCycle::apply_in`]).
    #[error("the hierarchy's cycle workspace is in use by another thread: use Hierarchy::workspace() and VCycle::apply_in for concurrent cycles")]
    WorkspaceBusy,
    /// A hierarchy built by `setup_external` holds no fine operator and cannot be applied alone.
    #[error("the hierarchy holds no fine operator (built by setup_external): apply with_operator(&a) instead")]
    MissingFineOperator,
    /// The coarsest level is too large to factor densely.
    #[error("coarsest level has {n} unknowns, more than the dense limit {limit}: raise max_levels or lower coarse_eq_limit")]
    CoarseTooLarge { n: usize, limit: usize },
    /// The device hierarchy would not fit: the estimate of its device memory exceeds what the
    /// device has free (checked before anything is allocated for it).
    #[error("{device}: the AMG set-up needs about {need_mib} MiB of device memory (estimate), {free_mib} MiB are free: use a smaller problem, a larger GPU or device: cpu")]
    DeviceOutOfMemory {
        device: String,
        need_mib: u64,
        free_mib: u64,
    },
}

impl From<linalg::comm::CommError> for AmgError {
    /// A failed message or collective, through `linalg`'s wrapper (one variant for both crates).
    fn from(e: linalg::comm::CommError) -> Self {
        AmgError::Linalg(LinalgError::from(e))
    }
}
