//! hexfem's solution layer: the discrete problem of a run (mesh, materials, constraints, loads),
//! Newton with lifting, line search and load stepping, and the choice of linear solver. It takes
//! plain parameters ([`params`]); reading input files is `config`'s job.

pub mod error;
pub mod expression;
pub mod geometric_sets;
pub mod linear_solver;
pub mod newton;
pub mod newton_system;
pub mod params;
pub mod partition;
pub mod problem;

pub use error::{Error, Result};
