//! Host kernels of the AMG transfers: restriction `y = P^T x` through the Galerkin plan's `P^T`
//! slot map, and the Jacobi smoothing of a prolongator.

use rayon::prelude::*;

use crate::precision::Value;
use crate::rows::split_rows;
use crate::BlockPattern;

/// Coarse block rows per parallel task of the restriction.
const RESTRICT_ROWS_PER_TASK: usize = 128;
/// Block rows per parallel task of the prolongator smoothing.
const SMOOTH_ROWS_PER_TASK: usize = 64;

/// `y = P^T x` with `P` (`br x bc` blocks, values `p`) read through `pt` (pattern of `P^T`: per
/// coarse row, the fine rows with a block in that column, ascending) and `pt_slots` (per block of
/// `pt`, the slot of `P` storing it). Parallel over fixed chunks of coarse rows; every entry sums
/// in fine-row order, the order `Bsr::spmv` of the explicit transpose uses. `f32` values are
/// widened on load.
pub(crate) fn restrict<T: Value>(
    pt: &BlockPattern,
    pt_slots: &[u32],
    br: usize,
    bc: usize,
    p: &[T],
    x: &[f64],
    y: &mut [f64],
) {
    let (row_ptr, fine_row) = (pt.row_ptr(), pt.col_idx());
    y.par_chunks_mut(RESTRICT_ROWS_PER_TASK * bc)
        .enumerate()
        .for_each(|(task, yc)| {
            let first = task * RESTRICT_ROWS_PER_TASK;
            let args = RestrictArgs {
                row_ptr: &row_ptr[first..=first + yc.len() / bc],
                fine_row,
                slot: pt_slots,
                p,
                x,
            };
            match (br, bc) {
                (1, 1) => restrict_rows::<T, 1, 1>(&args, yc),
                (3, 6) => restrict_rows::<T, 3, 6>(&args, yc),
                (6, 6) => restrict_rows::<T, 6, 6>(&args, yc),
                (2, 3) => restrict_rows::<T, 2, 3>(&args, yc),
                (3, 3) => restrict_rows::<T, 3, 3>(&args, yc),
                _ => restrict_rows_dyn(br, bc, &args, yc),
            }
        });
}

/// The data one restriction task reads: the task's rows of `P^T` (absolute offsets), whole slot
/// map, values, `x`.
struct RestrictArgs<'a, T> {
    row_ptr: &'a [usize],
    fine_row: &'a [u32],
    slot: &'a [u32],
    p: &'a [T],
    x: &'a [f64],
}

/// `R x C` blocks of `P`: `y` holds `C` entries per coarse row of the task.
fn restrict_rows<T: Value, const R: usize, const C: usize>(a: &RestrictArgs<'_, T>, y: &mut [f64]) {
    for (yi, w) in y.chunks_exact_mut(C).zip(a.row_ptr.windows(2)) {
        let mut acc = [0.0f64; C];
        for k in w[0]..w[1] {
            let i = a.fine_row[k] as usize * R;
            let s = a.slot[k] as usize;
            let xi = &a.x[i..i + R];
            let blk = &a.p[s * R * C..(s + 1) * R * C];
            for c in 0..C {
                // Row c of the transposed block, in the order `Bsr::spmv` sums a row.
                let mut t = blk[c].to_f64() * xi[0];
                for r in 1..R {
                    t += blk[r * C + c].to_f64() * xi[r];
                }
                acc[c] += t;
            }
        }
        yi.copy_from_slice(&acc);
    }
}

/// [`restrict_rows`] for block sizes known only at run time.
fn restrict_rows_dyn<T: Value>(br: usize, bc: usize, a: &RestrictArgs<'_, T>, y: &mut [f64]) {
    let bl = br * bc;
    for (yi, w) in y.chunks_exact_mut(bc).zip(a.row_ptr.windows(2)) {
        yi.fill(0.0);
        for k in w[0]..w[1] {
            let i = a.fine_row[k] as usize * br;
            let s = a.slot[k] as usize;
            let xi = &a.x[i..i + br];
            let blk = &a.p[s * bl..(s + 1) * bl];
            for (c, yc) in yi.iter_mut().enumerate() {
                let mut t = blk[c].to_f64() * xi[0];
                for r in 1..br {
                    t += blk[r * bc + c].to_f64() * xi[r];
                }
                *yc += t;
            }
        }
    }
}

/// The operands of [`smooth_prolongator`]: `D^{-1}` (`bs x bs` blocks, one per block row) and
/// `P0` (`bs x k` blocks, its pattern contained in the output's).
pub(crate) struct SmoothArgs<'a> {
    pub omega: f64,
    pub bs: usize,
    pub k: usize,
    pub dinv: &'a [f64],
    pub p0: &'a BlockPattern,
    pub p0_values: &'a [f64],
}

/// Overwrites every block `W_iJ` of `w` (on `pattern`) with `P0_iJ - omega (D_i^{-1} W_iJ)`
/// (`P0_iJ` zero where `P0` has no block), parallel over fixed groups of block rows. Each entry is
/// `(-omega * s) + P0` with `s` summed over the block's rows in ascending order from zero.
pub(crate) fn smooth_prolongator(pattern: &BlockPattern, args: &SmoothArgs<'_>, w: &mut [f64]) {
    let (bs, k) = (args.bs, args.k);
    let bl = bs * k;
    let rp = pattern.row_ptr();
    split_rows(rp, bl, SMOOTH_ROWS_PER_TASK, w)
        .into_par_iter()
        .for_each(|(rows, values)| {
            let mut tmp = vec![0.0; bl];
            let base = rp[rows.start];
            for i in rows {
                let dinv = &args.dinv[i * bs * bs..(i + 1) * bs * bs];
                let p0_cols = args.p0.row(i);
                let p0_first = args.p0.row_ptr()[i];
                let mut q = 0;
                for (t, &j) in pattern.row(i).iter().enumerate() {
                    let blk = &mut values[(rp[i] + t - base) * bl..(rp[i] + t + 1 - base) * bl];
                    for r in 0..bs {
                        for c in 0..k {
                            let mut s = 0.0;
                            for m in 0..bs {
                                s += dinv[r * bs + m] * blk[m * k + c];
                            }
                            tmp[r * k + c] = -args.omega * s;
                        }
                    }
                    if p0_cols.get(q) == Some(&j) {
                        let slot = p0_first + q;
                        let p0 = &args.p0_values[slot * bl..(slot + 1) * bl];
                        for (x, y) in tmp.iter_mut().zip(p0) {
                            *x += y;
                        }
                        q += 1;
                    }
                    blk.copy_from_slice(&tmp);
                }
            }
        });
}
