//! The communicator seam of hexfem: the collective operations the numeric layers need, behind
//! the [`Comm`] trait, so that a vector's reductions do not care how many ranks share it.
//!
//! Two implementations: [`SelfComm`] (one rank, every collective the identity: the serial
//! behaviour) and [`MpiComm`] (the MPI world communicator, through rsmpi). [`Session::init`]
//! picks one: MPI when the process was started by an MPI launcher (`mpirun`), [`SelfComm`]
//! otherwise, so a binary run without `mpirun` never initialises MPI. `comm` is the only crate
//! that names MPI.
//!
//! Determinism: a reduction combines the ranks' contributions in a fixed order (rank order), so
//! for a fixed number of ranks results are bit-identical from run to run.
//!
//! Errors: a rank that fails must not leave the others waiting in a collective. Fallible phases
//! end in [`agree`], a collective that turns the first failing rank's error into the same
//! [`CommError::Failed`] on every rank, so every rank stops cleanly with that message.

use std::fmt;
use std::sync::{Arc, LazyLock};

pub mod launch;
mod mpi_comm;
mod session;
pub mod stages;

pub use mpi_comm::MpiComm;
pub use session::{launched_by_mpi, mpi_library_version, Session};
pub use stages::{MergedStage, Stage, Stages};

/// Errors of the `comm` crate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommError {
    /// A collective operation failed (the message comes from the transport).
    #[error("{operation} failed on rank {rank} of {size}: {message}")]
    Collective {
        operation: &'static str,
        rank: usize,
        size: usize,
        message: String,
    },
    /// The buffers of a collective call do not fit together (lengths differ between ranks or
    /// do not match the number of ranks).
    #[error("{operation}: {message}")]
    Mismatch {
        operation: &'static str,
        message: String,
    },
    /// A setting of the process's environment that MPI's start-up reads is not one of its
    /// choices (the message names the variable, its value and the valid ones).
    #[error("{message}")]
    Setting { message: String },
    /// A collective call after MPI was finalized (the [`Session`] was dropped).
    #[error("{operation}: MPI is already finalized")]
    Finalized { operation: &'static str },
    /// An error agreed on by every rank through [`agree`]: `rank` (the lowest failing rank)
    /// failed with `message`.
    #[error("{}", failed_message(*rank, *size, message))]
    Failed {
        rank: usize,
        size: usize,
        message: String,
    },
}

fn failed_message(rank: usize, size: usize, message: &str) -> String {
    if size > 1 {
        format!("rank {rank} of {size}: {message}")
    } else {
        message.to_string()
    }
}

/// What one rank sent through a communicator, counted by the comm layer (cumulative since the
/// communicator was made; subtract two readings with [`Traffic::since`]). A collective counts
/// one message and this rank's payload to each other rank (an all-gather of `n` bytes sends
/// `n (size - 1)` bytes; an all-to-all the bytes addressed to other ranks; the element counts
/// exchanged first are included), a neighbour exchange one message per send.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Traffic {
    /// Messages sent.
    pub messages: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Collective calls (reductions, gathers, all-to-alls).
    pub collectives: u64,
    /// Seconds spent inside collectives, waiting for the other ranks included.
    pub collective_s: f64,
}

impl Traffic {
    /// What was counted between `earlier` and `self`.
    pub fn since(&self, earlier: &Traffic) -> Traffic {
        Traffic {
            messages: self.messages - earlier.messages,
            bytes: self.bytes - earlier.bytes,
            collectives: self.collectives - earlier.collectives,
            collective_s: self.collective_s - earlier.collective_s,
        }
    }
}

/// A group of ranks that reduce together. Every rank of the group must make the same collective
/// calls in the same order with buffers of the same length.
pub trait Comm: Send + Sync + fmt::Debug {
    /// This rank's index, `0..size()`.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// Element-wise sum of `v` over the ranks, in place on every rank, combined in rank order.
    fn allreduce_sum(&self, v: &mut [f64]) -> Result<(), CommError>;
    /// Element-wise maximum of `v` over the ranks, in place on every rank (NaN if any rank
    /// holds NaN).
    fn allreduce_max(&self, v: &mut [f64]) -> Result<(), CommError>;
    /// Every rank's `local` (of any length), indexed by rank.
    fn allgatherv_u64(&self, local: &[u64]) -> Result<Vec<Vec<u64>>, CommError>;
    /// Every rank's `local` (of any length), indexed by rank.
    fn allgatherv_f64(&self, local: &[f64]) -> Result<Vec<Vec<f64>>, CommError>;
    /// Every rank's `local` bytes (of any length), indexed by rank.
    fn allgatherv_bytes(&self, local: &[u8]) -> Result<Vec<Vec<u8>>, CommError>;
    /// Personalised all-to-all: `send[r]` goes to rank `r`; returns what each rank sent here,
    /// indexed by rank. `send` has `size()` entries.
    fn alltoallv_u64(&self, send: &[Vec<u64>]) -> Result<Vec<Vec<u64>>, CommError>;
    /// Personalised all-to-all of `f64` values (see [`Comm::alltoallv_u64`]).
    fn alltoallv_f64(&self, send: &[Vec<f64>]) -> Result<Vec<Vec<f64>>, CommError>;
    /// [`Comm::alltoallv_f64`] taking the messages by value: this rank's message to itself is
    /// moved into the result, not copied through the library (the same values as
    /// `alltoallv_f64`).
    fn alltoallv_f64_moving(&self, mut send: Vec<Vec<f64>>) -> Result<Vec<Vec<f64>>, CommError> {
        check_send_count("alltoallv_f64_moving", send.len(), self.size())?;
        let own = std::mem::take(&mut send[self.rank()]);
        let mut received = self.alltoallv_f64(&send)?;
        received[self.rank()] = own;
        Ok(received)
    }
    /// Neighbour exchange: posts the receives `recvs` (source rank, buffer of exactly the
    /// length that rank sends) and the sends `sends` (destination rank, values), runs
    /// `overlap` while the messages travel, then waits for all of them. Ranks that exchange must
    /// both list each other with matching lengths.
    fn exchange(
        &self,
        sends: &[(usize, &[f64])],
        recvs: &mut [(usize, &mut [f64])],
        overlap: &mut dyn FnMut(),
    ) -> Result<(), CommError>;
    /// This rank's place among the ranks on its own node (shared-memory host): `(node-local
    /// rank, ranks on the node)`, from an MPI shared-memory split under MPI (never from
    /// launcher variables); `(0, 1)` for a single rank.
    fn node_local(&self) -> (usize, usize) {
        (0, 1)
    }
    /// The ranks of this communicator that pass the same `color`, as a communicator of their
    /// own, ranked by `key` (then by rank here). Collective over this communicator. The new
    /// communicator reports this one's [`Comm::node_local`] (the place of the rank on its node
    /// among all the ranks there, which is what picks its GPU).
    fn split(&self, color: usize, key: usize) -> Result<std::sync::Arc<dyn Comm>, CommError>;
    /// Collective: a communicator of the same ranks in the same order for one other thread of
    /// this process, whose calls go on while this communicator's do (neither waits for the
    /// other's), or `None` where the MPI library cannot run two threads' calls at once (it does
    /// not provide `MPI_THREAD_MULTIPLE`). Each communicator's own calls stay one at a time.
    /// A single rank: another [`SelfComm`].
    fn concurrent(&self) -> Result<Option<std::sync::Arc<dyn Comm>>, CommError>;
    /// Sends `bytes` to rank `dest` with `tag` (point to point; returns once the bytes may be
    /// reused). A single rank has nobody to send to.
    fn send_bytes(&self, dest: usize, tag: u16, bytes: &[u8]) -> Result<(), CommError> {
        let _ = (dest, tag, bytes);
        Err(no_other_rank("send_bytes"))
    }
    /// A message with `tag` from `source` (any rank when `None`) if one has arrived, with the
    /// rank that sent it; never waits. A single rank never receives one.
    fn try_receive_bytes(
        &self,
        source: Option<usize>,
        tag: u16,
    ) -> Result<Option<(usize, Vec<u8>)>, CommError> {
        let _ = (source, tag);
        Err(no_other_rank("try_receive_bytes"))
    }
    /// Waits for a message with `tag` from `source`, polling [`Comm::try_receive_bytes`] (so
    /// that other threads of the process may use MPI while this one waits).
    fn receive_bytes(&self, source: usize, tag: u16) -> Result<Vec<u8>, CommError> {
        let mut pause = std::time::Duration::from_micros(50);
        loop {
            if let Some((_, bytes)) = self.try_receive_bytes(Some(source), tag)? {
                return Ok(bytes);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(std::time::Duration::from_millis(2));
        }
    }
    /// What this rank has sent so far (see [`Traffic`]); a single rank sends nothing.
    fn traffic(&self) -> Traffic {
        Traffic::default()
    }
    /// Ends the process on every rank with exit code `code` (`MPI_Abort` under MPI): the last
    /// resort for an error that cannot be agreed on because other ranks may be inside a
    /// collective.
    fn abort(&self, code: i32) -> !;
}

fn no_other_rank(operation: &'static str) -> CommError {
    CommError::Mismatch {
        operation,
        message: "a single rank has no other rank to exchange messages with".into(),
    }
}

/// Collective error agreement: every rank calls it with its own outcome of a phase. If every
/// rank succeeded, each gets its value back; otherwise every rank gets the same
/// [`CommError::Failed`] naming the lowest failing rank and its message. One collective call
/// (an all-gather of the messages), so no rank is left waiting.
pub fn agree<T, E: fmt::Display>(comm: &dyn Comm, local: Result<T, E>) -> Result<T, CommError> {
    let message = match &local {
        Ok(_) => Vec::new(),
        // An empty message would read as success: never send one.
        Err(e) => {
            let m = e.to_string();
            if m.is_empty() {
                "error".into()
            } else {
                m.into_bytes()
            }
        }
    };
    let all = comm.allgatherv_bytes(&message)?;
    match all.iter().position(|m| !m.is_empty()) {
        None => Ok(local.unwrap_or_else(|_| unreachable!("a failing rank sends a message"))),
        Some(rank) => Err(CommError::Failed {
            rank,
            size: comm.size(),
            message: String::from_utf8_lossy(&all[rank]).into_owned(),
        }),
    }
}

/// Exclusive prefix sum of `local` over the ranks (rank order) and the total: the offset of
/// this rank's part in a global numbering and the global count.
pub fn exclusive_scan(comm: &dyn Comm, local: u64) -> Result<(u64, u64), CommError> {
    let all = comm.allgatherv_u64(&[local])?;
    let before: u64 = all[..comm.rank()].iter().map(|v| v[0]).sum();
    let total: u64 = all.iter().map(|v| v[0]).sum();
    Ok((before, total))
}

/// The communicator of a single rank: reductions leave their buffer as it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SelfComm;

impl SelfComm {
    /// One shared instance (vectors of a serial run all point at it).
    pub fn shared() -> Arc<dyn Comm> {
        static SHARED: LazyLock<Arc<dyn Comm>> = LazyLock::new(|| Arc::new(SelfComm));
        SHARED.clone()
    }
}

impl Comm for SelfComm {
    fn rank(&self) -> usize {
        0
    }

    fn size(&self) -> usize {
        1
    }

    fn allreduce_sum(&self, _v: &mut [f64]) -> Result<(), CommError> {
        Ok(())
    }

    fn allreduce_max(&self, _v: &mut [f64]) -> Result<(), CommError> {
        Ok(())
    }

    fn allgatherv_u64(&self, local: &[u64]) -> Result<Vec<Vec<u64>>, CommError> {
        Ok(vec![local.to_vec()])
    }

    fn allgatherv_f64(&self, local: &[f64]) -> Result<Vec<Vec<f64>>, CommError> {
        Ok(vec![local.to_vec()])
    }

    fn allgatherv_bytes(&self, local: &[u8]) -> Result<Vec<Vec<u8>>, CommError> {
        Ok(vec![local.to_vec()])
    }

    fn alltoallv_u64(&self, send: &[Vec<u64>]) -> Result<Vec<Vec<u64>>, CommError> {
        check_send_count("alltoallv_u64", send.len(), 1)?;
        Ok(send.to_vec())
    }

    fn alltoallv_f64(&self, send: &[Vec<f64>]) -> Result<Vec<Vec<f64>>, CommError> {
        check_send_count("alltoallv_f64", send.len(), 1)?;
        Ok(send.to_vec())
    }

    fn exchange(
        &self,
        sends: &[(usize, &[f64])],
        recvs: &mut [(usize, &mut [f64])],
        overlap: &mut dyn FnMut(),
    ) -> Result<(), CommError> {
        if !sends.is_empty() || !recvs.is_empty() {
            return Err(CommError::Mismatch {
                operation: "exchange",
                message: "a single rank has no neighbours".into(),
            });
        }
        overlap();
        Ok(())
    }

    fn split(&self, _color: usize, _key: usize) -> Result<Arc<dyn Comm>, CommError> {
        Ok(SelfComm::shared())
    }

    fn concurrent(&self) -> Result<Option<Arc<dyn Comm>>, CommError> {
        Ok(Some(SelfComm::shared()))
    }

    fn abort(&self, code: i32) -> ! {
        std::process::exit(code)
    }
}

/// Errors unless an all-to-all gets one send buffer per rank.
pub(crate) fn check_send_count(
    operation: &'static str,
    found: usize,
    size: usize,
) -> Result<(), CommError> {
    if found != size {
        return Err(CommError::Mismatch {
            operation,
            message: format!("{found} send buffers for {size} ranks"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_comm_is_one_rank_whose_reductions_are_the_identity() {
        let comm = SelfComm::shared();
        assert_eq!((comm.rank(), comm.size()), (0, 1));
        assert_eq!(comm.node_local(), (0, 1));
        let mut v = [1.5, -0.0, f64::MAX];
        comm.allreduce_sum(&mut v).unwrap();
        assert_eq!(v.map(f64::to_bits), [1.5, -0.0, f64::MAX].map(f64::to_bits));
        comm.allreduce_max(&mut v).unwrap();
        assert_eq!(v.map(f64::to_bits), [1.5, -0.0, f64::MAX].map(f64::to_bits));
        assert!(Arc::ptr_eq(&comm, &SelfComm::shared()));
    }

    #[test]
    fn self_comm_collectives_return_the_local_data_and_agree_passes_errors_through() {
        let comm = SelfComm::shared();
        assert_eq!(comm.allgatherv_u64(&[3, 4]).unwrap(), vec![vec![3, 4]]);
        assert_eq!(comm.alltoallv_f64(&[vec![1.5]]).unwrap(), vec![vec![1.5]]);
        assert_eq!(
            comm.alltoallv_f64_moving(vec![vec![1.5]]).unwrap(),
            vec![vec![1.5]]
        );
        assert!(comm.alltoallv_f64_moving(vec![vec![], vec![]]).is_err());
        assert!(comm.alltoallv_u64(&[vec![], vec![]]).is_err());
        assert_eq!(exclusive_scan(&*comm, 7).unwrap(), (0, 7));
        let mut ran = false;
        comm.exchange(&[], &mut [], &mut || ran = true).unwrap();
        assert!(ran);
        assert_eq!(comm.traffic(), Traffic::default());
        assert_eq!(comm.split(3, 0).unwrap().size(), 1);
        assert!(comm.send_bytes(0, 1, b"x").is_err());
        assert!(comm.try_receive_bytes(None, 1).is_err());
        assert_eq!(agree(&*comm, Ok::<_, String>(5)).unwrap(), 5);
        let e = agree(&*comm, Err::<(), _>("bad cell 3")).unwrap_err();
        assert_eq!(e.to_string(), "bad cell 3");
    }
}
