//! The verification suite of `hexfem verify`: each case passes with the measured numbers expected
//! of it, and the hand-written fields behind the cases agree with finite differences.

use fem::{Material, Moduli};
use mesh::{generate_box, BoxSpec, CellKind};
use nalgebra::Matrix3;
use sim::verify::{self, manufactured, patch, timoshenko, CaseResult, Criterion};

/// Deterministic points of `[0, 1)^3` (xorshift64).
fn points(n: usize) -> Vec<[f64; 3]> {
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..n).map(|_| [next(), next(), next()]).collect()
}

fn measured(result: &CaseResult, quantity: &str) -> f64 {
    result
        .check(quantity)
        .unwrap_or_else(|| panic!("{}: no check '{quantity}'", result.case))
        .measured
}

fn assert_passed(result: &CaseResult) {
    assert!(
        result.passed(),
        "{}",
        verify::VerifyReport {
            cases: vec![result.clone()]
        }
    );
}

/// `-div sigma(u)` of the manufactured solution, by central differences of the linear material's
/// stress at the hand-written gradient, equals the hand-written body force.
#[test]
fn manufactured_body_force_is_minus_the_divergence_of_the_stress() {
    let moduli = Moduli::from_young_poisson(manufactured::YOUNG, manufactured::POISSON).unwrap();
    let material = Material::linear(moduli);
    // The material takes the displacement gradient itself: no cancellation at small strain.
    let stress = |x: [f64; 3]| {
        let g = manufactured::gradient(x);
        material.stress(&Matrix3::from_fn(|i, j| g[i][j])).unwrap()
    };
    let h = 1e-5;
    for x in points(25) {
        let mut div = [0.0; 3];
        for j in 0..3 {
            let (mut xp, mut xm) = (x, x);
            xp[j] += h;
            xm[j] -= h;
            let (sp, sm) = (stress(xp), stress(xm));
            for (i, d) in div.iter_mut().enumerate() {
                *d += (sp[(i, j)] - sm[(i, j)]) / (2.0 * h);
            }
        }
        let f = manufactured::body_force(x, moduli.lambda(), moduli.mu());
        let scale = f.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for i in 0..3 {
            assert!(
                (f[i] + div[i]).abs() < 1e-7 * scale,
                "x = {x:?}, f_{i} = {:e}, -div sigma = {:e}",
                f[i],
                -div[i]
            );
        }
    }
}

/// The hand-written gradient of the manufactured displacement against central differences.
#[test]
fn manufactured_gradient_matches_finite_differences() {
    let h = 1e-6;
    for x in points(10) {
        let g = manufactured::gradient(x);
        let scale = g.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
        for j in 0..3 {
            let (mut xp, mut xm) = (x, x);
            xp[j] += h;
            xm[j] -= h;
            let (up, um) = (
                manufactured::displacement(xp),
                manufactured::displacement(xm),
            );
            for i in 0..3 {
                let fd = (up[i] - um[i]) / (2.0 * h);
                assert!(
                    (fd - g[i][j]).abs() < 1e-8 * scale,
                    "x = {x:?}: du_{i}/dx_{j} = {:e}, fd {fd:e}",
                    g[i][j]
                );
            }
        }
    }
}

/// The cantilever's exact field: its gradient matches finite differences, its strains are the
/// plane-stress strains of its stresses, the stresses are in equilibrium, the long faces are
/// traction free and the end shear sums to the load.
#[test]
fn timoshenko_field_is_the_plane_stress_solution() {
    let beam = timoshenko::Cantilever::default();
    let (e, nu) = (beam.young, beam.poisson);
    let scale = beam.tip_deflection() / beam.length; // typical displacement gradient
    let h = 1e-4;
    for p in points(10) {
        let x = [
            p[0] * beam.length,
            (p[1] - 0.5) * beam.depth,
            p[2] * beam.thickness,
        ];
        let (_, g) = beam.field(x);
        for j in 0..3 {
            let (mut xp, mut xm) = (x, x);
            xp[j] += h;
            xm[j] -= h;
            let (up, um) = (beam.field(xp).0, beam.field(xm).0);
            for i in 0..3 {
                let fd = (up[i] - um[i]) / (2.0 * h);
                assert!(
                    (fd - g[i][j]).abs() < 1e-7 * scale,
                    "du_{i}/dx_{j} at {x:?}: {:e} vs {fd:e}",
                    g[i][j]
                );
            }
        }
        let (sxx, sxy) = beam.stress(x[0], x[1]);
        let tol = 1e-12 * beam.load / beam.depth / e;
        assert!((g[0][0] - sxx / e).abs() < tol, "eps_xx");
        assert!((g[1][1] + nu * sxx / e).abs() < tol, "eps_yy");
        assert!((g[2][2] + nu * sxx / e).abs() < tol, "eps_zz");
        assert!(
            (g[0][1] + g[1][0] - 2.0 * (1.0 + nu) * sxy / e).abs() < tol,
            "gamma_xy"
        );
        // d sigma_xx/dx + d sigma_xy/dy = 0 (sigma_xy does not depend on x, sigma_yy = 0)
        let dsxx_dx = (beam.stress(x[0] + h, x[1]).0 - beam.stress(x[0] - h, x[1]).0) / (2.0 * h);
        let dsxy_dy = (beam.stress(x[0], x[1] + h).1 - beam.stress(x[0], x[1] - h).1) / (2.0 * h);
        assert!(
            (dsxx_dx + dsxy_dy).abs() < 1e-6 * beam.load / beam.depth.powi(2),
            "equilibrium at {x:?}"
        );
    }
    for y in [-0.5 * beam.depth, 0.5 * beam.depth] {
        assert_eq!(beam.stress(0.3 * beam.length, y).1, 0.0);
    }
    // the end shear integrates to the load: Simpson's rule is exact for the parabola
    let (d, s) = (beam.depth, |y: f64| beam.stress(beam.length, y).1);
    let resultant = d / 6.0 * (s(-0.5 * d) + 4.0 * s(0.0) + s(0.5 * d));
    assert!((resultant - beam.load).abs() < 1e-12 * beam.load);
    // Augarde & Deeks (2008) quote a tip deflection of 0.0089 for this beam
    assert!(
        (beam.tip_deflection() - 0.0089).abs() < 1e-5,
        "{}",
        beam.tip_deflection()
    );
}

/// The assembled end traction sums to the load times the thickness, and its moment about the
/// beam axis vanishes (the parabola is symmetric).
#[test]
fn timoshenko_end_traction_resultant() {
    let beam = timoshenko::Cantilever::default();
    let mesh = beam.mesh(timoshenko::CELLS).unwrap();
    let shear = |x: [f64; 3]| [0.0, beam.stress(beam.length, x[1]).1, 0.0];
    let f = timoshenko::traction_load(&mesh, "xmax", &shear).unwrap();
    let (mut fy, mut fx, mut moment) = (0.0, 0.0, 0.0);
    for (x, fa) in mesh.coords.iter().zip(f.host().unwrap().chunks_exact(3)) {
        fx += fa[0];
        fy += fa[1];
        moment += fa[1] * (x[2] - 0.5 * beam.thickness);
    }
    let total = beam.load * beam.thickness;
    assert!((fy - total).abs() < 1e-12 * total, "{fy}");
    assert_eq!(fx, 0.0);
    assert!(moment.abs() < 1e-12 * total * beam.thickness, "{moment}");
    assert!(timoshenko::traction_load(&mesh, "nowhere", &shear).is_err());
}

/// Q1 and Q2 reproduce a linear field on the distorted mesh to round-off, in the displacement
/// formulation and in the projected one (nearly incompressible).
#[test]
fn patch_tests_pass_to_round_off() {
    for kind in [CellKind::Hex8, CellKind::Hex27] {
        for formulation in [fem::Formulation::Displacement, fem::Formulation::Projected] {
            let result = patch::run(kind, formulation).unwrap();
            assert_passed(&result);
            // nearly incompressible (lambda / mu = 5000): the round-off of a worse-conditioned
            // solve (2e-11 for Q2)
            let bound = match formulation {
                fem::Formulation::Displacement => 1e-12,
                fem::Formulation::Projected => patch::TOLERANCE,
            };
            for quantity in ["max nodal error (rel)", "H1 error (rel)"] {
                let err = measured(&result, quantity);
                assert!(err < bound, "{kind:?} {formulation:?} {quantity}: {err:e}");
            }
        }
    }
}

/// The patch mesh is the skewed mapped box with its interior nodes moved off the mapped grid (by
/// at most a tenth of the node spacing per coordinate) and its boundary nodes in place.
#[test]
fn patch_mesh_is_distorted() {
    for kind in [CellKind::Hex8, CellKind::Hex27] {
        let spec = BoxSpec::mapped([patch::CELLS; 3], patch::CORNERS, kind);
        let mapped = generate_box(&spec).unwrap();
        let mesh = patch::distorted_mesh(kind).unwrap();
        let spacing = 1.0 / (patch::CELLS * kind.order()) as f64;
        let mut boundary = Vec::new();
        for set in ["xmin", "xmax", "ymin", "ymax", "zmin", "zmax"] {
            boundary.extend(mesh.set_nodes(set).unwrap());
        }
        let (mut moved, mut largest) = (0, 0.0f64);
        for (n, (a, b)) in mapped.coords.iter().zip(&mesh.coords).enumerate() {
            let shift = (0..3).fold(0.0f64, |m, d| m.max((a[d] - b[d]).abs()));
            if boundary.contains(&n) {
                assert_eq!(shift, 0.0, "{kind:?}: boundary node {n} moved");
            } else {
                moved += usize::from(shift > 0.0);
                largest = largest.max(shift);
            }
        }
        let interior = mesh.n_nodes()
            - boundary
                .iter()
                .collect::<std::collections::BTreeSet<_>>()
                .len();
        assert_eq!(moved, interior, "{kind:?}");
        assert!(
            largest <= 0.1 * spacing && largest > 0.02 * spacing,
            "{kind:?}: {largest}"
        );
    }
}

/// Checks the rates of a convergence study and its errors against the recorded values (within
/// 5 %: they depend only on the mesh, the quadrature and the solver tolerance 1e-12).
fn check_study(result: &CaseResult, rates: [(&str, f64); 2], errors: &[(&str, f64)]) {
    assert_passed(result);
    for (quantity, expected) in rates {
        let rate = measured(result, quantity);
        assert!(
            (rate - expected).abs() < 0.1,
            "{}: {quantity} = {rate}",
            result.case
        );
        let criterion = result.check(quantity).unwrap().criterion;
        assert_eq!(
            criterion,
            Criterion::Near {
                expected,
                tolerance: manufactured::RATE_TOLERANCE
            }
        );
    }
    for &(quantity, recorded) in errors {
        let err = measured(result, quantity);
        assert!(
            (err / recorded - 1.0).abs() < 0.05,
            "{}: {quantity} = {err:e}, recorded {recorded:e}",
            result.case
        );
    }
}

/// Q1 on 4, 8, 16 cells per side: L2 rate 2, H1 rate 1.
#[test]
fn manufactured_q1_converges_at_the_optimal_rates() {
    let result = manufactured::run(CellKind::Hex8, &manufactured::CELLS_Q1).unwrap();
    check_study(
        &result,
        [("L2 rate 8->16", 2.0), ("H1 rate 8->16", 1.0)],
        &[
            ("L2 error (rel), n=4", 5.61e-2),
            ("L2 error (rel), n=16", 3.618e-3),
            ("H1 error (rel), n=16", 6.28e-2),
        ],
    );
}

/// Q2 on 2, 4, 8 cells per side: L2 rate 3, H1 rate 2.
#[test]
fn manufactured_q2_converges_at_the_optimal_rates() {
    let result = manufactured::run(CellKind::Hex27, &manufactured::CELLS_Q2).unwrap();
    check_study(
        &result,
        [("L2 rate 4->8", 3.0), ("H1 rate 4->8", 2.0)],
        &[
            ("L2 error (rel), n=2", 4.28e-2),
            ("L2 error (rel), n=8", 7.945e-4),
            ("H1 error (rel), n=8", 7.623e-3),
        ],
    );
}

/// A study needs two ascending mesh sizes.
#[test]
fn manufactured_rejects_bad_mesh_sequences() {
    assert!(manufactured::run(CellKind::Hex8, &[4]).is_err());
    assert!(manufactured::run(CellKind::Hex8, &[4, 2]).is_err());
}

/// The thin Q2 slab matches the plane-stress tip deflection and field well inside the stated
/// tolerances.
#[test]
fn timoshenko_cantilever_matches_the_exact_solution() {
    let beam = timoshenko::Cantilever::default();
    let result = timoshenko::run().unwrap();
    assert_passed(&result);
    let tip = measured(&result, "tip deflection u_y(L,0)");
    assert!(
        (tip / beam.tip_deflection() - 1.0).abs() < 1e-4,
        "tip {tip:e} vs {:e}",
        beam.tip_deflection()
    );
    let l2 = measured(&result, "displacement L2 error (rel)");
    assert!(l2 < 1e-4, "{l2:e}");
}

/// The Timoshenko checks are sharp enough to fail: a 2 x 1 x 1 mesh misses both.
#[test]
fn timoshenko_fails_on_a_too_coarse_mesh() {
    let result = timoshenko::run_with(&timoshenko::Cantilever::default(), [2, 1, 1]).unwrap();
    assert!(!result.passed());
    assert!(
        result.checks.iter().all(|c| !c.passed),
        "{:?}",
        result.checks
    );
}

/// The whole suite passes and prints one row per check, none failed.
#[test]
fn suite_passes_and_prints_its_table() {
    let mut seen = Vec::new();
    let report = verify::run_suite(|case| seen.push(case.case.clone()));
    let table = report.to_string();
    println!("{table}");
    assert!(report.passed(), "{table}");
    assert_eq!(
        seen,
        verify::cases().iter().map(|c| c.name).collect::<Vec<_>>()
    );
    let n_checks: usize = report.cases.iter().map(|c| c.checks.len()).sum();
    assert_eq!(table.lines().count(), n_checks + 2, "{table}");
    assert!(!table.contains("FAIL"), "{table}");
    assert!(
        table.lines().last().unwrap().contains("all passed"),
        "{table}"
    );
}
