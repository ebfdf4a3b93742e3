//! [`Bsr`]: block sparse row matrix with independent row and column block sizes, and its SpMV.

use std::sync::Arc;

use rayon::prelude::*;

use crate::kernels::dispatch_rc;
use crate::kernels::spmv::{spmv_rows, spmv_rows_dyn, SpmvArgs};
use crate::{BlockPattern, LinalgError, Vector};

/// Block rows per SpMV task (fixed, so the work split never depends on the thread count).
const SPMV_ROWS_PER_TASK: usize = 256;

/// Block sparse row matrix: a shared [`BlockPattern`] and `block_rows x block_cols` blocks.
///
/// Values are block-major in pattern (slot) order; each block is row-major, so entry `(r, c)` of the
/// block in slot `k` is `values[k * block_len + r * block_cols + c]`. The scalar matrix has
/// `n_block_rows * block_rows` rows and `n_block_cols * block_cols` columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Bsr {
    pattern: Arc<BlockPattern>,
    block_rows: usize,
    block_cols: usize,
    values: Vec<f64>,
}

impl Bsr {
    /// A matrix of the given pattern with all stored blocks zero.
    ///
    /// # Panics
    /// If a block size is zero (use [`Bsr::from_parts`] for a checked constructor).
    pub fn zeros(pattern: Arc<BlockPattern>, block_rows: usize, block_cols: usize) -> Self {
        assert!(
            block_rows > 0 && block_cols > 0,
            "Bsr::zeros: block sizes must be >= 1"
        );
        let values = vec![0.0; pattern.nnz() * block_rows * block_cols];
        Self {
            pattern,
            block_rows,
            block_cols,
            values,
        }
    }

    /// Wraps values (block-major, row-major blocks); checks block sizes and the values length.
    pub fn from_parts(
        pattern: Arc<BlockPattern>,
        block_rows: usize,
        block_cols: usize,
        values: Vec<f64>,
    ) -> Result<Self, LinalgError> {
        check_block_size(block_rows, block_cols)?;
        let expected = pattern.nnz() * block_rows * block_cols;
        if values.len() != expected {
            return Err(LinalgError::LengthMismatch {
                what: "Bsr values",
                expected,
                found: values.len(),
            });
        }
        Ok(Self {
            pattern,
            block_rows,
            block_cols,
            values,
        })
    }

    /// Blocks a row-major dense `n_rows x n_cols` matrix, keeping every block with a nonzero (or NaN)
    /// entry. The block sizes must divide the dimensions.
    pub fn from_dense(
        a: &[f64],
        n_rows: usize,
        n_cols: usize,
        block_rows: usize,
        block_cols: usize,
    ) -> Result<Self, LinalgError> {
        check_block_size(block_rows, block_cols)?;
        if a.len() != n_rows * n_cols {
            return Err(LinalgError::LengthMismatch {
                what: "dense matrix",
                expected: n_rows * n_cols,
                found: a.len(),
            });
        }
        if !n_rows.is_multiple_of(block_rows) || !n_cols.is_multiple_of(block_cols) {
            return Err(LinalgError::NotDivisible {
                n_rows,
                n_cols,
                block_rows,
                block_cols,
            });
        }
        let (nbr, nbc) = (n_rows / block_rows, n_cols / block_cols);
        let mut row_ptr = Vec::with_capacity(nbr + 1);
        row_ptr.push(0);
        let (mut col_idx, mut values) = (Vec::new(), Vec::new());
        for bi in 0..nbr {
            for bj in 0..nbc {
                let entry =
                    |r: usize, c: usize| a[(bi * block_rows + r) * n_cols + bj * block_cols + c];
                let any = (0..block_rows).any(|r| (0..block_cols).any(|c| entry(r, c) != 0.0));
                if any {
                    col_idx.push(bj as u32);
                    for r in 0..block_rows {
                        values.extend((0..block_cols).map(|c| entry(r, c)));
                    }
                }
            }
            row_ptr.push(col_idx.len());
        }
        let pattern = BlockPattern::new(nbr, nbc, row_ptr, col_idx)?;
        Ok(Self {
            pattern: Arc::new(pattern),
            block_rows,
            block_cols,
            values,
        })
    }

    /// The row-major dense matrix (`n_rows * n_cols` entries; for tests and small problems).
    pub fn to_dense(&self) -> Vec<f64> {
        let (n_cols, br, bc) = (self.n_cols(), self.block_rows, self.block_cols);
        let mut d = vec![0.0; self.n_rows() * n_cols];
        for bi in 0..self.pattern.n_block_rows() {
            for k in self.pattern.row_ptr()[bi]..self.pattern.row_ptr()[bi + 1] {
                let bj = self.pattern.col_idx()[k] as usize;
                for (r, brow) in self.block(k).chunks_exact(bc).enumerate() {
                    let start = (bi * br + r) * n_cols + bj * bc;
                    d[start..start + bc].copy_from_slice(brow);
                }
            }
        }
        d
    }

    /// The shared pattern.
    pub fn pattern(&self) -> &Arc<BlockPattern> {
        &self.pattern
    }

    /// Rows per block.
    pub fn block_rows(&self) -> usize {
        self.block_rows
    }

    /// Columns per block.
    pub fn block_cols(&self) -> usize {
        self.block_cols
    }

    /// Values per block (`block_rows * block_cols`).
    pub fn block_len(&self) -> usize {
        self.block_rows * self.block_cols
    }

    /// Scalar rows.
    pub fn n_rows(&self) -> usize {
        self.pattern.n_block_rows() * self.block_rows
    }

    /// Scalar columns.
    pub fn n_cols(&self) -> usize {
        self.pattern.n_block_cols() * self.block_cols
    }

    /// All values, block-major.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// All values, mutably (the pattern stays fixed).
    pub fn values_mut(&mut self) -> &mut [f64] {
        &mut self.values
    }

    /// Every block row for an update in place (in parallel, say): its block column indices and its
    /// values (`block_len()` per block, in pattern order). Item `i` is block row `i`.
    pub fn rows_mut(&mut self) -> Vec<(&[u32], &mut [f64])> {
        let pattern = &self.pattern;
        let block_len = self.block_rows * self.block_cols;
        crate::rows::split_rows(pattern.row_ptr(), block_len, 1, &mut self.values)
            .into_iter()
            .map(|(rows, values)| (pattern.row(rows.start), values))
            .collect()
    }

    /// The block in slot `k` (row-major). Panics if `k >= nnz`.
    pub fn block(&self, k: usize) -> &[f64] {
        let bl = self.block_len();
        &self.values[k * bl..(k + 1) * bl]
    }

    /// The block in slot `k`, mutably. Panics if `k >= nnz`.
    pub fn block_mut(&mut self, k: usize) -> &mut [f64] {
        let bl = self.block_len();
        &mut self.values[k * bl..(k + 1) * bl]
    }

    /// `y = A x`.
    ///
    /// # Panics
    /// If `x.len() != n_cols()` or `y.len() != n_rows()`.
    pub fn spmv(&self, x: &Vector, y: &mut Vector) {
        self.spmv_impl(1.0, x, None, y);
    }

    /// `y = alpha A x + beta y`; with `beta == 0` the old `y` is not read.
    ///
    /// # Panics
    /// If `x.len() != n_cols()` or `y.len() != n_rows()`.
    pub fn spmv_add(&self, alpha: f64, x: &Vector, beta: f64, y: &mut Vector) {
        self.spmv_impl(alpha, x, (beta != 0.0).then_some(beta), y);
    }

    /// Parallel over fixed chunks of block rows; each row sums its blocks in slot order, so the result
    /// does not depend on the thread count.
    fn spmv_impl(&self, alpha: f64, x: &Vector, beta: Option<f64>, y: &mut Vector) {
        assert_eq!(x.len(), self.n_cols(), "Bsr::spmv: x has the wrong length");
        assert_eq!(y.len(), self.n_rows(), "Bsr::spmv: y has the wrong length");
        let (br, bc) = (self.block_rows, self.block_cols);
        let (row_ptr, col_idx) = (self.pattern.row_ptr(), self.pattern.col_idx());
        y.as_mut_slice()
            .par_chunks_mut(SPMV_ROWS_PER_TASK * br)
            .enumerate()
            .for_each(|(task, yc)| {
                let first = task * SPMV_ROWS_PER_TASK;
                let args = SpmvArgs {
                    row_ptr: &row_ptr[first..=first + yc.len() / br],
                    col_idx,
                    values: &self.values,
                    x: x.as_slice(),
                    alpha,
                    beta,
                };
                dispatch_rc!((br, bc), spmv_rows, spmv_rows_dyn, (&args, yc));
            });
    }

    /// Multiplies every value by `s`.
    pub fn scale(&mut self, s: f64) {
        self.values
            .par_chunks_mut(1 << 14)
            .for_each(|c| c.iter_mut().for_each(|v| *v *= s));
    }

    /// The diagonal blocks, one per block row, concatenated (`n_block_rows * block_len` values).
    /// Errors if blocks are not square, the pattern is not square or a diagonal block is missing.
    pub fn diagonal_blocks(&self) -> Result<Vec<f64>, LinalgError> {
        if self.block_rows != self.block_cols {
            return Err(LinalgError::NonSquareBlocks {
                block_rows: self.block_rows,
                block_cols: self.block_cols,
            });
        }
        let positions = self.pattern.diagonal_positions()?;
        let mut d = Vec::with_capacity(positions.len() * self.block_len());
        for k in positions {
            d.extend_from_slice(self.block(k));
        }
        Ok(d)
    }

    /// The same matrix with 1x1 blocks: every stored block becomes `block_len` stored scalars
    /// (explicit zeros inside blocks are kept).
    pub fn to_scalar_blocks(&self) -> Bsr {
        let (br, bc, bl) = (self.block_rows, self.block_cols, self.block_len());
        let p = &*self.pattern;
        let mut row_ptr = Vec::with_capacity(self.n_rows() + 1);
        row_ptr.push(0);
        let mut col_idx = Vec::with_capacity(self.values.len());
        let mut values = Vec::with_capacity(self.values.len());
        for bi in 0..p.n_block_rows() {
            let slots = p.row_ptr()[bi]..p.row_ptr()[bi + 1];
            for r in 0..br {
                for k in slots.clone() {
                    let bj = p.col_idx()[k] as usize;
                    col_idx.extend((0..bc).map(|c| (bj * bc + c) as u32));
                    values.extend_from_slice(&self.values[k * bl + r * bc..k * bl + (r + 1) * bc]);
                }
                row_ptr.push(col_idx.len());
            }
        }
        let pattern = BlockPattern::new_trusted(self.n_rows(), self.n_cols(), row_ptr, col_idx);
        Bsr {
            pattern: Arc::new(pattern),
            block_rows: 1,
            block_cols: 1,
            values,
        }
    }
}

pub(crate) fn check_block_size(block_rows: usize, block_cols: usize) -> Result<(), LinalgError> {
    if block_rows == 0 || block_cols == 0 {
        return Err(LinalgError::InvalidBlockSize {
            block_rows,
            block_cols,
        });
    }
    Ok(())
}
