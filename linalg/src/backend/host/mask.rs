//! Host kernels of [`crate::DofMask`]: masked zeroing and copying of vector entries, symmetric
//! elimination in matrix blocks.

use rayon::prelude::*;

use crate::mask::{eliminated_diagonal, MaskedBlock};
use crate::rows::split_rows;
use crate::BlockPattern;

/// Blocks per parallel task of the vector kernels.
const BLOCKS_PER_TASK: usize = 4096;
/// Block rows per parallel task of the elimination.
const ELIMINATION_ROWS_PER_TASK: usize = 1024;

/// Sets the entries of `v` whose bit is set in their block's mask to zero.
pub(crate) fn zero(bs: usize, bits: &[u8], v: &mut [f64]) {
    v.par_chunks_mut(bs * BLOCKS_PER_TASK)
        .zip(bits.par_chunks(BLOCKS_PER_TASK))
        .for_each(|(vc, bc)| {
            for (vb, &m) in vc.chunks_exact_mut(bs).zip(bc) {
                for (c, x) in vb.iter_mut().enumerate() {
                    if m & (1 << c) != 0 {
                        *x = 0.0;
                    }
                }
            }
        });
}

/// Copies the masked entries of `from` into `to`.
pub(crate) fn copy(bs: usize, bits: &[u8], from: &[f64], to: &mut [f64]) {
    to.par_chunks_mut(bs * BLOCKS_PER_TASK)
        .zip(from.par_chunks(bs * BLOCKS_PER_TASK))
        .zip(bits.par_chunks(BLOCKS_PER_TASK))
        .for_each(|((tc, fc), bc)| {
            for ((tb, fb), &m) in tc.chunks_exact_mut(bs).zip(fc.chunks_exact(bs)).zip(bc) {
                for c in 0..bs {
                    if m & (1 << c) != 0 {
                        tb[c] = fb[c];
                    }
                }
            }
        });
}

/// In every block of `touched` (ascending slots of a square `bs x bs`-block matrix on
/// `pattern`), entries in a masked row or column become zero, masked diagonal entries of
/// diagonal blocks [`crate::mask::eliminated_diagonal`] of their value. Parallel over fixed
/// groups of block rows.
pub(crate) fn eliminate(
    pattern: &BlockPattern,
    bs: usize,
    touched: &[MaskedBlock],
    values: &mut [f64],
) {
    let bl = bs * bs;
    let row_ptr = pattern.row_ptr();
    split_rows(row_ptr, bl, ELIMINATION_ROWS_PER_TASK, values)
        .into_par_iter()
        .for_each(|(rows, out)| {
            let (first, end) = (row_ptr[rows.start], row_ptr[rows.end]);
            let lo = touched.partition_point(|b| (b.slot as usize) < first);
            let hi = touched.partition_point(|b| (b.slot as usize) < end);
            for b in &touched[lo..hi] {
                let s = b.slot as usize - first;
                let block = &mut out[s * bl..(s + 1) * bl];
                for r in 0..bs {
                    for c in 0..bs {
                        if b.row_bits & (1 << r) != 0 || b.col_bits & (1 << c) != 0 {
                            let e = &mut block[bs * r + c];
                            *e = if b.diagonal && r == c {
                                eliminated_diagonal(*e)
                            } else {
                                0.0
                            };
                        }
                    }
                }
            }
        });
}
