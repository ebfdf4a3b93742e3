//! The distributed Galerkin product's numeric phase on one GPU per rank: [`DeviceGalerkin`],
//! a [`GalerkinProductPlan`] with its operands and index lists uploaded (once per version of
//! `P`), used by the hot update of a [`super::DistHierarchy`] whose levels live on the GPU
//! (`LevelMatrix::galerkin_into`) and by its kept renewal.
//!
//! One product: the local `A`'s blocks gathered from the device operator's `diag` / `offd`
//! values, the two device spgemm numerics (the host plans' device mirrors: the host's bits),
//! the partial blocks other ranks own gathered into one device buffer and sent to their owners
//! GPU to GPU where the context has peers (`linalg::dist::connect_rank_devices`: written
//! straight into the owners' memory under the `ipc` exchange, else through NCCL), else
//! downloaded into pinned memory (this rank's own blocks stay on the device), one
//! all-to-all of values on the host and the received blocks uploaded; then every coarse block
//! summed on the device from its contributions in the plan's order (this rank's partial blocks and the received ones): the
//! host product's bits ([`GalerkinProductPlan::numeric`]).

use std::ops::Range;
use std::sync::Arc;

use linalg::comm::Comm;
use linalg::dist::{DistBsr, DistPattern};
use linalg::gpu::{
    gather_blocks, pinned_at_first_use, sum_blocks_in_order, CudaContext, DeviceBuffer,
    PeerChannel, PeerLists, PinnedBuffer, StreamMark, TwoSources,
};
use linalg::{Bsr, Device, SpgemmPlan};

use super::device_local_a::DeviceLocalA;
use crate::dist_galerkin::GalerkinProductPlan;
use crate::AmgError;

/// A [`GalerkinProductPlan`] on a GPU (see the module doc).
///
/// Invariants: `local_a` is the plan's local `A` (the level's one on the device, lent to the
/// device smoothing); the send and receive lists and the sums are a
/// [`crate::dist_galerkin::SplitReduction`]'s (the partial blocks on the device, `recv_dev`
/// the `others`), uploaded.
#[derive(Debug)]
pub(super) struct DeviceGalerkin {
    ctx: Arc<CudaContext>,
    comm: Arc<dyn Comm>,
    coarse: Arc<DistPattern>,
    local_a: DeviceLocalA,
    p_ext: Bsr,
    ap_plan: SpgemmPlan,
    ap: Bsr,
    pt: Bsr,
    partial_plan: SpgemmPlan,
    partial: Bsr,
    kk: usize,
    send_idx: DeviceBuffer<u32>,
    /// `send_idx` on the host (for opening the peer-write channel).
    send_idx_host: Vec<u32>,
    send_ranges: Vec<Range<usize>>,
    send_dev: DeviceBuffer<f64>,
    recv_ranges: Vec<Range<usize>>,
    recv_dev: DeviceBuffer<f64>,
    /// Pinned host copies of `send_dev` and `recv_dev` for the reduction through MPI, made by
    /// its first product (the NCCL and peer-write reductions need none).
    staging: Option<[PinnedBuffer; 2]>,
    diag_ptr: DeviceBuffer<u32>,
    diag_contrib: DeviceBuffer<u32>,
    offd_ptr: DeviceBuffer<u32>,
    offd_contrib: DeviceBuffer<u32>,
    /// The reduction's peer-write channel (the `ipc` exchange; opened by the first product).
    channel: Option<PeerChannel>,
}

/// `n` zeros on the device; no allocation for `n == 0` (a rank whose partial blocks all stay,
/// or that receives none).
fn zeros(ctx: &CudaContext, n: usize) -> Result<DeviceBuffer<f64>, AmgError> {
    Ok(if n == 0 {
        ctx.upload::<f64>(&[])?
    } else {
        ctx.zeros(n)?
    })
}

impl DeviceGalerkin {
    /// Uploads `plan` and `p_ext` (the view the plan was made from) to `device` (a GPU), and
    /// runs both products once, so that the products' device plans (pair lists) are made here
    /// and hot updates move no plan (local: no messages, except opening the peer-write channel
    /// where the ranks write into one another's memory, which every rank does as it uploads
    /// its levels).
    pub(super) fn upload(
        plan: &GalerkinProductPlan,
        p_ext: &Bsr,
        device: &Device,
    ) -> Result<Self, AmgError> {
        let mut g = Self::upload_for_product(plan, p_ext, device, None)?;
        linalg::spgemm_numeric(&g.ap_plan, g.local_a.values(), &g.p_ext, &mut g.ap)?;
        linalg::spgemm_numeric(&g.partial_plan, &g.pt, &g.ap, &mut g.partial)?;
        let comm = &g.comm;
        if g.ctx
            .peers()
            .is_some_and(|p| p.peer_writes() && p.rank_and_size() == (comm.rank(), comm.size()))
        {
            g.open_channel()?;
        }
        Ok(g)
    }

    /// [`Self::upload`] without its products: for a caller whose next call is
    /// [`Self::numeric`] (a cold coarsening on the device), whose products make the device
    /// plans (local). `local_a`: the level's local `A` on the device where the caller made
    /// one (for the device smoothing), taken over where it is the plan's (else a new one).
    pub(super) fn upload_for_product(
        plan: &GalerkinProductPlan,
        p_ext: &Bsr,
        device: &Device,
        local_a: Option<DeviceLocalA>,
    ) -> Result<Self, AmgError> {
        let ctx =
            super::device::gpu_context(device, "must be a GPU for the device Galerkin product")?;
        let comm = plan.coarse_pattern().partition().comm().clone();
        let k = plan.pt.block_rows();
        let kk = k * k;
        let bs = plan.pt.block_cols();
        let split = plan.split().clone();
        let n_send = split.send_idx.len() * kk;
        let n_recv = split.n_recv;
        let local_a = match local_a.filter(|l| l.is_for(&plan.a_local)) {
            Some(l) => l,
            None => DeviceLocalA::new(&plan.a_local, bs, device)?,
        };
        Ok(Self {
            local_a,
            p_ext: p_ext.to_device(device)?,
            // every hot update repeats both products: their device plans keep pair lists
            ap_plan: plan.ap_plan.clone().for_repeated_products(),
            // the products' value buffers are made on the device (each product overwrites them)
            ap: Bsr::zeros_on(device, plan.ap_plan.pattern().clone(), bs, k)?,
            pt: plan.pt.to_device(device)?,
            partial_plan: plan.partial_plan.clone().for_repeated_products(),
            partial: Bsr::zeros_on(device, plan.partial_plan.pattern().clone(), k, k)?,
            kk,
            send_idx: ctx.upload(&split.send_idx)?,
            send_idx_host: split.send_idx,
            send_ranges: split.send_ranges,
            send_dev: zeros(&ctx, n_send)?,
            recv_ranges: split.recv_ranges,
            recv_dev: zeros(&ctx, n_recv * kk)?,
            staging: None,
            diag_ptr: ctx.upload(&split.diag_ptr)?,
            diag_contrib: ctx.upload(&split.diag_contrib)?,
            offd_ptr: ctx.upload(&split.offd_ptr)?,
            offd_contrib: ctx.upload(&split.offd_contrib)?,
            channel: None,
            coarse: plan.coarse_pattern().clone(),
            comm,
            ctx,
        })
    }

    /// New values of `P` on the patterns the plan was made for (a renewal that kept the
    /// aggregates): `P_ext` and `P_owned^T` copied (values alone) from the plan `plan` (the
    /// same symbolic product) and view `p_ext`, on this GPU (a copy there) or the host (an
    /// upload). Local.
    pub(super) fn upload_p_values(
        &mut self,
        plan: &GalerkinProductPlan,
        p_ext: &Bsr,
    ) -> Result<(), AmgError> {
        if !Arc::ptr_eq(plan.coarse_pattern(), &self.coarse) {
            return Err(AmgError::InvalidParameter {
                name: "device Galerkin plan",
                value: "another symbolic product".into(),
                reason: "must be the one uploaded (an internal error)",
            });
        }
        self.p_ext.upload_values_from(p_ext)?;
        self.pt.upload_values_from(&plan.pt)?;
        Ok(())
    }

    /// Bytes of one product's blocks received from other ranks.
    pub(super) fn bytes_received(&self) -> u64 {
        (self.recv_dev.len() * 8) as u64
    }

    /// Collective. `out = P^T a P` on the device (`a`: the level's device operator on the
    /// plan's pattern; `out`: the next level's device operator on [`Self::coarse_pattern`]);
    /// returns the bytes this rank sent to other ranks.
    pub(super) fn numeric(&mut self, a: &DistBsr, out: &mut DistBsr) -> Result<u64, AmgError> {
        self.local_a.gather(a)?;
        self.numeric_gathered(out)
    }

    /// The level's local `A` on the device, for the device smoothing to read after
    /// [`Self::gather_local_a`].
    pub(super) fn local_a(&self) -> &DeviceLocalA {
        &self.local_a
    }

    /// Gathers the local `A` of the device operator `a` (the plan's pattern). Local.
    pub(super) fn gather_local_a(&mut self, a: &DistBsr) -> Result<(), AmgError> {
        self.local_a.gather(a)
    }

    /// Collective. [`Self::numeric`] of the operator whose local `A` was gathered last
    /// ([`Self::gather_local_a`], or the smoothing's local `A` taken over by
    /// [`Self::upload_for_product`]).
    pub(super) fn numeric_gathered(&mut self, out: &mut DistBsr) -> Result<u64, AmgError> {
        if !Arc::ptr_eq(out.pattern(), &self.coarse) {
            return Err(AmgError::InvalidParameter {
                name: "coarse operator",
                value: "another pattern".into(),
                reason: "must be on the Galerkin plan's coarse pattern",
            });
        }
        let ctx = &*self.ctx;
        let a_local = self.local_a.values();
        linalg::spgemm_numeric(&self.ap_plan, a_local, &self.p_ext, &mut self.ap)?;
        linalg::spgemm_numeric(&self.partial_plan, &self.pt, &self.ap, &mut self.partial)?;
        let kk = self.kk;
        let comm = &self.comm;
        let peers = ctx
            .peers()
            .filter(|p| p.rank_and_size() == (comm.rank(), comm.size()))
            .cloned();
        if let Some(peers) = peers.as_ref().filter(|p| p.peer_writes()) {
            // the partial blocks written straight into their owners' memory
            self.open_channel()?;
            let channel = self.channel.as_mut().expect("opened");
            let partial = self.partial.device_bsr()?.values();
            let (_, sent) = channel.forward(partial, || Ok(()))?;
            peers.count_sent(sent.messages, sent.bytes);
            let channel = self.channel.as_ref().expect("opened");
            return self.sum_in_order(out, channel.ghosts());
        }
        let partial = self.partial.device_bsr()?.values();
        gather_blocks(ctx, kk, &self.send_idx, partial, &mut self.send_dev)?;
        if let Some(peers) = peers {
            // GPU to GPU (NCCL), ordered on the stream: no staging, no host wait
            peers.exchange(
                self.send_ranges
                    .iter()
                    .enumerate()
                    .map(|(r, b)| (r, b.start * kk..b.end * kk)),
                &self.send_dev,
                self.recv_ranges
                    .iter()
                    .enumerate()
                    .map(|(r, b)| (r, b.start * kk..b.end * kk)),
                &mut self.recv_dev,
                || Ok(()),
            )?;
            return self.sum_in_order(out, &self.recv_dev);
        }
        let lens = [self.send_dev.len(), self.recv_dev.len()];
        let [send_host, recv_host] = pinned_at_first_use(&mut self.staging, ctx, lens)?;
        send_host.download_from(ctx, &self.send_dev)?;
        StreamMark::record(ctx)?.wait()?;
        let staged = send_host.as_slice()?;
        let send: Vec<Vec<f64>> = self
            .send_ranges
            .iter()
            .map(|r| staged[r.start * kk..r.end * kk].to_vec())
            .collect();
        let received = self.comm.alltoallv_f64(&send)?;
        let recv = recv_host.as_mut_slice()?;
        for (msg, r) in received.iter().zip(&self.recv_ranges) {
            if msg.len() != r.len() * kk {
                return Err(AmgError::DimensionMismatch {
                    what: "device Galerkin product: partial blocks received from a rank",
                    expected: r.len() * kk,
                    found: msg.len(),
                });
            }
            recv[r.start * kk..r.end * kk].copy_from_slice(msg);
        }
        recv_host.upload_to(ctx, &mut self.recv_dev)?;
        let sent = self.sum_in_order(out, &self.recv_dev)?;
        // The pinned receive buffer is written again by the next product: wait for its copy.
        StreamMark::record(ctx)?.wait()?;
        Ok(sent)
    }

    /// Collective over the reduction's neighbours: opens the peer-write channel if it is not
    /// open yet (its index tables go up once).
    fn open_channel(&mut self) -> Result<(), AmgError> {
        if self.channel.is_some() {
            return Ok(());
        }
        let kk = self.kk;
        let ranges = |rs: &[Range<usize>]| -> Vec<(usize, Range<usize>)> {
            rs.iter().cloned().enumerate().collect()
        };
        let (sends, receives) = (ranges(&self.send_ranges), ranges(&self.recv_ranges));
        let lists = PeerLists {
            bs: kk,
            n_ghosts: self.recv_dev.len() / kk.max(1),
            sends: &sends,
            send_idx: &self.send_idx_host,
            receives: &receives,
        };
        self.channel = Some(PeerChannel::open(&self.ctx, &*self.comm, &lists)?);
        Ok(())
    }

    /// Every coarse block of `out` summed from this rank's partial blocks and the received
    /// ones (`received`, in the receive lists' layout) in the plan's order; returns the bytes
    /// this rank sent.
    fn sum_in_order(
        &self,
        out: &mut DistBsr,
        received: &DeviceBuffer<f64>,
    ) -> Result<u64, AmgError> {
        let ctx = &*self.ctx;
        let kk = self.kk;
        let n_partial = self.partial.pattern().nnz();
        let partial = self.partial.device_bsr()?.values();
        let (d, o) = out.parts_mut();
        for (ptr, contrib, part) in [
            (&self.diag_ptr, &self.diag_contrib, d),
            (&self.offd_ptr, &self.offd_contrib, o),
        ] {
            sum_blocks_in_order(
                ctx,
                kk,
                ptr,
                contrib,
                TwoSources {
                    n0: n_partial,
                    a: partial,
                    b: received,
                },
                part.device_bsr_mut()?.values_mut(),
            )?;
        }
        Ok((self.send_dev.len() * 8) as u64)
    }
}
