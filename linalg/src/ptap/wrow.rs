//! One row `W_i = A_i P` of the intermediate product, computed on the fly: the pattern of `A P` is
//! never stored, each row finds its columns through a marker over the columns of `P`.

use crate::backend::host::gemm::BlockProduct;
use crate::BlockPattern;

/// Marker value of a column absent from the current row.
pub(crate) const UNMARKED: u32 = u32::MAX;

/// The operands of `W = A P`.
#[derive(Clone, Copy)]
pub(crate) struct Operands<'a> {
    pub a: &'a BlockPattern,
    pub a_values: &'a [f64],
    pub p: &'a BlockPattern,
    pub p_values: &'a [f64],
}

/// Appends row `i` of `W = A P` to `cols` / `vals` (`m_ap`: `b x b` times `b x c` blocks).
///
/// Blocks come in order of first appearance (along `A_i`'s row, then `P_k`'s); block `J` sums its
/// terms `A_ik P_kJ` with `k` ascending, so its value does not depend on where the row is stored.
/// On entry `marker` (one entry per column of `P`) must be [`UNMARKED`] everywhere; on return
/// `marker[J]` is the position of block `J` within the row, for every `J` of the row, until the
/// caller calls [`unmark`] with the row's columns.
#[inline(always)]
pub(crate) fn w_row<M: BlockProduct>(
    m_ap: M,
    ops: &Operands<'_>,
    i: usize,
    marker: &mut [u32],
    cols: &mut Vec<u32>,
    vals: &mut Vec<f64>,
) {
    let (abl, pbl) = (m_ap.rows() * m_ap.inner(), m_ap.inner() * m_ap.cols());
    let (ap, ac) = (ops.a.row_ptr(), ops.a.col_idx());
    let (pp, pc, pv) = (ops.p.row_ptr(), ops.p.col_idx(), ops.p_values);
    let (first_col, first_val) = (cols.len(), vals.len());
    for (s, &k) in (ap[i]..ap[i + 1]).zip(&ac[ap[i]..ap[i + 1]]) {
        let k = k as usize;
        let ablk = &ops.a_values[s * abl..(s + 1) * abl];
        for t in pp[k]..pp[k + 1] {
            let j = pc[t] as usize;
            let mut l = marker[j];
            if l == UNMARKED {
                l = (cols.len() - first_col) as u32;
                marker[j] = l;
                cols.push(j as u32);
                vals.resize(vals.len() + pbl, 0.0);
            }
            let at = first_val + l as usize * pbl;
            m_ap.mul_add(ablk, &pv[t * pbl..(t + 1) * pbl], &mut vals[at..at + pbl]);
        }
    }
}

/// Resets the marks [`w_row`] set for a row with columns `cols`.
#[inline(always)]
pub(crate) fn unmark(marker: &mut [u32], cols: &[u32]) {
    for &j in cols {
        marker[j as usize] = UNMARKED;
    }
}
