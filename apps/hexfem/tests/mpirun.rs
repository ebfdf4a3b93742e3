//! `hexfem` under `mpirun` (oversubscribed: 4 ranks on any machine): a distributed `check`,
//! and an error on one rank (an inside-out element in that rank's part of a Gmsh mesh) that ends
//! every rank with that message, printed once, never a hang (`mpirun --timeout` bounds it).

use std::path::{Path, PathBuf};
use std::process::Output;

use comm::launch::{output_text, run_mpirun};

fn hexfem_on(np: usize, args: &[&str]) -> Output {
    run_mpirun(np, |cmd| {
        cmd.arg(env!("CARGO_BIN_EXE_hexfem"))
            .args(args)
            .env("CI", "1");
    })
    .expect("mpirun (Open MPI) runs")
}

mod common;
use common::{scratch_in, Scratch};

fn scratch(tag: &str) -> Scratch {
    scratch_in("mpirun", tag)
}

fn input(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../inputs")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// A column of 8 Q1 cells along x in MSH 4.1 (element tag 101 + i is the cell x in [i, i + 1]),
/// the face x = 0 the set "left"; element `inverted` lists its top face first (det J < 0).
fn column_msh(inverted: Option<usize>) -> String {
    let n = 8;
    let nodes = 4 * (n + 1);
    let tag = |i: usize, j: usize, k: usize| 1 + i + (n + 1) * (j + 2 * k);
    let mut s = String::from("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$PhysicalNames\n1\n2 1 \"left\"\n$EndPhysicalNames\n");
    s += &format!("$Entities\n0 0 1 1\n1 0 0 0 0 1 1 1 1 0\n1 0 0 0 {n} 1 1 0 0\n$EndEntities\n$Nodes\n1 {nodes} 1 {nodes}\n3 1 0 {nodes}\n");
    for t in 1..=nodes {
        s += &format!("{t}\n");
    }
    for k in 0..2 {
        for j in 0..2 {
            for i in 0..=n {
                s += &format!("{i} {j} {k}\n");
            }
        }
    }
    s += &format!(
        "$EndNodes\n$Elements\n2 {} 100 {}\n2 1 3 1\n",
        n + 1,
        100 + n
    );
    s += &format!(
        "100 {} {} {} {}\n",
        tag(0, 0, 0),
        tag(0, 0, 1),
        tag(0, 1, 1),
        tag(0, 1, 0)
    );
    s += &format!("3 1 5 {n}\n");
    for i in 0..n {
        let bottom = [
            tag(i, 0, 0),
            tag(i + 1, 0, 0),
            tag(i + 1, 1, 0),
            tag(i, 1, 0),
        ];
        let top = [
            tag(i, 0, 1),
            tag(i + 1, 0, 1),
            tag(i + 1, 1, 1),
            tag(i, 1, 1),
        ];
        let (first, second) = if inverted == Some(i) {
            (top, bottom)
        } else {
            (bottom, top)
        };
        let list: Vec<String> = first.iter().chain(&second).map(|t| t.to_string()).collect();
        s += &format!("{} {}\n", 101 + i, list.join(" "));
    }
    s + "$EndElements\n"
}

fn column_input(dir: &Path, name: &str, inverted: Option<usize>) -> String {
    std::fs::write(dir.join(format!("{name}.msh")), column_msh(inverted)).unwrap();
    let yaml = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &yaml,
        format!("mesh:\n  gmsh: {{ file: {name}.msh }}\nmaterials:\n  - {{ model: linear, young_modulus: 1.0, poisson_ratio: 0.3 }}\nboundary:\n  dirichlet:\n    - {{ set: left, x: 0.0, y: 0.0, z: 0.0 }}\n"),
    )
    .unwrap();
    yaml.to_string_lossy().into_owned()
}

#[test]
fn check_runs_distributed_and_reports_the_partition() {
    let dir = scratch("check");
    for np in [2, 4] {
        let out = hexfem_on(
            np,
            &[
                "check",
                &input("cantilever_q1.yaml"),
                "-o",
                dir.0.to_str().unwrap(),
            ],
        );
        assert!(out.status.success(), "{}", output_text(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("valid on {np} MPI ranks")), "{text}");
        assert!(text.contains("640 cells, 1025 nodes"), "{text}");
        assert_eq!(
            text.matches("valid on").count(),
            1,
            "printed by rank 0 only: {text}"
        );
    }
    let out = hexfem_on(4, &["check", &column_input(&dir.0, "upright", None)]);
    assert!(out.status.success(), "{}", output_text(&out));
}

/// `HEXFEM_MPI_TRANSPORT` (read before MPI starts): a value that is no choice stops every rank
/// with the variable, its value and the valid choices; `auto` and `library` run.
#[test]
fn an_mpi_transport_setting_that_is_no_choice_is_named() {
    let yaml = input("cantilever_q1.yaml");
    let check = |value: &str| {
        run_mpirun(2, |cmd| {
            cmd.arg(env!("CARGO_BIN_EXE_hexfem"))
                .args(["check", yaml.as_str()])
                .env("CI", "1")
                .env("HEXFEM_MPI_TRANSPORT", value);
        })
        .expect("mpirun (Open MPI) runs")
    };
    let out = check("shm");
    assert!(!out.status.success());
    let text = output_text(&out);
    assert!(
        text.contains(r#"HEXFEM_MPI_TRANSPORT="shm" is not a choice (valid: auto, library)"#),
        "{text}"
    );
    for value in ["auto", "library"] {
        let out = check(value);
        assert!(out.status.success(), "{value}: {}", output_text(&out));
    }
}

/// `HEXFEM_MPI_THREADS` (read before MPI starts): with `serialized` MPI gives no concurrent
/// communicator and the output's gathers run on each rank's run thread, and the files are those
/// of the default (the gathers on the ranks' output threads) byte for byte, with the same
/// figures; a value that is no choice stops every rank naming the valid ones.
#[test]
fn the_output_gathered_on_the_run_threads_of_serialized_mpi_is_the_same() {
    let dir = scratch("threads");
    let yaml = input("cantilever_q2.yaml");
    let fields = "output.fields=[displacement, reaction, cauchy_stress, von_mises, jacobian, \
                  energy_density, nodal_cauchy_stress, nodal_von_mises, strain, \
                  green_lagrange_strain, logarithmic_strain, principal_stress, \
                  nodal_principal_stress, sets]";
    let run = |threads: Option<&str>, tag: &str| {
        let out_dir = dir.0.join(tag);
        let out = run_mpirun(3, |cmd| {
            cmd.arg(env!("CARGO_BIN_EXE_hexfem"))
                .args(["run", yaml.as_str(), "-q", "--set", fields, "-o"])
                .arg(&out_dir)
                .env("CI", "1");
            if let Some(threads) = threads {
                cmd.env("HEXFEM_MPI_THREADS", threads);
            }
        })
        .expect("mpirun (Open MPI) runs");
        (out, out_dir)
    };
    let (threaded, a) = run(None, "multiple");
    assert!(threaded.status.success(), "{}", output_text(&threaded));
    let (serialized, b) = run(Some("serialized"), "serialized");
    assert!(serialized.status.success(), "{}", output_text(&serialized));
    for ext in ["h5", "xdmf"] {
        let file = |d: &Path| std::fs::read(d.join(format!("cantilever_q2.{ext}"))).unwrap();
        assert!(file(&a) == file(&b), "the .{ext} files differ");
    }
    let (one, other) = (summary(&a, "cantilever_q2"), summary(&b, "cantilever_q2"));
    assert_same_figures(&one, &other, 0.0, "serialized against multiple");
    let (bad, _) = run(Some("funneled"), "bad");
    assert!(!bad.status.success());
    let text = output_text(&bad);
    assert!(
        text.contains(
            r#"HEXFEM_MPI_THREADS="funneled" is not a choice (valid: multiple, serialized)"#
        ),
        "{text}"
    );
}

/// The hold check is collective: on 2 and 3 ranks a body held only in x is refused by `check`
/// and `run` with the serial message (the free motions of the whole body), printed once.
#[test]
fn a_body_held_in_one_direction_is_refused_on_every_rank_count() {
    let dir = scratch("held");
    let partial = "boundary.dirichlet=[{ set: xmin, x: 0.0 }]";
    for np in [2, 3] {
        for command in ["check", "run"] {
            let out = hexfem_on(
                np,
                &[
                    command,
                    &input("cantilever_q1.yaml"),
                    "--set",
                    partial,
                    "-o",
                    dir.0.to_str().unwrap(),
                ],
            );
            assert!(!out.status.success(), "{}", output_text(&out));
            let err = String::from_utf8_lossy(&out.stderr);
            let needle = "translation along y, translation along z and rotation about x";
            assert_eq!(
                err.matches(needle).count(),
                1,
                "{command} on {np} ranks: {}",
                output_text(&out)
            );
        }
    }
}

/// Two columns of 4 Q1 cells along x (x in [0, 4] and [5, 9], element tags 101..=108) in MSH
/// 4.1, sharing no node; the face x = 0 is the set "left".
fn two_columns_msh() -> String {
    let planes: Vec<usize> = (0..=4).chain(5..=9).collect();
    let nodes = 4 * planes.len();
    let tag = |p: usize, j: usize, k: usize| 1 + p + planes.len() * (j + 2 * k);
    let mut s = String::from("$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$PhysicalNames\n1\n2 1 \"left\"\n$EndPhysicalNames\n");
    s += &format!("$Entities\n0 0 1 1\n1 0 0 0 0 1 1 1 1 0\n1 0 0 0 9 1 1 0 0\n$EndEntities\n$Nodes\n1 {nodes} 1 {nodes}\n3 1 0 {nodes}\n");
    for t in 1..=nodes {
        s += &format!("{t}\n");
    }
    for k in 0..2 {
        for j in 0..2 {
            for x in &planes {
                s += &format!("{x} {j} {k}\n");
            }
        }
    }
    s += "$EndNodes\n$Elements\n2 9 100 108\n2 1 3 1\n";
    s += &format!(
        "100 {} {} {} {}\n",
        tag(0, 0, 0),
        tag(0, 0, 1),
        tag(0, 1, 1),
        tag(0, 1, 0)
    );
    s += "3 1 5 8\n";
    let cells = (0..4).chain(5..9);
    for (e, p) in cells.enumerate() {
        let list: Vec<String> = [(p, 0, 0), (p + 1, 0, 0), (p + 1, 1, 0), (p, 1, 0)]
            .iter()
            .chain(&[(p, 0, 1), (p + 1, 0, 1), (p + 1, 1, 1), (p, 1, 1)])
            .map(|&(p, j, k)| tag(p, j, k).to_string())
            .collect();
        s += &format!("{} {}\n", 101 + e, list.join(" "));
    }
    s + "$EndElements\n"
}

/// The pieces of a mesh are found across the ranks: on 1, 2 and 3 ranks the second of two
/// columns (held by nothing) is named by `check` with the serial message, printed once.
#[test]
fn a_piece_that_nothing_holds_is_named_on_every_rank_count() {
    let dir = scratch("pieces");
    std::fs::write(dir.0.join("two.msh"), two_columns_msh()).unwrap();
    let yaml = dir.0.join("two.yaml");
    std::fs::write(
        &yaml,
        "mesh:\n  gmsh: { file: two.msh }\nmaterials:\n  - { model: linear, young_modulus: 1.0, poisson_ratio: 0.3 }\nboundary:\n  dirichlet:\n    - { set: left, x: 0.0, y: 0.0, z: 0.0 }\n",
    )
    .unwrap();
    for np in [1, 2, 3] {
        let out = hexfem_on(np, &["check", yaml.to_str().unwrap()]);
        assert!(!out.status.success(), "{}", output_text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        let needle = "2 separate pieces";
        assert_eq!(
            err.matches(needle).count(),
            1,
            "{np} ranks: {}",
            output_text(&out)
        );
        assert!(
            err.contains("the piece of 4 cells from Gmsh element 105"),
            "{np} ranks: {err}"
        );
    }
}

#[test]
fn an_inverted_element_on_one_rank_ends_every_rank_with_its_message() {
    let dir = scratch("inverted");
    // The last cell of the column lies in the last METIS part, not on rank 0.
    let yaml = column_input(&dir.0, "inverted", Some(7));
    let out = hexfem_on(4, &["check", &yaml]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let needle = "Gmsh element 108 (cell 7): non-positive Jacobian determinant";
    assert_eq!(
        err.matches(needle).count(),
        1,
        "printed once: {}",
        output_text(&out)
    );
    assert!(err.contains("inverted.yaml"), "the input is named: {err}");
    let rank = err
        .split("rank ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|r| r.parse::<usize>().ok())
        .expect("the failing rank is named");
    assert_ne!(rank, 0, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // The serial run names the same element.
    let serial = std::process::Command::new(env!("CARGO_BIN_EXE_hexfem"))
        .args(["check", &yaml])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&serial.stderr).contains(needle));
}

/// Tolerances under which the serial and distributed runs (different linear solvers: the
/// serial default, CG with the distributed AMG) reach the same solution to 1e-10.
const TIGHT: [&str; 8] = [
    "--set",
    "newton.forcing=fixed",
    "--set",
    "linear_solver.rtol=1e-13",
    "--set",
    "newton.rtol=1e-12",
    "--set",
    "newton.atol=0",
];

/// Every f64 dataset of `b` equals `a`'s (the same paths in the same order) to `rtol` relative
/// to the dataset's largest magnitude; integer datasets are equal.
fn assert_same_results(a: &Path, b: &Path, rtol: f64) {
    let (a, b) = (
        io::ResultsReader::open(a).unwrap(),
        io::ResultsReader::open(b).unwrap(),
    );
    let paths = a.dataset_paths().unwrap();
    assert_eq!(paths, b.dataset_paths().unwrap());
    for path in &paths {
        match (a.read_f64(path), b.read_f64(path)) {
            (Ok((sa, va)), Ok((sb, vb))) => {
                assert_eq!(sa, sb, "{path}");
                let scale = va.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
                let worst = va
                    .iter()
                    .zip(&vb)
                    .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
                assert!(
                    worst <= rtol * scale,
                    "{path}: differs by {worst:e} (scale {scale:e})"
                );
            }
            _ => assert_eq!(
                a.read_i64(path).unwrap(),
                b.read_i64(path).unwrap(),
                "{path}"
            ),
        }
    }
}

/// Every step's strain energy, largest displacement and reaction totals of summary `b` equal
/// `a`'s to `rtol` relative to the largest magnitude of each.
fn assert_same_figures(a: &serde_json::Value, b: &serde_json::Value, rtol: f64, what: &str) {
    fn numbers(v: &serde_json::Value, out: &mut Vec<f64>) {
        match v {
            serde_json::Value::Number(n) => out.push(n.as_f64().unwrap()),
            serde_json::Value::Array(a) => a.iter().for_each(|x| numbers(x, out)),
            serde_json::Value::Object(o) => o.values().for_each(|x| numbers(x, out)),
            _ => {}
        }
    }
    let (sa, sb) = (
        a["steps"].as_array().unwrap(),
        b["steps"].as_array().unwrap(),
    );
    assert_eq!(sa.len(), sb.len(), "{what}");
    for key in ["strain_energy", "max_displacement", "reactions"] {
        let (mut x, mut y) = (Vec::new(), Vec::new());
        sa.iter().for_each(|s| numbers(&s[key], &mut x));
        sb.iter().for_each(|s| numbers(&s[key], &mut y));
        assert_eq!(x.len(), y.len(), "{what}: {key}");
        let scale = x.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
        for (p, q) in x.iter().zip(&y) {
            assert!((p - q).abs() <= rtol * scale, "{what}: {key} {p} vs {q}");
        }
    }
}

fn summary(dir: &Path, name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join(format!("{name}.summary.json"))).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Newton iterations of each step of a summary, and the linear iterations of each of its
/// Newton iterations.
fn iterations(s: &serde_json::Value) -> (Vec<u64>, Vec<Vec<u64>>) {
    let steps = s["steps"].as_array().expect("steps");
    (
        steps
            .iter()
            .map(|st| st["newton_iterations"].as_u64().unwrap())
            .collect(),
        steps
            .iter()
            .map(|st| {
                st["linear_iterations"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_u64().unwrap())
                    .collect()
            })
            .collect(),
    )
}

/// Per step, which Newton iterations' linear solves fell back to GMRES after a CG breakdown
/// (the step log's `linear_solver[i].linear.fallback`).
fn fallbacks(dir: &Path, name: &str) -> Vec<Vec<bool>> {
    let log = std::fs::read_to_string(dir.join(format!("{name}.steps.jsonl"))).unwrap();
    log.lines()
        .map(|line| {
            let step: serde_json::Value = serde_json::from_str(line).unwrap();
            step["linear_solver"]
                .as_array()
                .unwrap()
                .iter()
                .map(|it| it["linear"].get("fallback").is_some_and(|f| !f.is_null()))
                .collect()
        })
        .collect()
}

/// Every input under `mpirun -np 1..4` (the cubes also on 8 ranks) equals the serial run at
/// the default tolerances: the same Newton and CG iterations in every step and the same
/// solution to 1e-10 (both runs use CG with AMG; the serial `auto` picks the direct solver for
/// these small problems).
#[test]
fn run_on_one_to_four_or_eight_ranks_equals_the_serial_run_iteration_for_iteration() {
    let dir = scratch("run");
    let d = |tag: &str| dir.0.join(tag).to_string_lossy().into_owned();
    // every input in inputs/
    for name in [
        "cantilever_q1",
        "cantilever_q2",
        "neo_hookean_block",
        "cook_membrane",
        "twisting_column",
        "layered_bar",
        "slender_beam",
        "follower_pressure_block",
        "rubber_block_incompressible",
    ] {
        let yaml = input(&format!("{name}.yaml"));
        let args = vec![
            "run",
            yaml.as_str(),
            "-q",
            "--set",
            "linear_solver.method=cg_amg",
        ];
        let serial_dir = d("serial");
        let serial = std::process::Command::new(env!("CARGO_BIN_EXE_hexfem"))
            .args(&args)
            .args(["-o", &serial_dir])
            .output()
            .unwrap();
        assert!(serial.status.success(), "{}", output_text(&serial));
        let one = summary(Path::new(&serial_dir), name);
        // the cubes also on 8 ranks: a 2 x 2 x 2 grid of boxes (edge and corner neighbours)
        let cube = name.ends_with("_block");
        for np in [1, 2, 3, 4, 8].into_iter().filter(|&np| np <= 4 || cube) {
            let many_dir = d(&format!("np{np}"));
            let mut a = args.clone();
            a.extend(["-o", many_dir.as_str()]);
            if np > 1 {
                a.extend(["--test-output-window", "64"]);
            }
            let out = hexfem_on(np, &a);
            assert!(
                out.status.success(),
                "{name} on {np}: {}",
                output_text(&out)
            );
            assert_same_results(
                &Path::new(&serial_dir).join(format!("{name}.h5")),
                &Path::new(&many_dir).join(format!("{name}.h5")),
                1e-10,
            );
            let many = summary(Path::new(&many_dir), name);
            if np > 1 {
                assert_eq!(many["ranks"]["ranks"], np);
                // CPU ranks: halos through MPI
                assert_eq!(many["ranks"]["exchange"], "staged");
                let rows = many["ranks"]["owned_rows"].as_array().unwrap();
                let total: u64 = rows.iter().map(|r| r.as_u64().unwrap()).sum();
                assert_eq!(total, 3 * one["mesh"]["nodes"].as_u64().unwrap());
            }
            assert!(one.get("ranks").is_none());
            let ((n1, l1), (n2, l2)) = (iterations(&one), iterations(&many));
            assert_eq!(n1, n2, "{name} on {np} ranks: Newton iterations per step");
            assert_eq!(l1, l2, "{name} on {np} ranks: CG iterations per step");
            // CG breakdowns (an indefinite tangent in slender_beam's bending) fall back to
            // GMRES on ranks where the serial solver does
            let serial_fallbacks = fallbacks(Path::new(&serial_dir), name);
            assert_eq!(
                serial_fallbacks,
                fallbacks(Path::new(&many_dir), name),
                "{name} on {np} ranks: GMRES fallbacks"
            );
            if name == "slender_beam" {
                assert!(serial_fallbacks.iter().flatten().any(|&f| f));
            }
            assert_same_figures(&one, &many, 1e-10, &format!("{name} on {np} ranks"));
        }
    }
    // one rank is the serial program (no `ranks` in the summary)
    let one_dir = d("np1-alone");
    let one = hexfem_on(
        1,
        &["run", &input("cantilever_q1.yaml"), "-q", "-o", &one_dir],
    );
    assert!(one.status.success(), "{}", output_text(&one));
    assert!(summary(Path::new(&one_dir), "cantilever_q1")
        .get("ranks")
        .is_none());
}

#[test]
fn an_inverted_element_on_one_rank_ends_a_distributed_run_with_its_message() {
    let dir = scratch("run-inverted");
    let yaml = column_input(&dir.0, "inverted", Some(7));
    let out = hexfem_on(4, &["run", &yaml, "-q", "-o", dir.0.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let needle = "Gmsh element 108 (cell 7): non-positive Jacobian determinant";
    assert_eq!(
        err.matches(needle).count(),
        1,
        "printed once: {}",
        output_text(&out)
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bench_distributed_runs_on_one_and_several_ranks_with_the_same_cg_and_amg_iterations() {
    let args = [
        "bench",
        "distributed",
        "--cells",
        "6",
        "--repeats",
        "1",
        "--amg",
        "--json",
    ];
    let serial = std::process::Command::new(env!("CARGO_BIN_EXE_hexfem"))
        .args(args)
        .output()
        .unwrap();
    assert!(serial.status.success(), "{}", output_text(&serial));
    let parse = |out: &Output| -> serde_json::Value {
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", output_text(out)))
    };
    let one = parse(&serial);
    assert_eq!(one["ranks"], 1);
    assert_eq!(one["halo_values_per_spmv"], 0);
    for np in [2, 4] {
        let out = hexfem_on(np, &args);
        assert!(out.status.success(), "{}", output_text(&out));
        let many = parse(&out);
        assert_eq!(many["ranks"], np);
        assert_eq!(many["unknowns"], one["unknowns"]);
        assert_eq!(many["cg_iterations"], one["cg_iterations"], "{many}");
        assert_eq!(many["cg_converged"], true);
        assert!(many["halo_values_per_spmv"].as_u64().unwrap() > 0);
        assert_eq!(many["per_rank"].as_array().unwrap().len(), np);
        // The distributed AMG: the same hierarchy and iterations on every rank count.
        assert_eq!(many["amg"]["levels"], one["amg"]["levels"], "{many}");
        assert_eq!(many["amg"]["cg_iterations"], one["amg"]["cg_iterations"]);
        assert_eq!(many["amg"]["cg_converged"], true);
        assert_eq!(
            many["amg"]["hot_update_p_values"], 0,
            "a hot update sends no P"
        );
    }
}

/// The output written window by window under mpirun is the serial run's file byte for byte,
/// and the state's figures (strain energy, largest displacement, reactions) its bits.
/// Each run continues from the last step of a serial run's file (`--restart`), so it computes
/// nothing but that state and its output: the state is the same bits on any rank count, and
/// what the ranks send rank 0 in windows of 40 values (many windows per dataset) must give the
/// serial HDF5 file (mesh, sets in serial numbering, every field of the step), the XDMF, the
/// summary's mesh figures and the probes of that state, exactly (with float64 fields and with
/// `output.precision: single`). A restart from another mesh's
/// file is an error on every rank, printed once.
#[test]
fn output_written_window_by_window_on_2_3_4_ranks_is_the_serial_file() {
    let dir = scratch("windows");
    let d = |tag: &str| dir.0.join(tag).to_string_lossy().into_owned();
    let probes = "output.probes={points: [{name: mid, at: [0.1, 0.2, 2.05]}], sets: [{set: zmax, name: top}, {set: zmin, name: bottom, about: [0, 0, 0]}], globals: [strain_energy, max_displacement]}";
    // probes of fields: cell fields at points (on whichever rank owns their cells), cell and
    // nodal fields over face, node and cell sets, the cell-field globals
    let field_probes = "output.probes={points: [{name: mid, at: [0.1, 0.2, 2.05], fields: [displacement, cauchy_stress, von_mises, green_lagrange_strain, principal_stress]}, {name: high, at: [0.3, -0.2, 3.9], fields: [jacobian, logarithmic_strain, energy_density]}], sets: [{set: zmin, name: base, fields: [von_mises, nodal_von_mises, strain, nodal_principal_stress]}, {set: zmax, fields: [jacobian, nodal_cauchy_stress, principal_stress]}, {set: xmax, about: [0, 0, 0]}, {set: all, name: body, fields: [energy_density, nodal_von_mises]}], globals: [strain_energy, max_von_mises, max_principal_stress, min_principal_stress, min_jacobian, max_displacement]}";
    // every field, the optional strains and principal stresses included
    let fields = "output.fields=[displacement, reaction, cauchy_stress, von_mises, jacobian, \
                  energy_density, nodal_cauchy_stress, nodal_von_mises, strain, \
                  green_lagrange_strain, logarithmic_strain, principal_stress, \
                  nodal_principal_stress, sets]";
    for (case, (name, extra)) in [
        ("cantilever_q1", &[][..]),
        ("cantilever_q2", &[fields][..]),
        ("neo_hookean_block", &[fields][..]),
        ("cook_membrane", &[][..]),
        ("twisting_column", &[probes, fields][..]),
        ("twisting_column", &[field_probes][..]),
        // float32 fields: the ranks' windows rounded as the serial writer rounds
        ("cantilever_q2", &[fields, "output.precision=single"][..]),
        // no cell field read: the cell records carry the strain energy alone
        ("neo_hookean_block", &["output.fields=[displacement]"][..]),
    ]
    .into_iter()
    .enumerate()
    {
        let yaml = input(&format!("{name}.yaml"));
        let mut args = vec!["run", yaml.as_str(), "-q"];
        for set in extra {
            args.extend(["--set", set]);
        }
        let run = |np: usize, out: &str, restart: Option<&str>| {
            let mut a = args.clone();
            a.extend(["-o", out]);
            if let Some(r) = restart {
                a.extend(["--restart", r, "--test-output-window", "40"]);
            }
            let out = if np == 0 {
                std::process::Command::new(env!("CARGO_BIN_EXE_hexfem"))
                    .args(&a)
                    .output()
                    .unwrap()
            } else {
                hexfem_on(np, &a)
            };
            assert!(
                out.status.success(),
                "{name} on {np}: {}",
                output_text(&out)
            );
        };
        let first = d(&format!("{name}{case}-first"));
        run(0, &first, None);
        let h5 = Path::new(&first).join(format!("{name}.h5"));
        let h5 = h5.to_string_lossy().into_owned();
        let serial = d(&format!("{name}{case}-serial"));
        run(0, &serial, Some(&h5));
        let file = |dir: &str, ext: &str| {
            std::fs::read(Path::new(dir).join(format!("{name}.{ext}"))).unwrap()
        };
        for np in [2, 3, 4] {
            let many = d(&format!("{name}{case}-np{np}"));
            run(np, &many, Some(&h5));
            assert_same_results(
                &Path::new(&serial).join(format!("{name}.h5")),
                &Path::new(&many).join(format!("{name}.h5")),
                0.0,
            );
            assert!(
                file(&serial, "h5") == file(&many, "h5"),
                "{name} on {np} ranks: the HDF5 file differs from the serial one"
            );
            assert_eq!(file(&serial, "xdmf"), file(&many, "xdmf"), "{name}");
            let (one, more) = (
                summary(Path::new(&serial), name),
                summary(Path::new(&many), name),
            );
            assert_eq!(one["mesh"], more["mesh"], "{name} on {np}");
            // the state's figures (the strain energy summed in serial order) bit for bit
            assert_same_figures(&one, &more, 0.0, &format!("{name}{case} on {np}"));
            // the state's probes: a point, set sums (about a centroid and a point), globals
            if extra.contains(&probes) || extra.contains(&field_probes) {
                assert_eq!(
                    String::from_utf8_lossy(&file(&serial, "probes.csv")),
                    String::from_utf8_lossy(&file(&many, "probes.csv")),
                    "{name} on {np}: the probe table"
                );
            }
            let ranks = &more["ranks"];
            assert_eq!(ranks["newton_s"].as_array().unwrap().len(), np);
            // a window of 40 values: rank 0 holds one received and merged (2 x 40 x 8 bytes),
            // the others their message (40 x 8); a window holds one record at least, and a
            // cell's with three strains is 13 + 27 values and its id: 41 (42 with the word of the
            // set probes' cell membership)
            let window = if extra.contains(&fields) {
                41
            } else if extra.contains(&field_probes) {
                42
            } else {
                40
            };
            for (rank, r) in ranks["output_bytes"].as_array().unwrap().iter().enumerate() {
                let windows = if rank == 0 { 2 } else { 1 };
                assert!(
                    r.as_u64().unwrap() <= windows * window * 8,
                    "{name} on {np}: {ranks}"
                );
            }
        }
    }
    // the ranks read the restart's displacement window by window, and check the mesh
    let other = Path::new(&d("twisting_column4-first")).join("twisting_column.h5");
    let out = hexfem_on(
        2,
        &[
            "run",
            &input("cantilever_q1.yaml"),
            "-q",
            "-o",
            &d("mismatch"),
            "--restart",
            &other.to_string_lossy(),
            "--test-output-window",
            "40",
        ],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("is not the input's").count(),
        1,
        "{}",
        output_text(&out)
    );
}

/// A point load lies on one rank's part only: the distributed run finds it there and equals the
/// serial run; a point at no node is the serial run's error on every rank, printed once.
#[test]
fn point_loads_on_one_rank_and_missing_points_under_mpirun() {
    let dir = scratch("point");
    let write = |name: &str, at: &str| {
        let yaml = dir.0.join(format!("{name}.yaml"));
        std::fs::write(
            &yaml,
            format!("mesh:\n  box: {{ cells: [12, 2, 2], lower: [0, 0, 0], upper: [6, 1, 1], order: 1 }}\nmaterials:\n  - {{ model: linear, young_modulus: 1.0e3, poisson_ratio: 0.3 }}\nboundary:\n  dirichlet:\n    - {{ set: xmin, x: 0.0, y: 0.0, z: 0.0 }}\n  point_load:\n    - {{ at: {at}, value: [0.0, 0.0, -1.0] }}\n"),
        )
        .unwrap();
        yaml.to_string_lossy().into_owned()
    };
    let tip = write("tip", "[6.0, 1.0, 1.0]");
    let out_dir = |tag: &str| dir.0.join(tag).to_string_lossy().into_owned();
    let mut args = vec!["run", tip.as_str(), "-q"];
    args.extend(TIGHT);
    let serial_dir = out_dir("serial");
    let serial = std::process::Command::new(env!("CARGO_BIN_EXE_hexfem"))
        .args(&args)
        .args(["-o", &serial_dir])
        .output()
        .unwrap();
    assert!(serial.status.success(), "{}", output_text(&serial));
    let many_dir = out_dir("np4");
    args.extend(["-o", many_dir.as_str()]);
    let out = hexfem_on(4, &args);
    assert!(out.status.success(), "{}", output_text(&out));
    assert_same_results(
        &Path::new(&serial_dir).join("tip.h5"),
        &Path::new(&many_dir).join("tip.h5"),
        1e-10,
    );
    let nowhere = write("nowhere", "[6.0, 0.3, 1.0]");
    let out = hexfem_on(4, &["run", &nowhere, "-q", "-o", &many_dir]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let needle = "boundary.point_load[0].at: no mesh node at [6, 0.3, 1]";
    assert_eq!(err.matches(needle).count(), 1, "{}", output_text(&out));
}

/// Options the distributed solver cannot honour are errors at their place in the input, on
/// every rank, printed once: never silently replaced.
#[test]
fn options_the_ranks_cannot_honour_are_located_errors() {
    let dir = scratch("unhonoured");
    for (name, solver, key) in [
        (
            "direct",
            "{ method: direct }",
            "linear_solver.method: direct is not available on 2 MPI ranks (valid there: auto, cg_amg, cg_jacobi)",
        ),
        (
            "scalar",
            "{ method: cg_amg, amg: { storage: scalar } }",
            "linear_solver.amg.storage: scalar is not available on 2 MPI ranks (valid there: blocked)",
        ),
        (
            "cuda",
            "{ method: cg_amg }\ndevice: cuda",
            // this machine has no GPU: the selection's agreed error, at the `device` key
            "device: cuda on 2 MPI ranks: rank 0 of 2: no usable GPU for node-local rank 0 of 2:",
        ),
        (
            "vtu",
            "{ method: cg_amg }\noutput: { vtu: true }",
            "output.vtu: true is not available on 2 MPI ranks (the .vtu files need the whole mesh on one rank; valid there: false)",
        ),
    ] {
        let yaml = dir.0.join(format!("{name}.yaml"));
        std::fs::write(
            &yaml,
            format!("mesh:\n  box: {{ cells: [4, 2, 2], lower: [0, 0, 0], upper: [4, 1, 1], order: 1 }}\nmaterials:\n  - {{ model: linear, young_modulus: 1.0, poisson_ratio: 0.3 }}\nboundary:\n  dirichlet:\n    - {{ set: xmin, x: 0.0, y: 0.0, z: 0.0 }}\nlinear_solver: {solver}\n"),
        )
        .unwrap();
        let yaml = yaml.to_string_lossy().into_owned();
        let out = hexfem_on(2, &["run", &yaml, "-q", "-o", dir.0.to_str().unwrap()]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.matches(key).count(), 1, "{}", output_text(&out));
        let line = if name == "cuda" || name == "vtu" { 9 } else { 8 };
        assert!(err.contains(&format!("{name}.yaml:{line}:")), "{err}");
    }
}

/// `bench gamg` on 2 ranks: the serial hierarchy and CG iterations, no prolongator values in
/// the hot update, traffic counted by the comm layer, every rank reported.
#[test]
fn bench_gamg_on_two_ranks_gives_the_serial_iterations_and_counts_the_traffic() {
    let args = ["bench", "gamg", "--problem", "ex56", "--m", "9", "--json"];
    let serial = std::process::Command::new(env!("CARGO_BIN_EXE_hexfem"))
        .args(args)
        .output()
        .unwrap();
    assert!(serial.status.success(), "{}", output_text(&serial));
    let parse = |out: &Output| -> serde_json::Value {
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", output_text(out)))
    };
    let one = parse(&serial);
    let out = hexfem_on(2, &args);
    assert!(out.status.success(), "{}", output_text(&out));
    let two = parse(&out);
    assert_eq!(two["ranks"], 2);
    assert_eq!(two["unknowns"], one["unknowns"]);
    assert_eq!(two["rows_per_level"], one["rows_per_level"], "{two}");
    assert_eq!(two["iterations"], one["iterations"], "{two}");
    assert_eq!(two["converged"], true);
    assert_eq!(two["hot_update_p_values"], 0, "a hot update sends no P");
    assert!(two["hot_update_bytes"].as_u64().unwrap() > 0);
    assert!(two["cg_iteration"]["messages"].as_f64().unwrap() > 0.0);
    assert_eq!(two["spmv_messages"], 2, "one halo message each way");
    let ranks = two["per_rank"].as_array().unwrap();
    assert_eq!(ranks.len(), 2);
    let rows: u64 = ranks.iter().map(|r| r["rows"].as_u64().unwrap()).sum();
    assert_eq!(rows, one["unknowns"].as_u64().unwrap());
    assert!(two["rows_imbalance"].as_f64().unwrap() >= 1.0);
}

/// `--restart` under `mpirun`: every rank takes its nodes' displacements from the file, and
/// the restarted run's steps equal the uninterrupted run's: bit for bit on the same rank count,
/// to rounding on another one. `--plot` draws the uninterrupted run's plots on rank 0.
#[test]
fn a_restart_on_ranks_continues_the_uninterrupted_run_and_plots_are_drawn() {
    let dir = scratch("restart");
    let d = |tag: &str| dir.0.join(tag).to_string_lossy().into_owned();
    let yaml = input("twisting_column.yaml");
    let run = |np: usize, out: &str, restart: Option<&str>| {
        let mut args = vec![
            "run",
            yaml.as_str(),
            "--set",
            "linear_solver.method=cg_amg",
            "-o",
            out,
        ];
        // the uninterrupted run prints (`-q` prints nothing but errors): its plots line is
        // counted below
        match restart {
            Some(r) => args.extend(["-q", "--restart", r]),
            None => args.push("--plot"),
        }
        let out = hexfem_on(np, &args);
        assert!(out.status.success(), "{}", output_text(&out));
        out
    };
    let full = d("full");
    // `--plot` on ranks: rank 0 draws the run's plots once
    let out = run(2, &full, None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("plots: ").count(), 1, "{text}");
    let pngs = std::fs::read_dir(&full)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "png")
        })
        .count();
    assert!(pngs > 0, "{text}");
    let from = format!("{full}/twisting_column.h5:3");
    for (np, rtol) in [(2, 0.0), (3, 1e-10)] {
        let again = d(&format!("restart{np}"));
        run(np, &again, Some(&from));
        let a = io::ResultsReader::open(&Path::new(&full).join("twisting_column.h5")).unwrap();
        let b = io::ResultsReader::open(&Path::new(&again).join("twisting_column.h5")).unwrap();
        let steps: Vec<usize> = b.steps().unwrap().iter().map(|(i, _)| *i).collect();
        assert_eq!(steps, [3, 4, 5, 6], "the restart's steps");
        for step in steps {
            let path = format!("/steps/{step:06}/displacement");
            let (_, x) = a.read_f64(&path).unwrap();
            let (_, y) = b.read_f64(&path).unwrap();
            let scale = x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let worst = x
                .iter()
                .zip(&y)
                .fold(0.0f64, |m, (p, q)| m.max((p - q).abs()));
            assert!(worst <= rtol * scale, "{np} ranks, step {step}: {worst:e}");
        }
        let s = summary(Path::new(&again), "twisting_column");
        assert!(s["run"]["restart"].as_str().unwrap().ends_with(":3"), "{s}");
    }
}

/// A follower pressure (a tangent that is not symmetric): the ranks solve by GMRES with the
/// distributed AMG, as the serial run does, with its Newton and GMRES iterations and solution.
#[test]
fn a_nonsymmetric_tangent_on_ranks_is_solved_by_gmres_as_in_the_serial_run() {
    let dir = scratch("pressure");
    let yaml = dir.0.join("pressure.yaml");
    std::fs::write(
        &yaml,
        "mesh:\n  box: { cells: [4, 4, 6], lower: [0, 0, 0], upper: [1, 1, 1.5], order: 1 }\nmaterials:\n  - { model: neo_hookean, young_modulus: 10.0, poisson_ratio: 0.3 }\nboundary:\n  dirichlet:\n    - { set: zmin, z: 0.0 }\n    - { set: xmin, x: 0.0 }\n    - { set: ymin, y: 0.0 }\n  pressure: [{ set: zmax, value: 2.0 }]\nloading: { steps: 3 }\nlinear_solver: { method: cg_amg }\n",
    )
    .unwrap();
    let yaml = yaml.to_string_lossy().into_owned();
    let d = |tag: &str| dir.0.join(tag).to_string_lossy().into_owned();
    let serial_dir = d("serial");
    let serial = std::process::Command::new(env!("CARGO_BIN_EXE_hexfem"))
        .args(["run", &yaml, "-q", "-o", &serial_dir])
        .output()
        .unwrap();
    assert!(serial.status.success(), "{}", output_text(&serial));
    let one = summary(Path::new(&serial_dir), "pressure");
    let many_dir = d("np3");
    let out = hexfem_on(3, &["run", &yaml, "-o", &many_dir]);
    assert!(out.status.success(), "{}", output_text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("linear solver GMRES"),
        "{}",
        output_text(&out)
    );
    assert_same_results(
        &Path::new(&serial_dir).join("pressure.h5"),
        &Path::new(&many_dir).join("pressure.h5"),
        1e-10,
    );
    let many = summary(Path::new(&many_dir), "pressure");
    assert_eq!(iterations(&one), iterations(&many));
}

/// The columns and rows of a `<name>.probes.csv`.
fn probe_table(path: &Path) -> (Vec<String>, Vec<Vec<f64>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header = lines
        .next()
        .unwrap()
        .split(',')
        .map(str::to_owned)
        .collect();
    let rows = lines
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    (header, rows)
}

/// One HDF5 file and one XDMF for the run whatever the rank count: on 1, 2 and 4 ranks every
/// dataset (integer data bit for bit, floats to 1e-10), every step's attributes and the XDMF
/// text are the same; a probe on the last rank's part (the tip, x = 6, in the last slab) and
/// set and global probes are reported alike on every rank count.
#[test]
fn output_files_are_the_same_on_one_two_and_four_ranks_and_probes_on_the_last_rank_are_reported() {
    let dir = scratch("files");
    let yaml = dir.0.join("tip.yaml");
    std::fs::write(
        &yaml,
        "mesh:\n  box: { cells: [12, 2, 2], lower: [0, 0, 0], upper: [6, 1, 1], order: 2 }\nmaterials:\n  - { model: neo_hookean, young_modulus: 1.0e3, poisson_ratio: 0.3 }\nboundary:\n  dirichlet:\n    - { set: xmin, x: 0.0, y: 0.0, z: 0.0 }\n  traction:\n    - { set: xmax, value: [0.0, 0.0, -0.5] }\nloading: { steps: 2 }\noutput:\n  probes:\n    points: [{ name: tip, at: [6.0, 0.5, 0.5] }]\n    sets: [{ set: xmin }]\n    globals: [strain_energy, max_displacement]\n",
    )
    .unwrap();
    let yaml = yaml.to_string_lossy().into_owned();
    let runs: Vec<PathBuf> = [1, 2, 4]
        .into_iter()
        .map(|np| {
            let out_dir = dir.0.join(format!("np{np}"));
            let o = out_dir.to_string_lossy().into_owned();
            let mut args = vec!["run", yaml.as_str(), "-q", "-o", o.as_str()];
            args.extend(TIGHT);
            let out = hexfem_on(np, &args);
            assert!(out.status.success(), "{np} ranks: {}", output_text(&out));
            out_dir
        })
        .collect();
    let (one, rest) = runs.split_first().unwrap();
    let (columns, base) = probe_table(&one.join("tip.probes.csv"));
    let uz = columns.iter().position(|c| c == "tip.uz").unwrap();
    assert_eq!(base.len(), 3, "steps 0, 1 and 2");
    assert!(base[2][uz] < 0.0, "the tip goes down: {:?}", base[2]);
    for many in rest {
        let (a, b) = (one.join("tip.h5"), many.join("tip.h5"));
        assert_same_results(&a, &b, 1e-10);
        let (ra, rb) = (
            io::ResultsReader::open(&a).unwrap(),
            io::ResultsReader::open(&b).unwrap(),
        );
        let steps = ra.steps().unwrap();
        assert_eq!(steps, rb.steps().unwrap());
        for (step, _) in steps {
            for name in ["time", "next_increment"] {
                assert_eq!(
                    ra.step_attribute(step, name).unwrap(),
                    rb.step_attribute(step, name).unwrap(),
                    "step {step} @{name}"
                );
            }
        }
        assert_eq!(
            std::fs::read_to_string(one.join("tip.xdmf")).unwrap(),
            std::fs::read_to_string(many.join("tip.xdmf")).unwrap(),
            "{}",
            many.display()
        );
        // rank 0 held the mesh and the gathered step, every other rank only its own values
        let ranks = &summary(many, "tip")["ranks"];
        let held: Vec<u64> = ranks["output_bytes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_u64().unwrap())
            .collect();
        assert_eq!(held.len(), ranks["ranks"].as_u64().unwrap() as usize);
        assert!(held[1..].iter().all(|&b| 0 < b && b < held[0]), "{held:?}");
        assert_eq!(
            ranks["peak_resident_bytes"].as_array().unwrap().len(),
            held.len()
        );
        let (c, rows) = probe_table(&many.join("tip.probes.csv"));
        assert_eq!(c, columns);
        assert_eq!(rows.len(), base.len());
        // each column to 1e-10 of the largest magnitude of its vector (tip.ux, .uy, .uz: the
        // tip's displacement), as the datasets are compared
        let group = |c: &str| c[..c.len() - 1].to_owned();
        for k in 0..columns.len() {
            let scale = (0..columns.len())
                .filter(|&j| group(&columns[j]) == group(&columns[k]))
                .flat_map(|j| base.iter().map(move |r| r[j].abs()))
                .fold(1e-300f64, f64::max);
            for (x, y) in rows.iter().zip(&base) {
                assert!(
                    (x[k] - y[k]).abs() <= 1e-10 * scale,
                    "{}: {} vs {}",
                    columns[k],
                    x[k],
                    y[k]
                );
            }
        }
    }
}

/// `run -` and `check -` under mpirun: rank 0 reads standard input (the only rank that has it)
/// and every rank runs the text; the files are named `stdin`, the run ends as the file's run
/// does, and an error on standard input is located there and printed once.
#[test]
fn stdin_input_is_read_by_rank_0_and_sent_to_every_rank() {
    let dir = scratch("stdin");
    let file = input("cantilever_q1.yaml");
    let on_stdin = |args: &[&str], stdin: std::process::Stdio| {
        run_mpirun(2, |cmd| {
            cmd.arg(env!("CARGO_BIN_EXE_hexfem"))
                .args(args)
                .env("CI", "1")
                .stdin(stdin);
        })
        .expect("mpirun (Open MPI) runs")
    };
    let open = || std::process::Stdio::from(std::fs::File::open(&file).unwrap());
    let out = on_stdin(&["check", "-"], open());
    assert!(out.status.success(), "{}", output_text(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("stdin: valid on 2 MPI ranks"), "{text}");
    let (piped, named) = (dir.0.join("piped"), dir.0.join("named"));
    let out = on_stdin(&["run", "-", "-o", piped.to_str().unwrap()], open());
    assert!(out.status.success(), "{}", output_text(&out));
    let out = hexfem_on(2, &["run", &file, "-o", named.to_str().unwrap()]);
    assert!(out.status.success(), "{}", output_text(&out));
    let (a, b) = (summary(&piped, "stdin"), summary(&named, "cantilever_q1"));
    assert_eq!(a["status"]["state"], "completed");
    assert_eq!(iterations(&a), iterations(&b));
    let bad = dir.0.join("bad.yaml");
    std::fs::write(&bad, "mesh: { box: { cels: [2, 2, 2] } }\n").unwrap();
    let out = on_stdin(
        &["run", "-"],
        std::process::Stdio::from(std::fs::File::open(&bad).unwrap()),
    );
    assert!(!out.status.success());
    let text = output_text(&out);
    assert_eq!(text.matches("stdin:1:").count(), 1, "{text}");
}

/// SIGINT to `mpirun` after the first step (Open MPI passes it on to the ranks as SIGTERM) stops
/// every rank at the same point: the summary says `interrupted` with the restart argument, the
/// file holds the steps written, and the restart on as many ranks ends bit for bit where the
/// uninterrupted run does.
#[test]
fn sigint_under_mpirun_stops_every_rank_and_the_restart_reproduces_the_run() {
    let dir = scratch("sigint");
    let (full, stopped, again) = (
        dir.0.join("full"),
        dir.0.join("stopped"),
        dir.0.join("again"),
    );
    let column = input("twisting_column.yaml");
    let sets = [
        "--set",
        "loading.steps=150",
        "--set",
        "mesh.box.cells=[2, 2, 12]",
    ];
    let run = |out: &Path, extra: &[&str]| {
        let mut args = vec!["run", column.as_str(), "-o", out.to_str().unwrap()];
        args.extend(sets);
        args.extend(extra);
        let out = hexfem_on(2, &args);
        assert!(out.status.success(), "{}", output_text(&out));
    };
    run(&full, &[]);
    let log = dir.0.join("stderr.txt");
    let mut child = comm::launch::mpirun(2)
        .arg(env!("CARGO_BIN_EXE_hexfem"))
        .args(["run", &column, "-o", stopped.to_str().unwrap()])
        .args(sets)
        .env("CI", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("mpirun (Open MPI) runs");
    let started = std::time::Instant::now();
    while !std::fs::read_to_string(&log).unwrap().contains("\nstep ") {
        assert!(started.elapsed().as_secs() < 120, "no step written");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    child.wait().unwrap();
    let message = std::fs::read_to_string(&log).unwrap();
    let s = summary(&stopped, "twisting_column");
    assert_eq!(s["status"]["state"], "interrupted", "{message}");
    let restart = s["status"]["restart"].as_str().unwrap().to_owned();
    assert_eq!(message.matches("--restart").count(), 1, "{message}");
    let h5 = stopped.join("twisting_column.h5");
    let written = io::ResultsReader::open(&h5).unwrap().steps().unwrap().len() - 1;
    assert_eq!(restart, format!("{}:{written}", h5.display()));
    run(&again, &["--restart", &restart]);
    let a = io::ResultsReader::open(&full.join("twisting_column.h5")).unwrap();
    let b = io::ResultsReader::open(&again.join("twisting_column.h5")).unwrap();
    let last = "/steps/000150/displacement";
    let (x, y) = (a.read_f64(last).unwrap().1, b.read_f64(last).unwrap().1);
    assert!(x.iter().zip(&y).all(|(p, q)| p.to_bits() == q.to_bits()));
}

/// A campaign of six cases on three meshes (no shared solver: every case's results are those
/// of a separate run, whatever ran before it).
fn sweep_campaign(dir: &Path) -> String {
    let file = dir.join("sweep.yaml");
    std::fs::write(
        &file,
        format!(
            "base: {}\nshare_solver: false\nset: {{ output.probes: {{ points: [{{ name: tip, at: [10, 0.5, 0.5] }}] }} }}\ngrid:\n  materials.0.young_modulus: [1.0e4, 3.0e4]\n  mesh.box.cells: [[20, 2, 2], [40, 4, 4], [10, 2, 2]]\n",
            input("cantilever_q1.yaml")
        ),
    )
    .unwrap();
    file.to_string_lossy().into_owned()
}

/// A campaign's rows (`results.jsonl`) and the where-it-ran columns of each, apart.
fn campaign_table(dir: &Path) -> (Vec<serde_json::Value>, Vec<serde_json::Value>) {
    std::fs::read_to_string(dir.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut row: serde_json::Value = serde_json::from_str(l).unwrap();
            let object = row.as_object_mut().unwrap();
            let mut place = serde_json::Map::new();
            for key in [
                "host",
                "group",
                "ranks",
                "gpu",
                "wall_s",
                "setup_s",
                "first_setup_s",
                "problem_s",
                "directory",
                "reused_problem",
                "reused_solver",
            ] {
                if let Some(v) = object.remove(key) {
                    place.insert(key.into(), v);
                }
            }
            (row, serde_json::Value::Object(place))
        })
        .unzip()
}

fn hexfem_serial(args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_hexfem"))
        .args(args)
        .env("CI", "1")
        .output()
        .unwrap()
}

/// `mpirun -np 2, 3, 4 hexfem campaign` (each rank a group running cases with the serial
/// solver) writes the serial campaign's table, row for row and bit for bit, but for where each
/// case ran; `--ranks-per-case 2` on 4 ranks (two groups, the distributed solver) gives every
/// case's figures to its solver's tolerance. Rank 0 alone writes the table, campaign.json and
/// the plots, and prints the summary once.
#[test]
fn campaign_under_mpirun_equals_the_serial_campaign() {
    let dir = scratch("campaign");
    let file = sweep_campaign(&dir.0);
    let serial = dir.0.join("serial");
    let out = hexfem_serial(&["campaign", &file, "-o", serial.to_str().unwrap()]);
    assert!(out.status.success(), "{}", output_text(&out));
    let (expected, _) = campaign_table(&serial);
    assert_eq!(expected.len(), 6);
    for np in [2, 3, 4] {
        let o = dir.0.join(format!("np{np}"));
        let out = hexfem_on(np, &["campaign", &file, "-o", o.to_str().unwrap()]);
        assert!(out.status.success(), "np {np}: {}", output_text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            stdout.matches("6 cases: 6 completed, 0 failed").count(),
            1,
            "np {np}: {stdout}"
        );
        let (rows, places) = campaign_table(&o);
        assert_eq!(rows, expected, "np {np}");
        // each case ran on one rank of a group of one; every group < np
        for p in &places {
            assert_eq!(p["ranks"], 1, "{p}");
            assert!(p["group"].as_u64().unwrap() < np as u64, "{p}");
            assert!(!p["host"].as_str().unwrap().is_empty());
        }
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(o.join("campaign.json")).unwrap())
                .unwrap();
        assert_eq!(
            (summary["ranks"].clone(), summary["completed"].clone()),
            (np.into(), 6.into())
        );
        assert!(o.join("plots").is_dir(), "np {np}: rank 0 draws the plots");
    }
    // two groups of two ranks: the distributed solver, to each case's tolerance
    let o = dir.0.join("np4k2");
    let out = hexfem_on(
        4,
        &[
            "campaign",
            &file,
            "-o",
            o.to_str().unwrap(),
            "--ranks-per-case",
            "2",
        ],
    );
    assert!(out.status.success(), "{}", output_text(&out));
    let (rows, places) = campaign_table(&o);
    assert_eq!(rows.len(), 6);
    for (a, b) in expected.iter().zip(&rows) {
        assert_eq!(
            (&a["case"], &a["status"], &a["parameters"], &a["steps"]),
            (&b["case"], &b["status"], &b["parameters"], &b["steps"])
        );
        let scale = a["max_displacement"].as_f64().unwrap();
        for key in ["strain_energy", "max_displacement"] {
            let (x, y) = (a[key].as_f64().unwrap(), b[key].as_f64().unwrap());
            assert!(
                (x - y).abs() <= 1e-7 * x.abs(),
                "case {}: {key} {x} vs {y}",
                a["case"]
            );
        }
        for (column, x) in a["probes"].as_object().unwrap() {
            let (x, y) = (x.as_f64().unwrap(), b["probes"][column].as_f64().unwrap());
            assert!(
                (x - y).abs() <= 1e-7 * scale,
                "case {}: {column} {x} vs {y}",
                a["case"]
            );
        }
    }
    for p in &places {
        assert_eq!(p["ranks"], 2, "{p}");
        assert!(p["group"].as_u64().unwrap() < 2, "{p}");
    }
    // groups that do not divide the ranks are refused on every rank, with one message
    let out = hexfem_on(
        3,
        &[
            "campaign",
            &file,
            "-o",
            o.to_str().unwrap(),
            "--ranks-per-case",
            "2",
        ],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.matches("do not split into groups of 2").count(),
        1,
        "{err}"
    );
}

/// A rank that dies in the middle of a case (the test hook aborts the rank that starts case 5,
/// on the smallest mesh, handed out last) ends the campaign; every case completed before is
/// kept, and `--resume` under mpirun runs the others to the serial campaign's table.
#[test]
fn a_crashed_rank_ends_the_campaign_and_resume_reruns_its_cases() {
    let dir = scratch("campaign-crash");
    let file = sweep_campaign(&dir.0);
    let serial = dir.0.join("serial");
    let out = hexfem_serial(&["campaign", &file, "-o", serial.to_str().unwrap()]);
    assert!(out.status.success(), "{}", output_text(&out));
    let killed = dir.0.join("killed");
    let killed_arg = killed.to_str().unwrap();
    let out = hexfem_on(
        3,
        &[
            "campaign",
            &file,
            "-o",
            killed_arg,
            "--test-abort-in-case",
            "5",
        ],
    );
    assert!(!out.status.success(), "{}", output_text(&out));
    assert!(!killed.join("case_0005/case.json").exists());
    let kept = (0..6)
        .filter(|i| killed.join(format!("case_{i:04}/case.json")).exists())
        .count();
    let out = hexfem_on(3, &["campaign", &file, "-o", killed_arg, "--resume"]);
    assert!(out.status.success(), "{}", output_text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let expected = if kept > 0 {
        format!("6 cases: 6 completed, 0 failed ({kept} resumed)")
    } else {
        "6 cases: 6 completed, 0 failed;".to_owned()
    };
    assert!(stdout.contains(&expected), "{stdout}");
    assert_eq!(campaign_table(&killed).0, campaign_table(&serial).0);
}

/// `run -v` on 2 ranks: the summary's stage table merges both ranks (each stage's minimum at
/// most its mean at most its maximum; the stages and `other` add up to the mean wall time;
/// every step's stages are there), and the command prints it with each stage's min and max.
#[test]
fn the_stage_table_on_two_ranks_has_each_stages_minimum_and_maximum() {
    let dir = scratch("stages");
    let out_dir = dir.0.to_string_lossy().into_owned();
    let args = [
        "run",
        &input("neo_hookean_block.yaml"),
        "-v",
        "--set",
        "linear_solver.method=cg_amg",
        "-o",
        &out_dir,
    ];
    let out = hexfem_on(2, &args);
    assert!(out.status.success(), "{}", output_text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.matches("where the time went (2 ranks;").count(),
        1,
        "{stdout}"
    );
    assert!(stdout.contains("max/min"), "{stdout}");
    let s = summary(&dir.0, "neo_hookean_block");
    let table = &s["stages"];
    assert_eq!(table["ranks"], 2, "{table:#}");
    let seconds =
        |row: &serde_json::Value| ["min_s", "max_s", "mean_s"].map(|k| row[k].as_f64().unwrap());
    let [wall_min, wall_max, wall_mean] = seconds(&table["wall"]);
    assert!(0.0 < wall_min && wall_min <= wall_mean && wall_mean <= wall_max);
    let rows = table["stages"].as_array().unwrap();
    let mut sum = 0.0;
    for row in rows {
        let [min, max, mean] = seconds(row);
        assert!(min <= mean && mean <= max, "{row}");
        sum += mean;
    }
    assert!(
        (sum - wall_mean).abs() <= 1e-9 * wall_mean,
        "{sum} {wall_mean}"
    );
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    for stage in [
        "start-up",
        "configuration",
        "mesh",
        "problem and plans",
        "device and linear solver",
        "output",
        "assembly",
        "AMG set-up cold",
        "solve",
        "line search",
    ] {
        assert!(names.contains(&stage), "{stage} missing from {names:?}");
    }
    assert_eq!(names.last(), Some(&"other"));
    // four load steps: at least one output per step and one assembly per Newton iteration
    let count = |name: &str| rows.iter().find(|r| r["name"] == name).unwrap()["count"].as_u64();
    assert!(count("output") >= Some(5), "{rows:?}");
    let newton: u64 = s["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|st| st["newton_iterations"].as_u64().unwrap())
        .sum();
    assert_eq!(count("solve"), Some(newton));
    // rank 0's writer wrote the five states (the undeformed one and four steps) beside the
    // stages, while the ranks went on
    let overlapped = table["overlapped"].as_array().unwrap();
    let writer = overlapped
        .iter()
        .find(|r| r["name"] == "output writer (background)")
        .unwrap_or_else(|| panic!("no writer row in {overlapped:?}"));
    assert_eq!(writer["count"].as_u64(), Some(5), "{writer}");
    assert!(stdout.contains("output writer (background)"), "{stdout}");
}

/// Boundary sets and set probes named by their Exodus ids (`twin_q1_ids.exo`, Cubit's ids, some
/// sets unnamed): on 2 and 3 ranks the results, the figures and the probe table are the serial
/// run's (the ranks refused the reaction sets by id: "'12' is not a node or face set").
#[test]
fn exodus_sets_by_id_on_ranks_give_the_serial_run() {
    let dir = scratch("exodus-ids");
    let mesh = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../mesh/tests/data/twins/twin_q1_ids.exo")
        .canonicalize()
        .unwrap();
    let yaml = dir.0.join("ids.yaml");
    std::fs::write(
        &yaml,
        format!(
            "mesh:\n  gmsh: {{ file: {} }}\n\
             materials:\n  - {{ cells: 10, model: neo_hookean, young_modulus: 100.0, poisson_ratio: 0.3 }}\n\
             \x20 - {{ cells: right_part, model: neo_hookean, young_modulus: 40.0, poisson_ratio: 0.45 }}\n\
             boundary:\n  dirichlet:\n    - {{ set: 12, x: 0.0, y: 0.0 }}\n    - {{ set: 7, z: 0.0 }}\n\
             \x20 traction: [{{ set: \"40\", value: [2.0, 0.5, -1.0] }}]\n\
             \x20 pressure: [{{ set: 3, value: 0.5 }}]\n\
             loading: {{ steps: 2 }}\n\
             output:\n  probes:\n    sets: [{{ set: 12 }}, {{ set: \"40\" }}, {{ set: 10 }}]\n",
            mesh.display()
        ),
    )
    .unwrap();
    let yaml = yaml.to_string_lossy().into_owned();
    let d = |tag: &str| dir.0.join(tag);
    let serial = std::process::Command::new(env!("CARGO_BIN_EXE_hexfem"))
        .args(["run", &yaml, "-q", "-o"])
        .arg(d("serial"))
        .output()
        .unwrap();
    assert!(serial.status.success(), "{}", output_text(&serial));
    let one = summary(&d("serial"), "ids");
    for np in [2, 3] {
        let many_dir = d(&format!("np{np}"));
        let out = hexfem_on(np, &["run", &yaml, "-q", "-o", &many_dir.to_string_lossy()]);
        assert!(out.status.success(), "{np} ranks: {}", output_text(&out));
        assert_same_results(&d("serial").join("ids.h5"), &many_dir.join("ids.h5"), 1e-10);
        assert_same_figures(&one, &summary(&many_dir, "ids"), 1e-10, "ids on ranks");
        let (names, rows) = probe_table(&d("serial").join("ids.probes.csv"));
        let (many_names, many_rows) = probe_table(&many_dir.join("ids.probes.csv"));
        assert_eq!(names, many_names);
        for (a, b) in rows.iter().zip(&many_rows) {
            for (x, y) in a.iter().zip(b) {
                assert!(
                    (x - y).abs() <= 1e-10 * x.abs().max(1.0),
                    "{names:?}: {x} vs {y}"
                );
            }
        }
    }
}

/// The line of `stderr` that holds `needle`, from `step ` on (the rank that the ranks agreed
/// on names itself before it).
fn error_from_step(stderr: &[u8], needle: &str) -> Option<String> {
    let text = String::from_utf8_lossy(stderr);
    let line = text.lines().find(|l| l.contains(needle))?;
    Some(line[line.find("step ")?..].to_owned())
}

/// Whether cell `serial` of the box `spec` has another number on every rank of `ranks` that
/// holds it (and some rank does): a message naming a rank's local cell would then not name
/// the serial one.
fn renumbered_on_ranks(spec: &mesh::BoxSpec, serial: u64, ranks: usize) -> bool {
    let local_numbers: Vec<usize> = (0..ranks)
        .filter_map(|rank| {
            let part = mesh::generate_box_part(spec, rank, ranks).unwrap();
            part.cell_serial_ids.iter().position(|&s| s == serial)
        })
        .collect();
    !local_numbers.is_empty() && local_numbers.iter().all(|&l| l as u64 != serial)
}

/// The number of the cell `text` names after `before` (`"... in cell 19): ..."`).
fn cell_named(text: &str, before: &str) -> u64 {
    let rest = &text[text
        .find(before)
        .unwrap_or_else(|| panic!("{before}: {text}"))
        + before.len()..];
    rest.split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a cell number after {before}: {text}"))
}

/// A state that is not finite (a modulus of 2e-101 overflows the linear answer's `det F`, first
/// in cell 19 of the serial mesh: not cell 0, and a cell that 3 ranks number otherwise) fails
/// the run on 2 and 3 ranks with the serial run's message, word for word: the same quantity,
/// value and serial cell number, the whole body's largest displacement in the units advice
/// (each rank named its own before). Once the ranks agreed on the error, rank 0's report of
/// where its files are does not hide the agreement (every rank ends; no rank waits in a second
/// one).
#[test]
fn a_state_that_is_not_finite_is_named_on_ranks_as_in_the_serial_run() {
    let dir = scratch("not-finite");
    let args = |out: &str| {
        vec![
            "run".to_owned(),
            input("cantilever_q1.yaml"),
            "-q".into(),
            "-o".into(),
            dir.0.join(out).to_string_lossy().into_owned(),
            "--set".into(),
            "materials.0.young_modulus=2.0e-101".into(),
        ]
    };
    let needle = "the converged state is not finite";
    let serial_args = args("serial");
    let serial = std::process::Command::new(env!("CARGO_BIN_EXE_hexfem"))
        .args(&serial_args)
        .env("CI", "1")
        .output()
        .unwrap();
    assert!(!serial.status.success());
    let expected = error_from_step(&serial.stderr, needle)
        .unwrap_or_else(|| panic!("serial: {}", output_text(&serial)));
    // the cantilever's mesh (inputs/cantilever_q1.yaml)
    let cantilever =
        mesh::BoxSpec::new([40, 4, 4], [0.0; 3], [10.0, 1.0, 1.0], mesh::CellKind::Hex8);
    let cell = cell_named(&expected, " in cell ");
    assert!(
        cell != 0 && renumbered_on_ranks(&cantilever, cell, 3),
        "the test needs a cell that the ranks number otherwise: {expected}"
    );
    for np in [2, 3] {
        let ranks_args = args(&format!("np{np}"));
        let ranks_args: Vec<&str> = ranks_args.iter().map(String::as_str).collect();
        let out = hexfem_on(np, &ranks_args);
        assert!(!out.status.success());
        let got = error_from_step(&out.stderr, needle)
            .unwrap_or_else(|| panic!("{np} ranks: {}", output_text(&out)));
        assert_eq!(got, expected, "{np} ranks");
    }
}

/// The lines of a failed load path's message in `stderr`, from `no load step` on, with the
/// value after each `J = det F = ` left out (the iterates of the ranks' linear solver differ
/// from the serial one's in round-off) and those values.
fn load_path_failure(stderr: &[u8]) -> Option<(String, Vec<f64>)> {
    let text = String::from_utf8_lossy(stderr);
    let start = text.find("no load step")?;
    let mut masked = String::new();
    let mut values = Vec::new();
    // the first line and the indented ones after it (the attempts, the advice)
    let mut lines = text[start..].lines();
    let first = lines.next();
    for line in first
        .into_iter()
        .chain(lines.take_while(|l| l.starts_with("  ")))
    {
        let mut rest = line;
        while let Some(at) = rest.find("J = det F = ") {
            let (head, tail) = rest.split_at(at + "J = det F = ".len());
            masked += head;
            let end = tail.find(' ').unwrap_or(tail.len());
            values.push(tail[..end].parse().ok()?);
            masked += "<J>";
            rest = &tail[end..];
        }
        masked += rest;
        masked.push('\n');
    }
    Some((masked, values))
}

/// An element that inverts during Newton on ranks (the top of a block's far end pushed
/// through its bottom) ends the run with the serial run's message: the same serial cell, not
/// cell 0 and one that every rank holding it numbers otherwise (each rank named its own local
/// cell, and the others "a cell of MPI rank r", before), the same error (its `J` to the
/// round-off of the ranks' linear solver), the same attempts; printed once, no panic, no hang.
#[test]
fn an_element_that_inverts_during_newton_is_named_on_ranks_as_in_the_serial_run() {
    let dir = scratch("newton-inverted");
    let yaml = dir.0.join("dent.yaml");
    std::fs::write(
        &yaml,
        "mesh:\n  box: { cells: [6, 2, 2], lower: [0, 0, 0], upper: [6, 1, 1], order: 1 }\n\
         sets:\n  dent: { kind: nodes, box: { lower: [4, 0, 1], upper: [6, 1, 1] } }\n\
         materials:\n  - { model: neo_hookean, young_modulus: 10.0, poisson_ratio: 0.3 }\n\
         boundary:\n  dirichlet:\n    - { set: xmin, x: 0.0, y: 0.0, z: 0.0 }\n\
         \x20   - { set: zmin, z: 0.0 }\n    - { set: dent, z: -1.5 }\n\
         loading: { steps: 1, max_cutbacks: 0 }\n",
    )
    .unwrap();
    let yaml = yaml.to_string_lossy().into_owned();
    let out_dir = |name: &str| dir.0.join(name).to_string_lossy().into_owned();
    let serial_out = out_dir("serial");
    let serial = std::process::Command::new(env!("CARGO_BIN_EXE_hexfem"))
        .args(["run", &yaml, "-q", "-o", &serial_out])
        .env("CI", "1")
        .output()
        .unwrap();
    assert!(!serial.status.success());
    let (expected, serial_j) = load_path_failure(&serial.stderr)
        .unwrap_or_else(|| panic!("serial: {}", output_text(&serial)));
    let failure = "element failure in cell ";
    let cell = cell_named(&expected, failure);
    let block = mesh::BoxSpec::new([6, 2, 2], [0.0; 3], [6.0, 1.0, 1.0], mesh::CellKind::Hex8);
    assert!(
        cell != 0 && renumbered_on_ranks(&block, cell, 2) && renumbered_on_ranks(&block, cell, 3),
        "the test needs a cell that the ranks number otherwise: {expected}"
    );
    assert!(
        !serial_j.is_empty() && serial_j.iter().all(|j| *j <= 0.0),
        "{expected}"
    );
    for np in [2, 3] {
        let ranks_out = out_dir(&format!("np{np}"));
        let out = hexfem_on(np, &["run", &yaml, "-q", "-o", &ranks_out]);
        assert!(!out.status.success(), "{np} ranks: {}", output_text(&out));
        let text = output_text(&out);
        assert!(!text.contains("panicked"), "{np} ranks: {text}");
        let (got, j) =
            load_path_failure(&out.stderr).unwrap_or_else(|| panic!("{np} ranks: {text}"));
        assert_eq!(got, expected, "{np} ranks");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr)
                .matches("no load step")
                .count(),
            1,
            "printed once: {text}"
        );
        assert_eq!(j.len(), serial_j.len());
        for (a, b) in j.iter().zip(&serial_j) {
            assert!(
                (a - b).abs() <= 1e-6 * b.abs(),
                "{np} ranks: J = {a}, serial {b}"
            );
        }
    }
}

/// On two ranks (rank 0 writes the windows the gathers bring) file systems too small for the
/// whole run end every rank with the error that stopped the writes (no space left), no panic,
/// and leave files that open with the steps kept; the summary, where it was written, records the
/// failure.
#[test]
fn a_full_disk_on_ranks_keeps_every_completed_step_and_reports_the_first_error() {
    common::fill_the_disk("mpirun", |dir| {
        hexfem_on(
            2,
            &[
                "run",
                &input("twisting_column.yaml"),
                "-o",
                dir.to_str().unwrap(),
                "--set",
                "loading.steps=12",
                "--set",
                "mesh.box.cells=[2, 2, 6]",
            ],
        )
    });
}
