//! Probes (`output.probes`) against analytic values: the deflection of a cantilever along its
//! span, the clamp's reaction force and moment, and the twist angle of a column.

use std::path::{Path, PathBuf};

use hexfem_end_to_end::{run, run_options, ScratchDir};
use io::ProbeTable;
use sim::RunOutcome;

fn inputs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../inputs")
}

fn run_with(tag: &str, input: &Path, overrides: &[&str]) -> (ScratchDir, RunOutcome, ProbeTable) {
    let out = ScratchDir::new(&format!("probes-{tag}"));
    let outcome = run(
        &run_options(input.to_owned(), out.to_path_buf()).with_overrides(overrides.iter().copied()),
        &sim::Quiet,
    )
    .unwrap_or_else(|e| panic!("{tag}: {e:#}"));
    let table = ProbeTable::read(outcome.probes_csv.as_ref().expect("a probe table")).unwrap();
    (out, outcome, table)
}

/// The last row's value of `column`.
fn last(table: &ProbeTable, column: &str) -> f64 {
    *table
        .column(column)
        .unwrap_or_else(|| panic!("no column {column}: {:?}", table.columns))
        .last()
        .unwrap()
}

/// Timoshenko deflection of the 10 x 1 x 1 cantilever (E = 1e4, nu = 0.3, end load 1) at `x`:
/// `F x^2 (3 L - x) / (6 E I) + F x / (kappa G A)`, kappa = 5/6.
fn beam_deflection(x: f64) -> f64 {
    let (e, nu, l, f): (f64, f64, f64, f64) = (1.0e4, 0.3, 10.0, 1.0);
    let i = 1.0 / 12.0;
    let g = e / (2.0 * (1.0 + nu));
    f * x * x * (3.0 * l - x) / (6.0 * e * i) + f * x / (5.0 / 6.0 * g)
}

/// Q2 cantilever: points between nodes follow beam theory along the span; the clamp's reaction
/// balances the end load (force 1, moment F L = 10 about the clamp's centroid) to the solver's
/// tolerance; the strain energy is half the load's work; step 0 is the undeformed row.
#[test]
fn cantilever_probes_match_beam_theory_and_equilibrium() {
    let (_dir, outcome, table) = run_with(
        "beam",
        &inputs_dir().join("cantilever_q2.yaml"),
        &[
            "linear_solver.rtol=1e-12",
            "output.probes={points: [{name: tip, at: [10, 0.5, 0.5]}, {name: span, at: [7.3, 0.37, 0.61]}], sets: [{set: xmin, name: clamp}, {set: xmax}], globals: [strain_energy, max_displacement]}",
        ],
    );
    assert_eq!(table.rows.len(), 2, "step 0 and step 1");
    assert!(
        table.rows[0][2..].iter().all(|&v| v == 0.0),
        "{:?}",
        table.rows[0]
    );
    for (probe, x) in [("tip", 10.0), ("span", 7.3)] {
        let w = -last(&table, &format!("{probe}.uz"));
        let exact = beam_deflection(x);
        // 3D clamping (no warping freedom) makes the solid a little stiffer
        assert!(
            (w - exact).abs() < 0.025 * exact,
            "{probe}: {w} vs beam {exact}"
        );
    }
    let fz = last(&table, "clamp.fz");
    let my = last(&table, "clamp.my");
    assert!((fz - 1.0).abs() < 1e-8, "clamp force {fz}");
    assert!((my + 10.0).abs() < 1e-7, "clamp moment {my}");
    for c in ["fx", "fy", "mx", "mz"] {
        assert!(
            last(&table, &format!("clamp.{c}")).abs() < 1e-8,
            "clamp.{c}"
        );
    }
    // a loaded, unconstrained face carries no reaction
    assert_eq!(last(&table, "xmax.fz"), 0.0);
    // linear elasticity: strain energy = work / 2 = F * (traction-weighted end deflection) / 2;
    // the probe's plain mean of the end nodes differs from that weighting by a few 1e-6
    let energy = last(&table, "strain_energy");
    let work = -last(&table, "xmax.uz");
    assert!(
        (energy - 0.5 * work).abs() < 1e-4 * energy,
        "{energy} vs {work}"
    );
    assert_eq!(outcome.figures.probes["tip.uz"], last(&table, "tip.uz"));
    assert!(last(&table, "max_displacement") >= -last(&table, "tip.uz"));
    // the step log carries the same numbers
    let summary = io::Summary::read(&outcome.summary).unwrap();
    let steps = summary.steps.unwrap();
    assert_eq!(steps[0].probes["span.uz"], last(&table, "span.uz"));
}

/// A linear elastic column, clamped at the bottom, its top turned by 2 degrees about the axis:
/// the problem is antisymmetric about the mid-height plane once half the rotation is taken
/// away, so the mid-height section turns by exactly half the angle (here measured by two point
/// probes between nodes, `(u_y(a, 0) - u_y(-a, 0)) / 2a = sin(theta) / 2`: the prescribed
/// `(R - I) x` is an infinitesimal rotation by `sin(theta)` plus a radial contraction of the top,
/// whose `u_y` vanishes on `y = 0` by symmetry). The reaction torque of the
/// top balances the bottom's and is near Saint-Venant's `G J theta / L`.
#[test]
fn twist_angle_at_mid_height_is_half_the_end_rotation() {
    let dir = ScratchDir::new("probes-twist-input");
    let input = dir.join("column.yaml");
    std::fs::write(
        &input,
        "mesh: { box: { cells: [3, 3, 16], lower: [-0.5, -0.5, 0], upper: [0.5, 0.5, 4] } }
materials: [{ model: linear, young_modulus: 26.0, poisson_ratio: 0.3 }]
boundary:
  dirichlet: [{ set: zmin, x: 0.0, y: 0.0, z: 0.0 }]
  twist: [{ set: zmax, axis: [0, 0, 1], center: [0, 0, 4], angle_deg: 2.0 }]
linear_solver: { rtol: 1.0e-12 }
output:
  probes:
    points: [{ name: east, at: [0.5, 0.0, 2.0] }, { name: west, at: [-0.5, 0.0, 2.0] }]
    sets: [{ set: zmax, name: top, about: [0, 0, 4] }, { set: zmin, name: bottom, about: [0, 0, 0] }]
",
    )
    .unwrap();
    let (_out, _outcome, table) = run_with("twist", &input, &[]);
    let theta = 2f64.to_radians();
    let mid = (last(&table, "east.uy") - last(&table, "west.uy")) / 1.0;
    assert!(
        (mid - theta.sin() / 2.0).abs() < 1e-9,
        "mid-height {mid} vs {}",
        theta.sin() / 2.0
    );
    let (top, bottom) = (last(&table, "top.mz"), last(&table, "bottom.mz"));
    // moments are taken about the deformed positions (exact balance for the finite-strain
    // models); small-strain elasticity balances them about the reference ones: O(theta) apart
    assert!(
        (top + bottom).abs() < theta * top.abs(),
        "torques {top} {bottom}"
    );
    // G = 10, J = 0.1406 a^4; restrained warping at both ends stiffens the short column
    let saint_venant = 10.0 * 0.1406 * theta / 4.0;
    assert!(
        top.abs() > saint_venant && top.abs() < 1.15 * saint_venant,
        "torque {top} vs Saint-Venant {saint_venant}"
    );
}

/// A probe point outside the mesh and an unknown set are refused at their keys.
#[test]
fn probe_errors_name_the_key() {
    let out = ScratchDir::new("probes-errors");
    let attempt = |probes: &str| {
        run(
            &run_options(inputs_dir().join("cantilever_q1.yaml"), out.to_path_buf())
                .with_overrides(vec![format!("output.probes={probes}")]),
            &sim::Quiet,
        )
        .unwrap_err()
        .to_string()
    };
    let e = attempt("{points: [{name: p, at: [11, 0.5, 0.5]}]}");
    assert!(
        e.contains("output.probes.points[0].at") && e.contains("lies in no cell"),
        "{e}"
    );
    let e = attempt("{sets: [{set: xmid}]}");
    assert!(
        e.contains("output.probes.sets[0].set") && e.contains("xmin"),
        "{e}"
    );
    let e = attempt("{points: [{name: a, at: [1, 0.5, 0.5]}], globals: [strain_energy], sets: [{set: xmin, name: a}]}");
    assert!(e.contains("used twice"), "{e}");
}
