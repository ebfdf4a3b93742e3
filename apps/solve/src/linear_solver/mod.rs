//! The linear solver of each Newton iteration, one for one process and for a rank of many, in
//! three independent axes (PETSc's KSP x PC x Mat):
//! - the Krylov method ([`Krylov`], `krylov.rs`): CG, GMRES where the tangent is not symmetric,
//!   or the preconditioner alone (the direct factor of a symmetric tangent); GMRES retries a CG
//!   breakdown;
//! - the preconditioner ([`PreconditionerKind`], `preconditioner.rs`): smoothed-aggregation
//!   AMG, point-block Jacobi or the direct factor;
//! - the operator ([`OperatorKind`]): the tangent itself, a `Bsr` on the host or copied to a GPU
//!   (`serial.rs`), or this rank's owned rows of the distributed tangent, a `DistBsr`
//!   (`ranks.rs`).
//!
//! [`LinearSolver::choose`] resolves `method: auto` and returns why ([`Choice`], `choice.rs`);
//! a combination an operator cannot run is refused there with a [`ChoiceError`] naming the input
//! key. Each call to [`LinearSolver::solve`] takes a tangent with new values on the pattern of
//! the previous call and reuses what depends on the pattern only (the direct solver's ordering,
//! the distributed pattern) and what the AMG's `reuse` keeps.

mod choice;
mod krylov;
mod preconditioner;
mod ranks;
mod report;
mod serial;

use std::sync::Arc;

use amg::{CgParams, Hierarchy, HierarchyReport, NearNullSpace};
use linalg::direct::DirectSymbolic;
use linalg::{Bsr, Device, Vector};

pub use choice::{
    AmgSummary, Choice, ChoiceError, ChoiceReason, FactorEstimate, OperatorKind, Place,
};
pub use krylov::Krylov;
pub use preconditioner::PreconditionerKind;
pub use report::{DeviceSolveReport, LinearSolveReport, SetupKind};

use crate::error::{Error, Result};
use crate::params::{DeviceChoice, LinearSolverMethod, LinearSolverParams};
use amg::dist_cycle::DistHierarchy;
use preconditioner::Preconditioning;
use ranks::RankRows;
use serial::DeviceSide;

/// The relative tolerance of GMRES preconditioned by the direct factor (a nonsymmetric tangent):
/// close to what a factorisation gives.
const DIRECT_GMRES_RTOL: f64 = 1e-12;

/// A configured linear solver with the state it reuses across calls.
pub struct LinearSolver {
    krylov: Krylov,
    /// The Krylov method's tolerances and iteration limit.
    params: CgParams,
    operator: Operator,
}

/// The operator axis with the preconditioner's state, whose AMG hierarchy is the operator's.
enum Operator {
    /// The tangent as given, solved on the host or on a GPU (`gpu`: the device copies).
    Serial {
        gpu: Option<DeviceSide>,
        preconditioner: Preconditioning<Box<Hierarchy>>,
    },
    /// This rank's owned rows of the distributed tangent.
    Ranks {
        rows: Box<RankRows>,
        preconditioner: Preconditioning<DistHierarchy>,
    },
}

impl LinearSolver {
    /// A solver as configured, on `operator`, for a tangent that is (or is not) `symmetric`:
    /// `method: auto` is AMG here ([`LinearSolver::choose`] resolves it per problem);
    /// `near_null` (the rigid-body modes; on a rank, of all its local nodes) is used by AMG
    /// only. Errors where `device: cuda` finds no usable GPU, for `method: direct` with
    /// `device: cuda`, and (a [`ChoiceError`]) for options a rank's operator does not have.
    pub fn new(
        params: &LinearSolverParams,
        near_null: NearNullSpace,
        operator: OperatorKind,
        symmetric: bool,
    ) -> Result<Self> {
        let kind = match params.method {
            LinearSolverMethod::CgAmg | LinearSolverMethod::Auto => PreconditionerKind::Amg,
            LinearSolverMethod::CgJacobi => PreconditionerKind::Jacobi,
            LinearSolverMethod::Direct => PreconditionerKind::Direct,
        };
        Self::with(params, near_null, operator, symmetric, kind, None)
    }

    /// The solver of `kind` (`symbolic`: the direct factor's ordering, where already computed).
    fn with(
        params: &LinearSolverParams,
        near_null: NearNullSpace,
        operator: OperatorKind,
        symmetric: bool,
        kind: PreconditionerKind,
        symbolic: Option<Arc<DirectSymbolic>>,
    ) -> Result<Self> {
        let direct = kind == PreconditionerKind::Direct;
        let krylov = match Krylov::for_tangent(symmetric) {
            Krylov::Cg if direct => Krylov::PreOnly,
            krylov => krylov,
        };
        let cg_params = if direct {
            CgParams {
                rtol: DIRECT_GMRES_RTOL,
                atol: 0.0,
                max_iterations: 500,
                ..CgParams::default()
            }
        } else {
            CgParams {
                rtol: params.rtol,
                atol: params.atol,
                max_iterations: params.max_iterations,
                ..CgParams::default()
            }
        };
        let operator = match operator {
            OperatorKind::Serial { .. } => {
                if direct && params.device == DeviceChoice::Cuda {
                    return Err(Error::DirectOnGpu);
                }
                Operator::Serial {
                    gpu: if direct {
                        None
                    } else {
                        DeviceSide::open(params.device)?
                    },
                    preconditioner: Preconditioning::new(
                        kind,
                        params.amg.clone(),
                        near_null,
                        symbolic,
                    ),
                }
            }
            OperatorKind::Ranks { comm, part, device } => {
                choice::check_on_ranks(params, kind, comm.size())?;
                // GPU ranks gather small coarse levels sooner
                let amg = if device.is_host() {
                    params.amg.clone()
                } else {
                    params.amg.on_gpu_ranks()
                };
                Operator::Ranks {
                    rows: Box::new(RankRows::new(comm, part, device)),
                    preconditioner: Preconditioning::new(kind, amg, near_null, None),
                }
            }
        };
        Ok(LinearSolver {
            krylov,
            params: cg_params,
            operator,
        })
    }

    /// The device the Krylov method and the preconditioner run on, and with them the Newton
    /// loop: a GPU of this process, or this rank's GPU; `None`: the host.
    pub fn device(&self) -> Option<&Device> {
        match &self.operator {
            Operator::Serial { gpu, .. } => gpu.as_ref().map(|g| &g.device),
            Operator::Ranks { rows, .. } => Some(&rows.device).filter(|d| !d.is_host()),
        }
    }

    /// The Krylov method.
    pub fn krylov(&self) -> Krylov {
        self.krylov
    }

    /// The preconditioner.
    pub fn preconditioner(&self) -> PreconditionerKind {
        match &self.operator {
            Operator::Serial { preconditioner, .. } => preconditioner.kind(),
            Operator::Ranks { preconditioner, .. } => preconditioner.kind(),
        }
    }

    /// The AMG hierarchy's report, once one is set up (one process).
    pub fn hierarchy_report(&self) -> Option<&HierarchyReport> {
        match &self.operator {
            Operator::Serial {
                preconditioner: Preconditioning::Amg(state),
                ..
            } => state.hierarchy.as_ref().map(|h| h.report()),
            _ => None,
        }
    }

    /// Replaces the AMG's near-null space (no effect on other methods; on a rank: of all its
    /// local nodes); the next solve renews the hierarchy (`amg::Hierarchy::set_near_null_space`:
    /// a cold set-up's values, keeping the symbolic plans where the aggregates did not change;
    /// on ranks `DistHierarchy::set_near_null_space`, which keeps none). Newton passes the
    /// rigid-body modes of the deformed configuration at the start of each load step: under
    /// large rotations those of the reference configuration are far from the tangent's
    /// near-null space and CG iterations grow with the rotation.
    pub fn set_near_null_space(&mut self, modes: NearNullSpace) {
        match &mut self.operator {
            Operator::Serial { preconditioner, .. } => preconditioner.set_near_null_space(modes),
            Operator::Ranks { preconditioner, .. } => preconditioner.set_near_null_space(modes),
        }
    }

    /// Whether the next solve sets the AMG up for the first time, cold, with the near-null
    /// space the solver was chosen with (no hierarchy yet, none set since): replacing it with
    /// the same modes computed elsewhere (on the GPU) then changes no bit of the set-up.
    pub fn awaits_first_setup(&self) -> bool {
        match &self.operator {
            Operator::Serial { preconditioner, .. } => preconditioner.awaits_first_setup(),
            Operator::Ranks { preconditioner, .. } => preconditioner.awaits_first_setup(),
        }
    }

    /// Whether the solver uses AMG (and so a near-null space).
    pub fn uses_amg(&self) -> bool {
        self.preconditioner() == PreconditionerKind::Amg
    }

    /// Whether the solver is iterative (its tolerance matters).
    pub fn is_iterative(&self) -> bool {
        self.preconditioner() != PreconditionerKind::Direct
    }

    /// Solves `k x = b` from `x = 0` to the configured tolerance (see [`LinearSolver::solve_to`]).
    pub fn solve(&mut self, k: &Bsr, b: &Vector, x: &mut Vector) -> Result<LinearSolveReport> {
        self.solve_to(k, b, x, None)
    }

    /// Solves `k x = b` from `x = 0`; iterative methods to the relative tolerance `rtol`
    /// (`None`: the configured one; GMRES with the direct factor keeps its own). On a rank `k`
    /// and `b` are the rank-local tangent and right-hand side (owned rows complete), `x` gets
    /// its ghosts from their owners, and the call is collective. Where CG breaks down (an
    /// indefinite tangent or preconditioner) the solve is repeated by GMRES with the same
    /// preconditioner, and the report says so. A zero pivot of the direct solver or a failed
    /// fallback is an error; hitting the iteration limit is reported, not an error.
    pub fn solve_to(
        &mut self,
        k: &Bsr,
        b: &Vector,
        x: &mut Vector,
        rtol: Option<f64>,
    ) -> Result<LinearSolveReport> {
        x.fill(0.0)?;
        let params = match rtol {
            Some(rtol) if self.is_iterative() => CgParams {
                rtol,
                ..self.params
            },
            _ => self.params,
        };
        match &mut self.operator {
            Operator::Serial {
                gpu,
                preconditioner,
            } => serial::solve(gpu, preconditioner, self.krylov, k, b, x, &params),
            Operator::Ranks {
                rows,
                preconditioner,
            } => rows.solve(preconditioner, self.krylov, k, b, x, &params),
        }
    }
}
