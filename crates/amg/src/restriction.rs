//! Restriction `y = P^T x` without storing `P^T`.
//!
//! A [`TransposePlan`] of `P`'s pattern lists, for every coarse row, the slots of `P` in that column
//! (fine rows ascending); each block is read from `P` and transposed on the fly. This keeps one copy
//! of the prolongator values (the transpose plan costs 12 bytes per block instead of the block).
//! Parallel over fixed chunks of coarse rows; every entry sums in slot order, so the result does not
//! depend on the thread count and equals `transpose(P).spmv(x)` bit for bit.

use linalg::{Bsr, TransposePlan, Vector};
use rayon::prelude::*;

/// Coarse block rows per parallel task.
const ROWS_PER_TASK: usize = 128;

/// The data one task reads: the task's rows of `P^T` (absolute offsets), whole slot map, values, `x`.
struct Args<'a> {
    row_ptr: &'a [usize],
    fine_row: &'a [u32],
    slot: &'a [usize],
    p: &'a [f64],
    x: &'a [f64],
}

/// `y = P^T x` with `pt` the transpose plan of `p`'s pattern.
///
/// # Panics
/// If `pt` was not built for `p`'s pattern (compared by pointer or value), or the lengths of `x`
/// (`p.n_rows()`) or `y` (`p.n_cols()`) are wrong: programming errors of the caller.
pub fn restrict(p: &Bsr, pt: &TransposePlan, x: &Vector, y: &mut Vector) {
    assert!(
        std::sync::Arc::ptr_eq(pt.source(), p.pattern()) || **pt.source() == **p.pattern(),
        "restrict: transpose plan built for another pattern"
    );
    assert_eq!(x.len(), p.n_rows(), "restrict: x has the wrong length");
    assert_eq!(y.len(), p.n_cols(), "restrict: y has the wrong length");
    let (br, bc) = (p.block_rows(), p.block_cols());
    let pattern = pt.pattern();
    let (row_ptr, fine_row) = (pattern.row_ptr(), pattern.col_idx());
    y.as_mut_slice()
        .par_chunks_mut(ROWS_PER_TASK * bc)
        .enumerate()
        .for_each(|(task, yc)| {
            let first = task * ROWS_PER_TASK;
            let args = Args {
                row_ptr: &row_ptr[first..=first + yc.len() / bc],
                fine_row,
                slot: pt.source_slots(),
                p: p.values(),
                x: x.as_slice(),
            };
            match (br, bc) {
                (1, 1) => rows::<1, 1>(&args, yc),
                (3, 6) => rows::<3, 6>(&args, yc),
                (6, 6) => rows::<6, 6>(&args, yc),
                (2, 3) => rows::<2, 3>(&args, yc),
                (3, 3) => rows::<3, 3>(&args, yc),
                _ => rows_dyn(br, bc, &args, yc),
            }
        });
}

/// `R x C` blocks of `P`: `y` holds `C` entries per coarse row of the task.
fn rows<const R: usize, const C: usize>(a: &Args<'_>, y: &mut [f64]) {
    for (yi, w) in y.chunks_exact_mut(C).zip(a.row_ptr.windows(2)) {
        let mut acc = [0.0f64; C];
        for k in w[0]..w[1] {
            let i = a.fine_row[k] as usize * R;
            let xi = &a.x[i..i + R];
            let blk = &a.p[a.slot[k] * R * C..(a.slot[k] + 1) * R * C];
            for c in 0..C {
                // Row c of the transposed block, in the order `Bsr::spmv` sums a row.
                let mut t = blk[c] * xi[0];
                for r in 1..R {
                    t += blk[r * C + c] * xi[r];
                }
                acc[c] += t;
            }
        }
        yi.copy_from_slice(&acc);
    }
}

/// [`rows`] for block sizes known only at run time.
fn rows_dyn(br: usize, bc: usize, a: &Args<'_>, y: &mut [f64]) {
    let bl = br * bc;
    for (yi, w) in y.chunks_exact_mut(bc).zip(a.row_ptr.windows(2)) {
        yi.fill(0.0);
        for k in w[0]..w[1] {
            let i = a.fine_row[k] as usize * br;
            let xi = &a.x[i..i + br];
            let blk = &a.p[a.slot[k] * bl..(a.slot[k] + 1) * bl];
            for (c, yc) in yi.iter_mut().enumerate() {
                let mut t = blk[c] * xi[0];
                for r in 1..br {
                    t += blk[r * bc + c] * xi[r];
                }
                *yc += t;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::rand_vec;
    use linalg::{transpose, transpose_symbolic, BlockPattern};
    use std::sync::Arc;

    /// A `n x m`-block prolongator-like matrix with 1 to 3 blocks per row and an empty row.
    fn sample(n: usize, m: usize, br: usize, bc: usize) -> Bsr {
        let mut row_ptr = vec![0];
        let mut cols = Vec::new();
        for i in 0..n {
            if i != 3 {
                let mut row: Vec<u32> = (0..1 + i % 3)
                    .map(|t| ((i * 7 + t * 5) % m) as u32)
                    .collect();
                row.sort_unstable();
                row.dedup();
                cols.extend(row);
            }
            row_ptr.push(cols.len());
        }
        let nnz = cols.len();
        let pattern = Arc::new(BlockPattern::new(n, m, row_ptr, cols).unwrap());
        Bsr::from_parts(pattern, br, bc, rand_vec(7, nnz * br * bc)).unwrap()
    }

    #[test]
    fn equals_the_explicit_transpose_bit_for_bit() {
        for (br, bc) in [(1, 1), (3, 6), (6, 6), (2, 5)] {
            // More coarse rows than one task holds, to cross task boundaries.
            let p = sample(700, 300, br, bc);
            let plan = transpose_symbolic(p.pattern());
            let x = Vector::from_vec(rand_vec(3, p.n_rows()));
            let mut y = Vector::from_vec(vec![f64::NAN; p.n_cols()]);
            restrict(&p, &plan, &x, &mut y);
            let mut expected = Vector::zeros(p.n_cols());
            transpose(&p).spmv(&x, &mut expected);
            assert_eq!(y.as_slice(), expected.as_slice(), "blocks {br}x{bc}");
        }
    }

    #[test]
    #[should_panic(expected = "another pattern")]
    fn a_plan_of_another_pattern_is_refused() {
        let p = sample(20, 9, 3, 6);
        let plan = transpose_symbolic(sample(20, 10, 3, 6).pattern());
        let x = Vector::zeros(p.n_rows());
        let mut y = Vector::zeros(p.n_cols());
        restrict(&p, &plan, &x, &mut y);
    }
}
