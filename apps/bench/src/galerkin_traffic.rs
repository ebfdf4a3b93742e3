//! What the numeric Galerkin product `A_c = P^T (A P)` of one level must move and compute, counted
//! from the host patterns, so that `bench gamg` can say how far each level's measured time is from
//! the bandwidth limit.
//!
//! The device product runs in two passes (`spgemm_nn` writes `W = A P`, `ptw_tn` reads it back):
//! the compulsory traffic of each pass is every operand's values and indices read once and the
//! output written once. A fused product that keeps `W` on chip would skip the `W` round trip;
//! [`GalerkinTraffic::fused_bytes`] counts that lower bound.

use linalg::BlockPattern;
use serde::Serialize;

/// Bytes and flops of one level's numeric Galerkin product (`f64` values, `u32` indices).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GalerkinTraffic {
    /// Blocks of `A`, `P`, `W = A P` and `A_c`.
    pub a_blocks: usize,
    pub p_blocks: usize,
    pub w_blocks: usize,
    pub ac_blocks: usize,
    /// Block products `A_ik P_kJ` (first pass) and `P_iI^T W_iJ` (second pass).
    pub w_terms: usize,
    pub ac_terms: usize,
    /// Compulsory bytes of the two passes as they run (each operand read once per pass).
    pub two_pass_bytes: f64,
    /// The same without the `W` values and pattern (a fused product).
    pub fused_bytes: f64,
    /// Floating-point operations (a multiply-add counts 2).
    pub flops: f64,
}

/// Counts the product of `a` (`b x b` blocks, pattern `a`) with `p` (`b x c`, pattern `p`) into the
/// pattern `ac` (`c x c`).
pub fn galerkin_traffic(
    a: &BlockPattern,
    p: &BlockPattern,
    ac: &BlockPattern,
    b: usize,
    c: usize,
) -> GalerkinTraffic {
    // W's pattern row by row (a marker per coarse column) and the term counts
    let n_coarse = p.n_block_cols();
    let mut mark = vec![usize::MAX; n_coarse];
    let mut w_row_len = vec![0usize; a.n_block_rows()];
    let mut w_terms = 0usize;
    for (i, len) in w_row_len.iter_mut().enumerate() {
        for &k in a.row(i) {
            let row = p.row(k as usize);
            w_terms += row.len();
            for &j in row {
                if mark[j as usize] != i {
                    mark[j as usize] = i;
                    *len += 1;
                }
            }
        }
    }
    let w_blocks: usize = w_row_len.iter().sum();
    // second pass: every P block (i, I) meets every W block of row i
    let ac_terms: usize = (0..p.n_block_rows())
        .map(|i| p.row(i).len() * w_row_len[i])
        .sum();
    let (a_blocks, p_blocks, ac_blocks) = (a.nnz(), p.nnz(), ac.nnz());
    let f = 8.0;
    let idx = 4.0;
    let values = |blocks: usize, len: usize| blocks as f64 * len as f64 * f;
    let pattern = |blocks: usize, rows: usize| blocks as f64 * idx + (rows + 1) as f64 * idx;
    // pass 1: A and P (values + pattern), W's slot rows and columns, W written
    let w_pattern = 2.0 * w_blocks as f64 * idx;
    let pass1_in = values(a_blocks, b * b)
        + pattern(a_blocks, a.n_block_rows())
        + values(p_blocks, b * c)
        + pattern(p_blocks, p.n_block_rows());
    let w_values = values(w_blocks, b * c);
    // pass 2: P through the P^T map (columns + slots), W read, A_c's slot rows and columns written
    let pass2_in = values(p_blocks, b * c) + 2.0 * p_blocks as f64 * idx;
    let ac_out = values(ac_blocks, c * c) + 2.0 * ac_blocks as f64 * idx;
    let two_pass_bytes = pass1_in + w_pattern + 2.0 * w_values + pass2_in + ac_out;
    // fused: A, P once, A_c written
    let fused_bytes = pass1_in + ac_out;
    let flops = 2.0 * (w_terms * b * b * c + ac_terms * b * c * c) as f64;
    GalerkinTraffic {
        a_blocks,
        p_blocks,
        w_blocks,
        ac_blocks,
        w_terms,
        ac_terms,
        two_pass_bytes,
        fused_bytes,
        flops,
    }
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

    /// A 1D chain of 4 nodes (tridiagonal A), two aggregates {0,1}, {2,3} with P = the piecewise
    /// constant injection: W = A P and A_c counted by hand.
    #[test]
    fn counts_a_chain_by_hand() {
        let a = pattern(4, &[&[0, 1], &[0, 1, 2], &[1, 2, 3], &[2, 3]]);
        let p = pattern(2, &[&[0], &[0], &[1], &[1]]);
        let ac = pattern(2, &[&[0, 1], &[0, 1]]);
        let t = galerkin_traffic(&a, &p, &ac, 1, 1);
        // W rows: {0}, {0,1}, {0,1}, {1}
        assert_eq!(t.w_blocks, 6);
        // one term per A block
        assert_eq!(t.w_terms, 10);
        // P^T W: each fine row's one P block meets its W row
        assert_eq!(t.ac_terms, 6);
        assert_eq!(t.flops, 2.0 * 16.0);
        let pass1 = 10.0 * 8.0 + (10.0 + 5.0) * 4.0 + 4.0 * 8.0 + (4.0 + 5.0) * 4.0;
        let ac_out = 4.0 * 8.0 + 8.0 * 4.0;
        assert_eq!(t.fused_bytes, pass1 + ac_out);
        let w = 2.0 * 6.0 * 4.0 + 2.0 * 6.0 * 8.0;
        let pass2_p = 4.0 * 8.0 + 8.0 * 4.0;
        assert_eq!(t.two_pass_bytes, pass1 + ac_out + w + pass2_p);
    }
}
