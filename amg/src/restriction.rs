//! Restriction `y = P^T x` without storing `P^T`.
//!
//! The Galerkin plan of `P` already holds the pattern of `P^T` ([`linalg::PtapPlan::pt_pattern`]:
//! for every coarse row, the fine rows with a block in that column, ascending) and, per block of
//! it, the slot of `P` storing the block ([`linalg::PtapPlan::pt_slots`]); [`restrict`] reads the
//! blocks of `P` through that map and transposes them on the fly. One copy of the prolongator
//! values, no second copy of any pattern, no map of its own. Parallel over fixed chunks of coarse
//! rows; every entry sums in fine-row order, so the result does not depend on the thread count and
//! equals `transpose(P).spmv(x)` bit for bit.

use linalg::{Bsr, PtapPlan, Vector};
use rayon::prelude::*;
use std::sync::Arc;

/// Coarse block rows per parallel task.
const ROWS_PER_TASK: usize = 128;

/// The data one task reads: the task's rows of `P^T` (absolute offsets), whole slot map, values, `x`.
struct Args<'a> {
    row_ptr: &'a [usize],
    fine_row: &'a [u32],
    slot: &'a [u32],
    p: &'a [f64],
    x: &'a [f64],
}

/// `y = P^T x` with `plan` a Galerkin plan built for `p`'s pattern (checked by pointer; patterns
/// that are distinct objects are compared in full).
///
/// # Panics
/// If `plan` was built for another pattern of `P`, or the lengths of `x` (`p.n_rows()`) or `y`
/// (`p.n_cols()`) are wrong: programming errors of the caller.
pub fn restrict(p: &Bsr, plan: &PtapPlan, x: &Vector, y: &mut Vector) {
    assert!(
        Arc::ptr_eq(plan.p_pattern(), p.pattern()) || plan.p_pattern() == p.pattern(),
        "restrict: Galerkin plan not built for P"
    );
    assert_eq!(x.len(), p.n_rows(), "restrict: x has the wrong length");
    assert_eq!(y.len(), p.n_cols(), "restrict: y has the wrong length");
    let pt = plan.pt_pattern();
    let (br, bc) = (p.block_rows(), p.block_cols());
    let (row_ptr, fine_row) = (pt.row_ptr(), pt.col_idx());
    y.as_mut_slice()
        .par_chunks_mut(ROWS_PER_TASK * bc)
        .enumerate()
        .for_each(|(task, yc)| {
            let first = task * ROWS_PER_TASK;
            let args = Args {
                row_ptr: &row_ptr[first..=first + yc.len() / bc],
                fine_row,
                slot: plan.pt_slots(),
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
            let s = a.slot[k] as usize;
            let xi = &a.x[i..i + R];
            let blk = &a.p[s * R * C..(s + 1) * R * C];
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
            let s = a.slot[k] as usize;
            let xi = &a.x[i..i + br];
            let blk = &a.p[s * bl..(s + 1) * bl];
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
    use linalg::{transpose, BlockPattern};

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

    /// The Galerkin plan of `p` on a diagonal operator.
    fn plan(p: &Bsr) -> PtapPlan {
        let n = p.pattern().n_block_rows();
        let diagonal = BlockPattern::new(n, n, (0..=n).collect(), (0..n as u32).collect()).unwrap();
        PtapPlan::new(&Arc::new(diagonal), p.pattern()).unwrap()
    }

    #[test]
    fn equals_the_explicit_transpose_bit_for_bit() {
        for (br, bc) in [(1, 1), (3, 6), (6, 6), (2, 5)] {
            // More coarse rows than one task holds, to cross task boundaries.
            let p = sample(700, 300, br, bc);
            let x = Vector::from_vec(rand_vec(3, p.n_rows()));
            let mut y = Vector::from_vec(vec![f64::NAN; p.n_cols()]);
            restrict(&p, &plan(&p), &x, &mut y);
            let mut expected = Vector::zeros(p.n_cols());
            transpose(&p).spmv(&x, &mut expected);
            assert_eq!(y.as_slice(), expected.as_slice(), "blocks {br}x{bc}");
        }
    }

    #[test]
    fn a_plan_of_an_equal_pattern_is_accepted() {
        let p = sample(20, 9, 3, 6);
        let copy = Arc::new(p.pattern().as_ref().clone());
        let q = Bsr::from_parts(copy, 3, 6, p.values().to_vec()).unwrap();
        let x = Vector::from_vec(rand_vec(5, p.n_rows()));
        let (mut y, mut z) = (Vector::zeros(p.n_cols()), Vector::zeros(p.n_cols()));
        restrict(&p, &plan(&p), &x, &mut y);
        restrict(&q, &plan(&p), &x, &mut z);
        assert_eq!(y.as_slice(), z.as_slice());
    }

    #[test]
    #[should_panic(expected = "not built for P")]
    fn a_plan_of_another_prolongator_is_refused() {
        let p = sample(20, 9, 3, 6);
        let q = sample(20, 10, 3, 6);
        let x = Vector::zeros(p.n_rows());
        let mut y = Vector::zeros(p.n_cols());
        restrict(&p, &plan(&q), &x, &mut y);
    }
}
