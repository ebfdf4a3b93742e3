//! Restriction `y = P^T x` without storing `P^T`.
//!
//! The pattern of `P^T` is the one the Galerkin plan already holds
//! ([`linalg::PtapPlan::pt_pattern`]: for every coarse row, the fine rows with a block in that
//! column, ascending); a [`RestrictionMap`] adds, per block of it, the slot of `P` holding the block
//! (4 bytes per block), which is read and transposed on the fly. One copy of the prolongator values,
//! no second copy of any pattern. Parallel over fixed chunks of coarse rows; every entry sums in
//! fine-row order, so the result does not depend on the thread count and equals
//! `transpose(P).spmv(x)` bit for bit.

use crate::AmgError;
use linalg::{BlockPattern, Bsr, Vector};
use rayon::prelude::*;

/// Coarse block rows per parallel task.
const ROWS_PER_TASK: usize = 128;

/// For each block of a `P^T` pattern, the slot of `P` that stores it.
///
/// Invariant: built for one pattern of `P` and the transpose pattern of that pattern; `slots[k]` is
/// the slot of `P` whose block is block `k` of `P^T` (fine rows ascending within a coarse row).
#[derive(Debug, Clone, PartialEq)]
pub struct RestrictionMap {
    slots: Vec<u32>,
}

impl RestrictionMap {
    /// Builds the map of `p` (the pattern of `P`) against `pt`, which must be its transpose
    /// pattern: one counting pass over `P`'s blocks, `O(nnz + coarse rows)`. Errors if `pt` is not
    /// the transpose of `p` or `P` has `2^32` blocks or more.
    pub fn new(p: &BlockPattern, pt: &BlockPattern) -> Result<Self, AmgError> {
        let mismatch = |expected: usize, found: usize| AmgError::DimensionMismatch {
            what: "restriction map: pattern of P^T against P",
            expected,
            found,
        };
        if pt.n_block_rows() != p.n_block_cols() || pt.n_block_cols() != p.n_block_rows() {
            return Err(mismatch(p.n_block_cols(), pt.n_block_rows()));
        }
        if pt.nnz() != p.nnz() {
            return Err(mismatch(p.nnz(), pt.nnz()));
        }
        if u32::try_from(p.nnz()).is_err() {
            return Err(AmgError::DimensionMismatch {
                what: "restriction map: blocks of P (u32 slots)",
                expected: u32::MAX as usize,
                found: p.nnz(),
            });
        }
        let mut next = pt.row_ptr()[..pt.n_block_rows()].to_vec();
        let mut slots = vec![0u32; p.nnz()];
        for i in 0..p.n_block_rows() {
            for s in p.row_ptr()[i]..p.row_ptr()[i + 1] {
                let k = &mut next[p.col_idx()[s] as usize];
                if *k >= pt.row_ptr()[p.col_idx()[s] as usize + 1] || pt.col_idx()[*k] as usize != i
                {
                    return Err(mismatch(
                        i,
                        pt.col_idx().get(*k).map_or(usize::MAX, |&f| f as usize),
                    ));
                }
                slots[*k] = s as u32;
                *k += 1;
            }
        }
        Ok(Self { slots })
    }

    /// Number of blocks mapped (= blocks of `P`).
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True for a prolongator without blocks.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

/// The data one task reads: the task's rows of `P^T` (absolute offsets), whole slot map, values, `x`.
struct Args<'a> {
    row_ptr: &'a [usize],
    fine_row: &'a [u32],
    slot: &'a [u32],
    p: &'a [f64],
    x: &'a [f64],
}

/// `y = P^T x` with `pt` the pattern of `P^T` and `map` built for `p`'s pattern and `pt`.
///
/// # Panics
/// If `pt` or `map` do not have `p`'s number of blocks and `pt` its transposed shape, or the
/// lengths of `x` (`p.n_rows()`) or `y` (`p.n_cols()`) are wrong: programming errors of the caller.
pub fn restrict(p: &Bsr, pt: &BlockPattern, map: &RestrictionMap, x: &Vector, y: &mut Vector) {
    let pp = p.pattern();
    assert!(
        pt.n_block_rows() == pp.n_block_cols()
            && pt.n_block_cols() == pp.n_block_rows()
            && pt.nnz() == pp.nnz()
            && map.len() == pp.nnz(),
        "restrict: P^T pattern or map not built for P"
    );
    assert_eq!(x.len(), p.n_rows(), "restrict: x has the wrong length");
    assert_eq!(y.len(), p.n_cols(), "restrict: y has the wrong length");
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
                slot: &map.slots,
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
            let map = RestrictionMap::new(p.pattern(), plan.pattern()).unwrap();
            assert_eq!(
                map.slots.iter().map(|&s| s as usize).collect::<Vec<_>>(),
                plan.source_slots()
            );
            let x = Vector::from_vec(rand_vec(3, p.n_rows()));
            let mut y = Vector::from_vec(vec![f64::NAN; p.n_cols()]);
            restrict(&p, plan.pattern(), &map, &x, &mut y);
            let mut expected = Vector::zeros(p.n_cols());
            transpose(&p).spmv(&x, &mut expected);
            assert_eq!(y.as_slice(), expected.as_slice(), "blocks {br}x{bc}");
        }
    }

    #[test]
    fn a_pattern_that_is_not_the_transpose_is_refused() {
        let p = sample(20, 9, 3, 6);
        // Another shape.
        let other = transpose_symbolic(sample(20, 10, 3, 6).pattern());
        assert!(RestrictionMap::new(p.pattern(), other.pattern()).is_err());
        // Same shape and block count, one block moved to another column.
        let mut cols = p.pattern().col_idx().to_vec();
        cols[0] = (cols[0] + 1) % 9; // row 0 has one block
        let moved = BlockPattern::new(20, 9, p.pattern().row_ptr().to_vec(), cols).unwrap();
        let moved_t = transpose_symbolic(&moved);
        assert!(RestrictionMap::new(p.pattern(), moved_t.pattern()).is_err());
    }

    #[test]
    #[should_panic(expected = "not built for P")]
    fn a_map_of_another_prolongator_is_refused() {
        let p = sample(20, 9, 3, 6);
        let q = sample(20, 10, 3, 6);
        let qt = transpose_symbolic(q.pattern());
        let map = RestrictionMap::new(q.pattern(), qt.pattern()).unwrap();
        let x = Vector::zeros(p.n_rows());
        let mut y = Vector::zeros(p.n_cols());
        restrict(&p, qt.pattern(), &map, &x, &mut y);
    }
}
