//! `hexfem bench newton`: one neo-Hookean Newton iteration on the ex56-sized box (`M^3` nodes, Q1,
//! bottom face clamped, top face lifted by 0.01): linearize + eliminate, hot AMG update and the
//! CG solve, with the breakdown. The first iteration (cold AMG set-up) is run untimed; the
//! second is measured. With `--device cuda` every vector, the tangent, the hierarchy and CG stay
//! on the GPU (`assembly::device::DeviceProblem`); the bytes crossing per iteration are counted.

use std::time::Instant;

use amg::{cg, AmgParams, CgParams, Hierarchy};
use anyhow::{Context, Result};
use assembly::device::DeviceProblem;
use assembly::{CellMaterials, Constraints, DiscreteProblem, ElasticityAssembler, Prescribed};
use fem::{Material, Moduli};
use linalg::backend::cuda::{vector, CudaContext};
use linalg::{Device, Vector};
use mesh::{generate_box, BoxSpec, CellKind};
use serde::Serialize;

/// Benchmark parameters.
#[derive(Clone, Debug)]
pub struct NewtonBench {
    /// Nodes per side (`M - 1` Q1 cells per side).
    pub m: usize,
    /// Run on the first CUDA GPU.
    pub cuda: bool,
}

/// What `hexfem bench newton --json` prints (seconds of wall time).
#[derive(Clone, Debug, Serialize)]
pub struct NewtonBenchResult {
    pub device: String,
    pub nodes_per_side: usize,
    pub unknowns: usize,
    /// The first iteration: linearize, eliminate, cold AMG set-up, CG (untimed in the step).
    pub first_iteration_s: f64,
    /// The measured iteration: linearize + eliminate, hot update, CG, the update of `u`.
    pub step_s: f64,
    pub linearize_eliminate_s: f64,
    pub hot_update_s: f64,
    pub solve_s: f64,
    pub cg_iterations: usize,
    /// Free residual norm before the measured iteration.
    pub residual_norm: f64,
    /// Bytes host to device and device to host during the measured iteration (GPU only).
    pub step_bytes_to_device: u64,
    pub step_bytes_to_host: u64,
    pub threads: usize,
}

/// A unit cube of `(m-1)^3` Q1 neo-Hookean cells, bottom clamped, top lifted by 0.01 in `z`.
fn problem(m: usize) -> Result<DiscreteProblem> {
    anyhow::ensure!(m >= 3, "--m must be at least 3");
    let mesh = generate_box(&BoxSpec::new(
        [m - 1; 3],
        [0.0; 3],
        [1.0; 3],
        CellKind::Hex8,
    ))?;
    let material = Material::neo_hookean(Moduli::from_young_poisson(1.0, 0.25)?);
    let assembler =
        ElasticityAssembler::new(&mesh, CellMaterials::uniform(material, mesh.n_cells()), 2)?;
    let face = |z: f64| -> Vec<usize> {
        (0..mesh.n_nodes())
            .filter(|&i| (mesh.coords[i][2] - z).abs() < 1e-9)
            .collect()
    };
    let constraints = Constraints::new(
        mesh.n_nodes(),
        vec![
            Prescribed::Components {
                set: "zmin".into(),
                nodes: face(0.0),
                values: [Some(0.0); 3],
            },
            Prescribed::Components {
                set: "zmax".into(),
                nodes: face(1.0),
                values: [None, None, Some(0.01)],
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
    })
}

fn cg_params() -> CgParams {
    CgParams {
        rtol: 1e-8,
        ..CgParams::default()
    }
}

/// Runs the benchmark.
pub fn run(bench: &NewtonBench) -> Result<NewtonBenchResult> {
    let mut p = problem(bench.m)?;
    let near_null = solve::problem::near_null_space(p.assembler.coords())?;
    if bench.cuda {
        run_cuda(bench, p, &near_null)
    } else {
        run_host(bench, &mut p, &near_null)
    }
}

fn run_host(
    bench: &NewtonBench,
    p: &mut DiscreteProblem,
    near_null: &amg::NearNullSpace,
) -> Result<NewtonBenchResult> {
    let n = p.n_dofs();
    let mut u = Vector::zeros(n);
    let mut x = Vector::zeros(n);
    let mut system = p.new_system();
    let t0 = Instant::now();
    p.linearize(&u, 1.0, &mut system)?;
    p.eliminate(&mut system)?;
    let mut h = Hierarchy::setup_external(&system.tangent, near_null, &AmgParams::default())?;
    let outcome = cg(
        &system.tangent,
        &system.rhs,
        &mut x,
        &h.with_operator(&system.tangent)?,
        &cg_params(),
    )?;
    anyhow::ensure!(outcome.converged, "first CG did not converge");
    linalg::ops::axpy(1.0, &x, &mut u)?;
    let first_iteration_s = t0.elapsed().as_secs_f64();

    let t0 = Instant::now();
    p.linearize(&u, 1.0, &mut system)?;
    let residual_norm = p.eliminate(&mut system)?;
    let t1 = Instant::now();
    h.update(&system.tangent)?;
    let t2 = Instant::now();
    x.fill(0.0)?;
    let outcome = cg(
        &system.tangent,
        &system.rhs,
        &mut x,
        &h.with_operator(&system.tangent)?,
        &cg_params(),
    )?;
    linalg::ops::axpy(1.0, &x, &mut u)?;
    let t3 = Instant::now();
    Ok(NewtonBenchResult {
        device: "host CPU".into(),
        nodes_per_side: bench.m,
        unknowns: n,
        first_iteration_s,
        step_s: (t3 - t0).as_secs_f64(),
        linearize_eliminate_s: (t1 - t0).as_secs_f64(),
        hot_update_s: (t2 - t1).as_secs_f64(),
        solve_s: (t3 - t2).as_secs_f64(),
        cg_iterations: outcome.iterations,
        residual_norm,
        step_bytes_to_device: 0,
        step_bytes_to_host: 0,
        threads: rayon::current_num_threads(),
    })
}

fn run_cuda(
    bench: &NewtonBench,
    p: DiscreteProblem,
    near_null: &amg::NearNullSpace,
) -> Result<NewtonBenchResult> {
    let ctx = CudaContext::new(0).context("--device cuda")?;
    let device = Device::Cuda(ctx.clone());
    let n = p.n_dofs();
    let mut dp = DeviceProblem::new(&ctx, &p)?;
    let mut system = dp.new_system()?;
    let mut u = ctx.zeros::<f64>(n)?;
    let mut du = ctx.zeros::<f64>(n)?;
    // the solver's views of the device tangent and right-hand side (pattern uploaded once)
    let mut k = p.assembler.new_matrix().to_device(&device)?;
    let mut b = Vector::zeros_on(&device, n)?;
    let mut x = Vector::zeros_on(&device, n)?;
    drop(p);

    let t0 = Instant::now();
    dp.linearize(&u, 1.0, &mut system)?;
    dp.eliminate(&mut system)?;
    k.copy_values_from_device(system.tangent.values())?;
    b.copy_from_device(&system.rhs)?;
    let mut h = Hierarchy::setup_external(&k, near_null, &AmgParams::default())?;
    let outcome = cg(&k, &b, &mut x, &h.with_operator(&k)?, &cg_params())?;
    anyhow::ensure!(outcome.converged, "first CG did not converge");
    x.copy_to_device(&mut du)?;
    vector::axpy(&ctx, 1.0, &du, &mut u)?;
    let first_iteration_s = t0.elapsed().as_secs_f64();

    let before = ctx.transfers();
    let t0 = Instant::now();
    dp.linearize(&u, 1.0, &mut system)?;
    // the free norm read back synchronises
    let residual_norm = dp.eliminate(&mut system)?;
    k.copy_values_from_device(system.tangent.values())?;
    b.copy_from_device(&system.rhs)?;
    let t1 = Instant::now();
    h.update(&k)?;
    let t2 = Instant::now();
    x.fill(0.0)?;
    let outcome = cg(&k, &b, &mut x, &h.with_operator(&k)?, &cg_params())?;
    x.copy_to_device(&mut du)?;
    vector::axpy(&ctx, 1.0, &du, &mut u)?;
    ctx.synchronize()?;
    let t3 = Instant::now();
    let after = ctx.transfers();
    Ok(NewtonBenchResult {
        device: device.name(),
        nodes_per_side: bench.m,
        unknowns: n,
        first_iteration_s,
        step_s: (t3 - t0).as_secs_f64(),
        linearize_eliminate_s: (t1 - t0).as_secs_f64(),
        hot_update_s: (t2 - t1).as_secs_f64(),
        solve_s: (t3 - t2).as_secs_f64(),
        cg_iterations: outcome.iterations,
        residual_norm,
        step_bytes_to_device: after.host_to_device - before.host_to_device,
        step_bytes_to_host: after.device_to_host - before.device_to_host,
        threads: rayon::current_num_threads(),
    })
}

impl std::fmt::Display for NewtonBenchResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "newton step, neo-Hookean Q1 box of {}^3 nodes ({} unknowns) on {}",
            self.nodes_per_side, self.unknowns, self.device
        )?;
        writeln!(
            f,
            "  first iteration (cold AMG)  {:9.3} ms",
            1e3 * self.first_iteration_s
        )?;
        writeln!(
            f,
            "  Newton iteration            {:9.3} ms  (|r_free| {:.3e} before it)",
            1e3 * self.step_s,
            self.residual_norm
        )?;
        writeln!(
            f,
            "    linearize + eliminate     {:9.3} ms",
            1e3 * self.linearize_eliminate_s
        )?;
        writeln!(
            f,
            "    AMG hot update            {:9.3} ms",
            1e3 * self.hot_update_s
        )?;
        writeln!(
            f,
            "    CG                        {:9.3} ms  ({} iterations)",
            1e3 * self.solve_s,
            self.cg_iterations
        )?;
        writeln!(
            f,
            "  bytes per iteration: {} to the device, {} to the host",
            self.step_bytes_to_device, self.step_bytes_to_host
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On the GPU the measured Newton iteration moves only scalars (< 4 KiB) and starts from the
    /// same state as the host's (the free residual norm after the first iteration agrees). One
    /// `SKIP` line without a GPU; the host run is checked everywhere.
    #[test]
    fn device_newton_iteration_moves_scalars_only_and_matches_the_host() {
        let host = run(&NewtonBench { m: 9, cuda: false }).unwrap();
        assert!(host.residual_norm > 0.0 && host.cg_iterations > 0);
        if linalg::Device::cuda(0).is_err() {
            eprintln!(
                "SKIP device_newton_iteration_moves_scalars_only_and_matches_the_host: no GPU"
            );
            return;
        }
        let gpu = run(&NewtonBench { m: 9, cuda: true }).unwrap();
        eprintln!(
            "m = 9: {} B up, {} B down per Newton iteration; |r| host {:e} device {:e}",
            gpu.step_bytes_to_device, gpu.step_bytes_to_host, host.residual_norm, gpu.residual_norm
        );
        assert!(gpu.step_bytes_to_device + gpu.step_bytes_to_host < 4096);
        assert!((gpu.residual_norm - host.residual_norm).abs() <= 1e-10 * host.residual_norm);
        assert_eq!(gpu.cg_iterations, host.cg_iterations);
    }
}
