//! Blocked smoothed-aggregation algebraic multigrid, its smoothers and Krylov methods.
//!
//! Everything works on [`linalg::Bsr`] block matrices and [`linalg::Vector`]s; the arithmetic on
//! them (SpMV, restriction, prolongator smoothing, block-diagonal inverses, Galerkin products,
//! the coarse solve) is `linalg`'s, so it runs wherever the operator lives. The set-up graph
//! stages (strength graph, aggregation, tentative prolongator) are host set-up data. Nothing on
//! the coarsening path expands a block matrix to scalar entries. The algorithm, our choices
//! against PETSc's GAMG and the reuse rules are described in the repository's `docs/amg.md`.

// `!(x > tol)` is deliberate throughout: it also rejects NaN.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod aggregation;
pub mod dist_aggregation;
pub mod dist_cycle;
pub mod dist_galerkin;
pub mod dist_prolongator;
pub mod dist_telescope;
pub mod dist_tentative;
pub mod eig;
mod error;
pub mod gmres;
pub mod hierarchy;
pub mod krylov;
mod label_set;
mod level_matrix;
pub mod near_null;
pub mod params;
pub mod point_block_jacobi;
pub mod prolongator;
pub mod report;
pub mod smoother;
pub mod strength;
pub mod tentative;
#[cfg(test)]
pub(crate) mod test_util;
mod vcycle;

pub use aggregation::{aggregate, aggregate_level, mis, mis_level, Aggregates, MisDistance};
pub use error::AmgError;
pub use gmres::{gmres, gmres_operator, GmresOutcome, GmresParams, GmresStopReason};
pub use hierarchy::{
    check_device_memory, device_memory_estimate, CycleWorkspace, Hierarchy, VCycle,
    DEVICE_BYTES_PER_OPERATOR_BYTE,
};
pub use krylov::{
    cg, cg_operator, CgOutcome, CgParams, CgStopReason, IdentityPreconditioner, LinearOperator,
    Preconditioner, ResidualNorm,
};
pub use near_null::NearNullSpace;
pub use params::{AmgParams, Precision, Renewal, Reuse, SmootherKind, Storage, JACOBI_OMEGA_SCALE};
pub use point_block_jacobi::PointBlockJacobi;
pub use report::{
    HierarchyReport, LevelReport, MessageReport, RenewalReport, SetupTimings, StageTransfers,
    TransferReport, UpdateReport,
};
pub use smoother::SmoothingPolynomial;
pub use strength::{level_strength_graph, strength_graph, LevelGraph, StrengthGraph};
pub use tentative::tentative_prolongator;
