//! `hexfem campaign`: a grid over the cantilever equals separate runs; errors in the campaign
//! file are placed at their line; a failing case is recorded and the others go on.

use std::path::{Path, PathBuf};

use hexfem_end_to_end::{run, run_options, ScratchDir};
use sim::campaign::{run_campaign, CampaignOptions, CaseStatus};

fn inputs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../inputs")
}

fn options(file: &Path, jobs: usize) -> CampaignOptions {
    CampaignOptions {
        file: file.to_owned(),
        jobs,
        resume: false,
        output_dir: None,
        interrupt: None,
        ranks_per_case: 1,
        gpus: None,
        test_abort_in_case: None,
    }
}

/// The cantilever grid, 3 moduli x 2 meshes, into `dir`.
fn grid_campaign(dir: &Path, share_solver: bool) -> PathBuf {
    let file = dir.join("sweep.yaml");
    std::fs::write(
        &file,
        format!(
            "base: {}
directory: {}
share_solver: {share_solver}
set:
  output.probes: {{ points: [{{ name: tip, at: [10, 0.5, 0.5] }}], sets: [{{ set: xmin }}] }}
  linear_solver.method: cg_amg
grid:
  materials.0.young_modulus: [1.0e4, 2.0e4, 4.0e4]
  mesh.box.cells: [[20, 2, 2], [40, 4, 4]]
",
            inputs_dir().join("cantilever_q1.yaml").display(),
            dir.join("out").display()
        ),
    )
    .unwrap();
    file
}

fn read_all(h5: &Path) -> Vec<(String, Vec<f64>)> {
    let file = io::ResultsReader::open(h5).unwrap();
    file.dataset_paths()
        .unwrap()
        .into_iter()
        .filter(|p| p.starts_with("/steps/"))
        .map(|p| {
            let values = file.read_f64(&p).unwrap().1;
            (p, values)
        })
        .collect()
}

/// Each case of the grid, run in one process with the mesh, element loop and plans reused
/// (and, with `share_solver`, the AMG set-up), against the same input run alone by `hexfem run`
/// with `--set`: bit-identical without a shared solver (mesh and plan reuse change no value),
/// equal to the solver's tolerance with one (the AMG hierarchy differs, not the equations).
#[test]
fn grid_campaign_equals_separate_runs() {
    for share_solver in [false, true] {
        let dir = ScratchDir::new(&format!("campaign-grid-{share_solver}"));
        let file = grid_campaign(&dir, share_solver);
        // one worker: the cases of each mesh run one after the other on it
        let summary = run_campaign(&options(&file, 1), &mut sim::Quiet).unwrap();
        assert_eq!(
            (summary.cases, summary.completed, summary.failed),
            (6, 6, 0)
        );
        // the validation built both problems; the first mesh's is handed to the worker
        assert_eq!(summary.problems_built, 1, "one problem for the second mesh");
        assert_eq!(summary.problems_reused, 5);
        let rows: Vec<sim::campaign::CaseRow> = std::fs::read_to_string(&summary.table_jsonl)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows.len(), 6);
        let moduli = [1.0e4, 2.0e4, 4.0e4];
        let meshes = ["[20, 2, 2]", "[40, 4, 4]"];
        for (i, row) in rows.iter().enumerate() {
            assert_eq!(row.case, i);
            assert_eq!(row.status, CaseStatus::Completed);
            let (e, cells) = (moduli[i / 2], meshes[i % 2]);
            assert_eq!(row.parameters["materials.0.young_modulus"], e);
            let alone = ScratchDir::new(&format!("campaign-alone-{share_solver}-{i}"));
            let outcome = run(&run_options(inputs_dir().join("cantilever_q1.yaml"), alone.to_path_buf()).with_overrides(vec![
                    format!("materials[0].young_modulus={e}"),
                    format!("mesh.box.cells={cells}"),
                    "output.probes={points: [{name: tip, at: [10, 0.5, 0.5]}], sets: [{set: xmin}]}".into(),
                    "linear_solver.method=cg_amg".into(),
                ]), &sim::Quiet)
            .unwrap();
            let case_h5 = row.directory.join("cantilever_q1.h5");
            let (ours, theirs) = (read_all(&case_h5), read_all(&outcome.h5));
            assert_eq!(ours.len(), theirs.len());
            let f = &outcome.figures;
            if share_solver {
                let tip = f.probes["tip.uz"];
                assert!(
                    (row.probes["tip.uz"] - tip).abs() < 1e-6 * tip.abs(),
                    "case {i}"
                );
                let energy = row.strain_energy.unwrap();
                assert!((energy - f.strain_energy).abs() < 1e-6 * energy, "case {i}");
            } else {
                for ((pa, a), (pb, b)) in ours.iter().zip(&theirs) {
                    assert_eq!(pa, pb);
                    assert!(
                        a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()),
                        "case {i}: {pa} differs"
                    );
                }
                assert_eq!(row.strain_energy, Some(f.strain_energy));
                assert_eq!(row.probes, f.probes);
                assert_eq!(row.reactions, f.reactions);
                assert_eq!(row.linear_iterations, f.linear_iterations);
            }
            // the clamp carries the end load
            assert!((row.probes["xmin.fz"] - 1.0).abs() < 1e-6);
            // tip deflection ~ 1/E on one mesh
            if i >= 2 {
                let stiffer = rows[i - 2].probes["tip.uz"] / row.probes["tip.uz"];
                assert!((stiffer - 2.0).abs() < 1e-5, "case {i}: {stiffer}");
            }
        }
        if share_solver {
            assert_eq!(summary.solvers_reused, 4);
            assert_eq!(summary.amg_cold_setups, 2);
        } else {
            assert_eq!(summary.solvers_reused, 0);
            assert_eq!(summary.amg_cold_setups, 6);
        }
    }
}

/// A value the input rejects stops the campaign before any case runs, named at its line and
/// column in the campaign file; so do errors of the campaign file itself.
#[test]
fn campaign_errors_name_the_campaign_file_line_and_column() {
    let dir = ScratchDir::new("campaign-errors");
    let base = inputs_dir().join("cantilever_q1.yaml");
    let attempt = |body: &str| {
        let file = dir.join("bad.yaml");
        std::fs::write(
            &file,
            format!(
                "base: {}\ndirectory: {}\n{body}",
                base.display(),
                dir.join("out").display()
            ),
        )
        .unwrap();
        let e = run_campaign(&options(&file, 1), &mut sim::Quiet).unwrap_err();
        format!("{e:#}")
    };
    let e = attempt("grid:\n  materials.0.poisson_ratio: [0.3, 0.6]\n");
    assert!(e.contains("bad.yaml:4:36") && e.contains("case 1"), "{e}");
    assert!(!dir.join("out").exists(), "nothing ran");
    let e = attempt("grid:\n  materials.0.young_modulus: [1.0, 2.0]\ncases: []\n");
    assert!(
        e.contains("bad.yaml:1:1") && e.contains("exactly one of"),
        "{e}"
    );
    let e = attempt("gird:\n  a: [1]\n");
    assert!(
        e.contains("bad.yaml:3:1") && e.contains("unknown key `gird`"),
        "{e}"
    );
    let e = attempt("grid:\n  materials.0.youngs_modulus: [1.0]\n");
    assert!(
        e.contains("bad.yaml:4:32") && e.contains("young_modulus"),
        "{e}"
    );
    // found while building the problem: an unknown set
    let e = attempt(
        "cases:\n  - { boundary.dirichlet.0.set: xmin }\n  - { boundary.dirichlet.0.set: left }\n",
    );
    assert!(e.contains("bad.yaml:5:33") && e.contains("case 1"), "{e}");
    let e =
        attempt("latin_hypercube: { samples: 4, seed: 1, ranges: { loading.steps: [3, 1] } }\n");
    assert!(e.contains("bad.yaml:3:66") && e.contains("below"), "{e}");
}

/// A case whose load path fails is recorded with its error; the others complete.
#[test]
fn a_failed_case_is_recorded_and_the_campaign_goes_on() {
    let dir = ScratchDir::new("campaign-fail");
    let file = dir.join("fail.yaml");
    std::fs::write(
        &file,
        format!(
            "base: {}\ndirectory: {}\nset: {{ loading.max_cutbacks: 2 }}\ncases:\n  - {{ boundary.traction.0.value: [0, 0, 3.0] }}\n  - {{ boundary.traction.0.value: [0, 0, -1.0e5] }}\n  - {{ boundary.traction.0.value: [0, 0, 1.0] }}\n",
            inputs_dir().join("neo_hookean_block.yaml").display(),
            dir.join("out").display()
        ),
    )
    .unwrap();
    let summary = run_campaign(&options(&file, 1), &mut sim::Quiet).unwrap();
    assert_eq!((summary.completed, summary.failed), (2, 1));
    let csv = std::fs::read_to_string(&summary.table_csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 4);
    assert!(
        lines[2].starts_with("1,failed,") && lines[2].contains("loading.max_cutbacks = 2 reached"),
        "{}",
        lines[2]
    );
    assert!(lines[1].starts_with("0,completed,") && lines[3].starts_with("2,completed,"));
}

/// The example campaign of `inputs/campaigns/` runs, with two workers, and draws its plots.
#[test]
fn the_example_campaign_runs_and_plots() {
    let dir = ScratchDir::new("campaign-example");
    let summary = run_campaign(
        &CampaignOptions {
            output_dir: Some(dir.join("out")),
            ..options(&inputs_dir().join("campaigns/cantilever_sweep.yaml"), 2)
        },
        &mut sim::Quiet,
    )
    .unwrap();
    assert_eq!((summary.cases, summary.completed), (6, 6));
    assert_eq!(summary.problems_built + summary.problems_reused, 6);
    // the campaign's default plots, drawn as `hexfem campaign` draws them
    hexfem::plot::plot_campaign(&summary.directory, None, &[], &dir.join("out/plots")).unwrap();
    for y in ["strain_energy", "max_displacement", "probe_tip_uz"] {
        for ext in ["png", "svg"] {
            let file = dir.join(format!("out/plots/campaign_{y}.{ext}"));
            assert!(file.is_file(), "{}", file.display());
        }
    }
    // the clamp's reaction balances the same load in every case: a flat line, left out by
    // default, drawn when asked for
    let constant = dir.join("out/plots/campaign_probe_clamp_fz.png");
    assert!(!constant.exists(), "{}", constant.display());
    hexfem::plot::plot_campaign(
        &summary.directory,
        None,
        &["probe.clamp.fz".to_owned()],
        &dir.join("out/plots"),
    )
    .unwrap();
    assert!(constant.is_file(), "{}", constant.display());
    // a run's default plots
    let case = dir.join("out/case_0003/cantilever_q1.summary.json");
    let files = hexfem::plot::plot_run(&case, &dir).unwrap();
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for expected in [
        "cantilever_q1.residuals.png",
        "cantilever_q1.probe_tip_u.svg",
        "cantilever_q1.probe_clamp_f.png",
        "cantilever_q1.probe_clamp_m.png",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
}

/// A Latin hypercube with a seed gives the same cases, and the same table, every time and for
/// any number of workers (without a shared solver, bit for bit); another seed other cases.
#[test]
fn latin_hypercube_campaigns_are_reproducible() {
    let dir = ScratchDir::new("campaign-lhs");
    let write = |name: &str, seed: u64| {
        let file = dir.join(format!("{name}.yaml"));
        std::fs::write(
            &file,
            format!(
                "base: {}\ndirectory: {}\nshare_solver: false\nlatin_hypercube:\n  samples: 5\n  seed: {seed}\n  ranges:\n    materials.0.young_modulus: [5.0e3, 2.0e4]\n    materials.0.poisson_ratio: [0.1, 0.4]\n    mesh.box.cells.0: [10, 30]\n",
                inputs_dir().join("cantilever_q1.yaml").display(),
                dir.join(name).display()
            ),
        )
        .unwrap();
        file
    };
    let table = |file: &Path, jobs: usize| -> Vec<(serde_json::Value, Option<f64>, Option<f64>)> {
        let summary = run_campaign(&options(file, jobs), &mut sim::Quiet).unwrap();
        assert_eq!(summary.completed, 5);
        std::fs::read_to_string(&summary.table_jsonl)
            .unwrap()
            .lines()
            .map(|l| {
                let row: sim::campaign::CaseRow = serde_json::from_str(l).unwrap();
                (
                    serde_json::Value::Object(row.parameters),
                    row.strain_energy,
                    row.max_displacement,
                )
            })
            .collect()
    };
    let a = table(&write("a", 11), 1);
    let b = table(&write("b", 11), 2);
    let c = table(&write("c", 12), 1);
    assert_eq!(a, b);
    assert_ne!(
        a.iter().map(|r| &r.0).collect::<Vec<_>>(),
        c.iter().map(|r| &r.0).collect::<Vec<_>>()
    );
    // the integer range drew integers, one per stratum of 21 / 5 values
    let mut cells: Vec<i64> = a
        .iter()
        .map(|r| r.0["mesh.box.cells.0"].as_i64().unwrap())
        .collect();
    cells.sort_unstable();
    for (k, c) in cells.iter().enumerate() {
        let (lo, hi) = (
            10.0 + 21.0 * k as f64 / 5.0,
            10.0 + 21.0 * (k + 1) as f64 / 5.0,
        );
        assert!((*c as f64) >= lo.floor() && (*c as f64) < hi, "{cells:?}");
    }
}

/// `--resume` trusts a completed case only where its files agree with its `case.json`: a case
/// whose HDF5 file is deleted or truncated, or whose `case.json` values were edited, is rerun
/// (to the same row), the untouched one is resumed.
#[test]
fn resume_reruns_cases_whose_files_disagree_with_case_json() {
    let dir = ScratchDir::new("campaign-resume-verify");
    let file = dir.join("study.yaml");
    std::fs::write(
        &file,
        format!(
            "base: {}\ndirectory: {}\nshare_solver: false\ngrid:\n  materials.0.young_modulus: [1.0e4, 2.0e4, 4.0e4, 8.0e4]\n  mesh.box.cells: [[10, 2, 2]]\n",
            inputs_dir().join("cantilever_q1.yaml").display(),
            dir.join("out").display()
        ),
    )
    .unwrap();
    let first = run_campaign(&options(&file, 1), &mut sim::Quiet).unwrap();
    assert_eq!(first.completed, 4);
    let case = |i: usize| dir.join(format!("out/case_{i:04}"));
    let table = |summary: &sim::campaign::CampaignSummary| {
        let text = std::fs::read_to_string(&summary.table_jsonl).unwrap();
        text.lines()
            .map(|l| {
                let mut row: serde_json::Value = serde_json::from_str(l).unwrap();
                for key in [
                    "wall_s",
                    "setup_s",
                    "first_setup_s",
                    "problem_s",
                    "reused_problem",
                    "reused_solver",
                    "amg_cold_setups",
                    "amg_hot_setups",
                    "amg_renewed_setups",
                ] {
                    row.as_object_mut().unwrap().remove(key);
                }
                row
            })
            .collect::<Vec<_>>()
    };
    let before = table(&first);
    // case 0: no HDF5 file; case 1: truncated; case 2: an edited value in case.json
    std::fs::remove_file(case(0).join("cantilever_q1.h5")).unwrap();
    let h5 = case(1).join("cantilever_q1.h5");
    let length = std::fs::metadata(&h5).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&h5)
        .unwrap()
        .set_len(length / 2)
        .unwrap();
    let json = case(2).join("case.json");
    let mut row: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    row["strain_energy"] = serde_json::json!(123.0);
    std::fs::write(&json, row.to_string()).unwrap();
    let resumed = run_campaign(
        &CampaignOptions {
            resume: true,
            ..options(&file, 1)
        },
        &mut sim::Quiet,
    )
    .unwrap();
    assert_eq!((resumed.completed, resumed.resumed), (4, 1));
    assert_eq!(table(&resumed), before);
    for i in 0..3 {
        assert!(case(i).join("cantilever_q1.h5").exists(), "case {i}");
    }
}

/// GPU placement (device machine, 2 GPUs or more; skipped with a message elsewhere): a
/// `device: cuda` campaign with `--jobs 2` runs its workers on GPUs 0 and 1 (the table says so),
/// `--gpus 1` puts every case on GPU 1, and both give the one-worker campaign's figures to the
/// solver's tolerance.
#[test]
fn jobs_spread_over_two_gpus_give_the_one_gpu_table() {
    let gpus = linalg::gpu::device_count().unwrap_or(0);
    if gpus < 2 {
        eprintln!("skipped: {gpus} usable GPU(s), this test needs 2");
        return;
    }
    let dir = ScratchDir::new("campaign-gpus");
    let file = dir.join("gpus.yaml");
    std::fs::write(
        &file,
        format!(
            "base: {}\ndirectory: {}\nshare_solver: false\nset: {{ device: cuda, linear_solver.method: cg_amg }}\ngrid:\n  materials.0.young_modulus: [1.0e4, 2.0e4, 3.0e4, 4.0e4]\n",
            inputs_dir().join("cantilever_q1.yaml").display(),
            dir.join("out").display()
        ),
    )
    .unwrap();
    let table = |jobs: usize, list: Option<Vec<usize>>, out: &str| {
        let summary = run_campaign(
            &CampaignOptions {
                output_dir: Some(dir.join(out)),
                gpus: list,
                ..options(&file, jobs)
            },
            &mut sim::Quiet,
        )
        .unwrap();
        assert_eq!(summary.completed, 4, "{out}");
        std::fs::read_to_string(&summary.table_jsonl)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<sim::campaign::CaseRow>(l).unwrap())
            .collect::<Vec<_>>()
    };
    let one = table(1, None, "one");
    let two = table(2, None, "two");
    let listed = table(2, Some(vec![1]), "listed");
    assert!(one.iter().all(|r| r.gpu == Some(0)));
    let mut used: Vec<Option<usize>> = two.iter().map(|r| r.gpu).collect();
    used.sort_unstable();
    used.dedup();
    assert_eq!(used, [Some(0), Some(1)], "--jobs 2 on two GPUs");
    assert!(listed.iter().all(|r| r.gpu == Some(1)));
    for rows in [&two, &listed] {
        for (a, b) in one.iter().zip(rows.iter()) {
            let (x, y) = (a.strain_energy.unwrap(), b.strain_energy.unwrap());
            assert!(
                (x - y).abs() <= 1e-7 * x.abs(),
                "case {}: {x} vs {y}",
                a.case
            );
        }
    }
}
