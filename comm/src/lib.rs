//! The communicator seam of hexfem: the collective operations the numeric layers need, behind
//! the [`Comm`] trait, so that a vector's reductions do not care how many ranks share it.
//!
//! Today there is one implementation, [`SelfComm`] (one rank, every reduction the identity): the
//! serial behaviour. The MPI implementation (rsmpi), halo exchange plans and collective error
//! agreement arrive with the MPI issue; `comm` will then be the only crate that names MPI.
//!
//! Determinism: a reduction combines the ranks' contributions in a fixed order (rank order), so
//! for a fixed number of ranks results are bit-identical from run to run.

use std::fmt;
use std::sync::{Arc, LazyLock};

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
    /// Element-wise maximum of `v` over the ranks, in place on every rank.
    fn allreduce_max(&self, v: &mut [f64]) -> Result<(), CommError>;
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_comm_is_one_rank_whose_reductions_are_the_identity() {
        let comm = SelfComm::shared();
        assert_eq!((comm.rank(), comm.size()), (0, 1));
        let mut v = [1.5, -0.0, f64::MAX];
        comm.allreduce_sum(&mut v).unwrap();
        assert_eq!(v.map(f64::to_bits), [1.5, -0.0, f64::MAX].map(f64::to_bits));
        comm.allreduce_max(&mut v).unwrap();
        assert_eq!(v.map(f64::to_bits), [1.5, -0.0, f64::MAX].map(f64::to_bits));
        assert!(Arc::ptr_eq(&comm, &SelfComm::shared()));
    }
}
