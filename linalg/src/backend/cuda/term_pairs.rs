//! Term pair lists of a sparse block product `C = L R` on host patterns: for every output slot,
//! the `(L slot, R slot)` pairs that contribute to it, in ascending `L` slot order (the order
//! in which the searching product kernels visit them, so the sums keep their bits).
//!
//! Used by the device Galerkin plan (`W = A P` with `L = A`, and `A_c = P^T W` with `L = P^T`
//! whose slots map to `P`'s) where the lists fit its memory share: the kernels then read two
//! indices per term instead of running a binary search per term. Costs 8 bytes per term of
//! device memory.

use crate::{BlockPattern, LinalgError};

/// The pair lists of one product: slot `s`'s terms are `first[t], second[t]` for
/// `t in ptr[s]..ptr[s + 1]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TermPairs {
    pub ptr: Vec<u32>,
    pub first: Vec<u32>,
    pub second: Vec<u32>,
}

/// Number of terms of `left * right` (what [`term_pairs`] would list), without building them.
pub(super) fn term_count(left: &BlockPattern, right: &BlockPattern) -> usize {
    left.col_idx()
        .iter()
        .map(|&k| right.row_ptr()[k as usize + 1] - right.row_ptr()[k as usize])
        .sum()
}

/// Pairs of `out = left * right`: row `i` of `left` pairs its entry `(i, k)` (reported as
/// `left_slot(entry)`) with every entry `(k, j)` of `right`, which lands in slot `(i, j)` of `out`.
/// Fails if a product lands outside `out`'s pattern or the counts overflow `u32`.
pub(super) fn term_pairs(
    out: &BlockPattern,
    left: &BlockPattern,
    left_slot: impl Fn(usize) -> u32,
    right: &BlockPattern,
) -> Result<TermPairs, LinalgError> {
    let mismatch = LinalgError::PatternMismatch {
        what: "device product pair lists: a term lands outside the output pattern",
    };
    if left.n_block_rows() != out.n_block_rows() || left.n_block_cols() != right.n_block_rows() {
        return Err(mismatch);
    }
    // where[j] = output slot of column j in the current row (stamped by row)
    let mut slot_of = vec![(usize::MAX, 0usize); out.n_block_cols()];
    let mut count = vec![0usize; out.nnz() + 1];
    let mut visit = |fill: &mut dyn FnMut(usize, usize, usize)| -> Result<(), LinalgError> {
        for i in 0..out.n_block_rows() {
            let start = out.row_ptr()[i];
            for (o, &j) in out.row(i).iter().enumerate() {
                slot_of[j as usize] = (i, start + o);
            }
            for e in left.row_ptr()[i]..left.row_ptr()[i + 1] {
                let k = left.col_idx()[e] as usize;
                for r in right.row_ptr()[k]..right.row_ptr()[k + 1] {
                    let j = right.col_idx()[r] as usize;
                    if j >= slot_of.len() || slot_of[j].0 != i {
                        return Err(mismatch.clone());
                    }
                    fill(slot_of[j].1, e, r);
                }
            }
        }
        Ok(())
    };
    visit(&mut |s, _, _| count[s + 1] += 1)?;
    for s in 0..out.nnz() {
        count[s + 1] += count[s];
    }
    let terms = count[out.nnz()];
    if terms > u32::MAX as usize {
        return Err(LinalgError::DimensionTooLarge {
            what: "device product pair lists: number of terms",
            value: terms,
        });
    }
    let ptr: Vec<u32> = count.iter().map(|&c| c as u32).collect();
    let mut cursor = count;
    let mut first = vec![0u32; terms];
    let mut second = vec![0u32; terms];
    visit(&mut |s, e, r| {
        let t = cursor[s];
        cursor[s] += 1;
        first[t] = left_slot(e);
        second[t] = r as u32;
    })?;
    Ok(TermPairs { ptr, first, second })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(n_cols: usize, rows: &[&[u32]]) -> BlockPattern {
        let mut row_ptr = vec![0];
        for r in rows {
            row_ptr.push(row_ptr.last().unwrap() + r.len());
        }
        let cols = rows.iter().flat_map(|r| r.iter().copied()).collect();
        BlockPattern::new(rows.len(), n_cols, row_ptr, cols).unwrap()
    }

    /// A tridiagonal 3x3 times a 3x2: every pair listed once, in ascending left slot.
    #[test]
    fn pairs_of_a_small_product_by_hand() {
        let a = pattern(3, &[&[0, 1], &[0, 1, 2], &[1, 2]]);
        let p = pattern(2, &[&[0], &[0, 1], &[1]]);
        // W rows: {0,1}, {0,1}, {0,1}
        let w = pattern(2, &[&[0, 1], &[0, 1], &[0, 1]]);
        let t = term_pairs(&w, &a, |e| e as u32, &p).unwrap();
        // slot (0,0): a00 p00 (0,0), a01 p10 (1,1); slot (0,1): a01 p11 (1,2)
        assert_eq!(t.ptr, vec![0, 2, 3, 5, 7, 8, 10]);
        assert_eq!(term_count(&a, &p), 10);
        assert_eq!(&t.first[..3], &[0, 1, 1]);
        assert_eq!(&t.second[..3], &[0, 1, 2]);
        // row 1: slot (1,0): a10 p00, a11 p10; slot (1,1): a11 p11, a12 p21
        assert_eq!(&t.first[3..7], &[2, 3, 3, 4]);
        assert_eq!(&t.second[3..7], &[0, 1, 2, 3]);
        // a pattern too small for the product is refused
        let short = pattern(2, &[&[0], &[0, 1], &[0, 1]]);
        assert!(term_pairs(&short, &a, |e| e as u32, &p).is_err());
    }
}
