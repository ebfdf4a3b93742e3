//! The `hexfem` binary as a user meets it: exit statuses, error texts, and files left by a run that
//! fails or is killed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn hexfem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hexfem"))
        .args(args)
        .env("CI", "1")
        .output()
        .expect("hexfem runs")
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hexfem-cli-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn input(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../inputs")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_typo_names_file_line_column_and_the_valid_keys() {
    let dir = scratch("typo");
    let file = dir.join("typo.yaml");
    std::fs::write(&file, "mesh:\n  box: { cells: [2, 2, 2] }\nmaterials:\n  - { model: linear, young_modulus: 1.0, poisson_ratio: 0.3 }\nnewton:\n  rtoll: 1.0e-8\n").unwrap();
    let out = hexfem(&["run", file.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("typo.yaml:6:3"), "{err}");
    assert!(err.contains("rtol"), "the valid keys are listed: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn an_unknown_material_lists_the_models() {
    let dir = scratch("model");
    let file = dir.join("model.yaml");
    std::fs::write(&file, "mesh:\n  box: { cells: [2, 2, 2] }\nmaterials:\n  - { model: rubber, young_modulus: 1.0, poisson_ratio: 0.3 }\n").unwrap();
    let out = hexfem(&["check", file.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("model.yaml:4:14"), "{err}");
    for model in [
        "linear",
        "saint_venant_kirchhoff",
        "neo_hookean",
        "decoupled_neo_hookean",
        "mooney_rivlin",
    ] {
        assert!(err.contains(model), "{model} missing from: {err}");
    }
}

#[test]
fn check_summarises_a_valid_input_and_set_overrides_apply() {
    let out = hexfem(&[
        "check",
        &input("cantilever_q1.yaml"),
        "--set",
        "mesh.box.cells=[8, 2, 2]",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("box 8x2x2 cells"), "{text}");
    assert!(text.contains("81 nodes"), "{text}");
    let bad = hexfem(&[
        "check",
        &input("cantilever_q1.yaml"),
        "--set",
        "newton.rtol=fast",
    ]);
    assert!(!bad.status.success());
    let err = stderr(&bad);
    assert!(
        err.contains("--set") && err.contains("newton.rtol=fast") && err.contains("expected f64"),
        "{err}"
    );
}

/// A Gmsh mesh with an inside-out hexahedron: `check` fails before any solve, naming the element by
/// its Gmsh tag (and cell index) with the det J failure, and names no other element. The same input
/// with element 42 the right way out is valid, so nothing else can be the cause.
#[test]
fn a_mesh_error_names_the_element() {
    let dir = scratch("inverted");
    // Nodes on a 3 x 2 x 2 grid, tag 1 + i + 3 j + 6 k; the quadrangle 43 on x = 0 is the face set
    // "left". Element 41 is the cell x in [0, 1] in Gmsh order (bottom face counter-clockwise, then
    // top), element 42 the cell x in [1, 2]; listing its top face first mirrors it in z (det J < 0).
    let msh = |element_42: &str| {
        let mut s = String::from("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$PhysicalNames\n1\n2 1 \"left\"\n$EndPhysicalNames\n");
        s += "$Entities\n0 0 1 1\n1 0 0 0 0 1 1 1 1 0\n1 0 0 0 2 1 1 0 0\n$EndEntities\n$Nodes\n1 12 1 12\n3 1 0 12\n";
        for tag in 1..=12 {
            s += &format!("{tag}\n");
        }
        for tag in 0..12 {
            s += &format!("{} {} {}\n", tag % 3, (tag / 3) % 2, tag / 6);
        }
        s += "$EndNodes\n$Elements\n2 3 41 43\n2 1 3 1\n43 1 4 10 7\n3 1 5 2\n41 1 2 5 4 7 8 11 10\n";
        s + element_42 + "\n$EndElements\n"
    };
    let yaml = |mesh: &str| {
        let file = dir.join(format!("{mesh}.yaml"));
        let text = format!(
            "mesh:\n  gmsh: {{ file: {mesh}.msh }}\nmaterials:\n  - {{ model: linear, young_modulus: 1.0, poisson_ratio: 0.3 }}\nboundary:\n  dirichlet:\n    - {{ set: left, x: 0.0, y: 0.0, z: 0.0 }}\n"
        );
        std::fs::write(&file, text).unwrap();
        file.to_string_lossy().into_owned()
    };
    std::fs::write(dir.join("upright.msh"), msh("42 2 3 6 5 8 9 12 11")).unwrap();
    std::fs::write(dir.join("inverted.msh"), msh("42 8 9 12 11 2 3 6 5")).unwrap();
    let ok = hexfem(&["check", &yaml("upright")]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    let out = hexfem(&["check", &yaml("inverted")]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("Gmsh element 42 (cell 1): non-positive Jacobian determinant"),
        "{err}"
    );
    assert_eq!(
        err.matches("Jacobian").count(),
        1,
        "the cause is printed once: {err}"
    );
    assert!(!err.contains("element 41"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Newton limited to one iteration cannot converge a nonlinear step: cutbacks run out, the
/// command fails with a message that says so, and the summary records the failure.
#[test]
fn exhausted_cutbacks_fail_clearly() {
    let dir = scratch("cutback");
    let out = hexfem(&[
        "run",
        &input("twisting_column.yaml"),
        "-o",
        dir.to_str().unwrap(),
        "--set",
        "newton.max_iterations=1",
        "--set",
        "loading.max_cutbacks=3",
    ]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("failed after 3 cutbacks"), "{err}");
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("twisting_column.summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["status"]["state"], "failed");
}

/// A run killed (SIGKILL) after some steps leaves an HDF5 file that opens with every step the
/// summary lists, and an XDMF file that names only those.
#[test]
fn a_killed_run_leaves_every_completed_step_readable() {
    let dir = scratch("killed");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hexfem"))
        .args([
            "run",
            &input("twisting_column.yaml"),
            "-o",
            dir.to_str().unwrap(),
            "--set",
            "loading.steps=400",
            "--set",
            "mesh.box.cells=[6, 6, 24]",
        ])
        .env("CI", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let summary_path = dir.join("twisting_column.summary.json");
    let started = Instant::now();
    let steps_seen = loop {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no steps written in time"
        );
        let steps = std::fs::read_to_string(&summary_path)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|s| s["steps"].as_array().map(Vec::len))
            .unwrap_or(0);
        if steps >= 3 {
            break steps;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary_path).unwrap()).unwrap();
    let listed = summary["steps"].as_array().unwrap().len();
    assert!(listed >= steps_seen);
    let file =
        hdf5::File::open(dir.join("twisting_column.h5")).expect("the HDF5 file opens after a kill");
    for step in 1..=listed {
        let u = file
            .dataset(&format!("steps/{step:06}/displacement"))
            .unwrap()
            .read_raw::<f64>()
            .unwrap();
        assert!(u.iter().all(|v| v.is_finite()), "step {step}");
    }
    let xdmf = std::fs::read_to_string(dir.join("twisting_column.xdmf")).unwrap();
    let grids = xdmf.matches("<Grid Name=\"step_").count();
    assert!(
        grids >= listed && grids <= listed + 1,
        "{grids} grids for {listed} summarised steps"
    );
    for step in 1..=grids {
        assert!(
            file.dataset(&format!("steps/{step:06}/displacement"))
                .is_ok(),
            "XDMF names step {step} which is not readable"
        );
    }
}
