//! [`RowPartition`]: which rank owns which global (block) rows.

use std::ops::Range;
use std::sync::Arc;

use comm::Comm;

use crate::LinalgError;

/// Contiguous ownership of `0..global_len` global indices (block rows or nodes): rank `r` owns
/// `offsets[r]..offsets[r + 1]`. Identical on every rank.
#[derive(Clone, Debug)]
pub struct RowPartition {
    offsets: Vec<u64>,
    comm: Arc<dyn Comm>,
}

impl RowPartition {
    /// Collective: every rank passes how many consecutive global indices it owns, in rank order.
    pub fn new(comm: Arc<dyn Comm>, n_owned: usize) -> Result<Self, LinalgError> {
        let all = comm.allgatherv_u64(&[n_owned as u64])?;
        let mut offsets = Vec::with_capacity(all.len() + 1);
        offsets.push(0);
        for v in &all {
            let last = *offsets.last().expect("non-empty");
            offsets.push(last + v[0]);
        }
        Ok(Self { offsets, comm })
    }

    /// The even split of `global_len` indices over the ranks of `comm` (rank `r` owns
    /// `global_len * r / size ..`); no communication.
    pub fn even(comm: Arc<dyn Comm>, global_len: u64) -> Self {
        let size = comm.size() as u64;
        let offsets = (0..=size)
            .map(|r| (global_len as u128 * r as u128 / size as u128) as u64)
            .collect();
        Self { offsets, comm }
    }

    /// From the offsets `0 = o[0] <= o[1] <= .. <= o[size]` (identical on every rank).
    pub(crate) fn from_offsets(offsets: Vec<u64>, comm: Arc<dyn Comm>) -> Self {
        debug_assert!(offsets.len() == comm.size() + 1 && offsets.windows(2).all(|w| w[0] <= w[1]));
        Self { offsets, comm }
    }

    /// The ranks sharing the indices.
    pub fn comm(&self) -> &Arc<dyn Comm> {
        &self.comm
    }

    /// Global indices over all ranks.
    pub fn global_len(&self) -> u64 {
        *self.offsets.last().expect("non-empty")
    }

    /// The global indices rank `r` owns.
    pub fn range(&self, r: usize) -> Range<u64> {
        self.offsets[r]..self.offsets[r + 1]
    }

    /// The global indices this rank owns.
    pub fn owned_range(&self) -> Range<u64> {
        self.range(self.comm.rank())
    }

    /// Number of indices this rank owns.
    pub fn n_owned(&self) -> usize {
        let r = self.owned_range();
        (r.end - r.start) as usize
    }

    /// The rank owning global index `g`, or `None` past the end.
    pub fn owner(&self, g: u64) -> Option<usize> {
        if g >= self.global_len() {
            return None;
        }
        // The last rank whose range starts at or before g (ranks may own nothing).
        Some(self.offsets.partition_point(|&o| o <= g) - 1)
    }
}
