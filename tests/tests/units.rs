//! The engineer's units: the same problem written in any consistent unit system takes the same
//! Newton and linear iterations and gives the same displacement up to the length factor; small
//! loads in SI units are solved, not accepted untouched; bodies that the constraints do not
//! hold are refused before solving, with the free motions named.

use std::path::{Path, PathBuf};

use hexfem_end_to_end::{run, run_options, ScratchDir};
use serde_json::Value;
use sim::RunOutcome;

fn inputs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../inputs")
}

/// A consistent unit system relative to an input's own: lengths times `length`, stresses (and
/// moduli) times `stress`, so forces scale by `stress length^2` and displacements by `length`.
#[derive(Clone, Copy, Debug)]
struct Units {
    name: &'static str,
    length: f64,
    stress: f64,
}

/// The inputs' own scaled units, a steel-like part in m-Pa-N (E = 1e4 becomes 2.1e11 Pa) and
/// the same in mm-MPa-N.
const SYSTEMS: [Units; 3] = [
    Units {
        name: "scaled",
        length: 1.0,
        stress: 1.0,
    },
    Units {
        name: "m-Pa",
        length: 0.01,
        stress: 2.1e7,
    },
    Units {
        name: "mm-MPa",
        length: 10.0,
        stress: 21.0,
    },
];

fn list(v: &[f64]) -> String {
    let items: Vec<String> = v.iter().map(|x| format!("{x:e}")).collect();
    format!("[{}]", items.join(", "))
}

fn scaled(v: &[f64], f: f64) -> String {
    list(&v.iter().map(|x| x * f).collect::<Vec<_>>())
}

/// `--set` overrides that write each input of this test in `units`.
fn overrides(input: &str, u: Units) -> Vec<String> {
    let (l, s) = (u.length, u.stress);
    let boxed = |lower: [f64; 3], upper: [f64; 3]| {
        vec![
            format!("mesh.box.lower={}", scaled(&lower, l)),
            format!("mesh.box.upper={}", scaled(&upper, l)),
        ]
    };
    let mut o = match input {
        "cantilever_q1" => {
            let mut o = boxed([0.0; 3], [10.0, 1.0, 1.0]);
            o.push(format!("materials.0.young_modulus={:e}", 1.0e4 * s));
            o.push(format!(
                "boundary.traction.0.value={}",
                scaled(&[0.0, 0.0, -1.0], s)
            ));
            o
        }
        "neo_hookean_block" => {
            let mut o = boxed([0.0; 3], [1.0; 3]);
            o.push(format!("materials.0.young_modulus={:e}", 10.0 * s));
            o.push(format!(
                "boundary.traction.0.value={}",
                scaled(&[0.0, 0.0, 3.0], s)
            ));
            o
        }
        "twisting_column" => {
            let mut o = boxed([-0.5, -0.5, 0.0], [0.5, 0.5, 4.0]);
            o.push(format!("materials.0.kappa={:e}", 50.0 * s));
            o.push(format!("materials.0.mu={:e}", 10.0 * s));
            o.push(format!(
                "boundary.twist.0.center={}",
                scaled(&[0.0, 0.0, 4.0], l)
            ));
            o
        }
        "cook_membrane" => vec![
            format!("mesh.gmsh.scale={l:e}"),
            format!("materials.0.lambda={:e}", 400.0 * s),
            format!("materials.0.mu1={:e}", 60.0 * s),
            format!("materials.0.mu2={:e}", 20.0 * s),
            format!("boundary.traction.0.value={}", scaled(&[0.0, 0.5, 0.0], s)),
        ],
        other => panic!("no unit overrides for {other}"),
    };
    o.push(format!("output.name={input}_{}", u.name.replace('-', "_")));
    o
}

fn run_in(dir: &ScratchDir, input: &str, overrides: Vec<String>) -> (RunOutcome, Value) {
    let outcome = run(
        &run_options(
            inputs_dir().join(format!("{input}.yaml")),
            dir.to_path_buf(),
        )
        .with_overrides(overrides),
        &sim::Quiet,
    )
    .unwrap_or_else(|e| panic!("{input}: {e:#}"));
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(&outcome.summary).unwrap()).unwrap();
    assert_eq!(summary["status"]["state"], "completed", "{input}");
    (outcome, summary)
}

/// Per step: Newton iterations and the linear iterations of each.
fn iterations(summary: &Value) -> Vec<(u64, Vec<u64>)> {
    summary["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let linear = s["iterations"]
                .as_array()
                .map(|its| {
                    its.iter()
                        .map(|i| i["linear"]["iterations"].as_u64().unwrap_or(0))
                        .collect()
                })
                .unwrap_or_default();
            (s["newton_iterations"].as_u64().unwrap(), linear)
        })
        .collect()
}

fn last_displacement(outcome: &RunOutcome) -> Vec<f64> {
    let file = io::ResultsReader::open(&outcome.h5).unwrap();
    let path = format!("steps/{:06}/displacement", outcome.steps);
    file.read_f64(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .1
}

/// Runs `input` in every unit system: the same iterations, the same displacement up to the
/// length factor (1e-8 of the largest displacement).
fn same_in_every_unit_system(input: &str) {
    same_in_every_unit_system_with(input, &[]);
}

/// [`same_in_every_unit_system`] with further `--set` overrides (`extra`) in every system.
fn same_in_every_unit_system_with(input: &str, extra: &[&str]) {
    let tag = if extra.is_empty() { "" } else { "-extra" };
    let dir = ScratchDir::new(&format!("units-{input}{tag}"));
    let with_extra = |units: Units| {
        let mut o = overrides(input, units);
        o.extend(extra.iter().map(|s| s.to_string()));
        o
    };
    let (base_outcome, base_summary) = run_in(&dir, input, with_extra(SYSTEMS[0]));
    let base_iterations = iterations(&base_summary);
    let base_u = last_displacement(&base_outcome);
    let scale = base_u.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    assert!(scale > 0.0, "{input}: nothing moved");
    for units in &SYSTEMS[1..] {
        let (outcome, summary) = run_in(&dir, input, with_extra(*units));
        assert_eq!(
            iterations(&summary),
            base_iterations,
            "{input} in {}: iterations (Newton, linear per Newton) differ",
            units.name
        );
        let u = last_displacement(&outcome);
        let worst = base_u
            .iter()
            .zip(&u)
            .map(|(b, x)| (x / units.length - b).abs())
            .fold(0.0f64, f64::max);
        assert!(
            worst <= 1e-8 * scale,
            "{input} in {}: displacement differs by {worst:e} (scale {scale:e})",
            units.name
        );
    }
}

#[test]
fn a_linear_cantilever_is_the_same_in_every_unit_system() {
    same_in_every_unit_system("cantilever_q1");
}

#[test]
fn a_neo_hookean_block_is_the_same_in_every_unit_system() {
    same_in_every_unit_system("neo_hookean_block");
}

#[test]
fn the_twisting_column_is_the_same_in_every_unit_system() {
    same_in_every_unit_system("twisting_column");
}

#[test]
fn the_gmsh_cook_membrane_is_the_same_in_every_unit_system() {
    same_in_every_unit_system("cook_membrane");
}

/// CG with the AMG, inexact Newton (Eisenstat-Walker tolerances) and the hierarchy's eigenvalue
/// estimates: the same CG iterations in every unit system. The eliminated tangent keeps its
/// constrained diagonal's scale and the right-hand side is zero there (a diagonal of one, or the
/// lifting in the right-hand side, weighed lengths against forces: 58 against 54 CG iterations
/// on the 16^3 block in scaled and SI units).
#[test]
fn cg_with_the_amg_takes_the_same_iterations_in_every_unit_system() {
    let amg = ["linear_solver.method=cg_amg"];
    same_in_every_unit_system_with(
        "neo_hookean_block",
        &[&amg[..], &["mesh.box.cells=[12,12,12]"]].concat(),
    );
    // prescribed rotations: a lifting in every step's first iteration
    same_in_every_unit_system_with("twisting_column", &amg);
}

/// Tip deflection of a cantilever of length `l`, height `h`, width `b` under an end shear force
/// `f`: Euler-Bernoulli bending plus Timoshenko shear (kappa = 5/6).
fn beam_deflection(e: f64, nu: f64, l: f64, h: f64, b: f64, f: f64) -> f64 {
    let i = b * h.powi(3) / 12.0;
    let g = e / (2.0 * (1.0 + nu));
    f * l.powi(3) / (3.0 * e * i) + f * l / (5.0 / 6.0 * g * b * h)
}

/// The largest |u_z| of the last step.
fn max_uz(outcome: &RunOutcome) -> f64 {
    last_displacement(outcome)
        .chunks_exact(3)
        .map(|u| u[2].abs())
        .fold(0.0, f64::max)
}

/// A silicon micro-cantilever in SI units (100 x 10 x 2 um, E = 170 GPa, 0.1 nN at the tip):
/// its first residual (about 1e-11 N) is below any absolute force tolerance one would pick in
/// scaled units; it must be solved, not accepted at zero.
#[test]
fn an_si_micro_cantilever_is_solved_not_accepted_at_zero() {
    let dir = ScratchDir::new("units-micro");
    let (l, h, b) = (100e-6, 2e-6, 10e-6);
    let (e, nu) = (1.7e11, 0.28);
    let traction = -5.0; // Pa on the 10 x 2 um end: 0.1 nN
    let (outcome, summary) = run_in(
        &dir,
        "cantilever_q2",
        vec![
            format!("mesh.box.upper=[{l:e}, {b:e}, {h:e}]"),
            "mesh.box.cells=[20, 2, 2]".into(),
            format!("materials.0.young_modulus={e:e}"),
            format!("materials.0.poisson_ratio={nu}"),
            format!("boundary.traction.0.value=[0, 0, {traction:e}]"),
            "output.name=micro".into(),
        ],
    );
    assert!(summary["steps"][0]["newton_iterations"].as_u64().unwrap() >= 1);
    let exact = beam_deflection(e, nu, l, h, b, -traction * b * h);
    let tip = max_uz(&outcome);
    assert!(
        (tip - exact).abs() < 0.03 * exact,
        "tip {tip:e} m vs beam theory {exact:e} m"
    );
}

/// Steel in Pa under the scaled inputs' traction: strains near 1e-11, solved to the beam's answer.
#[test]
fn a_steel_cantilever_in_pascals_matches_beam_theory() {
    let dir = ScratchDir::new("units-steel");
    let e = 2.1e11;
    let (outcome, _) = run_in(
        &dir,
        "cantilever_q2",
        vec![
            format!("materials.0.young_modulus={e:e}"),
            "output.name=steel".into(),
        ],
    );
    let exact = beam_deflection(e, 0.3, 10.0, 1.0, 1.0, 1.0);
    let tip = max_uz(&outcome);
    assert!(
        (tip - exact).abs() < 0.03 * exact,
        "tip {tip:e} vs beam theory {exact:e}"
    );
}

/// A run's error text (the input's located error).
fn run_error(input: &str, overrides: &[&str]) -> String {
    let dir = ScratchDir::new(&format!("units-err-{input}"));
    let result = run(
        &run_options(
            inputs_dir().join(format!("{input}.yaml")),
            dir.to_path_buf(),
        )
        .with_overrides(overrides.iter().copied()),
        &sim::Quiet,
    );
    match result {
        Ok(_) => panic!("{input}: the run must be refused"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn a_body_held_in_one_direction_is_refused_with_its_free_motions_named() {
    let message = run_error(
        "cantilever_q1",
        &["boundary.dirichlet=[{ set: xmin, x: 0.0 }]"],
    );
    assert!(message.contains("boundary"), "{message}");
    assert!(message.contains("'xmin' (x)"), "{message}");
    assert!(
        message.contains("translation along y, translation along z and rotation about x"),
        "{message}"
    );
    let check = hexfem_end_to_end::check(
        &inputs_dir().join("cantilever_q1.yaml"),
        &["boundary.dirichlet=[{ set: xmin, x: 0.0 }]".to_string()],
        None,
    );
    let check = match check {
        Ok(text) => panic!("check must refuse it too:\n{text}"),
        Err(e) => format!("{e:#}"),
    };
    assert!(check.contains("rotation about x"), "{check}");
}

/// Two unit cubes that share no node, the second at `x = shift` (2: a stray element; 1: touching
/// the first at distinct nodes, a mesh whose cells were not merged): the first clamped at
/// `x = 0`; the second too when `clamp_both`.
fn two_cube_input(dir: &ScratchDir, shift: f64, clamp_both: bool) -> PathBuf {
    let mut nodes = String::new();
    for (piece, shift) in [0.0, shift].iter().enumerate() {
        for (k, [x, y, z]) in [
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [1.0, 1.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, 0.0, 1.0],
            [1.0, 0.0, 1.0],
            [1.0, 1.0, 1.0],
            [0.0, 1.0, 1.0],
        ]
        .iter()
        .enumerate()
        {
            nodes.push_str(&format!("{} {} {y} {z}\n", 8 * piece + k + 1, x + shift));
        }
    }
    let second_clamp = if clamp_both {
        "4 3 2 1 1 9 12 16 13\n"
    } else {
        ""
    };
    let msh = format!(
        "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$PhysicalNames\n2\n2 1 \"clamped\"\n3 2 \"body\"\n$EndPhysicalNames\n$Nodes\n16\n{nodes}$EndNodes\n$Elements\n{}\n1 3 2 1 1 1 4 8 5\n2 5 2 2 1 1 2 3 4 5 6 7 8\n3 5 2 2 1 9 10 11 12 13 14 15 16\n{second_clamp}$EndElements\n",
        if clamp_both { 4 } else { 3 }
    );
    std::fs::write(dir.join("two.msh"), msh).unwrap();
    let input = dir.join("two.yaml");
    std::fs::write(
        &input,
        "mesh:\n  gmsh: { file: two.msh }\nmaterials:\n  - { model: linear, young_modulus: 2.1e11, poisson_ratio: 0.3 }\nbody_force: [0.0, 0.0, -7.8e4]\nboundary:\n  dirichlet:\n    - { set: clamped, x: 0.0, y: 0.0, z: 0.0 }\n",
    )
    .unwrap();
    input
}

#[test]
fn a_piece_of_the_mesh_that_nothing_holds_is_named() {
    let dir = ScratchDir::new("units-two-pieces");
    let input = two_cube_input(&dir, 2.0, false);
    let message = match hexfem_end_to_end::check(&input, &[], None) {
        Ok(text) => panic!("check must refuse a floating cell:\n{text}"),
        Err(e) => format!("{e:#}"),
    };
    assert!(message.contains("2 separate pieces"), "{message}");
    assert!(
        message.contains("the piece of 1 cell from Gmsh element 3"),
        "{message}"
    );
    assert!(message.contains("translation along x"), "{message}");
    // both pieces clamped: each is held, the input is valid
    let dir = ScratchDir::new("units-two-pieces-held");
    let input = two_cube_input(&dir, 2.0, true);
    let text = hexfem_end_to_end::check(&input, &[], None).unwrap_or_else(|e| panic!("{e:#}"));
    assert!(text.contains("valid"), "{text}");
}

#[test]
fn cells_that_meet_at_unmerged_nodes_are_refused_with_the_cells_and_point_named() {
    let dir = ScratchDir::new("units-unmerged");
    // held or not, the crack is refused first
    for clamp_both in [false, true] {
        let input = two_cube_input(&dir, 1.0, clamp_both);
        let message = match hexfem_end_to_end::check(&input, &[], None) {
            Ok(text) => panic!("check must refuse unmerged nodes:\n{text}"),
            Err(e) => format!("{e:#}"),
        };
        assert!(
            message.contains("Gmsh element 2 (cell 0) and Gmsh element 3 (cell 1) meet at distinct nodes at the same point (1, 0, 0), and 3 more such pairs"),
            "{message}"
        );
        assert!(message.contains("Coherence"), "{message}");
        assert!(message.contains("two.msh"), "{message}");
    }
}

/// A load that is not finite somewhere on the mesh is refused at its own key, not at the mesh.
#[test]
fn a_non_finite_load_is_located_at_its_key() {
    for (set, key) in [
        (
            r#"boundary.traction=[{ set: xmax, value: [0, 0, "1/0"] }]"#,
            "boundary.traction[0].value: the load is not finite",
        ),
        (
            r#"body_force=[0, 0, "ln(x - 5)"]"#,
            "body_force: the load is not finite",
        ),
    ] {
        let message = match hexfem_end_to_end::check(
            &inputs_dir().join("cantilever_q1.yaml"),
            &[set.to_string()],
            None,
        ) {
            Ok(text) => panic!("{set}: check must refuse it:\n{text}"),
            Err(e) => format!("{e:#}"),
        };
        assert!(message.contains(key), "{set}: {message}");
        assert!(!message.contains("mesh.box"), "{set}: {message}");
    }
}

/// A Dirichlet expression of the time that is not finite at a later step time of the load path
/// (issue 30) is refused by `check` at its key, with the time, not found in the middle of a run;
/// one finite at every step time is valid.
#[test]
fn a_dirichlet_expression_of_time_is_checked_at_the_step_times() {
    let input = inputs_dir().join("cantilever_q1.yaml");
    for (value, steps, time) in [
        ("0.01 / (1 - t)", 4, "t = 1 "),
        ("sqrt(0.6 - t)", 4, "t = 0.75 "),
    ] {
        let overrides = [
            format!(r#"boundary.dirichlet=[{{ set: xmax, x: 0, y: 0, z: "{value}" }}]"#),
            format!("loading.steps={steps}"),
        ];
        let message = match hexfem_end_to_end::check(&input, &overrides, None) {
            Ok(text) => panic!("{value}: check must refuse it:\n{text}"),
            Err(e) => format!("{e:#}"),
        };
        assert!(
            message.contains("boundary.dirichlet[0].z: the expression"),
            "{value}: {message}"
        );
        assert!(message.contains(time), "{value}: {message}");
        assert!(!message.contains("mesh.box"), "{value}: {message}");
        // the run is refused the same way, before its first step
        let dir = ScratchDir::new("units-dirichlet-time");
        let refused = run(
            &run_options(&input, dir.to_path_buf()).with_overrides(overrides),
            &sim::Quiet,
        )
        .unwrap_err();
        assert!(
            format!("{refused:#}").contains(time),
            "{value}: {refused:#}"
        );
    }
    let overrides = [
        r#"boundary.dirichlet=[{ set: xmin, x: 0, y: 0, z: 0 }, { set: xmax, z: "0.01 / (2 - t)" }]"#.to_string(),
        "loading.steps=4".to_string(),
    ];
    let text =
        hexfem_end_to_end::check(&input, &overrides, None).unwrap_or_else(|e| panic!("{e:#}"));
    assert!(text.contains("valid"), "{text}");
}

#[test]
fn clamped_twisted_and_symmetry_plane_bodies_are_held() {
    for input in ["cantilever_q1", "twisting_column", "neo_hookean_block"] {
        let text = hexfem_end_to_end::check(&inputs_dir().join(format!("{input}.yaml")), &[], None)
            .unwrap_or_else(|e| panic!("{input}: {e:#}"));
        assert!(text.contains("valid"), "{text}");
    }
}

/// `inputs/steel_bracket_si.yaml` (m, Pa, N): 1 kN on a 200 x 20 x 20 mm steel cantilever.
#[test]
fn the_si_steel_bracket_input_matches_beam_theory() {
    let dir = ScratchDir::new("units-bracket");
    let (outcome, summary) = run_in(&dir, "steel_bracket_si", vec![]);
    assert_eq!(summary["steps"][0]["newton_iterations"], 1);
    let exact = beam_deflection(2.1e11, 0.3, 0.2, 0.02, 0.02, 1000.0);
    let tip = max_uz(&outcome);
    assert!(
        (tip - exact).abs() < 0.02 * exact,
        "tip {tip:e} m vs beam theory {exact:e} m"
    );
}

/// A user `newton.atol` above the load (issue 30): every loaded step still takes a Newton update,
/// so the block moves as without it.
#[test]
fn an_absolute_tolerance_above_the_load_never_accepts_a_step_untouched() {
    let dir = ScratchDir::new("units-atol");
    let (loose, summary) = run_in(
        &dir,
        "neo_hookean_block",
        vec!["newton.atol=1.0".into(), "output.name=loose".into()],
    );
    let (tight, _) = run_in(&dir, "neo_hookean_block", vec!["output.name=tight".into()]);
    for step in summary["steps"].as_array().unwrap() {
        assert!(step["newton_iterations"].as_u64().unwrap() >= 1, "{step}");
    }
    let (a, b) = (max_uz(&loose), max_uz(&tight));
    assert!(a > 0.5 * b, "with atol 1: max |u_z| {a} against {b}");
}

/// A modulus in the wrong unit (MPa written where the loads are in Pa, say): the failed run says
/// "check units" with the displacement scale it saw, not only "more load steps".
#[test]
fn a_modulus_in_the_wrong_units_fails_with_check_units() {
    let message = run_error(
        "neo_hookean_block",
        &["materials.0.young_modulus=1.0e-5", "loading.max_cutbacks=2"],
    );
    assert!(message.contains("check units"), "{message}");
    assert!(message.contains("times its size"), "{message}");
}

/// The linear model's absurd answers are not reported as plain completions: a modulus of
/// 1e-300 overflows the state (the step fails with a units diagnosis, before it is written); a
/// unit cube crushed far past small strains (J < 0) completes with warnings in the step record.
#[test]
fn absurd_linear_answers_fail_or_warn() {
    let message = run_error("cantilever_q1", &["materials.0.young_modulus=1.0e-300"]);
    assert!(
        message.contains("the converged state is not finite") && message.contains("check units"),
        "{message}"
    );
    let dir = ScratchDir::new("units-crushed");
    let (_, summary) = run_in(
        &dir,
        "cantilever_q1",
        vec![
            "mesh.box={ cells: [2, 2, 2], lower: [0, 0, 0], upper: [1, 1, 1] }".into(),
            "materials.0.young_modulus=10.0".into(),
            "boundary.traction=[{ set: xmax, value: [-1000.0, 0, 0] }]".into(),
        ],
    );
    let warnings = summary["steps"][0]["warnings"].as_array().unwrap();
    let text: Vec<&str> = warnings.iter().map(|w| w.as_str().unwrap()).collect();
    assert!(
        text.iter()
            .any(|w| w.contains("implausible") && w.contains("check units"))
            && text.iter().any(|w| w.contains("cells are inverted")),
        "{text:?}"
    );
    // an ordinary run has none
    let dir = ScratchDir::new("units-plain");
    let (_, summary) = run_in(&dir, "cantilever_q1", Vec::new());
    assert!(summary["steps"][0].get("warnings").is_none(), "{summary}");
}
