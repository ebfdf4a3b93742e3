//! Block-row SpMV: `y = alpha A x + beta y`, parallel over fixed groups of block rows.

use rayon::prelude::*;

use crate::precision::Value;
use crate::BlockPattern;

/// Block rows per SpMV task (fixed, so the work split never depends on the thread count).
const SPMV_ROWS_PER_TASK: usize = 256;

/// `y = alpha A x + beta y` for `A` on `pattern` with `br x bc` blocks `values`; `beta: None`
/// overwrites `y` without reading it. Each row sums its blocks in slot order, so the result does
/// not depend on the thread count. Values of type `T` (`f64`, or `f32` widened on load) are
/// accumulated in `f64`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn spmv<T: Value>(
    pattern: &BlockPattern,
    br: usize,
    bc: usize,
    values: &[T],
    alpha: f64,
    x: &[f64],
    beta: Option<f64>,
    y: &mut [f64],
) {
    let (row_ptr, col_idx) = (pattern.row_ptr(), pattern.col_idx());
    y.par_chunks_mut(SPMV_ROWS_PER_TASK * br)
        .enumerate()
        .for_each(|(task, yc)| {
            let first = task * SPMV_ROWS_PER_TASK;
            let args = SpmvArgs {
                row_ptr: &row_ptr[first..=first + yc.len() / br],
                col_idx,
                values,
                x,
                alpha,
                beta,
            };
            match (br, bc) {
                (1, 1) => spmv_rows::<T, 1, 1>(&args, yc),
                (2, 2) => spmv_rows::<T, 2, 2>(&args, yc),
                (3, 3) => spmv_rows::<T, 3, 3>(&args, yc),
                (3, 6) => spmv_rows::<T, 3, 6>(&args, yc),
                (6, 3) => spmv_rows::<T, 6, 3>(&args, yc),
                (6, 6) => spmv_rows::<T, 6, 6>(&args, yc),
                (r, c) => spmv_rows_dyn(r, c, &args, yc),
            }
        });
}

/// The matrix and scalars one SpMV task reads. `row_ptr` covers the task's rows only
/// (`rows + 1` entries, absolute offsets); `col_idx`, `values` and `x` are whole.
struct SpmvArgs<'a, T> {
    row_ptr: &'a [usize],
    col_idx: &'a [u32],
    values: &'a [T],
    x: &'a [f64],
    alpha: f64,
    /// `None` overwrites `y` without reading it.
    beta: Option<f64>,
}

/// Const-size kernel: `y` holds the task's `R * rows` entries.
#[inline(never)]
fn spmv_rows<T: Value, const R: usize, const C: usize>(a: &SpmvArgs<'_, T>, y: &mut [f64]) {
    for (yi, w) in y.chunks_exact_mut(R).zip(a.row_ptr.windows(2)) {
        let (start, end) = (w[0], w[1]);
        let cols = &a.col_idx[start..end];
        let blocks = &a.values[start * R * C..end * R * C];
        let mut acc = [0.0f64; R];
        for (&j, blk) in cols.iter().zip(blocks.chunks_exact(R * C)) {
            let j = j as usize * C;
            let xj = &a.x[j..j + C];
            for r in 0..R {
                // Row-of-block partial first, then one add into the running sum: keeps the
                // dependency chain across blocks short.
                let mut t = blk[r * C].to_f64() * xj[0];
                for c in 1..C {
                    t += blk[r * C + c].to_f64() * xj[c];
                }
                acc[r] += t;
            }
        }
        match a.beta {
            None => {
                for r in 0..R {
                    yi[r] = a.alpha * acc[r];
                }
            }
            Some(b) => {
                for r in 0..R {
                    yi[r] = a.alpha * acc[r] + b * yi[r];
                }
            }
        }
    }
}

/// Runtime-size fallback with the same summation order as [`spmv_rows`].
fn spmv_rows_dyn<T: Value>(br: usize, bc: usize, a: &SpmvArgs<'_, T>, y: &mut [f64]) {
    let bl = br * bc;
    let mut acc = vec![0.0f64; br];
    for (yi, w) in y.chunks_exact_mut(br).zip(a.row_ptr.windows(2)) {
        let (start, end) = (w[0], w[1]);
        acc.fill(0.0);
        for (&j, blk) in a.col_idx[start..end]
            .iter()
            .zip(a.values[start * bl..end * bl].chunks_exact(bl))
        {
            let j = j as usize * bc;
            let xj = &a.x[j..j + bc];
            for (accr, brow) in acc.iter_mut().zip(blk.chunks_exact(bc)) {
                let mut t = brow[0].to_f64() * xj[0];
                for c in 1..bc {
                    t += brow[c].to_f64() * xj[c];
                }
                *accr += t;
            }
        }
        match a.beta {
            None => yi.iter_mut().zip(&acc).for_each(|(y, s)| *y = a.alpha * s),
            Some(b) => yi
                .iter_mut()
                .zip(&acc)
                .for_each(|(y, s)| *y = a.alpha * s + b * *y),
        }
    }
}
