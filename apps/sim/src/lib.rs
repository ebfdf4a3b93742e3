//! hexfem's simulation library: a run of a validated configuration (problem, Newton load path,
//! output, probes, restart, memory guard) on one rank or many, campaigns of runs, the
//! verification suite and the input check. The `hexfem` command line (`apps/hexfem`) parses
//! arguments and renders; everything it runs is here.

pub mod campaign;
pub mod check;
pub mod dist_output;
pub mod distributed;
pub mod formulation;
pub mod locate;
pub mod memory;
pub mod monitor;
pub mod probes;
pub mod restart;
pub mod run;
pub mod solver_text;
pub mod verify;
pub mod windows;

#[cfg(test)]
mod gpu_runs;
