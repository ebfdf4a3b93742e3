//! Hierarchy-level tests on the ex56 Q1 elasticity operator (see `common`). The benchmark sequence
//! (cold set-up, solve, scaled operator, hot set-up, solve) is `hexfem bench gamg`'s, tested there.

mod common;

use amg::aggregation::UNAGGREGATED;
use amg::{
    cg, tentative_prolongator, AmgParams, CgParams, Hierarchy, NearNullSpace, Preconditioner,
    Reuse, SmootherKind, Storage,
};
use linalg::{ops, Bsr, Vector};

fn solve(a: &Bsr, b: &Vector, h: &Hierarchy) -> amg::CgOutcome {
    let mut x = Vector::zeros(a.n_rows());
    let out = cg(a, b, &mut x, h, &CgParams::default()).unwrap();
    // Check the true residual independently of CG's recursion.
    let mut r = b.clone();
    a.spmv_add(-1.0, &x, 1.0, &mut r).unwrap();
    if out.converged {
        assert!(
            ops::norm2(&r).unwrap() <= 1e-7 * ops::norm2(b).unwrap(),
            "true residual {}",
            ops::norm2(&r).unwrap()
        );
    }
    out
}

fn vcycle(h: &Hierarchy, r: &Vector) -> Vec<f64> {
    let mut z = Vector::zeros(r.len());
    h.apply(r, &mut z).unwrap();
    z.to_host_vec().unwrap()
}

fn max_rel_diff(x: &[f64], y: &[f64]) -> f64 {
    let scale = y.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
    x.iter()
        .zip(y)
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()))
        / scale
}

fn rhs(n: usize, seed: u64) -> Vector {
    Vector::from_vec(common::renewal::pseudo_random(n, seed))
}

#[test]
fn near_null_space_is_preserved_on_every_level() {
    let p = common::elasticity(9, 1e-3);
    // a small coarse limit, so that the hierarchy has several levels on this small problem
    let params = AmgParams {
        coarse_eq_limit: 50,
        ..AmgParams::default()
    };
    let h = Hierarchy::setup(&p.a, &p.near_null, &params).unwrap();
    assert!(h.n_levels() >= 3, "levels {}", h.n_levels());
    // The hierarchy keeps no copy of the fine near-null space (only `reuse: none` needs one).
    assert!(h.near_null(0).is_none());
    for l in 0..h.n_levels() - 1 {
        let a_l = h.operator(l).unwrap();
        let b = h.near_null(l).unwrap_or(&p.near_null);
        let bc = h.near_null(l + 1).unwrap();
        let aggs = h.aggregates(l).unwrap();
        let (p0, bc_again) = tentative_prolongator(aggs, b, a_l.block_rows()).unwrap();
        assert_eq!(&bc_again, bc);
        let bs = a_l.block_rows();
        for j in 0..b.n_vectors() {
            let mut y = Vector::zeros(a_l.n_rows());
            p0.spmv(&bc.column(j).unwrap(), &mut y).unwrap();
            let bj = b.column(j).unwrap().to_host_vec().unwrap();
            let scale = bj.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for (row, (u, v)) in y.host().unwrap().iter().zip(&bj).enumerate() {
                let expected = if aggs.assignment()[row / bs] == UNAGGREGATED {
                    0.0
                } else {
                    *v
                };
                assert!(
                    (u - expected).abs() <= 1e-12 * scale,
                    "level {l} vector {j} row {row}: {u} vs {expected}"
                );
            }
        }
        // Clamped nodes (Dirichlet rows) are never aggregated on the finest level.
        if l == 0 {
            assert!((0..81).all(|node| aggs.assignment()[node] == UNAGGREGATED));
            assert!((81..729).all(|node| aggs.assignment()[node] != UNAGGREGATED));
        }
    }
}

#[test]
fn amg_cg_converges_on_elasticity_with_both_smoothers() {
    let p = common::elasticity(13, 1e-3);
    for smoother in [SmootherKind::Chebyshev, SmootherKind::Jacobi] {
        let params = AmgParams {
            smoother,
            ..Default::default()
        };
        let h = Hierarchy::setup(&p.a, &p.near_null, &params).unwrap();
        let out = solve(&p.a, &p.b, &h);
        assert!(out.converged, "{smoother:?}: {:?}", out.reason);
        let limit = if smoother == SmootherKind::Chebyshev {
            20
        } else {
            40
        };
        assert!(
            out.iterations <= limit,
            "{smoother:?}: {} iterations",
            out.iterations
        );
    }
}

#[test]
fn iteration_counts_are_mesh_independent() {
    let mut its = Vec::new();
    for m in [9, 17, 33] {
        let p = common::elasticity(m, 1e-3);
        let h = Hierarchy::setup(&p.a, &p.near_null, &AmgParams::default()).unwrap();
        let out = solve(&p.a, &p.b, &h);
        assert!(out.converged);
        its.push(out.iterations);
    }
    let (lo, hi) = (*its.iter().min().unwrap(), *its.iter().max().unwrap());
    assert!(
        hi <= 20 && hi - lo <= 5,
        "iterations for 9^3, 17^3, 33^3: {its:?}"
    );
}

#[test]
fn hot_update_reproduces_setup_when_nothing_changed_and_after_scaling() {
    let mut p = common::elasticity(11, 1e-3);
    let r = rhs(p.a.n_rows(), 3);
    let mut h = Hierarchy::setup(&p.a, &p.near_null, &AmgParams::default()).unwrap();
    let z0 = vcycle(&h, &r);
    let versions = h.p_versions();
    let rep = h.update(&p.a).unwrap();
    assert_eq!(rep.p_versions, versions);
    assert_eq!((rep.transposes_rebuilt, rep.galerkin_plans_rebuilt), (0, 0));
    assert!(max_rel_diff(&vcycle(&h, &r), &z0) < 1e-13);
    // Scaling by 2: aggregates, emax and P are scale invariant, so a fresh setup equals the update.
    p.a.scale(2.0).unwrap();
    h.update(&p.a).unwrap();
    let fresh = Hierarchy::setup(&p.a, &p.near_null, &AmgParams::default()).unwrap();
    assert_eq!(h.n_levels(), fresh.n_levels());
    for l in 0..h.n_levels() {
        let (u, v) = (h.operator(l).unwrap(), fresh.operator(l).unwrap());
        assert!(
            max_rel_diff(u.host().unwrap(), v.host().unwrap()) < 1e-12,
            "level {l}"
        );
    }
    let (zu, zf) = (vcycle(&h, &r), vcycle(&fresh, &r));
    assert!(max_rel_diff(&zu, &zf) < 1e-10);
    // And the V-cycle of 2A is half the V-cycle of A.
    let half: Vec<f64> = z0.iter().map(|v| 0.5 * v).collect();
    assert!(max_rel_diff(&zu, &half) < 1e-10);
}

#[test]
fn hot_update_after_a_random_spd_change_matches_galerkin_of_the_new_operator() {
    let mut p = common::elasticity(9, 1e-3);
    let mut h = Hierarchy::setup(&p.a, &p.near_null, &AmgParams::default()).unwrap();
    // SPD-preserving change on the same pattern: A' = A + diag(s_i I_3), s_i > 0 pseudo-random.
    let pattern = p.a.pattern().clone();
    let diag = pattern.diagonal_positions().unwrap();
    let s = rhs(diag.len(), 11);
    for (node, &k) in diag.iter().enumerate() {
        let blk = p.a.host_block_mut(k).unwrap();
        for c in 0..3 {
            blk[4 * c] += 0.05 * (1.5 + s.host().unwrap()[node]);
        }
    }
    let rep = h.update(&p.a).unwrap();
    assert_eq!(rep.galerkin_plans_rebuilt, 0);
    // Every coarse operator equals P^T A_l P computed from scratch with the kept prolongators.
    for l in 0..h.n_levels() - 1 {
        let expected = linalg::ptap(h.operator(l).unwrap(), h.prolongator(l).unwrap()).unwrap();
        let got = h.operator(l + 1).unwrap();
        assert!(
            max_rel_diff(&got.to_dense().unwrap(), &expected.to_dense().unwrap()) < 1e-12,
            "level {}",
            l + 1
        );
    }
    assert!(max_rel_diff(h.operator(0).unwrap().host().unwrap(), p.a.host().unwrap()) == 0.0);
    assert!(solve(&p.a, &p.b, &h).converged);
    // reuse: none rebuilds everything: it equals a fresh setup of the new operator.
    let none = AmgParams {
        reuse: Reuse::None,
        ..Default::default()
    };
    let mut h_none = Hierarchy::setup(&common::elasticity(9, 1e-3).a, &p.near_null, &none).unwrap();
    let old_versions = h_none.p_versions();
    assert_eq!(h_none.near_null(0), Some(&p.near_null));
    let rep = h_none.update(&p.a).unwrap();
    assert!(
        rep.p_versions.iter().all(|v| !old_versions.contains(v)),
        "P versions must change"
    );
    // It keeps the fine near-null space for the next update.
    assert_eq!(h_none.near_null(0), Some(&p.near_null));
    let fresh = Hierarchy::setup(&p.a, &p.near_null, &none).unwrap();
    let r = rhs(p.a.n_rows(), 5);
    assert!(max_rel_diff(&vcycle(&h_none, &r), &vcycle(&fresh, &r)) < 1e-13);
}

#[test]
fn reuse_full_keeps_the_old_preconditioner() {
    let mut p = common::elasticity(7, 1.0);
    let params = AmgParams {
        reuse: Reuse::Full,
        ..Default::default()
    };
    let mut h = Hierarchy::setup(&p.a, &p.near_null, &params).unwrap();
    let r = rhs(p.a.n_rows(), 9);
    let z0 = vcycle(&h, &r);
    p.a.scale(3.0).unwrap();
    h.update(&p.a).unwrap();
    assert_eq!(vcycle(&h, &r), z0);
}

#[test]
fn setup_is_identical_with_one_and_several_threads() {
    let p = common::elasticity(11, 1e-3);
    let r = rhs(p.a.n_rows(), 1);
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| {
                let h = Hierarchy::setup(&p.a, &p.near_null, &AmgParams::default()).unwrap();
                let aggs: Vec<Vec<u32>> = (0..h.n_levels() - 1)
                    .map(|l| h.aggregates(l).unwrap().assignment().to_vec())
                    .collect();
                let coarse: Vec<Vec<f64>> = (0..h.n_levels())
                    .map(|l| h.operator(l).unwrap().host().unwrap().to_vec())
                    .collect();
                (aggs, coarse, vcycle(&h, &r))
            })
    };
    let (one, many) = (run(1), run(3));
    assert_eq!(one.0, many.0, "aggregates differ");
    assert_eq!(one.1, many.1, "coarse operators differ");
    assert_eq!(one.2, many.2, "V-cycle differs");
}

#[test]
fn dirichlet_rows_isolated_node_and_tiny_aggregate_do_not_break_setup() {
    let m = 7;
    let mut p = common::elasticity(m, 1.0);
    let id = |i: usize, j: usize, k: usize| i + m * (j + m * k);
    let (x, y, z) = (id(5, 5, 5), id(2, 2, 3), id(3, 2, 3));
    let pattern = p.a.pattern().clone();
    // Decouple x, y, z from everything; then couple y and z only to each other.
    for &node in &[x, y, z] {
        for k in pattern.row_ptr()[node]..pattern.row_ptr()[node + 1] {
            let col = pattern.col_idx()[k] as usize;
            let back = pattern.find(col, node).unwrap();
            p.a.host_block_mut(k).unwrap().fill(0.0);
            p.a.host_block_mut(back).unwrap().fill(0.0);
        }
        let d = pattern.find(node, node).unwrap();
        let blk = p.a.host_block_mut(d).unwrap();
        blk[0] = 1.0;
        blk[4] = 2.0;
        blk[8] = 3.0;
    }
    for (u, v) in [(y, z), (z, y)] {
        let blk = p.a.host_block_mut(pattern.find(u, v).unwrap()).unwrap();
        blk[0] = -0.5;
        blk[4] = -0.5;
        blk[8] = -0.5;
    }
    let h = Hierarchy::setup(&p.a, &p.near_null, &AmgParams::default()).unwrap();
    let aggs = h.aggregates(0).unwrap();
    assert_eq!(
        aggs.assignment()[x],
        UNAGGREGATED,
        "an isolated node joins no aggregate"
    );
    // y and z form a 2-node aggregate: 6 unknowns, rigid modes of rank 5 on it; its coarse diagonal
    // block must still be invertible (point-block Jacobi on level 1 succeeded in setup).
    let ay = aggs.assignment()[y];
    assert_ne!(ay, UNAGGREGATED);
    assert_eq!(
        aggs.members(ay as usize),
        &[y.min(z) as u32, y.max(z) as u32]
    );
    let out = solve(&p.a, &p.b, &h);
    assert!(out.converged, "{:?}", out.reason);
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let p = common::elasticity(5, 1.0);
    let wrong = NearNullSpace::translations(10, 3).unwrap();
    assert!(Hierarchy::setup(&p.a, &wrong, &AmgParams::default()).is_err());
    let bad = AmgParams {
        chebyshev_lower: 2.0,
        ..Default::default()
    };
    assert!(matches!(
        Hierarchy::setup(&p.a, &p.near_null, &bad),
        Err(amg::AmgError::InvalidParameter { .. })
    ));
    let mut h = Hierarchy::setup(&p.a, &p.near_null, &AmgParams::default()).unwrap();
    let other = common::elasticity(6, 1.0);
    assert!(matches!(
        h.update(&other.a),
        Err(amg::AmgError::OperatorChanged { .. })
    ));
}

#[test]
fn params_deserialize_with_defaults_and_reject_unknown_fields() {
    let p: AmgParams = serde_json::from_str(r#"{"reuse": "full", "smoother": "jacobi"}"#).unwrap();
    assert_eq!(p.reuse, Reuse::Full);
    assert_eq!(p.smoother, SmootherKind::Jacobi);
    assert_eq!(p.coarse_eq_limit, AmgParams::default().coarse_eq_limit);
    assert!(serde_json::from_str::<AmgParams>(r#"{"reuse": "none", "bogus": 1}"#).is_err());
    assert!(serde_json::from_str::<AmgParams>(r#"{"reuse": "sometimes"}"#).is_err());
}

/// Shifts every diagonal block by a pseudo-random positive multiple of `I` (SPD, same pattern).
fn shift_diagonal(a: &mut Bsr, seed: u64) {
    let pattern = a.pattern().clone();
    let diag = pattern.diagonal_positions().unwrap();
    let s = rhs(diag.len(), seed);
    let bs = a.block_rows();
    for (node, &k) in diag.iter().enumerate() {
        let blk = a.host_block_mut(k).unwrap();
        for c in 0..bs {
            blk[(bs + 1) * c] += 0.05 * (1.5 + s.host().unwrap()[node]);
        }
    }
}

#[test]
fn scalar_storage_runs_the_same_method_as_blocked() {
    let mut p = common::elasticity(13, 1e-3);
    let scalar = AmgParams {
        storage: Storage::Scalar,
        ..Default::default()
    };
    let mut hb = Hierarchy::setup(&p.a, &p.near_null, &AmgParams::default()).unwrap();
    let mut hs = Hierarchy::setup(&p.a, &p.near_null, &scalar).unwrap();
    let r = rhs(p.a.n_rows(), 21);
    for round in 0..2 {
        assert_eq!(hb.n_levels(), hs.n_levels());
        for l in 0..hb.n_levels() {
            let (ob, os) = (hb.operator(l).unwrap(), hs.operator(l).unwrap());
            assert_eq!((os.block_rows(), os.block_cols()), (1, 1), "level {l}");
            assert!(
                max_rel_diff(&os.to_dense().unwrap(), &ob.to_dense().unwrap()) < 1e-12,
                "round {round} level {l}"
            );
            let (lb, ls) = (&hb.report().levels[l], &hs.report().levels[l]);
            assert_eq!(
                (lb.block_size, lb.block_nnz, lb.nnz),
                (ls.block_size, ls.block_nnz, ls.nnz)
            );
            assert_eq!(ls.storage_block_size, 1);
        }
        for l in 0..hb.n_levels() - 1 {
            let (pb, ps) = (hb.prolongator(l).unwrap(), hs.prolongator(l).unwrap());
            assert_eq!(ps.block_rows(), 1);
            assert_eq!(ps.to_dense().unwrap(), pb.to_dense().unwrap(), "level {l}");
        }
        assert!(max_rel_diff(&vcycle(&hs, &r), &vcycle(&hb, &r)) < 1e-10);
        let (ob, os) = (solve(&p.a, &p.b, &hb), solve(&p.a, &p.b, &hs));
        assert!(ob.converged && os.converged);
        assert_eq!(ob.iterations, os.iterations, "round {round}");
        for (u, v) in ob.residual_history.iter().zip(&os.residual_history) {
            assert!((u - v).abs() <= 1e-6 * u.abs(), "round {round}: {u} vs {v}");
        }
        // Second round: the hot update recomputes diagonals and Galerkin products from the scalar
        // operators.
        shift_diagonal(&mut p.a, 13);
        let (ub, us) = (hb.update(&p.a).unwrap(), hs.update(&p.a).unwrap());
        assert_eq!(
            (us.galerkin_plans_rebuilt, us.transposes_rebuilt),
            (0, 0),
            "{ub:?}"
        );
    }
}

#[test]
fn external_hierarchy_keeps_no_copy_and_equals_the_owning_one() {
    let mut p = common::elasticity(9, 1e-3);
    let params = AmgParams::default();
    let mut own = Hierarchy::setup(&p.a, &p.near_null, &params).unwrap();
    let mut ext = Hierarchy::setup_external(&p.a, &p.near_null, &params).unwrap();
    assert!(ext.operator(0).is_none());
    assert_eq!(ext.report().levels, own.report().levels);
    let r = rhs(p.a.n_rows(), 2);
    let ext_cycle = |h: &Hierarchy, a: &Bsr| {
        let mut z = Vector::zeros(r.len());
        h.with_operator(a).unwrap().apply(&r, &mut z).unwrap();
        z.to_host_vec().unwrap()
    };
    assert_eq!(ext_cycle(&ext, &p.a), vcycle(&own, &r));
    shift_diagonal(&mut p.a, 4);
    own.update(&p.a).unwrap();
    ext.update(&p.a).unwrap();
    assert_eq!(ext_cycle(&ext, &p.a), vcycle(&own, &r));
    for l in 1..own.n_levels() {
        assert_eq!(
            ext.operator(l).unwrap().host().unwrap(),
            own.operator(l).unwrap().host().unwrap()
        );
    }
    // setup_owned moves the operator in; it is lent back unchanged.
    let owned = Hierarchy::setup_owned(p.a.clone(), &p.near_null, &params).unwrap();
    assert_eq!(
        owned.operator(0).unwrap().host().unwrap(),
        p.a.host().unwrap()
    );
    // The bound operator must match the hierarchy's.
    let other = common::elasticity(8, 1e-3);
    assert!(matches!(
        ext.with_operator(&other.a),
        Err(amg::AmgError::OperatorChanged { .. })
    ));
    let pattern = p.a.pattern();
    let dropped: Vec<u32> = (0..pattern.n_block_rows())
        .flat_map(|i| {
            pattern
                .row(i)
                .iter()
                .copied()
                .filter(move |&j| j as usize == i)
        })
        .collect();
    let diag_only = linalg::BlockPattern::new(
        pattern.n_block_rows(),
        pattern.n_block_cols(),
        (0..=pattern.n_block_rows()).collect(),
        dropped,
    )
    .unwrap();
    let diag_a = Bsr::zeros(std::sync::Arc::new(diag_only), 3, 3);
    assert!(matches!(
        ext.with_operator(&diag_a),
        Err(amg::AmgError::OperatorPatternChanged)
    ));
}

/// A cycle in a caller's workspace equals the hierarchy's own cycle bit for bit, several cycles
/// may run at once each in its own workspace, and a workspace of another hierarchy or an apply
/// without a fine operator are errors, not panics.
#[test]
fn cycles_in_caller_workspaces() {
    let p = common::elasticity(9, 1e-3);
    let params = AmgParams::default();
    let own = Hierarchy::setup(&p.a, &p.near_null, &params).unwrap();
    let ext = Hierarchy::setup_external(&p.a, &p.near_null, &params).unwrap();
    let cycle = ext.with_operator(&p.a).unwrap();
    let reference = vcycle(&own, &rhs(p.a.n_rows(), 3));
    let results: Vec<Vec<f64>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..3)
            .map(|_| {
                scope.spawn(|| {
                    let mut ws = ext.workspace().unwrap();
                    let r = rhs(p.a.n_rows(), 3);
                    let mut z = Vector::zeros(r.len());
                    for _ in 0..2 {
                        cycle.apply_in(&r, &mut z, &mut ws).unwrap();
                    }
                    z.to_host_vec().unwrap()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    for z in results {
        assert_eq!(z, reference);
    }
    let small = common::elasticity(5, 1e-3);
    let small_h = Hierarchy::setup(&small.a, &small.near_null, &params).unwrap();
    if small_h.n_levels() != ext.n_levels() {
        let r = rhs(p.a.n_rows(), 3);
        let mut z = Vector::zeros(r.len());
        assert!(matches!(
            cycle.apply_in(&r, &mut z, &mut small_h.workspace().unwrap()),
            Err(amg::AmgError::DimensionMismatch { .. })
        ));
    }
    let r = rhs(p.a.n_rows(), 3);
    let mut z = Vector::zeros(r.len());
    assert!(matches!(
        ext.apply(&r, &mut z),
        Err(amg::AmgError::MissingFineOperator)
    ));
}
