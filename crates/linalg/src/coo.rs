//! [`CooPlan`]: the symbolic step of blocked COO assembly, and its numeric `assemble` step.
//!
//! Calling order: build the plan once from the block coordinates of all contributions
//! ([`CooPlan::new`]), make a matrix on its pattern (`Bsr::zeros(plan.pattern().clone(), br, bc)`),
//! then call [`CooPlan::assemble`] with new contribution values as often as needed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rayon::prelude::*;

use crate::kernels::sum::sum_slots_any;
use crate::rows::split_rows;
use crate::{BlockPattern, Bsr, LinalgError};

/// Contributions per counting task of the row sort.
const SORT_CHUNK: usize = 1 << 16;
/// Block rows per task when grouping a row's contributions by column.
const ROWS_PER_TASK: usize = 512;
/// Slots per task of the numeric sums (fixed: the split never depends on the thread count).
const SLOTS_PER_TASK: usize = 2048;

/// Assembly plan: the pattern of the summed matrix and, for each of its slots, the indices of the
/// contributions that land there, in ascending contribution order (CSR `slot -> contributions`).
///
/// Invariants: `slot_ptr.len() == nnz + 1`, `slot_ptr[nnz] == n_contributions`, and `contributions`
/// is a permutation of `0..n_contributions`.
#[derive(Debug, Clone)]
pub struct CooPlan {
    pattern: Arc<BlockPattern>,
    slot_ptr: Vec<usize>,
    contributions: Vec<u32>,
}

impl CooPlan {
    /// Builds the plan for contributions `c` at blocks `(rows[c], cols[c])`; duplicates and any order
    /// are allowed. A parallel stable counting sort by row, then a small sort within each row.
    pub fn new(
        n_block_rows: usize,
        n_block_cols: usize,
        rows: &[u32],
        cols: &[u32],
    ) -> Result<Self, LinalgError> {
        if rows.len() != cols.len() {
            return Err(LinalgError::LengthMismatch {
                what: "CooPlan cols",
                expected: rows.len(),
                found: cols.len(),
            });
        }
        let n = rows.len();
        if n > u32::MAX as usize {
            return Err(LinalgError::TooManyContributions { found: n });
        }
        for (what, value) in [
            ("n_block_rows", n_block_rows),
            ("n_block_cols", n_block_cols),
        ] {
            if value > u32::MAX as usize {
                return Err(LinalgError::DimensionTooLarge { what, value });
            }
        }
        let bad = rows
            .par_chunks(SORT_CHUNK)
            .zip(cols.par_chunks(SORT_CHUNK))
            .enumerate()
            .filter_map(|(t, (r, c))| {
                let ok = |(&i, &j): (&u32, &u32)| {
                    (i as usize) < n_block_rows && (j as usize) < n_block_cols
                };
                r.iter()
                    .zip(c)
                    .position(|e| !ok(e))
                    .map(|k| t * SORT_CHUNK + k)
            })
            .min();
        if let Some(index) = bad {
            return Err(LinalgError::ContributionOutOfRange {
                index,
                row: rows[index] as usize,
                col: cols[index] as usize,
                n_block_rows,
                n_block_cols,
            });
        }

        let (row_start, keys) = sort_by_row(n_block_rows, rows, cols);
        let (pattern, slot_ptr, contributions) =
            group_by_slot(n_block_rows, n_block_cols, &row_start, &keys);
        Ok(Self {
            pattern: Arc::new(pattern),
            slot_ptr,
            contributions,
        })
    }

    /// The pattern of the assembled matrix (sorted unique blocks of each row).
    pub fn pattern(&self) -> &Arc<BlockPattern> {
        &self.pattern
    }

    /// Number of contributions the plan was built for.
    pub fn n_contributions(&self) -> usize {
        self.contributions.len()
    }

    /// Offsets into [`Self::slot_contributions`] per slot (`nnz + 1` entries).
    pub fn slot_ptr(&self) -> &[usize] {
        &self.slot_ptr
    }

    /// Contribution indices grouped by slot, ascending within a slot.
    pub fn slot_contributions(&self) -> &[u32] {
        &self.contributions
    }

    /// Overwrites `matrix`'s values with the sums of `values` (contribution-major, `block_len` values
    /// per contribution, blocks row-major). `matrix` must carry the plan's pattern.
    pub fn assemble(&self, values: &[f64], matrix: &mut Bsr) -> Result<(), LinalgError> {
        if !Arc::ptr_eq(matrix.pattern(), &self.pattern) && **matrix.pattern() != *self.pattern {
            return Err(LinalgError::PatternMismatch {
                what: "CooPlan::assemble",
            });
        }
        let block_len = matrix.block_len();
        self.assemble_slots(values, block_len, matrix.values_mut())
    }

    /// Like [`Self::assemble`] into a plain slice of `nnz * block_len` values (e.g. vector assembly
    /// with a pattern of one block column). Each slot sums its contributions in ascending order, so the
    /// result is deterministic; parallel over fixed groups of slots.
    pub fn assemble_slots(
        &self,
        values: &[f64],
        block_len: usize,
        out: &mut [f64],
    ) -> Result<(), LinalgError> {
        if block_len == 0 {
            return Err(LinalgError::InvalidBlockSize {
                block_rows: 0,
                block_cols: 0,
            });
        }
        let expected = self.n_contributions() * block_len;
        if values.len() != expected {
            return Err(LinalgError::LengthMismatch {
                what: "CooPlan values",
                expected,
                found: values.len(),
            });
        }
        let expected = self.pattern.nnz() * block_len;
        if out.len() != expected {
            return Err(LinalgError::LengthMismatch {
                what: "CooPlan output",
                expected,
                found: out.len(),
            });
        }
        out.par_chunks_mut(SLOTS_PER_TASK * block_len)
            .enumerate()
            .for_each(|(task, o)| {
                let first = task * SLOTS_PER_TASK;
                let slot_ptr = &self.slot_ptr[first..=first + o.len() / block_len];
                sum_slots_any(block_len, slot_ptr, &self.contributions, values, o);
            });
        Ok(())
    }
}

/// Stable parallel counting sort of the contributions by row. Returns `row_start`
/// (`n_block_rows + 1` offsets) and, ordered by row and ascending contribution index within a row,
/// the key `col << 32 | index` of every contribution. Every chunk of contributions counts its rows,
/// offsets are laid out chunk after chunk within each row, and every chunk scatters its keys: the
/// output does not depend on the number of chunks.
fn sort_by_row(n_block_rows: usize, rows: &[u32], cols: &[u32]) -> (Vec<usize>, Vec<AtomicU64>) {
    let n = rows.len();
    let n_chunks = n
        .div_ceil(SORT_CHUNK)
        .clamp(1, rayon::current_num_threads().max(1));
    let chunk = n.div_ceil(n_chunks).max(1);
    let mut next: Vec<Vec<u32>> = rows
        .par_chunks(chunk)
        .map(|rc| {
            let mut c = vec![0u32; n_block_rows];
            rc.iter().for_each(|&r| c[r as usize] += 1);
            c
        })
        .collect();
    // next[t][r] becomes the first output position of chunk t's contributions in row r.
    let mut row_start = Vec::with_capacity(n_block_rows + 1);
    let mut running = 0usize;
    for r in 0..n_block_rows {
        row_start.push(running);
        for c in next.iter_mut() {
            let k = c[r] as usize;
            c[r] = running as u32;
            running += k;
        }
    }
    row_start.push(running);
    let keys: Vec<AtomicU64> = (0..n).into_par_iter().map(|_| AtomicU64::new(0)).collect();
    rows.par_chunks(chunk)
        .zip(cols.par_chunks(chunk))
        .zip(next.par_iter_mut())
        .enumerate()
        .for_each(|(t, ((rc, cc), next))| {
            for (k, (&r, &c)) in rc.iter().zip(cc).enumerate() {
                let pos = &mut next[r as usize];
                // Positions are disjoint across chunks by construction; relaxed stores suffice because
                // rayon's join synchronises before anyone reads.
                keys[*pos as usize]
                    .store((c as u64) << 32 | (t * chunk + k) as u64, Ordering::Relaxed);
                *pos += 1;
            }
        });
    (row_start, keys)
}

/// Per block row: sorts the row's keys `col << 32 | index`, which groups its contributions by column
/// (the pattern row is the distinct columns) in ascending contribution order within a column. A row
/// keeps the output range it had in `keys`, so row groups write disjoint parts of the result in
/// parallel.
fn group_by_slot(
    n_block_rows: usize,
    n_block_cols: usize,
    row_start: &[usize],
    keys: &[AtomicU64],
) -> (BlockPattern, Vec<usize>, Vec<u32>) {
    let n = keys.len();
    let mut contributions = vec![0u32; n];
    let tasks = split_rows(row_start, 1, ROWS_PER_TASK, &mut contributions);
    struct Group {
        row_nnz: Vec<usize>,
        col_idx: Vec<u32>,
        slot_ptr: Vec<usize>,
    }
    let groups: Vec<Group> = tasks
        .into_par_iter()
        .map(|(range, out)| {
            let mut g = Group {
                row_nnz: Vec::with_capacity(range.len()),
                col_idx: Vec::new(),
                slot_ptr: Vec::new(),
            };
            let mut local = Vec::new();
            let base = row_start[range.start];
            for r in range {
                let (s, e) = (row_start[r], row_start[r + 1]);
                local.clear();
                local.extend(keys[s..e].iter().map(|k| k.load(Ordering::Relaxed)));
                local.sort_unstable();
                let nnz_before = g.col_idx.len();
                for (pos, &key) in (s..e).zip(&local) {
                    let col = (key >> 32) as u32;
                    if g.col_idx.len() == nnz_before || g.col_idx[g.col_idx.len() - 1] != col {
                        g.col_idx.push(col);
                        g.slot_ptr.push(pos);
                    }
                    out[pos - base] = key as u32;
                }
                g.row_nnz.push(g.col_idx.len() - nnz_before);
            }
            g
        })
        .collect();
    let nnz: usize = groups.iter().map(|g| g.col_idx.len()).sum();
    let mut row_ptr = Vec::with_capacity(n_block_rows + 1);
    let mut col_idx = Vec::with_capacity(nnz);
    let mut slot_ptr = Vec::with_capacity(nnz + 1);
    row_ptr.push(0);
    for g in groups {
        for k in g.row_nnz {
            row_ptr.push(row_ptr[row_ptr.len() - 1] + k);
        }
        col_idx.extend_from_slice(&g.col_idx);
        slot_ptr.extend_from_slice(&g.slot_ptr);
    }
    slot_ptr.push(n);
    let pattern = BlockPattern::new_trusted(n_block_rows, n_block_cols, row_ptr, col_idx);
    (pattern, slot_ptr, contributions)
}
