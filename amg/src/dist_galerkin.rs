//! The distributed Galerkin product `A_c = P^T A P` split into a symbolic plan and a numeric
//! phase, for Newton's hot updates (new values of `A`, the same `P`).
//!
//! [`GalerkinProductPlan::new`] (collective, once per pattern of `A` and version of `P`) keeps
//! everything the product's structure decides:
//! - the gather that makes the local `A` (a rank's owned rows, columns at the serial positions
//!   of its local vertices) from the `diag` / `offd` values of the distributed `A`: whole
//!   blocks, no sorting per call;
//! - the [`SpgemmPlan`]s of `AP = A_local P_ext` and `partial = P_owned^T AP`, and
//!   `P_owned^T`'s values;
//! - the [`ReductionPlan`]: which partial blocks go to which rank, and for every block of the
//!   coarse operator (its [`DistPattern`], fixed here) the received blocks that sum into it,
//!   in the order of the one-off product (messages in rank order, the first contribution
//!   assigned, the later ones added), so the planned product has the one-off product's bits.
//!
//! [`GalerkinProductPlan::numeric`] (collective) then gathers `A_local`'s values, runs the two
//! numeric products, sends the partial blocks other ranks own (values only: both sides know
//! the plan; a rank's own blocks stay) in one all-to-all and sums them into a coarse operator
//! on the plan's pattern (the same `Arc<DistPattern>` every time, so a GPU copy can take the
//! values alone), through the [`SplitReduction`] the GPU copy uploads.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use linalg::dist::{DistBsr, DistPattern, RowPartition};
use linalg::gpu::{CudaContext, DeviceBuffer};
use linalg::{row_offsets, BlockPattern, Bsr, SpgemmPlan, TransposePlan};
use rayon::prelude::*;

use crate::AmgError;

/// Where the partial coarse blocks of one rank go and how an owner sums what it receives.
///
/// Invariants: `send_slots[send_ptr[r]..send_ptr[r + 1]]` are the partial blocks sent to rank
/// `r`, in the order the receiver expects; the received messages, concatenated in rank order,
/// hold `recv_ptr[size]` blocks (`recv_ptr[r]..recv_ptr[r + 1]` from rank `r`); the coarse
/// operator's slot `s` (diag slots first, then `n_diag +` offd slots) is the sum of the
/// received blocks `contrib[slot_ptr[s]..slot_ptr[s + 1]]` in that order (at least one).
#[derive(Debug, Clone)]
pub struct ReductionPlan {
    pub(crate) send_ptr: Vec<usize>,
    pub(crate) send_slots: Vec<u32>,
    pub(crate) recv_ptr: Vec<usize>,
    pub(crate) slot_ptr: Vec<usize>,
    pub(crate) contrib: Vec<u32>,
    pub(crate) n_diag: usize,
}

/// A [`ReductionPlan`] split for a rank that keeps its own partial blocks where they are (a
/// GPU's memory): only the blocks other ranks own are sent, and every coarse slot sums blocks
/// of the virtual concatenation `[partial; others]` (this rank's partial product, then the
/// blocks received from the other ranks in rank order), in the plan's order.
///
/// Invariants: `send_idx[send_ranges[r]]` are the partial blocks sent to rank `r` (empty for
/// this rank); `recv_ranges[r]` are the blocks of `others` received from rank `r` (empty for
/// this rank), `n_recv` in all; the coarse `diag` slot `s` sums the blocks
/// `diag_contrib[diag_ptr[s]..diag_ptr[s + 1]]` (indices `< n_partial` are partial blocks,
/// the others `n_partial +` a block of `others`), the `offd` slots likewise.
#[derive(Debug, Clone)]
pub struct SplitReduction {
    pub send_idx: Vec<u32>,
    pub send_ranges: Vec<Range<usize>>,
    pub recv_ranges: Vec<Range<usize>>,
    pub n_recv: usize,
    pub n_partial: usize,
    pub diag_ptr: Vec<u32>,
    pub diag_contrib: Vec<u32>,
    pub offd_ptr: Vec<u32>,
    pub offd_contrib: Vec<u32>,
}

fn to_u32(v: usize, what: &'static str) -> Result<u32, AmgError> {
    u32::try_from(v).map_err(|_| AmgError::DimensionMismatch {
        what,
        expected: u32::MAX as usize,
        found: v,
    })
}

impl ReductionPlan {
    /// The plan split for `rank` (see [`SplitReduction`]); `n_partial`: blocks of the partial
    /// product.
    pub fn split(&self, rank: usize, n_partial: usize) -> Result<SplitReduction, AmgError> {
        let size = self.send_ptr.len() - 1;
        let mut send_idx = Vec::new();
        let mut send_ranges = Vec::with_capacity(size);
        for r in 0..size {
            let start = send_idx.len();
            if r != rank {
                send_idx
                    .extend_from_slice(&self.send_slots[self.send_ptr[r]..self.send_ptr[r + 1]]);
            }
            send_ranges.push(start..send_idx.len());
        }
        // This rank's message to itself is its own send list, in order.
        let own = self.recv_ptr[rank]..self.recv_ptr[rank + 1];
        let own_slots = &self.send_slots[self.send_ptr[rank]..self.send_ptr[rank + 1]];
        if own_slots.len() != own.len() {
            return Err(AmgError::DimensionMismatch {
                what: "distributed Galerkin plan: this rank's own partial blocks",
                expected: own.len(),
                found: own_slots.len(),
            });
        }
        let mut recv_ranges = Vec::with_capacity(size);
        let mut at = 0;
        for r in 0..size {
            let n = if r == rank {
                0
            } else {
                self.recv_ptr[r + 1] - self.recv_ptr[r]
            };
            recv_ranges.push(at..at + n);
            at += n;
        }
        let source = |pos: u32| -> usize {
            let pos = pos as usize;
            if own.contains(&pos) {
                own_slots[pos - own.start] as usize
            } else if pos >= own.end {
                n_partial + pos - own.len()
            } else {
                n_partial + pos
            }
        };
        let n_slots = self.slot_ptr.len() - 1;
        let lists = |slots: Range<usize>| -> Result<(Vec<u32>, Vec<u32>), AmgError> {
            let base = self.slot_ptr[slots.start];
            let ptr = self.slot_ptr[slots.start..=slots.end]
                .iter()
                .map(|&p| to_u32(p - base, "distributed Galerkin plan: contributions"))
                .collect::<Result<_, _>>()?;
            // in parallel; the first index beyond `u32` is the error
            let contrib: Vec<usize> = self.contrib[base..self.slot_ptr[slots.end]]
                .par_iter()
                .map(|&c| source(c))
                .collect();
            if let Some(&j) = contrib.par_iter().find_first(|&&j| j > u32::MAX as usize) {
                to_u32(j, "distributed Galerkin plan: contribution index")?;
            }
            let contrib = contrib.par_iter().map(|&j| j as u32).collect();
            Ok((ptr, contrib))
        };
        let (diag_ptr, diag_contrib) = lists(0..self.n_diag)?;
        let (offd_ptr, offd_contrib) = lists(self.n_diag..n_slots)?;
        Ok(SplitReduction {
            send_idx,
            send_ranges,
            recv_ranges,
            n_recv: at,
            n_partial,
            diag_ptr,
            diag_contrib,
            offd_ptr,
            offd_contrib,
        })
    }
}

impl SplitReduction {
    /// The messages to each rank (empty to this one) from `partial` (`kk` values per block):
    /// on the host what the GPU's `gather_blocks` of the send list does.
    pub fn pack(&self, partial: &[f64], kk: usize) -> Vec<Vec<f64>> {
        self.send_ranges
            .iter()
            .map(|r| {
                self.send_idx[r.clone()]
                    .iter()
                    .flat_map(|&s| &partial[s as usize * kk..(s as usize + 1) * kk])
                    .copied()
                    .collect()
            })
            .collect()
    }

    /// The coarse blocks summed from `partial` and the `others` received (messages
    /// concatenated in rank order) into `diag` and `offd`, in the plan's order: on the host
    /// what the GPU's `sum_blocks_in_order` does.
    pub fn sum(
        &self,
        partial: &[f64],
        others: &[f64],
        kk: usize,
        diag: &mut [f64],
        offd: &mut [f64],
    ) {
        let n0 = self.n_partial;
        let block = |j: u32| -> &[f64] {
            let j = j as usize;
            if j < n0 {
                &partial[j * kk..(j + 1) * kk]
            } else {
                &others[(j - n0) * kk..(j - n0 + 1) * kk]
            }
        };
        for (ptr, contrib, out) in [
            (&self.diag_ptr, &self.diag_contrib, diag),
            (&self.offd_ptr, &self.offd_contrib, offd),
        ] {
            out.par_chunks_mut(kk)
                .take(ptr.len() - 1)
                .enumerate()
                .for_each(|(s, o)| {
                    let list = &contrib[ptr[s] as usize..ptr[s + 1] as usize];
                    o.copy_from_slice(block(list[0]));
                    for &c in &list[1..] {
                        o.iter_mut().zip(block(c)).for_each(|(x, y)| *x += y);
                    }
                });
        }
    }
}

/// The symbolic distributed Galerkin product (see the module doc). Built for one pattern of
/// `A` (its `diag` and `offd` patterns) and one local view of `P` (`P_ext`, `P_owned`); a new
/// `P` needs a new plan.
#[derive(Debug)]
pub struct GalerkinProductPlan {
    a_diag: Arc<BlockPattern>,
    a_offd: Arc<BlockPattern>,
    /// The local `A` (owned rows, local columns): `A_local` slot `i` takes `diag` block
    /// `gather[i]`, or `offd` block `gather[i] - a_diag.nnz()`.
    pub(crate) a_local: ALocal,
    pub(crate) ap_plan: SpgemmPlan,
    /// `P_owned^T` (computed once per plan, i.e. per version of `P`, or again by
    /// [`GalerkinProductPlan::refresh_transpose`] for new values of `P` on its pattern).
    pub(crate) pt: Bsr,
    pt_plan: TransposePlan,
    pub(crate) partial_plan: SpgemmPlan,
    /// The host product's value buffers: made by the first host product after the plan or
    /// after [`GalerkinProductPlan::release_values`] (a GPU rank's hierarchy, whose products
    /// run on the device, needs them only for its cold set-up's product).
    values: Option<HostValues>,
    pub(crate) reduction: ReductionPlan,
    /// The reduction split for this rank: what [`GalerkinProductPlan::numeric`] runs (and the
    /// GPU copy uploads).
    split: SplitReduction,
    pub(crate) coarse: Arc<DistPattern>,
}

/// The host product's values: the local `A` (`bs x bs` blocks), `A P` (`bs x k`) and the
/// partial coarse blocks `P_owned^T A P` (`k x k`), each on its plan's pattern.
#[derive(Debug)]
struct HostValues {
    a_local: Bsr,
    ap: Bsr,
    partial: Bsr,
}

/// The symbolic product of the patterns `a` and `b` where the level lives (`device`): on a GPU
/// made there (the host's pattern, entry for entry; [`SpgemmPlan::new_on`]) unless an operand
/// is empty (a rank without rows on a level), on the host otherwise.
pub(crate) fn symbolic_product(
    device: &linalg::Device,
    a: &Arc<BlockPattern>,
    b: &Arc<BlockPattern>,
) -> Result<SpgemmPlan, AmgError> {
    if a.nnz() == 0 || b.nnz() == 0 {
        return Ok(SpgemmPlan::new(a, b)?);
    }
    Ok(SpgemmPlan::new_on(device, a, b)?)
}

/// The local `A` of a level on a rank, symbolically: its pattern (the owned rows, columns at
/// the serial `position` of the local vertices) and the gather of its blocks from `A`'s `diag`
/// (indices `< diag.nnz()`) and `offd` (`diag.nnz() +` slot). Made once for one pattern of `A`
/// and one `position`, and shared (`Arc`s) by the level's smoothing and Galerkin plans. Made
/// where `A` lives: on a GPU the gather list stays there (one copy for both plans' device
/// parts) and its host copy is made, from the patterns, only if a host product asks.
///
/// Invariant: the host and the device gather lists, where both exist, are the same list.
#[derive(Debug, Clone)]
pub(crate) struct ALocal {
    pub(crate) pattern: Arc<BlockPattern>,
    host_gather: OnceLock<Arc<[u32]>>,
    device_gather: OnceLock<(usize, Arc<DeviceBuffer<u32>>)>,
    a_diag: Arc<BlockPattern>,
    a_offd: Arc<BlockPattern>,
    position: Arc<[u32]>,
}

impl ALocal {
    /// The local `A` of `a` with its columns at `position`, made where `a` lives (local: no
    /// messages).
    pub(crate) fn new(a: &DistBsr, position: &[u32]) -> Result<Self, AmgError> {
        let (dp, op) = (a.pattern().diag(), a.pattern().offd());
        check_local_vertices(dp.n_block_rows(), op.n_block_cols(), position)?;
        let (host_gather, device_gather) = (OnceLock::new(), OnceLock::new());
        let pattern = match a.device().cuda_context() {
            Some(ctx) => {
                let (pattern, gather) = linalg::gpu::joined_by_position(ctx, dp, op, position)?;
                let _ = device_gather.set((ctx.ordinal(), Arc::new(gather)));
                Arc::new(pattern)
            }
            None => {
                let (pattern, gather) = local_symbolic(dp, op, position)?;
                let _ = host_gather.set(gather.into());
                pattern
            }
        };
        Ok(Self {
            pattern,
            host_gather,
            device_gather,
            a_diag: dp.clone(),
            a_offd: op.clone(),
            position: position.into(),
        })
    }

    /// The gather list on the host (made from the patterns at the first call where it was
    /// made on a GPU: the same list).
    pub(crate) fn host_gather(&self) -> Result<&Arc<[u32]>, AmgError> {
        if let Some(g) = self.host_gather.get() {
            return Ok(g);
        }
        let (_, gather) = local_symbolic(&self.a_diag, &self.a_offd, &self.position)?;
        Ok(self.host_gather.get_or_init(|| gather.into()))
    }

    /// The gather list on `ctx`'s GPU: the one made there, or the host's uploaded once (and
    /// shared from then on).
    pub(crate) fn device_gather(
        &self,
        ctx: &CudaContext,
    ) -> Result<Arc<DeviceBuffer<u32>>, AmgError> {
        match self.device_gather.get() {
            Some((ordinal, g)) if *ordinal == ctx.ordinal() => return Ok(g.clone()),
            Some(_) => return Ok(Arc::new(ctx.upload(self.host_gather()?)?)),
            None => {}
        }
        let uploaded = Arc::new(ctx.upload(self.host_gather()?)?);
        Ok(self
            .device_gather
            .get_or_init(|| (ctx.ordinal(), uploaded))
            .1
            .clone())
    }

    /// The `diag` and `offd` patterns of the operator it was made for.
    pub(crate) fn a_patterns(&self) -> (&Arc<BlockPattern>, &Arc<BlockPattern>) {
        (&self.a_diag, &self.a_offd)
    }

    /// `seed` where it was made for `a`'s patterns and `position`, else a new one.
    pub(crate) fn reuse_or_new(
        seed: Option<&Self>,
        a: &DistBsr,
        position: &[u32],
    ) -> Result<Self, AmgError> {
        match seed {
            Some(s)
                if BlockPattern::same(a.pattern().diag(), &s.a_diag)
                    && BlockPattern::same(a.pattern().offd(), &s.a_offd)
                    && *s.position == *position =>
            {
                Ok(s.clone())
            }
            _ => Self::new(a, position),
        }
    }
}

/// Errors unless `position` holds one entry per local vertex (`n` owned, `n_ghosts` ghosts).
fn check_local_vertices(n: usize, n_ghosts: usize, position: &[u32]) -> Result<(), AmgError> {
    if n + n_ghosts != position.len() {
        return Err(AmgError::DimensionMismatch {
            what: "distributed Galerkin plan: local vertices of A",
            expected: n + n_ghosts,
            found: position.len(),
        });
    }
    Ok(())
}

/// Rows of the local `A` per parallel task of [`a_local_symbolic`].
const A_LOCAL_ROWS_PER_TASK: usize = 256;

/// The local `A`'s pattern (owned rows, columns at `position`) and the gather of its blocks
/// from `a`'s `diag` (indices `< diag.nnz()`) and `offd` (`diag.nnz() +` slot), on the host.
pub(crate) fn a_local_symbolic(
    a: &DistBsr,
    position: &[u32],
) -> Result<(Arc<BlockPattern>, Vec<u32>), AmgError> {
    local_symbolic(a.pattern().diag(), a.pattern().offd(), position)
}

/// [`a_local_symbolic`] of `A`'s `diag` and `offd` patterns `dp` and `op`.
fn local_symbolic(
    dp: &BlockPattern,
    op: &BlockPattern,
    position: &[u32],
) -> Result<(Arc<BlockPattern>, Vec<u32>), AmgError> {
    let n = dp.n_block_rows();
    let n_local = position.len();
    check_local_vertices(n, op.n_block_cols(), position)?;
    let n_diag = dp.nnz();
    let ptr = row_offsets(n, |v| dp.row(v).len() + op.row(v).len());
    // A row's `diag` blocks and its `offd` blocks each keep their order under `position`
    // where it ascends on the owned vertices and on the ghosts (a rank's vertices numbered in
    // serial order): then each row is the merge of the two, else it is sorted. Both make each
    // row by column (the columns are distinct).
    let ascending = |p: &[u32]| p.par_windows(2).all(|w| w[0] < w[1]);
    let merge = ascending(&position[..n]) && ascending(&position[n..]);
    let mut col = vec![0u32; ptr[n]];
    let mut gather = vec![0u32; ptr[n]];
    let col_groups = linalg::split_rows(&ptr, 1, A_LOCAL_ROWS_PER_TASK, &mut col);
    let gather_groups = linalg::split_rows(&ptr, 1, A_LOCAL_ROWS_PER_TASK, &mut gather);
    col_groups
        .into_par_iter()
        .zip(gather_groups)
        .for_each(|((rows, cols), (_, gathers))| {
            let first = ptr[rows.start];
            let mut row = Vec::new();
            for v in rows {
                // (column, gather index) of the row's diag blocks, then its offd blocks
                let diag = (dp.row_ptr()[v]..dp.row_ptr()[v + 1])
                    .map(|s| (position[dp.col_idx()[s] as usize], s as u32));
                let offd = (op.row_ptr()[v]..op.row_ptr()[v + 1])
                    .map(|s| (position[n + op.col_idx()[s] as usize], (n_diag + s) as u32));
                row.clear();
                if merge {
                    let (mut diag, mut offd) = (diag.peekable(), offd.peekable());
                    loop {
                        let next = match (diag.peek(), offd.peek()) {
                            (Some(d), Some(o)) if d.0 < o.0 => diag.next(),
                            (Some(_), Some(_)) => offd.next(),
                            (Some(_), None) => diag.next(),
                            (None, _) => offd.next(),
                        };
                        match next {
                            Some(b) => row.push(b),
                            None => break,
                        }
                    }
                } else {
                    row.extend(diag.chain(offd));
                    row.sort_unstable_by_key(|&(c, _)| c);
                }
                let at = ptr[v] - first..ptr[v + 1] - first;
                for ((c, g), &(bc, bg)) in
                    cols[at.clone()].iter_mut().zip(&mut gathers[at]).zip(&row)
                {
                    *c = bc;
                    *g = bg;
                }
            }
        });
    Ok((BlockPattern::new(n, n_local, ptr, col)?.into(), gather))
}

/// Collective. The reduction of the partial product (pattern `cp`, rows and columns the coarse
/// global ids `coarse_globals`) onto the owners of the coarse rows. Only the partial rows other
/// ranks own travel (their global columns); this rank's own rows are read in place, as the
/// message to itself they stand for. An owned coarse row's blocks, from every source of it in
/// the concatenated messages' order (ranks in order, each message's rows in order), are sorted
/// by (column, position) within the row, in parallel over the rows: the one-off product's order.
fn reduction_symbolic(
    cp: &BlockPattern,
    coarse_globals: &[u64],
    coarse: &RowPartition,
    k: usize,
) -> Result<(ReductionPlan, Arc<DistPattern>), AmgError> {
    let comm = coarse.comm().clone();
    let (size, rank) = (comm.size(), comm.rank());
    let n_rows = cp.n_block_rows();
    let (cp_ptr, cp_col) = (cp.row_ptr(), cp.col_idx());
    let row_len = |r: usize| cp_ptr[r + 1] - cp_ptr[r];
    // the owner of each partial row (the first row beyond the coarse vertices is the error)
    let owners: Vec<usize> = (0..n_rows)
        .into_par_iter()
        .map(|r| coarse.owner(coarse_globals[r]).unwrap_or(usize::MAX))
        .collect();
    if let Some(r) = owners.par_iter().position_first(|&o| o == usize::MAX) {
        return Err(AmgError::DimensionMismatch {
            what: "distributed Galerkin plan: coarse row beyond the coarse vertices",
            expected: coarse.global_len() as usize,
            found: coarse_globals[r] as usize,
        });
    }
    // The partial rows of each destination, ascending (the one-off product's message order),
    // in one pass over the rows.
    let mut rows_of: Vec<Vec<u32>> = vec![Vec::new(); size];
    for (r, &owner) in owners.iter().enumerate() {
        rows_of[owner].push(r as u32);
    }
    drop(owners);
    // Per destination the partial slots, and to another rank the message [row, n, column * n]
    // per partial row.
    let mut index_msgs = Vec::with_capacity(size);
    let mut slots = Vec::with_capacity(size);
    for (dest, rows) in rows_of.iter().enumerate() {
        let len = |i: usize| row_len(rows[i] as usize);
        let slot_ptr = row_offsets(rows.len(), len);
        let mut dest_slots = vec![0u32; slot_ptr[rows.len()]];
        linalg::fill_rows(&slot_ptr, &mut dest_slots, |i, out| {
            let r = rows[i] as usize;
            for (o, s) in out.iter_mut().zip(cp_ptr[r]..cp_ptr[r + 1]) {
                *o = s as u32;
            }
        });
        slots.push(dest_slots);
        if dest == rank {
            index_msgs.push(Vec::new());
            continue;
        }
        let msg_ptr = row_offsets(rows.len(), |i| 2 + len(i));
        let mut msg = vec![0u64; msg_ptr[rows.len()]];
        linalg::fill_rows(&msg_ptr, &mut msg, |i, out| {
            let r = rows[i] as usize;
            out[0] = coarse_globals[r];
            out[1] = len(i) as u64;
            for (o, &c) in out[2..].iter_mut().zip(&cp_col[cp_ptr[r]..cp_ptr[r + 1]]) {
                *o = coarse_globals[c as usize];
            }
        });
        index_msgs.push(msg);
    }
    let received = comm.alltoallv_u64(&index_msgs)?;
    drop(index_msgs);
    let own_rows = &rows_of[rank];
    let first = coarse.owned_range().start;
    let n_owned = coarse.n_owned();
    // The source rows, in the concatenated messages' order (this rank's own rows as its
    // message): where its columns are (another rank's message and the offset in it, or an own
    // partial row), its owned row, the position of its first block and its blocks.
    let mut heads: Vec<SourceRow> = Vec::new();
    let mut recv_ptr = vec![0usize];
    let mut pos = 0usize;
    for (j, msg) in received.iter().enumerate() {
        if j == rank {
            for &r in own_rows {
                let (r, row) = (r as usize, coarse_globals[r as usize]);
                heads.push(SourceRow {
                    columns: Columns::Own(r),
                    row: (row - first) as usize,
                    pos,
                    len: row_len(r),
                });
                pos += row_len(r);
            }
        }
        let mut at = 0;
        while at < msg.len() {
            let (row, m) = (msg[at], msg[at + 1] as usize);
            at += 2;
            if row < first || row >= first + n_owned as u64 || at + m > msg.len() {
                return Err(AmgError::DimensionMismatch {
                    what: "distributed Galerkin plan: a received coarse row this rank owns",
                    expected: n_owned,
                    found: row as usize,
                });
            }
            heads.push(SourceRow {
                columns: Columns::Received(j, at),
                row: (row - first) as usize,
                pos,
                len: m,
            });
            pos += m;
            at += m;
        }
        recv_ptr.push(pos);
    }
    to_u32(pos, "distributed Galerkin plan: received blocks")?;
    // The source rows of each owned row, in order (a stable counting sort).
    let mut row_head_ptr = vec![0usize; n_owned + 1];
    for h in &heads {
        row_head_ptr[h.row + 1] += 1;
    }
    for i in 0..n_owned {
        row_head_ptr[i + 1] += row_head_ptr[i];
    }
    let mut row_heads = vec![0u32; heads.len()];
    let mut next = row_head_ptr.clone();
    for (i, h) in heads.iter().enumerate() {
        row_heads[next[h.row]] = i as u32;
        next[h.row] += 1;
    }
    drop(next);
    let heads_of = |i: usize| {
        row_heads[row_head_ptr[i]..row_head_ptr[i + 1]]
            .iter()
            .map(|&h| &heads[h as usize])
    };
    // Each owned row's (column, position) blocks, sorted.
    let block_ptr = row_offsets(n_owned, |i| heads_of(i).map(|h| h.len).sum());
    let mut blocks = vec![(0u64, 0u32); pos];
    linalg::fill_rows(&block_ptr, &mut blocks, |i, out| {
        let mut o = 0;
        for h in heads_of(i) {
            let out = &mut out[o..o + h.len];
            match h.columns {
                Columns::Own(r) => {
                    for (b, (x, &c)) in out
                        .iter_mut()
                        .zip(&cp_col[cp_ptr[r]..cp_ptr[r + 1]])
                        .enumerate()
                    {
                        *x = (coarse_globals[c as usize], (h.pos + b) as u32);
                    }
                }
                Columns::Received(j, at) => {
                    for (b, (x, &c)) in out.iter_mut().zip(&received[j][at..at + h.len]).enumerate()
                    {
                        *x = (c, (h.pos + b) as u32);
                    }
                }
            }
            o += h.len;
        }
        // positions are distinct: the unstable sort is the stable one
        out.sort_unstable();
    });
    drop(received);
    // The coarse pattern's rows (one entry a distinct column) and the first block of each
    // entry in `blocks`.
    let row_blocks = |i: usize| &blocks[block_ptr[i]..block_ptr[i + 1]];
    let distinct = |i: usize| {
        let b = row_blocks(i);
        (0..b.len()).filter(move |&t| t == 0 || b[t].0 != b[t - 1].0)
    };
    let entry_ptr = row_offsets(n_owned, |i| distinct(i).count());
    let n_entries = entry_ptr[n_owned];
    let mut cols = vec![0u64; n_entries];
    let mut entry_start = vec![0usize; n_entries + 1];
    entry_start[n_entries] = pos;
    linalg::fill_rows(&entry_ptr, &mut cols, |i, out| {
        for (o, t) in out.iter_mut().zip(distinct(i)) {
            *o = row_blocks(i)[t].0;
        }
    });
    linalg::fill_rows(&entry_ptr, &mut entry_start[..n_entries], |i, out| {
        for (o, t) in out.iter_mut().zip(distinct(i)) {
            *o = block_ptr[i] + t;
        }
    });
    let pattern = DistPattern::new(coarse.clone(), k, &entry_ptr, &cols)?;
    drop(cols);
    // Slot `s` holds entry `slot_entries[s]` (the entries in (row, column) order).
    let entry_of_slot = pattern.slot_entries();
    let n_slots = entry_of_slot.len();
    let entry_len = |s: usize| {
        let e = entry_of_slot[s] as usize;
        entry_start[e + 1] - entry_start[e]
    };
    let slot_ptr = row_offsets(n_slots, entry_len);
    let mut contrib = vec![0u32; slot_ptr[n_slots]];
    linalg::fill_rows(&slot_ptr, &mut contrib, |s, out| {
        let e = entry_of_slot[s] as usize;
        for (o, b) in out
            .iter_mut()
            .zip(&blocks[entry_start[e]..entry_start[e + 1]])
        {
            *o = b.1;
        }
    });
    let mut send_ptr = vec![0usize];
    let mut send_slots = Vec::with_capacity(slots.iter().map(Vec::len).sum());
    for s in slots {
        send_slots.extend(s);
        send_ptr.push(send_slots.len());
    }
    let n_diag = pattern.diag().nnz();
    Ok((
        ReductionPlan {
            send_ptr,
            send_slots,
            recv_ptr,
            slot_ptr,
            contrib,
            n_diag,
        },
        pattern,
    ))
}

/// Where a source row of the reduction reads its global columns.
#[derive(Clone, Copy)]
enum Columns {
    /// This rank's partial row.
    Own(usize),
    /// Another rank's message (its rank) from an offset.
    Received(usize, usize),
}

/// A partial row summed into an owned coarse row (see `reduction_symbolic`).
struct SourceRow {
    columns: Columns,
    /// The owned coarse row (local).
    row: usize,
    /// The position of its first block in the concatenated messages.
    pos: usize,
    len: usize,
}

impl GalerkinProductPlan {
    /// Collective. The plan for `a`'s pattern and `P`'s local view: `position` (serial position
    /// of each local vertex of `a`: the columns of the local `A`), `p_ext` (`P`'s rows of the
    /// local vertices in that order), `p_owned` (`P`'s owned rows), `coarse_globals` (the
    /// global coarse id of each local coarse column) and `coarse` (`P`'s column partition).
    pub(crate) fn new(
        a: &DistBsr,
        a_local: ALocal,
        p_ext: &Bsr,
        p_owned: &Bsr,
        coarse_globals: &[u64],
        coarse: &RowPartition,
    ) -> Result<Self, AmgError> {
        let ap = a.pattern();
        let k = p_owned.block_cols();
        let a_pattern = a_local.pattern.clone();
        let device = a.device();
        let ap_plan = symbolic_product(&device, &a_pattern, p_ext.pattern())?;

        // (sharing `P_owned`'s pattern: no copy, and the numeric transposes know it at once;
        // made where `P_owned` lives)
        let pt_plan = TransposePlan::new_on(&p_owned.device(), p_owned.pattern())?;
        // where `P_owned` lives (on a GPU transposed there)
        let mut pt = Bsr::zeros_on(
            &p_owned.device(),
            pt_plan.pattern().clone(),
            k,
            p_owned.block_rows(),
        )?;
        linalg::transpose_numeric(&pt_plan, p_owned, &mut pt)?;

        let partial_plan = symbolic_product(&device, pt.pattern(), ap_plan.pattern())?;

        let partial_pattern = partial_plan.pattern();
        if coarse_globals.len() != partial_pattern.n_block_rows() {
            return Err(AmgError::DimensionMismatch {
                what: "distributed Galerkin plan: global ids of the local coarse columns",
                expected: partial_pattern.n_block_rows(),
                found: coarse_globals.len(),
            });
        }
        let (reduction, coarse_pattern) =
            reduction_symbolic(partial_pattern, coarse_globals, coarse, k)?;

        let split = reduction.split(coarse.comm().rank(), partial_pattern.nnz())?;

        Ok(Self {
            a_diag: ap.diag().clone(),
            a_offd: ap.offd().clone(),
            a_local,
            ap_plan,
            pt,
            pt_plan,
            partial_plan,
            values: None,
            reduction,
            split,
            coarse: coarse_pattern,
        })
    }

    /// `P_owned^T` again from new values of `p_owned` (the pattern the plan was made for):
    /// a renewal of `P` that keeps its pattern keeps the plan. Local.
    pub fn refresh_transpose(&mut self, p_owned: &Bsr) -> Result<(), AmgError> {
        if !p_owned.device().same_as(&self.pt.device()) {
            // `P_owned^T` follows `P_owned`
            self.pt = self.pt.to_device(&p_owned.device())?;
        }
        Ok(linalg::transpose_numeric(
            &self.pt_plan,
            p_owned,
            &mut self.pt,
        )?)
    }

    /// The `diag` and `offd` patterns of the `A` the plan was built for.
    pub(crate) fn a_patterns(&self) -> (&Arc<BlockPattern>, &Arc<BlockPattern>) {
        (&self.a_diag, &self.a_offd)
    }

    /// True when `a` has the pattern the plan was built for.
    pub fn fits(&self, a: &DistBsr) -> bool {
        BlockPattern::same(a.pattern().diag(), &self.a_diag)
            && BlockPattern::same(a.pattern().offd(), &self.a_offd)
    }

    /// The coarse operator's pattern (the same object for every product of this plan).
    pub fn coarse_pattern(&self) -> &Arc<DistPattern> {
        &self.coarse
    }

    /// The reduction's send lists and sums (all ranks' view, before the split).
    pub fn reduction(&self) -> &ReductionPlan {
        &self.reduction
    }

    /// The reduction split for this rank (what the numeric phase runs).
    pub fn split(&self) -> &SplitReduction {
        &self.split
    }

    /// Collective. `P^T A P` for the current values of `a` (host; the plan's pattern) and
    /// `p_ext` (the view the plan was built from, host), on [`Self::coarse_pattern`]; also the
    /// bytes this rank sent to other ranks. The reduction is the GPU's ([`SplitReduction`]:
    /// this rank's own partial blocks stay, the others' arrive in rank order), so the host and
    /// device products share one set of index lists, tested here on ranks without a GPU.
    pub fn numeric(&mut self, a: &DistBsr, p_ext: &Bsr) -> Result<(DistBsr, u64), AmgError> {
        let mut ac = DistBsr::zeros(self.coarse.clone());
        let sent = self.numeric_into(a, p_ext, &mut ac)?;
        Ok((ac, sent))
    }

    /// Collective. [`Self::numeric`] into `ac`, a host matrix on [`Self::coarse_pattern`] (the
    /// same `Arc`: the coarse operator of an earlier product), whose values it overwrites (a
    /// hot update allocates no coarse operator); the bytes of partial blocks sent.
    pub fn numeric_into(
        &mut self,
        a: &DistBsr,
        p_ext: &Bsr,
        ac: &mut DistBsr,
    ) -> Result<u64, AmgError> {
        if !Arc::ptr_eq(ac.pattern(), &self.coarse) {
            return Err(AmgError::InvalidParameter {
                name: "distributed Galerkin product",
                value: "the coarse operator".into(),
                reason: "must be on the plan's coarse pattern",
            });
        }
        if !self.fits(a) {
            return Err(AmgError::DimensionMismatch {
                what: "distributed Galerkin plan: A's pattern is not the plan's",
                expected: self.a_diag.nnz() + self.a_offd.nnz(),
                found: a.pattern().diag().nnz() + a.pattern().offd().nnz(),
            });
        }
        let k = self.pt.block_rows();
        let kk = k * k;
        let bs = a.pattern().block_size();
        let values = self.values.get_or_insert_with(|| HostValues {
            a_local: Bsr::zeros(self.a_local.pattern.clone(), bs, bs),
            ap: Bsr::zeros(self.ap_plan.pattern().clone(), bs, k),
            partial: Bsr::zeros(self.partial_plan.pattern().clone(), k, k),
        });
        let gather = self.a_local.host_gather()?;
        gather_a_local(gather, self.a_diag.nnz(), a, &mut values.a_local)?;
        linalg::spgemm_numeric(&self.ap_plan, &values.a_local, p_ext, &mut values.ap)?;
        linalg::spgemm_numeric(
            &self.partial_plan,
            &self.pt,
            &values.ap,
            &mut values.partial,
        )?;
        let comm = self.coarse.partition().comm().clone();
        let split = &self.split;
        let partial = values.partial.host()?;
        let received = comm.alltoallv_f64(&split.pack(partial, kk))?;
        for (msg, r) in received.iter().zip(&split.recv_ranges) {
            if msg.len() != r.len() * kk {
                return Err(AmgError::DimensionMismatch {
                    what: "distributed Galerkin product: partial blocks received from a rank",
                    expected: r.len() * kk,
                    found: msg.len(),
                });
            }
        }
        let others = received.concat();
        // every slot is written (each has at least one contribution): no zeroing
        let (d, o) = ac.parts_mut();
        split.sum(partial, &others, kk, d.host_mut()?, o.host_mut()?);
        Ok((split.send_idx.len() * kk * 8) as u64)
    }

    /// Drops the host product's value buffers (the local `A`, `A P` and the partial blocks:
    /// together more than the operator itself); the next host product makes them again.
    pub fn release_values(&mut self) {
        self.values = None;
    }
}

/// `A_local`'s values from `a`'s parts (host): slot `i` takes `diag` block `gather[i]`, or
/// `offd` block `gather[i] - n_diag`.
pub(crate) fn gather_a_local(
    gather: &[u32],
    n_diag: usize,
    a: &DistBsr,
    a_local: &mut Bsr,
) -> Result<(), AmgError> {
    let bl = a_local.block_len();
    let (dv, ov) = (a.diag().host()?, a.offd().host()?);
    let out = a_local.host_mut()?;
    out.par_chunks_mut(bl)
        .zip(gather.par_iter())
        .for_each(|(o, &src)| {
            let src = src as usize;
            let block = if src < n_diag {
                &dv[src * bl..(src + 1) * bl]
            } else {
                &ov[(src - n_diag) * bl..(src - n_diag + 1) * bl]
            };
            o.copy_from_slice(block);
        });
    Ok(())
}

/// Collective. The square coarse [`DistPattern`] on `coarse` (`k x k` blocks) of this rank's
/// owned blocks `(row, column)` (global ids), sorted by row then column (a `BTreeMap`'s keys):
/// each row's first block found by a search, in parallel.
pub(crate) fn coarse_pattern(
    coarse: &RowPartition,
    k: usize,
    blocks: &[(u64, u64)],
) -> Result<Arc<DistPattern>, AmgError> {
    let first = coarse.owned_range().start;
    let n_owned = coarse.n_owned();
    let row_ptr: Vec<usize> = (0..=n_owned)
        .into_par_iter()
        .map(|i| blocks.partition_point(|&(row, _)| row < first + i as u64))
        .collect();
    let cols: Vec<u64> = blocks.par_iter().map(|&(_, c)| c).collect();
    Ok(DistPattern::new(coarse.clone(), k, &row_ptr, &cols)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use linalg::comm::SelfComm;

    /// A one-rank operator of `n` block rows, row `i` coupling `i` to `i ± 1` and `i ± 5`.
    fn band(n: usize) -> DistBsr {
        let partition = RowPartition::even(SelfComm::shared(), n as u64);
        let (mut ptr, mut cols) = (vec![0], Vec::new());
        for i in 0..n as i64 {
            for d in [0i64, -1, 1, -5, 5] {
                if (0..n as i64).contains(&(i + d)) {
                    cols.push((i + d) as u64);
                }
            }
            ptr.push(cols.len());
        }
        DistBsr::zeros(DistPattern::new(partition, 1, &ptr, &cols).unwrap())
    }

    /// The local `A` made row by row with a sort: each row's `(position[column], block)`.
    fn sorted_rows(a: &DistBsr, position: &[u32]) -> (Vec<u32>, Vec<u32>) {
        let dp = a.pattern().diag();
        let (mut col, mut gather) = (Vec::new(), Vec::new());
        for v in 0..dp.n_block_rows() {
            let mut row: Vec<(u32, u32)> = (dp.row_ptr()[v]..dp.row_ptr()[v + 1])
                .map(|s| (position[dp.col_idx()[s] as usize], s as u32))
                .collect();
            row.sort_unstable();
            col.extend(row.iter().map(|e| e.0));
            gather.extend(row.iter().map(|e| e.1));
        }
        (col, gather)
    }

    #[test]
    fn the_local_a_has_sorted_rows_for_ascending_and_scrambled_positions() {
        let n = 2000;
        let a = band(n);
        // ascending (rows merged) and a scrambled permutation (rows sorted)
        let ascending: Vec<u32> = (0..n as u32).collect();
        let scrambled: Vec<u32> = (0..n as u32).map(|i| (i * 7 + 3) % n as u32).collect();
        for position in [ascending, scrambled] {
            let (pattern, gather) = a_local_symbolic(&a, &position).unwrap();
            let (col, expected_gather) = sorted_rows(&a, &position);
            assert_eq!(pattern.row_ptr(), a.pattern().diag().row_ptr());
            assert_eq!(pattern.col_idx(), &col[..]);
            assert_eq!(gather, expected_gather);
        }
    }
}
