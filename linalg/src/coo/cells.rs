//! [`CooPlan::of_cell_blocks`]: the plan of a mesh's element blocks, built from the cells around
//! each node instead of a sort of every contribution.
//!
//! An element loop's contributions are structured: cell `e`'s block `(a, b)` is contribution
//! `c = (e npc + a) npc + b` at block `(cells[e npc + a], cells[e npc + b])`. Block row `i`
//! receives, for each incidence `k = e npc + a` of node `i` (ascending: the incidence plan's
//! grouping), the contributions `k npc + b`, `b = 0..npc`, which arrive in ascending order. So
//! each row is grouped by column with one counting pass over its few distinct columns (a marker
//! per column, reset after the row), and the global sort by row of
//! [`CooPlan::from_fn`](super::CooPlan::from_fn) is not needed. The plan is the one `from_fn`
//! builds for the same blocks (equal pattern and grouping), for any thread count.

use std::num::NonZeroUsize;
use std::sync::Mutex;

use rayon::prelude::*;

use super::{CooPlan, SlotOrder, ROWS_PER_TASK};
use crate::rows::split_rows;
use crate::{BlockPattern, LinalgError};

/// No column seen yet in the row (a marker's empty value).
const UNSEEN: u32 = u32::MAX;

/// Task groups a thread of [`group_rows`] (each makes its own marker of every node: with a
/// group a task, 2000 markers of 4.6 MB were filled at 1.16M nodes on 32 threads).
const MARKER_GROUPS_A_THREAD: usize = 4;

impl CooPlan {
    /// The plan of the element blocks of `cells` (flat connectivity, `nodes_per_cell` nodes a
    /// cell): contribution `c = (e npc + a) npc + b` at block `(cells[e npc + a],
    /// cells[e npc + b])`, cut into segments of `segment_len`; the plan
    /// [`Self::from_fn`] builds for those blocks, in a fraction of its time. `incidence` is the
    /// plan of the cells' nodes (contribution `e npc + a` at block `(cells[e npc + a], 0)`, one
    /// block column: the nodal vector's plan), whose construction checked the node ids; it may
    /// have been summed on the host.
    pub fn of_cell_blocks(
        incidence: &CooPlan,
        cells: &[usize],
        nodes_per_cell: usize,
        segment_len: NonZeroUsize,
    ) -> Result<Self, LinalgError> {
        let npc = nodes_per_cell.max(1);
        let n_nodes = incidence.pattern.n_block_rows();
        let n = check_cell_blocks(incidence, cells, npc)?;
        let segment_len = segment_len.get().min(n.max(1));
        let (pattern, slot_ptr, contributions) = incidence.with_slot_order(|order| {
            group_rows(n_nodes, incidence.pattern.row_ptr(), order, cells, npc, n)
        });
        Ok(Self {
            pattern: std::sync::Arc::new(pattern),
            n_contributions: n,
            segment_len,
            grouped: Mutex::new(Some(SlotOrder {
                slot_ptr,
                contributions,
            })),
            runs: std::sync::OnceLock::new(),
        })
    }
}

/// Checks the inputs of [`CooPlan::of_cell_blocks`] (`npc` at least one): `incidence` is the
/// plan of `cells`' nodes (one block column, a contribution per cell node), every node is a row
/// of it, and the element blocks' contributions fit `u32`. Returns their count.
pub(crate) fn check_cell_blocks(
    incidence: &CooPlan,
    cells: &[usize],
    npc: usize,
) -> Result<usize, LinalgError> {
    let n_nodes = incidence.pattern.n_block_rows();
    if incidence.pattern.n_block_cols() != 1
        || incidence.n_contributions != cells.len()
        || !cells.len().is_multiple_of(npc)
    {
        return Err(LinalgError::LengthMismatch {
            what: "CooPlan::of_cell_blocks incidence plan contributions",
            expected: cells.len() / npc * npc,
            found: incidence.n_contributions,
        });
    }
    if let Some(index) = cells.par_iter().position_first(|&node| node >= n_nodes) {
        return Err(LinalgError::ContributionOutOfRange {
            index,
            row: cells[index],
            col: 0,
            n_block_rows: n_nodes,
            n_block_cols: 1,
        });
    }
    cells
        .len()
        .checked_mul(npc)
        .filter(|&n| n <= u32::MAX as usize)
        .ok_or(LinalgError::TooManyContributions {
            found: cells.len().saturating_mul(npc),
        })
}

/// The pattern, `slot_ptr` and slot-major contributions of the element blocks (see
/// [`CooPlan::of_cell_blocks`]): rows in fixed tasks of [`ROWS_PER_TASK`], each row grouped by
/// column through markers (one per column, per task group of rayon, a few groups a thread; every
/// row leaves them unseen).
fn group_rows(
    n_nodes: usize,
    incidence_row_ptr: &[usize],
    order: &SlotOrder,
    cells: &[usize],
    npc: usize,
    n: usize,
) -> (BlockPattern, Vec<u32>, Vec<u32>) {
    // node i's incidences (`e npc + a`, ascending); a node in no cell has no slot
    let incidences = |i: usize| -> &[u32] {
        let (s, e) = (incidence_row_ptr[i], incidence_row_ptr[i + 1]);
        if s == e {
            &[]
        } else {
            &order.contributions[order.slot_ptr[s] as usize..order.slot_ptr[e] as usize]
        }
    };
    let mut row_start = Vec::with_capacity(n_nodes + 1);
    row_start.push(0usize);
    for i in 0..n_nodes {
        row_start.push(row_start[i] + incidences(i).len() * npc);
    }
    debug_assert_eq!(row_start[n_nodes], n);
    let mut by_slot = vec![0u32; n];
    // per row: its distinct columns in order of appearance, their counts, then (sorted) their
    // next output positions
    struct Scratch {
        marker: Vec<u32>,
        distinct: Vec<u32>,
        count: Vec<u32>,
        sorted: Vec<u64>,
    }
    let tasks = split_rows(&row_start, 1, ROWS_PER_TASK, &mut by_slot);
    // a few task groups a thread: each group fills a marker of every node once
    let per_group = tasks
        .len()
        .div_ceil(MARKER_GROUPS_A_THREAD * rayon::current_num_threads())
        .max(1);
    let groups: Vec<Group> = tasks
        .into_par_iter()
        .with_min_len(per_group)
        .map_init(
            || Scratch {
                marker: vec![UNSEEN; n_nodes],
                distinct: Vec::new(),
                count: Vec::new(),
                sorted: Vec::new(),
            },
            |s, (range, out)| {
                let mut g = Group {
                    row_nnz: Vec::with_capacity(range.len()),
                    col_idx: Vec::new(),
                    slot_ptr: Vec::new(),
                };
                // at most one column per contribution: one reservation, no regrowth
                let most = row_start[range.end] - row_start[range.start];
                g.col_idx.reserve(most);
                g.slot_ptr.reserve(most);
                let base = row_start[range.start];
                for i in range {
                    let incident = incidences(i);
                    s.distinct.clear();
                    s.count.clear();
                    for &k in incident {
                        let e = k as usize / npc;
                        for &col in &cells[e * npc..(e + 1) * npc] {
                            let m = s.marker[col];
                            if m == UNSEEN {
                                s.marker[col] = s.distinct.len() as u32;
                                s.distinct.push(col as u32);
                                s.count.push(1);
                            } else {
                                s.count[m as usize] += 1;
                            }
                        }
                    }
                    s.sorted.clear();
                    s.sorted.extend(
                        s.distinct
                            .iter()
                            .enumerate()
                            .map(|(local, &col)| (col as u64) << 32 | local as u64),
                    );
                    s.sorted.sort_unstable();
                    // each column's first position in `out`, in column order
                    let mut next = row_start[i] - base;
                    for &key in &s.sorted {
                        let local = key as u32 as usize;
                        g.col_idx.push((key >> 32) as u32);
                        g.slot_ptr.push((base + next) as u32);
                        let count = s.count[local] as usize;
                        s.count[local] = next as u32;
                        next += count;
                    }
                    g.row_nnz.push(s.sorted.len());
                    // ascending contributions, each to the next place of its column's slot
                    for &k in incident {
                        let e = k as usize / npc;
                        let first = k * npc as u32;
                        for (b, &col) in cells[e * npc..(e + 1) * npc].iter().enumerate() {
                            let local = s.marker[col] as usize;
                            out[s.count[local] as usize] = first + b as u32;
                            s.count[local] += 1;
                        }
                    }
                    for &col in &s.distinct {
                        s.marker[col as usize] = UNSEEN;
                    }
                }
                g
            },
        )
        .collect();
    let (row_ptr, col_idx, mut slot_ptr) = concatenate(n_nodes, groups);
    slot_ptr.push(n as u32);
    let pattern = BlockPattern::new_trusted(n_nodes, n_nodes, row_ptr, col_idx);
    (pattern, slot_ptr, by_slot)
}

/// The rows of one task of [`group_rows`]: each row's slot count, then its columns and slots'
/// first positions.
struct Group {
    row_nnz: Vec<usize>,
    col_idx: Vec<u32>,
    slot_ptr: Vec<u32>,
}

/// The groups' rows in order: `row_ptr` (`n_rows + 1`), `col_idx` and `slot_ptr` (`nnz`),
/// copied in parallel into their places (fixed by the groups' sizes alone).
fn concatenate(n_rows: usize, groups: Vec<Group>) -> (Vec<usize>, Vec<u32>, Vec<u32>) {
    let mut firsts = Vec::with_capacity(groups.len() + 1);
    let (mut rows, mut slots) = (0usize, 0usize);
    for g in &groups {
        firsts.push((rows, slots));
        rows += g.row_nnz.len();
        slots += g.col_idx.len();
    }
    debug_assert_eq!(rows, n_rows);
    let nnz = slots;
    let mut row_ptr = vec![0usize; n_rows + 1];
    let mut col_idx = vec![0u32; nnz];
    let mut slot_ptr = Vec::with_capacity(nnz + 1);
    slot_ptr.resize(nnz, 0u32);
    row_ptr[n_rows] = nnz;
    // each group's pieces of the three outputs
    let mut pieces = Vec::with_capacity(groups.len());
    let (mut rp, mut ci, mut sp) = (&mut row_ptr[..n_rows], &mut col_idx[..], &mut slot_ptr[..]);
    for g in &groups {
        let (r, rest) = std::mem::take(&mut rp).split_at_mut(g.row_nnz.len());
        rp = rest;
        let (c, rest) = std::mem::take(&mut ci).split_at_mut(g.col_idx.len());
        ci = rest;
        let (s, rest) = std::mem::take(&mut sp).split_at_mut(g.slot_ptr.len());
        sp = rest;
        pieces.push((r, c, s));
    }
    pieces
        .into_par_iter()
        .zip(groups.par_iter().zip(&firsts))
        .for_each(|((r, c, s), (g, &(_, first_slot)))| {
            let mut at = first_slot;
            for (dst, &k) in r.iter_mut().zip(&g.row_nnz) {
                *dst = at;
                at += k;
            }
            c.copy_from_slice(&g.col_idx);
            s.copy_from_slice(&g.slot_ptr);
        });
    (row_ptr, col_idx, slot_ptr)
}
