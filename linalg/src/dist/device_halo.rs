//! [`DeviceHalo`]: a [`HaloPlan`]'s messages for vectors in GPU memory, staged through pinned
//! host memory.
//!
//! Forward ([`DeviceHalo::fill_ghosts`], the SpMV's exchange): a gather kernel packs the owned
//! blocks other ranks need into one device buffer, one asynchronous copy brings it to pinned host
//! memory, the caller's overlapped work (the diagonal part's product) is queued behind it, the
//! host waits for the copy only (a stream mark), MPI moves the values between pinned buffers,
//! and one asynchronous copy puts the ghosts on the device. Reverse
//! ([`DeviceHalo::add_ghost_contributions`], the restriction's exchange): the ghost-sized
//! contributions go back to their owners, which add them rank after rank (the host's order).
//! Values travel unchanged, so results are the host path's bits.
//!
//! Where the context has NCCL peers ([`CudaContext::set_peers`] on every rank, over the plan's
//! ranks), the same messages go device to device instead, on a second stream ordered between
//! the packing and the consuming kernels by events, the overlapped work running beside them:
//! no staging copies and no host synchronisation. Both paths move the same values and add
//! them in the same order: the same bits.
//!
//! Where those peers also have peer writes on ([`DeviceComm::set_peer_writes`], the `ipc`
//! exchange), the plan's messages are stored by each GPU straight into its neighbours' memory
//! instead ([`PeerChannel`], opened at the plan's first exchange): two kernels per exchange on
//! the one stream, the same values in the same order.

use std::sync::Arc;

use comm::Comm;

use crate::backend::cuda::halo::{
    gather_blocks, pinned_at_first_use, scatter_add_blocks, PinnedBuffer, StreamMark,
};
use crate::backend::cuda::peer::{PeerChannel, PeerLists, PeerWait};
use crate::backend::cuda::{CudaContext, DeviceBuffer, DeviceComm};
use crate::dist::HaloPlan;
use crate::LinalgError;

/// Device buffers of one [`HaloPlan`] on one GPU (made once, reused by every exchange; one
/// exchange at a time).
#[derive(Debug)]
pub struct DeviceHalo {
    plan: Arc<HaloPlan>,
    ctx: Arc<CudaContext>,
    /// The plan's send lists, concatenated in its rank order (owned block indices).
    send_idx: DeviceBuffer<u32>,
    /// Block range of each send list in `send_idx`.
    send_ranges: Vec<std::ops::Range<usize>>,
    send_dev: DeviceBuffer<f64>,
    ghost_dev: DeviceBuffer<f64>,
    /// The pinned host copies of `send_dev` and `ghost_dev` for the exchange through MPI,
    /// made by its first exchange (the NCCL and peer-write exchanges need none).
    staging: Option<[PinnedBuffer; 2]>,
    /// The peer-write channel, once opened (the `ipc` exchange only).
    channel: Option<PeerChannel>,
}

/// Bytes one exchange moves: between device and host (each way) and through MPI (sent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HaloBytes {
    /// Device to pinned host memory.
    pub device_to_host: u64,
    /// Pinned host memory to device.
    pub host_to_device: u64,
    /// Sent to other ranks.
    pub sent: u64,
}

impl DeviceHalo {
    /// Uploads the plan's send lists and allocates the device buffers on `ctx`'s GPU (local;
    /// the pinned host buffers follow at the first exchange that stages through them).
    pub fn new(plan: Arc<HaloPlan>, ctx: Arc<CudaContext>) -> Result<Self, LinalgError> {
        let bs = plan.block_size();
        let mut idx = Vec::new();
        let mut send_ranges = Vec::new();
        for (_, blocks) in plan.sends() {
            let start = idx.len();
            idx.extend_from_slice(blocks);
            send_ranges.push(start..idx.len());
        }
        let n_send = idx.len() * bs;
        let n_ghost = plan.ghosts().len() * bs;
        Ok(Self {
            send_idx: ctx.upload(&idx)?,
            send_ranges,
            send_dev: ctx.zeros(n_send)?,
            ghost_dev: ctx.zeros(n_ghost)?,
            staging: None,
            channel: None,
            plan,
            ctx,
        })
    }

    /// The plan served.
    pub fn plan(&self) -> &Arc<HaloPlan> {
        &self.plan
    }

    /// Bytes of one exchange (forward or reverse: the same messages, reversed).
    pub fn bytes_per_exchange(&self) -> HaloBytes {
        let send = (self.send_dev.len() * 8) as u64;
        let ghost = (self.ghost_dev.len() * 8) as u64;
        if self.peers().is_some() {
            return HaloBytes {
                device_to_host: 0,
                host_to_device: 0,
                sent: send,
            };
        }
        HaloBytes {
            device_to_host: send,
            host_to_device: ghost,
            sent: send,
        }
    }

    /// The context's NCCL peers, if they span the plan's ranks (same rank, same size).
    pub fn peers(&self) -> Option<&Arc<DeviceComm>> {
        let comm = self.plan.comm();
        self.ctx
            .peers()
            .filter(|p| p.rank_and_size() == (comm.rank(), comm.size()))
    }

    /// Collective over the plan's neighbours. Fills the ghost buffer from the owners' entries of
    /// `x_owned` (the owned blocks of a device vector), running `overlap` (which queues device
    /// work, say the diagonal product) while the messages travel; returns the ghosts.
    pub fn fill_ghosts(
        &mut self,
        x_owned: &DeviceBuffer<f64>,
        overlap: impl FnOnce() -> Result<(), LinalgError>,
    ) -> Result<&DeviceBuffer<f64>, LinalgError> {
        let ctx = self.ctx.clone();
        let (ghosts, wait) = self.fill_ghosts_deferred(x_owned, overlap)?;
        if let Some(w) = wait {
            w.queue(&ctx)?;
        }
        Ok(ghosts)
    }

    /// [`Self::fill_ghosts`], where the exchange writes into the neighbours' memory, without
    /// its wait for their messages: returned for the kernel that first reads the ghosts
    /// ([`PeerWait`]: it waits at its start, or queue it alone). `None` where the ghosts are
    /// ready for work queued after this call (other exchanges, or nothing comes in).
    pub fn fill_ghosts_deferred(
        &mut self,
        x_owned: &DeviceBuffer<f64>,
        overlap: impl FnOnce() -> Result<(), LinalgError>,
    ) -> Result<(&DeviceBuffer<f64>, Option<PeerWait<'_>>), LinalgError> {
        let bs = self.plan.block_size();
        let expected = self.plan.n_owned() * bs;
        if x_owned.len() != expected {
            return Err(LinalgError::LengthMismatch {
                what: "DeviceHalo::fill_ghosts: owned entries",
                expected,
                found: x_owned.len(),
            });
        }
        if let Some(peers) = self.peers().filter(|p| p.peer_writes()).cloned() {
            self.open_channel()?;
            let channel = self.channel.as_mut().expect("opened");
            let (ghosts, wait, sent) = channel.forward_deferred(x_owned, overlap)?;
            peers.count_sent(sent.messages, sent.bytes);
            return Ok((ghosts, wait));
        }
        Ok((self.fill_ghosts_staged(x_owned, overlap)?, None))
    }

    /// [`Self::fill_ghosts`] through NCCL or pinned host memory (checked lengths).
    fn fill_ghosts_staged(
        &mut self,
        x_owned: &DeviceBuffer<f64>,
        overlap: impl FnOnce() -> Result<(), LinalgError>,
    ) -> Result<&DeviceBuffer<f64>, LinalgError> {
        let bs = self.plan.block_size();
        let ctx = &*self.ctx;
        gather_blocks(ctx, bs, &self.send_idx, x_owned, &mut self.send_dev)?;
        if let Some(peers) = self.peers().cloned() {
            peers.exchange(
                self.plan
                    .sends()
                    .iter()
                    .map(|(r, _)| *r)
                    .zip(self.send_ranges.iter().map(|b| b.start * bs..b.end * bs)),
                &self.send_dev,
                self.plan
                    .receives()
                    .iter()
                    .map(|(r, g)| (*r, g.start * bs..g.end * bs)),
                &mut self.ghost_dev,
                overlap,
            )?;
            return Ok(&self.ghost_dev);
        }
        let lens = [self.send_dev.len(), self.ghost_dev.len()];
        let [send_host, ghost_host] = pinned_at_first_use(&mut self.staging, ctx, lens)?;
        send_host.download_from(ctx, &self.send_dev)?;
        let packed = StreamMark::record(ctx)?;
        overlap()?;
        packed.wait()?;
        exchange(
            &**self.plan.comm(),
            self.plan
                .sends()
                .iter()
                .map(|(r, _)| *r)
                .zip(self.send_ranges.iter().map(|b| b.start * bs..b.end * bs)),
            send_host.as_slice()?,
            self.plan
                .receives()
                .iter()
                .map(|(r, g)| (*r, g.start * bs..g.end * bs)),
            ghost_host.as_mut_slice()?,
        )?;
        ghost_host.upload_to(ctx, &mut self.ghost_dev)?;
        Ok(&self.ghost_dev)
    }

    /// Collective over the plan's neighbours. The reverse exchange: `ghost_values` (one block
    /// per ghost) go to the ghosts' owners, and the blocks other ranks send here are added into
    /// `y_owned` (owned blocks), rank after rank in the plan's order. `overlap` queues the work
    /// that writes `y_owned` before the additions (the local product of a restriction); it runs
    /// while the messages travel.
    pub fn add_ghost_contributions(
        &mut self,
        ghost_values: &DeviceBuffer<f64>,
        y_owned: &mut DeviceBuffer<f64>,
        overlap: impl FnOnce(&mut DeviceBuffer<f64>) -> Result<(), LinalgError>,
    ) -> Result<(), LinalgError> {
        let bs = self.plan.block_size();
        let expected = self.plan.n_owned() * bs;
        if y_owned.len() != expected {
            return Err(LinalgError::LengthMismatch {
                what: "DeviceHalo::add_ghost_contributions: owned entries",
                expected,
                found: y_owned.len(),
            });
        }
        if let Some(peers) = self.peers().filter(|p| p.peer_writes()).cloned() {
            self.open_channel()?;
            let channel = self.channel.as_mut().expect("opened");
            let (returned, wait, sent) =
                channel.reverse_deferred(ghost_values, || overlap(&mut *y_owned))?;
            peers.count_sent(sent.messages, sent.bytes);
            return add_blocks(
                &self.ctx,
                bs,
                &self.send_idx,
                &self.send_ranges,
                returned,
                y_owned,
                wait,
            );
        }
        let ctx = &*self.ctx;
        if let Some(peers) = self.peers().cloned() {
            peers.exchange(
                self.plan
                    .receives()
                    .iter()
                    .map(|(r, g)| (*r, g.start * bs..g.end * bs)),
                ghost_values,
                self.plan
                    .sends()
                    .iter()
                    .map(|(r, _)| *r)
                    .zip(self.send_ranges.iter().map(|b| b.start * bs..b.end * bs)),
                &mut self.send_dev,
                || overlap(&mut *y_owned),
            )?;
            return self.add_received(y_owned);
        }
        let lens = [self.send_dev.len(), self.ghost_dev.len()];
        let [send_host, ghost_host] = pinned_at_first_use(&mut self.staging, ctx, lens)?;
        ghost_host.download_from(ctx, ghost_values)?;
        let downloaded = StreamMark::record(ctx)?;
        overlap(&mut *y_owned)?;
        downloaded.wait()?;
        exchange(
            &**self.plan.comm(),
            self.plan
                .receives()
                .iter()
                .map(|(r, g)| (*r, g.start * bs..g.end * bs)),
            ghost_host.as_slice()?,
            self.plan
                .sends()
                .iter()
                .map(|(r, _)| *r)
                .zip(self.send_ranges.iter().map(|b| b.start * bs..b.end * bs)),
            send_host.as_mut_slice()?,
        )?;
        send_host.upload_to(ctx, &mut self.send_dev)?;
        self.add_received(y_owned)
    }

    /// Adds the received blocks (in `send_dev`, the send lists' layout) into `y_owned`, one
    /// neighbour after another in the plan's order.
    fn add_received(&self, y_owned: &mut DeviceBuffer<f64>) -> Result<(), LinalgError> {
        let bs = self.plan.block_size();
        add_blocks(
            &self.ctx,
            bs,
            &self.send_idx,
            &self.send_ranges,
            &self.send_dev,
            y_owned,
            None,
        )
    }

    /// Opens the peer-write channel if it is not open yet (collective over the plan's
    /// neighbours: it runs at the plan's first exchange, which they all make together).
    fn open_channel(&mut self) -> Result<(), LinalgError> {
        if self.channel.is_some() {
            return Ok(());
        }
        let bs = self.plan.block_size();
        let send_idx: Vec<u32> = self
            .plan
            .sends()
            .iter()
            .flat_map(|(_, b)| b.iter().copied())
            .collect();
        let sends: Vec<(usize, std::ops::Range<usize>)> = self
            .plan
            .sends()
            .iter()
            .map(|(r, _)| *r)
            .zip(self.send_ranges.iter().cloned())
            .collect();
        let receives: Vec<(usize, std::ops::Range<usize>)> = self
            .plan
            .receives()
            .iter()
            .map(|(r, g)| (*r, g.clone()))
            .collect();
        let lists = PeerLists {
            bs,
            n_ghosts: self.plan.ghosts().len(),
            sends: &sends,
            send_idx: &send_idx,
            receives: &receives,
        };
        self.channel = Some(PeerChannel::open(&self.ctx, &**self.plan.comm(), &lists)?);
        Ok(())
    }
}

/// Adds `buf` (blocks in the send lists' layout) into `y_owned` at the listed blocks, one
/// neighbour's range after another.
fn add_blocks(
    ctx: &CudaContext,
    bs: usize,
    send_idx: &DeviceBuffer<u32>,
    send_ranges: &[std::ops::Range<usize>],
    buf: &DeviceBuffer<f64>,
    y_owned: &mut DeviceBuffer<f64>,
    wait: Option<PeerWait<'_>>,
) -> Result<(), LinalgError> {
    // the first addition waits for the peers' messages (if any); the others follow it
    let mut wait = wait;
    for blocks in send_ranges {
        scatter_add_blocks(
            ctx,
            bs,
            send_idx,
            blocks.clone(),
            buf,
            y_owned,
            wait.as_ref(),
        )?;
        wait = None;
    }
    match wait {
        Some(w) => w.queue(ctx),
        None => Ok(()),
    }
}

/// One neighbour exchange between pinned buffers: `sends` are (rank, entry range of `send`),
/// `recvs` (rank, entry range of `recv`).
fn exchange(
    comm: &dyn Comm,
    sends: impl Iterator<Item = (usize, std::ops::Range<usize>)>,
    send: &[f64],
    recvs: impl Iterator<Item = (usize, std::ops::Range<usize>)>,
    recv: &mut [f64],
) -> Result<(), LinalgError> {
    let sends: Vec<(usize, &[f64])> = sends.map(|(r, e)| (r, &send[e])).collect();
    let mut parts = Vec::new();
    let mut rest = recv;
    let mut at = 0;
    for (r, e) in recvs {
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(e.start - at);
        let (head, tail) = tail.split_at_mut(e.len());
        parts.push((r, head));
        rest = tail;
        at = e.end;
    }
    comm.exchange(&sends, &mut parts, &mut || ())?;
    Ok(())
}
