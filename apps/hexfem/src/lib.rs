//! The `hexfem` application: the `run`, `check`, `verify` and `bench` commands over the library
//! crates (`config` reads inputs, `solve` solves, `io` writes results). The binary (`main.rs`)
//! only parses the command line and calls into these modules.

pub mod bench;
pub mod campaign;
pub mod check;
pub mod dist_output;
pub mod distributed;
pub mod formulation;
pub mod locate;
pub mod memory;
pub mod monitor;
pub mod plot;
pub mod probes;
pub mod restart;
pub mod run;
pub mod solver_text;
pub mod verify;
pub mod windows;

#[cfg(test)]
mod gpu_runs;
