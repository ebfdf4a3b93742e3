//! `hexfem bench assembly --device cuda`: the same residual + tangent assembly on the GPU
//! through `assembly::device::DeviceProblem` (element kernels into the device contribution
//! stream, summed by the uploaded COO plans). Device-event timings (median of [`REPEATS`]), the
//! bytes and flops each phase must move, and how close it gets to the copy bandwidth measured in
//! the same run.

use anyhow::{Context, Result};
use assembly::device::DeviceProblem;
use assembly::{Constraints, DiscreteProblem, ElasticityAssembler, Prescribed};
use fem::Load;
use linalg::gpu::CudaContext;
use linalg::{Bsr, Device, Vector};
use serde::Serialize;

/// Device-event repeats; the median is reported.
pub const REPEATS: usize = 20;

/// What the GPU run measures (milliseconds of device time unless named otherwise).
#[derive(Clone, Debug, Serialize)]
pub struct DeviceAssemblyMetrics {
    pub gpu: String,
    /// Residual + tangent (element kernels, both COO sums, residual scatter, the 4-byte failure
    /// flag read back), median of device-event timings.
    pub residual_tangent_ms: f64,
    pub elements_per_s: f64,
    /// Of it: the element kernel, and the COO sums (median of the phase timings).
    pub elements_ms: f64,
    pub sums_ms: f64,
    /// Residual only (element residual kernel, sum, scatter, flag).
    pub residual_ms: f64,
    /// Bytes the element kernel must move at least: write every contribution (tangent and
    /// residual), read the mesh (coordinates, displacement, connectivity) once.
    pub element_bytes: f64,
    /// Floating-point operations of the element kernel (its loops counted, see [`element_flops`]).
    pub element_flops: f64,
    pub element_gb_per_s: f64,
    pub element_gflop_per_s: f64,
    /// Bytes the COO sums must move at least (read every contribution and its index, write every
    /// block and slot pointer), and the rate achieved.
    pub sum_bytes: f64,
    pub sum_gb_per_s: f64,
    /// Device-to-device copy bandwidth (read + written), the ceiling for both phases.
    pub copy_gb_per_s: f64,
    /// One Newton iteration's linear system on the device (`DeviceProblem::linearize` +
    /// `eliminate`: residual, tangent, lifting, right-hand side, elimination, the free norm read
    /// back) with the `z = 0` face clamped and the `z = 1` face lifted by 0.01, median of device
    /// events; and the blocks the elimination writes.
    pub newton_system_ms: f64,
    pub eliminated_blocks: usize,
    /// Device bytes of the plans, mesh tables and contribution streams.
    pub device_bytes: usize,
    /// `max |K_gpu - K_cpu| / max |K_cpu|` and likewise for the residual, on this mesh; and the
    /// fraction of tangent values that are bit-identical.
    pub tangent_rel_diff: f64,
    pub residual_rel_diff: f64,
    pub tangent_bit_identical: f64,
}

/// Floating-point operations of the element kernel per cell for a split-tangent material
/// (neo-Hookean, linear), counted from `fem/cuda/element.cu`: per point the Jacobian (`18 n`),
/// gradients (`15 n`), `F` (`18 n`), `H g` (`15 n`), the material (about 60, one log), the residual
/// (`18 n`) and every tangent block (`51` each, `n^2` blocks: each thread integrates its own block;
/// the lower triangle as the transpose of the upper one, as the host mirrors it).
pub fn element_flops(nodes: usize, points: usize) -> f64 {
    let n = nodes as f64;
    points as f64 * (84.0 * n + 60.0 + 51.0 * n * n)
}

/// Median of device-event timings of `f` (ms) after one warm-up call.
fn event_median(ctx: &CudaContext, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let mut t = Vec::with_capacity(REPEATS);
    for _ in 0..REPEATS {
        let start = ctx.record_event()?;
        f()?;
        let end = ctx.record_event()?;
        t.push(start.elapsed_ms(&end)? as f64);
    }
    Ok(median(t))
}

fn median(mut t: Vec<f64>) -> f64 {
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// Copy bandwidth: 1 GiB copied device to device (read + written), median of 5.
fn copy_gbs(device: &Device, ctx: &CudaContext) -> Result<f64> {
    let n = (1usize << 30) / 8;
    let mut src = Vector::zeros_on(device, n)?;
    src.fill(1.0)?;
    let mut dst = Vector::zeros_on(device, n)?;
    let mut t = Vec::new();
    for _ in 0..5 {
        let start = ctx.record_event()?;
        dst.copy_from(&src)?;
        let end = ctx.record_event()?;
        t.push(start.elapsed_ms(&end)? as f64);
    }
    Ok(2.0 * (n * 8) as f64 / (median(t) * 1e-3) / 1e9)
}

fn rel_diff(a: &[f64], b: &[f64]) -> f64 {
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let diff = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    diff / scale
}

/// The `z = 0` face clamped and the `z = 1` face lifted by 0.01: the constraints of the timed
/// Newton system.
fn clamped_and_lifted(asm: &ElasticityAssembler) -> Result<Constraints> {
    let face = |z: f64| -> Vec<usize> {
        (0..asm.n_nodes())
            .filter(|&i| (asm.coords()[i][2] - z).abs() < 1e-9)
            .collect()
    };
    Ok(Constraints::new(
        asm.n_nodes(),
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
        &asm.orphan_nodes(),
    )?)
}

/// Runs the GPU measurements on `asm` at `u` (no body force: the device loop takes dead loads
/// through the external force vector) through a [`DeviceProblem`] of `asm`, the clamped and
/// lifted box and no loads; `sum_bytes` as the CPU bench counts them. Gives `asm` back.
pub fn measure(
    mut asm: ElasticityAssembler,
    u: &Vector,
    sum_bytes: f64,
) -> Result<(DeviceAssemblyMetrics, ElasticityAssembler)> {
    let device = Device::cuda(0).context("--device cuda")?;
    let ctx = device.cuda_context().context("--device cuda")?.clone();
    // the host's values on this mesh (parity), and the element kernel's traffic and work
    let mut rh = Vector::zeros(u.len());
    let mut kh: Bsr = asm.new_matrix();
    asm.residual_tangent(u, Load::None, &mut rh, &mut kh)?;
    let (n_cells, npc) = (asm.n_cells(), asm.kernel().n_nodes());
    let contributions = n_cells * npc * (npc * 9 + 3);
    let element_bytes = (contributions * 8 + asm.n_nodes() * 48 + n_cells * npc * 4) as f64;
    let element_flops = n_cells as f64 * element_flops(npc, asm.kernel().n_qp());
    let constraints = clamped_and_lifted(&asm)?;
    let discrete = DiscreteProblem {
        external: Vector::zeros(u.len()),
        assembler: asm,
        constraints,
        follower: Vec::new(),
        curved: Vec::new(),
        partition: None,
    };
    let mut problem = DeviceProblem::new(&ctx, &discrete)?;
    let ud = u.to_device(&device)?;
    let mut system = problem.new_system()?;
    let (r, k) = (&mut system.residual, &mut system.tangent);
    let residual_tangent_ms =
        event_median(&ctx, || Ok(problem.internal_residual_tangent(&ud, r, k)?))?;
    let residual_ms = event_median(&ctx, || Ok(problem.internal_residual(&ud, r)?))?;
    let (mut el, mut sums) = (Vec::new(), Vec::new());
    for _ in 0..REPEATS {
        let t = problem.timed_internal_residual_tangent(&ud, r, k)?;
        el.push(t.elements_ms);
        sums.push(t.sums_ms);
    }
    let (elements_ms, sums_ms) = (median(el), median(sums));
    let kdv = k.to_host_vec()?;
    let rdv = r.to_host_vec()?;
    let khv = kh.host()?;
    let same = kdv.iter().zip(khv).filter(|(a, b)| a == b).count();
    // one Newton iteration's linear system: clamped bottom, lifted top
    let mut newton = problem.new_system()?;
    let newton_system_ms = event_median(&ctx, || {
        problem.linearize(&ud, 1.0, &mut newton)?;
        problem.eliminate(&mut newton)?;
        Ok(())
    })?;
    let metrics = DeviceAssemblyMetrics {
        gpu: ctx.name().to_string(),
        residual_tangent_ms,
        elements_per_s: n_cells as f64 / (residual_tangent_ms * 1e-3),
        elements_ms,
        sums_ms,
        residual_ms,
        element_bytes,
        element_flops,
        element_gb_per_s: element_bytes / (elements_ms * 1e-3) / 1e9,
        element_gflop_per_s: element_flops / (elements_ms * 1e-3) / 1e9,
        sum_bytes,
        sum_gb_per_s: sum_bytes / (sums_ms * 1e-3) / 1e9,
        copy_gb_per_s: copy_gbs(&device, &ctx)?,
        newton_system_ms,
        eliminated_blocks: problem.eliminated_blocks(),
        device_bytes: problem.assembly_bytes(),
        tangent_rel_diff: rel_diff(&kdv, khv),
        residual_rel_diff: rel_diff(&rdv, rh.host()?),
        tangent_bit_identical: same as f64 / kdv.len() as f64,
    };
    Ok((metrics, discrete.assembler))
}

impl std::fmt::Display for DeviceAssemblyMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pct = |gbs: f64| 100.0 * gbs / self.copy_gb_per_s;
        writeln!(
            f,
            "  GPU: {} (copy {:.0} GB/s)",
            self.gpu, self.copy_gb_per_s
        )?;
        writeln!(
            f,
            "  residual + tangent (device)         {:8.3} ms  ({:.2e} elements/s)",
            self.residual_tangent_ms, self.elements_per_s
        )?;
        writeln!(
            f,
            "    element kernel                    {:8.3} ms  ({:.2} GB, {:.0} GB/s = {:.0} % of copy; {:.1} GFLOP, {:.0} GFLOP/s)",
            self.elements_ms,
            self.element_bytes / 1e9,
            self.element_gb_per_s,
            pct(self.element_gb_per_s),
            self.element_flops / 1e9,
            self.element_gflop_per_s
        )?;
        writeln!(
            f,
            "    COO sums                          {:8.3} ms  ({:.2} GB, {:.0} GB/s = {:.0} % of copy)",
            self.sums_ms,
            self.sum_bytes / 1e9,
            self.sum_gb_per_s,
            pct(self.sum_gb_per_s)
        )?;
        writeln!(
            f,
            "  residual only (device)              {:8.3} ms",
            self.residual_ms
        )?;
        writeln!(
            f,
            "  Newton linear system (device)       {:8.3} ms  (linearize + eliminate, {} blocks eliminated)",
            self.newton_system_ms, self.eliminated_blocks
        )?;
        writeln!(
            f,
            "  vs CPU: tangent {:.1e}, residual {:.1e} relative; {:.1} % of tangent values bit-identical; device memory {:.0} MiB",
            self.tangent_rel_diff,
            self.residual_rel_diff,
            100.0 * self.tangent_bit_identical,
            self.device_bytes as f64 / (1 << 20) as f64
        )
    }
}
