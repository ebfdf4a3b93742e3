//! `hexfem bench newton --device cpu|cuda --m M`: one neo-Hookean Newton iteration on the
//! ex56-sized box (`m^3` nodes, Q1, unit cube, `z = 0` clamped, `z = 1` lifted by
//! [`LIFT`] in `z`): the linear system (element loop through the COO plan, lifting,
//! elimination), the hot AMG update (numeric Galerkin products, smoothers, eigenvalue estimates)
//! and CG with the V-cycle, with the breakdown.
//!
//! Calling order: a first Newton iteration from rest sets the hierarchy up cold (not timed);
//! then [`MEASURED`] further iterations are timed and the best is reported. With `--device cuda`
//! the state, the tangent (assembled on the device, handed to the AMG without a copy), the
//! hierarchy and the CG vectors stay on the GPU: only scalars cross, counted per iteration.

use std::sync::Arc;
use std::time::Instant;

use amg::{cg, AmgParams, CgParams, Hierarchy, NearNullSpace};
use anyhow::{Context, Result};
use assembly::device::DeviceProblem;
use assembly::{
    rigid_body_modes, CellMaterials, Constraints, DiscreteProblem, ElasticityAssembler, Prescribed,
    RIGID_BODY_MODES_3D,
};
use fem::{CellKind, Material, Moduli};
use linalg::gpu::CudaContext;
use linalg::{ops, Device, Vector};
use mesh::{generate_box, BoxSpec};
use serde::Serialize;

use super::gamg::BenchDevice;

/// Displacement prescribed on the top face (`z` component), a 1 % compression.
pub const LIFT: f64 = -0.01;
/// Timed Newton iterations after the cold one; the best (least total) is reported.
pub const MEASURED: usize = 3;
/// CG tolerance of each Newton iteration (relative to the right-hand side).
pub const CG_RTOL: f64 = 1e-8;

/// What to run.
pub struct NewtonBench {
    pub m: usize,
    pub device: BenchDevice,
}

/// One timed Newton iteration and where its time went (milliseconds, host clock with the
/// device synchronised after each phase).
#[derive(Clone, Debug, Serialize)]
pub struct NewtonBenchResult {
    pub device: String,
    pub nodes_per_side: usize,
    pub unknowns: usize,
    pub levels: usize,
    /// Residual, tangent, lifting, right-hand side and elimination.
    pub linear_system_ms: f64,
    /// The hot AMG update on the new tangent.
    pub hot_update_ms: f64,
    /// CG with the V-cycle to [`CG_RTOL`].
    pub solve_ms: f64,
    pub total_ms: f64,
    pub cg_iterations: usize,
    /// CG iterations of every timed iteration, in order.
    pub cg_iterations_each: Vec<usize>,
    /// Free residual norms before the cold iteration and after each iteration (quadratic
    /// convergence is the check that the device step is a Newton step).
    pub residual_norms: Vec<f64>,
    /// Bytes host -> device and device -> host during the reported iteration (GPU only).
    pub bytes_up: u64,
    pub bytes_down: u64,
}

/// The neo-Hookean box of the benchmark, on the host.
fn problem(m: usize) -> Result<DiscreteProblem> {
    anyhow::ensure!(m >= 3, "--m {m}: at least 3 nodes per side");
    let mesh = generate_box(&BoxSpec::new(
        [m - 1; 3],
        [0.0; 3],
        [1.0; 3],
        CellKind::Hex8,
    ))?;
    let material = Material::neo_hookean(Moduli::from_young_poisson(1.0, 0.25)?);
    let materials = CellMaterials::new(vec![material], vec![0; mesh.n_cells()])?;
    let assembler = ElasticityAssembler::new(&mesh, materials, 2)?;
    let constraints = Constraints::new(
        mesh.n_nodes(),
        vec![
            Prescribed::Components {
                set: "zmin".into(),
                nodes: mesh.set_nodes("zmin")?,
                values: [Some(0.0); 3],
            },
            Prescribed::Components {
                set: "zmax".into(),
                nodes: mesh.set_nodes("zmax")?,
                values: [None, None, Some(LIFT)],
            },
        ],
        &assembler.orphan_nodes(),
    )?;
    let n = 3 * mesh.n_nodes();
    Ok(DiscreteProblem {
        assembler,
        constraints,
        external: Vector::zeros(n),
        follower: Vec::new(),
        curved: Vec::new(),
        partition: None,
    })
}

/// Phase times of one iteration (seconds) and its CG iterations.
struct Step {
    system_s: f64,
    update_s: f64,
    solve_s: f64,
    iterations: usize,
    free_norm: f64,
}

impl Step {
    fn total(&self) -> f64 {
        self.system_s + self.update_s + self.solve_s
    }
}

/// Runs the benchmark.
pub fn run(bench: &NewtonBench) -> Result<NewtonBenchResult> {
    let mut host = problem(bench.m)?;
    let coords = host.assembler.coords().to_vec();
    let near_null = NearNullSpace::from_row_major(
        3 * coords.len(),
        RIGID_BODY_MODES_3D,
        rigid_body_modes(&coords),
    )?;
    let amg = AmgParams::default();
    let cg_params = CgParams {
        rtol: CG_RTOL,
        ..CgParams::default()
    };
    match bench.device {
        BenchDevice::Cpu => run_host(&mut host, &near_null, &amg, &cg_params, bench.m),
        BenchDevice::Cuda => {
            let device = Device::cuda(0).context("--device cuda")?;
            let ctx = device
                .cuda_context()
                .cloned()
                .context("--device cuda: no CUDA context")?;
            run_device(&ctx, &device, &host, &near_null, &amg, &cg_params, bench.m)
        }
    }
}

/// Reports the best of the timed steps.
fn report(
    device: String,
    m: usize,
    unknowns: usize,
    levels: usize,
    steps: &[Step],
    first_norm: f64,
    bytes: &[(u64, u64)],
) -> NewtonBenchResult {
    let best = (0..steps.len())
        .min_by(|&a, &b| steps[a].total().total_cmp(&steps[b].total()))
        .unwrap_or(0);
    let s = &steps[best];
    let mut residual_norms = vec![first_norm];
    residual_norms.extend(steps.iter().map(|s| s.free_norm));
    NewtonBenchResult {
        device,
        nodes_per_side: m,
        unknowns,
        levels,
        linear_system_ms: 1e3 * s.system_s,
        hot_update_ms: 1e3 * s.update_s,
        solve_ms: 1e3 * s.solve_s,
        total_ms: 1e3 * s.total(),
        cg_iterations: s.iterations,
        cg_iterations_each: steps.iter().map(|s| s.iterations).collect(),
        residual_norms,
        bytes_up: bytes.get(best).map_or(0, |b| b.0),
        bytes_down: bytes.get(best).map_or(0, |b| b.1),
    }
}

fn run_host(
    problem: &mut DiscreteProblem,
    near_null: &NearNullSpace,
    amg: &AmgParams,
    cg_params: &CgParams,
    m: usize,
) -> Result<NewtonBenchResult> {
    let n = problem.n_dofs();
    let mut u = Vector::zeros(n);
    let mut du = Vector::zeros(n);
    let mut system = problem.new_system()?;
    // the cold iteration
    problem.linearize(&u, 1.0, &mut system)?;
    let first_norm = problem.eliminate(&mut system)?;
    let mut hierarchy = Hierarchy::setup_external(&system.tangent, near_null, amg)?;
    let vcycle = hierarchy.with_operator(&system.tangent)?;
    cg(&system.tangent, &system.rhs, &mut du, &vcycle, cg_params)?;
    problem
        .constraints
        .copy_constrained(&system.lift, &mut du)?;
    linalg::ops::axpy(1.0, &du, &mut u)?;
    let mut steps = Vec::new();
    for _ in 0..MEASURED {
        let start = Instant::now();
        problem.linearize(&u, 1.0, &mut system)?;
        let free_norm = problem.eliminate(&mut system)?;
        let system_s = start.elapsed().as_secs_f64();
        let start = Instant::now();
        hierarchy.update(&system.tangent)?;
        let update_s = start.elapsed().as_secs_f64();
        let start = Instant::now();
        du.fill(0.0)?;
        let vcycle = hierarchy.with_operator(&system.tangent)?;
        let outcome = cg(&system.tangent, &system.rhs, &mut du, &vcycle, cg_params)?;
        let solve_s = start.elapsed().as_secs_f64();
        problem
            .constraints
            .copy_constrained(&system.lift, &mut du)?;
        linalg::ops::axpy(1.0, &du, &mut u)?;
        steps.push(Step {
            system_s,
            update_s,
            solve_s,
            iterations: outcome.iterations,
            free_norm,
        });
    }
    Ok(report(
        format!("cpu ({} threads)", rayon::current_num_threads()),
        m,
        n,
        hierarchy.n_levels(),
        &steps,
        first_norm,
        &[],
    ))
}

fn run_device(
    ctx: &Arc<CudaContext>,
    device: &Device,
    host: &DiscreteProblem,
    near_null: &NearNullSpace,
    amg: &AmgParams,
    cg_params: &CgParams,
    m: usize,
) -> Result<NewtonBenchResult> {
    let n = host.n_dofs();
    // the tangent twice (the one assembled into, the one the AMG holds) and the hierarchy
    let (hierarchy_bytes, operator_bytes) =
        amg::device_memory_estimate(&host.assembler.new_matrix());
    amg::check_device_memory(device, hierarchy_bytes + 2 * operator_bytes)?;
    let mut problem = DeviceProblem::new(ctx, host)?;
    let mut system = problem.new_system()?;
    // the tangent and right-hand side the AMG and CG hold while the next ones are assembled
    // (swapped with the system's after each assembly; no copies)
    let mut held_k = system.tangent.zeros_like()?;
    let mut held_b = problem.zeros()?;
    let mut u = problem.zeros()?;
    let mut x = problem.zeros()?;
    // one Newton iteration on the device: assemble, hand the tangent and the right-hand side to
    // the AMG and CG without a copy
    let mut hierarchy: Option<Hierarchy> = None;
    let mut iterate = |u: &mut Vector, x: &mut Vector| -> Result<Step> {
        device.synchronize()?;
        let start = Instant::now();
        problem.linearize(u, 1.0, &mut system)?;
        let free_norm = problem.eliminate(&mut system)?;
        device.synchronize()?;
        let system_s = start.elapsed().as_secs_f64();
        std::mem::swap(&mut system.tangent, &mut held_k);
        std::mem::swap(&mut system.rhs, &mut held_b);
        let (k, b) = (&held_k, &held_b);
        let start = Instant::now();
        match hierarchy.as_mut() {
            Some(h) => {
                h.update(k)?;
            }
            None => hierarchy = Some(Hierarchy::setup_external(k, near_null, amg)?),
        }
        device.synchronize()?;
        let update_s = start.elapsed().as_secs_f64();
        let h = hierarchy.as_ref().context("no hierarchy")?;
        let start = Instant::now();
        x.fill(0.0)?;
        let vcycle = h.with_operator(k)?;
        let outcome = cg(h.operator(0).unwrap_or(k), b, x, &vcycle, cg_params)?;
        // the correction's constrained entries: the lifting (the right-hand side is zero there)
        problem.copy_constrained(&system.lift, x)?;
        device.synchronize()?;
        let solve_s = start.elapsed().as_secs_f64();
        Ok(Step {
            system_s,
            update_s,
            solve_s,
            iterations: outcome.iterations,
            free_norm,
        })
    };
    let cold = iterate(&mut u, &mut x)?;
    let first_norm = cold.free_norm;
    ops::axpy(1.0, &x, &mut u)?;
    let mut steps = Vec::new();
    let mut bytes = Vec::new();
    for _ in 0..MEASURED {
        let before = device.transfers();
        let step = iterate(&mut u, &mut x)?;
        ops::axpy(1.0, &x, &mut u)?;
        let after = device.transfers();
        bytes.push((
            after.host_to_device - before.host_to_device,
            after.device_to_host - before.device_to_host,
        ));
        steps.push(step);
    }
    let levels = hierarchy.as_ref().map_or(0, Hierarchy::n_levels);
    Ok(report(
        ctx.name().to_string(),
        m,
        n,
        levels,
        &steps,
        first_norm,
        &bytes,
    ))
}

impl std::fmt::Display for NewtonBenchResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "one neo-Hookean Newton iteration, {}^3 nodes ({} unknowns), {} AMG levels, on {}",
            self.nodes_per_side, self.unknowns, self.levels, self.device
        )?;
        writeln!(
            f,
            "  linear system (assembly, lifting, elimination) {:9.3} ms",
            self.linear_system_ms
        )?;
        writeln!(
            f,
            "  hot AMG update                                 {:9.3} ms",
            self.hot_update_ms
        )?;
        writeln!(
            f,
            "  CG + V-cycle ({:3} iterations)                 {:9.3} ms",
            self.cg_iterations, self.solve_ms
        )?;
        writeln!(
            f,
            "  total                                          {:9.3} ms",
            self.total_ms
        )?;
        writeln!(f, "  free residual norms {:?}", self.residual_norms)?;
        writeln!(
            f,
            "  bytes moved in the iteration: {} up, {} down",
            self.bytes_up, self.bytes_down
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On the GPU the timed Newton iterations move only scalars (< 4 KiB each) and follow the
    /// host's iterates (the same free residual norms to 1e-10 of the first, the same CG
    /// iterations); on the host the norms fall quadratically. One `SKIP` line without a GPU.
    #[test]
    fn device_newton_iteration_moves_scalars_only_and_matches_the_host() {
        let bench = |device| run(&NewtonBench { m: 9, device }).unwrap();
        let host = bench(BenchDevice::Cpu);
        let r = &host.residual_norms;
        assert_eq!(r.len(), MEASURED + 1);
        assert!(
            r[1] < 1e-2 * r[0] && r[2] < r[1] * r[1] / r[0],
            "quadratic: {r:?}"
        );
        if Device::cuda(0).is_err() {
            eprintln!(
                "SKIP device_newton_iteration_moves_scalars_only_and_matches_the_host: no GPU"
            );
            return;
        }
        let gpu = bench(BenchDevice::Cuda);
        eprintln!(
            "m = 9: {} B up, {} B down per Newton iteration; norms host {:?} device {:?}",
            gpu.bytes_up, gpu.bytes_down, host.residual_norms, gpu.residual_norms
        );
        assert!(gpu.bytes_up + gpu.bytes_down < 4096);
        for (g, h) in gpu.residual_norms.iter().zip(r) {
            assert!((g - h).abs() <= 1e-10 * r[0], "{g:e} against {h:e}");
        }
        assert_eq!(gpu.cg_iterations_each, host.cg_iterations_each);
    }
}
