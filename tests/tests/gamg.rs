//! The AMG on the ex56 model problem as the app builds it, and its reuse inside Newton runs.

use amg::{cg, AmgParams, CgParams, Hierarchy};
use assembly::ex56::Ex56;
use hexfem_end_to_end::{run, run_options, ScratchDir};
use linalg::{ops, Vector};
use solve::problem::near_null_space;

/// CG iterations for ex56 with `m^3` nodes (rtol 1e-8, unpreconditioned residual), after checking
/// the true residual.
fn ex56_iterations(m: usize, order: usize) -> usize {
    let problem = Ex56::new(m, order).unwrap();
    let near_null = near_null_space(&problem.coords).unwrap();
    let hierarchy = Hierarchy::setup(&problem.a, &near_null, &AmgParams::default()).unwrap();
    let mut x = Vector::zeros(problem.b.len());
    let outcome = cg(
        &problem.a,
        &problem.b,
        &mut x,
        &hierarchy,
        &CgParams {
            rtol: 1e-8,
            ..CgParams::default()
        },
    )
    .unwrap();
    assert!(outcome.converged, "m = {m}, Q{order}: {:?}", outcome.reason);
    let mut r = Vector::zeros(x.len());
    problem.a.spmv(&x, &mut r).unwrap();
    ops::axpby(1.0, &problem.b, -1.0, &mut r).unwrap();
    assert!(
        ops::norm2(&r).unwrap() <= 1.01e-8 * ops::norm2(&problem.b).unwrap(),
        "true residual of m = {m}"
    );
    outcome.iterations
}

/// Mesh independence: iterations stay nearly constant from 9^3 to 33^3 nodes, and within PETSc
/// GAMG's 20 at 32^3.
#[test]
fn ex56_iterations_are_mesh_independent() {
    let its: Vec<usize> = [9, 17, 33].iter().map(|&m| ex56_iterations(m, 1)).collect();
    let (lo, hi) = (*its.iter().min().unwrap(), *its.iter().max().unwrap());
    assert!(hi <= 20, "{its:?}");
    assert!(
        hi - lo <= 5,
        "iterations should not grow with the mesh: {its:?}"
    );
}

/// Quadratic elements: the same AMG (rigid-body modes of all 27 nodes) converges, and stays
/// mesh independent.
#[test]
fn ex56_with_q2_elements_converges() {
    let its: Vec<usize> = [9, 17].iter().map(|&m| ex56_iterations(m, 2)).collect();
    assert!(its.iter().all(|&i| i <= 40), "{its:?}");
    assert!(its[1] <= its[0] + 8, "{its:?}");
}

/// Newton with `cg_amg`: the first linear solve of the run sets the hierarchy up cold, the first
/// of each later load step renews it for the rigid-body modes of the deformed configuration
/// keeping every plan (the tangent's new values aggregate as the last ones: the joins count
/// edges), every later one of a step is a hot update; the summary records each.
#[test]
fn newton_reuses_the_hierarchy_across_iterations_and_steps() {
    let out = ScratchDir::new("gamg-newton");
    let input =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../inputs/twisting_column.yaml");
    let outcome = run(
        &run_options(input, out.to_path_buf()).with_overrides(vec![
            "loading.steps=6",
            "loading.growth=1.0",
            "linear_solver.method=cg_amg",
        ]),
        &sim::Quiet,
    )
    .unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(outcome.summary).unwrap()).unwrap();
    let steps = summary["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 6);
    for (i, step) in steps.iter().enumerate() {
        assert_eq!(step["cutbacks"], 0, "{step}");
        let setups: Vec<&serde_json::Value> = step["linear_solver"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| &s["linear"]["setup"])
            .collect();
        assert!(setups.len() >= 2, "{setups:?}");
        let first = if i == 0 { "amg_cold" } else { "amg_renewed" };
        assert_eq!(setups[0], first, "step {}: {setups:?}", i + 1);
        assert!(setups[1..].iter().all(|s| *s == "amg_hot"), "{setups:?}");
    }
    let solves: Vec<&serde_json::Value> = steps
        .iter()
        .flat_map(|s| s["linear_solver"].as_array().unwrap())
        .collect();
    // a renewal records its hierarchy, every plan kept
    for s in solves
        .iter()
        .filter(|s| s["linear"]["setup"] == "amg_renewed")
    {
        let h = &s["linear"]["hierarchy"];
        assert!(h["plans_reused"].as_u64().unwrap() >= 1, "{h}");
        assert_eq!(
            h["plans_reused"].as_u64().unwrap() + 1,
            h["levels"].as_array().unwrap().len() as u64,
            "{h}"
        );
    }
    assert!(solves
        .iter()
        .filter(|s| s["linear"]["setup"] == "amg_hot")
        .all(|s| s["linear"].get("hierarchy").is_none()));
    // the hierarchy is recorded for the run: 3x3 blocks on the fine level, 6x6 below
    let levels = summary["preconditioner"]["levels"].as_array().unwrap();
    assert!(levels.len() >= 2);
    assert_eq!(levels[0]["block_size"], 3);
    assert!(levels[1..].iter().all(|l| l["block_size"] == 6));
    assert!(
        summary["preconditioner"]["operator_complexity"]
            .as_f64()
            .unwrap()
            > 1.0
    );
}
