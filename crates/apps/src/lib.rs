//! The `hexfem` application: YAML configuration, problem set-up, Newton with load stepping,
//! HDF5/XDMF output, the verification suite and benchmarks. The binary (`main.rs`) only parses
//! the command line and calls into these modules.

pub mod bench;
pub mod check;
pub mod config;
pub mod ex56;
pub mod linear_solver;
pub mod newton;
pub mod output;
pub mod problem;
pub mod run;
pub mod verify;
