//! Term pair lists of a sparse block product `C = L R` on host patterns: for every output slot,
//! the `(L slot, R slot)` pairs that contribute to it, in ascending `L` slot order (the order
//! in which the searching product kernels visit them, so the sums keep their bits).
//!
//! The host reference of the lists the device plans build on the device (symbolic.cu's
//! `term_pairs_count` / `term_pairs_fill`, the same walk): tests compare the two. The device
//! Galerkin plan lists `W = A P` with `L = A`, and `A_c = P^T W` with `L = P^T` whose slots map
//! to `P`'s, where the lists fit its memory share: the kernels then read two indices per term
//! instead of running a binary search per term (8 bytes per term of device memory).

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
/// Fails if a product lands outside `out`'s pattern or the counts overflow `u32`. Rows are
/// listed in parallel, chunk by chunk (each chunk writes its own slots' counts and terms), in
/// the order of the serial walk: the lists do not depend on the thread count.
pub(super) fn term_pairs(
    out: &BlockPattern,
    left: &BlockPattern,
    left_slot: impl Fn(usize) -> u32 + Sync,
    right: &BlockPattern,
) -> Result<TermPairs, LinalgError> {
    use rayon::prelude::*;
    let mismatch = LinalgError::PatternMismatch {
        what: "device product pair lists: a term lands outside the output pattern",
    };
    if left.n_block_rows() != out.n_block_rows() || left.n_block_cols() != right.n_block_rows() {
        return Err(mismatch);
    }
    let (n_rows, nnz) = (out.n_block_rows(), out.nnz());
    let rows_per_chunk = n_rows.div_ceil(8 * rayon::current_num_threads()).max(256);
    let chunks: Vec<std::ops::Range<usize>> = (0..n_rows)
        .step_by(rows_per_chunk)
        .map(|r| r..(r + rows_per_chunk).min(n_rows))
        .collect();
    // Walks rows `rows`, calling `fill(slot, left entry, right entry)` for every term in the
    // serial order; `slot_of[j]` stamps the output slot of column j of the current row.
    let walk = |rows: std::ops::Range<usize>,
                fill: &mut dyn FnMut(usize, usize, usize)|
     -> Result<(), LinalgError> {
        let mut slot_of = vec![(usize::MAX, 0usize); out.n_block_cols()];
        for i in rows {
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
    // each chunk's slots: out.row_ptr()[rows.start]..out.row_ptr()[rows.end]
    let slot_range =
        |rows: &std::ops::Range<usize>| out.row_ptr()[rows.start]..out.row_ptr()[rows.end];
    let mut count = vec![0usize; nnz];
    {
        let mut parts = Vec::with_capacity(chunks.len());
        let mut rest = &mut count[..];
        for rows in &chunks {
            let (head, tail) = rest.split_at_mut(slot_range(rows).len());
            parts.push(head);
            rest = tail;
        }
        chunks.par_iter().zip(parts).try_for_each(|(rows, part)| {
            let base = slot_range(rows).start;
            walk(rows.clone(), &mut |s, _, _| part[s - base] += 1)
        })?;
    }
    let mut ptr = Vec::with_capacity(nnz + 1);
    let mut terms = 0usize;
    ptr.push(0u32);
    for c in &count {
        terms += c;
        if terms > u32::MAX as usize {
            return Err(LinalgError::DimensionTooLarge {
                what: "device product pair lists: number of terms",
                value: terms,
            });
        }
        ptr.push(terms as u32);
    }
    drop(count);
    let mut first = vec![0u32; terms];
    let mut second = vec![0u32; terms];
    {
        let mut parts = Vec::with_capacity(chunks.len());
        let (mut rest_first, mut rest_second) = (&mut first[..], &mut second[..]);
        for rows in &chunks {
            let slots = slot_range(rows);
            let n = (ptr[slots.end] - ptr[slots.start]) as usize;
            let (f, tf) = rest_first.split_at_mut(n);
            let (g, tg) = rest_second.split_at_mut(n);
            parts.push((f, g));
            rest_first = tf;
            rest_second = tg;
        }
        chunks
            .par_iter()
            .zip(parts)
            .try_for_each(|(rows, (f, g))| {
                let slots = slot_range(rows);
                let base = ptr[slots.start] as usize;
                let mut cursor: Vec<usize> = ptr[slots.clone()]
                    .iter()
                    .map(|&p| p as usize - base)
                    .collect();
                walk(rows.clone(), &mut |s, e, r| {
                    let t = &mut cursor[s - slots.start];
                    f[*t] = left_slot(e);
                    g[*t] = r as u32;
                    *t += 1;
                })
            })?;
    }
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

    /// Many chunks of rows: the lists equal a plain serial walk's (per slot, terms in
    /// ascending left slot, then right slot).
    #[test]
    fn chunked_lists_equal_the_serial_walk() {
        let n = 5000usize;
        // left: rows with a band of columns; right: each row 1-3 columns
        let band: Vec<Vec<u32>> = (0..n)
            .map(|i| {
                (i.saturating_sub(3)..(i + 4).min(n))
                    .step_by(1 + i % 2)
                    .map(|j| j as u32)
                    .collect()
            })
            .collect();
        let left = pattern(n, &band.iter().map(|r| &r[..]).collect::<Vec<_>>());
        let rp: Vec<Vec<u32>> = (0..n)
            .map(|k| {
                let c = (k / 4) as u32;
                (c..c + 1 + (k % 3) as u32)
                    .filter(|&j| j < (n / 4 + 3) as u32)
                    .collect()
            })
            .collect();
        let right = pattern(n / 4 + 3, &rp.iter().map(|r| &r[..]).collect::<Vec<_>>());
        let out = crate::spgemm::product_pattern(&left, &right);
        let t = term_pairs(&out, &left, |e| e as u32 * 2, &right).unwrap();
        let mut want: Vec<Vec<(u32, u32)>> = vec![Vec::new(); out.nnz()];
        for i in 0..n {
            for e in left.row_ptr()[i]..left.row_ptr()[i + 1] {
                let k = left.col_idx()[e] as usize;
                for r in right.row_ptr()[k]..right.row_ptr()[k + 1] {
                    let j = right.col_idx()[r];
                    let o = out.row(i).iter().position(|&c| c == j).unwrap();
                    want[out.row_ptr()[i] + o].push((e as u32 * 2, r as u32));
                }
            }
        }
        assert_eq!(t.ptr.len(), out.nnz() + 1);
        for (s, w) in want.iter().enumerate() {
            let got: Vec<(u32, u32)> = (t.ptr[s] as usize..t.ptr[s + 1] as usize)
                .map(|q| (t.first[q], t.second[q]))
                .collect();
            assert_eq!(&got, w, "slot {s}");
        }
        assert_eq!(t.first.len(), term_count(&left, &right));
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
