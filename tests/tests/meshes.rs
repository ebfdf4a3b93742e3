//! Runs on the twin meshes of `mesh/tests/data/twins/` (one Gmsh mesh written as Gmsh MSH,
//! Exodus II and Abaqus input by `scripts/make_mesh_twins.py`): the same input, with its sets
//! (cell sets as material groups, face sets under tractions and pressures, node sets under
//! constraints) named as the twins name them, gives the same displacements to 1e-12 whichever
//! file `mesh.gmsh.file` names, the Exodus twins in the netCDF classic and netCDF-4 formats.

use hexfem_end_to_end::{run_text, run_text_error, step_dataset, ScratchDir};
use sim::RunOutcome;

fn twin(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../mesh/tests/data/twins")
        .join(name)
}

/// The problem of every run here on the mesh `mesh_file`, its sets named by `names` (in the
/// order left_part, right_part, xmin, origin, xmax, ymin), with `sets` (YAML lines) added.
fn yaml_on(mesh_file: &str, names: [&str; 6], sets: &str) -> String {
    let [left, right, xmin, origin, xmax, ymin] = names;
    format!(
        "mesh:\n  gmsh: {{ file: {} }}\n{sets}\
         materials:\n  - {{ cells: {left}, model: neo_hookean, young_modulus: 100.0, poisson_ratio: 0.3 }}\n\
         \x20 - {{ cells: {right}, model: neo_hookean, young_modulus: 40.0, poisson_ratio: 0.45 }}\n\
         boundary:\n  dirichlet:\n    - {{ set: {xmin}, x: 0.0, y: 0.0 }}\n    - {{ set: {origin}, z: 0.0 }}\n\
         \x20 traction: [{{ set: {xmax}, value: [2.0, 0.5, -1.0] }}]\n\
         \x20 pressure: [{{ set: {ymin}, value: 0.5 }}]\n\
         loading: {{ steps: 2 }}\n",
        twin(mesh_file).display()
    )
}

const NAMED: [&str; 6] = ["left_part", "right_part", "xmin", "origin", "xmax", "ymin"];

fn run_on(tag: &str, mesh_file: &str) -> Result<(ScratchDir, RunOutcome), String> {
    run_yaml(tag, &yaml_on(mesh_file, NAMED, ""))
}

fn run_yaml(tag: &str, yaml: &str) -> Result<(ScratchDir, RunOutcome), String> {
    let out = ScratchDir::new(&format!("meshes-{tag}"));
    let outcome = run_text(&out, tag, yaml, &out.join("results"))?;
    Ok((out, outcome))
}

/// The error of the run of `yaml`.
fn refused(tag: &str, yaml: &str) -> String {
    let out = ScratchDir::new(&format!("meshes-{tag}"));
    run_text_error(&out, tag, yaml, &out.join("results"))
}

fn displacement(outcome: &RunOutcome, step: usize) -> Vec<f64> {
    step_dataset(outcome, step, "displacement").1
}

#[test]
fn exodus_and_abaqus_twins_give_the_gmsh_results() {
    for (order, others) in [
        (
            1,
            &[
                "twin_q1_cdf1.exo",
                "twin_q1_cdf2.exo",
                "twin_q1_nc4.exo",
                "twin_q1_nc4c.exo",
                "twin_q1.inp",
                "twin_q1_gmsh.inp",
            ][..],
        ),
        (
            2,
            &[
                "twin_q2_cdf1.exo",
                "twin_q2_cdf2.exo",
                "twin_q2_nc4.exo",
                "twin_q2_nc4c.exo",
                "twin_q2.inp",
            ][..],
        ),
    ] {
        let (_d, reference) = run_on(&format!("q{order}-msh"), &format!("twin_q{order}.msh"))
            .unwrap_or_else(|e| panic!("{e}"));
        let u_ref = displacement(&reference, 2);
        let scale = u_ref.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(scale > 1e-3, "the load moves the mesh: {scale}");
        for (k, other) in others.iter().enumerate() {
            let (_d, outcome) =
                run_on(&format!("q{order}-{k}"), other).unwrap_or_else(|e| panic!("{other}: {e}"));
            let u = displacement(&outcome, 2);
            assert_eq!(u.len(), u_ref.len(), "{other}");
            let diff = u
                .iter()
                .zip(&u_ref)
                .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(
                diff <= 1e-12 * scale,
                "{other}: max difference {diff:e} (scale {scale:e})"
            );
        }
    }
}

/// A netCDF-4 Exodus mesh runs as its classic twin does, bit for bit.
#[test]
fn a_netcdf4_exodus_mesh_gives_the_classic_run() {
    let (_a, classic) = run_on("nc4-classic", "twin_q1_cdf1.exo").unwrap_or_else(|e| panic!("{e}"));
    let (_b, nc4) = run_on("nc4", "twin_q1_nc4.exo").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(displacement(&classic, 2), displacement(&nc4, 2));
}

/// Sets by geometry reproduce the mesh's named sets: the run with the geometric sets (a plane, an
/// outward normal, a box, an expression on the cell centroids) gives the named run's
/// displacements bit for bit, on the Gmsh and the Exodus twin.
#[test]
fn geometric_sets_reproduce_the_named_sets() {
    let sets = "sets:\n\
        \x20 g_left: { kind: cells, expression: \"x - 1\" }\n\
        \x20 g_right: { kind: cells, expression: \"1 - x\" }\n\
        \x20 g_xmin: { kind: faces, plane: { point: [0, 5, 5], normal: [-2, 0, 0] } }\n\
        \x20 g_origin: { kind: nodes, box: { lower: [0, 0, 0], upper: [0, 0, 0] } }\n\
        \x20 g_xmax: { kind: faces, normal: [1, 0, 0], angle_deg: 0.5 }\n\
        \x20 g_ymin: { kind: faces, box: { lower: [-1, 0, -1], upper: [4, 0, 3] } }\n";
    let geometric = [
        "g_left", "g_right", "g_xmin", "g_origin", "g_xmax", "g_ymin",
    ];
    for file in ["twin_q2.msh", "twin_q1_cdf1.exo"] {
        let (_a, named) = run_on(&format!("named-{file}"), file).unwrap_or_else(|e| panic!("{e}"));
        let (_b, by_geometry) = run_yaml(
            &format!("geometric-{file}"),
            &yaml_on(file, geometric, sets),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            displacement(&named, 2),
            displacement(&by_geometry, 2),
            "{file}"
        );
    }
}

#[test]
fn geometric_sets_that_select_nothing_or_clash_are_errors() {
    let cases = [
        (
            "sets:\n  far: { kind: faces, plane: { point: [10, 0, 0], normal: [1, 0, 0] } }\n",
            ["left_part", "right_part", "far", "origin", "xmax", "ymin"],
            "sets.far: selects no boundary face of the mesh",
        ),
        (
            "sets:\n  xmax: { kind: faces, normal: [1, 0, 0] }\n",
            NAMED,
            "sets.xmax: the mesh already has a set named 'xmax'",
        ),
        (
            "sets:\n  n: { kind: nodes, normal: [1, 0, 0] }\n",
            NAMED,
            "selects faces by their outward normal: use it with `kind: faces`",
        ),
        (
            "sets:\n  n: { kind: cells, expression: \"x + t\" }\n",
            NAMED,
            "selects by position: use `x`, `y`, `z` only",
        ),
    ];
    for (k, (sets, names, needle)) in cases.into_iter().enumerate() {
        let err = refused(
            &format!("bad-set-{k}"),
            &yaml_on("twin_q1.msh", names, sets),
        );
        assert!(err.contains(needle), "{k}: {err}");
    }
}

/// Sets by their Exodus ids (`twin_q1_ids.exo`: the cdf1 twin with Cubit's ids, the left
/// block, the xmax side set and the origin node set unnamed): every set named by its id, as an
/// integer or a string, gives the named twin's run bit for bit, probes included.
#[test]
fn exodus_sets_by_id_give_the_named_run() {
    let probes = "output:\n  probes:\n    sets: [{ set: 12 }, { set: \"40\" }, { set: 10 }]\n";
    let (_a, named) = run_on("ids-named", "twin_q1_cdf1.exo").unwrap_or_else(|e| panic!("{e}"));
    let by_id = ["10", "right_part", "12", "7", "\"40\"", "3"];
    let (_b, ids) = run_yaml("ids", &yaml_on("twin_q1_ids.exo", by_id, probes))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(displacement(&named, 2), displacement(&ids, 2));
    let by_name = ["\"10\"", "20", "xmin", "\"7\"", "40", "ymin"];
    let (_c, names) = run_yaml("ids-names", &yaml_on("twin_q1_ids.exo", by_name, ""))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(displacement(&named, 2), displacement(&names, 2));
}

#[test]
fn unknown_exodus_set_ids_are_located_errors_listing_names_and_ids() {
    let cases = [
        (
            ["10", "20", "99", "7", "40", "3"],
            "",
            "ids-0.yaml:8:14: boundary.dirichlet[0].set: unknown node/face set '99'; available: 40, 7, xmin \
             (id 12), ymin (id 3)",
        ),
        (
            ["10", "12", "12", "7", "40", "3"],
            "",
            "ids-1.yaml:5:14: materials[1].cells: unknown cell set '12'; available: 10, right_part (id 20), all",
        ),
        (
            ["10", "20", "12", "7", "20", "3"],
            "",
            "ids-2.yaml:10:21: boundary.traction[0].set: unknown face set '20'; available: 40, xmin (id 12), ymin (id 3)",
        ),
        (
            ["10", "20", "12", "7", "40", "3"],
            "sets:\n  \"12\": { kind: faces, normal: [1, 0, 0] }\n",
            "ids-3.yaml:4:9: sets.12: '12' is the id of the mesh's set 'xmin'",
        ),
    ];
    for (k, (names, sets, needle)) in cases.into_iter().enumerate() {
        let err = refused(
            &format!("ids-{k}"),
            &yaml_on("twin_q1_ids.exo", names, sets),
        );
        assert!(err.contains(needle), "{k}: {err}");
    }
}
