//! [`HaloPlan`]: the messages that copy owned entries of other ranks into a vector's ghost tail.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use comm::Comm;

use crate::dist::RowPartition;
use crate::LinalgError;

/// For a vector of `n_owned` owned blocks (of `block_size` entries) followed by the ghost blocks
/// of global indices `ghosts` (ascending, none owned here): which ghost blocks come from which
/// rank, and which owned blocks this rank sends to which rank. Built once by
/// [`HaloPlan::new`] (collective); [`HaloPlan::update`] then moves values only.
///
/// Invariants: `recv` ranks ascend and their ghost ranges tile `0..ghosts.len()` (ghosts ascend
/// and owners own contiguous ranges, so one owner's ghosts are contiguous); `send` lists, per
/// rank, owned block indices in the order that rank's ghosts ascend.
#[derive(Debug)]
pub struct HaloPlan {
    block_size: usize,
    n_owned: usize,
    ghosts: Vec<u64>,
    recv: Vec<(usize, Range<usize>)>,
    send: Vec<(usize, Vec<u32>)>,
    /// Packed send values, reused by every update (one update at a time).
    send_buffer: Mutex<Vec<f64>>,
    comm: Arc<dyn Comm>,
}

impl HaloPlan {
    /// Collective. `ghosts`: the global indices of this rank's ghost blocks, ascending, unique,
    /// owned by other ranks of `partition`. Errors (agreed on every rank) name the first bad
    /// ghost.
    pub fn new(
        partition: &RowPartition,
        ghosts: Vec<u64>,
        block_size: usize,
    ) -> Result<Self, LinalgError> {
        let comm = partition.comm().clone();
        let (rank, size) = (comm.rank(), comm.size());
        let owned = partition.owned_range();
        let check = (|| {
            for (i, &g) in ghosts.iter().enumerate() {
                if i > 0 && ghosts[i - 1] >= g {
                    return Err(format!(
                        "halo plan: ghost {i} (global {g}) does not ascend after global {}",
                        ghosts[i - 1]
                    ));
                }
                match partition.owner(g) {
                    None => {
                        return Err(format!(
                            "halo plan: ghost {i} (global {g}) beyond the global length {}",
                            partition.global_len()
                        ))
                    }
                    Some(r) if r == rank => {
                        return Err(format!(
                            "halo plan: ghost {i} (global {g}) is owned by this rank ({owned:?})"
                        ))
                    }
                    Some(_) => {}
                }
            }
            Ok(())
        })();
        comm::agree(&*comm, check)?;

        let mut recv: Vec<(usize, Range<usize>)> = Vec::new();
        let mut requests = vec![Vec::new(); size];
        for (i, &g) in ghosts.iter().enumerate() {
            let r = partition.owner(g).expect("checked");
            match recv.last_mut() {
                Some((last, range)) if *last == r => range.end = i + 1,
                _ => recv.push((r, i..i + 1)),
            }
            requests[r].push(g);
        }
        let asked = comm.alltoallv_u64(&requests)?;
        let mut send = Vec::new();
        for (r, gids) in asked.into_iter().enumerate() {
            if gids.is_empty() {
                continue;
            }
            let local = gids
                .iter()
                .map(|&g| (g - owned.start) as u32)
                .collect::<Vec<_>>();
            send.push((r, local));
        }
        let n_send: usize = send.iter().map(|(_, v)| v.len()).sum();
        Ok(Self {
            block_size,
            n_owned: partition.n_owned(),
            ghosts,
            recv,
            send,
            send_buffer: Mutex::new(vec![0.0; n_send * block_size]),
            comm,
        })
    }

    /// A plan of given message lists (local: no messages): `n_owned` blocks of
    /// `block_size` entries, `n_ghosts` ghost blocks filled by `recv` (ranks ascending, ranges
    /// tiling `0..n_ghosts`), `send` the owned blocks each rank gets, in the order of its
    /// ghosts. For messages whose blocks are not a vector's (a matrix's rows,
    /// [`crate::dist::RowGatherPlan`]): the ghosts' global ids are their positions.
    pub(crate) fn from_lists(
        comm: Arc<dyn Comm>,
        block_size: usize,
        n_owned: usize,
        n_ghosts: usize,
        recv: Vec<(usize, Range<usize>)>,
        send: Vec<(usize, Vec<u32>)>,
    ) -> Self {
        let n_send: usize = send.iter().map(|(_, v)| v.len()).sum();
        Self {
            block_size,
            n_owned,
            ghosts: (0..n_ghosts as u64).collect(),
            recv,
            send,
            send_buffer: Mutex::new(vec![0.0; n_send * block_size]),
            comm,
        }
    }

    /// The same messages for blocks of `block_size` entries (no communication): a plan for
    /// other per-vertex data of the same vectors (one entry per node, say).
    pub fn with_block_size(&self, block_size: usize) -> Self {
        Self {
            block_size,
            n_owned: self.n_owned,
            ghosts: self.ghosts.clone(),
            recv: self.recv.clone(),
            send: self.send.clone(),
            send_buffer: Mutex::new(vec![0.0; self.send_volume() / self.block_size * block_size]),
            comm: self.comm.clone(),
        }
    }

    /// Entries per block.
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// Owned blocks of the vectors the plan serves.
    pub fn n_owned(&self) -> usize {
        self.n_owned
    }

    /// Global indices of the ghost blocks, ascending.
    pub fn ghosts(&self) -> &[u64] {
        &self.ghosts
    }

    /// The ranks this rank receives from, with the ghost blocks each one fills.
    pub fn receives(&self) -> &[(usize, Range<usize>)] {
        &self.recv
    }

    /// The ranks this rank sends to, with the owned blocks each one gets.
    pub fn sends(&self) -> &[(usize, Vec<u32>)] {
        &self.send
    }

    /// Values one update sends from this rank (`f64` entries).
    pub fn send_volume(&self) -> usize {
        self.send.iter().map(|(_, v)| v.len()).sum::<usize>() * self.block_size
    }

    /// The communicator.
    pub fn comm(&self) -> &Arc<dyn Comm> {
        &self.comm
    }

    /// Fills the ghost tail of `x` (host entries: `n_owned` blocks, then the ghosts) from the
    /// owners; while the messages travel, runs `overlap` on the owned entries.
    pub fn update_overlapped(
        &self,
        x: &mut [f64],
        overlap: &mut dyn FnMut(&[f64]),
    ) -> Result<(), LinalgError> {
        let bs = self.block_size;
        let expected = (self.n_owned + self.ghosts.len()) * bs;
        if x.len() != expected {
            return Err(LinalgError::LengthMismatch {
                what: "HaloPlan::update: vector",
                expected,
                found: x.len(),
            });
        }
        let (owned, ghost) = x.split_at_mut(self.n_owned * bs);
        let mut buffer = self.send_buffer.lock().unwrap_or_else(|p| p.into_inner());
        let mut at = 0;
        for (_, blocks) in &self.send {
            for &b in blocks {
                let b = b as usize;
                buffer[at..at + bs].copy_from_slice(&owned[b * bs..(b + 1) * bs]);
                at += bs;
            }
        }
        let mut sends = Vec::with_capacity(self.send.len());
        let mut rest: &[f64] = &buffer;
        for (r, blocks) in &self.send {
            let (head, tail) = rest.split_at(blocks.len() * bs);
            sends.push((*r, head));
            rest = tail;
        }
        let mut recvs = Vec::with_capacity(self.recv.len());
        let mut rest: &mut [f64] = ghost;
        for (r, range) in &self.recv {
            let (head, tail) = rest.split_at_mut(range.len() * bs);
            recvs.push((*r, head));
            rest = tail;
        }
        let owned: &[f64] = owned;
        self.comm
            .exchange(&sends, &mut recvs, &mut || overlap(owned))?;
        Ok(())
    }

    /// Fills the ghost tail of `x` from the owners.
    pub fn update(&self, x: &mut [f64]) -> Result<(), LinalgError> {
        self.update_overlapped(x, &mut |_| ())
    }
}
