//! Host kernels of [`crate::BlockDiagonal`]: extraction from a matrix, inversion, application.

use rayon::prelude::*;

use crate::dense::{invert_in_place, ZeroPivot};
use crate::precision::Value;
use crate::BlockPattern;

/// Block rows per parallel task of the apply kernels.
const ROWS_PER_TASK: usize = 1024;
/// Block sizes up to this keep the pivot record of an inversion on the stack.
const STACK_PIVOTS: usize = 16;

/// Copies the diagonal blocks (slots `positions`, `bl` values each) of `values` into `out`.
/// (`f32` values are widened).
pub(crate) fn gather_blocks<T: Value>(
    positions: &[usize],
    bl: usize,
    values: &[T],
    out: &mut [f64],
) {
    out.par_chunks_mut(bl)
        .zip(positions.par_iter())
        .for_each(|(o, &k)| {
            for (o, v) in o.iter_mut().zip(&values[k * bl..(k + 1) * bl]) {
                *o = v.to_f64();
            }
        });
}

/// The `bs x bs` diagonal node blocks of a scalar (1x1-block) matrix, into `out` (zeroed first);
/// entries absent from the pattern are zero.
pub(crate) fn gather_node_blocks(
    pattern: &BlockPattern,
    bs: usize,
    values: &[f64],
    out: &mut [f64],
) {
    let row_ptr = pattern.row_ptr();
    out.par_chunks_mut(bs * bs)
        .enumerate()
        .for_each(|(node, blk)| {
            blk.fill(0.0);
            let first = node * bs;
            for r in 0..bs {
                let cols = pattern.row(first + r);
                let lo = cols.partition_point(|&c| (c as usize) < first);
                for (t, &c) in cols[lo..].iter().enumerate() {
                    let c = c as usize - first;
                    if c >= bs {
                        break;
                    }
                    blk[r * bs + c] = values[row_ptr[first + r] + lo + t];
                }
            }
        });
}

/// Inverts every `bs x bs` block in place; the failure of the smallest failing block, if any.
pub(crate) fn invert_blocks(bs: usize, values: &mut [f64]) -> Option<(usize, ZeroPivot)> {
    values
        .par_chunks_mut(bs * bs)
        .enumerate()
        .filter_map(|(block, a)| {
            let mut stack = [0usize; STACK_PIVOTS];
            let mut heap;
            let perm: &mut [usize] = if bs <= STACK_PIVOTS {
                &mut stack[..bs]
            } else {
                heap = vec![0usize; bs];
                &mut heap
            };
            invert_in_place(a, bs, perm).err().map(|z| (block, z))
        })
        .min_by_key(|(block, _)| *block)
}

/// `x_i = omega D_i r_i + beta x_i` for every block `i` (with `beta == 0` the old `x` is not read);
/// `f32` blocks are widened on load.
pub(crate) fn apply<T: Value>(bs: usize, d: &[T], omega: f64, r: &[f64], beta: f64, x: &mut [f64]) {
    match bs {
        1 => apply_fixed::<T, 1>(d, omega, r, beta, x),
        2 => apply_fixed::<T, 2>(d, omega, r, beta, x),
        3 => apply_fixed::<T, 3>(d, omega, r, beta, x),
        6 => apply_fixed::<T, 6>(d, omega, r, beta, x),
        bs => apply_dyn(bs, d, omega, r, beta, x),
    }
}

/// [`apply`] for `B x B` blocks, monomorphised.
fn apply_fixed<T: Value, const B: usize>(d: &[T], omega: f64, r: &[f64], beta: f64, x: &mut [f64]) {
    x.par_chunks_mut(ROWS_PER_TASK * B)
        .zip(r.par_chunks(ROWS_PER_TASK * B))
        .zip(d.par_chunks(ROWS_PER_TASK * B * B))
        .for_each(|((xc, rc), dc)| {
            for ((xb, rb), db) in xc
                .chunks_exact_mut(B)
                .zip(rc.chunks_exact(B))
                .zip(dc.chunks_exact(B * B))
            {
                for i in 0..B {
                    let mut s = 0.0;
                    for j in 0..B {
                        s += db[i * B + j].to_f64() * rb[j];
                    }
                    xb[i] = if beta == 0.0 {
                        omega * s
                    } else {
                        omega * s + beta * xb[i]
                    };
                }
            }
        });
}

/// [`apply`] for a block size known only at run time.
fn apply_dyn<T: Value>(bs: usize, d: &[T], omega: f64, r: &[f64], beta: f64, x: &mut [f64]) {
    x.par_chunks_mut(ROWS_PER_TASK * bs)
        .zip(r.par_chunks(ROWS_PER_TASK * bs))
        .zip(d.par_chunks(ROWS_PER_TASK * bs * bs))
        .for_each(|((xc, rc), dc)| {
            for ((xb, rb), db) in xc
                .chunks_exact_mut(bs)
                .zip(rc.chunks_exact(bs))
                .zip(dc.chunks_exact(bs * bs))
            {
                for i in 0..bs {
                    let s: f64 = db[i * bs..(i + 1) * bs]
                        .iter()
                        .zip(rb)
                        .map(|(a, b)| a.to_f64() * b)
                        .sum();
                    xb[i] = if beta == 0.0 {
                        omega * s
                    } else {
                        omega * s + beta * xb[i]
                    };
                }
            }
        });
}
