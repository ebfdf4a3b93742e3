//! Loading, overrides, error messages and validation of whole configuration files.

use std::fs;
use std::path::{Path, PathBuf};

use super::*;

const FILE: &str = "cases/beam.yaml";

/// A configuration that sets every field to a value other than its default.
const FULL: &str = "\
mesh:
  box:
    cells: [8, 2, 3]
    order: 2
    corners: [[0, 0, 0], [10, 0, 0], [0, 2, 0], [10, 2.5, 0],
              [0, 0, 2], [10, 0, 2], [0, 2, 2], [10, 2.5, 2]]
materials:
  - model: neo_hookean
    young_modulus: 1.0e3
    poisson_ratio: 0.3
  - cells: core
    model: mooney_rivlin
    lambda: 400.0
    mu1: 100.0
    mu2: 20.0
  - { cells: skin, model: decoupled_neo_hookean, kappa: 50, mu: 3 }
body_force: [0, -9.81, 0.5]
boundary:
  dirichlet:
    - { set: xmin, x: 0.0, y: 0.0, z: 0.0 }
    - { set: ymin, y: -0.25 }
  twist:
    - { set: zmax, axis: [0, 0, 1], center: [0.5, 0.5, 4], angle_deg: 90, axial: 0.1 }
  traction:
    - { set: xmax, value: [0, 0, -1.0e-3] }
loading: { steps: 4, min_increment: 1.0e-4, max_cutbacks: 6, growth: 2.0 }
newton: { rtol: 1.0e-6, atol: 1.0e-9, stol: 0.0, max_iterations: 40, line_search: residual, max_line_search: 3, forcing: fixed }
linear_solver: { method: direct, rtol: 1.0e-10, atol: 1.0e-14, max_iterations: 50, amg: { max_levels: 4 } }
quadrature: { points: 4 }
formulation: projected
output: { directory: out/runs, name: beam_q2, fields: [von_mises, displacement] }
";

/// The smallest valid configuration.
const MINIMAL: &str = "\
mesh: { box: { cells: [2, 1, 1] } }
materials:
  - { model: linear, lambda: 1.0, mu: 1.0 }
";

fn load_text(text: &str) -> Result<Config, ConfigError> {
    load_str(text, Path::new(FILE), &[])
}

fn load_set(text: &str, overrides: &[&str]) -> Result<Config, ConfigError> {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    load_str(text, Path::new(FILE), &overrides)
}

/// The rendered error of loading `text`, asserting it names the file at `line:column`.
fn error_at(text: &str, line: u32, column: u32) -> String {
    let err = load_text(text).expect_err("the configuration should be rejected");
    let rendered = err.to_string();
    assert!(
        rendered.starts_with(&format!("{FILE}:{line}:{column}: ")),
        "expected {FILE}:{line}:{column}, got:\n{rendered}"
    );
    assert_eq!(err.line_column(), Some((line, column)));
    rendered
}

/// A fresh directory under the system's temporary directory, removed with its files when dropped
/// (also when a test panics), so that no test leaves files behind.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("hexfem-config-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("cannot create a scratch directory");
        ScratchDir(dir)
    }
}

impl std::ops::Deref for ScratchDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn every_field_is_read() {
    let c = load_text(FULL).unwrap();
    let MeshSource::Box(mesh) = &c.mesh else {
        panic!("expected a box mesh")
    };
    assert_eq!(mesh.cells, [8, 2, 3]);
    assert_eq!(mesh.order, 2);
    assert_eq!(mesh.corner_points()[3], [10.0, 2.5, 0.0]);
    assert_eq!(mesh.corner_points()[6], [0.0, 2.0, 2.0]);

    assert_eq!(c.materials.len(), 3);
    assert_eq!(c.materials[0].cells, CellSelection::All);
    assert_eq!(c.materials[0].model, MaterialModel::NeoHookean);
    assert_eq!(c.materials[0].young_modulus, Some(1.0e3));
    assert_eq!(c.materials[0].poisson_ratio, Some(0.3));
    assert_eq!(c.materials[1].cells, CellSelection::Set("core".into()));
    assert_eq!(
        c.materials[1].material().unwrap(),
        fem::Material::MooneyRivlin {
            lambda: 400.0,
            mu1: 100.0,
            mu2: 20.0
        }
    );
    assert_eq!(
        c.materials[2].material().unwrap(),
        fem::Material::DecoupledNeoHookean {
            kappa: 50.0,
            mu: 3.0
        }
    );
    assert_eq!(c.body_force, [0.0, -9.81, 0.5]);

    let b = &c.boundary;
    assert_eq!(
        b.dirichlet[0].components(),
        [const { Some(params::Scalar::Number(0.0)) }; 3]
    );
    assert_eq!(b.dirichlet[1].set, "ymin");
    assert_eq!(
        b.dirichlet[1].components(),
        [None, Some(params::Scalar::Number(-0.25)), None]
    );
    let t = &b.twist[0];
    assert_eq!(
        (t.set.as_str(), t.axis, t.center),
        ("zmax", [0.0, 0.0, 1.0], [0.5, 0.5, 4.0])
    );
    assert_eq!((t.angle_deg, t.axial), (90.0, 0.1));
    assert_eq!(b.traction[0].set, "xmax");
    assert_eq!(b.traction[0].value, [0.0, 0.0, -1.0e-3]);

    assert_eq!(
        c.loading,
        LoadingParams {
            steps: 4,
            min_increment: 1.0e-4,
            max_cutbacks: 6,
            growth: 2.0,
            curve: Vec::new(),
        }
    );
    assert_eq!(
        c.newton,
        NewtonParams {
            rtol: 1.0e-6,
            atol: 1.0e-9,
            stol: 0.0,
            max_iterations: 40,
            line_search: LineSearch::Residual,
            max_line_search: 3,
            forcing: Forcing::Fixed,
        }
    );
    assert_eq!(
        c.linear_solver,
        LinearSolverParams {
            method: LinearSolverMethod::Direct,
            rtol: 1.0e-10,
            atol: 1.0e-14,
            max_iterations: 50,
            amg: amg::AmgParams {
                max_levels: 4,
                ..amg::AmgParams::default()
            }
        }
    );
    assert_eq!(c.quadrature.points_for(2), 4);
    assert_eq!(c.formulation, ElementFormulation::Projected);
    assert_eq!(
        c.problem_params().unwrap().formulation,
        solve::params::FormulationChoice::Every(fem::Formulation::Projected)
    );
    assert_eq!(c.output.directory, PathBuf::from("out/runs"));
    assert_eq!(c.output.name.as_deref(), Some("beam_q2"));
    assert_eq!(
        c.output.fields,
        [OutputField::VonMises, OutputField::Displacement]
    );
    assert!(!c.output.wants(OutputField::Reaction));
}

#[test]
fn serialized_config_loads_back_unchanged() {
    // JSON is YAML: serialise every field, read the text back, compare.
    for text in [FULL, MINIMAL] {
        let first = load_text(text).unwrap();
        let json = serde_json::to_string_pretty(&first).unwrap();
        let second = load_text(&json).unwrap_or_else(|e| panic!("{e}\n{json}"));
        assert_eq!(
            serde_json::to_value(&first).unwrap(),
            serde_json::to_value(&second).unwrap()
        );
        assert_eq!(first.mesh, second.mesh);
        assert_eq!(first.materials, second.materials);
        assert_eq!(first.boundary, second.boundary);
        assert_eq!(first.output, second.output);
    }
}

#[test]
fn omitted_sections_take_documented_defaults() {
    let c = load_text(MINIMAL).unwrap();
    let MeshSource::Box(mesh) = &c.mesh else {
        panic!("expected a box mesh")
    };
    assert_eq!(mesh.order, 1);
    assert_eq!(mesh.corner_points()[0], [0.0; 3]);
    assert_eq!(mesh.corner_points()[7], [1.0; 3]);
    assert_eq!(mesh.corner_points()[5], [1.0, 0.0, 1.0]);
    assert_eq!(c.body_force, [0.0; 3]);
    assert_eq!(c.boundary, BoundaryParams::default());
    assert_eq!(c.loading.steps, 1);
    assert_eq!(c.loading.min_increment, 1.0e-3);
    assert_eq!(c.loading.max_cutbacks, 10);
    assert_eq!(c.loading.growth, 1.5);
    assert_eq!(c.newton.rtol, 1.0e-8);
    assert_eq!(c.newton.atol, 0.0);
    assert_eq!(c.newton.stol, 1.0e-12);
    assert_eq!(c.newton.max_iterations, 25);
    assert_eq!(c.newton.line_search, LineSearch::Energy);
    assert_eq!(c.newton.max_line_search, 8);
    assert_eq!(c.newton.forcing, Forcing::EisenstatWalker);
    assert_eq!(c.linear_solver.method, LinearSolverMethod::Auto);
    assert_eq!(c.linear_solver.amg, amg::AmgParams::default());
    assert_eq!(c.linear_solver.rtol, 1.0e-8);
    assert_eq!(c.linear_solver.atol, 0.0);
    assert_eq!(c.linear_solver.max_iterations, 2000);
    assert_eq!(c.quadrature.points, None);
    assert_eq!(c.quadrature.points_for(1), 2);
    assert_eq!(c.formulation, ElementFormulation::Auto);
    assert_eq!(
        c.problem_params().unwrap().formulation,
        solve::params::FormulationChoice::Auto
    );
    assert_eq!(c.output.directory, PathBuf::from("results"));
    // The default output name is the configuration file's stem.
    assert_eq!(c.output.name.as_deref(), Some("beam"));
    assert_eq!(c.output.fields, OutputField::ALL);
    assert_eq!(c.source.file, PathBuf::from(FILE));
}

#[test]
fn misspelled_key_suggests_the_right_one_and_lists_all() {
    let text = "mesh: { box: { cells: [2, 1, 1] } }\nmaterials:\n  - modle: linear\n";
    let msg = error_at(text, 3, 5);
    assert!(
        msg.contains("materials[0].modle: unknown key `modle` (did you mean `model`?)"),
        "{msg}"
    );
    assert!(
        msg.contains(
            "valid keys: cells, model, young_modulus, poisson_ratio, lambda, mu, kappa, mu1, mu2"
        ),
        "{msg}"
    );
    // The offending line is quoted with a caret under the key.
    assert!(msg.ends_with("3 |   - modle: linear\n  |     ^"), "{msg}");

    let msg = error_at(&format!("{MINIMAL}newtn: {{ rtol: 1e-6 }}\n"), 4, 1);
    assert!(msg.contains("did you mean `newton`?"), "{msg}");
    assert!(
        msg.contains("valid keys: mesh, materials, body_force, boundary"),
        "{msg}"
    );
}

#[test]
fn wrong_types_point_at_the_value() {
    let msg = error_at(&format!("{MINIMAL}loading: {{ steps: many }}\n"), 4, 19);
    assert!(
        msg.contains("loading.steps: invalid type: string \"many\""),
        "{msg}"
    );
    let msg = error_at(&format!("{MINIMAL}loading: {{ steps: 1.5 }}\n"), 4, 19);
    assert!(msg.contains("loading.steps"), "{msg}");
    let msg = error_at(&format!("{MINIMAL}body_force: [0, 1]\n"), 4, 13);
    assert!(msg.contains("body_force"), "{msg}");
    let msg = error_at(&format!("{MINIMAL}body_force: [0, 1, 2, 3]\n"), 4, 13);
    assert!(msg.contains("expected 3 entries, found 4"), "{msg}");
    // expressions of x, y, z: parsed when loaded, a bad one located at its component
    let c = load_text(&format!(
        "{MINIMAL}body_force: [\"2 * sin(PI * x)\", 0, -1]\n"
    ))
    .unwrap();
    let p = c.problem_params().unwrap();
    assert!(
        (p.body_force[0].at([0.25, 0.0, 0.0]) - 2.0 * (std::f64::consts::PI / 4.0).sin()).abs()
            < 1e-15
    );
    assert_eq!(p.body_force[2], -1.0);
    let msg = error_at(&format!("{MINIMAL}body_force: [0, \"x + w\", 0]\n"), 4, 17);
    assert!(
        msg.contains("body_force[1]") && msg.contains("unknown variable `w`"),
        "{msg}"
    );
    let msg = error_at(&format!("{MINIMAL}newton: {{ line_search: 3 }}\n"), 4, 24);
    assert!(msg.contains("newton.line_search"), "{msg}");
    // the former boolean names its replacement's choices
    let msg = error_at(
        &format!("{MINIMAL}newton: {{ line_search: false }}\n"),
        4,
        24,
    );
    assert!(
        msg.contains("newton.line_search") && msg.contains("energy") && msg.contains("none"),
        "{msg}"
    );
}

#[test]
fn unknown_material_model_lists_the_five_models() {
    let text = "mesh: { box: { cells: [2, 1, 1] } }\nmaterials:\n  - { model: neo_hooke, mu: 1 }\n";
    let msg = error_at(text, 3, 14);
    assert!(
        msg.contains("materials[0].model: unknown choice `neo_hooke`"),
        "{msg}"
    );
    assert!(msg.contains("did you mean `neo_hookean`?"), "{msg}");
    assert!(
        msg.contains(
            "valid choices: linear, saint_venant_kirchhoff, neo_hookean, decoupled_neo_hookean, \
             mooney_rivlin"
        ),
        "{msg}"
    );
    let msg = error_at(
        &format!("{MINIMAL}linear_solver: {{ method: amg }}\n"),
        4,
        26,
    );
    assert!(
        msg.contains("valid choices: auto, cg_amg, cg_jacobi, direct"),
        "{msg}"
    );
}

/// `output.precision` is `double` unless set; `single` parses; another value is an error at
/// its line and column naming the valid choices.
#[test]
fn output_precision_is_double_or_single() {
    let c = load_text(MINIMAL).unwrap();
    assert_eq!(c.output.precision, crate::OutputPrecision::Double);
    let c = load_text(&format!("{MINIMAL}output: {{ precision: single }}\n")).unwrap();
    assert_eq!(c.output.precision, crate::OutputPrecision::Single);
    let msg = error_at(&format!("{MINIMAL}output: {{ precision: half }}\n"), 4, 22);
    assert!(msg.contains("valid choices: double, single"), "{msg}");
}

#[test]
fn device_is_a_top_level_key_auto_cpu_or_cuda_and_cuda_is_iterative_only() {
    let msg = error_at(&format!("{MINIMAL}device: gpu\n"), 4, 9);
    assert!(msg.contains("valid choices: auto, cpu, cuda"), "{msg}");
    let msg = error_at(
        &format!("{MINIMAL}device: cuda\nlinear_solver: {{ method: direct }}\n"),
        4,
        9,
    );
    assert!(msg.contains("device"), "{msg}");
    assert!(msg.contains("host-only"), "{msg}");
    // the key moved: under `linear_solver` it is unknown
    let msg = error_at(
        &format!("{MINIMAL}linear_solver: {{ device: cuda }}\n"),
        4,
        18,
    );
    assert!(msg.contains("device"), "{msg}");
    for (text, device) in [
        ("auto", solve::params::DeviceChoice::Auto),
        ("cpu", solve::params::DeviceChoice::Cpu),
        ("cuda", solve::params::DeviceChoice::Cuda),
    ] {
        let c = load_text(&format!("{MINIMAL}device: {text}\n")).unwrap();
        let plain = c.linear_solver_params();
        assert_eq!(plain.device, device);
        assert_eq!(LinearSolverParams::from(plain), c.linear_solver);
    }
    let c = load_text(MINIMAL).unwrap();
    assert_eq!(c.device, ComputeDevice::Auto);
    assert_eq!(
        c.linear_solver_params().device,
        solve::params::DeviceChoice::Auto
    );
}

#[test]
fn formulation_is_a_top_level_key_and_runs_on_every_device() {
    let msg = error_at(&format!("{MINIMAL}formulation: b_bar\n"), 4, 14);
    assert!(
        msg.contains("valid choices: auto, displacement, projected"),
        "{msg}"
    );
    // under `quadrature` it is unknown
    let msg = error_at(
        &format!("{MINIMAL}quadrature: {{ formulation: projected }}\n"),
        4,
        15,
    );
    assert!(msg.contains("formulation"), "{msg}");
    use solve::params::FormulationChoice;
    for (text, want) in [
        ("auto", FormulationChoice::Auto),
        (
            "displacement",
            FormulationChoice::Every(fem::Formulation::Displacement),
        ),
        (
            "projected",
            FormulationChoice::Every(fem::Formulation::Projected),
        ),
    ] {
        for device in ["auto", "cuda", "cpu"] {
            let c =
                load_text(&format!("{MINIMAL}formulation: {text}\ndevice: {device}\n")).unwrap();
            assert_eq!(c.problem_params().unwrap().formulation, want);
        }
    }
    let c = load_set(MINIMAL, &["formulation=projected"]).unwrap();
    assert_eq!(c.formulation, ElementFormulation::Projected);
}

#[test]
fn mesh_must_be_given_exactly_once() {
    let msg = error_at(
        "materials:\n  - { model: linear, lambda: 1, mu: 1 }\n",
        1,
        1,
    );
    assert!(msg.contains("missing key `mesh`"), "{msg}");

    let both = "mesh:\n  box: { cells: [1, 1, 1] }\n  gmsh: { file: a.msh }\nmaterials: []\n";
    let msg = error_at(both, 2, 3);
    assert!(
        msg.contains("expected exactly one of the keys box | gmsh, found box, gmsh"),
        "{msg}"
    );

    let msg = error_at("mesh:\n  bx: { cells: [1, 1, 1] }\nmaterials: []\n", 2, 3);
    assert!(msg.contains("did you mean `box`?"), "{msg}");

    let msg = error_at("mesh: {}\nmaterials: []\n", 1, 7);
    assert!(msg.contains("found none"), "{msg}");

    let msg = error_at("", 1, 1);
    assert!(
        msg.contains("invalid type: unit value, expected struct Config"),
        "{msg}"
    );
}

#[test]
fn yaml_syntax_errors_carry_the_parser_position() {
    let msg = error_at("mesh: { box: { cells: [2, 1, 1] }\nmaterials: []\n", 2, 1);
    assert_eq!(
        load_text("mesh: [1\n").unwrap_err().kind(),
        ErrorKind::Syntax
    );
    assert!(msg.contains("materials: []"), "{msg}");
    let msg = error_at(
        &format!("{MINIMAL}loading: {{ steps: 1 }}\nloading: {{}}\n"),
        5,
        1,
    );
    assert!(msg.contains("duplicate"), "{msg}");
}

#[test]
fn overrides_change_values_and_create_keys() {
    let c = load_set(
        FULL,
        &[
            "newton.rtol=1e-4",
            "materials[1].mu2=0",
            "materials.0.model=saint_venant_kirchhoff",
            "boundary.dirichlet[1].z=0.5",
            "body_force=[1, 2, 3]",
            "output.name=other",
            "quadrature.points=null",
        ],
    )
    .unwrap();
    assert_eq!(c.newton.rtol, 1e-4);
    assert_eq!(c.materials[1].mu2, Some(0.0));
    assert_eq!(c.materials[0].model, MaterialModel::SaintVenantKirchhoff);
    assert_eq!(
        c.boundary.dirichlet[1].components(),
        [
            None,
            Some(params::Scalar::Number(-0.25)),
            Some(params::Scalar::Number(0.5))
        ]
    );
    assert_eq!(c.body_force, [1.0, 2.0, 3.0]);
    assert_eq!(c.output.name.as_deref(), Some("other"));
    assert_eq!(c.quadrature.points, None);

    // Sections absent from the file are created.
    let c = load_set(
        MINIMAL,
        &[
            "loading.steps=5",
            "boundary.traction=[{set: top, value: [0, 0, 1]}]",
        ],
    )
    .unwrap();
    assert_eq!(c.loading.steps, 5);
    assert_eq!(c.boundary.traction[0].set, "top");
}

#[test]
fn bad_overrides_name_the_argument() {
    let cases: [(&str, &[&str]); 8] = [
        (
            "newton.rtoll=1e-6",
            &["newton.rtoll", "did you mean `rtol`?"],
        ),
        (
            "loading.steps=many",
            &["loading.steps", "invalid type: string \"many\""],
        ),
        (
            "materials[0].model=rubber",
            &["valid choices: linear, saint_venant_kirchhoff"],
        ),
        (
            "materials[4].mu=1",
            &["index [4] is out of range: `materials` has 1 entries"],
        ),
        ("newton.rtol", &["expected `key.path=value`"]),
        ("body_force=[1, 2", &["is not valid YAML"]),
        (
            "materials[0].mu=.nan",
            &["not finite", "(.nan, .inf) are refused"],
        ),
        ("body_force=[0, -.INF, 0]", &["not finite"]),
    ];
    for (arg, expected) in cases {
        let err = load_set(MINIMAL, &[arg]).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!("{FILE}: --set `{arg}`: ")),
            "{msg}"
        );
        for part in expected {
            assert!(msg.contains(part), "{arg}: missing `{part}` in\n{msg}");
        }
        assert_eq!(err.origin(), Some(&Origin::Override(arg.to_owned())));
    }
    // A value set to something the validation rejects also names the argument.
    let msg = load_set(MINIMAL, &["loading.steps=0"])
        .unwrap_err()
        .to_string();
    assert!(
        msg.starts_with(&format!(
            "{FILE}: --set `loading.steps=0`: loading.steps: must be"
        )),
        "{msg}"
    );
}

#[test]
fn semantic_errors_name_the_key_and_its_line() {
    let head = "mesh: { box: { cells: [2, 1, 1] } }\n";
    let msg = error_at(
        &format!("{head}materials:\n  - {{ model: linear, lambda: 1, mu: 1 }}\n  - model: neo_hookean\n    young_modulus: 10\n"),
        4,
        5,
    );
    assert!(msg.contains("materials[1]: model `neo_hookean` takes exactly one of the parameter sets (young_modulus, poisson_ratio) or (lambda, mu); given: young_modulus"), "{msg}");

    let msg = error_at(
        &format!(
            "{head}materials:\n  - model: linear\n    young_modulus: 10\n    poisson_ratio: 0.5\n"
        ),
        5,
        20,
    );
    assert!(msg.contains("materials[0].poisson_ratio: `poisson_ratio` = 0.5 is out of range: must satisfy -1 < nu < 0.5"), "{msg}");

    let cases: [(&str, u32, u32, &str); 15] = [
        ("mesh: { box: { cells: [2, 0, 1] } }", 1, 23, "mesh.box.cells: every count must be > 0"),
        ("mesh: { box: { cells: [2, 1, 1], order: 3 } }", 1, 41, "mesh.box.order: must be 1 or 2"),
        ("mesh: { box: { cells: [1, 1, 1], lower: [0, 0, 0], upper: [1, 0, 1] } }", 1, 59, "must be below `upper`"),
        ("mesh: { box: { cells: [1, 1, 1], upper: [1, 1, 1], corners: [[0,0,0],[1,0,0],[0,1,0],[1,1,0],[0,0,1],[1,0,1],[0,1,1],[1,1,1]] } }", 1, 61, "not both"),
        ("mesh: { box: { cells: [1, 1, 1], corners: [[1,0,0],[0,0,0],[0,1,0],[1,1,0],[0,0,1],[1,0,1],[0,1,1],[1,1,1]] } }", 1, 43, "inverted or degenerate at corner 0"),
        ("mesh: { box: { cells: [1, 1, 1], corners: [[0,0,0],[1,0,0],[0,1,0],[1,1,0],[0,0,1e-12],[1,0,1e-12],[0,1,1e-12],[1,1,1e-12]] } }", 1, 43, "mesh.box.corners: the mapped box is flat at corner 0: it is 1e-12 thick across its edges from corner 0 to corner 4"),
        ("boundary: { dirichlet: [ { set: xmin } ] }", 1, 26, "boundary.dirichlet[0]: give at least one of `x`, `y`, `z`"),
        ("boundary: { twist: [ { set: a, axis: [0, 0, 0], center: [0, 0, 0], angle_deg: 1 } ] }", 1, 38, "boundary.twist[0].axis: must be nonzero"),
        ("boundary: { twist: [ { set: a, axis: [0, 1.0e-310, 0], center: [0, 0, 0], angle_deg: 1 } ] }", 1, 38, "boundary.twist[0].axis: is too small to give a direction"),
        ("loading: { min_increment: 2.0 }", 1, 27, "loading.min_increment: must satisfy 0 < value <= 1"),
        ("newton: { rtol: 0 }", 1, 17, "newton.rtol: must satisfy 0 < rtol < 1"),
        ("quadrature: { points: 0 }", 1, 23, "quadrature.points: must be in 1..=6"),
        ("linear_solver: { amg: { max_levels: 0 } }", 1, 37, "linear_solver.amg.max_levels: 0 must be >= 1"),
        ("output: { name: a/b }", 1, 17, "output.name: `a/b` is not a plain file name"),
        ("output: { fields: [jacobian, von_mises, jacobian] }", 1, 41, "output.fields[2]: field listed twice"),
    ];
    for (extra, line, column, expected) in cases {
        let text = if extra.starts_with("mesh:") {
            format!("{extra}\nmaterials: [ {{ model: linear, lambda: 1, mu: 1 }} ]\n")
        } else {
            format!("{extra}\n{MINIMAL}")
        };
        let msg = error_at(&text, line, column);
        assert!(msg.contains(expected), "expected `{expected}` in\n{msg}");
    }

    // A key left at its default is reported at its section.
    let msg = error_at(
        &format!("{MINIMAL}newton:\n  line_search: energy\n  max_line_search: 0\n"),
        6,
        20,
    );
    assert!(
        msg.contains("newton.max_line_search: must be >= 1"),
        "{msg}"
    );
    let msg = load_text(&format!("{MINIMAL}materials: []\n"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("duplicate"), "{msg}");
    let msg = error_at(
        "mesh: { box: { cells: [2, 1, 1] } }\nmaterials: []\n",
        2,
        12,
    );
    assert!(
        msg.contains("materials: at least one material entry is required"),
        "{msg}"
    );
}

/// An expression's text is bounded (exmex parses in time quadratic in its length: 32,000 terms
/// took 24 s; main before issue 30 had no limit): a longer one is refused at its component,
/// naming the limit, without being parsed.
#[test]
fn expressions_longer_than_the_limit_are_refused() {
    let long = format!("x{}", " + x".repeat(2_500));
    assert_eq!(long.len(), 10_001);
    let msg = error_at(&format!("{MINIMAL}body_force: [0, \"{long}\", 0]\n"), 4, 17);
    assert!(
        msg.contains("body_force[1]")
            && msg.contains("10001 characters")
            && msg.contains("at most 10000"),
        "{msg}"
    );
    // the message quotes only the expression's start
    assert!(msg.len() < 1_000, "{} characters", msg.len());
    let at_limit = format!("x{}", " + x".repeat(2_499));
    let c = load_text(&format!("{MINIMAL}body_force: [0, \"{at_limit}\", 0]\n")).unwrap();
    assert!((c.problem_params().unwrap().body_force[1].at([0.5, 0.0, 0.0]) - 1250.0).abs() < 1e-9);
}

/// `loading.steps` is bounded: a run of 2^64 - 1 steps would write until the disk is full (main
/// before issue 30 accepted it).
#[test]
fn loading_steps_beyond_the_limit_are_refused() {
    for steps in ["1000001", "18446744073709551615"] {
        let msg = error_at(&format!("loading: {{ steps: {steps} }}\n{MINIMAL}"), 1, 19);
        assert!(
            msg.contains("loading.steps: must be in 1..=1000000"),
            "{msg}"
        );
    }
    let c = load_text(&format!("loading: {{ steps: 1000000 }}\n{MINIMAL}")).unwrap();
    assert_eq!(c.loading.steps, 1_000_000);
}

#[test]
fn validate_reports_configs_built_in_code() {
    let mut c = load_text(MINIMAL).unwrap();
    c.source = Source::default();
    c.loading.growth = 0.5;
    let err = c.validate().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Invalid);
    assert_eq!(err.key_path(), Some("loading.growth"));
    assert_eq!(err.line_column(), None);
    assert_eq!(err.to_string(), ": loading.growth: must be >= 1");
}

#[test]
fn gmsh_paths_are_relative_to_the_configuration_file() {
    let dir = ScratchDir::new("gmsh");
    fs::create_dir_all(dir.join("meshes")).unwrap();
    fs::write(
        dir.join("meshes/cook.msh"),
        "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n",
    )
    .unwrap();
    let yaml = dir.join("cook.yaml");
    let text = "mesh: { gmsh: { file: meshes/cook.msh } }\nmaterials: [ { model: linear, lambda: 1, mu: 1 } ]\n";
    fs::write(&yaml, text).unwrap();
    let c = load(&yaml).unwrap();
    assert_eq!(
        c.mesh,
        MeshSource::Gmsh(GmshMesh {
            scale: 1.0,
            file: dir.join("meshes/cook.msh")
        })
    );
    assert_eq!(c.output.name.as_deref(), Some("cook"));

    let err = load_with_overrides(&yaml, &["mesh.gmsh.file=missing.msh".to_owned()]).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("--set `mesh.gmsh.file=missing.msh`: mesh.gmsh.file: no such file"),
        "{msg}"
    );

    // what is there instead of a mesh file is named (main before issue 30: "no such file")
    let set = |file: &str| vec![format!("mesh.gmsh.file={file}")];
    let msg = load_with_overrides(&yaml, &set("meshes"))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("mesh.gmsh.file: ") && msg.contains("meshes is a directory, not a file"),
        "{msg}"
    );
    let msg = load_with_overrides(&yaml, &set("/dev/null"))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("/dev/null is not a regular file (a device, FIFO or socket)"),
        "{msg}"
    );

    let err = load(&dir.join("absent.yaml")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io);
    assert!(
        err.to_string()
            .contains("absent.yaml: cannot read the configuration"),
        "{err}"
    );
}

#[test]
fn every_input_file_loads() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../inputs");
    let Ok(entries) = fs::read_dir(&dir) else {
        panic!("no inputs directory at {}", dir.display());
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    for file in &files {
        if let Err(e) = load(file) {
            panic!("{e}");
        }
    }
    eprintln!("{} input files load", files.len());
}

#[test]
fn amg_precision_is_double_or_mixed_and_a_bad_value_is_located_with_the_choices() {
    let c = load_text(MINIMAL).unwrap();
    assert_eq!(c.linear_solver.amg.precision, amg::Precision::Double);
    let c = load_text(&format!(
        "{MINIMAL}linear_solver: {{ method: cg_amg, amg: {{ precision: mixed }} }}\n"
    ))
    .unwrap();
    assert_eq!(c.linear_solver.amg.precision, amg::Precision::Mixed);
    let msg = error_at(
        &format!("{MINIMAL}linear_solver: {{ method: cg_amg, amg: {{ precision: single }} }}\n"),
        4,
        52,
    );
    assert!(
        msg.contains("precision") && msg.contains("valid choices: double, mixed"),
        "{msg}"
    );
}

#[test]
fn standard_input_is_named_stdin_and_anchors_paths_at_the_working_directory() {
    let c = load_reader(MINIMAL.as_bytes(), &["loading.steps=3".to_owned()]).unwrap();
    assert_eq!(c.loading.steps, 3);
    assert_eq!(c.output.name.as_deref(), Some(STDIN_NAME));
    assert_eq!(c.source.file, Path::new(STDIN_NAME));
    let err = load_reader(&b"mesh: { box: { cells: [0, 1, 1] } }\n"[..], &[]).unwrap_err();
    assert!(err.to_string().starts_with("stdin:1:"), "{err}");
    let err = load_reader(&b"a: \xff\n"[..], &[]).unwrap_err();
    assert!(err.to_string().starts_with("stdin:1:4: "), "{err}");
    // a relative mesh path stays relative: to the working directory
    let err = load_reader(
        &b"mesh: { gmsh: { file: no/such.msh } }\nmaterials: [{ model: linear, lambda: 1, mu: 1 }]\n"[..],
        &[],
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("no such file: no/such.msh"),
        "{err}"
    );
}
