//! Blocked smoothed-aggregation algebraic multigrid, its smoothers and Krylov methods.
//!
//! Everything works on [`linalg::Bsr`] block matrices; nothing on the coarsening path expands a block
//! matrix to scalar entries. See `/work/shared/design/GAMG.md` for the algorithm.

pub mod aggregation;
pub mod dense;
mod error;
pub mod krylov;
pub mod near_null;
pub mod point_block_jacobi;
pub mod strength;
pub mod tentative;
#[cfg(test)]
pub(crate) mod test_util;

pub use aggregation::{aggregate, Aggregates, MisDistance};
pub use error::AmgError;
pub use krylov::{cg, CgOutcome, CgParams, CgStopReason, IdentityPreconditioner, Preconditioner, ResidualNorm};
pub use near_null::NearNullSpace;
pub use point_block_jacobi::PointBlockJacobi;
pub use strength::{strength_graph, StrengthGraph};
pub use tentative::tentative_prolongator;
