//! Parity tests of the CUDA backend against the host kernels and dense references, on random
//! data and random block shapes, with poisoned (NaN) outputs so that an unwritten value shows.
//! Without a GPU each test prints one `SKIP` line and passes; the kernels are still compiled by
//! NVRTC where the library is present (`every_kernel_compiles_without_spills`).

use std::sync::{Arc, OnceLock};

use super::*;
use crate::{
    ops, spgemm_numeric, spgemm_symbolic, transpose_symbolic, BlockPattern, Bsr, CooPlan,
    LinalgError, PtapPlan, Vector,
};

/// The shared context of every test here.
static CTX: OnceLock<Result<Arc<CudaContext>, LinalgError>> = OnceLock::new();

/// [`gpu`]'s context as a [`crate::Device`].
fn gpu_device(test: &str) -> Option<crate::Device> {
    gpu(test)?;
    CTX.get()
        .and_then(|c| c.as_ref().ok())
        .map(|c| crate::Device::Cuda(c.clone()))
}

/// The shared context, or `None` (after one printed line) where there is no usable GPU.
fn gpu(test: &str) -> Option<&'static CudaContext> {
    match CTX.get_or_init(|| CudaContext::new(0)) {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("SKIP {test}: no GPU ({e})");
            None
        }
    }
}

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
    fn vec(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.unit()).collect()
    }
}

fn random_pattern(
    rng: &mut Rng,
    nbr: usize,
    nbc: usize,
    density: f64,
    diag: bool,
) -> Arc<BlockPattern> {
    let mut row_ptr = vec![0];
    let mut col_idx = Vec::new();
    for i in 0..nbr {
        for j in 0..nbc {
            if (diag && i == j) || (rng.unit() + 1.0) * 0.5 < density {
                col_idx.push(j as u32);
            }
        }
        row_ptr.push(col_idx.len());
    }
    Arc::new(BlockPattern::new(nbr, nbc, row_ptr, col_idx).unwrap())
}

fn random_bsr(rng: &mut Rng, pattern: &Arc<BlockPattern>, br: usize, bc: usize) -> Bsr {
    let v = rng.vec(pattern.nnz() * br * bc);
    Bsr::from_parts(pattern.clone(), br, bc, v).unwrap()
}

fn poisoned(ctx: &CudaContext, n: usize) -> DeviceBuffer<f64> {
    ctx.filled(n, f64::NAN).unwrap()
}

fn assert_bits(what: &str, device: &[f64], host: &[f64]) {
    assert_eq!(device.len(), host.len(), "{what}: lengths");
    for (k, (d, h)) in device.iter().zip(host).enumerate() {
        assert!(
            d.to_bits() == h.to_bits(),
            "{what}: entry {k}: device {d:e} vs host {h:e}"
        );
    }
}

fn assert_close(what: &str, device: &[f64], reference: &[f64], rtol: f64) {
    assert_eq!(device.len(), reference.len(), "{what}: lengths");
    let scale = reference
        .iter()
        .fold(0.0f64, |m, v| m.max(v.abs()))
        .max(1e-300);
    for (k, (d, r)) in device.iter().zip(reference).enumerate() {
        assert!(
            (d - r).abs() <= rtol * scale,
            "{what}: entry {k}: device {d:e} vs reference {r:e}"
        );
    }
}

#[test]
fn context_without_gpu_is_an_error_not_a_panic() {
    match CudaContext::new(0) {
        Ok(ctx) => assert!(ctx.compute_capability().0 >= 3),
        Err(LinalgError::CudaUnavailable { reason }) => assert!(!reason.is_empty()),
        Err(e) => panic!("expected CudaUnavailable, got {e}"),
    }
    // A device beyond the count is refused the same way.
    assert!(CudaContext::new(1 << 20).is_err());
}

#[test]
fn every_kernel_compiles_without_spills() {
    if !super::nvrtc::library_present() {
        eprintln!("SKIP every_kernel_compiles_without_spills: NVRTC not found");
        return;
    }
    let arch = gpu("(compile check uses sm_90 without one)")
        .map(|c| {
            format!(
                "sm_{}{}",
                c.compute_capability().0,
                c.compute_capability().1
            )
        })
        .unwrap_or_else(|| "sm_90".into());
    let mut cases: Vec<(&str, Vec<(&str, i64)>)> = Vec::new();
    for br in 1..=6 {
        for bc in 1..=6 {
            cases.push(("spmv.cu", vec![("BR", br), ("BC", bc)]));
            cases.push((
                "spmv.cu",
                vec![("BR", br), ("BC", bc), ("TRANSPOSE", 1), ("SLOTS", 1)],
            ));
        }
    }
    for g in [4, 8, 16, 32] {
        cases.push(("spmv.cu", vec![("BR", 3), ("BC", 3), ("GROUP", g)]));
    }
    for bs in 1..=6 {
        cases.push(("jacobi.cu", vec![("BS", bs)]));
    }
    for bl in [1, 9, 18, 36] {
        cases.push(("coo.cu", vec![("BL", bl)]));
    }
    cases.push(("vector.cu", vec![]));
    for (bs, k) in [(3, 6), (6, 6), (1, 1), (3, 3)] {
        cases.push(("qr.cu", vec![("BS", bs), ("K", k)]));
    }
    for (ar, ak, bc) in [
        (3, 3, 6),
        (6, 6, 6),
        (6, 3, 6),
        (3, 3, 3),
        (1, 1, 1),
        (2, 5, 4),
    ] {
        cases.push(("spgemm.cu", vec![("AR", ar), ("AK", ak), ("BC", bc)]));
        cases.push((
            "spgemm.cu",
            vec![("AR", ar), ("AK", ak), ("BC", bc), ("ILP", 1)],
        ));
        // the pair-list kernels' largest and smallest thread shares
        cases.push((
            "spgemm.cu",
            vec![("AR", ar), ("AK", ak), ("BC", bc), ("RPT", 1), ("CPT", 1)],
        ));
    }
    cases.push((
        "spgemm.cu",
        vec![("AR", 3), ("AK", 3), ("BC", 6), ("RPT", 3), ("CPT", 6)],
    ));
    cases.push((
        "spgemm.cu",
        vec![("AR", 6), ("AK", 6), ("BC", 6), ("RPT", 3), ("CPT", 6)],
    ));
    cases.push(("ops.cu", vec![]));
    for (bs, k) in [(3, 6), (6, 6), (1, 1), (2, 5)] {
        cases.push(("ops.cu", vec![("BS", bs), ("K", k)]));
    }
    cases.push(("mis.cu", vec![]));
    cases.push(("graph.cu", vec![]));
    cases.push(("symbolic.cu", vec![]));
    // fp32 storage (mixed-precision AMG): the value-type slots of the kernels that read it
    for (br, bc) in [(3, 3), (6, 6), (3, 6), (6, 3)] {
        cases.push(("spmv.cu", vec![("BR", br), ("BC", bc), ("VAL_F32", 1)]));
        cases.push((
            "spmv.cu",
            vec![
                ("BR", br),
                ("BC", bc),
                ("TRANSPOSE", 1),
                ("SLOTS", 1),
                ("VAL_F32", 1),
            ],
        ));
    }
    for bs in [1, 3, 6] {
        for (a, d) in [(0, 1), (1, 1), (1, 0)] {
            cases.push(("jacobi.cu", vec![("BS", bs), ("A_F32", a), ("D_F32", d)]));
        }
    }
    let check = |name: &str, defines: &[(&str, i64)], launched: &str| {
        let (size, log) = compile_with_log(name, defines, &arch, &["--ptxas-options=-v"])
            .unwrap_or_else(|e| panic!("{name} {defines:?}: {e}"));
        assert!(size > 0);
        let mut function = "";
        for line in log.lines() {
            if let Some(i) = line.find("Function properties for ") {
                function = &line[i + "Function properties for ".len()..];
            }
            if line.contains("spill") && function.starts_with(launched) {
                assert!(
                    line.contains(" 0 bytes spill stores, 0 bytes spill loads"),
                    "{name} {defines:?} spills in {function}: {line}"
                );
            }
        }
    };
    for (name, defines) in &cases {
        check(name, defines, "");
    }
    // The fp32 value types of the Galerkin product, with the ILP the products use (4 for inner
    // dimension 6, 1 where both operands are fp32): a module compiled for one pass's value
    // types also holds the other pass's kernels, never launched with them; each set is checked
    // on the kernels that run with it (W = A P: `spgemm_nn*`; A_c = P^T W: `ptw_tn*`).
    for (ar, ak, bc) in [(3, 3, 6), (6, 6, 6), (6, 3, 6)] {
        for (l, r, o, launched) in [
            (0, 1, 0, "spgemm_nn"),
            (1, 1, 0, "spgemm_nn"),
            (1, 0, 1, "ptw_tn"),
        ] {
            let ilp = match (ak, l, r) {
                (_, 1, 1) => 1,
                (6, _, _) => 4,
                _ => 1,
            };
            let defines = [
                ("AR", ar),
                ("AK", ak),
                ("BC", bc),
                ("ILP", ilp),
                ("L_F32", l),
                ("R_F32", r),
                ("O_F32", o),
            ];
            check("spgemm.cu", &defines, launched);
        }
    }
}

#[test]
fn nvrtc_is_loaded_once_and_stays_loaded() {
    if !super::nvrtc::library_present() {
        eprintln!("SKIP nvrtc_is_loaded_once_and_stays_loaded: NVRTC not found");
        return;
    }
    // the presence check keeps the library mapped (cudarc's own check closes what it opened),
    // so no later check or first compilation opens it again
    let maps = std::fs::read_to_string("/proc/self/maps").expect("Linux process maps");
    assert!(
        maps.lines().any(|l| l.contains("libnvrtc")),
        "NVRTC is not mapped after the presence check"
    );
    // its version is asked once: the same string every time
    let (first, again) = (super::nvrtc::version(), super::nvrtc::version());
    assert!(std::ptr::eq(first, again));
    assert!(first.contains('.'), "NVRTC version {first:?}");
}

#[test]
fn compile_error_shows_the_nvrtc_log() {
    if !super::nvrtc::library_present() {
        eprintln!("SKIP compile_error_shows_the_nvrtc_log: NVRTC not found");
        return;
    }
    // spmv.cu needs BR and BC: without them NVRTC fails and its log names the identifier.
    let e = compile_with_log("spmv.cu", &[], "sm_90", &[]).unwrap_err();
    match e {
        LinalgError::CudaCompile { kernel, log, .. } => {
            assert_eq!(kernel, "spmv.cu");
            assert!(log.contains("BR"), "log: {log}");
        }
        e => panic!("expected CudaCompile, got {e}"),
    }
}

#[test]
fn transfers_are_counted() {
    let Some(ctx) = gpu("transfers_are_counted") else {
        return;
    };
    // Other tests share the context: count the difference around our own copies only.
    let local = CudaContext::new(0).unwrap();
    let before = local.transfers();
    let b = local.upload(&[1.0f64; 100]).unwrap();
    let back = local.download(&b).unwrap();
    assert_eq!(back, vec![1.0; 100]);
    let after = local.transfers();
    assert_eq!(after.host_to_device - before.host_to_device, 800);
    assert_eq!(after.device_to_host - before.device_to_host, 800);
    let _ = ctx;
}

#[test]
fn staged_copies_move_every_byte_and_are_counted() {
    let Some(ctx) = gpu("staged_copies_move_every_byte_and_are_counted") else {
        return;
    };
    let local = CudaContext::new(0).unwrap();
    let mut rng = Rng(7);
    // below, at and above the staging threshold, one chunk, several chunks with a tail
    for n in [1 << 17, (1 << 17) + 1, 1 << 20, 5 * (1 << 20) + 3] {
        let host = rng.vec(n);
        let before = local.transfers();
        let mut buf = local.upload(&host).unwrap();
        assert_bits("staged upload", &local.download(&buf).unwrap(), &host);
        // a kernel queued before a download is seen by it; an upload precedes the next kernel
        let copy = local.duplicate(&buf).unwrap();
        vector::axpy(&local, 1.0, &copy, &mut buf).unwrap();
        let twice: Vec<f64> = host.iter().map(|x| x + x).collect();
        let mut into = vec![f64::NAN; n];
        local.download_into(&buf, &mut into).unwrap();
        assert_bits("staged download_into", &into, &twice);
        let ints: Vec<u32> = (0..n as u32)
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        let mut ib = local.zeros::<u32>(n).unwrap();
        local.upload_into(&ints, &mut ib).unwrap();
        assert_eq!(local.download(&ib).unwrap(), ints);
        let after = local.transfers();
        assert_eq!(
            after.host_to_device - before.host_to_device,
            (8 * n + 4 * n) as u64
        );
        assert_eq!(
            after.device_to_host - before.device_to_host,
            (8 * n + 8 * n + 4 * n) as u64
        );
    }
    let _ = ctx;
}

#[test]
fn spmv_is_bit_identical_to_the_host_for_random_shapes() {
    let Some(ctx) = gpu("spmv_is_bit_identical_to_the_host_for_random_shapes") else {
        return;
    };
    let mut rng = Rng(11);
    let mut shapes: Vec<(usize, usize)> = vec![(3, 3), (6, 6), (3, 6), (6, 3)];
    shapes.extend((0..12).map(|_| (1 + rng.below(6), 1 + rng.below(6))));
    for (br, bc) in shapes {
        let (nbr, nbc) = (1 + rng.below(90), 1 + rng.below(90));
        let density = [0.02, 0.2, 0.6][rng.below(3)];
        let pattern = random_pattern(&mut rng, nbr, nbc, density, false);
        let a = random_bsr(&mut rng, &pattern, br, bc);
        let x = rng.vec(a.n_cols());
        let y0 = rng.vec(a.n_rows());
        let da = DeviceBsr::upload(ctx, &a).unwrap();
        let dx = ctx.upload(&x).unwrap();
        for (alpha, beta) in [(1.0, 0.0), (-0.7, 1.3)] {
            let mut host = Vector::from_vec(y0.clone());
            a.spmv_add(alpha, &Vector::from_vec(x.clone()), beta, &mut host)
                .unwrap();
            let mut dy = if beta == 0.0 {
                poisoned(ctx, a.n_rows())
            } else {
                ctx.upload(&y0).unwrap()
            };
            spmv(ctx, &da, alpha, &dx, beta, &mut dy).unwrap();
            let what = format!("spmv {br}x{bc} beta {beta}");
            assert_bits(&what, &ctx.download(&dy).unwrap(), host.host().unwrap());
            for group in [4, 32] {
                let mut dy = if beta == 0.0 {
                    poisoned(ctx, a.n_rows())
                } else {
                    ctx.upload(&y0).unwrap()
                };
                spmv_with(
                    ctx,
                    SpmvKernel::Flat { group },
                    &da,
                    alpha,
                    &dx,
                    beta,
                    &mut dy,
                )
                .unwrap();
                assert_close(
                    &what,
                    &ctx.download(&dy).unwrap(),
                    host.host().unwrap(),
                    1e-13,
                );
            }
        }
    }
}

/// The host restriction's order (amg's `restrict`): per coarse component `c`,
/// `t = P[0][c] x_0 + P[1][c] x_1 + ...`, added over the `P^T` row in order.
fn host_transpose_spmv(pt: &BlockPattern, slots: &[u32], a: &Bsr, x: &[f64]) -> Vec<f64> {
    let (br, bc) = (a.block_rows(), a.block_cols());
    let mut y = vec![0.0; pt.n_block_rows() * bc];
    for i in 0..pt.n_block_rows() {
        let range = pt.row_ptr()[i]..pt.row_ptr()[i + 1];
        for (&fine, &slot) in pt.col_idx()[range.clone()].iter().zip(&slots[range]) {
            let f = fine as usize * br;
            let blk = a.host_block(slot as usize).unwrap();
            for c in 0..bc {
                let mut t = blk[c] * x[f];
                for r in 1..br {
                    t += blk[r * bc + c] * x[f + r];
                }
                y[i * bc + c] += t;
            }
        }
    }
    y
}

#[test]
fn transpose_spmv_and_restriction_are_bit_identical_to_the_host() {
    let Some(ctx) = gpu("transpose_spmv_and_restriction_are_bit_identical_to_the_host") else {
        return;
    };
    let mut rng = Rng(12);
    let mut shapes: Vec<(usize, usize)> = vec![(3, 6), (6, 6), (3, 3), (6, 3)];
    shapes.extend((0..8).map(|_| (1 + rng.below(6), 1 + rng.below(6))));
    for (br, bc) in shapes {
        let (n_fine, n_coarse) = (5 + rng.below(80), 1 + rng.below(30));
        let a_pat = random_pattern(&mut rng, n_fine, n_fine, 0.1, true);
        let p_pat = random_pattern(&mut rng, n_fine, n_coarse, 0.2, false);
        let p = random_bsr(&mut rng, &p_pat, br, bc);
        let plan = PtapPlan::new(&a_pat, &p_pat).unwrap();
        let x = rng.vec(p.n_rows());
        let reference = host_transpose_spmv(plan.pt_pattern(), plan.pt_slots(), &p, &x);
        // Dense check of the reference itself.
        let d = p.to_dense().unwrap();
        let mut dense = vec![0.0; p.n_cols()];
        for (r, xr) in x.iter().enumerate() {
            for (c, yc) in dense.iter_mut().enumerate() {
                *yc += d[r * p.n_cols() + c] * xr;
            }
        }
        assert_close("restriction reference", &reference, &dense, 1e-13);

        let dp = DeviceBsr::upload(ctx, &p).unwrap();
        let dx = ctx.upload(&x).unwrap();
        let map = DeviceTransposeMap::from_ptap_plan(ctx, &plan).unwrap();
        let mut dy = poisoned(ctx, p.n_cols());
        spmv_transpose(ctx, &map, &dp, 1.0, &dx, 0.0, &mut dy).unwrap();
        assert_bits(
            &format!("restriction {br}x{bc}"),
            &ctx.download(&dy).unwrap(),
            &reference,
        );

        // The same through a TransposePlan, with alpha and beta.
        let tplan = transpose_symbolic(&p_pat);
        let tmap = DeviceTransposeMap::from_transpose_plan(ctx, &tplan).unwrap();
        let y0 = rng.vec(p.n_cols());
        let mut dy = ctx.upload(&y0).unwrap();
        spmv_transpose(ctx, &tmap, &dp, 0.5, &dx, -2.0, &mut dy).unwrap();
        let slots: Vec<u32> = tplan.source_slots().iter().map(|&s| s as u32).collect();
        let t = host_transpose_spmv(tplan.pattern(), &slots, &p, &x);
        let expected: Vec<f64> = t.iter().zip(&y0).map(|(t, y)| 0.5 * t + -2.0 * y).collect();
        assert_bits(
            &format!("transpose spmv {br}x{bc}"),
            &ctx.download(&dy).unwrap(),
            &expected,
        );
    }
}

/// Long rows (a coarse level's rows, a restriction's `P^T` rows of hundreds of blocks: many
/// chunks of 32 units a row, a chunk's first unit not of component 0 where 32 is no multiple of
/// the block's output size): the host's bits, as the short rows are.
#[test]
fn spmv_and_restriction_of_long_rows_are_bit_identical_to_the_host() {
    let Some(ctx) = gpu("spmv_and_restriction_of_long_rows_are_bit_identical_to_the_host") else {
        return;
    };
    let mut rng = Rng(14);
    for (br, bc) in [(3, 3), (6, 6), (3, 6), (6, 3), (5, 2)] {
        let pattern = random_pattern(&mut rng, 20, 400, 0.6, false);
        let a = random_bsr(&mut rng, &pattern, br, bc);
        let x = rng.vec(a.n_cols());
        let y0 = rng.vec(a.n_rows());
        let mut host = Vector::from_vec(y0.clone());
        a.spmv_add(-0.7, &Vector::from_vec(x.clone()), 1.3, &mut host)
            .unwrap();
        let da = DeviceBsr::upload(ctx, &a).unwrap();
        let mut dy = ctx.upload(&y0).unwrap();
        spmv(ctx, &da, -0.7, &ctx.upload(&x).unwrap(), 1.3, &mut dy).unwrap();
        assert_bits(
            &format!("long rows {br}x{bc}"),
            &ctx.download(&dy).unwrap(),
            host.host().unwrap(),
        );
        // the restriction of a P with few coarse columns: P^T rows of about 300 blocks
        let p_pat = random_pattern(&mut rng, 600, 4, 0.5, false);
        let a_pat = random_pattern(&mut rng, 600, 600, 0.01, true);
        let p = random_bsr(&mut rng, &p_pat, br, bc);
        let plan = PtapPlan::new(&a_pat, &p_pat).unwrap();
        let x = rng.vec(p.n_rows());
        let reference = host_transpose_spmv(plan.pt_pattern(), plan.pt_slots(), &p, &x);
        let map = DeviceTransposeMap::from_ptap_plan(ctx, &plan).unwrap();
        let mut dy = poisoned(ctx, p.n_cols());
        let (dp, dx) = (DeviceBsr::upload(ctx, &p).unwrap(), ctx.upload(&x).unwrap());
        spmv_transpose(ctx, &map, &dp, 1.0, &dx, 0.0, &mut dy).unwrap();
        assert_bits(
            &format!("long restriction rows {br}x{bc}"),
            &ctx.download(&dy).unwrap(),
            &reference,
        );
    }
}

#[test]
fn vector_kernels_are_bit_identical_to_the_host() {
    let Some(ctx) = gpu("vector_kernels_are_bit_identical_to_the_host") else {
        return;
    };
    let device = gpu_device("vector_kernels_are_bit_identical_to_the_host").unwrap();
    let mut rng = Rng(13);
    for n in [0usize, 1, 3, 4095, 4096, 4097, 12_289, 100_003] {
        let (x, y) = (rng.vec(n), rng.vec(n));
        let (dx, dy) = (ctx.upload(&x).unwrap(), ctx.upload(&y).unwrap());
        let hx = Vector::from_vec(x.clone());
        let hy = Vector::from_vec(y.clone());
        // both exact sums of the same rounded products, rounded once
        let d = vector::dot(ctx, &dx, &dy).unwrap();
        assert_eq!(
            d.to_bits(),
            ops::dot(&hx, &hy).unwrap().to_bits(),
            "dot n={n}"
        );
        // the norm as the solvers take it (`ops::norm2` of a device vector)
        let nrm = ops::norm2(&hx.to_device(&device).unwrap()).unwrap();
        assert_eq!(
            nrm.to_bits(),
            ops::norm2(&hx).unwrap().to_bits(),
            "norm2 n={n}"
        );

        for (a, b) in [(1.5, 0.0), (-0.25, 2.0)] {
            let mut h = hy.clone();
            ops::axpby(a, &hx, b, &mut h).unwrap();
            let mut dz = if b == 0.0 {
                poisoned(ctx, n)
            } else {
                ctx.upload(&y).unwrap()
            };
            vector::axpby(ctx, a, &dx, b, &mut dz).unwrap();
            assert_bits("axpby", &ctx.download(&dz).unwrap(), h.host().unwrap());
        }
        let mut h = hy.clone();
        ops::axpy(0.3, &hx, &mut h).unwrap();
        let mut dz = ctx.upload(&y).unwrap();
        vector::axpy(ctx, 0.3, &dx, &mut dz).unwrap();
        assert_bits("axpy", &ctx.download(&dz).unwrap(), h.host().unwrap());
    }
    // Run to run: the same bits.
    let x = rng.vec(1 << 20);
    let dx = ctx.upload(&x).unwrap();
    let first = vector::dot(ctx, &dx, &dx).unwrap();
    for _ in 0..5 {
        assert_eq!(
            vector::dot(ctx, &dx, &dx).unwrap().to_bits(),
            first.to_bits()
        );
    }
}

/// The host's block inversion ([`crate::dense::invert_in_place`]); the failing step on a zero
/// pivot.
fn host_invert(a: &mut [f64], n: usize) -> Result<(), usize> {
    crate::dense::invert_in_place(a, n, &mut vec![0; n]).map_err(|p| p.column)
}

/// Host `x = omega D^-1 r + beta x` in the host apply kernel's order.
fn host_apply(inv: &[f64], bs: usize, omega: f64, r: &[f64], beta: f64, x: &mut [f64]) {
    for b in 0..r.len() / bs {
        for i in 0..bs {
            let mut s = 0.0;
            for j in 0..bs {
                s += inv[b * bs * bs + i * bs + j] * r[b * bs + j];
            }
            let xi = &mut x[b * bs + i];
            *xi = if beta == 0.0 {
                omega * s
            } else {
                omega * s + beta * *xi
            };
        }
    }
}

/// A random matrix with strong diagonal blocks (an SPD-like, invertible block diagonal).
fn diag_dominant(rng: &mut Rng, n: usize, bs: usize) -> Bsr {
    let pattern = random_pattern(rng, n, n, 0.1, true);
    let mut a = random_bsr(rng, &pattern, bs, bs);
    for (row, k) in pattern
        .diagonal_positions()
        .unwrap()
        .into_iter()
        .enumerate()
    {
        let _ = row;
        let blk = a.host_block_mut(k).unwrap();
        for i in 0..bs {
            blk[i * bs + i] += 4.0 + bs as f64;
        }
    }
    a
}

#[test]
fn block_jacobi_is_bit_identical_to_the_host_and_names_a_singular_block() {
    let Some(ctx) = gpu("block_jacobi_is_bit_identical_to_the_host_and_names_a_singular_block")
    else {
        return;
    };
    let mut rng = Rng(14);
    for bs in 1..=6 {
        let n = 1 + rng.below(200);
        let a = diag_dominant(&mut rng, n, bs);
        let mut host_inv = crate::BlockDiagonal::from_diagonal(&a, bs)
            .unwrap()
            .to_host_vec()
            .unwrap();
        for blk in host_inv.chunks_exact_mut(bs * bs) {
            host_invert(blk, bs).unwrap();
        }
        let da = DeviceBsr::upload(ctx, &a).unwrap();
        let mut diag = DeviceBlockDiagonal::new(ctx, a.pattern(), bs).unwrap();
        diag.invert(ctx, &da).unwrap();
        assert_bits(
            &format!("inverse bs {bs}"),
            &ctx.download(diag.inverse()).unwrap(),
            &host_inv,
        );
        let (r, x0) = (rng.vec(n * bs), rng.vec(n * bs));
        let dr = ctx.upload(&r).unwrap();
        for (omega, beta) in [(0.8, 0.0), (1.1, -0.5)] {
            let mut hx = x0.clone();
            host_apply(&host_inv, bs, omega, &r, beta, &mut hx);
            let mut dx = if beta == 0.0 {
                poisoned(ctx, n * bs)
            } else {
                ctx.upload(&x0).unwrap()
            };
            diag.apply(ctx, omega, &dr, beta, &mut dx).unwrap();
            assert_bits("block apply", &ctx.download(&dx).unwrap(), &hx);
        }
        // Make blocks 2 and 5 (when present) singular: the first one is reported.
        if n > 2 && bs > 1 {
            let mut s = a.clone();
            let positions = a.pattern().diagonal_positions().unwrap();
            for &b in [2usize, 5].iter().filter(|&&b| b < n) {
                let blk = s.host_block_mut(positions[b]).unwrap();
                for j in 0..bs {
                    blk[bs + j] = 2.0 * blk[j]; // row 1 = 2 row 0
                }
            }
            let mut blk = s.host_block(positions[2]).unwrap().to_vec();
            let column = host_invert(&mut blk, bs).unwrap_err();
            let ds = DeviceBsr::upload(ctx, &s).unwrap();
            assert!(matches!(
                diag.invert(ctx, &ds),
                Err(LinalgError::SingularBlock { block: 2, column: c, .. }) if c == column
            ));
        }
    }
}

#[test]
fn chebyshev_is_bit_identical_to_the_host_smoother() {
    let Some(ctx) = gpu("chebyshev_is_bit_identical_to_the_host_smoother") else {
        return;
    };
    let mut rng = Rng(15);
    for (bs, degree, x_is_zero) in [(3, 2, true), (3, 3, false), (6, 2, false), (1, 4, true)] {
        let n = 20 + rng.below(150);
        let a = diag_dominant(&mut rng, n, bs);
        let mut inv = crate::BlockDiagonal::from_diagonal(&a, bs)
            .unwrap()
            .to_host_vec()
            .unwrap();
        for blk in inv.chunks_exact_mut(bs * bs) {
            host_invert(blk, bs).unwrap();
        }
        let cheb = Chebyshev {
            emax: 1.7,
            degree,
            lower: 0.1,
            upper: 1.1,
        };
        let (b, x0) = (rng.vec(n * bs), rng.vec(n * bs));
        // Host: the amg smoother's algorithm.
        let (lo, hi) = (cheb.lower * cheb.emax, cheb.upper * cheb.emax);
        let (theta, delta) = (0.5 * (hi + lo), 0.5 * (hi - lo));
        let sigma = theta / delta;
        let mut rho = 1.0 / sigma;
        let mut x = Vector::from_vec(x0.clone());
        let mut r = Vector::from_vec(b.clone());
        let mut d = vec![0.0; n * bs];
        if !x_is_zero {
            a.spmv_add(-1.0, &x, 1.0, &mut r).unwrap();
        }
        host_apply(&inv, bs, 1.0 / theta, r.host().unwrap(), 0.0, &mut d);
        if x_is_zero {
            x = Vector::from_vec(d.clone());
        } else {
            ops::axpy(1.0, &Vector::from_vec(d.clone()), &mut x).unwrap();
        }
        for _ in 1..degree {
            a.spmv_add(-1.0, &Vector::from_vec(d.clone()), 1.0, &mut r)
                .unwrap();
            let rho_new = 1.0 / (2.0 * sigma - rho);
            host_apply(
                &inv,
                bs,
                2.0 * rho_new / delta,
                r.host().unwrap(),
                rho_new * rho,
                &mut d,
            );
            ops::axpy(1.0, &Vector::from_vec(d.clone()), &mut x).unwrap();
            rho = rho_new;
        }

        let da = DeviceBsr::upload(ctx, &a).unwrap();
        let mut diag = DeviceBlockDiagonal::new(ctx, a.pattern(), bs).unwrap();
        diag.invert(ctx, &da).unwrap();
        let db = ctx.upload(&b).unwrap();
        let mut dx = if x_is_zero {
            poisoned(ctx, n * bs)
        } else {
            ctx.upload(&x0).unwrap()
        };
        let (mut dr, mut dd) = (poisoned(ctx, n * bs), poisoned(ctx, n * bs));
        chebyshev_smooth(
            ctx, &da, &diag, cheb, &db, &mut dx, x_is_zero, &mut dr, &mut dd,
        )
        .unwrap();
        let what = format!("chebyshev bs {bs} degree {degree}");
        assert_bits(&what, &ctx.download(&dx).unwrap(), x.host().unwrap());
        assert_bits(&what, &ctx.download(&dr).unwrap(), r.host().unwrap());
    }
}

#[test]
fn coo_sum_is_bit_identical_to_the_host_plan() {
    let Some(ctx) = gpu("coo_sum_is_bit_identical_to_the_host_plan") else {
        return;
    };
    let mut rng = Rng(16);
    for (br, bc, segment) in [
        (3, 3, 7usize),
        (6, 6, 1000),
        (1, 1, 3),
        (3, 6, 50),
        (2, 5, 1),
    ] {
        let (nbr, nbc) = (1 + rng.below(40), 1 + rng.below(40));
        let n = rng.below(600);
        let rows: Vec<u32> = (0..n).map(|_| rng.below(nbr) as u32).collect();
        let cols: Vec<u32> = (0..n).map(|_| rng.below(nbc) as u32).collect();
        let seg = std::num::NonZeroUsize::new(segment).unwrap();
        let plan = CooPlan::with_segments(nbr, nbc, &rows, &cols, seg).unwrap();
        let values = rng.vec(n * br * bc);
        let mut host = Bsr::zeros(plan.pattern().clone(), br, bc);
        plan.assemble(&values, &mut host).unwrap();

        let dplan = DeviceCooPlan::upload(ctx, &plan).unwrap();
        let dpat = DevicePattern::upload(ctx, plan.pattern()).unwrap();
        let mut out = DeviceBsr::zeros(ctx, &dpat, br, bc).unwrap();
        vector::fill(ctx, f64::NAN, out.values_mut()).unwrap();
        let dv = ctx.upload(&values).unwrap();
        dplan.assemble(ctx, &dv, &mut out).unwrap();
        assert_bits(
            &format!("coo {br}x{bc} segment {segment}"),
            &ctx.download(out.values()).unwrap(),
            host.host().unwrap(),
        );
    }
}

/// The cells of an `nx x ny x nz` box of hexahedra of order `order` (1: 8 nodes a cell, 2: 27),
/// nodes numbered through `number` (a permutation of the box's nodes).
fn box_cells(n: [usize; 3], order: usize, number: &[usize]) -> Vec<usize> {
    let p = [order * n[0] + 1, order * n[1] + 1, order * n[2] + 1];
    let mut cells = Vec::new();
    for k in 0..n[2] {
        for j in 0..n[1] {
            for i in 0..n[0] {
                for c in 0..(order + 1).pow(3) {
                    let (a, b, d) = (
                        c % (order + 1),
                        c / (order + 1) % (order + 1),
                        c / (order + 1).pow(2),
                    );
                    let node = (order * i + a) + p[0] * ((order * j + b) + p[1] * (order * k + d));
                    cells.push(number[node]);
                }
            }
        }
    }
    cells
}

#[test]
fn cell_block_plan_on_the_device_is_the_hosts_entry_for_entry() {
    let Some(ctx) = gpu("cell_block_plan_on_the_device_is_the_hosts_entry_for_entry") else {
        return;
    };
    let mut rng = Rng(41);
    let mut cases: Vec<(String, usize, usize, Vec<usize>)> = Vec::new();
    for (n, order) in [
        ([4, 3, 2], 1),
        ([3, 2, 2], 2),
        ([1, 1, 1], 1),
        ([6, 1, 1], 2),
    ] {
        let nodes: usize = n.iter().map(|&e| order * e + 1).product();
        let ordered: Vec<usize> = (0..nodes).collect();
        let mut scrambled = ordered.clone();
        for i in (1..nodes).rev() {
            scrambled.swap(i, rng.below(i + 1));
        }
        let npc = (order + 1).pow(3);
        cases.push((
            format!("box {n:?} order {order}"),
            nodes,
            npc,
            box_cells(n, order, &ordered),
        ));
        cases.push((
            format!("box {n:?} order {order}, nodes scrambled"),
            nodes,
            npc,
            box_cells(n, order, &scrambled),
        ));
    }
    // unstructured: distinct random nodes a cell, high valences, nodes in no cell
    for (nodes, n_cells, npc) in [
        (40, 30, 8),
        (300, 50, 27),
        (9, 12, 8),
        (5, 7, 1),
        (10, 0, 8),
    ] {
        let mut cells = Vec::new();
        for _ in 0..n_cells {
            let mut cell: Vec<usize> = Vec::new();
            while cell.len() < npc {
                let v = rng.below(nodes);
                if !cell.contains(&v) {
                    cell.push(v);
                }
            }
            cells.extend(cell);
        }
        cases.push((
            format!("{n_cells} random cells of {npc} over {nodes} nodes"),
            nodes,
            npc,
            cells,
        ));
    }
    for (what, nodes, npc, cells) in cases {
        let seg = std::num::NonZeroUsize::new(37).unwrap();
        let incidence = CooPlan::from_fn(nodes, 1, cells.len(), seg, |c| (cells[c], 0)).unwrap();
        let host = CooPlan::of_cell_blocks(&incidence, &cells, npc, seg).unwrap();
        let incidence_up = DeviceCooPlan::upload(ctx, &incidence).unwrap();
        let (pattern, plan) =
            DeviceCooPlan::of_cell_blocks(ctx, &incidence, &incidence_up, &cells, npc).unwrap();
        assert_eq!(
            &pattern.download(ctx).unwrap(),
            &**host.pattern(),
            "{what}: pattern"
        );
        let (slot_ptr, contrib) = plan.download_slot_order(ctx);
        host.with_slot_order(|o| {
            assert_eq!(slot_ptr, o.slot_ptr, "{what}: slot offsets");
            assert_eq!(contrib, o.contributions, "{what}: contributions");
        });
        // and its sums are the host plan's bits
        let values = rng.vec(cells.len() * npc * 9);
        let mut expected = Bsr::zeros(host.pattern().clone(), 3, 3);
        host.assemble(&values, &mut expected).unwrap();
        let mut out = DeviceBsr::zeros(ctx, &pattern, 3, 3).unwrap();
        vector::fill(ctx, f64::NAN, out.values_mut()).unwrap();
        plan.assemble(ctx, &ctx.upload(&values).unwrap(), &mut out)
            .unwrap();
        assert_bits(
            &what,
            &ctx.download(out.values()).unwrap(),
            expected.host().unwrap(),
        );
    }
    // a node beyond the incidence plan's rows is refused, as on the host
    let cells = [0, 1, 2, 3];
    let seg = std::num::NonZeroUsize::new(4).unwrap();
    let incidence = CooPlan::from_fn(4, 1, 4, seg, |c| (cells[c], 0)).unwrap();
    let up = DeviceCooPlan::upload(ctx, &incidence).unwrap();
    assert!(DeviceCooPlan::of_cell_blocks(ctx, &incidence, &up, &[0, 1, 2, 9], 4).is_err());
    assert!(DeviceCooPlan::of_cell_blocks(ctx, &incidence, &up, &cells[..2], 2).is_err());
}

#[test]
fn spgemm_is_bit_identical_to_the_host() {
    let Some(ctx) = gpu("spgemm_is_bit_identical_to_the_host") else {
        return;
    };
    let mut rng = Rng(17);
    let mut shapes = vec![(3, 3, 6), (6, 6, 6), (3, 3, 3)];
    shapes.extend((0..6).map(|_| (1 + rng.below(6), 1 + rng.below(6), 1 + rng.below(6))));
    for (ar, ak, bc) in shapes {
        let (m, k, n) = (1 + rng.below(60), 1 + rng.below(60), 1 + rng.below(30));
        let ap = random_pattern(&mut rng, m, k, 0.1, false);
        let bp = random_pattern(&mut rng, k, n, 0.15, false);
        let a = random_bsr(&mut rng, &ap, ar, ak);
        let b = random_bsr(&mut rng, &bp, ak, bc);
        let plan = spgemm_symbolic(&ap, &bp).unwrap();
        let mut host = Bsr::zeros(plan.pattern().clone(), ar, bc);
        spgemm_numeric(&plan, &a, &b, &mut host).unwrap();

        let dplan = DeviceSpgemmPlan::upload(ctx, &plan).unwrap();
        let (da, db) = (
            DeviceBsr::upload(ctx, &a).unwrap(),
            DeviceBsr::upload(ctx, &b).unwrap(),
        );
        let mut dc = DeviceBsr::zeros(ctx, dplan.pattern(), ar, bc).unwrap();
        vector::fill(ctx, f64::NAN, dc.values_mut()).unwrap();
        dplan.numeric(ctx, &da, &db, &mut dc).unwrap();
        assert_bits(
            &format!("spgemm {ar}x{ak}x{bc}"),
            &ctx.download(dc.values()).unwrap(),
            host.host().unwrap(),
        );
        // a plan for repeated products builds pair lists on the device at its first product
        // (the host's lists) and runs on them: the same bits
        let repeated =
            DeviceSpgemmPlan::upload(ctx, &plan.clone().for_repeated_products()).unwrap();
        vector::fill(ctx, f64::NAN, dc.values_mut()).unwrap();
        repeated.numeric(ctx, &da, &db, &mut dc).unwrap();
        assert!(repeated.has_pair_lists(), "pair lists of a small plan");
        let lists = repeated.downloaded_pair_lists(ctx).unwrap();
        let host_lists =
            super::term_pairs::term_pairs(plan.pattern(), &ap, |e| e as u32, &bp).unwrap();
        let terms = host_lists.first.len();
        assert_eq!(lists[0], host_lists.ptr, "pair list starts {ar}x{ak}x{bc}");
        assert_eq!(lists[1][..terms], host_lists.first[..], "left slots");
        assert_eq!(lists[2][..terms], host_lists.second[..], "right slots");
        assert_bits(
            &format!("spgemm on pair lists {ar}x{ak}x{bc}"),
            &ctx.download(dc.values()).unwrap(),
            host.host().unwrap(),
        );
    }
}

/// A 1D-chain-like fine operator and an aggregation-like prolongator: each fine row has a few
/// neighbours, `P` couples each fine row to one to three nearby coarse rows.
fn galerkin_operands(rng: &mut Rng, n: usize, b: usize, c: usize) -> (Bsr, Bsr) {
    let mut row_ptr = vec![0];
    let mut cols = Vec::new();
    for i in 0..n {
        for j in i.saturating_sub(2)..(i + 3).min(n) {
            if j == i || rng.below(3) > 0 {
                cols.push(j as u32);
            }
        }
        row_ptr.push(cols.len());
    }
    let a_pat = Arc::new(BlockPattern::new(n, n, row_ptr, cols).unwrap());
    let nc = n.div_ceil(3);
    let mut row_ptr = vec![0];
    let mut cols = Vec::new();
    for i in 0..n {
        let home = i / 3;
        for j in home.saturating_sub(1)..(home + 2).min(nc) {
            if j == home || rng.below(2) == 0 {
                cols.push(j as u32);
            }
        }
        row_ptr.push(cols.len());
    }
    let p_pat = Arc::new(BlockPattern::new(n, nc, row_ptr, cols).unwrap());
    (random_bsr(rng, &a_pat, b, b), random_bsr(rng, &p_pat, b, c))
}

#[test]
fn galerkin_product_matches_the_host_and_a_dense_reference() {
    let Some(ctx) = gpu("galerkin_product_matches_the_host_and_a_dense_reference") else {
        return;
    };
    let mut rng = Rng(18);
    let mut shapes = vec![(3, 6), (6, 6), (3, 3)];
    shapes.extend((0..4).map(|_| (1 + rng.below(6), 1 + rng.below(6))));
    for (b, c) in shapes {
        let n = 30 + rng.below(300);
        let (a, p) = galerkin_operands(&mut rng, n, b, c);
        // The host product: the device's bits.
        let plan = PtapPlan::new(a.pattern(), p.pattern()).unwrap();
        let mut host = Bsr::zeros(plan.pattern().clone(), c, c);
        crate::ptap_numeric(&plan, &a, &p, &mut host, &mut plan.workspace()).unwrap();

        let (da, dp) = (
            DeviceBsr::upload(ctx, &a).unwrap(),
            DeviceBsr::upload(ctx, &p).unwrap(),
        );
        let dplan = DevicePtapPlan::upload(ctx, &plan).unwrap();
        let mut dac = DeviceBsr::zeros(ctx, dplan.pattern(), c, c).unwrap();
        // Splits of the output blocks over threads: the largest (target 0), some in between,
        // single entries (the default on these small products).
        for threads in [0, 3 * plan.pattern().nnz(), usize::MAX] {
            let split = DevicePtapPlan::upload(ctx, &plan)
                .unwrap()
                .with_pair_threads(threads);
            split.numeric(ctx, &da, &dp, &mut dac).unwrap();
            assert_bits(
                &format!("ptap <{b},{b},{c}> aiming at {threads} threads"),
                &ctx.download(dac.values()).unwrap(),
                host.host().unwrap(),
            );
        }
        for fmad in [false, true] {
            vector::fill(ctx, f64::NAN, dac.values_mut()).unwrap();
            dplan.numeric_with(ctx, fmad, &da, &dp, &mut dac).unwrap();
            let got = ctx.download(dac.values()).unwrap();
            let what = format!("ptap <{b},{b},{c}> fmad {fmad}");
            if fmad {
                assert_close(&what, &got, host.host().unwrap(), 1e-12);
            } else {
                assert_bits(&what, &got, host.host().unwrap());
            }
        }
        // Dense reference P^T A P.
        let (ad, pd) = (a.to_dense().unwrap(), p.to_dense().unwrap());
        let (nf, ncs) = (a.n_rows(), p.n_cols());
        let mut ap = vec![0.0; nf * ncs];
        for i in 0..nf {
            for k in 0..nf {
                let aik = ad[i * nf + k];
                if aik != 0.0 {
                    for j in 0..ncs {
                        ap[i * ncs + j] += aik * pd[k * ncs + j];
                    }
                }
            }
        }
        let mut dense = vec![0.0; ncs * ncs];
        for i in 0..nf {
            for r in 0..ncs {
                let pir = pd[i * ncs + r];
                if pir != 0.0 {
                    for j in 0..ncs {
                        dense[r * ncs + j] += pir * ap[i * ncs + j];
                    }
                }
            }
        }
        let got = Bsr::from_parts(
            plan.pattern().clone(),
            c,
            c,
            ctx.download(dac.values()).unwrap(),
        )
        .unwrap();
        assert_close(
            &format!("ptap dense {b}x{c}"),
            &got.to_dense().unwrap(),
            &dense,
            1e-12,
        );
    }
}

/// Entries of widely spread magnitudes (2^-600 .. 2^600, products down to subnormals and up to
/// near overflow), both signs, exact zeros, subnormals and pairs that cancel.
fn wide_vec(rng: &mut Rng, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| match rng.below(16) {
            0 => 0.0,
            1 => -0.0,
            2 => f64::from_bits(1 + rng.next() % (1 << 52)),
            3 => f64::MIN_POSITIVE * rng.unit(),
            _ => rng.unit() * 2f64.powi(rng.below(1200) as i32 - 600) * (1 + i % 3) as f64,
        })
        .collect()
}

#[test]
fn exact_device_sums_are_the_hosts_bits() {
    let Some(ctx) = gpu("exact_device_sums_are_the_hosts_bits") else {
        return;
    };
    let device = gpu_device("exact_device_sums_are_the_hosts_bits").unwrap();
    let mut rng = Rng(29);
    let check = |what: &str, x: &[f64], y: &[f64]| {
        let (dx, dy) = (ctx.upload(x).unwrap(), ctx.upload(y).unwrap());
        let (hx, hy) = (Vector::from_vec(x.to_vec()), Vector::from_vec(y.to_vec()));
        let n = x.len();
        let d = vector::dot(ctx, &dx, &dy).unwrap();
        let h = ops::dot(&hx, &hy).unwrap();
        assert!(
            d.to_bits() == h.to_bits() || (d.is_nan() && h.is_nan()),
            "{what} n={n}: device dot {d:e}, host {h:e}"
        );
        // The unrounded device sum (what ranks add before rounding) is the host's exact sum.
        let e = vector::dot_exact(ctx, &dx, &dy).unwrap().value();
        assert!(
            e.to_bits() == h.to_bits() || (e.is_nan() && h.is_nan()),
            "{what} n={n}: device exact dot {e:e}, host {h:e}"
        );
        let d = ops::norm2(&hx.to_device(&device).unwrap()).unwrap();
        let h = ops::norm2(&hx).unwrap();
        assert!(
            d.to_bits() == h.to_bits() || (d.is_nan() && h.is_nan()),
            "{what} n={n}: device norm2 {d:e}, host {h:e}"
        );
        for (term, f) in [
            (vector::Term::Value, (|v: f64| v) as fn(f64) -> f64),
            (vector::Term::Magnitude, f64::abs),
        ] {
            let d = vector::sum(ctx, &dx, term).unwrap();
            let h = crate::exact::ExactSum::of(x.iter().map(|&v| f(v))).value();
            assert!(
                d.to_bits() == h.to_bits() || (d.is_nan() && h.is_nan()),
                "{what} n={n}: device sum {term:?} {d:e}, host {h:e}"
            );
        }
    };
    for n in [0usize, 1, 2, 3, 31, 257, 4097, 65_537, 1_000_000] {
        let (x, y) = (wide_vec(&mut rng, n), wide_vec(&mut rng, n));
        check("wide", &x, &y);
        // cancellation: x . y against the same products negated, all but the first
        let mut xc = x.clone();
        xc.extend(x.iter().skip(1).map(|v| -v));
        let mut yc = y.clone();
        yc.extend(y.iter().skip(1));
        check("cancelling", &xc, &yc);
        let (u, v) = (rng.vec(n), rng.vec(n));
        check("unit", &u, &v);
        // magnitudes around 1 (and 2^32): the terms alternate between two adjacent bins, and
        // now and then a third, as a thread's window of bins moves
        let around = |i: usize, r: f64| {
            let scale = [1.0, 1.0, 2f64.powi(32), 2f64.powi(-33)][i % 4];
            scale * [0.75, 1.5][i % 2] * (1.0 + r)
        };
        let a: Vec<f64> = u.iter().enumerate().map(|(i, &r)| around(i, r)).collect();
        let b: Vec<f64> = v
            .iter()
            .enumerate()
            .map(|(i, &r)| around(i / 2, -r / 2.0))
            .collect();
        check("around bin edges", &a, &b);
    }
    // exact rounding: ties to even, sums near overflow and in the subnormal range
    let e = 2f64.powi(-53);
    check("tie", &[1.0, e, 0.0], &[1.0, 1.0, 0.0]);
    check("above tie", &[1.0, e, e * e], &[1.0; 3]);
    check(
        "big",
        &[f64::MAX, -f64::MAX / 2.0, 1.0],
        &[1.0, 1.0, 1e-300],
    );
    check("overflow", &[f64::MAX, f64::MAX], &[1.0, 1.0]);
    let tiny = f64::from_bits(1);
    check(
        "subnormal",
        &[tiny, tiny, 3.0 * tiny, -tiny],
        &[1.0, 1.0, 1.0, 1.0],
    );
    check("zero", &[2.0, -2.0, -0.0], &[1.0, 1.0, 1.0]);
    check("negative zero", &[-0.0], &[1.0]);
    // non-finite terms: read as the naive sum (infinity or NaN)
    check("inf", &[1.0, f64::INFINITY], &[1.0, 1.0]);
    check("-inf", &[1.0, f64::NEG_INFINITY, 5.0], &[1.0, 1.0, 1.0]);
    check(
        "inf - inf",
        &[f64::INFINITY, f64::NEG_INFINITY],
        &[1.0, 1.0],
    );
    check("nan", &[f64::NAN, 2.0], &[1.0, 1.0]);
    check("0 * inf", &[0.0, 2.0], &[f64::INFINITY, 1.0]);
    // run to run and any launch: the same bits
    let x = wide_vec(&mut rng, 300_001);
    let dx = ctx.upload(&x).unwrap();
    let first = vector::dot(ctx, &dx, &dx).unwrap();
    for _ in 0..5 {
        assert_eq!(
            vector::dot(ctx, &dx, &dx).unwrap().to_bits(),
            first.to_bits()
        );
    }
}

/// The grouped QR on the device gives the host's `Q` and `R` bit for bit (random groups,
/// shuffled members, reversed slots; the tentative prolongator's shapes and others).
#[test]
fn grouped_qr_on_the_device_is_the_hosts_bit_for_bit() {
    if gpu("grouped_qr_on_the_device_is_the_hosts_bit_for_bit").is_none() {
        return;
    }
    let device = crate::Device::Cuda(CudaContext::new(0).unwrap());
    for (bs, k) in [(3, 6), (6, 6), (1, 1), (2, 3)] {
        let (plan, b, q_expected, r_expected) = crate::grouped_qr::tests::random_groups(bs, k, 9);
        let pattern = crate::grouped_qr::tests::one_block_per_row(4, plan.n_out_blocks());
        let mut q = Bsr::zeros_on(&device, pattern, bs, k).unwrap();
        let r = plan.factor(&b, &mut q).unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&r), bits(&r_expected), "R, bs {bs} k {k}");
        assert_eq!(
            bits(&q.to_host_vec().unwrap()),
            bits(&q_expected),
            "Q, bs {bs} k {k}"
        );
        // the input on the device: no upload, R left there
        let b_device = crate::Vector::from_vec(b.clone())
            .to_device(&device)
            .unwrap();
        let before = device.transfers();
        let mut q2 = Bsr::zeros_on(&device, q.pattern().clone(), bs, k).unwrap();
        let r2 = plan.factor_vector(&b_device, &mut q2).unwrap();
        assert_eq!(device.transfers().host_to_device, before.host_to_device);
        assert!(r2.device().same_as(&device));
        assert_eq!(
            bits(&r2.to_host_vec().unwrap()),
            bits(&r_expected),
            "device input: R"
        );
        assert_eq!(
            bits(&q2.to_host_vec().unwrap()),
            bits(&q_expected),
            "device input: Q, bs {bs} k {k}"
        );
    }
}

/// Groups whose largest fills the lanes' shared memory exactly (170 members of 3 x 6 blocks:
/// 48,960 bytes, one group a block) and one beyond it (180 members: the groups are factored in
/// global memory instead): the host's bits either way.
#[test]
fn grouped_qr_of_groups_at_and_beyond_shared_memory_is_the_hosts_bit_for_bit() {
    if gpu("grouped_qr_of_groups_at_and_beyond_shared_memory_is_the_hosts_bit_for_bit").is_none() {
        return;
    }
    let device = crate::Device::Cuda(CudaContext::new(0).unwrap());
    let (bs, k) = (3, 6);
    for largest in [170usize, 180] {
        let n = largest + 25;
        // members interleaved over the input rows, slots reversed
        let members: Vec<u32> = (0..n as u32)
            .filter(|v| v % 2 == 0)
            .chain((0..n as u32).filter(|v| v % 2 == 1))
            .collect();
        let slots: Vec<u32> = (0..n as u32).rev().collect();
        let plan =
            crate::GroupedQrPlan::new(vec![0, 7, 7 + largest, n], members, slots, bs, k).unwrap();
        let b: Vec<f64> = (0..n * bs * k)
            .map(|i| ((i * 7919 % 1013) as f64 / 1013.0 - 0.5) * (1.0 + (i % 5) as f64))
            .collect();
        let pattern = crate::grouped_qr::tests::one_block_per_row(3, n);
        let mut q_host = Bsr::zeros(pattern.clone(), bs, k);
        let r_host = plan.factor(&b, &mut q_host).unwrap();
        let mut q = Bsr::zeros_on(&device, pattern, bs, k).unwrap();
        let r = plan.factor(&b, &mut q).unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&r), bits(&r_host), "R, largest group {largest}");
        assert_eq!(
            bits(&q.to_host_vec().unwrap()),
            bits(&q_host.to_host_vec().unwrap()),
            "Q, largest group {largest}"
        );
    }
}

/// The pattern of Q1 hexahedra on `m^3` nodes (ex56's fine level: each node coupled to the up
/// to 27 nodes of the cells around it), nodes numbered x fastest.
fn stencil27(m: usize) -> Arc<BlockPattern> {
    let id = |x: usize, y: usize, z: usize| (x + m * (y + m * z)) as u32;
    let mut row_ptr = vec![0];
    let mut cols = Vec::new();
    for z in 0..m {
        for y in 0..m {
            for x in 0..m {
                for zz in z.saturating_sub(1)..(z + 2).min(m) {
                    for yy in y.saturating_sub(1)..(y + 2).min(m) {
                        for xx in x.saturating_sub(1)..(x + 2).min(m) {
                            cols.push(id(xx, yy, zz));
                        }
                    }
                }
                row_ptr.push(cols.len());
            }
        }
    }
    let n = m * m * m;
    Arc::new(BlockPattern::new(n, n, row_ptr, cols).unwrap())
}

/// The smoothed prolongator's pattern `A P0` for aggregates `agg[i]` (one block per row of
/// `P0`, in column `agg[i]`; `None`: an unaggregated row, empty in `P0`).
fn smoothed_p(a: &BlockPattern, agg: &[Option<u32>], n_agg: usize) -> Arc<BlockPattern> {
    let mut row_ptr = vec![0];
    let mut cols = Vec::new();
    for g in agg {
        cols.extend(g.iter().copied());
        row_ptr.push(cols.len());
    }
    let p0 = BlockPattern::new(agg.len(), n_agg, row_ptr, cols).unwrap();
    Arc::new(crate::spgemm::product_pattern(a, &p0))
}

/// Products of ex56's shape: the fine level of `m^3` nodes with 3x3x3-node aggregates, its
/// coarse level (6x6 blocks) aggregated by consecutive triples, and a `P` with empty rows and
/// columns. Each as `(A, P, A's block size, P's block columns)`.
fn ex56_like_products(m: usize) -> Vec<(Arc<BlockPattern>, Arc<BlockPattern>, usize, usize)> {
    let a = stencil27(m);
    let per = m.div_ceil(3);
    let agg: Vec<Option<u32>> = (0..m * m * m)
        .map(|i| {
            let (x, y, z) = (i % m / 3, i / m % m / 3, i / (m * m) / 3);
            Some((x + per * (y + per * z)) as u32)
        })
        .collect();
    let n_agg = per * per * per;
    let p = smoothed_p(&a, &agg, n_agg);
    let ac = PtapPlan::new(&a, &p).unwrap().pattern().clone();
    let nc = ac.n_block_rows();
    let agg_c: Vec<Option<u32>> = (0..nc).map(|i| Some((i / 3) as u32)).collect();
    let pc = smoothed_p(&ac, &agg_c, nc.div_ceil(3));
    // rows 5, 12, 19, ... unaggregated (empty rows of P0) and every third aggregate unused
    // (empty columns): P = A P0 then has empty columns, and rows empty where no neighbour is
    // aggregated (the isolated diagonal rows below)
    let n = a.n_block_rows();
    let mut row_ptr = vec![0];
    let mut cols = Vec::new();
    for i in 0..n {
        if i % 11 == 4 {
            cols.push(i as u32); // an isolated row: its own column only
        } else {
            cols.extend(a.row(i).iter().copied().filter(|&j| j as usize % 11 != 4));
        }
        row_ptr.push(cols.len());
    }
    let a_iso = Arc::new(BlockPattern::new(n, n, row_ptr, cols).unwrap());
    let agg_gaps: Vec<Option<u32>> = agg
        .iter()
        .enumerate()
        .map(|(i, g)| g.filter(|&g| i % 7 != 5 && g % 3 != 1))
        .collect();
    let p_gaps = smoothed_p(&a_iso, &agg_gaps, n_agg);
    assert!(
        p_gaps.row_ptr().windows(2).any(|w| w[0] == w[1]),
        "an empty row of P"
    );
    vec![(a, p, 3, 6), (ac, pc, 6, 6), (a_iso, p_gaps, 3, 6)]
}

/// The device plans' symbolic parts equal the host's entry for entry: `W = A P`, `P^T` and
/// its slot map, each output slot's row, the term counts, `A_c`'s pattern when built on the
/// device from `P^T` and `W`, and both passes' pair lists; the plan uploads nothing once the
/// patterns of `A`, `P` and `A_c` are on the device; and its product gives the host's bits.
/// The rows of `[left | right]` joined under a column map on the device
/// (`joined_by_position`) are the host's: each row's columns renamed and sorted, each slot's
/// source slot in `[left; right]`; positions that reverse, keep or shuffle the columns, empty
/// parts and rows; a position beyond the columns, a repeated one and a missing one are errors.
#[test]
fn joined_patterns_on_the_device_equal_the_hosts() {
    let Some(ctx) = gpu("joined_patterns_on_the_device_equal_the_hosts") else {
        return;
    };
    let mut rng = Rng(47);
    for (rows, n_left, n_right, per_row) in [
        (200, 200, 60, 9),
        (1000, 1000, 300, 27),
        (50, 50, 0, 5),
        (30, 30, 40, 0),
        (0, 0, 5, 3),
        (80, 80, 80, 60),
    ] {
        let density = |cols: usize, per_row: usize| per_row as f64 / cols.max(1) as f64;
        let left = random_pattern(&mut rng, rows, n_left, density(n_left, per_row), false);
        let right = random_pattern(
            &mut rng,
            rows,
            n_right,
            density(n_right, per_row / 3 + 1),
            false,
        );
        let n = n_left + n_right;
        let mut shuffled: Vec<u32> = (0..n as u32).collect();
        for i in (1..n).rev() {
            shuffled.swap(i, rng.below(i + 1));
        }
        for (name, position) in [
            ("identity", (0..n as u32).collect::<Vec<_>>()),
            ("reversed", (0..n as u32).rev().collect()),
            ("shuffled", shuffled),
        ] {
            let case = format!("{rows} rows, {n_left} + {n_right} columns, {name}");
            let mut row_ptr = vec![0];
            let (mut col, mut slot) = (Vec::new(), Vec::new());
            for i in 0..rows {
                let mut row: Vec<(u32, u32)> = (left.row_ptr()[i]..left.row_ptr()[i + 1])
                    .map(|s| (position[left.col_idx()[s] as usize], s as u32))
                    .chain((right.row_ptr()[i]..right.row_ptr()[i + 1]).map(|s| {
                        let c = n_left + right.col_idx()[s] as usize;
                        (position[c], (left.nnz() + s) as u32)
                    }))
                    .collect();
                row.sort_unstable();
                col.extend(row.iter().map(|&(c, _)| c));
                slot.extend(row.iter().map(|&(_, s)| s));
                row_ptr.push(col.len());
            }
            let want = BlockPattern::new(rows, n, row_ptr, col).unwrap();
            let (got, got_slot) = joined_by_position(ctx, &left, &right, &position).unwrap();
            assert_eq!(got, want, "{case}: pattern");
            assert_eq!(ctx.download(&got_slot).unwrap(), slot, "{case}: slots");
        }
        if n > 1 {
            let mut beyond: Vec<u32> = (0..n as u32).collect();
            beyond[0] = n as u32;
            assert!(joined_by_position(ctx, &left, &right, &beyond).is_err());
            let mut repeated: Vec<u32> = (0..n as u32).collect();
            repeated[1] = 0;
            assert!(joined_by_position(ctx, &left, &right, &repeated).is_err());
            assert!(joined_by_position(ctx, &left, &right, &repeated[1..]).is_err());
        }
    }
}

/// A transpose plan made on the GPU (`TransposePlan::new_on`) has the host plan's pattern and
/// slots, keeps its slots there (a numeric transpose with it moves no byte up) and transposes
/// to the host's bits; an empty pattern and the host device take the host plan.
#[test]
fn a_transpose_plan_made_on_the_device_is_the_hosts() {
    let Some(dev) = gpu_device("a_transpose_plan_made_on_the_device_is_the_hosts") else {
        return;
    };
    let mut rng = Rng(43);
    let mut cases: Vec<Bsr> = Vec::new();
    for (n, (b, c)) in [(40, (3, 6)), (300, (6, 6)), (7, (2, 3)), (2000, (3, 6))] {
        let (a, p) = galerkin_operands(&mut rng, n, b, c);
        cases.push(p);
        cases.push(a);
    }
    cases.push(Bsr::zeros(
        Arc::new(BlockPattern::new(4, 3, vec![0; 5], vec![]).unwrap()),
        3,
        6,
    ));
    for (case, m) in cases.iter().enumerate() {
        let host = crate::TransposePlan::new(m.pattern());
        let plan = crate::TransposePlan::new_on(&dev, m.pattern()).unwrap();
        assert_eq!(**plan.pattern(), **host.pattern(), "case {case}: pattern");
        let md = m.to_device(&dev).unwrap();
        let (br, bc) = (m.block_rows(), m.block_cols());
        let mut want = Bsr::zeros(host.pattern().clone(), bc, br);
        crate::transpose_numeric(&host, m, &mut want).unwrap();
        let mut got = Bsr::zeros_on(&dev, plan.pattern().clone(), bc, br).unwrap();
        let before = dev.transfers();
        crate::transpose_numeric(&plan, &md, &mut got).unwrap();
        if m.pattern().nnz() > 0 {
            // the slots made on the device: nothing goes up
            assert_eq!(
                dev.transfers().host_to_device,
                before.host_to_device,
                "case {case}"
            );
        }
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&got.to_host_vec().unwrap()),
            bits(want.host().unwrap()),
            "case {case}: values"
        );
        // the host's slots, made on demand from the device plan, are the host plan's
        assert_eq!(
            plan.source_slots(),
            host.source_slots(),
            "case {case}: slots"
        );
    }
    let host_plan = crate::TransposePlan::new_on(&crate::Device::Host, cases[0].pattern()).unwrap();
    assert_eq!(
        host_plan.source_slots(),
        crate::TransposePlan::new(cases[0].pattern()).source_slots()
    );
}

#[test]
fn device_symbolic_patterns_equal_the_hosts() {
    let Some(ctx) = gpu("device_symbolic_patterns_equal_the_hosts") else {
        return;
    };
    let mut rng = Rng(41);
    let mut cases = ex56_like_products(9);
    cases.extend(ex56_like_products(17));
    for (n, (b, c)) in [(40, (3, 6)), (300, (6, 6)), (7, (2, 3))] {
        let (a, p) = galerkin_operands(&mut rng, n, b, c);
        cases.push((a.pattern().clone(), p.pattern().clone(), b, c));
    }
    // a row of 40 distinct columns and one of 3: the 32-slot tables send the first, and only
    // it, to the merge, and the pattern is the host's
    let wide =
        BlockPattern::new(2, 40, vec![0, 40, 43], (0..40).chain([1, 5, 7]).collect()).unwrap();
    let identity = BlockPattern::new(40, 40, (0..=40).collect(), (0..40).collect()).unwrap();
    let (dl, dr) = (
        DevicePattern::upload(ctx, &wide).unwrap(),
        DevicePattern::upload(ctx, &identity).unwrap(),
    );
    assert_eq!(symbolic::rows_past_small_tables(ctx, &dl, &dr).unwrap(), 1);
    let small = symbolic::product_pattern_by(ctx, &dl, &dr, symbolic::ProductMethod::SmallHash);
    assert_eq!(
        small.unwrap().download(ctx).unwrap(),
        crate::spgemm::product_pattern(&wide, &identity)
    );
    for (case, (a, p, b, c)) in cases.into_iter().enumerate() {
        let what = |s: &str| format!("case {case} ({} rows): {s}", a.n_block_rows());
        let plan = PtapPlan::new(&a, &p).unwrap();
        let (da, dp) = (
            DevicePattern::upload(ctx, &a).unwrap(),
            DevicePattern::upload(ctx, &p).unwrap(),
        );
        let host_w = crate::spgemm::product_pattern(&a, &p);
        let dw = symbolic::product_pattern(ctx, &da, &dp).unwrap();
        assert_eq!(dw.download(ctx).unwrap(), host_w, "{}", what("W = A P"));
        let (host_pt, host_slots) = crate::transpose::transpose_pattern(&p, |k| k as u32);
        let (dpt, dslots) = symbolic::transpose_pattern(ctx, &dp).unwrap();
        assert_eq!(dpt.download(ctx).unwrap(), host_pt, "{}", what("P^T"));
        assert_eq!(
            ctx.download(&dslots).unwrap(),
            host_slots,
            "{}",
            what("P^T slots")
        );
        let dac = symbolic::product_pattern(ctx, &dpt, &dw).unwrap();
        assert_eq!(
            &dac.download(ctx).unwrap(),
            &**plan.pattern(),
            "{}",
            what("A_c")
        );
        // every method of the device product pattern, whichever the shapes pick: the small
        // tables send the rows of more than 32 columns to the merge
        for method in [
            symbolic::ProductMethod::Hash,
            symbolic::ProductMethod::SmallHash,
            symbolic::ProductMethod::Bitmap,
            symbolic::ProductMethod::GlobalBitmap,
        ] {
            let w = symbolic::product_pattern_by(ctx, &da, &dp, method).unwrap();
            assert_eq!(
                w.download(ctx).unwrap(),
                host_w,
                "{}",
                what(&format!("W = A P by {method:?}"))
            );
            let ac = symbolic::product_pattern_by(ctx, &dpt, &dw, method).unwrap();
            assert_eq!(
                &ac.download(ctx).unwrap(),
                &**plan.pattern(),
                "{}",
                what(&format!("A_c by {method:?}"))
            );
        }
        for (l, r, dl, dr, name) in [
            (&*a, &*p, &*da, &*dp, "A P"),
            (&host_pt, &host_w, &dpt, &dw, "P^T W"),
        ] {
            assert_eq!(
                symbolic::term_count(ctx, dl, dr).unwrap() as usize,
                super::term_pairs::term_count(l, r),
                "{}",
                what(&format!("terms of {name}"))
            );
        }

        // the plan: nothing uploaded once the operands' and A_c's patterns are on the device
        let mirrors = [&a, &p, plan.pattern()].map(|q| crate::device::device_pattern(ctx, q));
        assert!(mirrors.iter().all(|m| m.is_ok()));
        let before = ctx.transfers();
        let dplan = DevicePtapPlan::upload(ctx, &plan).unwrap();
        let (am, pm) = (
            random_bsr(&mut rng, &a, b, b),
            random_bsr(&mut rng, &p, b, c),
        );
        let (dam, dpm) = (
            DeviceBsr::upload_on(ctx, mirrors[0].as_ref().unwrap(), &am).unwrap(),
            DeviceBsr::upload_on(ctx, mirrors[1].as_ref().unwrap(), &pm).unwrap(),
        );
        let values_up = ((a.nnz() * b * b + p.nnz() * b * c) * 8) as u64;
        let mut dacm = DeviceBsr::zeros(ctx, dplan.pattern(), c, c).unwrap();
        vector::fill(ctx, f64::NAN, dacm.values_mut()).unwrap();
        dplan.numeric(ctx, &dam, &dpm, &mut dacm).unwrap();
        assert_eq!(
            ctx.transfers().host_to_device - before.host_to_device,
            values_up,
            "{}",
            what("bytes uploaded besides A's and P's values")
        );
        let got = dplan.downloaded(ctx);
        assert_eq!(got.w, host_w, "{}", what("plan's W"));
        assert_eq!(got.pt, host_pt, "{}", what("plan's P^T"));
        assert_eq!(got.pt_slots, host_slots, "{}", what("plan's P^T slots"));
        let rows_of = |q: &BlockPattern| -> Vec<u32> {
            (0..q.n_block_rows())
                .flat_map(|i| std::iter::repeat_n(i as u32, q.row(i).len()))
                .collect()
        };
        assert_eq!(got.w_rows, rows_of(&host_w), "{}", what("W's slot rows"));
        assert_eq!(
            got.ac_rows,
            rows_of(plan.pattern()),
            "{}",
            what("A_c's slot rows")
        );
        let [w_lists, ac_lists] = got.pairs.expect("pair lists of a small plan");
        let host_w_lists = super::term_pairs::term_pairs(&host_w, &a, |e| e as u32, &p).unwrap();
        let host_ac_lists =
            super::term_pairs::term_pairs(plan.pattern(), &host_pt, |q| host_slots[q], &host_w)
                .unwrap();
        for (dev, host, name) in [
            (w_lists, host_w_lists, "W"),
            (ac_lists, host_ac_lists, "A_c"),
        ] {
            let terms = host.first.len();
            assert_eq!(dev[0], host.ptr, "{}", what(&format!("{name} pair starts")));
            assert_eq!(
                dev[1][..terms],
                host.first[..],
                "{}",
                what(&format!("{name} firsts"))
            );
            assert_eq!(
                dev[2][..terms],
                host.second[..],
                "{}",
                what(&format!("{name} seconds"))
            );
        }
        // the host's product, bit for bit
        let host_plan = PtapPlan::new(&a, &p).unwrap();
        let mut host = Bsr::zeros(host_plan.pattern().clone(), c, c);
        crate::ptap_numeric(&host_plan, &am, &pm, &mut host, &mut host_plan.workspace()).unwrap();
        assert_bits(
            &what(&format!("ptap <{b},{b},{c}>")),
            &ctx.download(dacm.values()).unwrap(),
            host.host().unwrap(),
        );
    }
}

/// Plans made on the device ([`PtapPlan::new_on`], [`crate::SpgemmPlan::new_on`]) have the
/// host plans' patterns entry for entry, upload nothing once the operands' patterns are there and
/// bring down only their output pattern; matrices on those patterns upload no pattern; their
/// products give the host's bits, and a device-made Galerkin plan makes its host parts (`P^T`,
/// its slots) on demand, equal to the host plan's. The diagonal slots found on the device are
/// the host's, and a missing diagonal block gives the host's located error.
#[test]
fn device_made_plans_equal_the_hosts() {
    let Some(device) = gpu_device("device_made_plans_equal_the_hosts") else {
        return;
    };
    let Some(ctx) = device.cuda_context().cloned() else {
        return;
    };
    let ctx = &*ctx;
    let mut rng = Rng(43);
    let mut cases = ex56_like_products(9);
    cases.extend(ex56_like_products(17));
    for (n, (b, c)) in [(40, (3, 6)), (300, (6, 6)), (7, (2, 3))] {
        let (a, p) = galerkin_operands(&mut rng, n, b, c);
        cases.push((a.pattern().clone(), p.pattern().clone(), b, c));
    }
    let pattern_bytes = |q: &BlockPattern| 4 * (q.n_block_rows() + 1 + q.nnz()) as u64;
    for (case, (a, p, b, c)) in cases.into_iter().enumerate() {
        let what = |s: &str| format!("case {case} ({} rows): {s}", a.n_block_rows());
        for q in [&a, &p] {
            crate::device::device_pattern(ctx, q).unwrap();
        }
        let host = PtapPlan::new(&a, &p).unwrap();
        let before = ctx.transfers();
        let plan = PtapPlan::new_on(&device, &a, &p).unwrap();
        let after = ctx.transfers();
        assert_eq!(
            after.host_to_device,
            before.host_to_device,
            "{}",
            what("Galerkin plan: bytes up")
        );
        let down = after.device_to_host - before.device_to_host;
        assert!(
            down <= pattern_bytes(host.pattern()) + 256,
            "{}",
            what(&format!("Galerkin plan: {down} B down"))
        );
        assert_eq!(**plan.pattern(), **host.pattern(), "{}", what("A_c"));
        assert_eq!(plan.memory_bytes(), 0, "{}", what("host parts made"));

        let (am, pm) = (
            random_bsr(&mut rng, &a, b, b),
            random_bsr(&mut rng, &p, b, c),
        );
        let (ad, pd) = (
            am.to_device(&device).unwrap(),
            pm.to_device(&device).unwrap(),
        );
        let before = ctx.transfers();
        let mut acd = Bsr::zeros_on(&device, plan.pattern().clone(), c, c).unwrap();
        crate::ptap_numeric(&plan, &ad, &pd, &mut acd, &mut plan.workspace()).unwrap();
        assert_eq!(
            ctx.transfers().host_to_device,
            before.host_to_device,
            "{}",
            what("A_c and its product: bytes up")
        );
        let host_plan = PtapPlan::new(&a, &p).unwrap();
        let mut want = Bsr::zeros(host_plan.pattern().clone(), c, c);
        crate::ptap_numeric(&host_plan, &am, &pm, &mut want, &mut host_plan.workspace()).unwrap();
        assert_bits(
            &what("ptap on a device-made plan"),
            &acd.to_host_vec().unwrap(),
            want.host().unwrap(),
        );
        // the host parts on demand: the host plan's, and the host product's bits
        assert_eq!(**plan.pt_pattern(), **host.pt_pattern(), "{}", what("P^T"));
        assert_eq!(plan.pt_slots(), host.pt_slots(), "{}", what("P^T slots"));
        let mut on_host = Bsr::zeros(plan.pattern().clone(), c, c);
        crate::ptap_numeric(&plan, &am, &pm, &mut on_host, &mut plan.workspace()).unwrap();
        let mut want = Bsr::zeros(host.pattern().clone(), c, c);
        crate::ptap_numeric(&host, &am, &pm, &mut want, &mut host.workspace()).unwrap();
        assert_bits(
            &what("host product on a device-made plan"),
            on_host.host().unwrap(),
            want.host().unwrap(),
        );

        // A P as a SpGEMM plan made on the device
        let sp_host = crate::SpgemmPlan::new(&a, &p).unwrap();
        let before = ctx.transfers();
        let sp = crate::SpgemmPlan::new_on(&device, &a, &p).unwrap();
        let after = ctx.transfers();
        assert_eq!(
            after.host_to_device,
            before.host_to_device,
            "{}",
            what("A P plan: bytes up")
        );
        assert!(
            after.device_to_host - before.device_to_host <= pattern_bytes(sp_host.pattern()) + 256,
            "{}",
            what("A P plan: bytes down")
        );
        assert_eq!(**sp.pattern(), **sp_host.pattern(), "{}", what("A P"));
        let before = ctx.transfers();
        let mut wd = Bsr::zeros_on(&device, sp.pattern().clone(), b, c).unwrap();
        spgemm_numeric(&sp, &ad, &pd, &mut wd).unwrap();
        assert_eq!(
            ctx.transfers().host_to_device,
            before.host_to_device,
            "{}",
            what("A P product: bytes up")
        );
        let mut wh = Bsr::zeros(sp_host.pattern().clone(), b, c);
        spgemm_numeric(&sp_host, &am, &pm, &mut wh).unwrap();
        assert_bits(&what("A P"), &wd.to_host_vec().unwrap(), wh.host().unwrap());

        // the diagonal's slots, found on the device
        match a.diagonal_positions() {
            Ok(want) => {
                let before = ctx.transfers();
                let diag = DeviceBlockDiagonal::new(ctx, &a, b).unwrap();
                assert_eq!(
                    ctx.transfers().host_to_device,
                    before.host_to_device,
                    "{}",
                    what("diagonal slots: bytes up")
                );
                let want: Vec<u32> = want.iter().map(|&k| k as u32).collect();
                assert_eq!(diag.downloaded_slots(ctx), want, "{}", what("diagonal"));
            }
            Err(e) => assert_eq!(
                DeviceBlockDiagonal::new(ctx, &a, b).err(),
                Some(e),
                "{}",
                what("diagonal error")
            ),
        }
    }
    // a missing diagonal block and a rectangular pattern: the host's errors, found on the
    // device (the patterns there) and on the host (not there)
    for on_device in [true, false] {
        let missing = BlockPattern::new(3, 3, vec![0, 1, 3, 4], vec![0, 0, 2, 1]).unwrap();
        let rect = BlockPattern::new(1, 2, vec![0, 1], vec![0]).unwrap();
        if on_device {
            for q in [&missing, &rect] {
                crate::device::device_pattern(ctx, q).unwrap();
            }
        }
        assert_eq!(
            DeviceBlockDiagonal::new(ctx, &missing, 3).err(),
            Some(LinalgError::MissingDiagonal { row: 1 }),
            "on the device: {on_device}"
        );
        assert_eq!(
            DeviceBlockDiagonal::new(ctx, &rect, 3).err(),
            Some(LinalgError::PatternNotSquare {
                n_block_rows: 1,
                n_block_cols: 2
            }),
            "on the device: {on_device}"
        );
    }
}

/// A device matrix wrapped around a host pattern that has no device mirror (a device-assembled
/// tangent, [`Bsr::from_device_bsr`]) lends it its own device pattern: the point-block
/// inverses and the plans made on the device from that pattern upload nothing.
#[test]
fn wrapped_device_matrix_lends_its_pattern() {
    let Some(device) = gpu_device("wrapped_device_matrix_lends_its_pattern") else {
        return;
    };
    let Some(ctx) = device.cuda_context().cloned() else {
        return;
    };
    let mut rng = Rng(44);
    let (a, p, b, _) = ex56_like_products(9).swap_remove(0);
    let host = random_bsr(&mut rng, &a, b, b);
    // a fresh copy of the pattern: no mirror yet
    let fresh = Arc::new(BlockPattern::clone(&a));
    let m = DeviceBsr::upload(&ctx, &host).unwrap();
    let before = ctx.transfers();
    let wrapped = Bsr::from_device_bsr(ctx.clone(), fresh.clone(), m).unwrap();
    crate::BlockDiagonal::inverse_of_diagonal(&wrapped, b).unwrap();
    crate::device::device_pattern(&ctx, &p).unwrap();
    let up = ctx.transfers().host_to_device - before.host_to_device;
    let p_bytes = 4 * (p.n_block_rows() + 1 + p.nnz()) as u64;
    assert_eq!(up, p_bytes, "only P's pattern goes up");
    let before = ctx.transfers();
    PtapPlan::new_on(&device, &fresh, &p).unwrap();
    crate::SpgemmPlan::new_on(&device, &fresh, &p).unwrap();
    assert_eq!(ctx.transfers().host_to_device, before.host_to_device);
}

/// The device prefix sums equal the host's over one tile, many tiles (more than one block of
/// tile sums) and none; a total past `u32` is refused.
#[test]
fn device_prefix_sums_equal_the_hosts() {
    let Some(ctx) = gpu("device_prefix_sums_equal_the_hosts") else {
        return;
    };
    let mut rng = Rng(43);
    for n in [
        0usize,
        1,
        7,
        1023,
        1024,
        1025,
        2047,
        2048,
        2049,
        600_001,
        (1 << 20) + 3,
    ] {
        let counts: Vec<u32> = (0..n).map(|_| rng.below(40) as u32).collect();
        let mut want = vec![0u32];
        for &c in &counts {
            want.push(want[want.len() - 1] + c);
        }
        let (d, total) =
            symbolic::exclusive_scan(ctx, &ctx.upload(&counts).unwrap(), n, "test").unwrap();
        assert_eq!(ctx.download(&d).unwrap(), want, "prefix of {n} counts");
        assert_eq!(total, want[n], "total of {n} counts");
    }
    let big = ctx.upload(&[u32::MAX / 2, u32::MAX / 2, 2]).unwrap();
    assert!(matches!(
        symbolic::exclusive_scan(ctx, &big, 3, "test"),
        Err(LinalgError::DimensionTooLarge { .. })
    ));
}

/// The prolongator smoothing's slot maps built on the device equal the host's (each slot's row,
/// the slot of `P0` in each slot of `A P0`), with nothing uploaded once the patterns are there;
/// a `P0` outside `W` is refused.
#[test]
fn device_smoothing_maps_equal_the_hosts() {
    let Some(ctx) = gpu("device_smoothing_maps_equal_the_hosts") else {
        return;
    };
    let a = stencil27(9);
    let (n, per) = (a.n_block_rows(), 3);
    let mut row_ptr = vec![0];
    let mut cols = Vec::new();
    for i in 0..n {
        if i % 7 != 5 {
            let (x, y, z) = (i % 9 / 3, i / 9 % 9 / 3, i / 81 / 3);
            cols.push((x + per * (y + per * z)) as u32);
        }
        row_ptr.push(cols.len());
    }
    let p0 = Arc::new(BlockPattern::new(n, per * per * per, row_ptr, cols).unwrap());
    let w = Arc::new(crate::spgemm::product_pattern(&a, &p0));
    let mut want_rows = Vec::new();
    let mut want_slots = Vec::new();
    for i in 0..n {
        for &j in w.row(i) {
            want_rows.push(i as u32);
            let q = p0.row(i).iter().position(|&c| c == j);
            want_slots.push(q.map_or(u32::MAX, |q| (p0.row_ptr()[i] + q) as u32));
        }
    }
    for q in [&w, &p0] {
        crate::device::device_pattern(ctx, q).unwrap();
    }
    let before = ctx.transfers();
    let map = super::ops::DeviceSmoothMap::new(ctx, &w, &p0).unwrap();
    assert_eq!(ctx.transfers().host_to_device, before.host_to_device);
    let (rows, slots) = map.downloaded(ctx);
    assert_eq!(rows, want_rows, "slot rows");
    assert_eq!(slots, want_slots, "P0 slots");
    // a pattern inside itself; a P0 block outside W is refused
    assert!(super::ops::DeviceSmoothMap::new(ctx, &a, &a).is_ok());
    let p0_wide = Arc::new(
        BlockPattern::new(
            n,
            27,
            (0..=n).collect(),
            (0..n).map(|i| (i % 27) as u32).collect(),
        )
        .unwrap(),
    );
    let w_narrow = Arc::new(
        BlockPattern::new(
            n,
            27,
            (0..=n).collect(),
            (0..n).map(|i| ((i + 1) % 27) as u32).collect(),
        )
        .unwrap(),
    );
    assert!(matches!(
        super::ops::DeviceSmoothMap::new(ctx, &w_narrow, &p0_wide),
        Err(LinalgError::PatternMismatch { .. })
    ));
}

/// The SpGEMM plan's device form uploads nothing once its output pattern is on the device (its
/// slot rows are found there).
#[test]
fn device_spgemm_plan_uploads_nothing() {
    let Some(ctx) = gpu("device_spgemm_plan_uploads_nothing") else {
        return;
    };
    for (a, p, _, _) in ex56_like_products(9) {
        let plan = spgemm_symbolic(&a, &p).unwrap();
        crate::device::device_pattern(ctx, plan.pattern()).unwrap();
        let before = ctx.transfers();
        DeviceSpgemmPlan::upload(ctx, &plan).unwrap();
        assert_eq!(ctx.transfers().host_to_device, before.host_to_device);
    }
}
