//! `hexfem bench output`: the cost of writing one step's output (HDF5 commit, XDMF append, step
//! log, summary) over a long run of tiny steps, in windows, to show whether it grows with the
//! number of steps written.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use io::{
    CellTensor, Faults, MeshData, MeshInfo, ResultsWriter, RunInfo, RunStatus, StepData,
    StepRecord, SummaryWriter,
};
use mesh::{generate_box, BoxSpec, CellKind};
use serde::Serialize;

/// Benchmark parameters.
#[derive(Clone, Debug)]
pub struct OutputBench {
    /// Steps to write.
    pub steps: usize,
    /// Cells per side of the box (Q1).
    pub cells: usize,
    /// Steps per timing window.
    pub window: usize,
    /// Where to write (a fresh folder in it, removed afterwards); default: the temp dir.
    pub dir: Option<PathBuf>,
}

/// One timing window.
#[derive(Clone, Debug, Serialize)]
pub struct Window {
    /// First step of the window.
    pub first_step: usize,
    /// Mean wall time per step, microseconds.
    pub us_per_step: f64,
}

/// What `hexfem bench output --json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct OutputBenchResult {
    pub steps: usize,
    pub cells: usize,
    pub nodes: usize,
    pub dir: PathBuf,
    pub windows: Vec<Window>,
    /// Mean per step of the first and the last window, and their ratio.
    pub first_us_per_step: f64,
    pub last_us_per_step: f64,
    pub last_over_first: f64,
    pub seconds: f64,
    /// File sizes at the end, bytes.
    pub h5_bytes: u64,
    pub xdmf_bytes: u64,
    pub log_bytes: u64,
    pub summary_bytes: u64,
}

/// Runs the benchmark.
pub fn run(bench: &OutputBench) -> Result<OutputBenchResult> {
    anyhow::ensure!(
        bench.steps >= 1 && bench.window >= 1,
        "--steps and --window must be at least 1"
    );
    let mesh = generate_box(&BoxSpec {
        cells: [bench.cells; 3],
        lower: [0.0; 3],
        upper: [1.0; 3],
        kind: CellKind::Hex8,
        corners: None,
    })?;
    let base = bench.dir.clone().unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("hexfem-bench-output-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let result = write(bench, &mesh, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn write(
    bench: &OutputBench,
    mesh: &mesh::HexMesh,
    dir: &std::path::Path,
) -> Result<OutputBenchResult> {
    let connectivity = sim::run::vtk_connectivity(mesh);
    let material = vec![0; mesh.n_cells()];
    let faults = Faults::none();
    let mut summary = SummaryWriter::create(
        dir,
        "bench",
        RunInfo {
            program: format!("hexfem {}", env!("CARGO_PKG_VERSION")),
            input: "bench".into(),
            started_unix_s: 0,
            threads: 1,
            config: serde_json::Value::Null,
            restart: None,
            formulations: Vec::new(),
        },
        MeshInfo {
            nodes: mesh.n_nodes(),
            cells: mesh.n_cells(),
            nodes_per_cell: 8,
            dofs: 3 * mesh.n_nodes(),
            constrained_dofs: 0,
        },
        &faults,
    )?;
    let mut results = ResultsWriter::create(
        dir,
        "bench",
        &MeshData {
            nodes_per_cell: 8,
            coordinates: &mesh.coords,
            connectivity: &connectivity,
            material: Some(&material),
            node_sets: &[],
            cell_sets: &[],
            face_sets: &[],
            node_indicators: None,
        },
        &faults,
    )?;
    let mut displacement = vec![[0.0; 3]; mesh.n_nodes()];
    let stress = vec![[0.0; 9]; mesh.n_cells()];
    let scalar = vec![1.0; mesh.n_cells()];
    let nodal = vec![[0.0; 9]; mesh.n_nodes()];
    let nodal_scalar = vec![0.0; mesh.n_nodes()];
    let started = Instant::now();
    let mut windows = Vec::new();
    let mut window_start = Instant::now();
    for step in 1..=bench.steps {
        let load_factor = step as f64 / bench.steps as f64;
        for (n, u) in displacement.iter_mut().enumerate() {
            *u = [load_factor, n as f64 * 1e-3, 0.0];
        }
        results.write_step(&StepData {
            step,
            load_factor,
            displacement: Some(&displacement),
            reaction: Some(&displacement),
            cauchy_stress: Some(CellTensor::Full(&stress)),
            von_mises: Some(&scalar),
            jacobian: Some(&scalar),
            energy_density: Some(&scalar),
            nodal_cauchy_stress: Some(&nodal),
            nodal_von_mises: Some(&nodal_scalar),
            next_increment: None,
            time: None,
            ..StepData::default()
        })?;
        summary.record_step(
            StepRecord {
                step,
                load_factor,
                cutbacks: 0,
                newton_iterations: 1,
                linear_iterations: vec![10],
                residual_norms: vec![1.0, 1e-10],
                strain_energy: load_factor,
                max_displacement: load_factor,
                wall_s: 0.0,
                linear_solver: serde_json::Value::Null,
                converged_by: String::new(),
                failed_attempts: serde_json::Value::Null,
                reactions: serde_json::Value::Null,
                probes: Default::default(),
                output_transfer_bytes: None,
                warnings: Vec::new(),
            },
            started.elapsed().as_secs_f64(),
        )?;
        if step % bench.window == 0 || step == bench.steps {
            let n = (step - 1) % bench.window + 1;
            windows.push(Window {
                first_step: step + 1 - n,
                us_per_step: window_start.elapsed().as_secs_f64() * 1e6 / n as f64,
            });
            window_start = Instant::now();
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    summary.finish(RunStatus::Completed, seconds)?;
    let size = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let first = windows[0].us_per_step;
    let last = windows[windows.len() - 1].us_per_step;
    Ok(OutputBenchResult {
        steps: bench.steps,
        cells: mesh.n_cells(),
        nodes: mesh.n_nodes(),
        dir: dir.to_owned(),
        first_us_per_step: first,
        last_us_per_step: last,
        last_over_first: last / first,
        windows,
        seconds,
        h5_bytes: size(results.h5_path()),
        xdmf_bytes: size(results.xdmf_path()),
        log_bytes: size(summary.log_path()),
        summary_bytes: size(summary.path()),
    })
}

impl std::fmt::Display for OutputBenchResult {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        writeln!(
            f,
            "output of {} steps ({} cells, {} nodes) in {}: {:.2} s",
            self.steps,
            self.cells,
            self.nodes,
            self.dir.display(),
            self.seconds
        )?;
        writeln!(f, "  first step   us/step")?;
        for w in &self.windows {
            writeln!(f, "  {:>10}  {:>8.1}", w.first_step, w.us_per_step)?;
        }
        writeln!(
            f,
            "  last / first window: {:.2}; files: h5 {} B, xdmf {} B, step log {} B, summary {} B",
            self.last_over_first,
            self.h5_bytes,
            self.xdmf_bytes,
            self.log_bytes,
            self.summary_bytes
        )
    }
}
