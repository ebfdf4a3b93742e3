//! [`Session`]: the lifetime of MPI in a process, and the communicator of the run.

use std::sync::Arc;

use crate::{Comm, CommError, MpiComm, SelfComm};

/// Environment variables an MPI launcher sets in the processes it starts (Open MPI, PMIx,
/// MPICH's Hydra).
const LAUNCHER_VARIABLES: [&str; 3] = ["OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"];

/// The communicator of a run and, under MPI, the MPI library's lifetime: created once at the
/// start of `main` (or of a multi-rank test), dropped at its end, which finalises MPI. Every
/// collective call must happen while the session lives.
pub struct Session {
    comm: Arc<dyn Comm>,
    /// Finalises MPI when dropped (`None` for a serial run).
    universe: Option<mpi::environment::Universe>,
}

impl Session {
    /// MPI's world communicator when the process was started by an MPI launcher (`mpirun`),
    /// else [`SelfComm`] without touching MPI: a binary run on its own is the serial program.
    pub fn init() -> Result<Self, CommError> {
        if launched_by_mpi() {
            Self::init_mpi()
        } else {
            Ok(Self::serial())
        }
    }

    /// A serial session ([`SelfComm`]); MPI stays uninitialised.
    pub fn serial() -> Self {
        Self {
            comm: SelfComm::shared(),
            universe: None,
        }
    }

    /// Initialises MPI (any thread may call it, one at a time: `MPI_THREAD_SERIALIZED`).
    pub fn init_mpi() -> Result<Self, CommError> {
        let failed = |message: &str| CommError::Collective {
            operation: "MPI_Init_thread",
            rank: 0,
            size: 1,
            message: message.into(),
        };
        let (universe, provided) = mpi::initialize_with_threading(mpi::Threading::Serialized)
            .ok_or_else(|| failed("MPI is already initialised in this process"))?;
        if provided < mpi::Threading::Serialized {
            return Err(failed(
                "the MPI library does not provide MPI_THREAD_SERIALIZED",
            ));
        }
        Ok(Self {
            comm: Arc::new(MpiComm::world()),
            universe: Some(universe),
        })
    }

    /// The communicator of the run (shared by every distributed object).
    pub fn comm(&self) -> Arc<dyn Comm> {
        self.comm.clone()
    }

    /// True under MPI (even on one rank).
    pub fn is_mpi(&self) -> bool {
        self.universe.is_some()
    }
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("comm", &self.comm)
            .field("mpi", &self.universe.is_some())
            .finish()
    }
}

/// True if an MPI launcher started this process.
pub fn launched_by_mpi() -> bool {
    LAUNCHER_VARIABLES
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

/// The MPI library's own version string (`MPI_Get_library_version`, callable before MPI is
/// initialised), up to its first comma on its first line (`Open MPI v4.1.4`); `None` where the
/// library gives none.
pub fn mpi_library_version() -> Option<String> {
    let text = mpi::environment::library_version().ok()?;
    let line = text.lines().next()?.split(',').next()?.trim().to_owned();
    (!line.is_empty()).then_some(line)
}
