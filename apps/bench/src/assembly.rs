//! `hexfem bench assembly`: residual + tangent assembly of a neo-Hookean N^3-cell box through the
//! COO plan, the Newton hot path of the element layer.

use std::time::Instant;

use anyhow::Result;
use assembly::{CellMaterials, ElasticityAssembler};
use fem::{Formulation, Load, Material, Moduli};
use linalg::Vector;
use mesh::{generate_box, BoxSpec, CellKind};
use serde::Serialize;

use super::{best_of, peak_rss_mb};

/// Bytes the COO sum reads per tangent contribution: a 3x3 block of f64 (72 B) and its 4-byte
/// index in the plan.
const BYTES_PER_CONTRIBUTION: f64 = 76.0;
/// Bytes it writes per stored block: the 3x3 block (72 B) and its share of the row and slot
/// pointers (8 B).
const BYTES_PER_BLOCK: f64 = 80.0;

/// Benchmark parameters.
#[derive(Clone, Debug)]
pub struct AssemblyBench {
    /// 1 (Q1) or 2 (Q2).
    pub order: usize,
    /// Cells per side.
    pub cells: usize,
    /// Timed repetitions (after one warm-up); the best is reported.
    pub repeats: usize,
    /// Also run it on the first CUDA GPU ([`super::assembly_device`]; either formulation).
    pub cuda: bool,
    /// The element formulation.
    pub formulation: Formulation,
}

/// What `hexfem bench assembly --json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct AssemblyBenchResult {
    pub order: usize,
    /// The element formulation's name.
    pub formulation: &'static str,
    pub cells: usize,
    pub elements: usize,
    pub nodes: usize,
    /// 3x3 block contributions per tangent assembly (elements x nodes_per_cell^2).
    pub contributions: usize,
    /// Stored 3x3 blocks of the assembled tangent.
    pub block_nnz: usize,
    /// Best wall time of one residual + tangent assembly.
    pub seconds: f64,
    pub elements_per_s: f64,
    /// Of `seconds`: element kernels writing contributions, and the COO sums.
    pub elements_s: f64,
    pub sums_s: f64,
    /// Bytes the COO sum must move at least (read every contribution, write every block), and the
    /// rate it achieved.
    pub sum_bytes: f64,
    pub sum_gb_per_s: f64,
    /// Residual only (the line search's evaluation).
    pub residual_seconds: f64,
    /// Symbolic phase: COO plans and geometry checks, once per mesh.
    pub setup_s: f64,
    pub threads: usize,
    pub peak_rss_mb: Option<f64>,
    /// The GPU's measurements (`--device cuda`).
    pub gpu: Option<super::assembly_device::DeviceAssemblyMetrics>,
}

/// Runs the benchmark.
pub fn run(bench: &AssemblyBench) -> Result<AssemblyBenchResult> {
    let kind = CellKind::from_order(bench.order)
        .map_err(|_| anyhow::anyhow!("--order {}: valid orders are 1 and 2", bench.order))?;
    anyhow::ensure!(bench.cells > 0, "--cells must be positive");
    let n = bench.cells;
    let mesh = generate_box(&BoxSpec::new([n; 3], [0.0; 3], [1.0; 3], kind))?;
    let material = Material::neo_hookean(Moduli::from_young_poisson(1.0, 0.3)?);
    let start = Instant::now();
    let mut asm = ElasticityAssembler::new(
        &mesh,
        CellMaterials::uniform(material, mesh.n_cells()),
        bench.order + 1,
    )?;
    asm.set_formulation(bench.formulation)?;
    let setup_s = start.elapsed().as_secs_f64();
    // a smooth, moderate deformation: every element in the finite-strain regime
    let u = Vector::from_vec(
        mesh.coords
            .iter()
            .flat_map(|x| [0.1 * x[0] * x[1], -0.05 * x[2] * x[0], 0.08 * x[1] * x[2]])
            .collect(),
    );
    let mut r = Vector::zeros(u.len());
    let mut k = asm.new_matrix();
    let mut phases = (f64::INFINITY, f64::INFINITY);
    let seconds = best_of(bench.repeats, || {
        let start = Instant::now();
        asm.residual_tangent(&u, Load::Constant([0.0, 0.0, -1.0]), &mut r, &mut k)?;
        let t = start.elapsed().as_secs_f64();
        let timings = asm.last_timings();
        if t < phases.0 + phases.1 {
            phases = (timings.elements_s, timings.sums_s);
        }
        Ok(t)
    })?;
    let contributions = asm.matrix_plan().n_contributions();
    let block_nnz = k.pattern().nnz();
    let sum_bytes =
        contributions as f64 * BYTES_PER_CONTRIBUTION + block_nnz as f64 * BYTES_PER_BLOCK;
    let gpu = if bench.cuda {
        let (metrics, back) = super::assembly_device::measure(asm, &u, sum_bytes)?;
        asm = back;
        Some(metrics)
    } else {
        None
    };
    let residual_seconds = best_of(bench.repeats, || {
        let start = Instant::now();
        asm.residual(&u, Load::Constant([0.0, 0.0, -1.0]), &mut r)?;
        Ok(start.elapsed().as_secs_f64())
    })?;
    Ok(AssemblyBenchResult {
        order: bench.order,
        formulation: bench.formulation.name(),
        cells: n,
        elements: mesh.n_cells(),
        nodes: mesh.n_nodes(),
        contributions,
        block_nnz,
        seconds,
        elements_per_s: mesh.n_cells() as f64 / seconds,
        elements_s: phases.0,
        sums_s: phases.1,
        sum_bytes,
        sum_gb_per_s: sum_bytes / phases.1 / 1e9,
        residual_seconds,
        setup_s,
        threads: rayon::current_num_threads(),
        peak_rss_mb: peak_rss_mb(),
        gpu,
    })
}

impl std::fmt::Display for AssemblyBenchResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "assembly benchmark: neo-Hookean Q{} box ({} formulation), {}^3 cells ({} elements, {} nodes), {} threads", self.order, self.formulation, self.cells, self.elements, self.nodes, self.threads)?;
        writeln!(
            f,
            "  symbolic (plans + geometry checks)  {:8.3} s",
            self.setup_s
        )?;
        writeln!(
            f,
            "  residual + tangent                  {:8.3} s  ({:.2e} elements/s)",
            self.seconds, self.elements_per_s
        )?;
        writeln!(
            f,
            "    element kernels                   {:8.3} s",
            self.elements_s
        )?;
        writeln!(
            f,
            "    COO sums ({} contributions -> {} blocks)  {:8.3} s  ({:.1} GB/s of {:.2} GB)",
            self.contributions,
            self.block_nnz,
            self.sums_s,
            self.sum_gb_per_s,
            self.sum_bytes / 1e9
        )?;
        writeln!(
            f,
            "  residual only                       {:8.3} s",
            self.residual_seconds
        )?;
        if let Some(mb) = self.peak_rss_mb {
            writeln!(f, "  peak resident memory                {:8.0} MiB", mb)?;
        }
        if let Some(g) = &self.gpu {
            write!(f, "{g}")?;
        }
        Ok(())
    }
}
