//! The Krylov axis of the linear solver: CG, restarted GMRES, or the preconditioner alone, on
//! any operator the Krylov methods of `amg` accept (a `Bsr` on one process, a rank's owned rows
//! of a `DistBsr` on several: every reduction then goes over the ranks and the outcome is the
//! same on each).

use amg::smoother::SmoothingOperator;
use amg::{CgOutcome, CgParams, CgStopReason, GmresParams, LinearOperator, Preconditioner};
use linalg::Vector;

use crate::error::{Error, Result};

/// Krylov vectors kept by GMRES before a restart.
const GMRES_RESTART: usize = 60;

/// The Krylov method: CG for symmetric tangents, GMRES (restarted, right preconditioned, the
/// same preconditioner) where the tangent is not symmetric (follower pressure), or none where the
/// preconditioner is an exact solve (the direct factor of a symmetric tangent: PETSc's
/// `preonly`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Krylov {
    PreOnly,
    Cg,
    Gmres,
}

/// What a Krylov solve did.
pub(crate) struct KrylovOutcome {
    pub(crate) iterations: usize,
    /// False where an iterative method stopped at its iteration limit.
    pub(crate) converged: bool,
    /// Where CG broke down and GMRES took over, what happened (for people).
    pub(crate) fallback: Option<String>,
    /// CG stopped at a direction of non-positive curvature of the tangent or of the
    /// preconditioner built from it (an indefinite tangent).
    pub(crate) negative_curvature: bool,
}

impl Krylov {
    /// The iterative method for a tangent that is (or is not) symmetric.
    pub fn for_tangent(symmetric: bool) -> Self {
        if symmetric {
            Krylov::Cg
        } else {
            Krylov::Gmres
        }
    }

    /// The method's name ("none" for the preconditioner alone).
    pub fn name(self) -> &'static str {
        match self {
            Krylov::PreOnly => "none",
            Krylov::Cg => "CG",
            Krylov::Gmres => "GMRES",
        }
    }

    /// Solves `a x = b` from `x = 0` (`x` zero on entry) with the preconditioner `pc` to the
    /// tolerances of `params`. `PreOnly` applies `pc` once. A CG breakdown (an indefinite
    /// operator or preconditioner, a NaN) is retried from zero by GMRES with the same
    /// preconditioner ([`gmres_after_breakdown`]); a NaN in GMRES is an error; an exhausted
    /// iteration limit is reported, not an error. Collective where `a` is a rank's rows.
    pub(crate) fn solve<A: LinearOperator + SmoothingOperator>(
        self,
        a: &A,
        b: &Vector,
        x: &mut Vector,
        pc: &dyn Preconditioner,
        params: &CgParams,
    ) -> Result<KrylovOutcome> {
        match self {
            Krylov::PreOnly => {
                pc.apply(b, x)?;
                Ok(KrylovOutcome {
                    iterations: 1,
                    converged: true,
                    fallback: None,
                    negative_curvature: false,
                })
            }
            Krylov::Cg => {
                let o = amg::cg_operator(a, b, x, pc, params).map_err(|error| Error::Krylov {
                    method: "CG",
                    error,
                })?;
                let negative_curvature = matches!(
                    o.reason,
                    CgStopReason::IndefiniteOperator | CgStopReason::IndefinitePreconditioner
                );
                let fallback = gmres_after_breakdown(&o, x, |x| {
                    amg::gmres_operator(a, b, x, pc, &gmres_params(params))
                })?;
                Ok(match fallback {
                    Some(f) => KrylovOutcome {
                        iterations: o.iterations + f.iterations,
                        converged: f.converged,
                        fallback: Some(f.note),
                        negative_curvature,
                    },
                    None => KrylovOutcome {
                        iterations: o.iterations,
                        converged: o.converged,
                        fallback: None,
                        negative_curvature,
                    },
                })
            }
            Krylov::Gmres => {
                let g =
                    amg::gmres_operator(a, b, x, pc, &gmres_params(params)).map_err(|error| {
                        Error::Krylov {
                            method: "GMRES",
                            error,
                        }
                    })?;
                if g.reason == amg::GmresStopReason::NonFinite {
                    return Err(Error::GmresNotFinite {
                        iterations: g.iterations,
                    });
                }
                Ok(KrylovOutcome {
                    iterations: g.iterations,
                    converged: g.converged,
                    fallback: None,
                    negative_curvature: false,
                })
            }
        }
    }
}

/// GMRES's parameters for CG's tolerances and iteration limit.
fn gmres_params(params: &CgParams) -> GmresParams {
    GmresParams {
        rtol: params.rtol,
        atol: params.atol,
        max_iterations: params.max_iterations,
        restart: GMRES_RESTART,
    }
}

/// What the GMRES fallback did after a CG breakdown.
struct Fallback {
    iterations: usize,
    converged: bool,
    note: String,
}

/// After a CG breakdown (an indefinite operator or preconditioner, or a NaN), solves again from
/// zero by GMRES (`solve`, from `x = 0`) with the same preconditioner and tolerance. `None`
/// where CG did not break down. GMRES ending in a NaN is an error naming both attempts.
fn gmres_after_breakdown(
    outcome: &CgOutcome,
    x: &mut Vector,
    solve: impl FnOnce(&mut Vector) -> Result<amg::GmresOutcome, amg::AmgError>,
) -> Result<Option<Fallback>> {
    let why = match outcome.reason {
        CgStopReason::IndefiniteOperator => "the tangent is not positive definite",
        CgStopReason::IndefinitePreconditioner => "the preconditioner is not positive definite",
        CgStopReason::NonFinite => "a NaN or infinity appeared",
        _ => return Ok(None),
    };
    x.fill(0.0)?;
    let g = solve(x).map_err(|error| Error::Krylov {
        method: "GMRES",
        error,
    })?;
    let cg_part = format!("CG stopped after {} iterations ({why})", outcome.iterations);
    if g.reason == amg::GmresStopReason::NonFinite {
        return Err(Error::FallbackNotFinite {
            cg: cg_part,
            iterations: g.iterations,
        });
    }
    let result = if g.converged {
        format!(
            "GMRES with the same preconditioner converged in {} iterations",
            g.iterations
        )
    } else {
        format!(
            "GMRES with the same preconditioner reached a relative residual of {:.1e} in {} iterations",
            g.final_residual_norm / g.initial_residual_norm.max(f64::MIN_POSITIVE),
            g.iterations
        )
    };
    Ok(Some(Fallback {
        iterations: g.iterations,
        converged: g.converged,
        note: format!("{cg_part}; {result}"),
    }))
}
