//! The host's Galerkin product in two passes over fixed batches of fine rows; per batch
//! 1. the rows `W_i = A_i P` of the batch, in parallel over fixed groups of rows, each group into
//!    its own buffer (module `wrow`);
//! 2. `A_c[I] += P_iI^T W_i` for the fine rows `i` of the batch in row `I` of `P^T`, ascending, in
//!    parallel over fixed groups of coarse rows, each group owning its rows of `A_c`.
//!
//! Every block of `A_c` therefore sums its terms in ascending fine-row order, whatever the batch
//! size and the thread count. Memory: the `W` rows of one batch, a cursor per coarse row and
//! per-thread markers, all in the caller's [`PtapWorkspace`]; the plan stores nothing beyond
//! `P^T`'s pattern and slot map.

use std::ops::Range;

use rayon::prelude::*;

use super::workspace::PtapWorkspace;
use super::wrow::{unmark, w_row, Operands};
use crate::backend::host::gemm::BlockProduct;
use crate::rows::split_rows;
use crate::BlockPattern;

/// Fine rows per batch of the default plan.
/// 4096: on 16 cores (ex56 66^3) the hot product took 0.11-0.12 s with it against 0.34-0.70 s
/// with 256 (two parallel phases per batch: their joins dominated) and 0.18-0.22 s for the
/// colour-ordered fused product this one replaced (stop 52 call 7); 16384 gained 10 % more for
/// four times the batch's `W` rows, which the workspace keeps.
pub(crate) const ROWS_PER_BATCH: usize = 4096;
/// Fine rows per task of step 1.
pub(crate) const W_ROWS_PER_TASK: usize = 16;
/// Values per task when zeroing `A_c`.
const ZERO_VALUES_PER_TASK: usize = 1 << 14;
/// Coarse rows per task of step 2.
const COARSE_ROWS_PER_TASK: usize = 16;

/// The operands of one streamed product; `m_ap` computes blocks of `A P` (`b x b` times `b x c`),
/// `m_ptw` blocks of `P^T W` (`(b x c)^T` times `b x c`).
pub(crate) struct StreamedArgs<'a> {
    pub ops: Operands<'a>,
    /// Pattern of `P^T` and, per block of it, the slot of `P` holding the block.
    pub pt: &'a BlockPattern,
    pub pt_slots: &'a [u32],
    /// Pattern of `A_c`.
    pub ac: &'a BlockPattern,
    /// Fine rows per batch (>= 1).
    pub rows_per_batch: usize,
}

/// Rows of `W` computed by one task of step 1: row `r` of the task has the blocks
/// `ptr[r]..ptr[r + 1]` (columns in `cols`, values at the same block positions in `vals`).
#[derive(Debug, Default)]
pub(crate) struct WRows {
    ptr: Vec<usize>,
    cols: Vec<u32>,
    vals: Vec<f64>,
}

/// One task of step 2: its coarse rows, their values in `A_c` and their cursors into `P^T` (the
/// first block of each row whose fine row is not yet done).
type ScatterTask<'a> = (Range<usize>, &'a mut [f64], &'a mut [usize]);

/// Overwrites `ac_values` with `P^T A P` (see the module documentation for the order of sums),
/// with the scratch of `ws` (sized for this plan's batches and coarse rows).
pub(crate) fn streamed_numeric<M1: BlockProduct, M2: BlockProduct>(
    m_ap: M1,
    m_ptw: M2,
    args: &StreamedArgs<'_>,
    ws: &mut PtapWorkspace,
    ac_values: &mut [f64],
) {
    let obl = m_ptw.rows() * m_ptw.cols();
    let (n_fine, n_coarse) = (args.ops.p.n_block_rows(), args.ac.n_block_rows());
    ac_values
        .par_chunks_mut(ZERO_VALUES_PER_TASK)
        .for_each(|v| v.fill(0.0));
    let PtapWorkspace {
        w_markers,
        scatter_markers,
        w_tasks,
        cursors,
        ..
    } = ws;
    cursors.copy_from_slice(&args.pt.row_ptr()[..n_coarse]);
    let mut scatter: Vec<ScatterTask<'_>> =
        split_rows(args.ac.row_ptr(), obl, COARSE_ROWS_PER_TASK, ac_values)
            .into_iter()
            .zip(cursors.chunks_mut(COARSE_ROWS_PER_TASK))
            .map(|((rows, values), cursors)| (rows, values, cursors))
            .collect();
    for start in (0..n_fine).step_by(args.rows_per_batch) {
        let batch = start..(start + args.rows_per_batch).min(n_fine);
        w_tasks.par_iter_mut().enumerate().for_each(|(g, w)| {
            let first = (batch.start + g * W_ROWS_PER_TASK).min(batch.end);
            let fine = first..(first + W_ROWS_PER_TASK).min(batch.end);
            w_markers.with(|marker| {
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU supports AVX2, checked just above.
                    unsafe { w_rows_avx2(m_ap, &args.ops, fine, marker, w) };
                    return;
                }
                w_rows(m_ap, &args.ops, fine, marker, w);
            });
        });
        let w_tasks = &*w_tasks;
        scatter.par_iter_mut().for_each(|task| {
            let step = Step {
                args,
                w_tasks,
                batch: batch.clone(),
            };
            scatter_markers.with(|marker| {
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU supports AVX2, checked just above.
                    unsafe { scatter_rows_avx2(m_ap, m_ptw, &step, task, marker) };
                    return;
                }
                scatter_rows(m_ap, m_ptw, &step, task, marker);
            });
        });
    }
}

/// Step 1 for the fine rows `rows` into `w` (cleared first).
#[inline(always)]
fn w_rows<M: BlockProduct>(
    m_ap: M,
    ops: &Operands<'_>,
    rows: Range<usize>,
    marker: &mut [u32],
    w: &mut WRows,
) {
    w.ptr.clear();
    w.ptr.push(0);
    w.cols.clear();
    w.vals.clear();
    for i in rows {
        let start = w.cols.len();
        w_row(m_ap, ops, i, marker, &mut w.cols, &mut w.vals);
        unmark(marker, &w.cols[start..]);
        w.ptr.push(w.cols.len());
    }
}

/// [`w_rows`] compiled for AVX2 (no FMA: bit-identical to the baseline build).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn w_rows_avx2<M: BlockProduct>(
    m_ap: M,
    ops: &Operands<'_>,
    rows: Range<usize>,
    marker: &mut [u32],
    w: &mut WRows,
) {
    w_rows(m_ap, ops, rows, marker, w);
}

/// What step 2 of one batch reads.
struct Step<'a> {
    args: &'a StreamedArgs<'a>,
    w_tasks: &'a [WRows],
    batch: Range<usize>,
}

/// Step 2 for one task: for each of its coarse rows `I` met by the batch, marks row `I`'s columns
/// (`marker[J]` = position of `J` in the row), then adds `P_iI^T W_i` for the batch's fine rows `i`
/// of row `I` of `P^T`, ascending, advancing the row's cursor past them.
#[inline(always)]
fn scatter_rows<M1: BlockProduct, M2: BlockProduct>(
    m_ap: M1,
    m_ptw: M2,
    step: &Step<'_>,
    task: &mut ScatterTask<'_>,
    marker: &mut [u32],
) {
    let (pbl, obl) = (m_ap.inner() * m_ap.cols(), m_ptw.rows() * m_ptw.cols());
    let args = step.args;
    let (ac_ptr, ac_cols) = (args.ac.row_ptr(), args.ac.col_idx());
    let (pt_ptr, pt_fine) = (args.pt.row_ptr(), args.pt.col_idx());
    let p_values = args.ops.p_values;
    let (rows, out, cursors) = task;
    let base = ac_ptr[rows.start];
    for (r, cursor) in rows.clone().zip(cursors.iter_mut()) {
        let end = pt_ptr[r + 1];
        if *cursor == end || pt_fine[*cursor] as usize >= step.batch.end {
            continue;
        }
        for (q, &j) in ac_cols[ac_ptr[r]..ac_ptr[r + 1]].iter().enumerate() {
            marker[j as usize] = q as u32;
        }
        let row = &mut out[(ac_ptr[r] - base) * obl..(ac_ptr[r + 1] - base) * obl];
        while *cursor < end && (pt_fine[*cursor] as usize) < step.batch.end {
            let local = pt_fine[*cursor] as usize - step.batch.start;
            let s = args.pt_slots[*cursor] as usize;
            let pblk = &p_values[s * pbl..(s + 1) * pbl];
            let w = &step.w_tasks[local / W_ROWS_PER_TASK];
            let wr = local % W_ROWS_PER_TASK;
            for l in w.ptr[wr]..w.ptr[wr + 1] {
                let q = marker[w.cols[l] as usize] as usize;
                m_ptw.mul_add(
                    pblk,
                    &w.vals[l * pbl..(l + 1) * pbl],
                    &mut row[q * obl..(q + 1) * obl],
                );
            }
            *cursor += 1;
        }
    }
}

/// [`scatter_rows`] compiled for AVX2 (no FMA: bit-identical to the baseline build).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn scatter_rows_avx2<M1: BlockProduct, M2: BlockProduct>(
    m_ap: M1,
    m_ptw: M2,
    step: &Step<'_>,
    task: &mut ScatterTask<'_>,
    marker: &mut [u32],
) {
    scatter_rows(m_ap, m_ptw, step, task, marker);
}
