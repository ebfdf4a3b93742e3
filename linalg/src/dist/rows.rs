//! [`RowGatherPlan`]: copies of other ranks' rows of a distributed matrix (the `P_oth` of a
//! distributed Galerkin product: the prolongator rows of the fine ghost vertices), gathered as
//! whole blocks, where the matrix lives: on the host through MPI, on the ranks' GPUs through
//! a [`DeviceHalo`] of the same messages (GPU to GPU where the ranks' GPUs are connected, else
//! staged through pinned host memory). Values travel unchanged: the same bits either way.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use comm::Comm;

use crate::backend::cuda::galerkin::{gather_blocks_two, TwoSources};
use crate::backend::cuda::{CudaContext, DeviceBuffer};
use crate::dist::{DeviceHalo, DistBsr, HaloPlan};
use crate::{BlockPattern, Bsr, Device, LinalgError};

/// Built once (collective, [`RowGatherPlan::new`]) from the halo plan of a matrix `A` whose
/// ghost columns are rows of `P` owned elsewhere: the structure of those rows (a local
/// [`Bsr`] pattern whose columns index `col_globals`, P's global column ids) and the messages
/// that refresh their values ([`RowGatherPlan::update`]), which send nothing when `P` has not
/// changed since the last update (its [`DistBsr::version`]).
///
/// Invariants: rows of the gathered matrix are the halo's ghosts, in its order; `recv[r]` is the
/// slot range rank `r` fills; `send[r]` lists, per value block sent to rank `r`, its slot in
/// `P`'s diagonal values (`< diag nnz`) or `diag nnz +` its slot in the off-diagonal values.
#[derive(Debug)]
pub struct RowGatherPlan {
    pattern: Arc<BlockPattern>,
    col_globals: Vec<u64>,
    block_rows: usize,
    block_cols: usize,
    recv: Vec<(usize, Range<usize>)>,
    send: Vec<(usize, Vec<u32>)>,
    /// The version of `P` the gathered values are a copy of.
    copied: Mutex<Option<u64>>,
    /// The device messages, made by the first update of device rows.
    device: Mutex<Option<DeviceRowGather>>,
    comm: Arc<dyn Comm>,
}

/// A [`RowGatherPlan`]'s messages on one GPU: the sent blocks packed from `P`'s device
/// `diag` and `offd` values (`send_idx`, the plan's send lists concatenated), exchanged by a
/// [`DeviceHalo`] whose owned blocks are the packed ones and whose ghosts are the gathered
/// rows' blocks.
#[derive(Debug)]
struct DeviceRowGather {
    ctx: Arc<CudaContext>,
    send_idx: DeviceBuffer<u32>,
    packed: DeviceBuffer<f64>,
    halo: DeviceHalo,
}

impl RowGatherPlan {
    /// Collective. `halo`: the plan of the ghost rows wanted (`A`'s ghost columns, whose owners
    /// own those rows of `p`); `p`: the matrix whose rows are gathered (rows partitioned as
    /// `halo`'s vectors).
    pub fn new(halo: &HaloPlan, p: &DistBsr) -> Result<Self, LinalgError> {
        let comm = halo.comm().clone();
        let size = comm.size();
        let pp = p.pattern();
        let first_col = pp.col_partition().owned_range().start;
        let ghosts_p = pp.halo().ghosts();
        let (dp, op) = (pp.diag(), pp.offd());
        let n_diag = dp.nnz();
        if halo.n_owned() != dp.n_block_rows() {
            return Err(LinalgError::DimensionMismatch {
                what: "RowGatherPlan: owned rows of P vs the halo's vectors",
                expected: halo.n_owned(),
                found: dp.n_block_rows(),
            });
        }
        // Row `i` of P as (global column, slot), ascending by column.
        let row = |i: usize| {
            let mut r: Vec<(u64, u32)> = (dp.row_ptr()[i]..dp.row_ptr()[i + 1])
                .map(|k| (first_col + u64::from(dp.col_idx()[k]), k as u32))
                .chain(
                    (op.row_ptr()[i]..op.row_ptr()[i + 1])
                        .map(|k| (ghosts_p[op.col_idx()[k] as usize], (n_diag + k) as u32)),
                )
                .collect();
            r.sort_unstable();
            r
        };
        // Structure to the ranks that want these rows: [n blocks, columns...] per row.
        let mut structure = vec![Vec::new(); size];
        let mut send = Vec::new();
        for (r, rows) in halo.sends() {
            let mut slots = Vec::new();
            for &i in rows {
                let entries = row(i as usize);
                structure[*r].push(entries.len() as u64);
                structure[*r].extend(entries.iter().map(|&(g, _)| g));
                slots.extend(entries.iter().map(|&(_, k)| k));
            }
            send.push((*r, slots));
        }
        let got = comm.alltoallv_u64(&structure)?;
        let n_rows = halo.ghosts().len();
        let mut row_cols: Vec<Vec<u64>> = Vec::with_capacity(n_rows);
        for (r, range) in halo.receives() {
            let msg = &got[*r];
            let mut at = 0;
            for _ in range.clone() {
                let n = msg[at] as usize;
                row_cols.push(msg[at + 1..at + 1 + n].to_vec());
                at += 1 + n;
            }
        }
        let mut col_globals: Vec<u64> = row_cols.iter().flatten().copied().collect();
        col_globals.sort_unstable();
        col_globals.dedup();
        let mut row_ptr = vec![0];
        let mut col_idx = Vec::new();
        for cols in &row_cols {
            col_idx.extend(
                cols.iter()
                    .map(|g| col_globals.binary_search(g).expect("collected") as u32),
            );
            row_ptr.push(col_idx.len());
        }
        let mut recv = Vec::new();
        for (r, range) in halo.receives() {
            recv.push((*r, row_ptr[range.start]..row_ptr[range.end]));
        }
        let pattern = BlockPattern::new_trusted(n_rows, col_globals.len(), row_ptr, col_idx);
        Ok(Self {
            pattern: Arc::new(pattern),
            col_globals,
            block_rows: pp.block_rows(),
            block_cols: pp.block_cols(),
            recv,
            send,
            copied: Mutex::new(None),
            device: Mutex::new(None),
            comm,
        })
    }

    /// A host matrix of the gathered rows' structure (values zero until the first update).
    pub fn new_matrix(&self) -> Bsr {
        Bsr::zeros(self.pattern.clone(), self.block_rows, self.block_cols)
    }

    /// [`Self::new_matrix`] on `device` (where the `P` it gathers from lives).
    pub fn new_matrix_on(&self, device: &Device) -> Result<Bsr, LinalgError> {
        Bsr::zeros_on(
            device,
            self.pattern.clone(),
            self.block_rows,
            self.block_cols,
        )
    }

    /// Global column (of `P`) of each column of the gathered matrix, ascending.
    pub fn col_globals(&self) -> &[u64] {
        &self.col_globals
    }

    /// Collective. Refreshes `rows` (made by [`RowGatherPlan::new_matrix`], or
    /// [`RowGatherPlan::new_matrix_on`] `p`'s GPU: then GPU to GPU) from `p`, unless every
    /// rank's `p` is the version last gathered: then no values move. Returns the values this
    /// rank sent (0 for a skipped update). Rows of another pattern, or not where `p` lives,
    /// are an error on every rank (agreed in the update's one reduction).
    pub fn update(&self, p: &DistBsr, rows: &mut Bsr) -> Result<usize, LinalgError> {
        let misplaced = if !BlockPattern::same(rows.pattern(), &self.pattern) {
            Err(LinalgError::PatternMismatch {
                what: "RowGatherPlan::update",
            })
        } else {
            crate::device::check_same_device(
                "RowGatherPlan::update: the rows and P",
                &p.device(),
                &rows.device(),
            )
        };
        let mut copied = self.copied.lock().unwrap_or_else(|e| e.into_inner());
        let mut flags = [
            f64::from(u8::from(*copied != Some(p.version()))),
            f64::from(u8::from(misplaced.is_err())),
        ];
        self.comm.allreduce_max(&mut flags)?;
        if flags[1] > 0.0 {
            misplaced?;
            return Err(LinalgError::DeviceMismatch {
                what: "RowGatherPlan::update: another rank's rows and P",
                expected: "the rows where P lives, on the plan's pattern".into(),
                found: "another rank's rows elsewhere or on another pattern".into(),
            });
        }
        if flags[0] == 0.0 {
            return Ok(0);
        }
        if let Some(ctx) = rows.device().cuda_context().cloned() {
            let sent = self.update_on_device(&ctx, p, rows)?;
            *copied = Some(p.version());
            return Ok(sent);
        }
        let bl = self.block_rows * self.block_cols;
        let (diag, offd) = (p.diag().host()?, p.offd().host()?);
        let n_diag = diag.len() / bl;
        let packed: Vec<Vec<f64>> = self
            .send
            .iter()
            .map(|(_, slots)| {
                let mut v = Vec::with_capacity(slots.len() * bl);
                for &k in slots {
                    let k = k as usize;
                    if k < n_diag {
                        v.extend_from_slice(&diag[k * bl..(k + 1) * bl]);
                    } else {
                        v.extend_from_slice(&offd[(k - n_diag) * bl..(k - n_diag + 1) * bl]);
                    }
                }
                v
            })
            .collect();
        let sends: Vec<(usize, &[f64])> = self
            .send
            .iter()
            .zip(&packed)
            .map(|((r, _), v)| (*r, v.as_slice()))
            .collect();
        let mut rest: &mut [f64] = rows.host_mut()?;
        let mut recvs = Vec::with_capacity(self.recv.len());
        for (r, slots) in &self.recv {
            let (head, tail) = rest.split_at_mut(slots.len() * bl);
            recvs.push((*r, head));
            rest = tail;
        }
        self.comm.exchange(&sends, &mut recvs, &mut || ())?;
        *copied = Some(p.version());
        Ok(packed.iter().map(Vec::len).sum())
    }

    /// The update of device `rows` from `p` on the same GPU (`ctx`'s, checked): the sent blocks
    /// packed from `P`'s parts, exchanged by the plan's [`DeviceHalo`] (made at the first
    /// device update), the received ones copied into `rows`. Returns the values sent.
    fn update_on_device(
        &self,
        ctx: &Arc<CudaContext>,
        p: &DistBsr,
        rows: &mut Bsr,
    ) -> Result<usize, LinalgError> {
        let bl = self.block_rows * self.block_cols;
        let mut state = self.device.lock().unwrap_or_else(|e| e.into_inner());
        let g = match state.as_mut() {
            Some(g) if Arc::ptr_eq(&g.ctx, ctx) => g,
            _ => state.insert(self.device_messages(ctx)?),
        };
        gather_blocks_two(
            ctx,
            bl,
            &g.send_idx,
            TwoSources {
                n0: p.diag().pattern().nnz(),
                a: p.diag().device_bsr()?.values(),
                b: p.offd().device_bsr()?.values(),
            },
            &mut g.packed,
        )?;
        let ghosts = g.halo.fill_ghosts(&g.packed, || Ok(()))?;
        ctx.copy(ghosts, rows.device_bsr_mut()?.values_mut())?;
        Ok(g.send_idx.len() * bl)
    }

    /// The plan's messages on `ctx`'s GPU (local: the peer-write channel, where the ranks
    /// have one, opens at the first exchange, which every rank makes together).
    fn device_messages(&self, ctx: &Arc<CudaContext>) -> Result<DeviceRowGather, LinalgError> {
        let bl = self.block_rows * self.block_cols;
        let send_idx: Vec<u32> = self
            .send
            .iter()
            .flat_map(|(_, s)| s.iter().copied())
            .collect();
        let mut at = 0u32;
        let packed_lists = self
            .send
            .iter()
            .map(|(r, s)| {
                let list = (at..at + s.len() as u32).collect();
                at += s.len() as u32;
                (*r, list)
            })
            .collect();
        let plan = HaloPlan::from_lists(
            self.comm.clone(),
            bl,
            send_idx.len(),
            self.pattern.nnz(),
            self.recv.clone(),
            packed_lists,
        );
        Ok(DeviceRowGather {
            packed: ctx.zeros(send_idx.len() * bl)?,
            send_idx: ctx.upload(&send_idx)?,
            halo: DeviceHalo::new(Arc::new(plan), ctx.clone())?,
            ctx: ctx.clone(),
        })
    }
}
