//! [`BlockPattern`]: the validated CSR sparsity structure of a block matrix.

use std::sync::Arc;

use crate::backend::cuda::DevicePattern;
use crate::device::DeviceMirror;
use crate::LinalgError;

/// CSR structure of a block matrix: for every block row, the ascending, unique column indices of its
/// stored blocks.
///
/// Invariants (checked by [`BlockPattern::new`], relied upon by every kernel without re-checking):
/// `row_ptr.len() == n_block_rows + 1`, `row_ptr[0] == 0`, `row_ptr` non-decreasing,
/// `row_ptr[n_block_rows] == col_idx.len()`, each row's columns strictly ascending and
/// `< n_block_cols`, and both dimensions `<= u32::MAX` so any block index fits a `u32`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockPattern {
    n_block_rows: usize,
    n_block_cols: usize,
    row_ptr: Vec<usize>,
    col_idx: Vec<u32>,
    /// The pattern on a GPU, uploaded at first use by a device matrix.
    device: DeviceMirror<DevicePattern>,
}

impl BlockPattern {
    /// Validates and wraps a CSR structure; each violated invariant has its own error variant.
    pub fn new(
        n_block_rows: usize,
        n_block_cols: usize,
        row_ptr: Vec<usize>,
        col_idx: Vec<u32>,
    ) -> Result<Self, LinalgError> {
        check_dimension("n_block_rows", n_block_rows)?;
        check_dimension("n_block_cols", n_block_cols)?;
        if row_ptr.len() != n_block_rows + 1 {
            return Err(LinalgError::RowPtrLength {
                expected: n_block_rows + 1,
                found: row_ptr.len(),
            });
        }
        if row_ptr[0] != 0 {
            return Err(LinalgError::RowPtrStart { found: row_ptr[0] });
        }
        let decreasing = |row: usize| {
            let (start, end) = (row_ptr[row], row_ptr[row + 1]);
            (end < start).then_some(LinalgError::RowPtrDecreasing { row, start, end })
        };
        if let Some(e) = first_error(n_block_rows, col_idx.len(), decreasing) {
            return Err(e);
        }
        let last = row_ptr[n_block_rows];
        if last != col_idx.len() {
            return Err(LinalgError::RowPtrEnd {
                last,
                nnz: col_idx.len(),
            });
        }
        let row_error = |row: usize| {
            let cols = &col_idx[row_ptr[row]..row_ptr[row + 1]];
            let mut previous: Option<u32> = None;
            for &c in cols {
                if c as usize >= n_block_cols {
                    return Some(LinalgError::ColumnOutOfRange {
                        row,
                        col: c as usize,
                        n_block_cols,
                    });
                }
                if let Some(p) = previous {
                    if c == p {
                        return Some(LinalgError::DuplicateColumn {
                            row,
                            col: c as usize,
                        });
                    }
                    if c < p {
                        return Some(LinalgError::ColumnsUnsorted {
                            row,
                            previous: p as usize,
                            col: c as usize,
                        });
                    }
                }
                previous = Some(c);
            }
            None
        };
        if let Some(e) = first_error(n_block_rows, col_idx.len(), row_error) {
            return Err(e);
        }
        Ok(Self {
            n_block_rows,
            n_block_cols,
            row_ptr,
            col_idx,
            device: DeviceMirror::new(),
        })
    }

    /// Wraps a structure the crate built itself and knows to be valid (checked in debug builds).
    pub(crate) fn new_trusted(
        n_block_rows: usize,
        n_block_cols: usize,
        row_ptr: Vec<usize>,
        col_idx: Vec<u32>,
    ) -> Self {
        if cfg!(debug_assertions) {
            if let Err(e) = Self::new(n_block_rows, n_block_cols, row_ptr.clone(), col_idx.clone())
            {
                panic!("linalg internal error: invalid pattern built: {e}");
            }
        }
        Self {
            n_block_rows,
            n_block_cols,
            row_ptr,
            col_idx,
            device: DeviceMirror::new(),
        }
    }

    /// The cache of this pattern's copy on a GPU.
    pub(crate) fn device_mirror(&self) -> &DeviceMirror<DevicePattern> {
        &self.device
    }

    /// Number of block rows.
    pub fn n_block_rows(&self) -> usize {
        self.n_block_rows
    }

    /// Number of block columns.
    pub fn n_block_cols(&self) -> usize {
        self.n_block_cols
    }

    /// Number of stored blocks.
    pub fn nnz(&self) -> usize {
        self.col_idx.len()
    }

    /// Row offsets into [`Self::col_idx`] (`n_block_rows + 1` entries).
    pub fn row_ptr(&self) -> &[usize] {
        &self.row_ptr
    }

    /// Column indices of all stored blocks, row by row.
    pub fn col_idx(&self) -> &[u32] {
        &self.col_idx
    }

    /// Column indices of block row `i` (ascending). Panics if `i >= n_block_rows`.
    pub fn row(&self, i: usize) -> &[u32] {
        &self.col_idx[self.row_ptr[i]..self.row_ptr[i + 1]]
    }

    /// Position (slot) of block `(i, j)` in [`Self::col_idx`], or `None` if not stored or out of range.
    pub fn find(&self, i: usize, j: usize) -> Option<usize> {
        if i >= self.n_block_rows || j >= self.n_block_cols {
            return None;
        }
        let start = self.row_ptr[i];
        self.row(i)
            .binary_search(&(j as u32))
            .ok()
            .map(|k| start + k)
    }

    /// Slot of the diagonal block of every block row; errors if the pattern is not square or a
    /// diagonal block is missing.
    pub fn diagonal_positions(&self) -> Result<Vec<usize>, LinalgError> {
        if self.n_block_rows != self.n_block_cols {
            return Err(LinalgError::PatternNotSquare {
                n_block_rows: self.n_block_rows,
                n_block_cols: self.n_block_cols,
            });
        }
        (0..self.n_block_rows)
            .map(|i| {
                self.find(i, i)
                    .ok_or(LinalgError::MissingDiagonal { row: i })
            })
            .collect()
    }

    /// True if `a` and `b` are the same shared pattern or equal ones (a pointer comparison first,
    /// so matrices built on one plan's pattern are recognised without comparing the arrays).
    pub fn same(a: &Arc<BlockPattern>, b: &Arc<BlockPattern>) -> bool {
        Arc::ptr_eq(a, b) || **a == **b
    }

    /// Largest number of blocks in one row.
    pub fn max_row_nnz(&self) -> usize {
        self.row_ptr
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0)
    }
}

/// Patterns of at least this many blocks are checked in parallel ([`first_error`]).
const PARALLEL_CHECK_BLOCKS: usize = 1 << 16;

/// Rows per task of a parallel check.
const CHECK_ROWS_PER_TASK: usize = 4096;

/// The error of the first of `n_rows` rows that has one (`error(row)`): rows in parallel for a
/// pattern of `nnz >=` [`PARALLEL_CHECK_BLOCKS`] blocks, else in order; the same error either
/// way.
fn first_error(
    n_rows: usize,
    nnz: usize,
    error: impl Fn(usize) -> Option<LinalgError> + Sync,
) -> Option<LinalgError> {
    if nnz >= PARALLEL_CHECK_BLOCKS {
        use rayon::prelude::*;
        (0..n_rows.div_ceil(CHECK_ROWS_PER_TASK))
            .into_par_iter()
            .find_map_first(|t| {
                let end = ((t + 1) * CHECK_ROWS_PER_TASK).min(n_rows);
                (t * CHECK_ROWS_PER_TASK..end).find_map(&error)
            })
    } else {
        (0..n_rows).find_map(error)
    }
}

fn check_dimension(what: &'static str, value: usize) -> Result<(), LinalgError> {
    if value > u32::MAX as usize {
        return Err(LinalgError::DimensionTooLarge { what, value });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(
        rows: usize,
        cols: usize,
        ptr: &[usize],
        idx: &[u32],
    ) -> Result<BlockPattern, LinalgError> {
        BlockPattern::new(rows, cols, ptr.to_vec(), idx.to_vec())
    }

    #[test]
    fn valid_pattern_accessors() {
        let p = pattern(3, 4, &[0, 2, 2, 5], &[0, 3, 1, 2, 3]).unwrap();
        assert_eq!((p.n_block_rows(), p.n_block_cols(), p.nnz()), (3, 4, 5));
        assert_eq!(p.row(0), &[0, 3]);
        assert!(p.row(1).is_empty());
        assert_eq!(p.find(2, 2), Some(3));
        assert_eq!(p.find(0, 1), None);
        assert_eq!(p.find(5, 0), None);
        assert_eq!(p.find(0, 9), None);
        assert_eq!(p.max_row_nnz(), 3);
    }

    #[test]
    fn each_violation_has_its_own_error() {
        assert_eq!(
            pattern(2, 2, &[0, 1], &[0]),
            Err(LinalgError::RowPtrLength {
                expected: 3,
                found: 2
            })
        );
        assert_eq!(
            pattern(1, 2, &[1, 1], &[0]),
            Err(LinalgError::RowPtrStart { found: 1 })
        );
        assert_eq!(
            pattern(2, 2, &[0, 2, 1], &[0, 1]),
            Err(LinalgError::RowPtrDecreasing {
                row: 1,
                start: 2,
                end: 1
            })
        );
        assert_eq!(
            pattern(1, 2, &[0, 1], &[0, 1]),
            Err(LinalgError::RowPtrEnd { last: 1, nnz: 2 })
        );
        assert_eq!(
            pattern(2, 2, &[0, 1, 2], &[0, 2]),
            Err(LinalgError::ColumnOutOfRange {
                row: 1,
                col: 2,
                n_block_cols: 2
            })
        );
        assert_eq!(
            pattern(1, 3, &[0, 2], &[2, 1]),
            Err(LinalgError::ColumnsUnsorted {
                row: 0,
                previous: 2,
                col: 1
            })
        );
        assert_eq!(
            pattern(1, 3, &[0, 2], &[1, 1]),
            Err(LinalgError::DuplicateColumn { row: 0, col: 1 })
        );
        assert_eq!(
            pattern(1, u32::MAX as usize + 1, &[0, 0], &[]),
            Err(LinalgError::DimensionTooLarge {
                what: "n_block_cols",
                value: u32::MAX as usize + 1
            })
        );
    }

    /// A pattern of `rows` rows of two blocks each (`row, row + 1` mod `rows`, ascending): large
    /// enough to be checked in parallel.
    fn large(rows: usize) -> (Vec<usize>, Vec<u32>) {
        let ptr = (0..=rows).map(|i| 2 * i).collect();
        let idx = (0..rows)
            .flat_map(|i| {
                let (a, b) = (i as u32, ((i + 1) % rows) as u32);
                [a.min(b), a.max(b)]
            })
            .collect();
        (ptr, idx)
    }

    #[test]
    fn a_large_pattern_checked_in_parallel_names_its_first_bad_row() {
        let rows = 3 * PARALLEL_CHECK_BLOCKS / 2;
        let (ptr, idx) = large(rows);
        assert!(idx.len() >= PARALLEL_CHECK_BLOCKS);
        assert!(pattern(rows, rows, &ptr, &idx).is_ok());
        // bad columns in two rows of different tasks: the first one is named
        let mut bad = idx.clone();
        bad[2 * 50_000 + 1] = bad[2 * 50_000];
        bad[2 * 20_000 + 1] = rows as u32;
        assert_eq!(
            pattern(rows, rows, &ptr, &bad),
            Err(LinalgError::ColumnOutOfRange {
                row: 20_000,
                col: rows,
                n_block_cols: rows
            })
        );
        let mut bad = idx.clone();
        bad.swap(2 * 90_000, 2 * 90_000 + 1);
        bad[2 * 70_000 + 1] = bad[2 * 70_000];
        assert_eq!(
            pattern(rows, rows, &ptr, &bad),
            Err(LinalgError::DuplicateColumn {
                row: 70_000,
                col: 70_000
            })
        );
        // a decreasing row_ptr: the first decrease is named
        let mut ptr_bad = ptr.clone();
        ptr_bad[60_001] = ptr[60_000] - 1;
        ptr_bad[30_001] = ptr[30_000] - 1;
        assert_eq!(
            pattern(rows, rows, &ptr_bad, &idx),
            Err(LinalgError::RowPtrDecreasing {
                row: 30_000,
                start: ptr[30_000],
                end: ptr[30_000] - 1
            })
        );
    }

    #[test]
    fn diagonal_positions_errors() {
        let p = pattern(2, 2, &[0, 2, 3], &[0, 1, 1]).unwrap();
        assert_eq!(p.diagonal_positions(), Ok(vec![0, 2]));
        let missing = pattern(2, 2, &[0, 1, 2], &[1, 0]).unwrap();
        assert_eq!(
            missing.diagonal_positions(),
            Err(LinalgError::MissingDiagonal { row: 0 })
        );
        let rect = pattern(1, 2, &[0, 1], &[0]).unwrap();
        assert_eq!(
            rect.diagonal_positions(),
            Err(LinalgError::PatternNotSquare {
                n_block_rows: 1,
                n_block_cols: 2
            })
        );
    }
}
