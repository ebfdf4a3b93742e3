//! Blocked smoothed-aggregation algebraic multigrid, its smoothers and Krylov methods.
//!
//! Everything works on [`linalg::Bsr`] block matrices; nothing on the coarsening path expands a block
//! matrix to scalar entries. See `/work/shared/design/GAMG.md` for the algorithm.

// `!(x > tol)` is deliberate throughout: it also rejects NaN.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod aggregation;
pub mod dense;
pub mod eig;
mod error;
pub mod hierarchy;
pub mod krylov;
pub mod near_null;
pub mod params;
pub mod point_block_jacobi;
pub mod prolongator;
pub mod report;
pub mod restriction;
pub mod smoother;
mod storage;
pub mod strength;
pub mod tentative;
#[cfg(test)]
pub(crate) mod test_util;

pub use aggregation::{aggregate, Aggregates, MisDistance};
pub use error::AmgError;
pub use hierarchy::{Hierarchy, VCycle};
pub use krylov::{
    cg, CgOutcome, CgParams, CgStopReason, IdentityPreconditioner, Preconditioner, ResidualNorm,
};
pub use near_null::NearNullSpace;
pub use params::{AmgParams, Reuse, SmootherKind, Storage};
pub use point_block_jacobi::PointBlockJacobi;
pub use report::{HierarchyReport, LevelReport, SetupTimings, UpdateReport};
pub use strength::{strength_graph, StrengthGraph};
pub use tentative::tentative_prolongator;
