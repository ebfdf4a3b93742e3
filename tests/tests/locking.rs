//! Nearly incompressible solids: `formulation: projected` removes the volumetric locking of the
//! displacement formulation. A Q1 cantilever at nu = 0.499 against Q2 on the same mesh, and
//! Cook's membrane at nu = 0.4999 (a box mapped onto its tapered panel, plane strain), linear
//! and neo-Hookean, where Q1 and Q2 converge under refinement to one tip displacement while
//! displacement-based Q1 stays locked.

use std::path::Path;

use hexfem_end_to_end::{run, run_options, ScratchDir};
use sim::RunOutcome;

fn inputs_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../inputs")
}

fn run_file(input: &Path, out: &Path, overrides: &[String]) -> RunOutcome {
    run(
        &run_options(input.to_path_buf(), out.to_path_buf())
            .with_overrides(overrides.iter().cloned()),
        &sim::Quiet,
    )
    .unwrap_or_else(|e| panic!("{} {overrides:?}: {e:#}", input.display()))
}

/// The probe column `column` of the last step.
fn probe(outcome: &RunOutcome, column: &str) -> f64 {
    *outcome
        .figures
        .probes
        .get(column)
        .unwrap_or_else(|| panic!("no probe {column}: {:?}", outcome.figures.probes))
}

/// Tip deflection of `inputs/cantilever_q1.yaml` (40 x 4 x 4 cells, 10 x 1 x 1, end shear) at
/// Poisson's ratio 0.499 with cells of `order` and `formulation` (`auto`: the key left out, the
/// default).
fn cantilever_tip(dir: &ScratchDir, order: usize, formulation: &str) -> f64 {
    let mut overrides = vec![
        "materials[0].poisson_ratio=0.499".to_string(),
        format!("mesh.box.order={order}"),
    ];
    if formulation != "auto" {
        overrides.push(format!("formulation={formulation}"));
    }
    overrides.extend([
        "linear_solver.method=direct".to_string(),
        "output.fields=[displacement]".to_string(),
        "output.probes={points: [{name: tip, at: [10, 0.5, 0.5]}]}".to_string(),
        format!("output.name=q{order}_{formulation}"),
    ]);
    let outcome = run_file(&inputs_dir().join("cantilever_q1.yaml"), dir, &overrides);
    // linear material, B-bar included: one Newton iteration (Q2 at nu = 0.499: the direct
    // solve's round-off lands just above rtol in either formulation, and a second one confirms)
    assert!(outcome.figures.newton_iterations <= order, "{overrides:?}");
    -probe(&outcome, "tip.uz")
}

#[test]
fn q1_cantilever_at_nu_0499_is_within_3_percent_of_q2_where_displacement_q1_locks() {
    let dir = ScratchDir::new("locking-cantilever");
    let reference = cantilever_tip(&dir, 2, "projected");
    let projected = cantilever_tip(&dir, 1, "projected");
    let locked = cantilever_tip(&dir, 1, "displacement");
    let q2 = cantilever_tip(&dir, 2, "displacement");
    let default = cantilever_tip(&dir, 1, "auto");
    eprintln!("tip: Q2 projected {reference}, Q1 projected {projected}, Q1 {locked}, Q2 {q2}, Q1 default {default}");
    // Q1 keeps some shear locking in bending (4 cells through the depth): still within 3 %
    assert!(
        (projected - reference).abs() < 0.03 * reference,
        "Q1 projected {projected} vs Q2 {reference}"
    );
    // the default (`auto`) is the projected formulation here, bit for bit
    assert_eq!(
        default.to_bits(),
        projected.to_bits(),
        "{default} vs {projected}"
    );
    assert!((default - reference).abs() < 0.03 * reference);
    // displacement Q1 is 40 % too stiff; displacement Q2 barely locks
    assert!(locked < 0.8 * reference, "Q1 {locked} vs Q2 {reference}");
    assert!(
        q2 < reference && q2 > 0.98 * reference,
        "Q2 {q2} vs {reference}"
    );
}

/// Cook's membrane as a box mapped onto the tapered panel (corners (0,0), (48,44), (48,60),
/// (0,44)), thickness 1 held in plane strain, clamped at x = 0, total shear 100 on x = 48;
/// E = 250, nu = 0.4999.
const COOK: &str = "\
mesh:
  box:
    cells: [4, 4, 1]
    order: 1
    corners: [[0, 0, 0], [48, 44, 0], [0, 44, 0], [48, 60, 0],
              [0, 0, 1], [48, 44, 1], [0, 44, 1], [48, 60, 1]]
materials:
  - { model: linear, young_modulus: 250.0, poisson_ratio: 0.4999 }
formulation: projected
boundary:
  dirichlet:
    - { set: xmin, x: 0.0, y: 0.0, z: 0.0 }
    - { set: zmin, z: 0.0 }
    - { set: zmax, z: 0.0 }
  traction:
    - { set: xmax, value: [0.0, 6.25, 0.0] }
linear_solver: { method: direct }
output:
  fields: [displacement]
  probes:
    points: [{ name: tip, at: [48, 60, 0.5] }]
";

/// Vertical tip displacement of Cook's membrane with `n x n` cells of `order`.
fn cook_tip(dir: &Path, model: &str, order: usize, n: usize, formulation: &str) -> f64 {
    let input = dir.join("cook.yaml");
    std::fs::write(&input, COOK).unwrap();
    let overrides = vec![
        format!("materials[0].model={model}"),
        format!("mesh.box.order={order}"),
        format!("mesh.box.cells=[{n}, {n}, 1]"),
        format!("formulation={formulation}"),
        // the neo-Hookean panel turns far (tip 6.7 of 44): four load steps
        format!("loading.steps={}", if model == "linear" { 1 } else { 4 }),
    ];
    probe(&run_file(&input, dir, &overrides), "tip.uy")
}

/// Q1 on `n x n` cells against Q2 on `n/2 x n/2` (the same nodes) for n = 4, 8, 16: the gap
/// shrinks and ends within `final_gap`; Q2 has converged to 1 %; displacement-based Q1 on the
/// finest mesh is locked far below.
fn cook_converges(model: &str, final_gap: f64) {
    let dir = ScratchDir::new(&format!("locking-cook-{model}"));
    let mut gaps = Vec::new();
    let (mut q1, mut q2) = (Vec::new(), Vec::new());
    for n in [4, 8, 16] {
        q1.push(cook_tip(&dir, model, 1, n, "projected"));
        q2.push(cook_tip(&dir, model, 2, n / 2, "projected"));
        let (a, b) = (q1[q1.len() - 1], q2[q2.len() - 1]);
        gaps.push((a - b).abs() / b);
    }
    eprintln!("{model}: Q1 {q1:?}, Q2 {q2:?}, gaps {gaps:?}");
    assert!(gaps.windows(2).all(|g| g[1] < 0.5 * g[0]), "{gaps:?}");
    assert!(gaps[2] < final_gap, "{gaps:?}");
    // Q1 approaches from below (too stiff on coarse meshes), Q2 is already close
    assert!(q1.windows(2).all(|w| w[1] > w[0]), "{q1:?}");
    assert!((q2[2] - q2[1]).abs() < 0.01 * q2[2], "{q2:?}");
    let locked = cook_tip(&dir, model, 1, 16, "displacement");
    assert!(
        locked < 0.5 * q2[2],
        "displacement Q1 {locked} vs {}",
        q2[2]
    );
}

#[test]
fn cook_membrane_q1_and_q2_converge_to_one_tip_displacement_linear() {
    cook_converges("linear", 0.02);
}

#[test]
fn cook_membrane_q1_and_q2_converge_to_one_tip_displacement_neo_hookean() {
    cook_converges("neo_hookean", 0.02);
}

/// The GPU runs the projected formulation too: the device accepts it (so `device: auto` takes the
/// GPU where there is one), `device: cuda` with it is a valid input, and `hexfem check` warns
/// where the displacement formulation meets a nearly incompressible material. (The GPU run
/// against the CPU run: `gpu_runs` in apps/hexfem.)
#[test]
fn projected_formulation_runs_on_the_device_and_check_warns_of_locking() {
    let input = inputs_dir().join("rubber_block_incompressible.yaml");
    let config = config::load(&input).unwrap();
    let problem = sim::locate::build_problem(&config).unwrap();
    assert_eq!(
        problem.discrete.assembler.kernel_of(0).formulation(),
        fem::Formulation::Projected
    );
    if let Err(why) = assembly::device::DeviceProblem::supports(&problem.discrete) {
        panic!("the device declines the projected formulation: {why}");
    }
    // the input leaves `formulation` out: `auto`, resolved to projected above (nu = 0.499)
    let cuda = config::load_with_overrides(&input, &["device=cuda".to_string()]).unwrap();
    assert_eq!(
        cuda.problem_params().unwrap().formulation,
        solve::params::FormulationChoice::Auto
    );
    let explicit = [
        "device=cuda".to_string(),
        "formulation=projected".to_string(),
    ];
    let cuda = config::load_with_overrides(&input, &explicit).unwrap();
    assert_eq!(
        cuda.problem_params().unwrap().formulation,
        solve::params::FormulationChoice::Every(fem::Formulation::Projected)
    );
    let check = |overrides: &[&str]| {
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        hexfem_end_to_end::check(&input, &overrides, None).unwrap()
    };
    let text = check(&[]);
    assert!(text.contains("projected volume ratio"), "{text}");
    assert!(!text.contains("warning"), "{text}");
    let text = check(&["formulation=displacement"]);
    assert!(
        text.contains("warning") && text.contains("lock volumetrically"),
        "{text}"
    );
    // below the limit (0.45 and more locks): no warning; at it, whatever the round-off of nu
    let text = check(&[
        "formulation=displacement",
        "materials[0].poisson_ratio=0.449",
    ]);
    assert!(!text.contains("warning"), "{text}");
    let text = check(&[
        "formulation=displacement",
        "materials[0].poisson_ratio=0.45",
    ]);
    assert!(text.contains("warning"), "{text}");
}

/// Every dataset of every step of the results `b` equals (bitwise) the same dataset of `a`, and
/// both have the same steps; returns the datasets compared.
fn assert_results_identical(a: &Path, b: &Path) -> usize {
    let (a, b) = (
        io::ResultsReader::open(a).unwrap(),
        io::ResultsReader::open(b).unwrap(),
    );
    let (paths_a, paths_b) = (a.dataset_paths().unwrap(), b.dataset_paths().unwrap());
    assert_eq!(paths_a, paths_b);
    let mut compared = 0;
    for path in paths_b.iter().filter(|p| p.starts_with("/steps/")) {
        let Ok((_, vb)) = b.read_f64(path) else {
            continue;
        };
        let (_, va) = a.read_f64(path).unwrap();
        assert_eq!(va.len(), vb.len(), "{path}");
        assert!(
            va.iter().zip(&vb).all(|(x, y)| x.to_bits() == y.to_bits()),
            "{path} differs"
        );
        compared += 1;
    }
    assert!(compared > 0);
    compared
}

/// The formulations the summary of `outcome` names, one per `materials` entry.
fn summary_formulations(outcome: &RunOutcome) -> Vec<String> {
    io::Summary::read(&outcome.summary)
        .unwrap()
        .run
        .formulations
}

/// `formulation: auto` (the default) runs the projected formulation on a nearly incompressible
/// material, bit for bit as an explicit `projected`, and the displacement formulation on a
/// compressible one, bit for bit as an explicit `displacement` (existing inputs unchanged); the
/// summary names the choice.
#[test]
fn auto_formulation_is_projected_where_displacement_locks_and_displacement_elsewhere() {
    let dir = ScratchDir::new("locking-auto");
    let input = inputs_dir().join("cantilever_q1.yaml");
    for (nu, explicit) in [("0.4999", "projected"), ("0.3", "displacement")] {
        let run = |formulation: Option<&str>| {
            let mut overrides = vec![
                format!("materials[0].poisson_ratio={nu}"),
                format!("output.name=nu{nu}_{}", formulation.unwrap_or("auto")),
            ];
            overrides.extend(formulation.map(|f| format!("formulation={f}")));
            run_file(&input, &dir, &overrides)
        };
        let (auto, fixed) = (run(None), run(Some(explicit)));
        assert_eq!(summary_formulations(&auto), [explicit], "nu {nu}");
        assert_eq!(summary_formulations(&fixed), [explicit], "nu {nu}");
        assert_eq!(
            auto.figures.newton_iterations,
            fixed.figures.newton_iterations
        );
        assert_eq!(
            auto.figures.linear_iterations,
            fixed.figures.linear_iterations
        );
        assert_results_identical(&auto.h5, &fixed.h5);
    }
}

/// The resolution per material and order, from the small-strain Poisson's ratio of every model
/// (Young's modulus and Poisson's ratio, Lame's, bulk and shear moduli): Q1 projected from 0.45,
/// Q2 from 0.49; a mesh of a compressible and a nearly incompressible material runs each group
/// with its own formulation, and `check` says which.
#[test]
fn auto_formulation_resolves_per_material_and_order() {
    let formulations = |input: &str, overrides: &[&str]| {
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        let config = config::load_with_overrides(&inputs_dir().join(input), &overrides).unwrap();
        let problem = sim::locate::build_problem(&config).unwrap();
        let names: Vec<&str> = problem
            .discrete
            .assembler
            .materials()
            .formulations()
            .iter()
            .map(|f| f.name())
            .collect();
        names.join(",")
    };
    let q1 = |nu: &str, order: usize| {
        formulations(
            "cantilever_q1.yaml",
            &[
                &format!("materials[0].poisson_ratio={nu}"),
                &format!("mesh.box.order={order}"),
            ],
        )
    };
    assert_eq!(q1("0.3", 1), "displacement");
    assert_eq!(q1("0.449", 1), "displacement");
    assert_eq!(q1("0.45", 1), "projected");
    assert_eq!(q1("0.45", 2), "displacement");
    assert_eq!(q1("0.49", 2), "projected");
    // bulk and shear moduli: kappa = 50, mu = 10 is nu = 0.41; kappa = 1e5 is nu = 0.49995
    assert_eq!(formulations("twisting_column.yaml", &[]), "displacement");
    assert_eq!(
        formulations("twisting_column.yaml", &["materials[0].kappa=1.0e5"]),
        "projected"
    );
    // Lame-type moduli: Mooney-Rivlin's lambda = 400, mu1 + mu2 = 80 (nu 0.43) stays
    assert_eq!(formulations("cook_membrane.yaml", &[]), "displacement");
    assert_eq!(
        formulations("cook_membrane.yaml", &["materials[0].lambda=1.0e5"]),
        "projected"
    );
    let rubber_middle = ["materials[1].poisson_ratio=0.4999"];
    assert_eq!(
        formulations("layered_bar.yaml", &rubber_middle),
        "displacement,projected,displacement"
    );
    let text = hexfem_end_to_end::check(
        &inputs_dir().join("layered_bar.yaml"),
        &rubber_middle.map(String::from),
        None,
    )
    .unwrap();
    assert!(
        text.contains("auto: displacement for materials[0]")
            && text.contains("projected volume ratio (mean dilatation")
            && text.contains("for materials[1], Poisson's ratio 0.4999")
            && !text.contains("warning"),
        "{text}"
    );
}

/// A bar of compressible and nearly incompressible layers runs with both formulations at once:
/// it converges, the summary names each layer's formulation, and it bends further than with the
/// displacement formulation everywhere (whose rubber layer locks), less than with the projected
/// formulation everywhere (which also relaxes the compressible layers, by a few per cent).
#[test]
fn mixed_formulations_run_in_one_mesh() {
    let dir = ScratchDir::new("locking-mixed");
    let input = inputs_dir().join("layered_bar.yaml");
    let run = |formulation: &str| {
        let mut overrides = vec![
            "materials[1].poisson_ratio=0.4999".to_string(),
            format!("output.name={formulation}"),
        ];
        if formulation != "auto" {
            overrides.push(format!("formulation={formulation}"));
        }
        run_file(&input, &dir, &overrides)
    };
    let auto = run("auto");
    assert_eq!(
        summary_formulations(&auto),
        ["displacement", "projected", "displacement"]
    );
    let tip = |o: &RunOutcome| o.figures.max_displacement;
    let (mixed, locked, projected) = (
        tip(&auto),
        tip(&run("displacement")),
        tip(&run("projected")),
    );
    eprintln!("max displacement: auto {mixed}, displacement {locked}, projected {projected}");
    // each projected layer relaxes a constraint: auto (one layer) lies strictly between
    assert!(
        mixed > 1.02 * locked,
        "auto {mixed} vs displacement {locked}"
    );
    assert!(
        mixed < projected && mixed > 0.95 * projected,
        "auto {mixed} vs projected {projected}"
    );
}
