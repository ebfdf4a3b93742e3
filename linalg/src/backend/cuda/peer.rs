//! [`PeerChannel`]: a halo plan's messages written by each GPU straight into its neighbours'
//! memory (CUDA IPC between the ranks' processes of one node, over NVLink or PCIe).
//!
//! Every rank exports its receive buffers and a small array of flags once
//! ([`PeerChannel::open`], collective over the plan's neighbours), and maps its neighbours'.
//! An exchange is then two kernels on the context's stream and no host work: `peer_put`
//! (`linalg/cuda/halo.cu`) gathers the listed blocks and stores them in the destinations'
//! buffers, then raises the destinations' `ready` flag; `peer_wait` holds the stream until
//! every source's flag is raised. The caller's overlapped work (the diagonal product) is
//! queued between the two. Reuse is guarded the other way: a put first waits for each
//! destination's `free` flag, which the destination raises at the start of its own put of the
//! same exchange, once everything it queued before (the kernels that read the previous
//! messages) has finished. Exchanges are numbered alike on every rank of the channel because
//! they are collective over its neighbours.
//!
//! Values travel unchanged: results are the staged path's bits. A put's grid never exceeds the
//! device's multiprocessors, so its spinning blocks are resident together.

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{sys, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits};

use super::context::driver_err;
use super::kernels::HALO;
use super::{CudaContext, DeviceBuffer};
use crate::LinalgError;

/// Bytes of a CUDA IPC memory handle.
const HANDLE_BYTES: usize = 64;
/// Words of one neighbour's opening message: three handles, two offsets.
const MESSAGE_WORDS: usize = 3 * HANDLE_BYTES / 8 + 2;
/// "No message of this direction": an offset never used.
const NONE: u64 = u64::MAX;

fn ipc_err(op: &'static str) -> impl FnOnce(sys::CUresult) -> LinalgError {
    move |e| LinalgError::Cuda {
        op: op.into(),
        message: format!("{e:?}"),
    }
}

fn check(op: &'static str, r: sys::CUresult) -> Result<(), LinalgError> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(ipc_err(op)(r))
    }
}

/// `len` zeroed values in memory of its own `cuMemAlloc` (stream-ordered pool memory cannot be
/// exported), usable as a [`DeviceBuffer`] and exportable to other processes.
struct ExportedBuffer<T> {
    buffer: Option<DeviceBuffer<T>>,
    ptr: sys::CUdeviceptr,
    ctx: Arc<CudaContext>,
}

impl<T: DeviceRepr + ValidAsZeroBits> ExportedBuffer<T> {
    fn zeros(ctx: &Arc<CudaContext>, len: usize) -> Result<Self, LinalgError> {
        // at least one value: an export needs an allocation
        let bytes = len.max(1) * std::mem::size_of::<T>();
        let mut ptr: sys::CUdeviceptr = 0;
        ctx.driver_context()
            .bind_to_thread()
            .map_err(driver_err("cuCtxSetCurrent"))?;
        // SAFETY: a fresh allocation of `bytes`, zeroed before any use (the context is
        // synchronised below, before the memory is exported or read).
        unsafe {
            check(
                "cuMemAlloc (peer buffer)",
                sys::cuMemAlloc_v2(&mut ptr, bytes),
            )?;
            if let Err(e) = check("cuMemsetD8", sys::cuMemsetD8_v2(ptr, 0, bytes)) {
                sys::cuMemFree_v2(ptr);
                return Err(e);
            }
        }
        if let Err(e) = ctx.synchronize() {
            // SAFETY: the allocation above, not yet referenced by any slice.
            unsafe { sys::cuMemFree_v2(ptr) };
            return Err(e);
        }
        // SAFETY: `ptr` holds `len` zeroed values of `T` (valid as zero bits); the slice is
        // leaked in `Drop`, never freed by cudarc (whose free is stream-ordered).
        let slice = unsafe { ctx.stream().upgrade_device_ptr::<T>(ptr, len) };
        Ok(Self {
            buffer: Some(DeviceBuffer::new(slice)),
            ptr,
            ctx: ctx.clone(),
        })
    }

    fn buffer(&self) -> &DeviceBuffer<T> {
        self.buffer.as_ref().expect("present until drop")
    }

    fn handle(&self) -> Result<[u8; HANDLE_BYTES], LinalgError> {
        let mut h = sys::CUipcMemHandle_st {
            reserved: [0; HANDLE_BYTES],
        };
        // SAFETY: `ptr` is this process's own cuMemAlloc allocation.
        check("cuIpcGetMemHandle", unsafe {
            sys::cuIpcGetMemHandle(&mut h, self.ptr)
        })?;
        Ok(h.reserved.map(|c| c as u8))
    }
}

impl<T> Drop for ExportedBuffer<T> {
    fn drop(&mut self) {
        if let Some(b) = self.buffer.take() {
            b.into_slice().leak();
        }
        // kernels queued on the memory finish first; errors cannot be reported from a drop
        let _ = self.ctx.synchronize();
        let _ = self.ctx.driver_context().bind_to_thread();
        // SAFETY: the allocation of `zeros`, no longer referenced by any slice.
        unsafe { sys::cuMemFree_v2(self.ptr) };
    }
}

/// A neighbour's exported buffer mapped into this process (unmapped on drop, in the context
/// that mapped it).
struct ImportedBuffer {
    ptr: sys::CUdeviceptr,
    ctx: Arc<cudarc::driver::CudaContext>,
}

impl ImportedBuffer {
    fn open(ctx: &CudaContext, handle: &[u8]) -> Result<Self, LinalgError> {
        let mut h = sys::CUipcMemHandle_st {
            reserved: [0; HANDLE_BYTES],
        };
        for (d, &b) in h.reserved.iter_mut().zip(handle) {
            *d = b as std::ffi::c_char;
        }
        ctx.driver_context()
            .bind_to_thread()
            .map_err(driver_err("cuCtxSetCurrent"))?;
        let mut ptr: sys::CUdeviceptr = 0;
        // SAFETY: a handle another process exported; peer access is enabled as the mapping
        // needs it.
        check("cuIpcOpenMemHandle", unsafe {
            sys::cuIpcOpenMemHandle_v2(
                &mut ptr,
                h,
                sys::CUipcMem_flags_enum::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as u32,
            )
        })?;
        Ok(Self {
            ptr,
            ctx: ctx.driver_context().clone(),
        })
    }
}

impl Drop for ImportedBuffer {
    fn drop(&mut self) {
        // the mapping belongs to the context that opened it; errors cannot be reported here
        let _ = self.ctx.bind_to_thread();
        // SAFETY: a mapping of `open`; nothing queued uses it any more (the channel's buffers
        // are synchronised before).
        unsafe { sys::cuIpcCloseMemHandle(self.ptr) };
    }
}

/// Which way an exchange goes: owned blocks to the neighbours' ghosts (the SpMV's), or ghost
/// blocks back to their owners (the restriction's).
#[derive(Clone, Copy, Debug)]
enum Direction {
    Forward,
    Reverse,
}

/// One direction of a channel: the device tables of `peer_put` and `peer_wait`.
struct Route {
    n_dst: u32,
    /// Block ranges of the destinations in `idx` (`n_dst + 1` starts).
    first: DeviceBuffer<u32>,
    idx: DeviceBuffer<u32>,
    /// Where each destination's blocks go, in its memory.
    dst: DeviceBuffer<u64>,
    /// Each destination's `ready` flag for this rank, and this rank's `free` flag of it.
    ready_remote: DeviceBuffer<u64>,
    free_local: DeviceBuffer<u64>,
    n_src: u32,
    /// Each source's `free` flag for this rank, and this rank's `ready` flag of it.
    free_remote: DeviceBuffer<u64>,
    ready_local: DeviceBuffer<u64>,
    blocks: u64,
}

/// Collective over `neighbours` (each naming this rank among its own): sends `outgoing[i]` to
/// `neighbours[i]` and receives `incoming[i]` (its length) from it.
fn swap_with_neighbours(
    comm: &dyn comm::Comm,
    neighbours: &[usize],
    outgoing: &[impl AsRef<[f64]>],
    incoming: &mut [impl AsMut<[f64]>],
) -> Result<(), LinalgError> {
    let s: Vec<(usize, &[f64])> = neighbours
        .iter()
        .zip(outgoing)
        .map(|(&n, m)| (n, m.as_ref()))
        .collect();
    let mut r: Vec<(usize, &mut [f64])> = neighbours
        .iter()
        .zip(incoming.iter_mut())
        .map(|(&n, m)| (n, m.as_mut()))
        .collect();
    comm.exchange(&s, &mut r, &mut || ())?;
    Ok(())
}

/// What [`PeerChannel::open`] prepares after the mapping, before the pairwise agreement.
struct Prepared {
    forward: Route,
    reverse: Route,
    counter: DeviceBuffer<u32>,
    side: Arc<cudarc::driver::CudaStream>,
    queued: cudarc::driver::CudaEvent,
    sent: cudarc::driver::CudaEvent,
}

/// A neighbour's buffers as mapped here (device addresses, 0 where not needed) and where this
/// rank's messages go in them (in blocks; [`NONE`] where it sends none that way).
struct Mapped {
    rank: usize,
    ghosts: u64,
    returned: u64,
    flags: u64,
    ghost_at: u64,
    returned_at: u64,
}

/// What one exchange sends: messages and bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeerTraffic {
    pub messages: u64,
    pub bytes: u64,
}

/// One exchange's wait for its neighbours' messages, left to the kernel that first reads them:
/// it spins at its start until every source's `ready` flag says they landed
/// (`wait_for_peers` in the kernels' prelude), which saves the separate wait kernel's launch.
/// Made by [`PeerChannel::forward_deferred`] and [`PeerChannel::reverse_deferred`]; where no
/// such kernel follows, [`PeerWait::queue`] queues the wait alone. Work queued after the
/// reading kernel sees the messages through stream order.
#[derive(Clone, Copy, Debug)]
pub struct PeerWait<'a> {
    n_src: u32,
    ready_local: &'a DeviceBuffer<u64>,
    seq: u64,
}

impl<'a> PeerWait<'a> {
    /// Pushes the three trailing arguments of a kernel that waits (`n_wait`, `ready`, `seq`).
    pub(crate) fn push_args<'b>(&'b self, l: &mut cudarc::driver::LaunchArgs<'b>)
    where
        'a: 'b,
    {
        l.arg(&self.n_src).arg(self.ready_local).arg(&self.seq);
    }

    /// Queues the wait alone (the `peer_wait` kernel): work queued after it sees the messages.
    pub fn queue(&self, ctx: &CudaContext) -> Result<(), LinalgError> {
        if self.n_src == 0 {
            return Ok(());
        }
        let f = ctx.function(&HALO, &[], "peer_wait")?;
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&self.n_src).arg(self.ready_local).arg(&self.seq);
        let config = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (32, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: `ready_local` holds `n_src` pointers into this rank's flags.
        unsafe { l.launch(config) }.map_err(driver_err("peer_wait"))?;
        Ok(())
    }
}

/// The arguments of a kernel that may wait for a peer exchange, for a launch without one:
/// `n_wait = 0`, so the pointer (any device buffer) is not read.
pub(crate) fn push_no_wait<'b, T>(
    l: &mut cudarc::driver::LaunchArgs<'b>,
    any: &'b DeviceBuffer<T>,
) {
    const NONE: u32 = 0;
    const SEQ: u64 = 0;
    l.arg(&NONE).arg(any).arg(&SEQ);
}

/// A halo plan's exchanges by peer writes (see the module doc). One exchange at a time.
pub struct PeerChannel {
    ctx: Arc<CudaContext>,
    bs: usize,
    /// Filled by the forward exchange: the ghosts, in the plan's receive order.
    ghosts: ExportedBuffer<f64>,
    /// Filled by the reverse exchange: blocks sent back, in the send lists' layout.
    returned: ExportedBuffer<f64>,
    /// `ready` from rank r at r, `free` from rank r at size + r.
    /// Kept alive while the neighbours write into it.
    _flags: ExportedBuffer<u64>,
    counter: DeviceBuffer<u32>,
    forward: Route,
    reverse: Route,
    forward_traffic: PeerTraffic,
    reverse_traffic: PeerTraffic,
    seq: u64,
    /// The side stream the puts run on, beside the main stream's overlapped work, and the
    /// events ordering them: `queued` (main -> side: the operand is ready) and `sent` (side
    /// -> main: the put finished, before the main stream waits for the neighbours).
    side: Arc<cudarc::driver::CudaStream>,
    queued: cudarc::driver::CudaEvent,
    sent: cudarc::driver::CudaEvent,
    /// Mappings of the neighbours' buffers, kept open while the routes point into them.
    _imports: Vec<ImportedBuffer>,
}

impl std::fmt::Debug for PeerChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerChannel")
            .field("bs", &self.bs)
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

/// One rank's lists of a halo plan, in blocks: `sends` are (rank, range of `send_idx`),
/// `send_idx` the owned blocks sent, `receives` (rank, range of the ghost blocks).
pub struct PeerLists<'a> {
    pub bs: usize,
    pub n_ghosts: usize,
    pub sends: &'a [(usize, Range<usize>)],
    pub send_idx: &'a [u32],
    pub receives: &'a [(usize, Range<usize>)],
}

impl PeerChannel {
    /// Collective over the neighbours of `lists` (every rank of the plan calls it together):
    /// exports this rank's buffers, maps the neighbours' and agrees with each neighbour that
    /// both sides succeeded (a failure on either side is an error on both, naming the rank).
    pub fn open(
        ctx: &Arc<CudaContext>,
        comm: &dyn comm::Comm,
        lists: &PeerLists<'_>,
    ) -> Result<Self, LinalgError> {
        let (me, size) = (comm.rank(), comm.size());
        let bs = lists.bs;
        let sends: Vec<_> = lists.sends.iter().filter(|(_, b)| !b.is_empty()).collect();
        let receives: Vec<_> = lists
            .receives
            .iter()
            .filter(|(_, g)| !g.is_empty())
            .collect();
        let mut neighbours: Vec<usize> = sends
            .iter()
            .map(|(r, _)| *r)
            .chain(receives.iter().map(|(r, _)| *r))
            .collect();
        neighbours.sort_unstable();
        neighbours.dedup();

        let ghosts = ExportedBuffer::<f64>::zeros(ctx, lists.n_ghosts * bs)?;
        // invalid lists are every neighbour's error (agreed below, after the handshake)
        let invalid = lists
            .sends
            .iter()
            .any(|(_, b)| b.end > lists.send_idx.len())
            || lists.receives.iter().any(|(_, g)| g.end > lists.n_ghosts)
            || neighbours.iter().any(|&n| n == me || n >= size);
        neighbours.retain(|&n| n != me && n < size);
        let returned = ExportedBuffer::<f64>::zeros(ctx, lists.send_idx.len() * bs)?;
        let flags = ExportedBuffer::<u64>::zeros(ctx, 2 * size)?;
        let handles: Vec<u8> = [ghosts.handle()?, returned.handle()?, flags.handle()?].concat();
        let handle_words: Vec<f64> = handles
            .chunks_exact(8)
            .map(|c| f64::from_bits(u64::from_le_bytes(c.try_into().expect("8 bytes"))))
            .collect();
        // to each neighbour: my handles, where its forward blocks go in my ghosts and where
        // its reverse blocks go in my returned buffer
        let outgoing: Vec<Vec<f64>> = neighbours
            .iter()
            .map(|&n| {
                let ghost_at = receives
                    .iter()
                    .find(|(r, _)| *r == n)
                    .map_or(NONE, |(_, g)| g.start as u64);
                let returned_at = sends
                    .iter()
                    .find(|(r, _)| *r == n)
                    .map_or(NONE, |(_, b)| b.start as u64);
                let mut m = handle_words.clone();
                m.push(f64::from_bits(ghost_at));
                m.push(f64::from_bits(returned_at));
                m
            })
            .collect();
        let mut incoming = vec![vec![0.0; MESSAGE_WORDS]; neighbours.len()];
        swap_with_neighbours(comm, &neighbours, &outgoing, &mut incoming)?;

        // map what the routes need of each neighbour: its flags always, its ghosts where this
        // rank sends to it, its returned buffer where this rank has ghosts of it
        let mut imports = Vec::new();
        let mut mapped = Vec::new();
        let mut failure = invalid.then(|| {
            format!(
                "rank {me}'s lists name a block beyond its send blocks or ghosts, or no other rank"
            )
        });
        for (&n, m) in neighbours.iter().zip(&incoming) {
            if failure.is_some() {
                break;
            }
            // where this rank sends to `n`, `n` must have said where the blocks go (an
            // inconsistent plan: an error on both sides through the agreement below, never a
            // rank returning while its neighbour waits)
            let (ghost_at, returned_at) = (
                m[3 * HANDLE_BYTES / 8].to_bits(),
                m[3 * HANDLE_BYTES / 8 + 1].to_bits(),
            );
            if (sends.iter().any(|(r, _)| *r == n) && ghost_at == NONE)
                || (receives.iter().any(|(r, _)| *r == n) && returned_at == NONE)
            {
                failure = Some(format!(
                    "rank {n} does not expect the messages rank {me}'s plan sends it"
                ));
                break;
            }
            let bytes: Vec<u8> = m[..3 * HANDLE_BYTES / 8]
                .iter()
                .flat_map(|w| w.to_bits().to_le_bytes())
                .collect();
            let handle = |k: usize| &bytes[k * HANDLE_BYTES..(k + 1) * HANDLE_BYTES];
            let mut open = |k: usize, wanted: bool| -> Result<u64, LinalgError> {
                if !wanted {
                    return Ok(0);
                }
                let b = ImportedBuffer::open(ctx, handle(k))?;
                let p = b.ptr;
                imports.push(b);
                Ok(p)
            };
            let opened = (|| {
                let ghost = open(0, sends.iter().any(|(r, _)| *r == n))?;
                let ret = open(1, receives.iter().any(|(r, _)| *r == n))?;
                let fl = open(2, true)?;
                Ok::<_, LinalgError>((ghost, ret, fl))
            })();
            match opened {
                Ok((ghosts, returned, flags)) => mapped.push(Mapped {
                    rank: n,
                    ghosts,
                    returned,
                    flags,
                    ghost_at,
                    returned_at,
                }),
                Err(e) => {
                    failure = Some(format!("mapping rank {n}'s buffers on rank {me}: {e}"));
                    break;
                }
            }
        }
        let of = |n: usize| {
            mapped
                .iter()
                .find(|m| m.rank == n)
                .expect("mapped neighbour")
        };
        let word = 8u64;
        let entry = (bs * 8) as u64;
        let own_flag = |k: usize| flags.ptr + k as u64 * word;
        let fwd_idx = lists.send_idx.to_vec();
        let fwd_dsts: Vec<(usize, Range<usize>)> =
            sends.iter().map(|(r, b)| (*r, b.clone())).collect();
        let rev_idx: Vec<u32> = receives
            .iter()
            .flat_map(|(_, g)| g.start as u32..g.end as u32)
            .collect();
        let mut at = 0;
        let rev_dsts: Vec<(usize, Range<usize>)> = receives
            .iter()
            .map(|(r, g)| {
                let range = at..at + g.len();
                at += g.len();
                (*r, range)
            })
            .collect();
        let route = |dsts: &[(usize, Range<usize>)],
                     idx: &[u32],
                     srcs: &[usize],
                     base: &dyn Fn(usize) -> u64|
         -> Result<Route, LinalgError> {
            let mut first = vec![0u32];
            let mut list = Vec::new();
            for (_, b) in dsts {
                list.extend_from_slice(&idx[b.clone()]);
                first.push(list.len() as u32);
            }
            Ok(Route {
                n_dst: dsts.len() as u32,
                first: ctx.upload(&first)?,
                idx: ctx.upload(&list)?,
                dst: ctx.upload(&dsts.iter().map(|(n, _)| base(*n)).collect::<Vec<_>>())?,
                ready_remote: ctx.upload(
                    &dsts
                        .iter()
                        .map(|(n, _)| of(*n).flags + me as u64 * word)
                        .collect::<Vec<_>>(),
                )?,
                free_local: ctx.upload(
                    &dsts
                        .iter()
                        .map(|(n, _)| own_flag(size + n))
                        .collect::<Vec<_>>(),
                )?,
                n_src: srcs.len() as u32,
                free_remote: ctx.upload(
                    &srcs
                        .iter()
                        .map(|&n| of(n).flags + (size + me) as u64 * word)
                        .collect::<Vec<_>>(),
                )?,
                ready_local: ctx.upload(&srcs.iter().map(|&n| own_flag(n)).collect::<Vec<_>>())?,
                blocks: list.len() as u64,
            })
        };
        let fwd_srcs: Vec<usize> = receives.iter().map(|(r, _)| *r).collect();
        let rev_srcs: Vec<usize> = sends.iter().map(|(r, _)| *r).collect();
        // Everything else this rank prepares that can fail, before the agreement below: a
        // failure here is every neighbour's error too (none waits at its first exchange for a
        // rank that returned). Only where every neighbour is mapped.
        let build = || {
            // forward: into each destination's ghosts where it receives this rank's blocks
            let forward = route(&fwd_dsts, &fwd_idx, &fwd_srcs, &|n| {
                let m = of(n);
                m.ghosts + m.ghost_at * entry
            })?;
            // reverse: into each ghost owner's returned buffer where it listed this rank's
            // blocks
            let reverse = route(&rev_dsts, &rev_idx, &rev_srcs, &|n| {
                let m = of(n);
                m.returned + m.returned_at * entry
            })?;
            Ok::<_, LinalgError>(Prepared {
                forward,
                reverse,
                counter: ctx.zeros(1)?,
                side: ctx.side_stream()?.clone(),
                queued: ctx.new_order_event()?,
                sent: ctx.new_order_event()?,
            })
        };
        let prepared = match failure {
            Some(_) => None,
            None => build()
                .map_err(|e| failure = Some(format!("preparing rank {me}'s routes: {e}")))
                .ok(),
        };
        // both sides of every pair learn whether either failed
        let status = [if failure.is_some() { 1.0 } else { 0.0 }];
        let mut theirs = vec![[0.0f64]; neighbours.len()];
        swap_with_neighbours(
            comm,
            &neighbours,
            &vec![status; neighbours.len()],
            &mut theirs,
        )?;
        if let Some(why) = failure {
            return Err(LinalgError::CudaUnavailable {
                reason: format!("exchange ipc: {why}"),
            });
        }
        if let Some((n, _)) = neighbours.iter().zip(&theirs).find(|(_, s)| s[0] != 0.0) {
            return Err(LinalgError::CudaUnavailable {
                reason: format!(
                    "exchange ipc: rank {n} could not map this rank's buffers or prepare its routes"
                ),
            });
        }
        let prepared = prepared.expect("prepared where no rank failed");

        let traffic = |dsts: &[(usize, Range<usize>)]| PeerTraffic {
            messages: dsts.len() as u64,
            bytes: dsts.iter().map(|(_, b)| (b.len() * bs * 8) as u64).sum(),
        };
        Ok(Self {
            forward_traffic: traffic(&fwd_dsts),
            reverse_traffic: traffic(&rev_dsts),
            counter: prepared.counter,
            ctx: ctx.clone(),
            bs,
            ghosts,
            returned,
            _flags: flags,
            forward: prepared.forward,
            reverse: prepared.reverse,
            seq: 0,
            side: prepared.side,
            queued: prepared.queued,
            sent: prepared.sent,
            _imports: imports,
        })
    }

    /// The forward exchange (the SpMV's): the send lists' blocks of `x_owned` go to their
    /// neighbours' ghosts; `overlap` is queued while they travel; returns the ghosts (valid for
    /// work queued after this call) and what was sent.
    pub fn forward(
        &mut self,
        x_owned: &DeviceBuffer<f64>,
        overlap: impl FnOnce() -> Result<(), LinalgError>,
    ) -> Result<(&DeviceBuffer<f64>, PeerTraffic), LinalgError> {
        self.exchange_waited(Direction::Forward, x_owned, overlap)
    }

    /// [`Self::forward`] without the wait for the neighbours' messages: returns it for the
    /// kernel that first reads the ghosts ([`PeerWait`]; `None` where nothing comes in).
    pub fn forward_deferred(
        &mut self,
        x_owned: &DeviceBuffer<f64>,
        overlap: impl FnOnce() -> Result<(), LinalgError>,
    ) -> Result<(&DeviceBuffer<f64>, Option<PeerWait<'_>>, PeerTraffic), LinalgError> {
        self.exchange(Direction::Forward, x_owned, overlap)
    }

    /// The buffer the forward exchange fills (valid for work queued after it).
    pub fn ghosts(&self) -> &DeviceBuffer<f64> {
        self.ghosts.buffer()
    }

    /// The reverse exchange (the restriction's): the blocks of `ghost_values` (one per ghost)
    /// go to their owners; returns, for work queued after this call, the blocks the neighbours
    /// sent here in the send lists' layout, and what was sent.
    pub fn reverse(
        &mut self,
        ghost_values: &DeviceBuffer<f64>,
        overlap: impl FnOnce() -> Result<(), LinalgError>,
    ) -> Result<(&DeviceBuffer<f64>, PeerTraffic), LinalgError> {
        self.exchange_waited(Direction::Reverse, ghost_values, overlap)
    }

    /// [`Self::reverse`] without the wait for the neighbours' messages: returns it for the
    /// kernel that first reads the returned blocks ([`PeerWait`]; `None` where nothing comes
    /// in).
    pub fn reverse_deferred(
        &mut self,
        ghost_values: &DeviceBuffer<f64>,
        overlap: impl FnOnce() -> Result<(), LinalgError>,
    ) -> Result<(&DeviceBuffer<f64>, Option<PeerWait<'_>>, PeerTraffic), LinalgError> {
        self.exchange(Direction::Reverse, ghost_values, overlap)
    }

    /// One exchange in `direction` with its wait queued alone (the `peer_wait` kernel).
    fn exchange_waited(
        &mut self,
        direction: Direction,
        x: &DeviceBuffer<f64>,
        overlap: impl FnOnce() -> Result<(), LinalgError>,
    ) -> Result<(&DeviceBuffer<f64>, PeerTraffic), LinalgError> {
        let ctx = self.ctx.clone();
        let (received, wait, sent) = self.exchange(direction, x, overlap)?;
        if let Some(w) = wait {
            w.queue(&ctx)?;
        }
        Ok((received, sent))
    }

    /// One exchange in `direction`: the put of `x`'s blocks on the side stream, `overlap`
    /// queued on the main stream meanwhile, the put joined back; returns the buffer the
    /// neighbours fill, the wait for them (left to the caller) and what was sent.
    fn exchange(
        &mut self,
        direction: Direction,
        x: &DeviceBuffer<f64>,
        overlap: impl FnOnce() -> Result<(), LinalgError>,
    ) -> Result<(&DeviceBuffer<f64>, Option<PeerWait<'_>>, PeerTraffic), LinalgError> {
        self.seq += 1;
        let (route, received, traffic) = match direction {
            Direction::Forward => (&self.forward, &self.ghosts, self.forward_traffic),
            Direction::Reverse => (&self.reverse, &self.returned, self.reverse_traffic),
        };
        let put = self.put(route, x)?;
        // an error of `overlap` is returned after the put is joined: the peers count on it
        let overlapped = overlap();
        self.join(put)?;
        overlapped?;
        Ok((received.buffer(), self.pending(route), traffic))
    }

    /// The wait for the current exchange's messages on `route` (`None` without sources).
    fn pending<'s>(&'s self, route: &'s Route) -> Option<PeerWait<'s>> {
        (route.n_src > 0).then_some(PeerWait {
            n_src: route.n_src,
            ready_local: &route.ready_local,
            seq: self.seq,
        })
    }

    /// Queues the put of `route` on the side stream, after the main stream's work so far
    /// (which wrote `x` and read the previous messages); true if one was queued (then
    /// [`Self::join`] joins it back).
    fn put(&self, route: &Route, x: &DeviceBuffer<f64>) -> Result<bool, LinalgError> {
        if route.n_dst == 0 && route.n_src == 0 {
            return Ok(false);
        }
        const ORDER: &str = "peer put: stream order";
        self.queued
            .record(self.ctx.stream())
            .map_err(driver_err(ORDER))?;
        self.side.wait(&self.queued).map_err(driver_err(ORDER))?;
        const BLOCK: u32 = 256;
        let entries = route.blocks * self.bs as u64;
        let blocks = entries
            .div_ceil(BLOCK as u64)
            .clamp(1, self.ctx.multiprocessors().max(1) as u64) as u32;
        let f = self.ctx.function(&HALO, &[], "peer_put")?;
        let bs32 = self.bs as u32;
        let mut l = self.side.launch_builder(&f);
        l.arg(&route.n_dst)
            .arg(&route.first)
            .arg(&route.idx)
            .arg(&bs32)
            .arg(x)
            .arg(&route.dst)
            .arg(&route.n_src)
            .arg(&route.free_remote)
            .arg(&route.ready_remote)
            .arg(&route.free_local)
            .arg(&self.counter)
            .arg(&self.seq);
        let config = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the tables were built by `open` from the plan's lists (indices inside `x`,
        // whose length the caller checks; destinations inside the neighbours' mapped buffers,
        // sized from the same plan); the grid is resident at once (at most one block per
        // multiprocessor), so the spinning blocks cannot starve one another.
        unsafe { l.launch(config) }.map_err(driver_err("peer_put"))?;
        self.sent
            .record(&self.side)
            .map_err(driver_err("peer put: stream order"))?;
        Ok(true)
    }

    /// Joins the put (where [`Self::put`] queued one) into the main stream.
    fn join(&self, queued: bool) -> Result<(), LinalgError> {
        if queued {
            self.ctx
                .stream()
                .wait(&self.sent)
                .map_err(driver_err("peer put: stream order"))?;
        }
        Ok(())
    }
}

impl Drop for PeerChannel {
    fn drop(&mut self) {
        // nothing queued may still write through the mappings when they close
        let _ = self.side.synchronize();
        let _ = self.ctx.synchronize();
    }
}
