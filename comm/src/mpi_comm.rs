//! [`MpiComm`]: the MPI world communicator, or a part of it ([`Comm::split`]), behind [`Comm`],
//! through rsmpi.

use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use mpi::datatype::{Partition, PartitionMut};
use mpi::topology::SimpleCommunicator;
use mpi::traits::{
    Communicator, CommunicatorCollectives, Destination, Equivalence, MatchedReceiveVec, Source,
};
use mpi::Count;

use crate::{check_send_count, Comm, CommError, Traffic};

/// Serialises the MPI calls of the process's communicators but the concurrent ones
/// ([`Comm::concurrent`]): any thread may call, one at a time (all MPI needs to provide is
/// `MPI_THREAD_SERIALIZED`).
static MPI_LOCK: Mutex<()> = Mutex::new(());

/// Whether the MPI library provides `MPI_THREAD_MULTIPLE` (set once by [`crate::Session`]):
/// only then may a concurrent communicator call while another thread does.
static THREAD_MULTIPLE: AtomicBool = AtomicBool::new(false);

/// Records the thread support the MPI library provided at its initialisation.
pub(crate) fn set_thread_multiple(provided: bool) {
    THREAD_MULTIPLE.store(provided, Ordering::Relaxed);
}

/// Tag of the messages of [`Comm::exchange`].
const EXCHANGE_TAG: i32 = 7001;

/// The MPI world communicator, or a part of it. Made by [`crate::Session::init`] under an MPI
/// launcher (parts by [`Comm::split`]); every call errors with [`CommError::Finalized`] once the
/// session is dropped.
///
/// Reductions gather every rank's buffer and combine them in rank order on every rank, so the
/// result is bit-identical on all ranks and from run to run for a fixed rank count (MPI's own
/// reduction order is implementation-defined).
#[derive(Debug)]
pub struct MpiComm {
    handle: Handle,
    rank: usize,
    size: usize,
    /// `(node-local rank, ranks on the node)` from `MPI_Comm_split_type(SHARED)`.
    node_local: (usize, usize),
    traffic: Mutex<Traffic>,
    /// This communicator's own lock where it is concurrent ([`Comm::concurrent`]: its calls
    /// wait only for one another); `None`: the process's [`MPI_LOCK`].
    own_lock: Option<Mutex<()>>,
}

/// Which MPI communicator an [`MpiComm`] calls.
#[derive(Debug)]
enum Handle {
    World,
    /// A communicator made by `MPI_Comm_split` or `MPI_Comm_dup`. A split one is never freed
    /// (`MPI_Comm_free` after `MPI_Finalize` is an error, and a process makes a handful at
    /// most); a concurrent one is freed when dropped before `MPI_Finalize` (a campaign makes
    /// one per case).
    Part(PartComm),
}

/// A split or duplicated communicator, used only under its [`MpiComm`]'s lock.
struct PartComm(ManuallyDrop<SimpleCommunicator>);

impl std::fmt::Debug for PartComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PartComm")
    }
}

// SAFETY: the handle is only used while holding its communicator's lock: `MPI_LOCK`
// (MPI_THREAD_SERIALIZED: one thread at a time may call MPI, any thread may) or, for a
// concurrent communicator, its own (only under MPI_THREAD_MULTIPLE); it is freed only by its
// owner's drop.
unsafe impl Send for PartComm {}
unsafe impl Sync for PartComm {}

impl MpiComm {
    /// The world communicator of an initialised MPI (crate-private: [`crate::Session`] owns the
    /// MPI lifetime). Collective: splits the world by shared-memory node once (keyed by world
    /// rank, so node-local ranks follow the world order) to learn [`Comm::node_local`].
    pub(crate) fn world() -> Self {
        let world = SimpleCommunicator::world();
        let node = world.split_shared(world.rank());
        Self {
            handle: Handle::World,
            rank: world.rank() as usize,
            size: world.size() as usize,
            node_local: (node.rank() as usize, node.size() as usize),
            traffic: Mutex::new(Traffic::default()),
            own_lock: None,
        }
    }

    /// Counts one collective: `messages` and `bytes` sent, `started` when it began.
    fn count_collective(&self, messages: usize, bytes: usize, started: Instant) {
        let mut t = self.traffic.lock().unwrap_or_else(|p| p.into_inner());
        t.messages += messages as u64;
        t.bytes += bytes as u64;
        t.collectives += 1;
        t.collective_s += started.elapsed().as_secs_f64();
    }

    /// Runs `f` on this communicator, serialised, unless MPI is finalized.
    fn with_world<R>(
        &self,
        operation: &'static str,
        f: impl FnOnce(&SimpleCommunicator) -> Result<R, CommError>,
    ) -> Result<R, CommError> {
        let lock = self.own_lock.as_ref().unwrap_or(&MPI_LOCK);
        let _guard = lock.lock().unwrap_or_else(|p| p.into_inner());
        if mpi::environment::is_finalized() || !mpi::environment::is_initialized() {
            return Err(CommError::Finalized { operation });
        }
        match &self.handle {
            Handle::World => f(&SimpleCommunicator::world()),
            Handle::Part(part) => f(&part.0),
        }
    }

    fn allgatherv<T: Equivalence + Copy + Default>(
        &self,
        operation: &'static str,
        local: &[T],
    ) -> Result<Vec<Vec<T>>, CommError> {
        let count = to_count(operation, local.len())?;
        let started = Instant::now();
        let others = self.size - 1;
        let bytes = others * (size_of::<Count>() + std::mem::size_of_val(local));
        let _count = Counted(|| self.count_collective(others, bytes, started));
        self.with_world(operation, |world| {
            let mut counts = vec![0 as Count; self.size];
            world.all_gather_into(&count, &mut counts[..]);
            let displs = displacements(operation, &counts)?;
            let total: usize = counts.iter().map(|&c| c as usize).sum();
            // Never hand MPI an empty slice: its dangling pointer may equal MPI_IN_PLACE.
            let mut buf = vec![T::default(); total.max(1)];
            let dummy = [T::default()];
            // An empty sub-slice of a real array points into it, not at the dangling address.
            let send = if local.is_empty() { &dummy[..0] } else { local };
            {
                let mut part = PartitionMut::new(&mut buf[..], &counts[..], &displs[..]);
                world.all_gather_varcount_into(send, &mut part);
            }
            Ok(split(&buf, &counts))
        })
    }

    fn alltoallv<T: Equivalence + Copy + Default>(
        &self,
        operation: &'static str,
        send: &[Vec<T>],
    ) -> Result<Vec<Vec<T>>, CommError> {
        check_send_count(operation, send.len(), self.size)?;
        let send_counts = send
            .iter()
            .map(|v| to_count(operation, v.len()))
            .collect::<Result<Vec<_>, _>>()?;
        let send_displs = displacements(operation, &send_counts)?;
        let started = Instant::now();
        let others = self.size - 1;
        let bytes = others * size_of::<Count>()
            + send
                .iter()
                .enumerate()
                .filter(|(r, _)| *r != self.rank)
                .map(|(_, v)| std::mem::size_of_val(&v[..]))
                .sum::<usize>();
        let _count = Counted(|| self.count_collective(others, bytes, started));
        let mut flat: Vec<T> = send.iter().flatten().copied().collect();
        // Never hand MPI an empty buffer (see `allgatherv`); the counts say what is sent.
        if flat.is_empty() {
            flat.push(T::default());
        }
        self.with_world(operation, |world| {
            let mut recv_counts = vec![0 as Count; self.size];
            world.all_to_all_into(&send_counts[..], &mut recv_counts[..]);
            let recv_displs = displacements(operation, &recv_counts)?;
            let total: usize = recv_counts.iter().map(|&c| c as usize).sum();
            let mut buf = vec![T::default(); total.max(1)];
            {
                let spart = Partition::new(&flat[..], &send_counts[..], &send_displs[..]);
                let mut rpart = PartitionMut::new(&mut buf[..], &recv_counts[..], &recv_displs[..]);
                world.all_to_all_varcount_into(&spart, &mut rpart);
            }
            Ok(split(&buf, &recv_counts))
        })
    }

    fn check_rank(&self, operation: &'static str, r: usize) -> Result<(), CommError> {
        if r >= self.size || r == self.rank {
            return Err(CommError::Mismatch {
                operation,
                message: format!(
                    "neighbour rank {r} is not another rank of 0..{} (this is rank {})",
                    self.size, self.rank
                ),
            });
        }
        Ok(())
    }
}

impl Comm for MpiComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn allreduce_sum(&self, v: &mut [f64]) -> Result<(), CommError> {
        let all = self.allgatherv("allreduce_sum", v)?;
        check_equal_lengths("allreduce_sum", &all, v.len())?;
        for (i, x) in v.iter_mut().enumerate() {
            let mut s = all[0][i];
            for part in &all[1..] {
                s += part[i];
            }
            *x = s;
        }
        Ok(())
    }

    fn allreduce_max(&self, v: &mut [f64]) -> Result<(), CommError> {
        let all = self.allgatherv("allreduce_max", v)?;
        check_equal_lengths("allreduce_max", &all, v.len())?;
        for (i, x) in v.iter_mut().enumerate() {
            let mut m = all[0][i];
            for part in &all[1..] {
                let y = part[i];
                if m.is_nan() || y.is_nan() {
                    m = f64::NAN;
                } else if y > m {
                    m = y;
                }
            }
            *x = m;
        }
        Ok(())
    }

    fn allgatherv_u64(&self, local: &[u64]) -> Result<Vec<Vec<u64>>, CommError> {
        self.allgatherv("allgatherv_u64", local)
    }

    fn allgatherv_f64(&self, local: &[f64]) -> Result<Vec<Vec<f64>>, CommError> {
        self.allgatherv("allgatherv_f64", local)
    }

    fn allgatherv_bytes(&self, local: &[u8]) -> Result<Vec<Vec<u8>>, CommError> {
        self.allgatherv("allgatherv_bytes", local)
    }

    fn alltoallv_u64(&self, send: &[Vec<u64>]) -> Result<Vec<Vec<u64>>, CommError> {
        self.alltoallv("alltoallv_u64", send)
    }

    fn alltoallv_f64(&self, send: &[Vec<f64>]) -> Result<Vec<Vec<f64>>, CommError> {
        self.alltoallv("alltoallv_f64", send)
    }

    fn exchange(
        &self,
        sends: &[(usize, &[f64])],
        recvs: &mut [(usize, &mut [f64])],
        overlap: &mut dyn FnMut(),
    ) -> Result<(), CommError> {
        for &(r, buf) in sends {
            self.check_rank("exchange", r)?;
            to_count("exchange", buf.len())?;
        }
        for (r, buf) in recvs.iter() {
            self.check_rank("exchange", *r)?;
            to_count("exchange", buf.len())?;
        }
        {
            let mut t = self.traffic.lock().unwrap_or_else(|p| p.into_inner());
            t.messages += sends.len() as u64;
            t.bytes += sends
                .iter()
                .map(|(_, b)| std::mem::size_of_val(*b) as u64)
                .sum::<u64>();
        }
        self.with_world("exchange", |world| {
            mpi::request::scope(|scope| {
                let mut receives = Vec::with_capacity(recvs.len());
                for (r, buf) in recvs.iter_mut() {
                    receives.push(
                        world
                            .process_at_rank(*r as i32)
                            .immediate_receive_into_with_tag(scope, &mut buf[..], EXCHANGE_TAG),
                    );
                }
                let mut sent = Vec::with_capacity(sends.len());
                for &(r, buf) in sends {
                    sent.push(world.process_at_rank(r as i32).immediate_send_with_tag(
                        scope,
                        buf,
                        EXCHANGE_TAG,
                    ));
                }
                overlap();
                for request in receives {
                    request.wait();
                }
                for request in sent {
                    request.wait();
                }
            });
            Ok(())
        })
    }

    fn node_local(&self) -> (usize, usize) {
        self.node_local
    }

    fn split(&self, color: usize, key: usize) -> Result<Arc<dyn Comm>, CommError> {
        let (color, key) = (to_count("split", color)?, to_count("split", key)?);
        let part = self.with_world("split", |comm| {
            comm.split_by_color_with_key(mpi::topology::Color::with_value(color), key)
                .ok_or_else(|| CommError::Collective {
                    operation: "split",
                    rank: self.rank,
                    size: self.size,
                    message: "MPI_Comm_split gave no communicator".into(),
                })
        })?;
        Ok(Arc::new(MpiComm {
            rank: part.rank() as usize,
            size: part.size() as usize,
            handle: Handle::Part(PartComm(ManuallyDrop::new(part))),
            node_local: self.node_local,
            traffic: Mutex::new(Traffic::default()),
            own_lock: None,
        }))
    }

    fn concurrent(&self) -> Result<Option<Arc<dyn Comm>>, CommError> {
        // the same answer on every rank: one library, one thread level
        if !THREAD_MULTIPLE.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let copy = self.with_world("concurrent", |comm| Ok(comm.duplicate()))?;
        Ok(Some(Arc::new(MpiComm {
            rank: self.rank,
            size: self.size,
            handle: Handle::Part(PartComm(ManuallyDrop::new(copy))),
            node_local: self.node_local,
            traffic: Mutex::new(Traffic::default()),
            own_lock: Some(Mutex::new(())),
        })))
    }

    fn send_bytes(&self, dest: usize, tag: u16, bytes: &[u8]) -> Result<(), CommError> {
        self.check_rank("send_bytes", dest)?;
        to_count("send_bytes", bytes.len())?;
        {
            let mut t = self.traffic.lock().unwrap_or_else(|p| p.into_inner());
            t.messages += 1;
            t.bytes += bytes.len() as u64;
        }
        // never hand MPI an empty slice (see `allgatherv`)
        let dummy = [0u8];
        let payload = if bytes.is_empty() { &dummy[..0] } else { bytes };
        self.with_world("send_bytes", |comm| {
            comm.process_at_rank(dest as i32)
                .send_with_tag(payload, i32::from(tag));
            Ok(())
        })
    }

    fn try_receive_bytes(
        &self,
        source: Option<usize>,
        tag: u16,
    ) -> Result<Option<(usize, Vec<u8>)>, CommError> {
        if let Some(r) = source {
            self.check_rank("try_receive_bytes", r)?;
        }
        self.with_world("try_receive_bytes", |comm| {
            let probed = match source {
                Some(r) => comm
                    .process_at_rank(r as i32)
                    .immediate_matched_probe_with_tag(i32::from(tag)),
                None => comm
                    .any_process()
                    .immediate_matched_probe_with_tag(i32::from(tag)),
            };
            Ok(probed.map(|matched| {
                let (bytes, status) = matched.matched_receive_vec::<u8>();
                (status.source_rank() as usize, bytes)
            }))
        })
    }

    fn traffic(&self) -> Traffic {
        *self.traffic.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn abort(&self, code: i32) -> ! {
        if mpi::environment::is_initialized() && !mpi::environment::is_finalized() {
            SimpleCommunicator::world().abort(code)
        }
        std::process::exit(code)
    }
}

impl Drop for MpiComm {
    /// Frees a concurrent communicator while MPI lives (see [`Handle::Part`]).
    fn drop(&mut self) {
        let Some(lock) = &self.own_lock else { return };
        let _guard = lock.lock().unwrap_or_else(|p| p.into_inner());
        if let Handle::Part(part) = &mut self.handle {
            if mpi::environment::is_initialized() && !mpi::environment::is_finalized() {
                // SAFETY: taken once, here; the handle is not used again
                drop(unsafe { ManuallyDrop::take(&mut part.0) });
            }
        }
    }
}

/// Runs its closure when dropped: counts a collective however it ends.
struct Counted<F: FnMut()>(F);

impl<F: FnMut()> Drop for Counted<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}

fn to_count(operation: &'static str, len: usize) -> Result<Count, CommError> {
    Count::try_from(len).map_err(|_| CommError::Mismatch {
        operation,
        message: format!("{len} entries exceed MPI's count range"),
    })
}

fn displacements(operation: &'static str, counts: &[Count]) -> Result<Vec<Count>, CommError> {
    let mut displs = Vec::with_capacity(counts.len());
    let mut at: usize = 0;
    for &c in counts {
        displs.push(to_count(operation, at)?);
        at += c as usize;
    }
    to_count(operation, at)?;
    Ok(displs)
}

fn split<T: Copy>(buf: &[T], counts: &[Count]) -> Vec<Vec<T>> {
    let mut at = 0;
    counts
        .iter()
        .map(|&c| {
            let part = buf[at..at + c as usize].to_vec();
            at += c as usize;
            part
        })
        .collect()
}

fn check_equal_lengths(
    operation: &'static str,
    all: &[Vec<f64>],
    len: usize,
) -> Result<(), CommError> {
    if let Some((rank, v)) = all.iter().enumerate().find(|(_, v)| v.len() != len) {
        return Err(CommError::Mismatch {
            operation,
            message: format!("rank {rank} reduces {} entries, this rank {len}", v.len()),
        });
    }
    Ok(())
}
