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

#[cfg(test)]
mod tests {
    use super::*;
    use solve::linear_solver::PreconditionerKind as Pc;

    fn choice(krylov: Krylov, preconditioner: Pc, reason: ChoiceReason, place: Place) -> Choice {
        Choice {
            krylov,
            preconditioner,
            symmetric: krylov != Krylov::Gmres,
            reason,
            place,
            amg: Some(AmgSummary {
                smoother: amg::SmootherKind::Chebyshev,
                coarse_eq_limit: 500,
                process_eq_limit: 50,
            }),
        }
    }

    /// Each header text of a process, from its typed choice.
    #[test]
    fn one_process_texts() {
        let gpu = || Place::Gpu("GPU 0".into());
        let estimate = FactorEstimate {
            bytes: 12.3e6,
            flops: 4.56e8,
        };
        let large = ChoiceReason::AutoFactorLarge {
            estimate: FactorEstimate {
                bytes: 300e6,
                flops: 1e10,
            },
            max_bytes: 256e6,
            max_flops: 2.5e9,
        };
        let not_symmetric = "the follower pressure's tangent is not symmetric";
        let gmres_direct =
            "GMRES preconditioned by the direct LDL^T factor of the tangent's lower triangle";
        for (c, text) in [
            (
                choice(Krylov::Cg, Pc::Amg, ChoiceReason::Configured, Place::Host),
                "CG with smoothed-aggregation AMG".to_string(),
            ),
            (
                choice(Krylov::Gmres, Pc::Jacobi, ChoiceReason::Configured, gpu()),
                format!("GMRES with point-block Jacobi (GMRES: {not_symmetric}) on GPU 0"),
            ),
            (
                choice(Krylov::PreOnly, Pc::Direct, ChoiceReason::Configured, Place::Host),
                "direct (envelope LDL^T)".into(),
            ),
            (
                choice(Krylov::Gmres, Pc::Direct, ChoiceReason::Configured, Place::Host),
                format!("{gmres_direct} ({not_symmetric})"),
            ),
            (
                choice(Krylov::Cg, Pc::Amg, ChoiceReason::AutoOnGpu, gpu()),
                "CG with smoothed-aggregation AMG (auto: the direct solver is host-only) on GPU 0"
                    .into(),
            ),
            (
                choice(
                    Krylov::PreOnly,
                    Pc::Direct,
                    ChoiceReason::AutoFactorSmall(estimate),
                    Place::Host,
                ),
                "direct (envelope LDL^T; direct factor estimate 12 MB, 4.6e8 flops)".into(),
            ),
            (
                choice(
                    Krylov::Gmres,
                    Pc::Direct,
                    ChoiceReason::AutoFactorSmall(estimate),
                    Place::Host,
                ),
                format!("{gmres_direct} ({not_symmetric}; direct factor estimate 12 MB, 4.6e8 flops)"),
            ),
            (
                choice(Krylov::Cg, Pc::Amg, large, gpu()),
                "CG with smoothed-aggregation AMG on GPU 0 (direct factor estimate 300 MB, 1.0e10 flops: above 256 MB or 2.5e9 flops)".into(),
            ),
        ] {
            assert_eq!(render(&c), text);
        }
    }

    /// Each header text of a rank, from its typed choice.
    #[test]
    fn rank_texts() {
        let jacobi = choice(
            Krylov::Cg,
            Pc::Jacobi,
            ChoiceReason::Configured,
            Place::Ranks(2),
        );
        assert_eq!(
            render(&jacobi),
            "CG with point-block Jacobi, distributed over 2 MPI ranks"
        );
        let auto = choice(
            Krylov::Gmres,
            Pc::Amg,
            ChoiceReason::AutoOnRanks,
            Place::Ranks(4),
        );
        assert_eq!(
            render(&auto),
            "GMRES (the follower pressure's tangent is not symmetric) with the distributed smoothed-aggregation AMG (Chebyshev smoother, coarse_eq_limit 500, process_eq_limit 50) over 4 MPI ranks (method auto: the direct solver is not available on several ranks)"
        );
    }
}
