//! GPU runs against CPU runs (tests only): every input of `inputs/` the device supports, run with
//! `device: cuda` (the Newton loop on the GPU) and with `device: cpu`, both with CG + AMG, gives
//! the same Newton iterations per step, the same datasets, displacements to 1e-10 (relative to
//! the step's largest), strain energies to 1e-12 and the cell fields (on the GPU computed on the
//! device at converged steps, their bytes counted) to 1e-12 (relative to the field's largest);
//! per Newton iteration after a step's first only scalars cross (< 4 KiB). Each test prints one `SKIP` line without a GPU.

use std::path::{Path, PathBuf};

use linalg::Device;

use crate::run::{run, Progress, RunOptions};

/// The cell-centred datasets of a step (the output fields of [`crate::run::CellOutputs`]).
const CELL_DATASETS: [&str; 4] = ["cauchy_stress", "von_mises", "jacobian", "energy_density"];

/// `inputs/` of the checkout: next to the sources, or under the working directory (the device
/// machine runs the staged test binary from a checkout's root).
fn inputs_dir() -> PathBuf {
    let beside = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../inputs");
    if beside.is_dir() {
        beside
    } else {
        PathBuf::from("inputs")
    }
}

/// A directory under the system's temporary directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("hexfem-gpu-runs-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `input` on `device` with CG + AMG into `dir`; the summary and the HDF5 file.
fn run_on(input: &Path, device: &str, dir: &Path) -> (io::Summary, PathBuf) {
    let outcome = run(&RunOptions {
        input: input.to_path_buf(),
        overrides: vec![
            format!("device={device}"),
            "linear_solver.method=cg_amg".into(),
        ],
        output_dir: Some(dir.to_path_buf()),
        progress: Progress::Quiet,
        restart: None,
        faults: io::Faults::none(),
        abort_after_step: None,
    })
    .unwrap_or_else(|e| panic!("{} on {device}: {e:#}", input.display()));
    let summary = io::Summary::read(&outcome.summary).unwrap();
    (summary, outcome.h5)
}

/// Whether the device runs `input`'s Newton loop (`None`) or why not.
fn unsupported(input: &Path) -> Option<String> {
    let config = config::load_with_overrides(input, &[]).unwrap();
    let problem = crate::locate::build_problem(&config).unwrap();
    assembly::device::DeviceProblem::supports(&problem.discrete)
        .err()
        .map(|e| e.to_string())
}

fn no_gpu(test: &str) -> bool {
    if Device::cuda(0).is_err() {
        eprintln!("SKIP {test}: no GPU");
        return true;
    }
    false
}

#[test]
fn gpu_runs_equal_cpu_runs_for_every_supported_input() {
    if no_gpu("gpu_runs_equal_cpu_runs_for_every_supported_input") {
        return;
    }
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(inputs_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    inputs.sort();
    let mut compared = 0;
    let mut failures = Vec::new();
    for input in &inputs {
        let name = input.file_stem().unwrap().to_string_lossy().to_string();
        if let Some(why) = unsupported(input) {
            eprintln!("gpu_runs: {name}: not on the device ({why})");
            continue;
        }
        let (cpu_dir, gpu_dir) = (
            Scratch::new(&format!("{name}-cpu")),
            Scratch::new(&format!("{name}-gpu")),
        );
        let (cpu, cpu_h5) = run_on(input, "cpu", &cpu_dir.0);
        let (gpu, gpu_h5) = run_on(input, "cuda", &gpu_dir.0);
        let (cs, gs) = (cpu.steps.unwrap(), gpu.steps.unwrap());
        assert_eq!(cs.len(), gs.len(), "{name}: converged steps");
        let newton =
            |s: &[io::StepRecord]| s.iter().map(|r| r.newton_iterations).collect::<Vec<_>>();
        assert_eq!(
            newton(&cs),
            newton(&gs),
            "{name}: Newton iterations per step"
        );
        let mut worst_energy: f64 = 0.0;
        for (c, g) in cs.iter().zip(&gs) {
            let rel = (c.strain_energy - g.strain_energy).abs() / c.strain_energy.abs().max(1e-300);
            worst_energy = worst_energy.max(rel);
        }
        let (cr, gr) = (
            io::ResultsReader::open(&cpu_h5).unwrap(),
            io::ResultsReader::open(&gpu_h5).unwrap(),
        );
        assert_eq!(
            cr.dataset_paths().unwrap(),
            gr.dataset_paths().unwrap(),
            "{name}: datasets"
        );
        // `max |gpu - cpu| / max |cpu|` of one step's dataset
        let step_diff = |step: usize, field: &str| {
            let path = format!("/steps/{step:06}/{field}");
            let (_, a) = cr.read_f64(&path).unwrap();
            let (_, b) = gr.read_f64(&path).unwrap();
            let scale = a.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            let diff = a
                .iter()
                .zip(&b)
                .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
            if scale > 0.0 {
                diff / scale
            } else {
                diff
            }
        };
        let (mut worst_u, mut worst_cells): (f64, f64) = (0.0, 0.0);
        for (step, _) in cr.steps().unwrap() {
            worst_u = worst_u.max(step_diff(step, "displacement"));
            // the cell fields: from the device where the Newton loop ran there (after step 0)
            for field in CELL_DATASETS {
                worst_cells = worst_cells.max(step_diff(step, field));
            }
        }
        // the device computed the converged steps' cell fields and counted their bytes
        let output_bytes: Vec<Option<u64>> = gs.iter().map(|s| s.output_transfer_bytes).collect();
        eprintln!(
            "gpu_runs: {name}: {} steps, Newton iterations {:?} on both, displacement within {worst_u:.1e}, energy within {worst_energy:.1e}, cell fields within {worst_cells:.1e}, output bytes per step {output_bytes:?}",
            cs.len(),
            newton(&cs)
        );
        if worst_u > 1e-10 || worst_energy > 1e-12 || worst_cells > 1e-12 {
            failures.push(format!(
                "{name}: displacement {worst_u:.1e} (at most 1e-10), energy {worst_energy:.1e} (at most 1e-12), cell fields {worst_cells:.1e} (at most 1e-12)"
            ));
        }
        if output_bytes.iter().any(Option::is_none)
            || cs.iter().any(|s| s.output_transfer_bytes.is_some())
        {
            failures.push(format!(
                "{name}: output bytes are counted on the GPU only: {output_bytes:?}"
            ));
        }
        compared += 1;
    }
    assert!(compared > 0, "no input of inputs/ runs on the device");
    assert!(failures.is_empty(), "GPU runs differ: {failures:#?}");
}

#[test]
fn gpu_run_moves_only_scalars_per_newton_iteration() {
    if no_gpu("gpu_run_moves_only_scalars_per_newton_iteration") {
        return;
    }
    let input = inputs_dir().join("neo_hookean_block.yaml");
    let dir = Scratch::new("transfers");
    let (summary, _) = run_on(&input, "cuda", &dir.0);
    let mut later = 0;
    for step in summary.steps.unwrap() {
        let iterations = step.linear_solver.as_array().unwrap();
        let bytes: Vec<u64> = iterations
            .iter()
            .map(|it| {
                it["transfer_bytes"]
                    .as_u64()
                    .expect("transfer_bytes in the summary")
            })
            .collect();
        eprintln!(
            "gpu_runs: step {}: bytes per Newton iteration {bytes:?}",
            step.step
        );
        // a step's first iteration sets the AMG up afresh (the deformed rigid-body modes go up)
        for &b in &bytes[1..] {
            assert!(
                b < 4096,
                "step {}: {b} bytes in a Newton iteration",
                step.step
            );
            later += 1;
        }
    }
    assert!(later > 0, "no Newton iteration after a step's first");
}
