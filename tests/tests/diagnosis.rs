//! Failed load paths that say why in terms a user can act on (issue 25, item 4): a limit point
//! (a Saint Venant-Kirchhoff block crushed by a dead load past its capacity: the direct
//! factor's negative pivots, CG's negative curvature, the load-displacement stiffness decaying
//! toward zero), an inverted element named by its cell, and no limit point claimed where the
//! structure carries the load and Newton merely ran out of iterations.

use std::path::Path;

use hexfem_end_to_end::{run, run_options, ScratchDir};

/// A unit cube of 2 x 2 x 2 Q1 cells on rollers at x, y, z = 0, Saint Venant-Kirchhoff
/// (E = 100, nu = 0.3), pushed by a dead traction on x = 1 in ten load steps. Its nominal
/// stress in uniaxial compression peaks (near a stretch of 1 / sqrt 3): the traction -40 is past
/// the capacity, reached at a load factor of about 0.48.
const CRUSHED_BLOCK: &str = "\
mesh:
  box: { cells: [2, 2, 2], order: 1 }
materials:
  - { model: saint_venant_kirchhoff, young_modulus: 100.0, poisson_ratio: 0.3 }
boundary:
  dirichlet:
    - { set: xmin, x: 0.0 }
    - { set: ymin, y: 0.0 }
    - { set: zmin, z: 0.0 }
  traction:
    - { set: xmax, value: [-40.0, 0.0, 0.0] }
loading: { steps: 10 }
";

/// The error message of the run of `text` with `overrides` (which must fail).
fn failure(dir: &Path, text: &str, overrides: &[&str]) -> String {
    let input = dir.join("input.yaml");
    std::fs::write(&input, text).unwrap();
    let outcome = run(
        &run_options(input, dir.to_path_buf()).with_overrides(overrides.iter().copied()),
        &sim::Quiet,
    );
    match outcome {
        Ok(_) => panic!("{overrides:?}: the run converged"),
        Err(e) => format!("{e:#}"),
    }
}

/// The load factor after `what` in `message`.
fn factor_after(message: &str, what: &str) -> f64 {
    let rest = &message[message
        .find(what)
        .unwrap_or_else(|| panic!("no {what:?}: {message}"))
        + what.len()..];
    let number: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    number.parse().unwrap_or_else(|_| panic!("{what:?} {rest}"))
}

#[test]
fn a_load_past_the_capacity_is_diagnosed_as_a_limit_point_with_either_solver() {
    let dir = ScratchDir::new("diagnosis-limit");
    for (solver, evidence) in [
        ("direct", "negative eigenvalue"),
        ("cg_amg", "CG met negative curvature"),
    ] {
        let method = format!("linear_solver.method={solver}");
        let message = failure(&dir, CRUSHED_BLOCK, &[&method]);
        assert!(
            message.contains("limit point: no equilibrium found beyond load factor"),
            "{message}"
        );
        assert!(message.contains(evidence), "{solver}: {message}");
        assert!(message.contains("load-displacement stiffness"), "{message}");
        assert!(
            message.contains("prescribe a displacement instead of the force"),
            "{message}"
        );
        assert!(!message.contains("more loading.steps"), "{message}");
        // the last converged load factor and the one aimed at bracket the capacity (0.48)
        let converged = factor_after(&message, "beyond load factor");
        let aimed = factor_after(&message, "the last attempt aimed at");
        assert!(
            converged > 0.45 && converged < aimed && aimed < 0.5,
            "{converged} {aimed}"
        );
    }
}

#[test]
fn a_load_within_the_capacity_is_not_called_a_limit_point() {
    let dir = ScratchDir::new("diagnosis-no-limit");
    // traction -15 (below the capacity) in one step, Newton cut off at two iterations
    let message = failure(
        &dir,
        CRUSHED_BLOCK,
        &[
            "boundary.traction[0].value=[-15, 0, 0]",
            "loading.steps=1",
            "loading.max_cutbacks=1",
            "newton.max_iterations=2",
        ],
    );
    assert!(!message.contains("limit point"), "{message}");
    assert!(message.contains("more loading.steps"), "{message}");
}

#[test]
fn an_inverted_element_is_named_in_the_failure() {
    let dir = ScratchDir::new("diagnosis-inverted");
    // the top face pushed through the bottom one: cells turn inside out
    let text = "\
mesh:
  box: { cells: [2, 2, 2], order: 1 }
materials:
  - { model: neo_hookean, young_modulus: 100.0, poisson_ratio: 0.3 }
boundary:
  dirichlet:
    - { set: zmin, x: 0.0, y: 0.0, z: 0.0 }
    - { set: zmax, x: 0.3, y: 0.0, z: -1.5 }
loading: { steps: 1, max_cutbacks: 0 }
";
    let message = failure(&dir, text, &[]);
    assert!(
        message.contains("element failure in cell 0: non-positive volume ratio J = det F"),
        "{message}"
    );
}
