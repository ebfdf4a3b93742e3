//! Loads users reach for (issue 12): point loads against beam theory, load curves that unload,
//! and what the problem's set-up rejects.

use hexfem_end_to_end::{run, run_options, ScratchDir};
use serde_json::Value;
use sim::RunOutcome;

fn run_yaml(
    tag: &str,
    yaml: &str,
) -> Result<(ScratchDir, RunOutcome, Value), (ScratchDir, String)> {
    let out = ScratchDir::new(&format!("loads-{tag}"));
    let input = out.join(format!("{tag}.yaml"));
    std::fs::write(&input, yaml).unwrap();
    match run(&run_options(input, out.join("results")), &sim::Quiet) {
        Ok(outcome) => {
            let summary: Value =
                serde_json::from_str(&std::fs::read_to_string(&outcome.summary).unwrap()).unwrap();
            Ok((out, outcome, summary))
        }
        Err(e) => Err((out, format!("{e:#}"))),
    }
}

/// `(coordinates, displacement)` of step `step`.
fn fields(outcome: &RunOutcome, step: usize) -> (Vec<[f64; 3]>, Vec<[f64; 3]>) {
    let file = io::ResultsReader::open(&outcome.h5).unwrap();
    let rows = |path: &str| -> Vec<[f64; 3]> {
        let (_, values) = file.read_f64(path).unwrap();
        values.chunks_exact(3).map(|r| [r[0], r[1], r[2]]).collect()
    };
    (
        rows("mesh/coordinates"),
        rows(&format!("steps/{step:06}/displacement")),
    )
}

fn at(f: &(Vec<[f64; 3]>, Vec<[f64; 3]>), x: [f64; 3]) -> [f64; 3] {
    let node =
        f.0.iter()
            .position(|c| (0..3).all(|d| (c[d] - x[d]).abs() < 1e-12))
            .unwrap_or_else(|| panic!("no node at {x:?}"));
    f.1[node]
}

const CANTILEVER: &str =
    "mesh:\n  box: { cells: [20, 2, 2], lower: [0, 0, 0], upper: [10, 1, 1], order: 2 }\n\
    materials:\n  - { model: linear, young_modulus: 1.0e4, poisson_ratio: 0.3 }\n\
    boundary:\n  dirichlet: [{ set: xmin, x: 0.0, y: 0.0, z: 0.0 }]\n";

/// A point load F at the tip's centre of a linear cantilever 10 x 1 x 1 (E = 1e4, nu = 0.3):
/// the deflection of the centre line at mid-span and of the tip's corner agree with Timoshenko
/// beam theory `F x^2 (3 L - x) / (6 E I) + F x / (kappa G A)` (the 3D clamp makes the solid a
/// little stiffer; the point load's local indentation stays at the loaded node).
#[test]
fn point_load_on_a_cantilever_matches_beam_theory() {
    let yaml =
        format!("{CANTILEVER}  point_load: [{{ at: [10, 0.5, 0.5], value: [0, 0, -1.0] }}]\n");
    let (_dir, outcome, _) = run_yaml("point", &yaml).unwrap_or_else(|(_, e)| panic!("{e}"));
    let f = fields(&outcome, 1);
    let (e, nu, l, force): (f64, f64, f64, f64) = (1.0e4, 0.3, 10.0, 1.0);
    let (i, g) = (1.0 / 12.0, e / (2.0 * (1.0 + nu)));
    let beam = |x: f64| force * x * x * (3.0 * l - x) / (6.0 * e * i) + force * x / (5.0 / 6.0 * g);
    for (point, x) in [([5.0, 0.5, 0.5], 5.0), ([10.0, 0.0, 0.0], 10.0)] {
        let w = -at(&f, point)[2];
        assert!(
            (w - beam(x)).abs() < 0.03 * beam(x),
            "deflection at {point:?}: {w} vs beam theory {}",
            beam(x)
        );
    }
    // the same total force spread over the tip face's nodes as nodal forces: the same bending
    let tip_nodes = 5 * 5; // Q2, 2 x 2 cells on the face
    let yaml = format!(
        "{CANTILEVER}  nodal_force: [{{ set: xmax, value: [0, 0, {}] }}]\n",
        -1.0 / tip_nodes as f64
    );
    let (_dir2, spread, _) = run_yaml("nodal", &yaml).unwrap_or_else(|(_, e)| panic!("{e}"));
    let w = -at(&fields(&spread, 1), [5.0, 0.5, 0.5])[2];
    assert!((w - beam(5.0)).abs() < 0.03 * beam(5.0), "{w}");
}

/// A point that is no mesh node is an error naming the nearest node.
#[test]
fn point_load_off_the_mesh_nodes_is_rejected() {
    let yaml =
        format!("{CANTILEVER}  point_load: [{{ at: [10, 0.4, 0.5], value: [0, 0, -1.0] }}]\n");
    let Err((_dir, e)) = run_yaml("off-node", &yaml) else {
        panic!("a point between nodes was accepted")
    };
    assert!(
        e.contains("point_load[0].at")
            && e.contains("nearest is node")
            && e.contains("1.000e-1 away"),
        "{e}"
    );
}

/// A neo-Hookean cantilever loaded by an end traction along the curve 0 -> 1 -> 0: at the peak
/// it bends, at the end (hyperelastic, dead load) it is back at zero displacement.
#[test]
fn an_unloading_curve_returns_to_zero_displacement() {
    let yaml = "mesh:\n  box: { cells: [20, 2, 2], lower: [0, 0, 0], upper: [10, 1, 1], order: 1 }\n\
        materials:\n  - { model: neo_hookean, young_modulus: 1000.0, poisson_ratio: 0.3 }\n\
        boundary:\n  dirichlet: [{ set: xmin, x: 0.0, y: 0.0, z: 0.0 }]\n  traction: [{ set: xmax, value: [0.0, 0.0, -0.5] }]\n\
        loading: { steps: 6, curve: [[0, 0], [1, 1], [2, 0]] }\n";
    let (_dir, outcome, summary) = run_yaml("unload", yaml).unwrap_or_else(|(_, e)| panic!("{e}"));
    let steps = summary["steps"].as_array().unwrap();
    let factors: Vec<f64> = steps
        .iter()
        .map(|s| s["load_factor"].as_f64().unwrap())
        .collect();
    let peak = factors
        .iter()
        .position(|&f| f == 1.0)
        .expect("the peak is a step");
    assert_eq!(*factors.last().unwrap(), 0.0, "{factors:?}");
    let tip_peak = at(&fields(&outcome, peak + 1), [10.0, 0.5, 0.5]);
    assert!(tip_peak[2] < -1.0, "{tip_peak:?}");
    let last = fields(&outcome, outcome.steps);
    let largest = last.1.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(largest < 1e-8, "left over displacement {largest:e}");
}

/// A follower pressure p on the top of a neo-Hookean cube on rollers: the homogeneous exact
/// solution has Cauchy stress -p along z and none across, i.e. stretches `l1 = l2`, `l3` with
/// `mu (l1^2 - 1) + lambda ln J = 0` and `mu (l3^2 - 1) + lambda ln J = -p J`, `J = l1^2 l3`
/// (a dead traction would give `-p / l1^2` instead). Q1 cells reproduce it to the solver's
/// tolerance, and the support's reaction is p times the deformed top area.
#[test]
fn follower_pressure_on_a_block_matches_the_homogeneous_solution() {
    let yaml = "mesh:\n  box: { cells: [3, 3, 3], lower: [0, 0, 0], upper: [1, 1, 1], order: 1 }\n\
        materials:\n  - { model: neo_hookean, young_modulus: 10.0, poisson_ratio: 0.3 }\n\
        boundary:\n  dirichlet:\n    - { set: zmin, z: 0.0 }\n    - { set: xmin, x: 0.0 }\n    - { set: ymin, y: 0.0 }\n\
        \x20 pressure: [{ set: zmax, value: 2.0 }]\nloading: { steps: 4 }\n";
    let (_dir, outcome, summary) =
        run_yaml("pressure", yaml).unwrap_or_else(|(_, e)| panic!("{e}"));
    let (e, nu, p): (f64, f64, f64) = (10.0, 0.3, 2.0);
    let (mu, lambda) = (
        e / (2.0 * (1.0 + nu)),
        e * nu / ((1.0 + nu) * (1.0 - 2.0 * nu)),
    );
    let g = |l: [f64; 2]| {
        let j = l[0] * l[0] * l[1];
        [
            mu * (l[0] * l[0] - 1.0) + lambda * j.ln(),
            mu * (l[1] * l[1] - 1.0) + lambda * j.ln() + p * j,
        ]
    };
    let mut l = [1.0, 1.0];
    for _ in 0..50 {
        let r = g(l);
        let h = 1e-7;
        let d = |i: usize| {
            let mut lp = l;
            lp[i] += h;
            let gp = g(lp);
            [(gp[0] - r[0]) / h, (gp[1] - r[1]) / h]
        };
        let (c0, c1) = (d(0), d(1));
        let det = c0[0] * c1[1] - c1[0] * c0[1];
        l[0] -= (r[0] * c1[1] - c1[0] * r[1]) / det;
        l[1] -= (c0[0] * r[1] - r[0] * c0[1]) / det;
    }
    assert!(g(l).iter().all(|v| v.abs() < 1e-12), "{l:?}");
    let corner = at(&fields(&outcome, outcome.steps), [1.0, 1.0, 1.0]);
    let exact = [l[0] - 1.0, l[0] - 1.0, l[1] - 1.0];
    for d in 0..3 {
        assert!(
            (corner[d] - exact[d]).abs() < 1e-7,
            "{corner:?} vs {exact:?}"
        );
    }
    let last = summary["steps"].as_array().unwrap().last().unwrap();
    let support = last["reactions"]["zmin"]["force"][2].as_f64().unwrap();
    assert!((support - p * l[0] * l[0]).abs() < 1e-6, "{support}");
    // With the full (nonsymmetric) load stiffness Newton converges quadratically: at most 5
    // iterations per step, where the symmetric part alone took 8, 11, 15 and 19, and a later
    // contraction is far below the first (linear convergence keeps them alike).
    for step in summary["steps"].as_array().unwrap() {
        let iterations = step["newton_iterations"].as_u64().unwrap();
        assert!(iterations <= 5, "{iterations} Newton iterations");
        let r: Vec<f64> = step["residual_norms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let contraction: Vec<f64> = r.windows(2).map(|w| w[1] / w[0]).collect();
        let best = contraction.iter().fold(f64::INFINITY, |m, &c| m.min(c));
        assert!(best < 0.1 * contraction[0], "contractions {contraction:?}");
    }
}

/// With a follower pressure the tangent is not symmetric: `auto` (small problem) solves it by
/// GMRES preconditioned by the direct factor, to 1e-12, and `cg_amg` by GMRES with AMG; both
/// keep Newton quadratic (at most 5 iterations per step where the symmetric part alone took 8 to
/// 19) and every linear solve converges.
#[test]
fn a_nonsymmetric_tangent_is_solved_by_gmres_with_the_factor_or_amg() {
    let block = "mesh:\n  box: { cells: [3, 3, 3], lower: [0, 0, 0], upper: [1, 1, 1], order: 1 }\n\
        materials:\n  - { model: neo_hookean, young_modulus: 10.0, poisson_ratio: 0.3 }\n\
        boundary:\n  dirichlet:\n    - { set: zmin, z: 0.0 }\n    - { set: xmin, x: 0.0 }\n    - { set: ymin, y: 0.0 }\n\
        \x20 pressure: [{ set: zmax, value: 2.0 }]\nloading: { steps: 4 }\n";
    for (method, setup) in [("auto", "factorization"), ("cg_amg", "amg")] {
        let yaml = format!("{block}linear_solver: {{ method: {method} }}\n");
        let (_dir, _, summary) = run_yaml(&format!("pressure-{method}"), &yaml)
            .unwrap_or_else(|(_, e)| panic!("{method}: {e}"));
        for step in summary["steps"].as_array().unwrap() {
            let iterations = step["newton_iterations"].as_u64().unwrap();
            assert!(iterations <= 5, "{method}: {iterations} Newton iterations");
            for solve in step["linear_solver"].as_array().unwrap() {
                let linear = &solve["linear"];
                assert!(linear["converged"].as_bool().unwrap(), "{method}: {linear}");
                assert!(
                    linear["setup"].as_str().unwrap().starts_with(setup),
                    "{method}: {linear}"
                );
            }
        }
    }
}

/// A body force given as an expression of x against the manufactured solution
/// `u = (a sin(pi x / 2), 0, 0)` of linear elasticity on the unit cube (x = 0 fixed, rollers on
/// the sides, x = 1 free: `sigma_xx = (lambda + 2 mu) u_x'` vanishes there), whose body force is
/// `f_x = (lambda + 2 mu) a (pi / 2)^2 sin(pi x / 2)`. The error at x = 1 falls as h^2 for Q1
/// and is tiny for Q2.
#[test]
fn expression_body_force_matches_a_manufactured_solution() {
    let (e, nu, a): (f64, f64, f64) = (1.0, 0.3, 0.01);
    let (mu, lambda) = (
        e / (2.0 * (1.0 + nu)),
        e * nu / ((1.0 + nu) * (1.0 - 2.0 * nu)),
    );
    let c = (lambda + 2.0 * mu) * a * (std::f64::consts::PI / 2.0).powi(2);
    let error = |cells: usize, order: usize| {
        let yaml = format!(
            "mesh:\n  box: {{ cells: [{cells}, 1, 1], lower: [0, 0, 0], upper: [1, 1, 1], order: {order} }}\n\
             materials:\n  - {{ model: linear, young_modulus: {e}, poisson_ratio: {nu} }}\n\
             body_force: [\"{c:.17} * sin(PI * x / 2)\", 0, 0]\n\
             boundary:\n  dirichlet:\n    - {{ set: xmin, x: 0.0 }}\n    - {{ set: ymin, y: 0.0 }}\n    - {{ set: ymax, y: 0.0 }}\n    - {{ set: zmin, z: 0.0 }}\n    - {{ set: zmax, z: 0.0 }}\n"
        );
        let (_dir, outcome, _) = run_yaml(&format!("manufactured-{cells}-{order}"), &yaml)
            .unwrap_or_else(|(_, e)| panic!("{e}"));
        let u = at(&fields(&outcome, 1), [1.0, 1.0, 1.0]);
        assert!(u[1].abs() < 1e-14 && u[2].abs() < 1e-14, "{u:?}");
        (u[0] - a).abs() / a
    };
    let (coarse, fine) = (error(8, 1), error(16, 1));
    assert!(
        coarse < 1e-2 && fine < coarse / 3.5,
        "Q1 errors {coarse:e}, {fine:e}"
    );
    let q2 = error(8, 2);
    assert!(q2 < 1e-5, "Q2 error {q2:e}");
}

/// Dirichlet values given as expressions of the reference position: a linear displacement field
/// `u = (0.01 x + 0.02 y, -0.01 z, 0.03 x)` prescribed on the whole boundary of a linear-elastic
/// cube is reproduced exactly inside (a linear field is in the Q1 space and in equilibrium without
/// body force), at every node.
#[test]
fn expression_dirichlet_values_reproduce_a_linear_field() {
    let mut yaml = String::from(
        "mesh:\n  box: { cells: [3, 3, 3], lower: [0, 0, 0], upper: [1, 2, 1], order: 1 }\n\
         materials:\n  - { model: linear, young_modulus: 5.0, poisson_ratio: 0.25 }\n\
         boundary:\n  dirichlet:\n",
    );
    for set in ["xmin", "xmax", "ymin", "ymax", "zmin", "zmax"] {
        yaml += &format!(
            "    - {{ set: {set}, x: \"0.01 * x + 0.02 * y\", y: \"-0.01 * z\", z: \"0.03 * x\" }}\n"
        );
    }
    let (_dir, outcome, _) =
        run_yaml("dirichlet-expr", &yaml).unwrap_or_else(|(_, e)| panic!("{e}"));
    let (coords, u) = fields(&outcome, 1);
    for (x, u) in coords.iter().zip(&u) {
        let exact = [0.01 * x[0] + 0.02 * x[1], -0.01 * x[2], 0.03 * x[0]];
        for d in 0..3 {
            assert!(
                (u[d] - exact[d]).abs() < 1e-12,
                "at {x:?}: {u:?} vs {exact:?}"
            );
        }
    }
}

/// A load on a curve of its own: traction A goes up and back to zero on its own curve while
/// traction B ramps with the run's curve. At the end only B acts, and the state is the one of B
/// alone (hyperelastic, dead loads: path independent); half way, A bends the beam down.
#[test]
fn a_load_on_its_own_curve_unloads_while_another_loads() {
    let beam =
        "mesh:\n  box: { cells: [20, 2, 2], lower: [0, 0, 0], upper: [10, 1, 1], order: 1 }\n\
        materials:\n  - { model: neo_hookean, young_modulus: 1000.0, poisson_ratio: 0.3 }\n\
        boundary:\n  dirichlet: [{ set: xmin, x: 0.0, y: 0.0, z: 0.0 }]\n";
    let both = format!(
        "{beam}  traction:\n    - {{ set: xmax, value: [0, 0, -0.5], curve: [[0, 0], [1, 1], [2, 0]] }}\n    - {{ set: xmax, value: [0, 0.3, 0] }}\n\
         loading: {{ steps: 4, curve: [[0, 0], [2, 1]] }}\n"
    );
    let (_a, outcome, summary) =
        run_yaml("own-curve", &both).unwrap_or_else(|(_, e)| panic!("{e}"));
    let alone = format!(
        "{beam}  traction: [{{ set: xmax, value: [0, 0.3, 0] }}]\nloading: {{ steps: 2 }}\n"
    );
    let (_b, reference, _) =
        run_yaml("own-curve-ref", &alone).unwrap_or_else(|(_, e)| panic!("{e}"));
    let steps = summary["steps"].as_array().unwrap();
    let half = steps
        .iter()
        .position(|s| s["load_factor"].as_f64().unwrap() == 0.5)
        .expect("a step at time 1");
    let mid = at(&fields(&outcome, half + 1), [10.0, 0.5, 0.5]);
    assert!(mid[2] < -1.0 && mid[1] > 0.0, "{mid:?}");
    let end = at(&fields(&outcome, outcome.steps), [10.0, 0.5, 0.5]);
    let expected = at(&fields(&reference, reference.steps), [10.0, 0.5, 0.5]);
    for d in 0..3 {
        assert!(
            (end[d] - expected[d]).abs() < 1e-6,
            "{end:?} vs {expected:?}"
        );
    }
}

/// Loads and Dirichlet values that are expressions of the pseudo-time `t` are the values
/// themselves at each time (not scaled by the load factor): a traction `-sin(PI t)` peaks at
/// t = 1/2 with the same state as a constant traction -1 at full load (a linear problem, so
/// equal to round-off), and returns to zero displacement at t = 1; a Dirichlet value `0.04 t^2`
/// equals the constant 0.01 at t = 1/2.
#[test]
fn expressions_of_time_are_the_values_at_each_time() {
    let bar = |traction: &str, dirichlet_z: &str, steps: usize| {
        format!(
            "mesh:\n  box: {{ cells: [8, 2, 2], lower: [0, 0, 0], upper: [4, 1, 1], order: 1 }}\n\
             materials:\n  - {{ model: linear, young_modulus: 100.0, poisson_ratio: 0.3 }}\n\
             boundary:\n  dirichlet: [{{ set: xmin, x: 0.0, y: 0.0, z: {dirichlet_z} }}]\n  traction: [{{ set: xmax, value: [0.0, 0.0, {traction}] }}]\n\
             loading: {{ steps: {steps} }}\n"
        )
    };
    let (_a, timed, _) = run_yaml("time-expr", &bar("\"-sin(PI * t)\"", "\"0.04 * t^2\"", 4))
        .unwrap_or_else(|(_, e)| panic!("{e}"));
    let (_b, constant, _) =
        run_yaml("time-const", &bar("-1.0", "0.01", 1)).unwrap_or_else(|(_, e)| panic!("{e}"));
    let (_, half) = fields(&timed, 2);
    let (_, full) = fields(&constant, 1);
    let scale = full.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(scale > 1e-2, "the constant load moves the bar: {scale}");
    let diff = half
        .iter()
        .flatten()
        .zip(full.iter().flatten())
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    assert!(
        diff < 1e-9 * scale,
        "t = 1/2 against the constant load: {diff:e}"
    );
    // at t = 1 the traction is sin(PI) ~ 1e-16: unloaded, the bar only rides on its end,
    // moved to z = 0.04 (a rigid translation)
    let (_, end) = fields(&timed, 4);
    for u in &end {
        assert!(
            u[0].abs() < 1e-9 && u[1].abs() < 1e-9 && (u[2] - 0.04).abs() < 1e-9,
            "{u:?}"
        );
    }
    // a body force of t likewise
    let body = |force: &str, steps: usize| {
        bar("0.0", "0.0", steps).replace(
            "boundary:",
            &format!("body_force: [0, 0, {force}]\nboundary:"),
        )
    };
    let (_c, timed, _) =
        run_yaml("time-body", &body("\"-2 * t\"", 4)).unwrap_or_else(|(_, e)| panic!("{e}"));
    let (_d, constant, _) =
        run_yaml("time-body-const", &body("-1.0", 1)).unwrap_or_else(|(_, e)| panic!("{e}"));
    let (_, half) = fields(&timed, 2);
    let (_, full) = fields(&constant, 1);
    let scale = full.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
    let diff = half
        .iter()
        .flatten()
        .zip(full.iter().flatten())
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    assert!(
        scale > 1e-3 && diff < 1e-9 * scale,
        "body force: {diff:e} of {scale:e}"
    );
    // an expression of t together with a curve of its own is refused
    let both = bar("\"-t\"", "0.0", 2).replace(
        "value: [0.0, 0.0, \"-t\"] }",
        "value: [0.0, 0.0, \"-t\"], curve: [[0, 0], [1, 1]] }",
    );
    let err = run_yaml("time-curve", &both).expect_err("refused").1;
    assert!(
        err.contains("expression of t") && err.contains("curve"),
        "{err}"
    );
}

/// A body force with the time `t` in its expression is the value itself at each step's time
/// (not scaled by the load factor): `t^2` times the manufactured body force above gives
/// `u = t^2 a sin(pi x / 2)`, so a quarter of the amplitude at t = 1/2 (the load factor there
/// is 1/2, so scaling would give an eighth) and all of it at t = 1.
#[test]
fn a_body_force_expression_of_t_matches_the_manufactured_solution_at_two_times() {
    let (e, nu, a): (f64, f64, f64) = (1.0, 0.3, 0.01);
    let (mu, lambda) = (
        e / (2.0 * (1.0 + nu)),
        e * nu / ((1.0 + nu) * (1.0 - 2.0 * nu)),
    );
    let c = (lambda + 2.0 * mu) * a * (std::f64::consts::PI / 2.0).powi(2);
    let yaml = format!(
        "mesh:\n  box: {{ cells: [8, 1, 1], lower: [0, 0, 0], upper: [1, 1, 1], order: 2 }}\n\
         materials:\n  - {{ model: linear, young_modulus: {e}, poisson_ratio: {nu} }}\n\
         body_force: [\"t^2 * {c:.17} * sin(PI * x / 2)\", 0, 0]\n\
         boundary:\n  dirichlet:\n    - {{ set: xmin, x: 0.0 }}\n    - {{ set: ymin, y: 0.0 }}\n    - {{ set: ymax, y: 0.0 }}\n    - {{ set: zmin, z: 0.0 }}\n    - {{ set: zmax, z: 0.0 }}\n\
         loading: {{ steps: 2 }}\n"
    );
    let (_dir, outcome, _) =
        run_yaml("manufactured-t", &yaml).unwrap_or_else(|(_, e)| panic!("{e}"));
    for (step, t) in [(1, 0.5), (2, 1.0)] {
        let u = at(&fields(&outcome, step), [1.0, 1.0, 1.0]);
        let exact = t * t * a;
        assert!(
            (u[0] - exact).abs() < 1e-5 * a,
            "step {step}: {} vs {exact}",
            u[0]
        );
    }
}

/// Expressions of t that go up and back to zero: an end traction `-0.5 sin(pi t)` on a
/// neo-Hookean cantilever and a Dirichlet value `0.2 sin(pi t)` on a second bar. Half way both
/// deform (the bar's end is at 0.2, the cantilever bends down), at t = 1 (the load factor is one
/// there) both are back at zero displacement.
#[test]
fn expressions_of_t_unload_to_zero_displacement() {
    let cases = [
        (
            "traction",
            "traction: [{ set: xmax, value: [0.0, 0.0, \"-0.5 * sin(PI * t)\"] }]",
            [10.0, 0.5, 0.5],
        ),
        (
            "dirichlet",
            "dirichlet: [{ set: xmax, x: \"0.2 * sin(PI * t)\" }]",
            [10.0, 1.0, 1.0],
        ),
    ];
    for (tag, load, probe) in cases {
        let mut yaml = format!(
            "mesh:\n  box: {{ cells: [20, 2, 2], lower: [0, 0, 0], upper: [10, 1, 1], order: 1 }}\n\
             materials:\n  - {{ model: neo_hookean, young_modulus: 1000.0, poisson_ratio: 0.3 }}\n\
             boundary:\n  {load}\n"
        );
        yaml = yaml.replace(
            "boundary:\n  dirichlet: [",
            "boundary:\n  dirichlet: [{ set: xmin, x: 0.0, y: 0.0, z: 0.0 }, ",
        );
        if tag == "traction" {
            yaml = yaml.replace(
                "boundary:\n",
                "boundary:\n  dirichlet: [{ set: xmin, x: 0.0, y: 0.0, z: 0.0 }]\n",
            );
        }
        yaml += "loading: { steps: 4 }\n";
        let (_dir, outcome, _) =
            run_yaml(&format!("unload-t-{tag}"), &yaml).unwrap_or_else(|(_, e)| panic!("{e}"));
        let half = at(&fields(&outcome, 2), probe);
        match tag {
            "traction" => assert!(half[2] < -1.0, "{half:?}"),
            _ => assert!((half[0] - 0.2).abs() < 1e-12, "{half:?}"),
        }
        let last = fields(&outcome, outcome.steps);
        let largest = last.1.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(largest < 1e-8, "{tag}: left over displacement {largest:e}");
    }
}

/// A quarter of a thick cylinder (radii 1 and 2, one layer of thickness 0.25) as MSH 2.2 text:
/// `nr` x `nt` Q1 cells in radius and angle, physical surfaces `inner`, `xsym` (x = 0), `ysym`
/// (y = 0), `bottom` and `top`, volume `body`.
fn quarter_cylinder_msh(nr: usize, nt: usize) -> String {
    let node = |i: usize, j: usize, k: usize| 1 + i + (nr + 1) * (j + (nt + 1) * k);
    let mut nodes = String::new();
    for k in 0..2 {
        for j in 0..=nt {
            for i in 0..=nr {
                let r = 1.0 + i as f64 / nr as f64;
                let theta = std::f64::consts::FRAC_PI_2 * j as f64 / nt as f64;
                let (x, y) = match j {
                    0 => (r, 0.0),
                    j if j == nt => (0.0, r),
                    _ => (r * theta.cos(), r * theta.sin()),
                };
                nodes += &format!("{} {x:.17} {y:.17} {}\n", node(i, j, k), 0.25 * k as f64);
            }
        }
    }
    let mut elements = Vec::new();
    for j in 0..nt {
        for i in 0..nr {
            let c = [
                node(i, j, 0),
                node(i + 1, j, 0),
                node(i + 1, j + 1, 0),
                node(i, j + 1, 0),
                node(i, j, 1),
                node(i + 1, j, 1),
                node(i + 1, j + 1, 1),
                node(i, j + 1, 1),
            ];
            elements.push((5, 6, c.to_vec()));
            elements.push((3, 4, vec![c[0], c[1], c[2], c[3]]));
            elements.push((3, 5, vec![c[4], c[5], c[6], c[7]]));
        }
    }
    for k in 0..1 {
        for j in 0..nt {
            let q = |i| {
                vec![
                    node(i, j, k),
                    node(i, j + 1, k),
                    node(i, j + 1, k + 1),
                    node(i, j, k + 1),
                ]
            };
            elements.push((3, 1, q(0)));
        }
        for i in 0..nr {
            let q = |j| {
                vec![
                    node(i, j, k),
                    node(i + 1, j, k),
                    node(i + 1, j, k + 1),
                    node(i, j, k + 1),
                ]
            };
            elements.push((3, 3, q(0)));
            elements.push((3, 2, q(nt)));
        }
    }
    let mut text = String::from(
        "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$PhysicalNames\n6\n2 1 \"inner\"\n2 2 \"xsym\"\n\
         2 3 \"ysym\"\n2 4 \"bottom\"\n2 5 \"top\"\n3 6 \"body\"\n$EndPhysicalNames\n",
    );
    text += &format!("$Nodes\n{}\n{nodes}$EndNodes\n", 2 * (nr + 1) * (nt + 1));
    text += &format!("$Elements\n{}\n", elements.len());
    for (id, (kind, group, nodes)) in elements.iter().enumerate() {
        let list: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
        text += &format!("{} {kind} 2 {group} {group} {}\n", id + 1, list.join(" "));
    }
    text + "$EndElements\n"
}

/// A follower pressure inside a thick cylinder (plane strain: rollers on the symmetry planes and
/// the ends) against Lame's solution `u_r = (1 + nu) p a^2 / (E (b^2 - a^2)) ((1 - 2 nu) r +
/// b^2 / r)` at the inner and outer radius (small load: the follower and the small-strain
/// answers agree to about 1e-3), in at most 3 Newton iterations per step.
#[test]
fn follower_pressure_in_a_thick_cylinder_matches_lame() {
    let out = ScratchDir::new("loads-cylinder-mesh");
    let msh = out.join("quarter.msh");
    std::fs::write(&msh, quarter_cylinder_msh(8, 16)).unwrap();
    let (e, nu, p, a, b): (f64, f64, f64, f64, f64) = (1000.0, 0.3, 1.0, 1.0, 2.0);
    let yaml = format!(
        "mesh:\n  gmsh: {{ file: {} }}\n\
         materials:\n  - {{ model: linear, young_modulus: {e}, poisson_ratio: {nu} }}\n\
         boundary:\n  dirichlet:\n    - {{ set: xsym, x: 0.0 }}\n    - {{ set: ysym, y: 0.0 }}\n    - {{ set: bottom, z: 0.0 }}\n    - {{ set: top, z: 0.0 }}\n\
         \x20 pressure: [{{ set: inner, value: {p} }}]\nloading: {{ steps: 1 }}\n",
        msh.display()
    );
    let (_dir, outcome, summary) =
        run_yaml("cylinder", &yaml).unwrap_or_else(|(_, e)| panic!("{e}"));
    let exact = |r: f64| {
        (1.0 + nu) * p * a * a / (e * (b * b - a * a)) * ((1.0 - 2.0 * nu) * r + b * b / r)
    };
    let last = fields(&outcome, 1);
    for r in [a, b] {
        let u = at(&last, [r, 0.0, 0.0]);
        let error = (u[0] - exact(r)).abs() / exact(r);
        assert!(
            error < 1e-2,
            "r = {r}: {} vs {} ({error:e})",
            u[0],
            exact(r)
        );
    }
    let iterations = newton_iterations_of(&summary);
    assert!(iterations.iter().all(|&n| n <= 3), "{iterations:?}");
}

fn newton_iterations_of(summary: &Value) -> Vec<u64> {
    summary["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["newton_iterations"].as_u64().unwrap())
        .collect()
}
