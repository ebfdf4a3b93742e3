//! Host kernels on the values of block matrices (besides SpMV and the products).

use rayon::prelude::*;

use crate::rows::split_rows;
use crate::BlockPattern;

/// Values per task of element-wise passes over matrix values.
const VALUES_PER_TASK: usize = 1 << 14;

/// `values *= s`.
pub(crate) fn scale(s: f64, values: &mut [f64]) {
    values
        .par_chunks_mut(VALUES_PER_TASK)
        .for_each(|c| c.iter_mut().for_each(|v| *v *= s));
}

/// `dst = src`.
pub(crate) fn copy(src: &[f64], dst: &mut [f64]) {
    dst.par_chunks_mut(VALUES_PER_TASK)
        .zip(src.par_chunks(VALUES_PER_TASK))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

/// Frobenius norm of every block (`block_len` values each), in slot order.
pub(crate) fn block_norms(block_len: usize, values: &[f64], norms: &mut [f64]) {
    norms
        .par_iter_mut()
        .zip(values.par_chunks(block_len))
        .for_each(|(n, b)| *n = b.iter().map(|v| v * v).sum::<f64>().sqrt());
}

/// Writes the `br x bc` blocks `src` (on `pattern`) into `dst`, the values of the same matrix
/// stored with 1x1 blocks: scalar row `br i + r` holds row `r` of block row `i`'s blocks, in slot
/// order. Parallel over block rows; a pure copy.
pub(crate) fn expand_to_scalar(
    pattern: &BlockPattern,
    br: usize,
    bc: usize,
    src: &[f64],
    dst: &mut [f64],
) {
    let bl = br * bc;
    let row_ptr = pattern.row_ptr();
    split_rows(row_ptr, bl, 1, dst)
        .into_par_iter()
        .for_each(|(rows, out)| {
            let i = rows.start;
            let (lo, hi) = (row_ptr[i], row_ptr[i + 1]);
            if lo == hi {
                return;
            }
            let blocks = &src[lo * bl..hi * bl];
            for (r, out_row) in out.chunks_exact_mut((hi - lo) * bc).enumerate() {
                for (o, blk) in out_row.chunks_exact_mut(bc).zip(blocks.chunks_exact(bl)) {
                    o.copy_from_slice(&blk[r * bc..(r + 1) * bc]);
                }
            }
        });
}
