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

    /// Initialises MPI, asking for `MPI_THREAD_MULTIPLE` (what [`Comm::concurrent`] needs;
    /// [`thread_level`]) and needing `MPI_THREAD_SERIALIZED` (any thread may call, one at a
    /// time).
    pub fn init_mpi() -> Result<Self, CommError> {
        let failed = |message: &str| CommError::Collective {
            operation: "MPI_Init_thread",
            rank: 0,
            size: 1,
            message: message.into(),
        };
        let transport = single_node_transport(environment_value)
            .map_err(|message| CommError::Setting { message })?;
        for (name, value) in transport {
            // before MPI_Init, which reads its parameters from the environment; this thread is
            // the process's only one that touches the environment at start-up
            std::env::set_var(name, value);
        }
        let asked =
            thread_level(environment_value).map_err(|message| CommError::Setting { message })?;
        let (universe, provided) = mpi::initialize_with_threading(asked)
            .ok_or_else(|| failed("MPI is already initialised in this process"))?;
        if provided < mpi::Threading::Serialized {
            return Err(failed(
                "the MPI library does not provide MPI_THREAD_SERIALIZED",
            ));
        }
        crate::mpi_comm::set_thread_multiple(provided == mpi::Threading::Multiple);
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

/// The environment variable `name` as text: a value that is not UTF-8 comes with its invalid
/// bytes replaced (so that a setting the user gave is named as no choice, not read as unset).
fn environment_value(name: &str) -> Option<String> {
    value_text(std::env::var_os(name))
}

/// [`environment_value`]'s reading of a value.
fn value_text(value: Option<std::ffi::OsString>) -> Option<String> {
    value.map(|v| v.to_string_lossy().into_owned())
}

/// The variable that chooses the thread support asked of MPI ([`thread_level`]): `multiple`
/// (the default) or `serialized`.
pub const THREADS_VARIABLE: &str = "HEXFEM_MPI_THREADS";

/// The thread support to ask of MPI, from [`THREADS_VARIABLE`] read through `env`:
/// `MPI_THREAD_MULTIPLE` (unset or `multiple`: a rank's output thread then gathers on a
/// communicator of its own while the run goes on, [`Comm::concurrent`]) or
/// `MPI_THREAD_SERIALIZED` (`serialized`: every MPI call of a rank one at a time, the output's
/// gathers on the run's thread; for an MPI library whose `MPI_THREAD_MULTIPLE` misbehaves).
/// Errors: another value (the message names the valid ones).
pub fn thread_level(env: impl Fn(&str) -> Option<String>) -> Result<mpi::Threading, String> {
    match env(THREADS_VARIABLE).as_deref() {
        None | Some("multiple") => Ok(mpi::Threading::Multiple),
        Some("serialized") => Ok(mpi::Threading::Serialized),
        Some(other) => Err(format!(
            "{THREADS_VARIABLE}={other:?} is not a choice (valid: multiple, serialized)"
        )),
    }
}

/// The variable that chooses [`single_node_transport`]'s behaviour: `auto` (the default) or
/// `library` (the MPI library's own choice, untouched).
pub const TRANSPORT_VARIABLE: &str = "HEXFEM_MPI_TRANSPORT";

/// Open MPI's parameters that make ranks of one node talk through shared memory alone
/// (`pml ob1`, `btl self,vader`), as `(variable, value)` to set before `MPI_Init`: where Open
/// MPI's launcher started every rank on this node (`OMPI_COMM_WORLD_LOCAL_SIZE` equal to
/// `OMPI_COMM_WORLD_SIZE`, both read through `env`) and the user chose no transport (none of
/// `OMPI_MCA_pml`, `OMPI_MCA_btl`, `OMPI_MCA_mtl` set, [`TRANSPORT_VARIABLE`] unset or `auto`).
/// Open MPI 4 otherwise probes its network stacks (UCX, OFI) at start-up: 0.26 s of each
/// rank's start against 0.064 s on a two-H200 node (docs/mpi.md). Empty for other launchers,
/// several nodes or a choice made. Errors: [`TRANSPORT_VARIABLE`] set to another value (the
/// message names the valid ones).
pub fn single_node_transport(
    env: impl Fn(&str) -> Option<String>,
) -> Result<Vec<(&'static str, &'static str)>, String> {
    let follow_library = match env(TRANSPORT_VARIABLE).as_deref() {
        None | Some("auto") => false,
        Some("library") => true,
        Some(other) => {
            return Err(format!(
                "{TRANSPORT_VARIABLE}={other:?} is not a choice (valid: auto, library)"
            ))
        }
    };
    let one_node = match (
        env("OMPI_COMM_WORLD_SIZE"),
        env("OMPI_COMM_WORLD_LOCAL_SIZE"),
    ) {
        (Some(size), Some(local)) => size == local,
        _ => false,
    };
    let chosen = ["OMPI_MCA_pml", "OMPI_MCA_btl", "OMPI_MCA_mtl"]
        .iter()
        .any(|v| env(v).is_some());
    if follow_library || !one_node || chosen {
        return Ok(Vec::new());
    }
    Ok(vec![
        ("OMPI_MCA_pml", "ob1"),
        ("OMPI_MCA_btl", "self,vader"),
    ])
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `single_node_transport` over the variables `vars`.
    fn transport(vars: &[(&str, &str)]) -> Result<Vec<(&'static str, &'static str)>, String> {
        single_node_transport(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn mpi_is_asked_for_multiple_threads_unless_serialized_is_chosen() {
        let level = |vars: &[(&str, &str)]| {
            thread_level(|v| {
                vars.iter()
                    .find(|(k, _)| *k == v)
                    .map(|(_, x)| x.to_string())
            })
        };
        assert_eq!(level(&[]), Ok(mpi::Threading::Multiple));
        assert_eq!(
            level(&[(THREADS_VARIABLE, "multiple")]),
            Ok(mpi::Threading::Multiple)
        );
        assert_eq!(
            level(&[(THREADS_VARIABLE, "serialized")]),
            Ok(mpi::Threading::Serialized)
        );
        let e = level(&[(THREADS_VARIABLE, "funneled")]).unwrap_err();
        assert!(
            e.contains("\"funneled\"") && e.contains("multiple, serialized"),
            "{e}"
        );
    }

    /// A setting that is not UTF-8 is named as no choice (it used to read as unset: the
    /// default, silently).
    #[cfg(unix)]
    #[test]
    fn a_setting_that_is_not_utf8_is_no_choice() {
        use std::os::unix::ffi::OsStringExt;
        let bad = || value_text(Some(std::ffi::OsString::from_vec(vec![b's', 0xff])));
        assert_eq!(bad().as_deref(), Some("s\u{fffd}"));
        assert_eq!(value_text(None), None);
        let e = thread_level(|v| (v == THREADS_VARIABLE).then(bad).flatten()).unwrap_err();
        assert!(
            e.contains(THREADS_VARIABLE) && e.contains("multiple, serialized"),
            "{e}"
        );
        let e =
            single_node_transport(|v| (v == TRANSPORT_VARIABLE).then(bad).flatten()).unwrap_err();
        assert!(
            e.contains(TRANSPORT_VARIABLE) && e.contains("auto, library"),
            "{e}"
        );
    }

    #[test]
    fn ranks_of_one_node_take_shared_memory_unless_a_transport_is_chosen() {
        let shared = vec![("OMPI_MCA_pml", "ob1"), ("OMPI_MCA_btl", "self,vader")];
        let one_node = [
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "4"),
        ];
        assert_eq!(transport(&one_node).unwrap(), shared);
        let auto = [one_node[0], one_node[1], (TRANSPORT_VARIABLE, "auto")];
        assert_eq!(transport(&auto).unwrap(), shared);
        // several nodes, another launcher, a choice of the user's: untouched
        let two_nodes = [
            ("OMPI_COMM_WORLD_SIZE", "8"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "4"),
        ];
        assert!(transport(&two_nodes).unwrap().is_empty());
        assert!(transport(&[("PMI_SIZE", "2")]).unwrap().is_empty());
        for chosen in ["OMPI_MCA_pml", "OMPI_MCA_btl", "OMPI_MCA_mtl"] {
            let vars = [one_node[0], one_node[1], (chosen, "ucx")];
            assert!(transport(&vars).unwrap().is_empty(), "{chosen}");
        }
        let library = [one_node[0], one_node[1], (TRANSPORT_VARIABLE, "library")];
        assert!(transport(&library).unwrap().is_empty());
        // a value that is no choice is an error naming the valid ones
        let bad = [one_node[0], one_node[1], (TRANSPORT_VARIABLE, "shm")];
        let e = transport(&bad).unwrap_err();
        assert!(e.contains("\"shm\"") && e.contains("auto, library"), "{e}");
    }
}
