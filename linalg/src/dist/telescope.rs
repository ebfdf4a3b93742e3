//! Rows moved onto fewer ranks, the global numbering kept: how a distributed hierarchy gathers
//! a coarse level too small to keep every rank busy onto its first ranks (PETSc GAMG's
//! `process_eq_limit`). [`RowPartition::even_on_first`] says who owns what afterwards,
//! [`move_rows`] carries per-row data (ids, near-null rows) to the new owners, and
//! [`DistBsr::with_col_partition`] re-splits a matrix whose *columns* change owners (a
//! prolongator whose coarse vertices move), its rows staying where they are.

use std::ops::Range;

use crate::dist::{DistBsr, DistPattern, RowPartition};
use crate::LinalgError;

impl RowPartition {
    /// The even split of `global_len` indices over the first `ranks` ranks of `comm` (clamped
    /// to `1..=size`); the others own nothing. No communication.
    pub fn even_on_first(
        comm: std::sync::Arc<dyn comm::Comm>,
        global_len: u64,
        ranks: usize,
    ) -> Self {
        let size = comm.size();
        let active = ranks.clamp(1, size) as u128;
        let offsets = (0..=size)
            .map(|r| (global_len as u128 * (r as u128).min(active) / active) as u64)
            .collect();
        Self::from_offsets(offsets, comm)
    }

    /// Number of ranks owning at least one index.
    pub fn active_ranks(&self) -> usize {
        (0..self.comm().size())
            .filter(|&r| !self.range(r).is_empty())
            .count()
    }
}

/// The part of `mine` (this rank's owned range under one partition) that rank `r` owns under
/// `to`, as offsets into `mine`.
fn overlap(mine: &Range<u64>, to: &RowPartition, r: usize) -> Range<usize> {
    let theirs = to.range(r);
    let start = mine.start.max(theirs.start).min(mine.end);
    let end = mine.end.min(theirs.end).max(start);
    (start - mine.start) as usize..(end - mine.start) as usize
}

/// Collective. Rows of `width` values, owned under `from` (`rows.len() == from.n_owned() *
/// width`), sent to their owners under `to` (the same global length and ranks); returns this
/// rank's rows under `to`, in global order. Messages only between ranks whose ranges meet.
pub fn move_rows<T: Copy>(
    from: &RowPartition,
    to: &RowPartition,
    rows: &[T],
    width: usize,
    alltoallv: impl FnOnce(&[Vec<T>]) -> Result<Vec<Vec<T>>, comm::CommError>,
) -> Result<Vec<T>, LinalgError> {
    let comm = from.comm().clone();
    let check = if from.global_len() != to.global_len() || to.comm().size() != comm.size() {
        Err(format!(
            "moving rows: partitions of {} and {} indices over {} and {} ranks",
            from.global_len(),
            to.global_len(),
            comm.size(),
            to.comm().size()
        ))
    } else if rows.len() != from.n_owned() * width {
        Err(format!(
            "moving rows: {} values for {} owned rows of {width}",
            rows.len(),
            from.n_owned()
        ))
    } else {
        Ok(())
    };
    comm::agree(&*comm, check)?;
    let mine = from.owned_range();
    let send: Vec<Vec<T>> = (0..comm.size())
        .map(|r| {
            let o = overlap(&mine, to, r);
            rows[o.start * width..o.end * width].to_vec()
        })
        .collect();
    // Ranks send their rows in rank order, which is global order (contiguous partitions).
    Ok(alltoallv(&send)?.concat())
}

impl DistBsr {
    /// Collective. The same matrix (rows, values, global column numbering) with its columns
    /// owned as `cols` says (the same global length and ranks): the diagonal and off-diagonal
    /// parts and the halo plan split afresh. Host only.
    pub fn with_col_partition(&self, cols: RowPartition) -> Result<DistBsr, LinalgError> {
        let pattern = self.pattern();
        let old = pattern.col_partition();
        if cols.global_len() != old.global_len() {
            return Err(LinalgError::LengthMismatch {
                what: "DistBsr::with_col_partition: global columns",
                expected: old.global_len() as usize,
                found: cols.global_len() as usize,
            });
        }
        let first = old.owned_range().start;
        let ghosts = pattern.halo().ghosts();
        let bl = pattern.block_rows() * pattern.block_cols();
        let (d, o) = (self.diag(), self.offd());
        let (dp, op) = (d.pattern(), o.pattern());
        let (dv, ov) = (d.host()?, o.host()?);
        let mut row_ptr = vec![0usize];
        let mut globals = Vec::with_capacity(dp.nnz() + op.nnz());
        let mut values = Vec::with_capacity((dp.nnz() + op.nnz()) * bl);
        for r in 0..pattern.partition().n_owned() {
            for s in dp.row_ptr()[r]..dp.row_ptr()[r + 1] {
                globals.push(first + u64::from(dp.col_idx()[s]));
                values.extend_from_slice(&dv[s * bl..(s + 1) * bl]);
            }
            for s in op.row_ptr()[r]..op.row_ptr()[r + 1] {
                globals.push(ghosts[op.col_idx()[s] as usize]);
                values.extend_from_slice(&ov[s * bl..(s + 1) * bl]);
            }
            row_ptr.push(globals.len());
        }
        let moved = DistPattern::new_rect(
            pattern.partition().clone(),
            cols,
            pattern.block_rows(),
            pattern.block_cols(),
            &row_ptr,
            &globals,
        )?;
        DistBsr::from_values(moved, &values)
    }
}
