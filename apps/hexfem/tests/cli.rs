//! The `hexfem` binary as a user meets it: exit statuses, error texts, and files left by a run that
//! fails or is killed.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use io::{ResultsReader, RunStatus, Summary};

mod common;
use common::{check_leftovers, scratch_in, xdmf_steps, Scratch};

fn hexfem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hexfem"))
        .args(args)
        .env("CI", "1")
        .output()
        .expect("hexfem runs")
}

fn scratch(tag: &str) -> Scratch {
    scratch_in("cli", tag)
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
/// command fails with a message that says so and lists every attempt with its reason (also when
/// piped: one line per attempt as it happens), and the summary records the failure.
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
    assert!(
        err.contains("4 attempts, loading.max_cutbacks = 3 reached"),
        "{err}"
    );
    assert!(
        err.contains("attempt 0.0000 -> 0.1667: no convergence in 1 Newton iterations")
            && err.contains("attempt 0.0000 -> 0.0208: no convergence"),
        "{err}"
    );
    assert!(
        err.contains("cutting the increment back to 8.333e-2"),
        "{err}"
    );
    let summary = Summary::read(&dir.join("twisting_column.summary.json")).unwrap();
    let RunStatus::Failed { message } = summary.status else {
        panic!("{:?}", summary.status)
    };
    assert!(
        message.contains("4 attempts") && message.contains("0.0000 -> 0.0417"),
        "{message}"
    );
}

/// A small twisting column: `steps` load steps on 2 x 2 x 6 cells (a fraction of a second).
fn small_twist(dir: &Path, steps: usize, extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hexfem"));
    command
        .args([
            "run",
            &input("twisting_column.yaml"),
            "-o",
            dir.to_str().unwrap(),
            "--set",
            &format!("loading.steps={steps}"),
            "--set",
            "mesh.box.cells=[2, 2, 6]",
        ])
        .args(extra)
        .env("CI", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

/// Aborted right after step 3 is written (test-only switch), the run leaves an HDF5 file that
/// opens with exactly steps 1 to 3, an XDMF file naming them, and a summary (still `running`)
/// whose step log lists them.
#[test]
fn a_run_killed_after_a_step_leaves_every_completed_step_readable() {
    let dir = scratch("killed");
    let out = small_twist(&dir, 6, &["--test-abort-after-step", "3"])
        .output()
        .unwrap();
    assert!(
        out.status.code().is_none(),
        "killed by a signal: {:?}",
        out.status
    );
    assert_eq!(check_leftovers(&dir, "abort after step 3"), 3);
    let xdmf = std::fs::read_to_string(dir.join("twisting_column.xdmf")).unwrap();
    assert_eq!(xdmf_steps(&xdmf), [0, 1, 2, 3]);
    let summary = Summary::read(&dir.join("twisting_column.summary.json")).unwrap();
    assert_eq!(summary.status, RunStatus::Running);
    assert_eq!(summary.steps.unwrap().len(), 3);
}

/// The process aborted at every write position of a run (before the write, and halfway through
/// it) leaves files that open with every step completed before the abort.
#[test]
fn an_abort_at_any_write_position_leaves_readable_files() {
    let dir = scratch("abort-every-write");
    let mut outcomes = std::collections::BTreeSet::new();
    let mut at = 0;
    loop {
        let mut finished = false;
        for torn in [false, true] {
            let _ = std::fs::remove_dir_all(&*dir);
            std::fs::create_dir_all(&*dir).unwrap();
            let position = at.to_string();
            let mut args = vec!["--test-abort-at-write", position.as_str()];
            if torn {
                args.push("--test-torn-write");
            }
            let out = small_twist(&dir, 3, &args).output().unwrap();
            let context = format!("abort at write {at} (torn: {torn})");
            let committed = check_leftovers(&dir, &context);
            if out.status.success() {
                // Past the last write position: the run completed.
                assert_eq!(committed, 3, "{context}");
                finished = true;
            } else {
                assert!(out.status.code().is_none(), "{context}: {}", stderr(&out));
                outcomes.insert(committed);
            }
        }
        if finished {
            break;
        }
        at += 1;
        assert!(at < 1000, "the run never completed");
    }
    assert!(at > 15, "only {at} write positions");
    assert_eq!(outcomes, [0, 1, 2, 3].into_iter().collect(), "{outcomes:?}");
}

/// On file systems too small for the whole run, the run fails with the error that stopped it
/// (no space left), names the steps kept, and leaves files that open with those steps; the
/// summary records the failure with that error.
#[test]
fn a_full_disk_keeps_every_completed_step_and_reports_the_first_error() {
    common::fill_the_disk("cli", |dir| small_twist(dir, 12, &[]).output().unwrap());
}

/// Standard output closed early (`| head -1`) or full (`> /dev/full`): the command ends with a
/// non-zero status and no panic.
#[test]
fn broken_pipes_and_full_stdout_end_quietly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hexfem"))
        .args(["check", &input("cantilever_q1.yaml")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(141), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
    if let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") {
        let out = Command::new(env!("CARGO_BIN_EXE_hexfem"))
            .args(["check", &input("cantilever_q1.yaml")])
            .stdout(full)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = stderr(&out);
        assert!(err.contains("No space left on device"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// `check` rejects what `run` would reject, before solving, and every error names the file with
/// line and column (or the `--set` argument) of the value behind it, once.
#[test]
fn check_rejects_what_run_rejects_and_every_error_is_located() {
    let dir = scratch("located");
    let base = "mesh:\n  box: { cells: [2, 2, 2] }\nmaterials:\n  - { model: linear, young_modulus: 1.0, poisson_ratio: 0.3 }\n";
    let write = |name: &str, text: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    };
    let ok = write(
        "ok.yaml",
        format!("{base}boundary:\n  dirichlet: [{{ set: xmin, x: 0 }}]\n").as_bytes(),
    );
    let blocker = write("blocker", b"a file where a directory would go");
    let mut utf8 =
        format!("{base}boundary:\n  dirichlet: [{{ set: xmin, x: 0 }}]\n# caf").into_bytes();
    utf8.extend_from_slice(b"\xe9\n");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![write("utf8.yaml", &utf8)], "utf8.yaml:7:6: the file is not valid UTF-8"),
        (
            vec![write("set.yaml", format!("{base}boundary:\n  dirichlet: [{{ set: nosuch, x: 0 }}]\n").as_bytes())],
            "set.yaml:6:22: boundary.dirichlet[0].set: unknown node/face set 'nosuch'",
        ),
        (
            vec![write("traction.yaml", format!("{base}boundary:\n  dirichlet: [{{ set: xmin, x: 0 }}]\n  traction: [{{ set: top, value: [0, 0, 1] }}]\n").as_bytes())],
            "traction.yaml:7:21: boundary.traction[0].set:",
        ),
        (
            vec![ok.clone(), "--set".into(), "materials[0].cells=steel".into()],
            "--set `materials[0].cells=steel`: materials[0].cells: unknown cell set 'steel'; available: all",
        ),
        (
            vec![write("free.yaml", base.as_bytes())],
            "free.yaml:1:1: boundary: no dirichlet or twist condition",
        ),
        (
            vec![ok.clone(), "--set".into(), "mesh.box.cells=[4000, 4000, 4000]".into()],
            "--set `mesh.box.cells=[4000, 4000, 4000]`: mesh.box.cells:",
        ),
        (
            vec![ok.clone(), "--set".into(), "mesh.box.upper=[1, 1, 1e-320]".into()],
            "mesh.box.upper: the box is flat",
        ),
        (
            vec![ok.clone(), "--set".into(), format!("output.name={}", "n".repeat(300))],
            "output.name: the name is 300 bytes long",
        ),
        (
            vec![ok.clone(), "--set".into(), format!("output.directory={blocker}/x")],
            "output.directory: ",
        ),
        (
            vec![write("domain.yaml", format!("{base}boundary:\n  dirichlet: [{{ set: xmin, x: 0, y: 0, z: \"sqrt(x - 0.5)\" }}]\n").as_bytes())],
            "domain.yaml:6:43: boundary.dirichlet[0].z: the expression `sqrt(x - 0.5)` is NaN at node 0 (0, 0, 0)",
        ),
        (
            vec![ok.clone(), "--set".into(), "boundary.dirichlet=[{ set: xmin, x: 0, y: \"ln(-1)\", z: \"1/0\" }]".into()],
            "boundary.dirichlet[0].y: the expression `ln(-1)` is NaN at node 0",
        ),
    ];
    for (args, expected) in &cases {
        let mut argv = vec!["check"];
        argv.extend(args.iter().map(String::as_str));
        let out = hexfem(&argv);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains(expected),
            "{args:?}: expected `{expected}` in:\n{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        // The message proper (first line, less the echoed `--set` argument) says nothing twice.
        let line = err.lines().next().unwrap();
        let first = match (line.find("--set `"), line.rfind("`: ")) {
            (Some(a), Some(b)) if a < b => format!("{}{}", &line[..a], &line[b + 3..]),
            _ => line.to_owned(),
        };
        for part in first.split(": ").filter(|p| p.len() > 12) {
            assert_eq!(
                first.matches(part).count(),
                1,
                "repeated `{part}` in {first}"
            );
        }
    }
    // `run` rejects the unwritable output directory before building the problem, with the same
    // error, and writes nothing.
    let out = hexfem(&["run", &ok, "-o", &format!("{blocker}/results")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is not a directory"),
        "{}",
        stderr(&out)
    );
    let out = hexfem(&["check", &ok, "-o", &format!("{blocker}/results")]);
    assert!(
        stderr(&out).contains("is not a directory"),
        "{}",
        stderr(&out)
    );
}

/// A box far beyond the machine's memory (400^3 Q1 cells, about 300 GiB) is refused before
/// anything is allocated, by `check` and `run`, with the estimate and the memory available.
#[test]
fn runs_larger_than_memory_are_refused_with_the_estimate() {
    let dir = scratch("memory");
    for command in ["check", "run"] {
        let out = hexfem(&[
            command,
            &input("cantilever_q1.yaml"),
            "-o",
            dir.to_str().unwrap(),
            "--set",
            "mesh.box.cells=[400, 400, 400]",
        ]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{command}: {err}");
        assert!(
            err.contains(
                "--set `mesh.box.cells=[400, 400, 400]`: mesh.box.cells: the run needs about"
            ),
            "{err}"
        );
        assert!(err.contains("GiB of memory is available"), "{err}");
    }
    // Nothing was written.
    assert_eq!(std::fs::read_dir(&*dir).unwrap().count(), 0);
}

/// What viewers read: meshio reads the last step (`meshio.read`, `meshio convert` to VTU), the
/// whole series (its time-series reader; step 0 undeformed) with the material and nodal stress
/// fields, and the optional VTU files listed in the `.pvd` collection. Skipped, saying so, where python3 with meshio and h5py is not installed
/// (`./hexfem.sh test` installs them).
#[test]
fn meshio_reads_the_last_step_and_the_series() {
    let has_meshio = Command::new("python3")
        .args(["-c", "import meshio, h5py"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_meshio {
        eprintln!("python3 with meshio and h5py not found: the meshio test is skipped");
        return;
    }
    let dir = scratch("meshio");
    let fields = "output.fields=[displacement, reaction, cauchy_stress, von_mises, jacobian, \
                  energy_density, nodal_cauchy_stress, nodal_von_mises, strain, \
                  logarithmic_strain, principal_stress, sets]";
    let out = small_twist(&dir, 3, &["--set", "output.vtu=true", "--set", fields])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let script = r#"
import sys, meshio, numpy as np
d = sys.argv[1]
m = meshio.read(d + "/twisting_column.last.xdmf")
assert len(m.points) == 63 and m.cells[0].type == "hexahedron" and len(m.cells[0].data) == 24
u = m.point_data["displacement"]
assert u.shape == (63, 3) and np.abs(u).max() > 0.1, np.abs(u).max()
assert m.point_data["nodal_cauchy_stress"].shape == (63, 9)
assert m.cell_data["material"][0].shape == (24,)
# the optional fields and the sets as 0/1 attributes (the clamped bottom: 3 x 3 nodes)
assert m.cell_data["strain"][0].shape == (24, 9)
assert m.cell_data["principal_stress"][0].shape == (24, 3)
assert m.point_data["set:zmin"].sum() == 9 and set(m.point_data["set:zmin"]) == {0, 1}
meshio.write(d + "/converted.vtu", m)
assert len(meshio.read(d + "/converted.vtu").points) == 63
with meshio.xdmf.TimeSeriesReader(d + "/twisting_column.xdmf") as r:
    points, cells = r.read_points_cells()
    times = [r.read_data(k)[0] for k in range(r.num_steps)]
    t0, u0, c0 = r.read_data(0)
assert times == [0.0, 1 / 3, 2 / 3, 1.0], times
assert np.abs(u0["displacement"]).max() == 0.0
assert np.allclose(c0["jacobian"][0], 1.0)
# The optional VTU output of the last step holds the same displacement.
v = meshio.read(d + "/twisting_column_vtu/step_000003.vtu")
assert np.array_equal(v.points, m.points) and np.array_equal(v.point_data["displacement"], u)
assert np.array_equal(v.cell_data["material"][0].ravel(), m.cell_data["material"][0])
pvd = open(d + "/twisting_column.pvd").read()
assert pvd.count("<DataSet ") == 4 and 'file="twisting_column_vtu/step_000003.vtu"' in pvd
print("ok")
"#;
    let out = Command::new("python3")
        .args(["-c", script, dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok",
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    let converted = Command::new("meshio")
        .args(["convert"])
        .arg(dir.join("twisting_column.last.xdmf"))
        .arg(dir.join("cli.vtu"))
        .output();
    if let Ok(converted) = converted {
        assert!(converted.status.success(), "{}", stderr(&converted));
        assert!(dir.join("cli.vtu").exists());
    }
}

/// `device`: `auto` takes the CPU where there is no GPU; `cuda` there is an error
/// placed at the key, from `check` as from `run`. On a machine with a GPU this prints one `SKIP`
/// line (the device tests cover it there).
#[test]
fn cuda_device_without_a_gpu_is_a_located_error() {
    let dir = scratch("device");
    let path = dir.join("device.yaml");
    std::fs::write(
        &path,
        "mesh:\n  box: { cells: [2, 1, 1] }\nmaterials:\n  - { model: linear, young_modulus: 1.0, poisson_ratio: 0.3 }\nboundary:\n  dirichlet: [{ set: xmin, x: 0, y: 0, z: 0 }]\ndevice: cuda\n",
    )
    .unwrap();
    let input = path.to_string_lossy().into_owned();
    if linalg::Device::cuda(0).is_ok() {
        eprintln!("SKIP cuda_device_without_a_gpu_is_a_located_error: this machine has a GPU");
        return;
    }
    let out_dir = dir.join("out").to_string_lossy().into_owned();
    for command in ["check", "run"] {
        let out = hexfem(&[command, &input, "-o", &out_dir]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{command}: {err}");
        assert!(
            err.contains("device.yaml:7:9: device: `cuda` needs a usable GPU"),
            "{command}: {err}"
        );
        assert!(err.contains("CUDA unavailable"), "{command}: {err}");
        assert!(!dir.join("out").exists(), "{command} wrote before failing");
    }
    let auto = hexfem(&[
        "check",
        &input,
        "-o",
        &out_dir,
        "--set",
        "device=auto",
        "--set",
        "linear_solver.method=cg_amg",
    ]);
    assert!(auto.status.success(), "{}", stderr(&auto));
    // on the CPU the solver line names no device
    assert!(
        String::from_utf8_lossy(&auto.stdout)
            .contains("linear solver CG with smoothed-aggregation AMG\n"),
        "{}",
        String::from_utf8_lossy(&auto.stdout)
    );
    // `run` says in its header why `auto` computes on the CPU, and nothing else about it
    let run = hexfem(&[
        "run",
        &input,
        "-o",
        &out_dir,
        "--set",
        "device=auto",
        "--set",
        "linear_solver.method=cg_amg",
    ]);
    let err = stderr(&run);
    assert!(run.status.success(), "{err}");
    assert!(
        err.contains("(device: auto found no usable GPU)\n"),
        "{err}"
    );
    assert_eq!(err.matches("GPU").count(), 1, "{err}");
}

/// The `case.json` rows of a campaign's table without what differs between processes (wall
/// and set-up times, problem build times, the directory, whether a case reused the one before).
fn campaign_rows(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut row: serde_json::Value = serde_json::from_str(l).unwrap();
            let object = row.as_object_mut().unwrap();
            for key in [
                "wall_s",
                "setup_s",
                "first_setup_s",
                "problem_s",
                "directory",
                "reused_problem",
                "reused_solver",
            ] {
                object.remove(key);
            }
            row
        })
        .collect()
}

/// A campaign killed after two cases (the third part-way) and resumed finishes with the table
/// of an uninterrupted campaign; the resumed run skips the finished cases.
#[test]
fn a_killed_campaign_resumes_to_the_same_table() {
    let dir = scratch("campaign-resume");
    let file = dir.join("sweep.yaml");
    std::fs::write(
        &file,
        format!(
            "base: {}\nshare_solver: false\nset: {{ output.probes: {{ points: [{{ name: tip, at: [10, 0.5, 0.5] }}] }} }}\ngrid:\n  materials.0.young_modulus: [1.0e4, 3.0e4]\n  mesh.box.cells: [[20, 2, 2], [40, 4, 4], [10, 2, 2]]\n",
            input("cantilever_q1.yaml")
        ),
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let (full, killed) = (dir.join("full"), dir.join("killed"));
    let out = hexfem(&["campaign", file, "-o", full.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = hexfem(&[
        "campaign",
        file,
        "-o",
        killed.to_str().unwrap(),
        "--test-abort-after-cases",
        "2",
    ]);
    assert!(!out.status.success());
    assert_eq!(campaign_rows(&killed).len(), 2, "two rows before the kill");
    let out = hexfem(&["campaign", file, "-o", killed.to_str().unwrap(), "--resume"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("6 cases: 6 completed, 0 failed (2 resumed)"),
        "{text}"
    );
    assert_eq!(campaign_rows(&killed), campaign_rows(&full));
    let csv = |d: &Path| {
        std::fs::read_to_string(d.join("results.csv"))
            .unwrap()
            .lines()
            .map(|l| l.split(',').take(10).collect::<Vec<_>>().join(","))
            .collect::<Vec<_>>()
    };
    assert_eq!(csv(&killed), csv(&full));
    // resuming a finished campaign runs nothing
    let out = hexfem(&["campaign", file, "-o", killed.to_str().unwrap(), "--resume"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("(6 resumed)"));
}

/// A run killed after step 3 continues with `--restart FILE.h5` (its last step) to the same
/// final state as an uninterrupted run, bit for bit.
#[test]
fn a_killed_run_restarts_to_the_same_results() {
    let dir = scratch("restart");
    let (full, killed, resumed) = (dir.join("full"), dir.join("killed"), dir.join("resumed"));
    let column = input("twisting_column.yaml");
    let out = hexfem(&["run", &column, "-o", full.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = hexfem(&[
        "run",
        &column,
        "-o",
        killed.to_str().unwrap(),
        "--test-abort-after-step",
        "3",
    ]);
    assert!(!out.status.success());
    let h5 = killed.join("twisting_column.h5");
    let out = hexfem(&[
        "run",
        &column,
        "-o",
        resumed.to_str().unwrap(),
        "--restart",
        h5.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let a = ResultsReader::open(&full.join("twisting_column.h5")).unwrap();
    let b = ResultsReader::open(&resumed.join("twisting_column.h5")).unwrap();
    let steps: Vec<usize> = b.steps().unwrap().iter().map(|s| s.0).collect();
    assert_eq!(steps, [3, 4, 5, 6]);
    for field in ["displacement", "reaction", "cauchy_stress"] {
        let path = format!("/steps/000006/{field}");
        let (x, y) = (a.read_f64(&path).unwrap().1, b.read_f64(&path).unwrap().1);
        assert!(
            x.iter().zip(&y).all(|(p, q)| p.to_bits() == q.to_bits()),
            "{field}"
        );
    }
}

/// A second run into a directory holding a run of the same name is refused before it writes
/// anything (the earlier files stay byte for byte) unless `--overwrite`; a restart whose output
/// would be the file it continues from is refused even with `--overwrite`.
#[test]
fn earlier_results_are_never_destroyed_unasked() {
    let dir = scratch("keep-earlier");
    let out = small_twist(&dir, 2, &[]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let files = ["h5", "xdmf", "last.xdmf", "summary.json", "steps.jsonl"]
        .map(|ext| dir.join(format!("twisting_column.{ext}")));
    let before: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    let unchanged = |context: &str| {
        for (file, bytes) in files.iter().zip(&before) {
            assert!(
                &std::fs::read(file).unwrap() == bytes,
                "{context}: {} changed",
                file.display()
            );
        }
    };
    let out = small_twist(&dir, 3, &[]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("already holds the results of a run named `twisting_column`")
            && err.contains("twisting_column.h5")
            && err.contains("--overwrite"),
        "{err}"
    );
    unchanged("a second run");
    // a restart in place, with or without --overwrite
    let h5 = dir.join("twisting_column.h5");
    for extra in [&[][..], &["--overwrite"][..]] {
        let mut args = vec!["--restart", h5.to_str().unwrap()];
        args.extend(extra);
        let out = small_twist(&dir, 3, &args).output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = stderr(&out);
        assert!(
            err.contains("over the file it continues from") && err.contains(h5.to_str().unwrap()),
            "{err}"
        );
        unchanged("a restart in place");
    }
    // asked to: replaced
    let out = small_twist(&dir, 3, &["--overwrite"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(check_leftovers(&dir, "overwritten"), 3);
}

/// `campaign --check` lists the cases without running them; a bad value is named at its line
/// and column in the campaign file, with a non-zero status.
#[test]
fn campaign_check_lists_cases_and_places_errors() {
    let dir = scratch("campaign-check");
    let file = dir.join("study.yaml");
    let write = |values: &str| {
        std::fs::write(
            &file,
            format!(
                "base: {}\ndirectory: {}\ngrid:\n  loading.steps: {values}\n",
                input("neo_hookean_block.yaml"),
                dir.join("out").display()
            ),
        )
        .unwrap();
    };
    write("[1, 2, 3]");
    let out = hexfem(&["campaign", "--check", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("3 cases valid on 1 mesh"), "{text}");
    assert!(
        text.contains("case_0002") && text.contains("loading.steps=3"),
        "{text}"
    );
    assert!(!dir.join("out").exists(), "a check runs nothing");
    write("[1, 0, 3]");
    let out = hexfem(&["campaign", "--check", file.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("study.yaml:4:22") && err.contains("case 1"),
        "{err}"
    );
}

/// `run -q` prints nothing but errors (main before issue 30: the final line with the files
/// written); without `-q` that line is there, and with `--plot` the plots are drawn either way.
#[test]
fn quiet_runs_print_nothing() {
    let dir = scratch("quiet");
    let args = |quiet: bool| {
        let mut a = vec![
            "run",
            "--set",
            "mesh.box.cells=[1, 1, 2]",
            "--set",
            "loading.steps=1",
            "--plot",
        ];
        if quiet {
            a.push("-q");
        }
        a
    };
    let column = input("twisting_column.yaml");
    let out_dir = dir.join("q");
    let mut quiet = args(true);
    quiet.extend(["-o", out_dir.to_str().unwrap(), &column]);
    let out = hexfem(&quiet);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert_eq!(stderr(&out), "");
    assert!(out_dir.join("twisting_column.residuals.png").is_file());
    let loud_dir = dir.join("loud");
    let mut loud = args(false);
    loud.extend(["-o", loud_dir.to_str().unwrap(), &column]);
    let out = hexfem(&loud);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("converged steps written to"), "{text}");
}

/// `run --plot` on a run with nothing to draw (no load: every residual zero, no probes)
/// succeeds and says so; `run > /dev/full` ends with status 1 and says the run itself completed.
#[test]
fn plot_with_nothing_to_draw_and_a_full_stdout_are_reported_plainly() {
    let dir = scratch("plot-nothing");
    let yaml = dir.join("still.yaml");
    std::fs::write(
        &yaml,
        "mesh:\n  box: { cells: [1, 1, 1] }\nmaterials:\n  - { model: linear, young_modulus: 1.0, poisson_ratio: 0.3 }\nboundary:\n  dirichlet: [{ set: xmin, x: 0, y: 0, z: 0 }]\n",
    )
    .unwrap();
    let out = hexfem(&[
        "run",
        yaml.to_str().unwrap(),
        "-o",
        dir.to_str().unwrap(),
        "--plot",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("plots: none"), "{text}");
    if let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") {
        let out = Command::new(env!("CARGO_BIN_EXE_hexfem"))
            .args([
                "run",
                yaml.to_str().unwrap(),
                "-o",
                dir.to_str().unwrap(),
                "--overwrite",
            ])
            .stdout(full)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = stderr(&out);
        assert!(
            err.contains("writing to standard output")
                && err.contains("the command itself completed"),
            "{err}"
        );
        let summary = Summary::read(&dir.join("still.summary.json")).unwrap();
        assert_eq!(summary.status, RunStatus::Completed);
    }
}

/// Runs `hexfem args` with `stdin` as its standard input.
fn hexfem_with_stdin(args: &[&str], stdin: &[u8]) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_hexfem"))
        .args(args)
        .env("CI", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("hexfem runs");
    let mut pipe = child.stdin.take().unwrap();
    pipe.write_all(stdin).unwrap();
    drop(pipe);
    child.wait_with_output().unwrap()
}

/// `hexfem schema` prints the committed schemas byte for byte (the files editors point at).
#[test]
fn schema_prints_the_committed_json_schemas() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    for (args, file) in [
        (&["schema"][..], "hexfem.schema.json"),
        (&["schema", "--campaign"][..], "hexfem-campaign.schema.json"),
    ] {
        let out = hexfem(args);
        assert!(out.status.success(), "{}", stderr(&out));
        let committed = std::fs::read(docs.join(file)).unwrap();
        assert!(
            out.stdout == committed,
            "hexfem {args:?} differs from docs/{file}"
        );
    }
}

/// `check -` and `run -` read the input from standard input (errors and the output name say
/// `stdin`); `check --print-resolved` prints YAML that runs as is, with `--set` applied, and
/// resolving it again gives the same YAML.
#[test]
fn stdin_inputs_and_the_resolved_input_run_as_is() {
    let dir = scratch("stdin");
    let text = std::fs::read(input("twisting_column.yaml")).unwrap();
    let out = hexfem_with_stdin(&["check", "-"], &text);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("stdin: valid"));
    let sets = [
        "--set",
        "loading.steps=2",
        "--set",
        "mesh.box.cells=[1, 1, 2]",
    ];
    let mut args = vec!["check", "-", "--print-resolved"];
    args.extend(sets);
    let out = hexfem_with_stdin(&args, &text);
    assert!(out.status.success(), "{}", stderr(&out));
    let resolved = out.stdout;
    let yaml = String::from_utf8_lossy(&resolved);
    assert!(
        yaml.contains("steps: 2") && yaml.contains("cells: [1, 1, 2]"),
        "{yaml}"
    );
    // the resolved input resolves to itself (up to the comments: its source, the defaults)
    let again = hexfem_with_stdin(&["check", "-", "--print-resolved"], &resolved);
    assert!(again.status.success(), "{}", stderr(&again));
    let body = |b: &[u8]| {
        String::from_utf8_lossy(b)
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split("  #").next().unwrap_or(l).to_owned())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(body(&again.stdout), body(&resolved));
    let out = hexfem_with_stdin(&["run", "-", "-o", dir.to_str().unwrap()], &resolved);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary = Summary::read(&dir.join("stdin.summary.json")).unwrap();
    assert_eq!(summary.status, RunStatus::Completed);
    // (the twist divides 2 steps further: at most so many degrees a step)
    let steps = summary.steps.unwrap();
    assert_eq!(steps.last().map(|s| s.load_factor), Some(1.0));
    // a typo on standard input is located there
    let out = hexfem_with_stdin(&["run", "-"], b"mesh: { box: { cels: [1, 1, 1] } }\n");
    assert!(!out.status.success());
    let message = stderr(&out);
    assert!(message.contains("stdin:1:"), "{message}");
}

/// `hexfem completion SHELL` prints a script that knows the subcommands; `-V` names the commit,
/// `--version` also CUDA, MPI and HDF5.
#[test]
fn completions_and_the_version_say_what_was_built() {
    for shell in ["bash", "zsh", "fish"] {
        let out = hexfem(&["completion", shell]);
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(
            script.contains("hexfem") && script.contains("campaign") && script.contains("restart"),
            "{shell}"
        );
    }
    let out = hexfem(&["-V"]);
    let short = String::from_utf8_lossy(&out.stdout);
    assert!(
        short.starts_with("hexfem 0.") && short.contains("(commit "),
        "{short}"
    );
    let out = hexfem(&["--version"]);
    let long = String::from_utf8_lossy(&out.stdout);
    for line in ["\n  cuda   ", "\n  mpi    ", "\n  hdf5   1."] {
        assert!(long.contains(line), "{line:?} in {long}");
    }
}

/// SIGINT after the first step is written ends the run at the next safe point with status 130:
/// the files hold every converged step, the summary says `interrupted` with the `--restart`
/// argument, stderr prints the command that continues it, and that command reproduces the
/// uninterrupted run's final displacement bit for bit.
#[test]
fn sigint_stops_a_run_whose_printed_restart_reproduces_the_full_run() {
    let dir = scratch("sigint");
    let (full, stopped) = (dir.join("full"), dir.join("stopped"));
    let sets = [
        "--set",
        "loading.steps=30",
        "--set",
        "mesh.box.cells=[2, 2, 12]",
    ];
    let column = input("twisting_column.yaml");
    let mut args = vec!["run", &column, "-o", full.to_str().unwrap()];
    args.extend(sets);
    let out = hexfem(&args);
    assert!(out.status.success(), "{}", stderr(&out));

    let log = dir.join("stderr.txt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hexfem"))
        .args(["run", &column, "-o", stopped.to_str().unwrap()])
        .args(sets)
        .env("CI", "1")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !std::fs::read_to_string(&log).unwrap().contains("\nstep ") {
        assert!(started.elapsed().as_secs() < 60, "no step written");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    let message = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(130), "{message}");
    let written = check_leftovers(&stopped, "interrupted");
    assert!((1..30).contains(&written), "{written} steps written");
    let summary = Summary::read(&stopped.join("twisting_column.summary.json")).unwrap();
    let h5 = stopped.join("twisting_column.h5");
    let restart = format!("{}:{written}", h5.display());
    assert_eq!(
        summary.status,
        RunStatus::Interrupted {
            restart: restart.clone()
        }
    );
    // the printed command, run as printed (its words are plain here)
    let command = message
        .lines()
        .skip_while(|l| !l.starts_with("interrupted after step"))
        .nth(1)
        .unwrap_or_else(|| panic!("no command in {message}"));
    assert!(
        command.contains(&format!("--restart {restart}")),
        "{command}"
    );
    let words: Vec<String> = command
        .split_whitespace()
        .map(|w| w.trim_matches('\'').to_owned())
        .collect();
    // `'mesh.box.cells=[2, 2, 12]'` was split at its spaces: join it back
    let mut argv: Vec<String> = Vec::new();
    let mut open = false;
    for w in command.split_whitespace().skip(1) {
        if open {
            argv.last_mut().unwrap().push(' ');
            argv.last_mut().unwrap().push_str(w.trim_end_matches('\''));
        } else {
            argv.push(w.trim_start_matches('\'').trim_end_matches('\'').to_owned());
        }
        open = (open || w.starts_with('\'')) && !w.ends_with('\'');
    }
    assert_eq!(words[0], "hexfem");
    let out = Command::new(env!("CARGO_BIN_EXE_hexfem"))
        .args(&argv)
        .env("CI", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{argv:?}: {}", stderr(&out));
    let continued = stopped.join("continued").join("twisting_column.h5");
    let a = ResultsReader::open(&full.join("twisting_column.h5")).unwrap();
    let b = ResultsReader::open(&continued).unwrap();
    let last = "/steps/000030/displacement";
    let (x, y) = (a.read_f64(last).unwrap().1, b.read_f64(last).unwrap().1);
    assert_eq!(x.len(), y.len());
    assert!(x.iter().zip(&y).all(|(p, q)| p.to_bits() == q.to_bits()));
}

/// SIGINT once a campaign's first case is finished stops it with status 130 and the
/// `--resume` command printed; resumed, it ends with the table of an uninterrupted campaign.
#[test]
fn sigint_stops_a_campaign_that_resumes_to_the_same_table() {
    let dir = scratch("campaign-sigint");
    let file = dir.join("sweep.yaml");
    std::fs::write(
        &file,
        format!(
            "base: {}\nshare_solver: false\ngrid:\n  materials.0.young_modulus: [1.0e4, 2.0e4, 3.0e4]\n  mesh.box.cells: [[20, 2, 2], [40, 4, 4]]\n",
            input("cantilever_q1.yaml")
        ),
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let (full, stopped) = (dir.join("full"), dir.join("stopped"));
    let out = hexfem(&["campaign", file, "-o", full.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = dir.join("stderr.txt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hexfem"))
        .args(["campaign", file, "-o", stopped.to_str().unwrap()])
        .env("CI", "1")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !std::fs::read_to_string(&log).unwrap().contains("case ") {
        assert!(started.elapsed().as_secs() < 120, "no case finished");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    let message = std::fs::read_to_string(&log).unwrap();
    // (a campaign whose last case was under way may have finished: then it succeeded)
    if status.code() == Some(130) {
        assert!(message.contains("--resume"), "{message}");
        assert!(campaign_rows(&stopped).len() < 6, "{message}");
    } else {
        assert!(status.success(), "{message}");
    }
    let out = hexfem(&[
        "campaign",
        file,
        "-o",
        stopped.to_str().unwrap(),
        "--resume",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(campaign_rows(&stopped), campaign_rows(&full));
}
