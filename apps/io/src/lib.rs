//! Result files of a run: HDF5 data with an XDMF 3 description for ParaView/VisIt/meshio, and a
//! JSON summary with its step log, all appended after each converged step at a cost that does
//! not grow with the number of steps, so that an interrupted run (killed, or stopped by a full
//! disk) leaves readable files holding every completed step.
//!
//! Files in the output directory, for run name `<name>`: `<name>.h5` (mesh and step data,
//! layout in [`ResultsWriter`]), `<name>.xdmf`, `<name>.summary.json` ([`Summary`]) and
//! `<name>.steps.jsonl`, and with probes `<name>.probes.csv` ([`ProbeLog`]). [`preflight`] checks before a run that they can be written.
//!
//! The HDF5 file is written by this crate's own append-only writer (module `h5`), which commits
//! each step with one atomic write; the HDF5 library is used only to read files back
//! ([`ResultsReader`]).

mod atomic;
mod data;
mod error;
pub mod faults;
mod h5;
mod preflight;
mod probes;
mod reader;
mod results;
mod summary;
mod vtu;
mod xdmf;

pub use data::{CellTensor, MeshData, StepData, StepField};
pub use error::OutputError;
pub use faults::{FaultAction, Faults};
pub use h5::Pieces;
pub use preflight::{existing_results, output_files, preflight, MAX_NAME_BYTES};
pub use probes::{ProbeLog, ProbeTable};
pub use reader::ResultsReader;
pub use results::{MeshDataset, MeshShape, ResultsWriter, StepHeader};
pub use summary::{
    MeshInfo, RanksInfo, RunInfo, RunStatus, StageRow, StageTable, StepRecord, Summary,
    SummaryWriter,
};

#[cfg(test)]
mod tests;

/// The HDF5 library's version (major, minor, release) that this build links.
pub fn hdf5_version() -> (u8, u8, u8) {
    hdf5::library_version()
}
