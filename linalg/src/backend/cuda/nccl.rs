//! [`DeviceComm`]: NCCL between the ranks' GPUs, on each context's one stream.
//!
//! Point-to-point messages of a halo exchange go straight from one GPU's memory to another's
//! (NVLink or PCIe, NCCL's choice) on a second stream of the context: it waits for the kernel
//! that packed them (an event), runs the messages while the main stream does the caller's
//! overlapped work (the diagonal product), and the main stream waits for the messages (an
//! event) before the kernel that reads them. No host synchronisation and no staging copies, so
//! a V-cycle's exchanges cost launch latency instead of a round trip through the host each.
//! Values travel unchanged: results are the staged path's bits.
//!
//! NCCL is loaded at run time (`libnccl.so`, or the other names cudarc searches); a machine
//! without it gets [`LinalgError::CudaUnavailable`] from [`DeviceComm::connect`] on every rank,
//! never a panic, and the caller keeps the staged exchange.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaEvent, CudaStream};
use cudarc::nccl::{result as nccl, safe as nccl_safe};

use super::{CudaContext, DeviceBuffer};
use crate::LinalgError;

/// The ranks' GPUs bound to one another over the ranks of a [`comm::Comm`]: one NCCL
/// communicator bound to this rank's [`CudaContext`] and its stream (made collectively by
/// [`DeviceComm::connect`]), or peer writes alone ([`DeviceComm::peer_writes_only`]: every halo
/// exchange and Galerkin reduction then goes by peer writes, no NCCL communicator is made).
pub struct DeviceComm {
    /// NCCL communicators must not be used by two threads at once: the lock serialises them.
    /// `None`: peer writes alone.
    link: Option<Mutex<Link>>,
    rank: usize,
    size: usize,
    /// Messages and bytes this rank sent so far (NCCL's and peer writes').
    sent_messages: AtomicU64,
    sent_bytes: AtomicU64,
    /// Halo exchanges go by peer writes ([`super::peer::PeerChannel`]) instead of NCCL
    /// (always without an NCCL communicator).
    peer_writes: AtomicBool,
}

/// The communicator, bound to its own stream, and the two events that order that stream with
/// the context's main stream.
struct Link {
    comm: nccl_safe::Comm,
    /// The context's stream (kernels) and the messages' stream.
    main: Arc<CudaStream>,
    messages: Arc<CudaStream>,
    /// Recorded on `main` after the packing kernel, waited for by `messages`.
    packed: CudaEvent,
    /// Recorded on `messages` after the messages, waited for by `main`.
    arrived: CudaEvent,
}

// SAFETY: an NCCL communicator may be used from any thread as long as no two threads use it at
// the same time, which the mutex guarantees; the stream it holds is the context's (Send + Sync).
unsafe impl Send for DeviceComm {}
// SAFETY: see above: every use goes through the mutex.
unsafe impl Sync for DeviceComm {}

impl std::fmt::Debug for DeviceComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceComm")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

fn nccl_err(op: &str) -> impl FnOnce(nccl::NcclError) -> LinalgError + '_ {
    move |e| LinalgError::Cuda {
        op: op.to_string(),
        message: format!("{e:?}"),
    }
}

/// Why NCCL cannot be used on this machine, or `None`.
pub fn nccl_unavailable_reason() -> Option<String> {
    // SAFETY: only tries to open the library (dlopen), calls nothing in it.
    if unsafe { cudarc::nccl::sys::is_culib_present() } {
        None
    } else {
        Some(format!(
            "the NCCL library was not found (searched {:?} on LD_LIBRARY_PATH; NCCL installs \
             libnccl.so.2: a libnccl.so link to it on the path is enough)",
            cudarc::get_lib_name_candidates("nccl")
        ))
    }
}

impl DeviceComm {
    /// Collective over `comm`'s ranks, each with its own GPU `ctx`: rank 0 makes the NCCL
    /// identifier, every rank receives it and joins. A rank without NCCL makes it every rank's
    /// [`LinalgError::CudaUnavailable`] (naming the rank) before any rank joins, so none hangs.
    pub fn connect(
        ctx: &Arc<CudaContext>,
        comm: &dyn comm::Comm,
    ) -> Result<Arc<Self>, LinalgError> {
        let (rank, size) = (comm.rank(), comm.size());
        let missing = nccl_unavailable_reason().unwrap_or_default();
        let all = comm.allgatherv_bytes(missing.as_bytes())?;
        if let Some(r) = all.iter().position(|m| !m.is_empty()) {
            return Err(LinalgError::CudaUnavailable {
                reason: format!(
                    "NCCL on rank {r} of {size}: {}",
                    String::from_utf8_lossy(&all[r])
                ),
            });
        }
        // rank 0: status byte 0 and the identifier, or 1 and why it failed
        let mine = if rank == 0 {
            match nccl_safe::Id::new() {
                Ok(id) => std::iter::once(0u8)
                    .chain(id.internal().iter().map(|&c| c as u8))
                    .collect(),
                Err(e) => [1u8].into_iter().chain(format!("{e:?}").bytes()).collect(),
            }
        } else {
            Vec::new()
        };
        let all = comm.allgatherv_bytes(&mine)?;
        let root = &all[0];
        if root.first() != Some(&0) || root.len() != 129 {
            return Err(LinalgError::Cuda {
                op: "ncclGetUniqueId (rank 0)".into(),
                message: String::from_utf8_lossy(root.get(1..).unwrap_or_default()).into_owned(),
            });
        }
        let mut internal = [0 as std::ffi::c_char; 128];
        for (d, &b) in internal.iter_mut().zip(&root[1..]) {
            *d = b as std::ffi::c_char;
        }
        let driver = ctx.driver_context();
        let err = |op: &'static str| {
            move |e: cudarc::driver::DriverError| LinalgError::Cuda {
                op: op.into(),
                message: format!("{e:?}"),
            }
        };
        // the highest priority: the messages' kernel starts as soon as the packing is done,
        // beside the diagonal product's blocks, not after them
        driver.bind_to_thread().map_err(err("cuCtxSetCurrent"))?;
        let (_, greatest) = cudarc::driver::result::stream::get_priority_range()
            .map_err(err("cuCtxGetStreamPriorityRange"))?;
        let messages = driver
            .new_stream_with_priority(greatest)
            .map_err(err("cuStreamCreateWithPriority (NCCL)"))?;
        let packed = driver.new_event(None).map_err(err("cuEventCreate"))?;
        let arrived = driver.new_event(None).map_err(err("cuEventCreate"))?;
        let comm = nccl_safe::Comm::from_rank(
            messages.clone(),
            rank,
            size,
            nccl_safe::Id::uninit(internal),
        )
        .map_err(nccl_err("ncclCommInitRank"))?;
        Ok(Arc::new(Self {
            link: Some(Mutex::new(Link {
                comm,
                main: ctx.stream().clone(),
                messages,
                packed,
                arrived,
            })),
            rank,
            size,
            sent_messages: AtomicU64::new(0),
            sent_bytes: AtomicU64::new(0),
            peer_writes: AtomicBool::new(false),
        }))
    }

    /// Rank `rank` of `size` whose GPUs exchange by peer writes alone (checked and agreed by
    /// the caller: [`crate::dist::connect_rank_devices`]), without an NCCL communicator (its
    /// start takes a third of a second); [`DeviceComm::exchange`] is then an error.
    pub fn peer_writes_only(rank: usize, size: usize) -> Arc<Self> {
        Arc::new(Self {
            link: None,
            rank,
            size,
            sent_messages: AtomicU64::new(0),
            sent_bytes: AtomicU64::new(0),
            peer_writes: AtomicBool::new(true),
        })
    }

    /// Whether an NCCL communicator was made ([`DeviceComm::connect`]).
    pub fn has_nccl(&self) -> bool {
        self.link.is_some()
    }

    /// Messages and bytes this rank sent through NCCL so far.
    pub fn sent(&self) -> (u64, u64) {
        (
            self.sent_messages.load(Ordering::Relaxed),
            self.sent_bytes.load(Ordering::Relaxed),
        )
    }

    /// Adds messages and bytes sent by peer writes to [`DeviceComm::sent`].
    pub fn count_sent(&self, messages: u64, bytes: u64) {
        self.sent_messages.fetch_add(messages, Ordering::Relaxed);
        self.sent_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// From now on halo exchanges over these ranks go by peer writes (`on`) or NCCL (where
    /// it was made; peer writes stay on otherwise). Every rank calls it together, between
    /// exchanges; peer writes after agreeing that every pair of GPUs can map the other's
    /// memory.
    pub fn set_peer_writes(&self, on: bool) {
        self.peer_writes
            .store(on || self.link.is_none(), Ordering::Relaxed);
    }

    /// Whether halo exchanges go by peer writes ([`DeviceComm::set_peer_writes`]).
    pub fn peer_writes(&self) -> bool {
        self.peer_writes.load(Ordering::Relaxed)
    }

    /// This rank and the number of ranks.
    pub fn rank_and_size(&self) -> (usize, usize) {
        (self.rank, self.size)
    }

    /// One grouped exchange after the work queued so far on the context's stream: entries
    /// `range` of `send` go to each `(rank, range)` of `sends`, and entries `range` of `recv`
    /// are filled from each `(rank, range)` of `recvs`. The ranges of one message must have the
    /// same length on both sides; empty ones are skipped on both. `overlap` queues work on the
    /// context's stream that runs while the messages travel (it must not touch `send` or
    /// `recv`); work queued after this call sees `recv` filled. Asynchronous (no host wait).
    pub fn exchange(
        &self,
        sends: impl Iterator<Item = (usize, Range<usize>)>,
        send: &DeviceBuffer<f64>,
        recvs: impl Iterator<Item = (usize, Range<usize>)>,
        recv: &mut DeviceBuffer<f64>,
        overlap: impl FnOnce() -> Result<(), LinalgError>,
    ) -> Result<(), LinalgError> {
        let Some(link) = &self.link else {
            return Err(LinalgError::Cuda {
                op: "NCCL exchange".into(),
                message: "these GPUs exchange by peer writes alone (no NCCL communicator)".into(),
            });
        };
        let link = link.lock().unwrap_or_else(|p| p.into_inner());
        let driver = |op: &'static str| {
            move |e: cudarc::driver::DriverError| LinalgError::Cuda {
                op: op.into(),
                message: format!("{e:?}"),
            }
        };
        link.packed
            .record(&link.main)
            .map_err(driver("cuEventRecord"))?;
        // the overlapping work (the diagonal product) queued first, so the device runs it
        // while the host queues the messages; the messages still start after the packing
        // (an error of `overlap` is returned after the messages, which the peers wait for)
        let overlapped = overlap();
        link.messages
            .wait(&link.packed)
            .map_err(driver("cuStreamWaitEvent"))?;
        let comm = &link.comm;
        nccl::group_start().map_err(nccl_err("ncclGroupStart"))?;
        let mut queued = Ok(());
        for (r, e) in sends.filter(|(_, e)| !e.is_empty()) {
            self.sent_messages.fetch_add(1, Ordering::Relaxed);
            self.sent_bytes
                .fetch_add((e.len() * 8) as u64, Ordering::Relaxed);
            let view = send.slice().slice(e);
            if let Err(e) = comm.send(&view, r as i32) {
                queued = Err(e);
                break;
            }
        }
        if queued.is_ok() {
            for (r, e) in recvs.filter(|(_, e)| !e.is_empty()) {
                let mut view = recv.slice_mut().slice_mut(e);
                if let Err(e) = comm.recv(&mut view, r as i32) {
                    queued = Err(e);
                    break;
                }
            }
        }
        let ended = nccl::group_end();
        queued.map_err(nccl_err("ncclSend/ncclRecv"))?;
        ended.map_err(nccl_err("ncclGroupEnd"))?;
        link.arrived
            .record(&link.messages)
            .map_err(driver("cuEventRecord"))?;
        // the main stream waits for the messages whatever `overlap` did
        link.main
            .wait(&link.arrived)
            .map_err(driver("cuStreamWaitEvent"))?;
        overlapped
    }
}
