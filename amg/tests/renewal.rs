//! Renewal for a new near-null space ([`Hierarchy::set_near_null_space`]) on the ex56 Q1 operator
//! (see `common`): after a cold set-up with modes `M1` on `A1`, a renewal with `M2` on `A2` equals
//! a cold set-up with `M2` on `A2` bit for bit, and so does a hot update after it; the plans are
//! kept where the aggregates came out the same and rebuilt where they did not.

mod common;

use amg::{AmgParams, Hierarchy, Precision, Renewal, Reuse, SmootherKind, Storage};
use common::renewal::{assert_same_hierarchy, doubled, next_modes, shifted, weakened};
use linalg::Vector;

fn params(smoother: SmootherKind, reuse: Reuse, precision: Precision) -> AmgParams {
    AmgParams {
        smoother,
        reuse,
        precision,
        // several levels even on the small meshes
        coarse_eq_limit: 50,
        // these tests are about recomputing renewals (keep_aggregates: the tests below)
        renewal: Renewal::Recompute,
        ..Default::default()
    }
}

#[test]
fn renewal_equals_a_cold_setup_and_keeps_every_plan() {
    for m in [9, 13, 17] {
        let p = common::elasticity(m, 1e-3);
        let (a2, m2) = (doubled(&p.a), next_modes(&p.near_null, m as u64));
        for smoother in [SmootherKind::Jacobi, SmootherKind::Chebyshev] {
            for reuse in [Reuse::Interpolation, Reuse::None, Reuse::Full] {
                for precision in [Precision::Double, Precision::Mixed] {
                    let what = format!("m {m} {smoother:?} {reuse:?} {precision:?}");
                    let params = params(smoother, reuse, precision);
                    let mut h = Hierarchy::setup_external(&p.a, &p.near_null, &params).unwrap();
                    let report = h.set_near_null_space(&a2, &m2).unwrap();
                    let cold = Hierarchy::setup_external(&a2, &m2, &params).unwrap();
                    assert!(cold.n_levels() >= 3, "{what}: {} levels", cold.n_levels());
                    assert_same_hierarchy(&h, &cold, &a2, &what);
                    // the tangent's values moved a little: the same aggregates, every plan kept
                    assert_eq!(report.plans_reused, cold.n_levels() - 1, "{what}");
                    assert_eq!(report.plans_built, 0, "{what}");
                    assert_eq!(h.report().plans_reused, report.plans_reused);
                    // fresh prolongator versions, after the old ones
                    assert!(h.p_versions()[0] > cold.n_levels() as u64 - 1, "{what}");
                }
            }
        }
    }
}

#[test]
fn hot_updates_after_a_renewal_equal_those_after_a_cold_setup() {
    let p = common::elasticity(13, 1e-3);
    let (a2, m2) = (doubled(&p.a), next_modes(&p.near_null, 3));
    let a3 = shifted(&a2, 2e-3);
    for precision in [Precision::Double, Precision::Mixed] {
        let params = params(SmootherKind::Chebyshev, Reuse::Interpolation, precision);
        // an owning hierarchy: the renewal copies the new operator too
        let mut h = Hierarchy::setup(&p.a, &p.near_null, &params).unwrap();
        h.set_near_null_space(&a2, &m2).unwrap();
        let mut cold = Hierarchy::setup(&a2, &m2, &params).unwrap();
        assert_same_hierarchy(&h, &cold, &a2, "owning, renewed");
        h.update(&a3).unwrap();
        cold.update(&a3).unwrap();
        assert_same_hierarchy(&h, &cold, &a3, "owning, hot update after the renewal");
    }
}

#[test]
fn new_values_keep_the_aggregates_and_changed_edges_rebuild_the_plans() {
    let p = common::elasticity(13, 1e-3);
    let m2 = next_modes(&p.near_null, 5);
    let params = params(
        SmootherKind::Chebyshev,
        Reuse::Interpolation,
        Precision::Double,
    );
    // threshold 0: every nonzero block is an edge and a vertex joins the aggregate it has the
    // most edges to, so a 1 % change of the diagonal (the next load step's tangent) leaves every
    // level's aggregates as they were: every plan kept, a cold set-up's values
    let a2 = shifted(&p.a, 1e-3);
    let mut h = Hierarchy::setup_external(&p.a, &p.near_null, &params).unwrap();
    let before: Vec<_> = (0..h.n_levels() - 1)
        .map(|l| h.aggregates(l).unwrap().clone())
        .collect();
    let report = h.set_near_null_space(&a2, &m2).unwrap();
    let cold = Hierarchy::setup_external(&a2, &m2, &params).unwrap();
    for (l, b) in before.iter().enumerate() {
        assert_eq!(
            cold.aggregates(l),
            Some(b),
            "level {l}: the aggregates must stay"
        );
    }
    assert_eq!(report.plans_reused, cold.n_levels() - 1, "{report:?}");
    assert_eq!(report.plans_built, 0, "{report:?}");
    assert_same_hierarchy(&h, &cold, &a2, "threshold 0, new values");
    // a positive threshold and couplings weakened below it: other edges, other aggregates, the
    // plans rebuilt, still a cold set-up's values
    let params = AmgParams {
        strength_threshold: 0.08,
        ..params
    };
    let a2 = weakened(&p.a, p.a.pattern().n_block_rows() / 3);
    let mut h = Hierarchy::setup_external(&p.a, &p.near_null, &params).unwrap();
    let before = h.aggregates(0).unwrap().clone();
    let report = h.set_near_null_space(&a2, &m2).unwrap();
    let cold = Hierarchy::setup_external(&a2, &m2, &params).unwrap();
    assert_ne!(
        cold.aggregates(0),
        Some(&before),
        "the aggregates must change"
    );
    assert!(report.plans_built >= 1, "{report:?}");
    assert_same_hierarchy(&h, &cold, &a2, "threshold 0.08, changed edges");
    // a positive threshold where the finest graph is unchanged: the finest plans are kept (the
    // coarse graphs are those of P^T A P, whose P the new modes changed, and here they differ)
    let a2 = doubled(&p.a);
    let mut h = Hierarchy::setup_external(&p.a, &p.near_null, &params).unwrap();
    let report = h.set_near_null_space(&a2, &m2).unwrap();
    let cold = Hierarchy::setup_external(&a2, &m2, &params).unwrap();
    assert!(report.plans_reused >= 1, "{report:?}");
    assert_same_hierarchy(&h, &cold, &a2, "threshold 0.08, same finest graph");
}

#[test]
fn scalar_storage_renews_to_a_cold_setup() {
    let p = common::elasticity(9, 1e-3);
    let (a2, m2) = (doubled(&p.a), next_modes(&p.near_null, 9));
    let params = AmgParams {
        storage: Storage::Scalar,
        ..params(
            SmootherKind::Chebyshev,
            Reuse::Interpolation,
            Precision::Double,
        )
    };
    let mut h = Hierarchy::setup_external(&p.a, &p.near_null, &params).unwrap();
    let report = h.set_near_null_space(&a2, &m2).unwrap();
    let cold = Hierarchy::setup_external(&a2, &m2, &params).unwrap();
    // the Galerkin plans are on the scalar patterns: rebuilt (A P0's blocked plan is kept)
    assert_eq!(report.plans_reused, 0);
    assert_same_hierarchy(&h, &cold, &a2, "scalar storage");
}

#[test]
fn a_near_null_space_of_the_wrong_size_is_an_error() {
    let p = common::elasticity(9, 1e-3);
    let mut h = Hierarchy::setup_external(&p.a, &p.near_null, &AmgParams::default()).unwrap();
    let q = common::elasticity(7, 1e-3);
    assert!(h.set_near_null_space(&p.a, &q.near_null).is_err());
}

/// `renewal: keep_aggregates` where a recomputing renewal finds the same aggregates on every
/// level (doubled values, new modes): the two renewals give the same hierarchy bit for bit, and
/// the kept one spends nothing on strength graphs or aggregation.
#[test]
fn keeping_the_aggregates_equals_recomputing_them_where_they_come_out_the_same() {
    for m in [9, 13] {
        let p = common::elasticity(m, 1e-3);
        let (a2, m2) = (doubled(&p.a), next_modes(&p.near_null, m as u64));
        for precision in [Precision::Double, Precision::Mixed] {
            let what = format!("m {m} {precision:?}");
            let recompute = params(SmootherKind::Chebyshev, Reuse::Interpolation, precision);
            let keep = AmgParams {
                renewal: Renewal::KeepAggregates,
                ..recompute.clone()
            };
            let mut h = Hierarchy::setup_external(&p.a, &p.near_null, &keep).unwrap();
            let report = h.set_near_null_space(&a2, &m2).unwrap();
            let mut reference = Hierarchy::setup_external(&p.a, &p.near_null, &recompute).unwrap();
            reference.set_near_null_space(&a2, &m2).unwrap();
            assert_same_hierarchy(&h, &reference, &a2, &what);
            assert_eq!(report.plans_reused, h.n_levels() - 1, "{what}");
            assert_eq!(report.plans_built, 0, "{what}");
            assert_eq!(report.timings.graph_s, 0.0, "{what}");
            assert_eq!(report.timings.aggregation_s, 0.0, "{what}");
        }
    }
}

/// Where the new values would move the aggregates (couplings weakened below a positive
/// threshold, see `new_values_keep_the_aggregates_and_changed_edges_rebuild_the_plans`),
/// `keep_aggregates` keeps the old ones on every level with every plan, and CG converges in
/// about the iterations of a cold set-up (the tentative prolongators reproduce the new modes
/// whatever the aggregates: `tentative`'s tests).
#[test]
fn kept_aggregates_survive_new_values_and_still_precondition_well() {
    let p = common::elasticity(13, 1e-3);
    let m2 = next_modes(&p.near_null, 5);
    let a2 = weakened(&p.a, p.a.pattern().n_block_rows() / 3);
    let keep = AmgParams {
        renewal: Renewal::KeepAggregates,
        strength_threshold: 0.08,
        ..params(
            SmootherKind::Chebyshev,
            Reuse::Interpolation,
            Precision::Double,
        )
    };
    let mut h = Hierarchy::setup_external(&p.a, &p.near_null, &keep).unwrap();
    let before: Vec<_> = (0..h.n_levels() - 1)
        .map(|l| h.aggregates(l).unwrap().clone())
        .collect();
    let report = h.set_near_null_space(&a2, &m2).unwrap();
    let cold = Hierarchy::setup_external(&a2, &m2, &keep).unwrap();
    assert_ne!(
        cold.aggregates(0),
        Some(&before[0]),
        "the new values move aggregates"
    );
    for (l, kept) in before.iter().enumerate() {
        assert_eq!(h.aggregates(l), Some(kept), "level {l}");
    }
    assert_eq!(report.plans_reused, h.n_levels() - 1);
    // the preconditioner's quality: CG iterations within two of the cold set-up's
    let b = Vector::from_vec(common::renewal::pseudo_random(a2.n_rows(), 7));
    let cg = amg::CgParams {
        rtol: 1e-8,
        ..Default::default()
    };
    let solve = |h: &Hierarchy| {
        let mut x = Vector::zeros(a2.n_rows());
        amg::cg(&a2, &b, &mut x, &h.with_operator(&a2).unwrap(), &cg).unwrap()
    };
    let (kept, fresh) = (solve(&h), solve(&cold));
    assert!(kept.converged && fresh.converged, "{kept:?} {fresh:?}");
    assert!(
        kept.iterations <= fresh.iterations + 2,
        "kept {} vs cold {}",
        kept.iterations,
        fresh.iterations
    );
}
