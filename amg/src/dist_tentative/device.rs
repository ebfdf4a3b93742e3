//! [`DistTentativePlan::numeric`] on a rank's GPU ([`DistTentativePlan::numeric_on_device`]):
//! the near-null rows on the device in, `P0` and the coarse near-null rows on the device out.
//!
//! The plan's index arrays go up once (the first device numeric, kept in the plan): the rows
//! each rank sends are gathered there and only they come down for the all-to-all (members of
//! aggregates owned by another rank: the partition's boundary); the received rows go up behind
//! the owned ones, the per-aggregate QR runs on the device ([`GroupedQrPlan`], `linalg/cuda/qr.cu`:
//! the host's `thin_qr` bit for bit), the `Q` rows other ranks asked for are gathered and come
//! down for the second all-to-all, and `P0`'s `diag` and `offd` values are gathered from the
//! local `Q` rows and those returned. The same bits as the host numeric phase.

use rayon::prelude::*;
use std::sync::Arc;

use linalg::dist::DistBsr;
use linalg::gpu::{gather_blocks, gather_blocks_two, CudaContext, DeviceBuffer, TwoSources};
use linalg::{comm, exclusive_sums, BlockPattern, Bsr, Device, GroupedQrPlan, Vector};

use super::{check_returned, DistTentative, DistTentativePlan};
use crate::AmgError;

/// The device part of a [`DistTentativePlan`] (made at its first device numeric phase).
///
/// Invariants: the QR's input is `[owned rows; received rows]` (`n_owned` owned vertices, then
/// the records of rank 0, 1, ... in arrival order), its members in the plan's group order and
/// its output `Q` one block per member in that order; `send` lists the owned vertices sent to
/// each rank (`send_counts`, rank after rank: the plan's `senders`), `back` the members whose
/// `Q` rows go back to each rank (`back_counts`: the plan's `member_at`); `p_diag` (`p_offd`)
/// gives each `diag` (`offd`) slot of `P0` its block in `[Q; returned records]` (`n_members`
/// blocks of `Q`, then the records returned by rank 0, 1, ...).
#[derive(Debug)]
pub(super) struct DeviceTentativePlan {
    ctx: Arc<CudaContext>,
    qr: GroupedQrPlan,
    q_pattern: Arc<BlockPattern>,
    send: DeviceBuffer<u32>,
    send_counts: Vec<usize>,
    back: DeviceBuffer<u32>,
    back_counts: Vec<usize>,
    p_diag: DeviceBuffer<u32>,
    p_offd: DeviceBuffer<u32>,
    n_members: usize,
}

/// Each `(rank, index)` as a position in `[this rank's n_local; rank 0's records; rank 1's; ...]`
/// (`at[r]`: where rank `r`'s records start after the local ones).
fn positions(sources: &[(u32, u32)], rank: usize, n_local: usize, at: &[usize]) -> Vec<u32> {
    sources
        .par_iter()
        .map(|&(r, i)| match r as usize == rank {
            true => i,
            false => (n_local + at[r as usize] + i as usize) as u32,
        })
        .collect()
}

impl DeviceTentativePlan {
    /// The device part of `plan` on `ctx` (local; an aggregate of fewer rows than `k` is an
    /// error, as the host numeric phase's).
    fn new(plan: &DistTentativePlan, ctx: &Arc<CudaContext>) -> Result<Self, AmgError> {
        let rank = plan.coarse_partition.comm().rank();
        let n_owned = plan.labels.len();
        let received_at = exclusive_sums(&plan.received_counts);
        let returned_at = exclusive_sums(&plan.senders.iter().map(Vec::len).collect::<Vec<_>>());
        let members = positions(&plan.members, rank, n_owned, &received_at);
        let n_members = members.len();
        let qr = GroupedQrPlan::new(
            plan.group_ptr.clone(),
            members,
            (0..n_members as u32).into_par_iter().collect(),
            plan.bs,
            plan.k,
        )?;
        let q_pattern = Arc::new(BlockPattern::new(
            n_members,
            1,
            (0..=n_members).into_par_iter().collect(),
            vec![0; n_members],
        )?);
        // each entry of `P0` (an aggregated owned vertex, in vertex order): its block in
        // `[Q; returned records]`
        let entry_block = positions(&plan.entry_source, rank, n_members, &returned_at);
        let pattern = &plan.p_pattern;
        let (diag_slots, offd_slots) = pattern.slot_entries().split_at(pattern.diag().nnz());
        let slot_blocks = |slots: &[u32]| -> Vec<u32> {
            slots.par_iter().map(|&e| entry_block[e as usize]).collect()
        };
        let upload = |v: &[u32]| ctx.upload(if v.is_empty() { &[0u32][..] } else { v });
        let send: Vec<u32> = plan.senders.concat();
        let back: Vec<u32> = plan.member_at.concat();
        Ok(Self {
            qr,
            q_pattern,
            send: upload(&send)?,
            send_counts: plan.senders.iter().map(Vec::len).collect(),
            back: upload(&back)?,
            back_counts: plan.member_at.iter().map(Vec::len).collect(),
            p_diag: upload(&slot_blocks(diag_slots))?,
            p_offd: upload(&slot_blocks(offd_slots))?,
            n_members,
            ctx: ctx.clone(),
        })
    }

    /// The blocks `idx[..n]` (`slab` values each) of `src` downloaded and cut into one message
    /// per rank (`counts`).
    fn gathered_messages(
        &self,
        idx: &DeviceBuffer<u32>,
        counts: &[usize],
        src: &DeviceBuffer<f64>,
        slab: usize,
    ) -> Result<Vec<Vec<f64>>, AmgError> {
        let n: usize = counts.iter().sum();
        if n == 0 {
            return Ok(vec![Vec::new(); counts.len()]);
        }
        let ctx = &*self.ctx;
        // `idx` holds exactly the `n` blocks (a placeholder entry only where `n` is 0)
        let mut out = ctx.zeros::<f64>(n * slab)?;
        gather_blocks(ctx, slab, idx, src, &mut out)?;
        let all = ctx.download(&out)?;
        let at = exclusive_sums(counts);
        Ok(at
            .windows(2)
            .map(|w| all[w[0] * slab..w[1] * slab].to_vec())
            .collect())
    }
}

impl DistTentativePlan {
    /// Collective. [`Self::numeric`] with the owned vertices' near-null rows `nns` on this
    /// rank's GPU: `P0` on the plan's pattern with its values there, and the coarse near-null
    /// rows there (on the host where the coarse vertices were moved onto fewer ranks: they
    /// move as the host's do). The bits of [`Self::numeric`]; only the rows of members of
    /// aggregates owned elsewhere and their `Q` rows cross to the host (for the two
    /// all-to-alls), and the coarse rows where they move.
    pub fn numeric_on_device(&self, nns: &Vector) -> Result<DistTentative, AmgError> {
        let comm = self.coarse_partition.comm().clone();
        let slab = self.bs * self.k;
        let n = self.labels.len();
        let placed = match nns.device() {
            Device::Cuda(ctx) if nns.len() == n * slab => Ok(ctx),
            device => Err(format!(
                "tentative prolongator on a GPU: {} near-null values on {} for {n} owned vertices of {slab} values",
                nns.len(),
                device.name()
            )),
        };
        let ctx = comm::agree(&*comm, placed)?;
        let plan = match self.device.get() {
            Some(p) => Ok(p),
            None => DeviceTentativePlan::new(self, &ctx)
                .map(|p| self.device.get_or_init(|| p))
                .map_err(|e| e.to_string()),
        };
        let plan = comm::agree(&*comm, plan)?;
        let rows = nns.device_buffer()?;
        // the rows of members of aggregates owned elsewhere to the owners
        let received = comm.alltoallv_f64_moving(plan.gathered_messages(
            &plan.send,
            &plan.send_counts,
            rows,
            slab,
        )?)?;
        let counts_fit = received
            .iter()
            .zip(&self.received_counts)
            .all(|(m, &c)| m.len() == c * slab);
        comm::agree(
            &*comm,
            match counts_fit {
                true => Ok(()),
                false => {
                    Err("tentative prolongator: near-null rows received do not match the plan")
                }
            },
        )?;
        let device = Device::Cuda(ctx.clone());
        let received: Vec<f64> = received.concat();
        let mut input = ctx.zeros::<f64>((n * slab + received.len()).max(1))?;
        ctx.copy_range(rows, 0, &mut input, 0, n * slab)?;
        if !received.is_empty() {
            let up = ctx.upload(&received)?;
            ctx.copy_range(&up, 0, &mut input, n * slab, received.len())?;
        }
        let mut q = Bsr::zeros_on(&device, plan.q_pattern.clone(), self.bs, self.k)?;
        let coarse = plan
            .qr
            .factor_vector(&Vector::from_device_buffer(ctx.clone(), input), &mut q)?;
        // the `Q` rows of the other ranks' members back to them
        let q_values = q.device_bsr()?.values();
        let returned = comm.alltoallv_f64_moving(plan.gathered_messages(
            &plan.back,
            &plan.back_counts,
            q_values,
            slab,
        )?)?;
        check_returned(&returned, &self.senders, slab)?;
        let returned: Vec<f64> = returned.concat();
        let mut p = DistBsr::zeros_on(self.p_pattern.clone(), &device)?;
        {
            let (d, o) = p.parts_mut();
            let up = (!returned.is_empty())
                .then(|| ctx.upload(&returned))
                .transpose()?;
            for (part, idx) in [(d, &plan.p_diag), (o, &plan.p_offd)] {
                let len = part.pattern().nnz();
                if len == 0 {
                    continue;
                }
                let out = part.device_bsr_mut()?.values_mut();
                match &up {
                    Some(b) => gather_blocks_two(
                        &ctx,
                        slab,
                        idx,
                        TwoSources {
                            n0: plan.n_members,
                            a: q_values,
                            b,
                        },
                        out,
                    )?,
                    None => gather_blocks(&ctx, slab, idx, q_values, out)?,
                }
            }
        }
        self.with_coarse_rows(p, coarse)
    }
}
