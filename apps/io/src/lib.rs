//! Result files of a run: HDF5 data with an XDMF 3 description for ParaView/VisIt, and a JSON
//! summary, all rewritten after each converged step so that an interrupted run leaves readable
//! files holding every completed step.
//!
//! Files in the output directory, for run name `<name>`: `<name>.h5` (mesh and step data,
//! layout in [`ResultsWriter`]), `<name>.xdmf`, `<name>.summary.json` ([`Summary`]).

mod atomic;
mod data;
mod error;
mod results;
mod summary;
mod xdmf;

pub use data::{CellTensor, MeshData, StepData};
pub use error::OutputError;
pub use results::ResultsWriter;
pub use summary::{MeshInfo, RunInfo, RunStatus, StepRecord, Summary, SummaryWriter};

#[cfg(test)]
mod tests;
