//! The crate's error type: one variant per way an input can be invalid or a factorization can fail.

/// Errors of the `linalg` crate. Every variant names the offending index or sizes.
///
/// `PartialEq` only (no `Eq`): [`LinalgError::ZeroPivot`] carries the failing pivot as an `f64`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LinalgError {
    /// A device exact sum of more terms than its integer bins hold.
    #[error("{what}: {found} terms, at most {max} are supported")]
    TooManyTerms {
        what: &'static str,
        found: u64,
        max: u64,
    },
    /// A block dimension does not fit the `u32` column index type.
    #[error("block dimension {what} = {value} exceeds the u32 index range")]
    DimensionTooLarge { what: &'static str, value: usize },
    /// `row_ptr` must have `n_block_rows + 1` entries.
    #[error("row_ptr has {found} entries, expected n_block_rows + 1 = {expected}")]
    RowPtrLength { expected: usize, found: usize },
    /// `row_ptr[0]` must be zero.
    #[error("row_ptr[0] = {found}, expected 0")]
    RowPtrStart { found: usize },
    /// `row_ptr` must be non-decreasing.
    #[error("row_ptr decreases at block row {row}: {start} > {end}")]
    RowPtrDecreasing {
        row: usize,
        start: usize,
        end: usize,
    },
    /// The last `row_ptr` entry must equal the number of column indices.
    #[error("row_ptr ends at {last}, but col_idx has {nnz} entries")]
    RowPtrEnd { last: usize, nnz: usize },
    /// A column index is not below `n_block_cols`.
    #[error("block row {row}: column {col} out of range (n_block_cols = {n_block_cols})")]
    ColumnOutOfRange {
        row: usize,
        col: usize,
        n_block_cols: usize,
    },
    /// Column indices of a row must be ascending.
    #[error("block row {row}: column {col} follows column {previous} (columns must ascend)")]
    ColumnsUnsorted {
        row: usize,
        previous: usize,
        col: usize,
    },
    /// A column index appears twice in a row.
    #[error("block row {row}: column {col} appears twice")]
    DuplicateColumn { row: usize, col: usize },
    /// An operation needs as many block rows as block columns.
    #[error("pattern is not square: {n_block_rows} block rows, {n_block_cols} block columns")]
    PatternNotSquare {
        n_block_rows: usize,
        n_block_cols: usize,
    },
    /// A diagonal block is not in the pattern.
    #[error("diagonal block of block row {row} is structurally missing")]
    MissingDiagonal { row: usize },
    /// Block sizes must be at least one.
    #[error("invalid block size {block_rows}x{block_cols} (each must be >= 1)")]
    InvalidBlockSize {
        block_rows: usize,
        block_cols: usize,
    },
    /// An operation needs square blocks.
    #[error("blocks are {block_rows}x{block_cols}, square blocks required")]
    NonSquareBlocks {
        block_rows: usize,
        block_cols: usize,
    },
    /// Dense dimensions are not multiples of the block sizes.
    #[error(
        "dense {n_rows}x{n_cols} matrix is not divisible into {block_rows}x{block_cols} blocks"
    )]
    NotDivisible {
        n_rows: usize,
        n_cols: usize,
        block_rows: usize,
        block_cols: usize,
    },
    /// A slice has the wrong length.
    #[error("{what}: length {found}, expected {expected}")]
    LengthMismatch {
        what: &'static str,
        expected: usize,
        found: usize,
    },
    /// Operand dimensions (in blocks or block sizes) do not fit together.
    #[error("{what}: {found}, expected {expected}")]
    DimensionMismatch {
        what: &'static str,
        expected: usize,
        found: usize,
    },
    /// A matrix does not carry the pattern a plan was built for.
    #[error("{what}: matrix pattern differs from the plan's pattern")]
    PatternMismatch { what: &'static str },
    /// A COO contribution addresses a block outside the matrix.
    #[error(
        "contribution {index}: block ({row}, {col}) outside {n_block_rows}x{n_block_cols} blocks"
    )]
    ContributionOutOfRange {
        index: usize,
        row: usize,
        col: usize,
        n_block_rows: usize,
        n_block_cols: usize,
    },
    /// More contributions than the `u32` contribution index holds.
    #[error("{found} contributions exceed the u32 index range")]
    TooManyContributions { found: usize },
    /// The direct solver met a vanishing pivot at scalar row `row` (original numbering): the
    /// matrix is singular or not factorizable without pivoting.
    #[error("zero pivot {pivot:e} at scalar row {row} (diagonal entry {diagonal:e})")]
    ZeroPivot {
        row: usize,
        pivot: f64,
        diagonal: f64,
    },
    /// A dense matrix (the coarsest AMG level, say) is singular: neither Cholesky nor LU with
    /// partial pivoting found a usable pivot at elimination step `column`.
    #[error("dense {n}x{n} matrix is singular: pivot {pivot:e} at column {column}")]
    SingularMatrix { n: usize, column: usize, pivot: f64 },
    /// A block of a block diagonal could not be inverted (zero or relatively tiny pivot).
    #[error("diagonal block {block} is singular (pivot {pivot:e} in column {column})")]
    SingularBlock {
        block: usize,
        column: usize,
        pivot: f64,
    },
    /// Operands of one call live on different devices.
    #[error("{what}: operand on {found}, expected {expected}")]
    DeviceMismatch {
        what: &'static str,
        expected: String,
        found: String,
    },
    /// Host access to values that live on a device (download them with `to_host_vec`).
    #[error("{what}: values live on {device}, not on the host")]
    NotOnHost { what: &'static str, device: String },
    /// An owned range that does not fit in the global vector.
    #[error("layout: {owned} owned entries from global index {global_offset} exceed the global length {global_len}")]
    InvalidLayout {
        owned: usize,
        global_offset: u64,
        global_len: u64,
    },
    /// Vectors of equal length whose layouts (owned range, ghosts, ranks) differ.
    #[error("{what}: vector layouts differ")]
    LayoutMismatch { what: &'static str },
    /// An index beyond the end of a sequence.
    #[error("{what}: index {index} out of range (length {len})")]
    IndexOutOfRange {
        what: &'static str,
        index: usize,
        len: usize,
    },
    /// A constraint mask names unknowns a block does not have.
    #[error("constraint mask of block {block}: bits {bits:#b} beyond block size {block_size}")]
    InvalidMask {
        block: usize,
        bits: u8,
        block_size: usize,
    },
    /// A reduction over the ranks failed.
    #[error(transparent)]
    Comm(#[from] comm::CommError),
    /// A user ordering is not a permutation of `0..n`: entry `position` holds `value`, which is out
    /// of range or repeats an earlier entry.
    #[error("ordering is not a permutation of 0..{n}: entry {position} = {value}")]
    InvalidPermutation {
        n: usize,
        position: usize,
        value: usize,
    },
    /// A plan's symbolic input breaks its invariants (`reason` says which).
    #[error("{what} plan: {reason}")]
    InvalidPlan { what: &'static str, reason: String },
    /// No usable CUDA device: the driver library, NVRTC or a GPU is missing, or the driver
    /// refused to start. Detected at run time; the host path is unaffected.
    #[error("CUDA unavailable: {reason}")]
    CudaUnavailable { reason: String },
    /// The operation has no kernel on the operands' device yet (the host has every one).
    #[error("{what} is not available on {device} (run it on the host)")]
    Unsupported { what: &'static str, device: String },
    /// The operation has no kernel for operands stored in this precision (`precision`: `single`
    /// or `double`, see [`crate::Precision`]).
    #[error("{what} does not take {precision}-precision values")]
    PrecisionUnsupported {
        what: &'static str,
        precision: &'static str,
    },
    /// A CUDA driver call failed (`op` names the call or kernel, `message` the driver's error).
    #[error("CUDA {op} failed: {message}")]
    Cuda { op: String, message: String },
    /// NVRTC rejected a kernel source; `log` is the compiler's log.
    #[error("NVRTC could not compile {kernel} ({options}):\n{log}")]
    CudaCompile {
        kernel: String,
        options: String,
        log: String,
    },
}
