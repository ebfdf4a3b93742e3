//! The preconditioner axis of the linear solver: smoothed-aggregation AMG, point-block Jacobi or
//! the direct factor, with the state each keeps between solves. The state is generic over the
//! AMG hierarchy of the operator it preconditions (`amg::Hierarchy` on one process,
//! `amg::dist_cycle::DistHierarchy` on a rank); this module sets it up on the tangent of one process, and
//! `ranks.rs` on a rank's owned rows.

use std::sync::Arc;

use amg::{
    AmgParams, Hierarchy, HierarchyReport, NearNullSpace, PointBlockJacobi, Preconditioner,
    RenewalReport,
};
use linalg::direct::{DirectSolver, DirectSymbolic};
use linalg::{Bsr, Vector};

use super::report::SetupKind;
use crate::error::{Error, Result};

/// Largest envelope factor the direct solver may allocate: it is meant for small problems, and a
/// larger request is an error naming the alternative rather than an allocation failure.
const DIRECT_MAX_FACTOR_BYTES: f64 = 4e9;

/// Which preconditioner, without its state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreconditionerKind {
    /// One V-cycle of smoothed-aggregation AMG.
    Amg,
    /// Point-block (3x3) Jacobi.
    Jacobi,
    /// Envelope LDL^T in reverse Cuthill-McKee order (one process; host only). For a tangent
    /// that is not symmetric, the factor of its permuted lower triangle, read as a symmetric
    /// matrix.
    Direct,
}

/// A preconditioner with the state it reuses across solves; `H`: the AMG hierarchy of the
/// operator kind.
pub(crate) enum Preconditioning<H> {
    Jacobi,
    /// The ordering and profile depend on the pattern only: computed once (or given by
    /// `LinearSolver::choose`, which estimated the factor with them).
    Direct {
        symbolic: Option<Arc<DirectSymbolic>>,
    },
    Amg(AmgState<H>),
}

/// The AMG preconditioner's options, near-null space and hierarchy. The hierarchy is built at
/// the first solve and updated (per `amg.reuse`) for every later one; a new near-null space
/// renews it at the next solve.
pub(crate) struct AmgState<H> {
    pub(crate) params: AmgParams,
    pub(crate) near_null: NearNullSpace,
    /// `near_null` changed since the hierarchy was built: the next solve renews it.
    pub(crate) near_null_changed: bool,
    /// `near_null` is the one the solver was chosen with (none set since).
    pub(crate) near_null_as_chosen: bool,
    pub(crate) hierarchy: Option<H>,
}

impl<H> Preconditioning<H> {
    /// The state of a `kind` before its first set-up; `symbolic`: a direct factor's ordering
    /// already computed for the tangent's pattern.
    pub(crate) fn new(
        kind: PreconditionerKind,
        amg: AmgParams,
        near_null: NearNullSpace,
        symbolic: Option<Arc<DirectSymbolic>>,
    ) -> Self {
        match kind {
            PreconditionerKind::Jacobi => Preconditioning::Jacobi,
            PreconditionerKind::Direct => Preconditioning::Direct { symbolic },
            PreconditionerKind::Amg => Preconditioning::Amg(AmgState {
                params: amg,
                near_null,
                near_null_changed: false,
                near_null_as_chosen: true,
                hierarchy: None,
            }),
        }
    }

    pub(crate) fn kind(&self) -> PreconditionerKind {
        match self {
            Preconditioning::Jacobi => PreconditionerKind::Jacobi,
            Preconditioning::Direct { .. } => PreconditionerKind::Direct,
            Preconditioning::Amg(_) => PreconditionerKind::Amg,
        }
    }

    /// Replaces the AMG's near-null space (no effect on other preconditioners); the next solve
    /// renews the hierarchy.
    pub(crate) fn set_near_null_space(&mut self, modes: NearNullSpace) {
        if let Preconditioning::Amg(state) = self {
            state.near_null = modes;
            state.near_null_changed = true;
            state.near_null_as_chosen = false;
        }
    }

    /// Whether the next set-up is the AMG's first cold one with the near-null space it was
    /// chosen with (no hierarchy, none set since).
    pub(crate) fn awaits_first_setup(&self) -> bool {
        matches!(self, Preconditioning::Amg(state)
            if state.hierarchy.is_none() && state.near_null_as_chosen)
    }
}

impl<H> AmgState<H> {
    /// The one AMG set-up step of every operator kind (one process or a rank's rows): the
    /// hierarchy renewed where the near-null space changed since it was built (`renew`: a cold
    /// set-up's values), updated for new values otherwise (`update`, as `amg.reuse` says),
    /// built cold at the first call (`cold`). A failed renewal or update leaves no hierarchy
    /// behind, so that the next solve sets up afresh.
    pub(crate) fn prepare(
        &mut self,
        renew: impl FnOnce(&mut H, &NearNullSpace) -> Result<RenewalReport>,
        update: impl FnOnce(&mut H) -> Result<()>,
        cold: impl FnOnce(&NearNullSpace, &AmgParams) -> Result<H>,
    ) -> Result<(SetupKind, &mut H)> {
        let (kind, h) = match self.hierarchy.take() {
            Some(mut h) if self.near_null_changed => {
                let renewal = renew(&mut h, &self.near_null)?;
                self.near_null_changed = false;
                let kind = if renewal.plans_reused > 0 {
                    SetupKind::AmgRenewed
                } else {
                    SetupKind::AmgCold
                };
                (kind, h)
            }
            Some(mut h) => {
                update(&mut h)?;
                (SetupKind::AmgHot, h)
            }
            None => {
                self.near_null_changed = false;
                (SetupKind::AmgCold, cold(&self.near_null, &self.params)?)
            }
        };
        Ok((kind, self.hierarchy.insert(h)))
    }
}

/// A preconditioner set up on the tangent of one process.
pub(crate) enum SerialReady<'a> {
    Jacobi(PointBlockJacobi),
    Factor(DirectSolver),
    /// The hierarchy, whose V-cycle runs on the tangent (`Hierarchy::with_operator`).
    Amg(&'a Hierarchy),
}

/// What a set-up was, and the hierarchy's report after a cold set-up or a renewal.
pub(crate) struct SetupDone {
    pub(crate) kind: SetupKind,
    pub(crate) hierarchy: Option<HierarchyReport>,
}

impl Preconditioning<Box<Hierarchy>> {
    /// Sets the preconditioner up for the tangent `k` of one process (host or GPU): Jacobi's
    /// inverse blocks, the direct factor (its ordering once per pattern; an error above
    /// [`DIRECT_MAX_FACTOR_BYTES`]), or the AMG hierarchy: built cold at the first call,
    /// renewed after a new near-null space (`Hierarchy::set_near_null_space`), updated
    /// otherwise. A failed update leaves no hierarchy behind, so the next solve sets up afresh.
    pub(crate) fn set_up_serial(&mut self, k: &Bsr) -> Result<(SerialReady<'_>, SetupDone)> {
        let done = |kind| SetupDone {
            kind,
            hierarchy: None,
        };
        match self {
            Preconditioning::Jacobi => {
                let jacobi = PointBlockJacobi::new(k).map_err(|error| Error::Preconditioner {
                    stage: "point-block Jacobi set-up",
                    error,
                })?;
                Ok((SerialReady::Jacobi(jacobi), done(SetupKind::Jacobi)))
            }
            Preconditioning::Direct { symbolic } => {
                let symbolic = match symbolic {
                    Some(s) if s.pattern() == k.pattern().as_ref() => s.clone(),
                    slot => {
                        let s = DirectSymbolic::new(k.pattern())?;
                        let bytes = (s.envelope_size(k.block_rows()) * size_of::<f64>()) as f64;
                        if bytes > DIRECT_MAX_FACTOR_BYTES {
                            return Err(Error::FactorTooLarge {
                                bytes,
                                limit: DIRECT_MAX_FACTOR_BYTES,
                                unknowns: k.n_rows(),
                            });
                        }
                        slot.insert(Arc::new(s)).clone()
                    }
                };
                let factor = DirectSolver::factor(&symbolic, k)?;
                Ok((SerialReady::Factor(factor), done(SetupKind::Factorization)))
            }
            Preconditioning::Amg(state) => {
                let (kind, h) = state.prepare(
                    |h, near_null| {
                        h.set_near_null_space(k, near_null)
                            .map_err(|error| Error::Preconditioner {
                                stage: "AMG renewal for a new near-null space",
                                error,
                            })
                    },
                    |h| {
                        h.update(k)
                            .map(drop)
                            .map_err(|error| Error::Preconditioner {
                                stage: "AMG update",
                                error,
                            })
                    },
                    |near_null, params| {
                        let h =
                            Hierarchy::setup_external(k, near_null, params).map_err(|error| {
                                Error::Preconditioner {
                                    stage: "AMG set-up",
                                    error,
                                }
                            })?;
                        Ok(Box::new(h))
                    },
                )?;
                let report = matches!(kind, SetupKind::AmgCold | SetupKind::AmgRenewed)
                    .then(|| h.report().clone());
                Ok((
                    SerialReady::Amg(h),
                    SetupDone {
                        kind,
                        hierarchy: report,
                    },
                ))
            }
        }
    }
}

/// The direct factor as a preconditioner (`z = (L D L^T)^{-1} r`).
pub(crate) struct FactorPreconditioner<'a>(pub(crate) &'a DirectSolver);

impl Preconditioner for FactorPreconditioner<'_> {
    fn apply(&self, r: &Vector, z: &mut Vector) -> Result<(), amg::AmgError> {
        Ok(self.0.solve(r, z)?)
    }
}
