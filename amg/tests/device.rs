//! The device-resident hierarchy against the host one on ex56 (see `common`): the same CG
//! iteration counts and solutions, a hot update equal to a fresh setup, and the bytes a hot
//! update plus a solve move between host and device. Without a GPU every test prints one `SKIP`
//! line and passes (CI has none); `scripts/device.sh` stages them for the device machine.

mod common;

use amg::{cg, AmgParams, CgParams, Hierarchy, Precision};
use common::{elasticity, elasticity_of_order};
use linalg::{ops, Device, Vector};
use std::sync::OnceLock;

/// The GPU, or `None` after one printed line where there is none.
fn gpu(test: &str) -> Option<Device> {
    static DEV: OnceLock<Result<Device, String>> = OnceLock::new();
    match DEV.get_or_init(|| Device::cuda(0).map_err(|e| e.to_string())) {
        Ok(d) => Some(d.clone()),
        Err(e) => {
            eprintln!("SKIP {test}: no GPU ({e})");
            None
        }
    }
}

fn cg_params() -> CgParams {
    CgParams {
        rtol: 1e-8,
        ..Default::default()
    }
}

/// `||x - y|| / ||y||` of two host vectors.
fn rel_diff(x: &[f64], y: &[f64]) -> f64 {
    let d: f64 = x.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).sum();
    let n: f64 = y.iter().map(|b| b * b).sum();
    (d / n).sqrt()
}

#[test]
fn device_hierarchy_gives_the_host_iterations_and_solution() {
    let Some(dev) = gpu("device_hierarchy_gives_the_host_iterations_and_solution") else {
        return;
    };
    let params = AmgParams::default();
    for m in [9, 17, 25, 33] {
        let p = elasticity(m, 1e-3);
        let h = Hierarchy::setup_external(&p.a, &p.near_null, &params).unwrap();
        let mut x = Vector::zeros(p.a.n_rows());
        let host = cg(
            &p.a,
            &p.b,
            &mut x,
            &h.with_operator(&p.a).unwrap(),
            &cg_params(),
        )
        .unwrap();

        let a = p.a.to_device(&dev).unwrap();
        let b = p.b.to_device(&dev).unwrap();
        let hd = Hierarchy::setup_external(&a, &p.near_null, &params).unwrap();
        assert_eq!(hd.n_levels(), h.n_levels(), "m = {m}: levels");
        let mut xd = Vector::zeros_on(&dev, a.n_rows()).unwrap();
        let device = cg(
            &a,
            &b,
            &mut xd,
            &hd.with_operator(&a).unwrap(),
            &cg_params(),
        )
        .unwrap();
        assert!(host.converged && device.converged, "m = {m}");
        assert_eq!(device.iterations, host.iterations, "m = {m}: CG iterations");
        let diff = rel_diff(&xd.to_host_vec().unwrap(), x.host().unwrap());
        assert!(diff <= 1e-10, "m = {m}: solutions differ by {diff:e}");
        // every coarse operator equals the host's to rounding
        for l in 1..h.n_levels() {
            let (ah, ad) = (h.operator(l).unwrap(), hd.operator(l).unwrap());
            let diff = rel_diff(&ad.to_host_vec().unwrap(), ah.host().unwrap());
            assert!(
                diff <= 1e-12,
                "m = {m}, level {l}: operators differ by {diff:e}"
            );
        }
        eprintln!(
            "m = {m}: {} levels, {} CG iterations on host and device, solutions differ by {diff:.2e}",
            h.n_levels(),
            host.iterations
        );
    }
}

#[test]
fn hot_device_update_equals_a_fresh_device_setup() {
    let Some(dev) = gpu("hot_device_update_equals_a_fresh_device_setup") else {
        return;
    };
    let params = AmgParams::default();
    let p = elasticity(17, 1e-3);
    let mut a = p.a.to_device(&dev).unwrap();
    let mut h = Hierarchy::setup_external(&a, &p.near_null, &params).unwrap();
    // Twice the operator: D^{-1} A, the strength graph and so P are unchanged (powers of two
    // scale exactly), so the hot update (P kept) must equal a fresh setup (P rebuilt).
    let mut doubled = p.a.clone();
    doubled.scale(2.0).unwrap();
    a.upload_values_from(&doubled).unwrap();
    let report = h.update(&a).unwrap();
    assert_eq!(report.galerkin_plans_rebuilt, 0);
    let fresh = Hierarchy::setup_external(&a, &p.near_null, &params).unwrap();
    assert_eq!(h.n_levels(), fresh.n_levels());
    for l in 1..h.n_levels() {
        let (hot, cold) = (h.operator(l).unwrap(), fresh.operator(l).unwrap());
        let diff = rel_diff(&hot.to_host_vec().unwrap(), &cold.to_host_vec().unwrap());
        assert!(
            diff <= 1e-14,
            "level {l}: hot and fresh operators differ by {diff:e}"
        );
    }
    let b = p.b.to_device(&dev).unwrap();
    let solve = |h: &Hierarchy| {
        let mut x = Vector::zeros_on(&dev, a.n_rows()).unwrap();
        let out = cg(&a, &b, &mut x, &h.with_operator(&a).unwrap(), &cg_params()).unwrap();
        (out.iterations, x.to_host_vec().unwrap())
    };
    let ((it_hot, x_hot), (it_cold, x_cold)) = (solve(&h), solve(&fresh));
    assert_eq!(it_hot, it_cold);
    assert!(rel_diff(&x_hot, &x_cold) <= 1e-12);

    // A real change of values (a stiffer inclusion, same pattern): the device's hot update
    // equals the host's hot update level by level.
    let q = elasticity(17, 0.1);
    let mut hh = Hierarchy::setup_external(&p.a, &p.near_null, &params).unwrap();
    hh.update(&q.a).unwrap();
    a.upload_values_from(&q.a).unwrap();
    let mut hd =
        Hierarchy::setup_external(&p.a.to_device(&dev).unwrap(), &p.near_null, &params).unwrap();
    hd.update(&a).unwrap();
    for l in 1..hh.n_levels() {
        let (ah, ad) = (hh.operator(l).unwrap(), hd.operator(l).unwrap());
        let diff = rel_diff(&ad.to_host_vec().unwrap(), ah.host().unwrap());
        assert!(
            diff <= 1e-12,
            "level {l}: host and device hot updates differ by {diff:e}"
        );
    }
}

#[test]
fn hot_update_and_solve_move_under_4_kib() {
    let Some(dev) = gpu("hot_update_and_solve_move_under_4_kib") else {
        return;
    };
    // in mixed precision too: the fp32 coarse data is written in place on the device
    for precision in [Precision::Double, Precision::Mixed] {
        let params = AmgParams {
            precision,
            ..Default::default()
        };
        moves_under_4_kib(&dev, &params);
    }
}

fn moves_under_4_kib(dev: &Device, params: &AmgParams) {
    let dev = dev.clone();
    let p = elasticity(17, 1e-3);
    let q = elasticity(17, 0.1);
    let mut a = p.a.to_device(&dev).unwrap();
    let b = p.b.to_device(&dev).unwrap();
    let mut x = Vector::zeros_on(&dev, a.n_rows()).unwrap();
    let mut h = Hierarchy::setup_external(&a, &p.near_null, params).unwrap();
    let first = cg(&a, &b, &mut x, &h.with_operator(&a).unwrap(), &cg_params()).unwrap();
    assert!(first.converged);
    // the new tangent's values come from the host (issue 8 assembles on the device)
    a.upload_values_from(&q.a).unwrap();
    let before = dev.transfers();
    let report = h.update(&a).unwrap();
    x.fill(0.0).unwrap();
    let out = cg(&a, &b, &mut x, &h.with_operator(&a).unwrap(), &cg_params()).unwrap();
    dev.synchronize().unwrap();
    let after = dev.transfers();
    assert!(out.converged);
    let moved = (after.host_to_device - before.host_to_device)
        + (after.device_to_host - before.device_to_host);
    eprintln!(
        "{}: hot update: {} B up, {} B down; update + solve ({} iterations): {moved} B",
        params.precision.name(),
        report.transfers.host_to_device_bytes,
        report.transfers.device_to_host_bytes,
        out.iterations
    );
    assert!(moved < 4096, "a hot update and a solve moved {moved} bytes");
    // and the residual is right
    let mut r = b.try_clone().unwrap();
    a.spmv_add(-1.0, &x, 1.0, &mut r).unwrap();
    assert!(ops::norm2(&r).unwrap() <= 1.1e-8 * ops::norm2(&b).unwrap());
}

#[test]
fn operands_on_different_devices_are_an_error() {
    let Some(dev) = gpu("operands_on_different_devices_are_an_error") else {
        return;
    };
    let p = elasticity(5, 1.0);
    let a = p.a.to_device(&dev).unwrap();
    let h = Hierarchy::setup_external(&a, &p.near_null, &AmgParams::default()).unwrap();
    assert!(h.with_operator(&p.a).is_err());
    let mut y = Vector::zeros(a.n_rows());
    assert!(matches!(
        a.spmv(&p.b, &mut y),
        Err(linalg::LinalgError::DeviceMismatch { .. })
    ));
}

#[test]
fn other_options_run_on_the_device_or_say_why_not() {
    let Some(dev) = gpu("other_options_run_on_the_device_or_say_why_not") else {
        return;
    };
    let p = elasticity(9, 1e-3);
    let a = p.a.to_device(&dev).unwrap();
    let b = p.b.to_device(&dev).unwrap();
    // damped Jacobi smoothing and `reuse: none`: the host's iterations
    for params in [
        AmgParams {
            smoother: amg::SmootherKind::Jacobi,
            ..AmgParams::default()
        },
        AmgParams {
            reuse: amg::Reuse::None,
            ..AmgParams::default()
        },
    ] {
        let mut h = Hierarchy::setup_external(&p.a, &p.near_null, &params).unwrap();
        h.update(&p.a).unwrap();
        let mut x = Vector::zeros(p.a.n_rows());
        let host = cg(
            &p.a,
            &p.b,
            &mut x,
            &h.with_operator(&p.a).unwrap(),
            &cg_params(),
        )
        .unwrap();
        let mut hd = Hierarchy::setup_external(&a, &p.near_null, &params).unwrap();
        hd.update(&a).unwrap();
        let mut xd = Vector::zeros_on(&dev, a.n_rows()).unwrap();
        let device = cg(
            &a,
            &b,
            &mut xd,
            &hd.with_operator(&a).unwrap(),
            &cg_params(),
        )
        .unwrap();
        assert_eq!(device.iterations, host.iterations, "{params:?}");
        assert!(rel_diff(&xd.to_host_vec().unwrap(), x.host().unwrap()) <= 1e-10);
    }
    // scalar storage has no device kernels yet: an error that says so, not a panic
    let scalar = AmgParams {
        storage: amg::Storage::Scalar,
        ..AmgParams::default()
    };
    let err = Hierarchy::setup_external(&a, &p.near_null, &scalar).unwrap_err();
    assert!(err.to_string().contains("not available on cuda"), "{err}");
}

#[test]
fn device_mis_and_aggregates_equal_the_host_ones() {
    let Some(dev) = gpu("device_mis_and_aggregates_equal_the_host_ones") else {
        return;
    };
    let params = AmgParams::default();
    for m in [17, 33] {
        let p = elasticity(m, 1e-3);
        let h = Hierarchy::setup_external(&p.a, &p.near_null, &params).unwrap();
        let a = p.a.to_device(&dev).unwrap();
        let hd = Hierarchy::setup_external(&a, &p.near_null, &params).unwrap();
        // the MIS of every level's graph, both distances
        for l in 0..h.n_levels() - 1 {
            let op = if l == 0 { &p.a } else { h.operator(l).unwrap() };
            let graph = amg::strength_graph(op, params.strength_threshold).unwrap();
            let od = op.to_device(&dev).unwrap();
            let device_graph = amg::level_strength_graph(&od, params.strength_threshold).unwrap();
            for distance in [amg::MisDistance::One, amg::MisDistance::Two] {
                let host = amg::mis(&graph, distance);
                let device = amg::mis_level(&device_graph, distance).unwrap();
                assert_eq!(device, host, "m = {m}, level {l}, {distance:?}");
                assert!(host.iter().any(|&r| r));
            }
            // and the hierarchy built on the device aggregated the same way
            assert_eq!(hd.aggregates(l), h.aggregates(l), "m = {m}, level {l}");
        }
    }
}

/// The graph's edges and weights, the weights as bits.
fn graph_bits(g: &amg::StrengthGraph) -> (Vec<usize>, Vec<u32>, Vec<u64>) {
    let w = (0..g.n_vertices())
        .flat_map(|v| g.weights(v).iter().map(|w| w.to_bits()))
        .collect();
    (g.row_ptr().to_vec(), g.cols().to_vec(), w)
}

#[test]
fn device_strength_graph_and_aggregation_equal_the_host_ones() {
    let Some(dev) = gpu("device_strength_graph_and_aggregation_equal_the_host_ones") else {
        return;
    };
    use amg::MisDistance::{One, Two};
    // Q1 and Q2 ex56 (the clamped face's identity rows: isolated vertices), every level
    for (m, order) in [(9, 1), (17, 1), (9, 2)] {
        let p = elasticity_of_order(m, order, 1e-3);
        let h = Hierarchy::setup_external(&p.a, &p.near_null, &AmgParams::default()).unwrap();
        for l in 0..h.n_levels() - 1 {
            let op = if l == 0 { &p.a } else { h.operator(l).unwrap() };
            let bs = op.block_rows();
            let od = op.to_device(&dev).unwrap();
            for threshold in [0.0, 0.05, 0.2] {
                let case = format!("Q{order} m = {m}, level {l}, threshold {threshold}");
                let host = amg::strength_graph(op, threshold).unwrap();
                if l == 0 {
                    assert!(
                        (0..host.n_vertices()).any(|v| host.is_isolated(v)),
                        "{case}"
                    );
                }
                let before = dev.transfers();
                let device = amg::level_strength_graph(&od, threshold).unwrap();
                let moved = dev.transfers();
                assert!(matches!(device, amg::LevelGraph::Device { .. }), "{case}");
                assert_eq!(
                    moved.host_to_device, before.host_to_device,
                    "{case}: uploads"
                );
                // the missing-diagonal flag (4 B) and the edge count, the scan's total (8 B)
                assert_eq!(moved.device_to_host - before.device_to_host, 12, "{case}");
                let downloaded = device.to_host().unwrap();
                assert_eq!(graph_bits(&downloaded), graph_bits(&host), "{case}: graph");
                for distance in [One, Two] {
                    let roots = amg::mis_level(&device, distance).unwrap();
                    assert_eq!(roots, amg::mis(&host, distance), "{case}, {distance:?}");
                    // 2 vertices (MIS-2 never merges), 4 (MIS-1 merges small aggregates)
                    for min_dofs in [2 * bs, 4 * bs] {
                        let d = amg::aggregate_level(&device, distance, bs, min_dofs).unwrap();
                        let h = amg::aggregate(&host, distance, bs, min_dofs);
                        assert_eq!(d, h, "{case}, {distance:?}, min_dofs {min_dofs}");
                    }
                }
            }
        }
    }
}

#[test]
fn device_cold_setup_levels_equal_the_host_ones() {
    let Some(dev) = gpu("device_cold_setup_levels_equal_the_host_ones") else {
        return;
    };
    for (m, order, threshold) in [(17, 1, 0.0), (17, 1, 0.05), (9, 2, 0.0), (9, 2, 0.05)] {
        let case = format!("Q{order} m = {m}, threshold {threshold}");
        let params = AmgParams {
            strength_threshold: threshold,
            ..AmgParams::default()
        };
        let p = elasticity_of_order(m, order, 1e-3);
        let h = Hierarchy::setup_external(&p.a, &p.near_null, &params).unwrap();
        let a = p.a.to_device(&dev).unwrap();
        let hd = Hierarchy::setup_external(&a, &p.near_null, &params).unwrap();
        assert_eq!(hd.n_levels(), h.n_levels(), "{case}: levels");
        let mut vertices = 0;
        // bytes of the patterns of P and A_c (offsets and columns, u32 on the device)
        let (mut p_bytes, mut ac_bytes) = (0u64, 0u64);
        let pattern_bytes = |q: &linalg::BlockPattern| 4 * (q.n_block_rows() + 1 + q.nnz()) as u64;
        for l in 0..h.n_levels() - 1 {
            assert_eq!(hd.aggregates(l), h.aggregates(l), "{case}, level {l}");
            vertices += h.aggregates(l).unwrap().n_vertices();
            let (ph, pd) = (h.prolongator(l).unwrap(), hd.prolongator(l).unwrap());
            // the patterns built on the device: the host's, entry for entry
            assert_eq!(**pd.pattern(), **ph.pattern(), "{case}, P{l}'s pattern");
            p_bytes += pattern_bytes(pd.pattern());
            let diff = rel_diff(&pd.to_host_vec().unwrap(), ph.host().unwrap());
            assert!(diff <= 1e-12, "{case}: P{l} differs by {diff:e}");
            let (ah, ad) = (h.operator(l + 1).unwrap(), hd.operator(l + 1).unwrap());
            assert_eq!(
                **ad.pattern(),
                **ah.pattern(),
                "{case}, A{}'s pattern",
                l + 1
            );
            ac_bytes += pattern_bytes(ad.pattern());
            let diff = rel_diff(&ad.to_host_vec().unwrap(), ah.host().unwrap());
            assert!(diff <= 1e-12, "{case}: A{} differs by {diff:e}", l + 1);
        }
        // graph and aggregation: nothing uploaded, the assignment (4 bytes a vertex) and
        // a few counters downloaded
        let transfers = &hd.report().setup.transfers;
        let coarsen = transfers.coarsen;
        assert_eq!(coarsen.host_to_device_bytes, 0, "{case}");
        let bound = 4 * vertices as u64 + 4096;
        assert!(coarsen.device_to_host_bytes <= bound, "{case}: {coarsen:?}");
        // the symbolic products and the diagonal's slots are made on the device: nothing
        // uploaded; the patterns of P (A P0) and A_c and a few sizes come down
        let levels = (h.n_levels() - 1) as u64;
        for (stage, bytes, down) in [
            ("smoother", transfers.smoother, 4096 * levels),
            ("smoothing", transfers.smoothing, p_bytes + 4096 * levels),
            ("galerkin", transfers.galerkin, ac_bytes + 4096 * levels),
        ] {
            assert_eq!(bytes.host_to_device_bytes, 0, "{case}: {stage} {bytes:?}");
            assert!(
                bytes.device_to_host_bytes <= down,
                "{case}: {stage} {bytes:?}, at most {down} B down"
            );
        }
    }
}

#[test]
fn mixed_device_hierarchy_equals_the_mixed_host_one() {
    let Some(dev) = gpu("mixed_device_hierarchy_equals_the_mixed_host_one") else {
        return;
    };
    let params = AmgParams {
        precision: Precision::Mixed,
        ..Default::default()
    };
    let single = linalg::Precision::Single;
    for m in [9, 17, 25, 33] {
        let p = elasticity(m, 1e-3);
        let q = elasticity(m, 0.1);
        let mut h = Hierarchy::setup_external(&p.a, &p.near_null, &params).unwrap();
        let mut a = p.a.to_device(&dev).unwrap();
        let b = p.b.to_device(&dev).unwrap();
        let mut hd = Hierarchy::setup_external(&a, &p.near_null, &params).unwrap();
        assert_eq!(hd.n_levels(), h.n_levels(), "m = {m}: levels");
        for round in 0..2 {
            // the fp32 data is the stored form on the device too
            for l in 0..hd.n_levels() - 1 {
                assert_eq!(hd.prolongator(l).unwrap().precision(), single);
                assert_eq!(hd.operator(l + 1).unwrap().precision(), single);
                let inv = hd.smoother(l).unwrap().pbj.inverse();
                assert_eq!(inv.precision(), single);
                assert!(inv.device().same_as(&dev));
            }
            let op = if round == 0 { &p.a } else { &q.a };
            let mut x = Vector::zeros(op.n_rows());
            let host = cg(
                op,
                &p.b,
                &mut x,
                &h.with_operator(op).unwrap(),
                &cg_params(),
            )
            .unwrap();
            let mut xd = Vector::zeros_on(&dev, a.n_rows()).unwrap();
            let device = cg(
                &a,
                &b,
                &mut xd,
                &hd.with_operator(&a).unwrap(),
                &cg_params(),
            )
            .unwrap();
            assert!(host.converged && device.converged, "m = {m}");
            assert_eq!(
                device.iterations, host.iterations,
                "m = {m} round {round}: iterations"
            );
            let diff = rel_diff(&xd.to_host_vec().unwrap(), x.host().unwrap());
            assert!(
                diff <= 1e-6,
                "m = {m} round {round}: solutions differ by {diff:e}"
            );
            for l in 1..h.n_levels() {
                let (ah, ad) = (h.operator(l).unwrap(), hd.operator(l).unwrap());
                let diff = rel_diff(&ad.to_host_vec().unwrap(), &ah.to_host_vec().unwrap());
                assert!(diff <= 1e-6, "m = {m} round {round}, level {l}: {diff:e}");
            }
            eprintln!(
                "mixed m = {m} round {round}: {} levels, {} CG iterations on host and device, \
                 solutions differ by {diff:.2e}",
                h.n_levels(),
                host.iterations
            );
            // hot update (reuse: interpolation) to a stiffer inclusion
            h.update(&q.a).unwrap();
            a.upload_values_from(&q.a).unwrap();
            hd.update(&a).unwrap();
        }
    }
}

#[test]
fn device_renewal_equals_a_cold_device_setup() {
    let Some(dev) = gpu("device_renewal_equals_a_cold_device_setup") else {
        return;
    };
    use common::renewal::{assert_same_hierarchy, doubled, next_modes, shifted};
    let p = elasticity(17, 1e-3);
    let a1 = p.a.to_device(&dev).unwrap();
    let m2 = next_modes(&p.near_null, 17);
    for precision in [Precision::Double, Precision::Mixed] {
        let params = AmgParams {
            precision,
            coarse_eq_limit: 50,
            renewal: amg::Renewal::Recompute,
            ..Default::default()
        };
        // the same finest graph (every plan kept), then changed aggregates (plans rebuilt)
        for (what, a2) in [("doubled", doubled(&p.a)), ("shifted", shifted(&p.a, 1e-3))] {
            let a2 = a2.to_device(&dev).unwrap();
            let mut h = Hierarchy::setup_external(&a1, &p.near_null, &params).unwrap();
            let report = h.set_near_null_space(&a2, &m2).unwrap();
            let cold_moved = dev.transfers();
            let cold = Hierarchy::setup_external(&a2, &m2, &params).unwrap();
            let after = dev.transfers();
            let cold_bytes = (after.host_to_device - cold_moved.host_to_device)
                + (after.device_to_host - cold_moved.device_to_host);
            println!(
                "{precision:?} {what}: renewal kept {} plans, built {}, moved {} B in {:.3} s; cold set-up moved {cold_bytes} B",
                report.plans_reused,
                report.plans_built,
                report.transfers.total_bytes(),
                report.timings.total_s
            );
            if what == "doubled" {
                assert_eq!(report.plans_built, 0);
            }
            assert_same_hierarchy(&h, &cold, &a2, &format!("device {precision:?} {what}"));
        }
    }
}

/// The rigid-body modes about `X + u` computed on the GPU by a device problem on ex56's Q1 mesh of
/// `m` nodes per side (`assembly::device::DeviceProblem::rigid_body_modes`, as a Newton run on a
/// GPU computes its near-null space), left there.
fn device_rigid_body_modes(dev: &Device, m: usize, u: &[f64]) -> Vector {
    use assembly::device::DeviceProblem;
    use assembly::{CellMaterials, Constraints, DiscreteProblem, ElasticityAssembler, Prescribed};
    let kind = mesh::CellKind::from_order(1).unwrap();
    let mesh =
        mesh::generate_box(&mesh::BoxSpec::new([m - 1; 3], [0.0; 3], [1.0; 3], kind)).unwrap();
    let material = fem::Material::linear(fem::Moduli::from_young_poisson(1.0, 0.25).unwrap());
    let assembler =
        ElasticityAssembler::new(&mesh, CellMaterials::uniform(material, mesh.n_cells()), 2)
            .unwrap();
    let constraints = Constraints::new(
        mesh.n_nodes(),
        vec![Prescribed::Components {
            set: "zmin".into(),
            nodes: mesh.set_nodes("zmin").unwrap(),
            values: [Some(0.0); 3],
        }],
        &assembler.orphan_nodes(),
    )
    .unwrap();
    let discrete = DiscreteProblem {
        assembler,
        constraints,
        external: Vector::zeros(u.len()),
        follower: Vec::new(),
        curved: Vec::new(),
        partition: None,
    };
    let problem = DeviceProblem::new(dev.cuda_context().unwrap(), &discrete).unwrap();
    let u = Vector::from_vec(u.to_vec()).to_device(dev).unwrap();
    problem.rigid_body_modes(&u).unwrap()
}

/// Newton's renewal on one GPU: the rigid-body modes of a deformed configuration computed on the
/// device ([`device_rigid_body_modes`]) are the host's bit for bit; a kept
/// renewal with them equals the kept renewal with the host's modes (the old path, which uploads
/// them) bit for bit, level by level, and moves at least the near-null space's bytes less
/// host to device; the finest prolongator is the host renewal's bit for bit (the coarse
/// operators agree to rounding: the device Galerkin product's own summation order).
#[test]
fn kept_renewal_with_device_modes_moves_no_near_null_values() {
    let Some(dev) = gpu("kept_renewal_with_device_modes_moves_no_near_null_values") else {
        return;
    };
    use common::renewal::{assert_same_hierarchy, doubled, pseudo_random};
    for m in [9, 17] {
        let ex = assembly::ex56::Ex56::with_soft_scale(m, 1, 1e-3).unwrap();
        let p = elasticity(m, 1e-3);
        // a deformed configuration X + u
        let u = pseudo_random(3 * ex.coords.len(), m as u64)
            .iter()
            .map(|v| 0.05 * v)
            .collect::<Vec<_>>();
        let x: Vec<[f64; 3]> = ex
            .coords
            .iter()
            .zip(u.as_chunks::<3>().0)
            .map(|(x, d)| [x[0] + d[0], x[1] + d[1], x[2] + d[2]])
            .collect();
        let host_modes =
            amg::NearNullSpace::from_row_major(p.a.n_rows(), 6, assembly::rigid_body_modes(&x))
                .unwrap();
        let device_modes =
            amg::NearNullSpace::from_vector(p.a.n_rows(), 6, device_rigid_body_modes(&dev, m, &u))
                .unwrap();
        assert!(device_modes.device().same_as(&dev));
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert!(
            bits(&device_modes.values().to_host_vec().unwrap())
                == bits(host_modes.row_major().unwrap()),
            "m {m}: device rigid-body modes differ from the host's"
        );
        let params = AmgParams {
            coarse_eq_limit: 50,
            renewal: amg::Renewal::KeepAggregates,
            ..Default::default()
        };
        let a2 = doubled(&p.a);
        let a2_d = a2.to_device(&dev).unwrap();
        let a1_d = p.a.to_device(&dev).unwrap();
        let mut with_device = Hierarchy::setup_external(&a1_d, &p.near_null, &params).unwrap();
        let mut with_host = Hierarchy::setup_external(&a1_d, &p.near_null, &params).unwrap();
        let mut on_host = Hierarchy::setup_external(&p.a, &p.near_null, &params).unwrap();
        let device_report = with_device
            .set_near_null_space(&a2_d, &device_modes)
            .unwrap();
        let host_report = with_host.set_near_null_space(&a2_d, &host_modes).unwrap();
        on_host.set_near_null_space(&a2, &host_modes).unwrap();
        assert_same_hierarchy(&with_device, &with_host, &a2_d, &format!("m {m} kept"));
        assert_eq!(device_report.plans_built, 0, "m {m}");
        let nns_bytes = (device_modes.values().len() * 8) as u64;
        let (up_device, up_host) = (
            device_report.transfers.host_to_device_bytes,
            host_report.transfers.host_to_device_bytes,
        );
        println!(
            "m {m}: kept renewal moved {up_device} B up with device modes, {up_host} B with \
             host modes ({nns_bytes} B of modes); down {} / {} B",
            device_report.transfers.device_to_host_bytes,
            host_report.transfers.device_to_host_bytes
        );
        // the modes and the coarse modes stay on the device: what goes up is a few flags
        assert!(
            up_device + nns_bytes <= up_host && up_device < nns_bytes / 10,
            "m {m}: {up_device} B up with device modes, {up_host} B with host modes"
        );
        // the finest prolongator: the host renewal's bits
        let p_bits = |h: &Hierarchy| bits(&h.prolongator(0).unwrap().to_host_vec().unwrap());
        assert!(p_bits(&with_device) == p_bits(&on_host), "m {m}: P_0");
        assert_eq!(with_device.n_levels(), on_host.n_levels());
        for l in 0..on_host.n_levels() - 1 {
            assert_eq!(
                with_device.aggregates(l),
                on_host.aggregates(l),
                "m {m} {l}"
            );
        }
        for l in 1..on_host.n_levels() {
            let (ad, ah) = (
                with_device.operator(l).unwrap().to_host_vec().unwrap(),
                on_host.operator(l).unwrap().to_host_vec().unwrap(),
            );
            let diff = rel_diff(&ad, &ah);
            assert!(
                diff <= 1e-12,
                "m {m}: A_{l} differs from the host's by {diff:e}"
            );
        }
    }
}

/// The eigenvalue estimate of a device operator, its CG scalars kept on the device (one
/// download at the end), is the host estimate bit for bit: ex56 9^3 and 17^3 and a 6x6-block
/// coarse operator with point-block Jacobi, and an operator whose recurrence stops after one
/// step (`D^{-1} A = I`), for 0, 1 and 10 steps; the same device vectors with host scalars
/// (a wait per dot) agree too.
#[test]
fn device_eigenvalue_estimate_equals_the_host_one() {
    let Some(dev) = gpu("device_eigenvalue_estimate_equals_the_host_one") else {
        return;
    };
    use amg::eig::{
        estimate_emax, estimate_emax_in, estimate_emax_with, host_coefficients, start_entry,
    };
    use amg::PointBlockJacobi;
    let params = AmgParams {
        coarse_eq_limit: 50,
        ..Default::default()
    };
    let mut operators = Vec::new();
    for m in [9, 17] {
        operators.push((format!("ex56 {m}^3"), elasticity(m, 1e-3).a));
    }
    let p = elasticity(17, 1e-3);
    let h = Hierarchy::setup_external(&p.a, &p.near_null, &params).unwrap();
    let coarse = h.operator(1).unwrap().clone();
    assert_eq!(coarse.block_rows(), 6);
    operators.push(("ex56 17^3, level 1 (6x6 blocks)".into(), coarse.clone()));
    // the coarse operator's block diagonal only: D^{-1} A = I, one step
    let pattern = coarse.pattern();
    let mut diagonal = coarse.clone();
    for i in 0..pattern.n_block_rows() {
        for k in pattern.row_ptr()[i]..pattern.row_ptr()[i + 1] {
            if pattern.col_idx()[k] as usize != i {
                diagonal.host_block_mut(k).unwrap().fill(0.0);
            }
        }
    }
    operators.push(("block diagonal (stops after one step)".into(), diagonal));
    for (name, a) in &operators {
        let ad = a.to_device(&dev).unwrap();
        let (pbj, pbj_d) = (
            PointBlockJacobi::new(a).unwrap(),
            PointBlockJacobi::new(&ad).unwrap(),
        );
        for steps in [0, 1, 10] {
            let host = estimate_emax(a, &pbj, steps).unwrap();
            let before = dev.transfers();
            let device = estimate_emax(&ad, &pbj_d, steps).unwrap();
            let down = dev.transfers().device_to_host - before.device_to_host;
            // the coefficients' record, once (2 values a step)
            assert_eq!(down, 16 * steps as u64, "{name}, {steps} steps: bytes down");
            let n = ad.n_rows();
            let start: Vec<f64> = (0..n as u64).map(start_entry).collect();
            let mut work: Vec<Vector> = (0..3)
                .map(|_| Vector::from_vec(start.clone()).to_device(&dev).unwrap())
                .collect();
            let [r, x, w] = &mut work[..] else {
                unreachable!()
            };
            let waiting =
                estimate_emax_with(&ad, &pbj_d, host_coefficients(steps), [r, x, w]).unwrap();
            let bits = |e: Option<f64>| e.map(f64::to_bits);
            assert_eq!(
                bits(device),
                bits(host),
                "{name}, {steps} steps: device vs host"
            );
            assert_eq!(
                bits(device),
                bits(waiting),
                "{name}, {steps} steps: device scalars vs host scalars"
            );
            assert_eq!(host.is_some(), steps > 0, "{name}, {steps} steps");
            if name.starts_with("block diagonal") && steps > 0 {
                // lambda(D^{-1} A) = 1, found in the one step
                let e = host.unwrap_or_default();
                assert!((e - 1.0).abs() < 1e-12, "{name}, {steps} steps: {e}");
            }
            // the caller's scratch gives the same estimate
            let [r, x, w] = &mut work[..] else {
                unreachable!()
            };
            assert_eq!(
                bits(estimate_emax_in(&ad, &pbj_d, steps, [r, x, w]).unwrap()),
                bits(host)
            );
        }
    }
}
