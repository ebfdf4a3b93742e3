//! Micro-benchmarks of the CUDA backend on an ex56-like operator: 3x3 blocks on the 27-point
//! stencil of an `n^3` node grid, random values.
//!
//! Measures, with device events (median of repeated single-kernel timings, after warm-up):
//! - the copy bandwidth (device-to-device copy of 1 GiB, bytes read + written);
//! - SpMV `y = A x` with each kernel variant, bytes counted as values + column indices + row
//!   offsets + `x` once + `y` once, and the fraction of the copy bandwidth;
//! - the vector kernels and the point-block Jacobi kernels at the same size;
//! - the Galerkin product `<3,3,6>` on level 0 (aggregates of 3x3x3 nodes, a smoothed
//!   prolongator's pattern `A P0`), with and without FMA contraction, and the SpGEMM `A P0`.
//!
//! Every result is checked against the host (bitwise where the kernel is exact).
//!
//! Usage: `cuda_bench [--n 66] [--reps 50] [--json FILE] [--no-ptap] [--kernels]`
//! (`--kernels` prints NVRTC's resource report of every kernel and exits; it needs NVRTC only).
//! It times linalg's internal kernels one by one, so it alone builds with the `kernel-bench`
//! feature (which makes `linalg::backend` public): `cargo build --release -p hexfem-linalg
//! --features kernel-bench --example cuda_bench` (`scripts/device.sh` stages it so).

use std::sync::Arc;
use std::time::Instant;

use linalg::backend::cuda::{
    self, vector, CudaContext, DeviceBlockDiagonal, DeviceBsr, DeviceBuffer, DevicePtapPlan,
    DeviceSpgemmPlan, SpmvKernel,
};
use linalg::{ops, spgemm_symbolic, BlockPattern, Bsr, LinalgError, PtapPlan, Vector};

struct Args {
    n: usize,
    reps: usize,
    json: Option<String>,
    ptap: bool,
    kernels: bool,
}

fn parse() -> Args {
    let mut a = Args {
        n: 66,
        reps: 50,
        json: None,
        ptap: true,
        kernels: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--n" => a.n = it.next().and_then(|v| v.parse().ok()).expect("--n N"),
            "--reps" => a.reps = it.next().and_then(|v| v.parse().ok()).expect("--reps N"),
            "--json" => a.json = it.next(),
            "--no-ptap" => a.ptap = false,
            "--kernels" => a.kernels = true,
            other => {
                eprintln!("unknown argument {other}; valid: --n N --reps N --json FILE --no-ptap --kernels");
                std::process::exit(2);
            }
        }
    }
    a
}

/// SplitMix64 values in [-1, 1).
fn random(seed: u64, n: usize) -> Vec<f64> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

/// The 27-point node stencil of an `n^3` grid, nodes numbered `(k n + j) n + i`.
fn grid_pattern(n: usize) -> BlockPattern {
    let idx = |i: usize, j: usize, k: usize| (k * n + j) * n + i;
    let mut row_ptr = Vec::with_capacity(n * n * n + 1);
    row_ptr.push(0);
    let mut cols = Vec::with_capacity(n * n * n * 27);
    for k in 0..n {
        for j in 0..n {
            for i in 0..n {
                for kk in k.saturating_sub(1)..(k + 2).min(n) {
                    for jj in j.saturating_sub(1)..(j + 2).min(n) {
                        for ii in i.saturating_sub(1)..(i + 2).min(n) {
                            cols.push(idx(ii, jj, kk) as u32);
                        }
                    }
                }
                row_ptr.push(cols.len());
            }
        }
    }
    BlockPattern::new(n * n * n, n * n * n, row_ptr, cols).expect("grid pattern")
}

/// Tentative prolongator pattern: node -> its aggregate of 3x3x3 nodes.
fn aggregate_pattern(n: usize) -> BlockPattern {
    let na = n.div_ceil(3);
    let mut cols = Vec::with_capacity(n * n * n);
    for k in 0..n {
        for j in 0..n {
            for i in 0..n {
                cols.push((((k / 3) * na + j / 3) * na + i / 3) as u32);
            }
        }
    }
    BlockPattern::new(n * n * n, na * na * na, (0..=n * n * n).collect(), cols).expect("P0")
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Median device time in ms of `f` over `reps` runs after `warm` warm-up runs.
fn time_ms(
    ctx: &CudaContext,
    warm: usize,
    reps: usize,
    mut f: impl FnMut() -> Result<(), LinalgError>,
) -> Result<f64, LinalgError> {
    for _ in 0..warm {
        f()?;
    }
    ctx.synchronize()?;
    let mut t = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = ctx.record_event()?;
        f()?;
        let end = ctx.record_event()?;
        t.push(start.elapsed_ms(&end)? as f64);
    }
    Ok(median(t))
}

fn bits_equal(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

fn max_rel_diff(a: &[f64], b: &[f64]) -> f64 {
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
    a.iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
        / scale
}

fn kernels_report() -> Result<(), LinalgError> {
    let mut cases: Vec<(&str, Vec<(&str, i64)>)> = Vec::new();
    for (br, bc) in [(3, 3), (6, 6), (3, 6), (6, 3)] {
        cases.push(("spmv.cu", vec![("BR", br), ("BC", bc)]));
        cases.push((
            "spmv.cu",
            vec![("BR", br), ("BC", bc), ("TRANSPOSE", 1), ("SLOTS", 1)],
        ));
    }
    cases.push(("jacobi.cu", vec![("BS", 3)]));
    cases.push(("jacobi.cu", vec![("BS", 6)]));
    cases.push(("spgemm.cu", vec![("AR", 3), ("AK", 3), ("BC", 6)]));
    cases.push(("spgemm.cu", vec![("AR", 6), ("AK", 3), ("BC", 6)]));
    cases.push(("spgemm.cu", vec![("AR", 6), ("AK", 6), ("BC", 6)]));
    for (name, defines) in cases {
        let (size, log) = cuda::compile_with_log(name, &defines, "sm_90", &["--ptxas-options=-v"])?;
        println!("== {name} {defines:?}: cubin {size} bytes");
        for line in log
            .lines()
            .filter(|l| l.contains("Used") || l.contains("spill") || l.contains("Compiling"))
        {
            println!("   {}", line.trim());
        }
    }
    Ok(())
}

fn main() {
    let args = parse();
    if args.kernels {
        if let Err(e) = kernels_report() {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
        return;
    }
    if let Err(e) = run(&args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> Result<(), LinalgError> {
    let ctx = CudaContext::new(0)?;
    let (free, total) = ctx.memory_info()?;
    println!(
        "device: {} (sm_{}{}, {} SMs), memory {:.1} / {:.1} GiB free",
        ctx.name(),
        ctx.compute_capability().0,
        ctx.compute_capability().1,
        ctx.multiprocessors(),
        free as f64 / (1u64 << 30) as f64,
        total as f64 / (1u64 << 30) as f64
    );
    let mut json = serde_like::Obj::default();
    json.str("device", ctx.name());
    json.num("nodes_per_side", args.n as f64);

    // Copy bandwidth.
    let copy_len = 1usize << 27; // 1 GiB of f64
    let src = ctx.filled(copy_len, 1.0)?;
    let mut dst = ctx.zeros::<f64>(copy_len)?;
    let t_copy = time_ms(&ctx, 3, 20, || ctx.copy(&src, &mut dst))?;
    let copy_gbs = 2.0 * (copy_len * 8) as f64 / (t_copy * 1e-3) / 1e9;
    println!("copy: 1 GiB d2d in {t_copy:.3} ms = {copy_gbs:.0} GB/s (read + write)");
    json.num("copy_gbs", copy_gbs);
    drop((src, dst));

    // The operator.
    let t0 = Instant::now();
    let n = args.n;
    let pattern = Arc::new(grid_pattern(n));
    let a = Bsr::from_parts(pattern.clone(), 3, 3, random(1, pattern.nnz() * 9))?;
    let x = random(2, a.n_cols());
    println!(
        "A: {}^3 nodes, {} block rows, {} blocks of 3x3 (built in {:.2} s)",
        n,
        pattern.n_block_rows(),
        pattern.nnz(),
        t0.elapsed().as_secs_f64()
    );
    json.num("block_rows", pattern.n_block_rows() as f64);
    json.num("blocks", pattern.nnz() as f64);
    let before = ctx.transfers();
    let da = DeviceBsr::upload(&ctx, &a)?;
    let dx = ctx.upload(&x)?;
    let up = ctx.transfers().host_to_device - before.host_to_device;
    println!("uploaded A and x: {:.1} MB host->device", up as f64 / 1e6);
    let mut dy = ctx.zeros::<f64>(a.n_rows())?;
    let mut host_y = Vector::zeros(a.n_rows());
    a.spmv(&Vector::from_vec(x.clone()), &mut host_y)?;

    let spmv_bytes = (pattern.nnz() * 9 * 8
        + pattern.nnz() * 4
        + (pattern.n_block_rows() + 1) * 4
        + a.n_cols() * 8
        + a.n_rows() * 8) as f64;
    println!("SpMV bytes counted: {:.1} MB", spmv_bytes / 1e6);
    json.num("spmv_bytes", spmv_bytes);
    let variants = [
        ("exact", SpmvKernel::Exact),
        ("flat8", SpmvKernel::Flat { group: 8 }),
        ("flat16", SpmvKernel::Flat { group: 16 }),
        ("flat32", SpmvKernel::Flat { group: 32 }),
    ];
    let mut spmv_rows = Vec::new();
    for (name, kernel) in variants {
        let t = time_ms(&ctx, 5, args.reps, || {
            cuda::spmv_with(&ctx, kernel, &da, 1.0, &dx, 0.0, &mut dy)
        })?;
        let y = ctx.download(&dy)?;
        let parity = if bits_equal(&y, host_y.host()?) {
            "bit-identical".to_string()
        } else {
            format!("max rel diff {:.1e}", max_rel_diff(&y, host_y.host()?))
        };
        let gbs = spmv_bytes / (t * 1e-3) / 1e9;
        println!(
            "spmv 3x3 {name:>7}: {t:.4} ms  {gbs:6.0} GB/s  {:5.1} % of copy  ({parity})",
            100.0 * gbs / copy_gbs
        );
        json.num(&format!("spmv_{name}_ms"), t);
        json.num(&format!("spmv_{name}_gbs"), gbs);
        spmv_rows.push((name, t));
    }

    // Vector and Jacobi kernels at the same size.
    let nvec = a.n_rows();
    let dx2 = ctx.upload(&random(3, nvec))?;
    let t_dot = time_ms(&ctx, 5, args.reps, || {
        let mut out = ctx.zeros::<f64>(1)?;
        vector::dot_into(&ctx, &dx, &dx2, &mut out)
    })?;
    let d_dot = vector::dot(&ctx, &dx, &dx2)?;
    let h_dot = ops::dot(
        &Vector::from_vec(x.clone()),
        &Vector::from_vec(random(3, nvec)),
    )?;
    println!(
        "dot ({nvec}): {t_dot:.4} ms  {:.0} GB/s  ({})",
        2.0 * nvec as f64 * 8.0 / (t_dot * 1e-3) / 1e9,
        if d_dot.to_bits() == h_dot.to_bits() {
            "bit-identical"
        } else {
            "DIFFERS"
        }
    );
    json.num("dot_ms", t_dot);
    // a whole `vector::dot` as CG calls it: one launch, 8 bytes down, the host's wait
    ctx.synchronize()?;
    let started = std::time::Instant::now();
    for _ in 0..args.reps.max(1) {
        vector::dot(&ctx, &dx, &dx2)?;
    }
    let dot_call_us = started.elapsed().as_secs_f64() * 1e6 / args.reps.max(1) as f64;
    println!("dot call (queue, wait, 8 bytes down): {dot_call_us:.1} us");
    json.num("dot_call_us", dot_call_us);
    let t_axpby = time_ms(&ctx, 5, args.reps, || {
        vector::axpby(&ctx, 0.5, &dx, 1.5, &mut dy)
    })?;
    println!(
        "axpby: {t_axpby:.4} ms  {:.0} GB/s",
        3.0 * nvec as f64 * 8.0 / (t_axpby * 1e-3) / 1e9
    );
    json.num("axpby_ms", t_axpby);
    // Diagonally dominant copy of A for the Jacobi kernels.
    let mut ad = a.clone();
    for k in pattern.diagonal_positions()? {
        let blk = ad.host_block_mut(k)?;
        for i in 0..3 {
            blk[i * 3 + i] += 30.0;
        }
    }
    let dad = DeviceBsr::upload(&ctx, &ad)?;
    let mut diag = DeviceBlockDiagonal::new(&ctx, &pattern, 3)?;
    let t_inv = time_ms(&ctx, 2, 10, || diag.invert(&ctx, &dad))?;
    println!("block_invert 3x3: {t_inv:.4} ms (includes one 8-byte status download)");
    json.num("block_invert_ms", t_inv);
    let t_apply = time_ms(&ctx, 5, args.reps, || {
        diag.apply(&ctx, 1.0, &dx, 0.0, &mut dy)
    })?;
    println!("block_apply 3x3: {t_apply:.4} ms");
    json.num("block_apply_ms", t_apply);
    let cheb = cuda::Chebyshev {
        emax: 2.0,
        degree: 2,
        lower: 0.1,
        upper: 1.1,
    };
    let (mut dr, mut dd) = (ctx.zeros::<f64>(nvec)?, ctx.zeros::<f64>(nvec)?);
    let mut dxs = ctx.zeros::<f64>(nvec)?;
    let t_cheb = time_ms(&ctx, 3, args.reps, || {
        cuda::chebyshev_smooth(
            &ctx, &dad, &diag, cheb, &dx, &mut dxs, false, &mut dr, &mut dd,
        )
    })?;
    println!("chebyshev(2) smooth (2 SpMV + 2 updates + copy): {t_cheb:.4} ms");
    json.num("chebyshev2_ms", t_cheb);
    drop((dad, diag, dr, dd, dxs, dx2));

    if args.ptap {
        ptap_bench(&ctx, args, &pattern, &a, &da, &mut json)?;
    }
    let tr = ctx.transfers();
    println!(
        "transfers: {:.1} MB host->device, {:.1} MB device->host",
        tr.host_to_device as f64 / 1e6,
        tr.device_to_host as f64 / 1e6
    );
    if let Some(path) = &args.json {
        std::fs::write(path, json.finish()).map_err(|e| LinalgError::Cuda {
            op: format!("writing {path}"),
            message: e.to_string(),
        })?;
    }
    println!("SUMMARY spmv 3x3 at {n}^3:");
    for (name, t) in spmv_rows {
        println!(
            "  {name:>7} {t:.4} ms  {:.0} GB/s  {:.1} % of copy {copy_gbs:.0} GB/s (goal <= 0.22 ms, >= 85 %)",
            spmv_bytes / (t * 1e-3) / 1e9,
            100.0 * spmv_bytes / (t * 1e-3) / 1e9 / copy_gbs
        );
    }
    Ok(())
}

fn ptap_bench(
    ctx: &CudaContext,
    args: &Args,
    pattern: &Arc<BlockPattern>,
    a: &Bsr,
    da: &DeviceBsr,
    json: &mut serde_like::Obj,
) -> Result<(), LinalgError> {
    let t0 = Instant::now();
    let p0_pat = Arc::new(aggregate_pattern(args.n));
    let p0 = Bsr::from_parts(p0_pat.clone(), 3, 6, random(4, p0_pat.nnz() * 18))?;
    let sp = spgemm_symbolic(pattern, &p0_pat)?;
    let p_pat = sp.pattern().clone();
    let p = Bsr::from_parts(p_pat.clone(), 3, 6, random(5, p_pat.nnz() * 18))?;
    let plan = PtapPlan::new(pattern, &p_pat)?;
    println!(
        "P: {} blocks of 3x6 ({} coarse nodes); A_c: {} blocks of 6x6; host symbolic {:.2} s",
        p_pat.nnz(),
        p_pat.n_block_cols(),
        plan.pattern().nnz(),
        t0.elapsed().as_secs_f64()
    );
    let t1 = Instant::now();
    let mut host_ac = Bsr::zeros(plan.pattern().clone(), 6, 6);
    linalg::ptap_numeric(&plan, a, &p, &mut host_ac, &mut plan.workspace())?;
    let host_ms = t1.elapsed().as_secs_f64() * 1e3;
    println!(
        "host ptap numeric: {host_ms:.1} ms ({} threads)",
        rayon::current_num_threads()
    );
    json.num("host_ptap_ms", host_ms);

    let dplan = DevicePtapPlan::upload(ctx, &plan)?.keep_workspace();
    let dp = DeviceBsr::upload(ctx, &p)?;
    let mut dac = DeviceBsr::zeros(ctx, dplan.pattern(), 6, 6)?;
    println!(
        "device plan: W = A P has {} blocks; plan {:.1} MB",
        dplan.w_nnz(),
        dplan.bytes() as f64 / 1e6
    );
    for fmad in [false, true] {
        let t = time_ms(ctx, 2, 10.min(args.reps), || {
            dplan.numeric_with(ctx, fmad, da, &dp, &mut dac)
        })?;
        let got = ctx.download(dac.values())?;
        println!(
            "ptap <3,3,6> fmad={fmad}: {t:.3} ms  (max rel diff vs host {:.1e})",
            max_rel_diff(&got, host_ac.host()?)
        );
        json.num(&format!("ptap336_fmad{}_ms", fmad as u8), t);
    }
    println!("device plan with W: {:.1} MB", dplan.bytes() as f64 / 1e6);

    // Coarser levels: 27-point operators with 6x6 blocks on the aggregate grids, each with its
    // own aggregation-like smoothed prolongator: an estimate of the whole hot Galerkin update.
    let mut total = 0.0;
    let mut m = args.n.div_ceil(3);
    while m >= 2 {
        let t = galerkin_level(ctx, m, args.reps)?;
        println!("ptap <6,6,6> on a {m}^3 coarse grid: {t:.3} ms");
        json.num(&format!("ptap666_{m}_ms"), t);
        total += t;
        m = m.div_ceil(3);
        if m == 1 {
            break;
        }
    }
    json.num("ptap_coarse_levels_ms", total);
    println!("ptap coarse levels total: {total:.3} ms");

    // SpGEMM A P0 (prolongator smoothing).
    let dsp = DeviceSpgemmPlan::upload(ctx, &sp)?;
    let dp0 = DeviceBsr::upload(ctx, &p0)?;
    let mut dap0 = DeviceBsr::zeros(ctx, dsp.pattern(), 3, 6)?;
    let t = time_ms(ctx, 2, 10.min(args.reps), || {
        dsp.numeric(ctx, da, &dp0, &mut dap0)
    })?;
    let mut host_ap0 = Bsr::zeros(sp.pattern().clone(), 3, 6);
    linalg::spgemm_numeric(&sp, a, &p0, &mut host_ap0)?;
    let same = bits_equal(&ctx.download(dap0.values())?, host_ap0.host()?);
    println!(
        "spgemm A P0 <3,3,6>: {t:.3} ms ({})",
        if same { "bit-identical" } else { "DIFFERS" }
    );
    json.num("spgemm_ap0_ms", t);

    // Restriction P^T x.
    let x = ctx.upload(&random(6, p.n_rows()))?;
    let mut y = ctx.zeros::<f64>(p.n_cols())?;
    let t = time_ms(ctx, 3, args.reps, || {
        cuda::spmv_transpose(ctx, dplan.restriction_map(), &dp, 1.0, &x, 0.0, &mut y)
    })?;
    println!("restriction P^T x: {t:.4} ms");
    json.num("restriction_ms", t);
    let _: &DeviceBuffer<f64> = &y;
    Ok(())
}

/// Median time of the Galerkin product `<6,6,6>` on an `m^3` grid operator with a smoothed
/// aggregation-like prolongator (aggregates of 3x3x3 nodes), checked against the host.
fn galerkin_level(ctx: &CudaContext, m: usize, reps: usize) -> Result<f64, LinalgError> {
    let a_pat = Arc::new(grid_pattern(m));
    let a = Bsr::from_parts(a_pat.clone(), 6, 6, random(7, a_pat.nnz() * 36))?;
    let p0 = Arc::new(aggregate_pattern(m));
    let p_pat = spgemm_symbolic(&a_pat, &p0)?.pattern().clone();
    let p = Bsr::from_parts(p_pat.clone(), 6, 6, random(8, p_pat.nnz() * 36))?;
    let plan = PtapPlan::new(&a_pat, &p_pat)?;
    let mut host = Bsr::zeros(plan.pattern().clone(), 6, 6);
    linalg::ptap_numeric(&plan, &a, &p, &mut host, &mut plan.workspace())?;
    let dplan = DevicePtapPlan::upload(ctx, &plan)?.keep_workspace();
    let (da, dp) = (DeviceBsr::upload(ctx, &a)?, DeviceBsr::upload(ctx, &p)?);
    let mut dac = DeviceBsr::zeros(ctx, dplan.pattern(), 6, 6)?;
    let t = time_ms(ctx, 2, 10.min(reps), || {
        dplan.numeric(ctx, &da, &dp, &mut dac)
    })?;
    let diff = max_rel_diff(&ctx.download(dac.values())?, host.host()?);
    if diff > 1e-12 {
        return Err(LinalgError::Cuda {
            op: format!("ptap <6,6,6> on {m}^3"),
            message: format!("differs from the host by {diff:e}"),
        });
    }
    Ok(t)
}

/// A minimal JSON object writer (numbers and strings), to keep the example dependency-free.
mod serde_like {
    #[derive(Default)]
    pub struct Obj(Vec<String>);

    impl Obj {
        pub fn num(&mut self, k: &str, v: f64) {
            self.0.push(format!("\"{k}\": {v}"));
        }
        pub fn str(&mut self, k: &str, v: &str) {
            self.0.push(format!("\"{k}\": \"{}\"", v.replace('"', "'")));
        }
        pub fn finish(&self) -> String {
            format!("{{\n  {}\n}}\n", self.0.join(",\n  "))
        }
    }
}
