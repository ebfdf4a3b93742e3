//! Numeric phase: envelope `L D L^T` factorization and triangular solves.

use std::sync::Arc;

use rayon::prelude::*;

use super::DirectSymbolic;
use crate::{Bsr, LinalgError, Vector};

/// A pivot is zero when cancellation leaves less than this fraction of its diagonal entry.
const PIVOT_TOLERANCE: f64 = 1e-13;
/// Rows factored together (see [`DirectSolver::eliminate`]).
const PANEL: usize = 96;
/// Panel rows updated by one task.
const GROUP: usize = 12;

/// `P A P^T = L D L^T` with unit lower triangular `L` stored by rows over its envelope.
///
/// Row `r` (permuted scalar numbering) stores `L[r][first(r)..r]` at
/// `lower[row_ptr[r]..row_ptr[r + 1]]`, where `first(r)` is the envelope start from the
/// symbolic plan; `diag[r] = D[r]`.
#[derive(Debug, Clone)]
pub struct DirectSolver {
    symbolic: Arc<DirectSymbolic>,
    bs: usize,
    row_ptr: Vec<usize>,
    lower: Vec<f64>,
    diag: Vec<f64>,
}

impl DirectSolver {
    /// Factors `a`, a symmetric host matrix with square blocks on `symbolic`'s pattern. Only the
    /// lower triangle in the permuted order is read (a stored upper block stands in for a
    /// missing mirror).
    ///
    /// Errors: non-square blocks, a different pattern, a zero pivot (naming its original row).
    pub fn factor(symbolic: &Arc<DirectSymbolic>, a: &Bsr) -> Result<Self, LinalgError> {
        if a.block_rows() != a.block_cols() {
            return Err(LinalgError::NonSquareBlocks {
                block_rows: a.block_rows(),
                block_cols: a.block_cols(),
            });
        }
        if **a.pattern() != *symbolic.pattern() {
            return Err(LinalgError::PatternMismatch {
                what: "DirectSolver::factor",
            });
        }
        let bs = a.block_rows();
        let n = symbolic.n_blocks() * bs;
        let mut row_ptr = Vec::with_capacity(n + 1);
        row_ptr.push(0);
        for r in 0..n {
            row_ptr.push(row_ptr[r] + r - symbolic.scalar_first(r, bs));
        }
        let mut solver = DirectSolver {
            symbolic: Arc::clone(symbolic),
            bs,
            lower: vec![0.0; row_ptr[n]],
            diag: vec![0.0; n],
            row_ptr,
        };
        solver.scatter(a.host()?);
        solver.eliminate()?;
        Ok(solver)
    }

    /// Copies the lower triangle of the permuted matrix (its block values `a`) into the envelope
    /// and the diagonal.
    fn scatter(&mut self, a: &[f64]) {
        let bs = self.bs;
        for p in 0..self.symbolic.n_blocks() {
            for blk in self.symbolic.lower_blocks(p) {
                let values = &a[blk.slot * bs * bs..(blk.slot + 1) * bs * bs];
                for i in 0..bs {
                    let r = p * bs + i;
                    let first = self.symbolic.scalar_first(r, bs);
                    for j in 0..bs {
                        let c = blk.col * bs + j;
                        if c > r {
                            break;
                        }
                        let v = if blk.transposed {
                            values[j * bs + i]
                        } else {
                            values[i * bs + j]
                        };
                        if c == r {
                            self.diag[r] = v;
                        } else {
                            self.lower[self.row_ptr[r] + c - first] = v;
                        }
                    }
                }
            }
        }
    }

    /// Row-by-row (bordering) `L D L^T`: for row `r`, first `t[c] = L[r][c] D[c]` by
    /// `t[c] = A[r][c] - sum_k t[k] L[c][k]` for ascending `c`, then `L[r][c] = t[c] / D[c]` and
    /// `D[r] = A[r][r] - sum_c t[c] L[r][c]`.
    ///
    /// Rows are processed in panels of [`PANEL`] rows: the updates from finished rows `c` before
    /// the panel run in parallel over groups of [`GROUP`] panel rows (each finished row is read
    /// once per group instead of once per row), then the panel finishes row by row. Every entry
    /// sees the same operations in the same order as in the plain row loop, so the result does
    /// not depend on the thread count.
    fn eliminate(&mut self) -> Result<(), LinalgError> {
        let n = self.diag.len();
        let first: Vec<usize> = (0..n)
            .map(|r| self.symbolic.scalar_first(r, self.bs))
            .collect();
        for r0 in (0..n).step_by(PANEL) {
            let r1 = (r0 + PANEL).min(n);
            let (done, rest) = self.lower.split_at_mut(self.row_ptr[r0]);
            let panel = &mut rest[..self.row_ptr[r1] - self.row_ptr[r0]];
            let done: &[f64] = done;
            let mut rows: Vec<(usize, &mut [f64])> = Vec::with_capacity(r1 - r0);
            let mut tail = panel;
            for (r, &fr) in first.iter().enumerate().take(r1).skip(r0) {
                let (row, next) = tail.split_at_mut(r - fr);
                rows.push((r, row));
                tail = next;
            }
            let row_ptr = &self.row_ptr;
            let first = &first;
            rows.par_chunks_mut(GROUP).for_each(|group| {
                let c_min = group.iter().map(|(r, _)| first[*r]).min().unwrap_or(r0);
                for c in c_min..r0 {
                    let fc = first[c];
                    let row_c = &done[row_ptr[c]..row_ptr[c + 1]];
                    for (r, row) in group.iter_mut() {
                        let fr = first[*r];
                        if fr <= c {
                            let k0 = fr.max(fc);
                            let s = dot(&row[k0 - fr..c - fr], &row_c[k0 - fc..]);
                            row[c - fr] -= s;
                        }
                    }
                }
            });
            // Within the panel, row r needs the finished rows r0..r.
            for i in 0..rows.len() {
                let (finished, current) = rows.split_at_mut(i);
                let (r, row) = &mut current[0];
                let (r, fr) = (*r, first[*r]);
                for (c, row_c) in finished.iter().map(|(c, row_c)| (*c, &**row_c)) {
                    if fr <= c {
                        let fc = first[c];
                        let k0 = fr.max(fc);
                        let s = dot(&row[k0 - fr..c - fr], &row_c[k0 - fc..]);
                        row[c - fr] -= s;
                    }
                }
                let a_rr = self.diag[r];
                let mut d = a_rr;
                for (t, &dc) in row.iter_mut().zip(&self.diag[fr..r]) {
                    let l = *t / dc;
                    d -= *t * l;
                    *t = l;
                }
                let nonzero = d.is_finite() && d.abs() > PIVOT_TOLERANCE * a_rr.abs();
                if !nonzero {
                    return Err(LinalgError::ZeroPivot {
                        row: self.symbolic.permutation()[r / self.bs] * self.bs + r % self.bs,
                        pivot: d,
                        diagonal: a_rr,
                    });
                }
                self.diag[r] = d;
            }
        }
        Ok(())
    }

    /// Original scalar row of permuted scalar row `r`.
    fn original_row(&self, r: usize) -> usize {
        self.symbolic.permutation()[r / self.bs] * self.bs + r % self.bs
    }

    /// Solves `A x = b` (host vectors). Errors if a length differs from the matrix dimension.
    pub fn solve(&self, b: &Vector, x: &mut Vector) -> Result<(), LinalgError> {
        let n = self.diag.len();
        for (what, len) in [
            ("DirectSolver::solve b", b.len()),
            ("DirectSolver::solve x", x.len()),
        ] {
            if len != n {
                return Err(LinalgError::LengthMismatch {
                    what,
                    expected: n,
                    found: len,
                });
            }
        }
        let b = b.host()?;
        let mut y: Vec<f64> = (0..n).map(|r| b[self.original_row(r)]).collect();
        // L z = y, then z /= D.
        for r in 0..n {
            let fr = self.symbolic.scalar_first(r, self.bs);
            let s = dot(&self.lower[self.row_ptr[r]..self.row_ptr[r + 1]], &y[fr..r]);
            y[r] -= s;
        }
        for (v, d) in y.iter_mut().zip(&self.diag) {
            *v /= d;
        }
        // L^T x = z, by rows of L from the bottom.
        for r in (0..n).rev() {
            let fr = self.symbolic.scalar_first(r, self.bs);
            let yr = y[r];
            for (v, l) in y[fr..r]
                .iter_mut()
                .zip(&self.lower[self.row_ptr[r]..self.row_ptr[r + 1]])
            {
                *v -= l * yr;
            }
        }
        let x = x.host_mut()?;
        for (r, v) in y.into_iter().enumerate() {
            x[self.original_row(r)] = v;
        }
        Ok(())
    }

    /// Scalar dimension of the matrix.
    pub fn n(&self) -> usize {
        self.diag.len()
    }

    /// Block size of the factored matrix.
    pub fn block_size(&self) -> usize {
        self.bs
    }

    /// Number of negative pivots, i.e. of negative eigenvalues of `A` (Sylvester's inertia).
    pub fn negative_pivots(&self) -> usize {
        self.diag.iter().filter(|&&d| d < 0.0).count()
    }

    /// Stored entries of `L` (the envelope size).
    pub fn factor_len(&self) -> usize {
        self.lower.len()
    }

    /// The plan this factor was computed on.
    pub fn symbolic(&self) -> &Arc<DirectSymbolic> {
        &self.symbolic
    }
}

/// Dot product over the common length with eight independent accumulators (vectorizes; the
/// summation order is fixed).
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    let mut s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}
