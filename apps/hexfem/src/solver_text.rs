//! The run header's `linear solver` text: the typed choice of
//! `solve::linear_solver::LinearSolver::choose` in words, on one process or on ranks.

use solve::linear_solver::{
    AmgSummary, Choice, ChoiceReason, FactorEstimate, Krylov, Place, PreconditionerKind,
};

/// What GMRES replacing CG says.
const NOT_SYMMETRIC: &str = "the follower pressure's tangent is not symmetric";

/// `choice` as the header says it (`hexfem run`, `hexfem check`).
pub fn render(choice: &Choice) -> String {
    match &choice.place {
        Place::Ranks(ranks) => on_ranks(choice, *ranks),
        Place::Host => on_one_process(choice, ""),
        Place::Gpu(name) => on_one_process(choice, &format!(" on {name}")),
    }
}

/// One process; `place`: " on <GPU>" or empty.
fn on_one_process(choice: &Choice, place: &str) -> String {
    let krylov = choice.krylov.name();
    // GMRES for a configured iterative method says why
    let gmres = if choice.symmetric {
        String::new()
    } else {
        format!(" (GMRES: {NOT_SYMMETRIC})")
    };
    let gmres_direct =
        "GMRES preconditioned by the direct LDL^T factor of the tangent's lower triangle";
    match (&choice.reason, choice.preconditioner) {
        (ChoiceReason::AutoFactorSmall(e), _) if choice.symmetric => {
            format!("direct (envelope LDL^T; {})", estimate(e))
        }
        (ChoiceReason::AutoFactorSmall(e), _) => {
            format!("{gmres_direct} ({NOT_SYMMETRIC}; {})", estimate(e))
        }
        (
            ChoiceReason::AutoFactorLarge {
                estimate: e,
                max_bytes,
                max_flops,
            },
            _,
        ) => format!(
            "{krylov} with smoothed-aggregation AMG{place} ({}: above {:.0} MB or {:.1e} flops)",
            estimate(e),
            max_bytes / 1e6,
            max_flops
        ),
        (ChoiceReason::AutoOnGpu, _) => format!(
            "{krylov} with smoothed-aggregation AMG (auto: the direct solver is host-only){place}"
        ),
        (_, PreconditionerKind::Direct) if choice.symmetric => "direct (envelope LDL^T)".into(),
        (_, PreconditionerKind::Direct) => format!("{gmres_direct} ({NOT_SYMMETRIC})"),
        (_, PreconditionerKind::Jacobi) => {
            format!("{krylov} with point-block Jacobi{gmres}{place}")
        }
        (_, PreconditionerKind::Amg) => {
            format!("{krylov} with smoothed-aggregation AMG{gmres}{place}")
        }
    }
}

/// This rank's share of `ranks` MPI ranks.
fn on_ranks(choice: &Choice, ranks: usize) -> String {
    let krylov = match choice.krylov {
        Krylov::Gmres => format!("GMRES ({NOT_SYMMETRIC})"),
        other => other.name().to_string(),
    };
    let amg = |amg: &Option<AmgSummary>| match amg {
        Some(a) => format!(
            "{} smoother, coarse_eq_limit {}, process_eq_limit {}",
            match a.smoother {
                amg::SmootherKind::Chebyshev => "Chebyshev",
                amg::SmootherKind::Jacobi => "Jacobi",
            },
            a.coarse_eq_limit,
            a.process_eq_limit
        ),
        None => String::new(),
    };
    let auto = match choice.reason {
        ChoiceReason::AutoOnRanks => {
            " (method auto: the direct solver is not available on several ranks)"
        }
        _ => "",
    };
    match choice.preconditioner {
        PreconditionerKind::Jacobi => {
            format!("{krylov} with point-block Jacobi, distributed over {ranks} MPI ranks{auto}")
        }
        _ => format!(
            "{krylov} with the distributed smoothed-aggregation AMG ({}) over {ranks} MPI ranks{auto}",
            amg(&choice.amg)
        ),
    }
}

/// The direct factor's estimate in words.
fn estimate(e: &FactorEstimate) -> String {
    format!(
        "direct factor estimate {:.0} MB, {:.1e} flops",
        e.bytes / 1e6,
        e.flops
    )
}
