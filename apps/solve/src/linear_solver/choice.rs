//! The choice of the linear solver: `method: auto` resolved per problem and operator, and the
//! reason for what was chosen, as a value with its numbers ([`Choice`]; the CLI renders it into
//! the run header). Options an operator cannot run are refused with the input key at fault
//! ([`ChoiceError`]).

use std::sync::Arc;

use amg::{NearNullSpace, SmootherKind, Storage};
use comm::Comm;
use linalg::direct::DirectSymbolic;
use linalg::{BlockPattern, Device};

use super::{Krylov, LinearSolver, PreconditionerKind};
use crate::error::Result;
use crate::params::{DeviceChoice, LinearSolverMethod, LinearSolverParams};

/// `method: auto` factors directly where the envelope factor takes at most this many bytes...
const AUTO_DIRECT_MAX_BYTES: f64 = 256e6;
/// ... and one factorization at most this many floating-point operations per stored scalar of the
/// tangent; above either it uses CG with AMG. Measured with `scripts/solver_choice_runs.sh` (table
/// in docs/benchmarks.md): one factorization costs about one AMG Newton iteration (hot update +
/// CG) at 250 (two pinned cores) to 290 (the development machine) flops per stored entry.
const AUTO_DIRECT_MAX_FLOPS_PER_SCALAR: f64 = 250.0;

/// The operator a solver runs on.
pub enum OperatorKind<'a> {
    /// The whole tangent on this process, whose block pattern `pattern` gives (what `auto` on
    /// the CPU estimates the direct factor from; asked only then: a tangent made on a GPU has
    /// no host plan to make it from until asked); `LinearSolverParams::device` says where it is
    /// solved.
    Serial {
        pattern: &'a (dyn Fn() -> &'a BlockPattern + 'a),
    },
    /// This rank's owned rows of the distributed tangent of `part`, on the ranks of `comm`,
    /// solved on `device` (this rank's, as selected by every rank together).
    Ranks {
        comm: Arc<dyn Comm>,
        part: &'a mesh::MeshPart,
        device: Device,
    },
}

/// What [`LinearSolver::choose`] chose and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    pub krylov: Krylov,
    pub preconditioner: PreconditionerKind,
    /// Whether the tangent is symmetric (GMRES replaces CG where it is not).
    pub symmetric: bool,
    pub reason: ChoiceReason,
    pub place: Place,
    /// The AMG options in force (`process_eq_limit` as on GPU ranks where the ranks have GPUs);
    /// `None` without AMG.
    pub amg: Option<AmgSummary>,
}

/// Why the method is the one chosen.
#[derive(Clone, Debug, PartialEq)]
pub enum ChoiceReason {
    /// `linear_solver.method` named it.
    Configured,
    /// `auto` with `device: cuda`: AMG, the direct solver is host-only.
    AutoOnGpu,
    /// `auto` on several ranks: AMG, the direct solver is not available there.
    AutoOnRanks,
    /// `auto` factors: the factor's estimate is within both limits.
    AutoFactorSmall(FactorEstimate),
    /// `auto` takes AMG: the factor's estimate exceeds `max_bytes` or `max_flops`.
    AutoFactorLarge {
        estimate: FactorEstimate,
        max_bytes: f64,
        max_flops: f64,
    },
}

/// The direct factor's size and cost, estimated from the tangent's pattern.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FactorEstimate {
    pub bytes: f64,
    pub flops: f64,
}

/// Where the solver runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Place {
    Host,
    /// A GPU of this process, by name.
    Gpu(String),
    /// This rank's share of `ranks` MPI ranks (on their GPUs or CPUs).
    Ranks(usize),
}

/// The AMG options a header names.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AmgSummary {
    pub smoother: SmootherKind,
    pub coarse_eq_limit: usize,
    pub process_eq_limit: usize,
}

/// A configured option the operator cannot run: refused, never replaced. `key`: the input key
/// at fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChoiceError {
    #[error("{value} is not available on {ranks} MPI ranks (valid there: {valid})")]
    NotOnRanks {
        key: &'static str,
        value: &'static str,
        ranks: usize,
        valid: &'static str,
    },
}

impl ChoiceError {
    /// The input key (`linear_solver.method`, say) the error belongs to.
    pub fn key(&self) -> &'static str {
        match self {
            ChoiceError::NotOnRanks { key, .. } => key,
        }
    }
}

/// The options of `params` for a preconditioner of `kind` that a rank's operator cannot run:
/// the direct factor, and AMG's scalar storage and mixed precision.
pub(super) fn check_on_ranks(
    params: &LinearSolverParams,
    kind: PreconditionerKind,
    ranks: usize,
) -> Result<(), ChoiceError> {
    let refuse = |key, value, valid| {
        Err(ChoiceError::NotOnRanks {
            key,
            value,
            ranks,
            valid,
        })
    };
    match kind {
        PreconditionerKind::Direct => {
            refuse("linear_solver.method", "direct", "auto, cg_amg, cg_jacobi")
        }
        PreconditionerKind::Amg if params.amg.storage == Storage::Scalar => {
            refuse("linear_solver.amg.storage", "scalar", "blocked")
        }
        PreconditionerKind::Amg if params.amg.precision != amg::Precision::Double => refuse(
            "linear_solver.amg.precision",
            params.amg.precision.name(),
            "double",
        ),
        _ => Ok(()),
    }
}

impl LinearSolver {
    /// A solver as configured for the tangent of `operator`, and why it is that one: `method:
    /// auto` becomes the direct solver where its factor is small and fast (the estimate is in
    /// the reason) and the solver runs on the CPU of one process, CG with AMG otherwise
    /// (`device: cuda` always takes CG with AMG: the direct solver is host-only; so do ranks).
    /// Where the tangent is not `symmetric` (follower pressure) the iterative methods use GMRES
    /// instead of CG with the same preconditioner, and the direct factor preconditions GMRES.
    /// Errors where `device: cuda` finds no usable GPU, and (a [`ChoiceError`]) for an option a
    /// rank cannot run (`direct`, AMG's scalar storage or mixed precision).
    pub fn choose(
        params: &LinearSolverParams,
        near_null: NearNullSpace,
        operator: OperatorKind,
        symmetric: bool,
    ) -> Result<(Self, Choice)> {
        let (kind, reason, symbolic) = match (&operator, params.method) {
            (_, LinearSolverMethod::CgJacobi) => {
                (PreconditionerKind::Jacobi, ChoiceReason::Configured, None)
            }
            (_, LinearSolverMethod::CgAmg) => {
                (PreconditionerKind::Amg, ChoiceReason::Configured, None)
            }
            (_, LinearSolverMethod::Direct) => {
                (PreconditionerKind::Direct, ChoiceReason::Configured, None)
            }
            (OperatorKind::Ranks { .. }, LinearSolverMethod::Auto) => {
                (PreconditionerKind::Amg, ChoiceReason::AutoOnRanks, None)
            }
            (OperatorKind::Serial { .. }, LinearSolverMethod::Auto)
                if params.device == DeviceChoice::Cuda =>
            {
                (PreconditionerKind::Amg, ChoiceReason::AutoOnGpu, None)
            }
            (OperatorKind::Serial { pattern }, LinearSolverMethod::Auto) => {
                let pattern = pattern();
                let symbolic = DirectSymbolic::new(pattern)?;
                let estimate = FactorEstimate {
                    bytes: (symbolic.envelope_size(3) * size_of::<f64>()) as f64,
                    flops: symbolic.factor_flops(3),
                };
                let max_flops = AUTO_DIRECT_MAX_FLOPS_PER_SCALAR * (pattern.nnz() * 9) as f64;
                if estimate.bytes <= AUTO_DIRECT_MAX_BYTES && estimate.flops <= max_flops {
                    let reason = ChoiceReason::AutoFactorSmall(estimate);
                    (PreconditionerKind::Direct, reason, Some(Arc::new(symbolic)))
                } else {
                    let reason = ChoiceReason::AutoFactorLarge {
                        estimate,
                        max_bytes: AUTO_DIRECT_MAX_BYTES,
                        max_flops,
                    };
                    (PreconditionerKind::Amg, reason, None)
                }
            }
        };
        let ranks = match &operator {
            OperatorKind::Serial { .. } => None,
            OperatorKind::Ranks { comm, .. } => Some(comm.size()),
        };
        let solver = Self::with(params, near_null, operator, symmetric, kind, symbolic)?;
        let place = match (ranks, solver.device()) {
            (Some(ranks), _) => Place::Ranks(ranks),
            (None, Some(gpu)) => Place::Gpu(gpu.name()),
            (None, None) => Place::Host,
        };
        let amg = solver.amg_summary();
        let choice = Choice {
            krylov: solver.krylov,
            preconditioner: kind,
            symmetric,
            reason,
            place,
            amg,
        };
        Ok((solver, choice))
    }

    /// The AMG options in force, where the solver uses AMG.
    fn amg_summary(&self) -> Option<AmgSummary> {
        let params = match &self.operator {
            super::Operator::Serial {
                preconditioner: super::Preconditioning::Amg(state),
                ..
            } => &state.params,
            super::Operator::Ranks {
                preconditioner: super::Preconditioning::Amg(state),
                ..
            } => &state.params,
            _ => return None,
        };
        Some(AmgSummary {
            smoother: params.smoother,
            coarse_eq_limit: params.coarse_eq_limit,
            process_eq_limit: params.process_eq_limit(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chain of `n` nodes (3x3 blocks): each coupled to its neighbours.
    fn chain(n: usize) -> BlockPattern {
        let mut row_ptr = vec![0];
        let mut cols = Vec::new();
        for i in 0..n {
            cols.extend((i.saturating_sub(1)..(i + 2).min(n)).map(|j| j as u32));
            row_ptr.push(cols.len());
        }
        BlockPattern::new(n, n, row_ptr, cols).unwrap()
    }

    fn rigid(n: usize) -> NearNullSpace {
        NearNullSpace::from_row_major(3 * n, 6, vec![1.0; 18 * n]).unwrap()
    }

    #[test]
    fn auto_factors_a_small_tangent_and_says_with_what_estimate() {
        let pattern = chain(10);
        let params = LinearSolverParams::default();
        for (symmetric, krylov) in [(true, Krylov::PreOnly), (false, Krylov::Gmres)] {
            let operator = OperatorKind::Serial {
                pattern: &|| &pattern,
            };
            let (solver, choice) =
                LinearSolver::choose(&params, rigid(10), operator, symmetric).unwrap();
            assert_eq!(solver.preconditioner(), PreconditionerKind::Direct);
            assert!(!solver.is_iterative());
            assert_eq!((choice.krylov, choice.place), (krylov, Place::Host));
            assert_eq!(choice.amg, None);
            let ChoiceReason::AutoFactorSmall(e) = choice.reason else {
                panic!("{:?}", choice.reason);
            };
            assert!(e.bytes > 0.0 && e.bytes <= AUTO_DIRECT_MAX_BYTES && e.flops > 0.0);
        }
    }

    #[test]
    fn configured_methods_are_taken_as_named() {
        let pattern = chain(4);
        let params = LinearSolverParams {
            method: LinearSolverMethod::CgAmg,
            ..LinearSolverParams::default()
        };
        let operator = OperatorKind::Serial {
            pattern: &|| &pattern,
        };
        let (solver, choice) = LinearSolver::choose(&params, rigid(4), operator, true).unwrap();
        assert!(solver.uses_amg() && solver.device().is_none());
        assert_eq!(choice.reason, ChoiceReason::Configured);
        assert_eq!(choice.krylov, Krylov::Cg);
        assert_eq!(choice.amg.map(|a| a.coarse_eq_limit), Some(500));
        let direct_on_gpu = LinearSolverParams {
            method: LinearSolverMethod::Direct,
            device: DeviceChoice::Cuda,
            ..LinearSolverParams::default()
        };
        let operator = OperatorKind::Serial {
            pattern: &|| &pattern,
        };
        let e = LinearSolver::choose(&direct_on_gpu, rigid(4), operator, true)
            .err()
            .unwrap();
        assert!(e.to_string().starts_with("device: `cuda` runs CG"), "{e}");
    }

    /// What a rank cannot run is refused at its key, never replaced.
    #[test]
    fn ranks_refuse_the_direct_solver_scalar_storage_and_mixed_precision() {
        let params = |method, storage, precision| LinearSolverParams {
            method,
            amg: amg::AmgParams {
                storage,
                precision,
                ..amg::AmgParams::default()
            },
            ..LinearSolverParams::default()
        };
        let (blocked, scalar) = (Storage::Blocked, Storage::Scalar);
        let (double, mixed) = (amg::Precision::Double, amg::Precision::Mixed);
        for (p, kind, refused) in [
            (
                params(LinearSolverMethod::Direct, blocked, double),
                PreconditionerKind::Direct,
                Some((
                    "linear_solver.method",
                    "direct is not available on 3 MPI ranks (valid there: auto, cg_amg, cg_jacobi)",
                )),
            ),
            (
                params(LinearSolverMethod::CgAmg, scalar, double),
                PreconditionerKind::Amg,
                Some((
                    "linear_solver.amg.storage",
                    "scalar is not available on 3 MPI ranks (valid there: blocked)",
                )),
            ),
            (
                params(LinearSolverMethod::Auto, blocked, mixed),
                PreconditionerKind::Amg,
                Some((
                    "linear_solver.amg.precision",
                    "mixed is not available on 3 MPI ranks (valid there: double)",
                )),
            ),
            (
                params(LinearSolverMethod::CgJacobi, scalar, mixed),
                PreconditionerKind::Jacobi,
                None,
            ),
        ] {
            let found = check_on_ranks(&p, kind, 3)
                .err()
                .map(|e| (e.key(), e.to_string()));
            assert_eq!(
                found,
                refused.map(|(key, text)| (key, text.to_string())),
                "{kind:?}"
            );
        }
    }
}
