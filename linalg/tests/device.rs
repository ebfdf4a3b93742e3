//! `Device::Cuda` behind the public types: every operation on device operands equals the host's
//! (bit for bit where the backend promises it, to rounding for the Galerkin product and the
//! dense coarse solve), and operands on different devices are an error. Without a GPU every test
//! prints one `SKIP` line and passes; without one `Device::cuda` is an error, never a panic.

mod common;

use std::sync::{Arc, OnceLock};

use common::{random_bsr, random_pattern, Rng};
use linalg::dense::DenseFactor;
use linalg::{
    ops, prolong_add, ptap_numeric, restrict, smooth_prolongator_in_place, spgemm, BlockDiagonal,
    BlockPattern, Bsr, Device, LinalgError, Precision, PtapPlan, Vector,
};

fn gpu(test: &str) -> Option<Device> {
    static DEV: OnceLock<Result<Device, String>> = OnceLock::new();
    match DEV.get_or_init(|| Device::cuda(0).map_err(|e| e.to_string())) {
        Ok(d) => Some(d.clone()),
        Err(e) => {
            eprintln!("SKIP {test}: no GPU ({e})");
            None
        }
    }
}

fn rel_diff(x: &[f64], y: &[f64]) -> f64 {
    let d: f64 = x.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).sum();
    let n: f64 = y.iter().map(|b| b * b).sum();
    (d / n).sqrt()
}

/// A random SPD-ish square block matrix with every diagonal block dominant.
fn dominant(rng: &mut Rng, n: usize, bs: usize) -> Bsr {
    let p = random_pattern(rng, n, n, 0.05, true);
    let mut a = Bsr::from_parts(p.clone(), bs, bs, rng.vec(p.nnz() * bs * bs)).unwrap();
    for i in 0..n {
        let k = p.find(i, i).unwrap();
        let blk = a.host_block_mut(k).unwrap();
        for c in 0..bs {
            blk[c * bs + c] += 4.0 * bs as f64 * (1.0 + 0.05 * n as f64);
        }
    }
    a
}

/// A dense symmetric positive definite `n x n` matrix (random symmetric part, dominant
/// diagonal) stored in `bs x bs` blocks.
fn symmetric_dominant(rng: &mut Rng, n: usize, bs: usize) -> Bsr {
    let mut d = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..i {
            let v = if rng.unit() > 0.8 { rng.unit() } else { 0.0 };
            d[i * n + j] = v;
            d[j * n + i] = v;
        }
        d[i * n + i] = 0.5 * n as f64 + rng.unit();
    }
    Bsr::from_dense(&d, n, n, bs, bs).unwrap()
}

#[test]
fn missing_gpu_is_an_error_not_a_panic() {
    match Device::cuda(0) {
        Ok(d) => assert!(!d.is_host()),
        Err(e) => assert!(matches!(e, LinalgError::CudaUnavailable { .. }), "{e}"),
    }
    assert!(Device::cuda(4096).is_err());
}

#[test]
fn vector_operations_are_bit_identical_on_the_device() {
    let Some(dev) = gpu("vector_operations_are_bit_identical_on_the_device") else {
        return;
    };
    let mut rng = Rng::new(7);
    for n in [1, 1000, 70_001] {
        let (xh, yh) = (Vector::from_vec(rng.vec(n)), Vector::from_vec(rng.vec(n)));
        let (x, mut y) = (xh.to_device(&dev).unwrap(), yh.to_device(&dev).unwrap());
        assert!(!x.device().is_host());
        assert_eq!(ops::dot(&x, &y).unwrap(), ops::dot(&xh, &yh).unwrap());
        // several dots with one download: each the host's dot, bit for bit
        let [xy, xx] = ops::dots([(&x, &y), (&x, &x)]).unwrap();
        assert_eq!(xy.to_bits(), ops::dot(&xh, &yh).unwrap().to_bits());
        assert_eq!(xx.to_bits(), ops::dot(&xh, &xh).unwrap().to_bits());
        // more than one scratch's worth of sums at once (nine)
        let many = ops::dots([(&x, &y); 9]).unwrap();
        assert!(many.iter().all(|d| d.to_bits() == xy.to_bits()), "{many:?}");
        // a sum with non-finite terms leaves the scratch clean for the next one
        let nan = Vector::from_vec(vec![f64::NAN; n]).to_device(&dev).unwrap();
        assert!(ops::dot(&nan, &x).unwrap().is_nan());
        assert_eq!(ops::dot(&x, &y).unwrap().to_bits(), xy.to_bits());
        assert_eq!(ops::norm_inf(&x).unwrap(), ops::norm_inf(&xh).unwrap());
        let mut yh2 = yh.clone();
        ops::axpy(0.3, &xh, &mut yh2).unwrap();
        ops::axpy(0.3, &x, &mut y).unwrap();
        assert_eq!(y.to_host_vec().unwrap(), yh2.host().unwrap());
        ops::axpby(-1.7, &xh, 0.6, &mut yh2).unwrap();
        ops::axpby(-1.7, &x, 0.6, &mut y).unwrap();
        assert_eq!(y.to_host_vec().unwrap(), yh2.host().unwrap());
        ops::scale(1.3, &mut yh2).unwrap();
        ops::scale(1.3, &mut y).unwrap();
        assert_eq!(y.to_host(), Ok(yh2.clone()));
        ops::fill_hashed(&mut yh2, 99).unwrap();
        ops::fill_hashed(&mut y, 99).unwrap();
        assert_eq!(y.to_host_vec().unwrap(), yh2.host().unwrap());
        let mut z = x.zeros_like().unwrap();
        z.copy_from(&x).unwrap();
        assert_eq!(z.to_host_vec().unwrap(), xh.host().unwrap());
        z.copy_from_host(yh.host().unwrap()).unwrap();
        assert_eq!(z.to_host_vec().unwrap(), yh.host().unwrap());
        assert!(x.host().is_err(), "device values are not host values");
        // a host operand with a device one is an error naming both
        assert!(matches!(
            ops::axpy(1.0, &xh, &mut y),
            Err(LinalgError::DeviceMismatch { .. })
        ));
    }
    let mut nan = Vector::from_vec(vec![1.0, f64::NAN, -3.0])
        .to_device(&dev)
        .unwrap();
    assert!(ops::norm_inf(&nan).unwrap().is_nan());
    nan.fill(-2.0).unwrap();
    assert_eq!(ops::norm_inf(&nan).unwrap(), 2.0);
}

/// `copy_to_host` of a device vector is the download (`to_host_vec`) bit for bit, straight into
/// the caller's slice: small, driver-copied and staged sizes (over 1 MiB, more than two 8 MiB
/// chunks), the empty vector, and a slice of another length refused.
#[test]
fn copy_to_host_is_the_download_bit_for_bit() {
    let Some(dev) = gpu("copy_to_host_is_the_download_bit_for_bit") else {
        return;
    };
    let mut rng = Rng::new(17);
    for n in [0, 1, 511, 1000, 131_073, 2_500_003] {
        let mut values = rng.vec(n);
        for (i, v) in [-0.0, f64::INFINITY, f64::MIN_POSITIVE / 8.0]
            .into_iter()
            .enumerate()
        {
            if i < n {
                values[n - 1 - i] = v;
            }
        }
        let x = Vector::from_vec(values.clone()).to_device(&dev).unwrap();
        let mut into = vec![f64::NAN; n];
        x.copy_to_host(&mut into).unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert!(bits(&into) == bits(&values), "n = {n}");
        assert!(bits(&into) == bits(&x.to_host_vec().unwrap()), "n = {n}");
        let mut long = vec![0.0; n + 1];
        assert_eq!(
            x.copy_to_host(&mut long),
            Err(LinalgError::LengthMismatch {
                what: "Vector::copy_to_host",
                expected: n,
                found: n + 1
            })
        );
    }
}

#[test]
fn matrix_operations_match_the_host() {
    let Some(dev) = gpu("matrix_operations_match_the_host") else {
        return;
    };
    let mut rng = Rng::new(3);
    for (br, bc) in [(3, 3), (6, 6), (3, 6), (6, 3), (1, 1), (2, 5)] {
        let ah = random_bsr(&mut rng, 300, 200, br, bc, 0.03);
        let a = ah.to_device(&dev).unwrap();
        let xh = Vector::from_vec(rng.vec(ah.n_cols()));
        let yh0 = Vector::from_vec(rng.vec(ah.n_rows()));
        let (x, mut y) = (xh.to_device(&dev).unwrap(), yh0.to_device(&dev).unwrap());
        let mut yh = yh0.clone();
        ah.spmv_add(0.7, &xh, -1.1, &mut yh).unwrap();
        a.spmv_add(0.7, &x, -1.1, &mut y).unwrap();
        assert_eq!(
            y.to_host_vec().unwrap(),
            yh.host().unwrap(),
            "{br}x{bc} spmv"
        );
        let norms = a.block_norms().unwrap();
        assert_eq!(norms.to_host(), ah.block_norms(), "{br}x{bc} block norms");
        let mut b = a.zeros_like().unwrap();
        b.copy_values_from(&a).unwrap();
        b.scale(-0.5).unwrap();
        let mut bh = ah.clone();
        bh.scale(-0.5).unwrap();
        assert_eq!(b.to_host().unwrap(), bh);
        b.upload_values_from(&ah).unwrap();
        assert_eq!(b.to_host().unwrap(), ah);
        assert!(
            b.to_scalar_blocks().is_err(),
            "scalar expansion is host-only"
        );
    }
}

#[test]
fn amg_kernels_match_the_host() {
    let Some(dev) = gpu("amg_kernels_match_the_host") else {
        return;
    };
    let mut rng = Rng::new(11);
    for (bs, k) in [(3, 6), (6, 6), (2, 3)] {
        let n = 240;
        let ah = dominant(&mut rng, n, bs);
        // P0: one aggregate per 4 rows, one row left out
        let mut row_ptr = vec![0];
        let mut cols = Vec::new();
        for i in 0..n {
            if i != 17 {
                cols.push((i / 4) as u32);
            }
            row_ptr.push(cols.len());
        }
        let nnz = cols.len();
        let pp = Arc::new(BlockPattern::new(n, n / 4, row_ptr, cols).unwrap());
        let p0h = Bsr::from_parts(pp, bs, k, rng.vec(nnz * bs * k)).unwrap();
        let (a, p0) = (ah.to_device(&dev).unwrap(), p0h.to_device(&dev).unwrap());

        // point-block Jacobi: inverses and apply, bit for bit
        let dh = BlockDiagonal::inverse_of_diagonal(&ah, bs).unwrap();
        let mut d = BlockDiagonal::inverse_of_diagonal(&a, bs).unwrap();
        assert_eq!(
            d.to_host_vec().unwrap(),
            dh.host().unwrap(),
            "bs {bs}: inverses"
        );
        d.refresh_inverse(&a).unwrap();
        assert_eq!(
            d.to_host_vec().unwrap(),
            dh.host().unwrap(),
            "bs {bs}: refreshed"
        );
        let rh = Vector::from_vec(rng.vec(ah.n_rows()));
        let r = rh.to_device(&dev).unwrap();
        let (mut zh, mut z) = (rh.clone(), r.try_clone().unwrap());
        dh.apply(0.8, &rh, 0.5, &mut zh).unwrap();
        d.apply(0.8, &r, 0.5, &mut z).unwrap();
        assert_eq!(
            z.to_host_vec().unwrap(),
            zh.host().unwrap(),
            "bs {bs}: apply"
        );

        // prolongator smoothing: A P0 and the update, bit for bit
        let mut wh = spgemm(&ah, &p0h).unwrap();
        let mut w = spgemm(&a, &p0).unwrap();
        assert_eq!(
            w.to_host_vec().unwrap(),
            wh.host().unwrap(),
            "bs {bs}: A P0"
        );
        let product = w.to_device(&dev).unwrap();
        smooth_prolongator_in_place(&mut wh, 0.6, &dh, &p0h).unwrap();
        smooth_prolongator_in_place(&mut w, 0.6, &d, &p0).unwrap();
        assert_eq!(
            w.to_host_vec().unwrap(),
            wh.host().unwrap(),
            "bs {bs}: smoothed P"
        );
        // through a kept map of the patterns: the same bits; its second call moves nothing
        let map = linalg::SmoothingMap::new(product.pattern(), p0.pattern()).unwrap();
        for call in 0..2 {
            let mut wm = product.to_device(&dev).unwrap();
            let before = dev.transfers();
            linalg::smooth_prolongator_mapped(&map, &mut wm, 0.6, &d, &p0).unwrap();
            let moved = dev.transfers().host_to_device - before.host_to_device;
            assert_eq!(
                wm.to_host_vec().unwrap(),
                wh.host().unwrap(),
                "bs {bs}: smoothed P through the map, call {call}"
            );
            if call == 1 {
                assert_eq!(moved, 0, "bs {bs}: the map's slot maps are kept on the GPU");
            }
        }

        // Galerkin product (to rounding: fused host order), restriction and prolongation
        let plan = PtapPlan::new(ah.pattern(), wh.pattern()).unwrap();
        let mut ach = Bsr::zeros(plan.pattern().clone(), k, k);
        ptap_numeric(&plan, &ah, &wh, &mut ach, &mut plan.workspace()).unwrap();
        let mut ac = Bsr::zeros_on(&dev, plan.pattern().clone(), k, k).unwrap();
        ptap_numeric(&plan, &a, &w, &mut ac, &mut plan.workspace()).unwrap();
        let diff = rel_diff(&ac.to_host_vec().unwrap(), ach.host().unwrap());
        assert!(
            diff <= 1e-14,
            "bs {bs}: Galerkin product differs by {diff:e}"
        );
        let (mut ch, mut c) = (
            Vector::zeros(wh.n_cols()),
            Vector::zeros_on(&dev, wh.n_cols()).unwrap(),
        );
        restrict(&plan, &wh, &rh, &mut ch).unwrap();
        restrict(&plan, &w, &r, &mut c).unwrap();
        assert_eq!(
            c.to_host_vec().unwrap(),
            ch.host().unwrap(),
            "bs {bs}: restriction"
        );
        prolong_add(&wh, &ch, &mut zh).unwrap();
        prolong_add(&w, &c, &mut z).unwrap();
        assert_eq!(
            z.to_host_vec().unwrap(),
            zh.host().unwrap(),
            "bs {bs}: prolongation"
        );

        // the coarse solve (a symmetric matrix, as every Galerkin operator is): device inverse
        // against host Cholesky
        let coarse = symmetric_dominant(&mut rng, 40 * k, k);
        let fh = DenseFactor::factor(&coarse).unwrap();
        let f = DenseFactor::factor(&coarse.to_device(&dev).unwrap()).unwrap();
        let bh = Vector::from_vec(rng.vec(coarse.n_rows()));
        let (mut xh, mut x) = (
            Vector::zeros(coarse.n_rows()),
            Vector::zeros_on(&dev, coarse.n_rows()).unwrap(),
        );
        fh.solve(&bh, &mut xh).unwrap();
        f.solve(&bh.to_device(&dev).unwrap(), &mut x).unwrap();
        let diff = rel_diff(&x.to_host_vec().unwrap(), xh.host().unwrap());
        assert!(diff <= 1e-12, "k {k}: coarse solves differ by {diff:e}");
        // the host's explicit inverse (the AMG coarse solve) is the device's, bit for bit
        let fi = DenseFactor::invert(&coarse).unwrap();
        let mut xi = Vector::zeros(coarse.n_rows());
        fi.solve(&bh, &mut xi).unwrap();
        assert_eq!(
            x.to_host_vec().unwrap(),
            xi.host().unwrap(),
            "k {k}: host and device inverses"
        );
    }
    // a singular coarse matrix is an error on the device too
    let p = Arc::new(BlockPattern::new(2, 2, vec![0, 1, 2], vec![0, 1]).unwrap());
    let singular = Bsr::from_parts(p, 2, 2, vec![1.0, 2.0, 2.0, 4.0, 1.0, 0.0, 0.0, 1.0]).unwrap();
    assert!(matches!(
        DenseFactor::factor(&singular.to_device(&dev).unwrap()),
        Err(LinalgError::SingularMatrix { column: 1, .. })
    ));
    // ... and in the inverse's launch-per-step form (200 unknowns: the same block first, then
    // identity blocks)
    let nb = 100;
    let p =
        Arc::new(BlockPattern::new(nb, nb, (0..=nb).collect(), (0..nb as u32).collect()).unwrap());
    let mut values = vec![1.0, 2.0, 2.0, 4.0];
    for _ in 1..nb {
        values.extend([1.0, 0.0, 0.0, 1.0]);
    }
    let singular = Bsr::from_parts(p, 2, 2, values).unwrap();
    assert!(matches!(
        DenseFactor::factor(&singular.to_device(&dev).unwrap()),
        Err(LinalgError::SingularMatrix { column: 1, .. })
    ));
}

/// fp32 storage ([`Precision::Single`]) on the device equals fp32 storage on the host: the same
/// rounded values, SpMV, restriction, prolongation and block-Jacobi bit for bit (fp32 loads, the
/// host's fp64 sums), the Galerkin product with fp64 or fp32 `A` to fp32 rounding.
#[test]
fn single_precision_kernels_equal_the_host_ones() {
    let Some(dev) = gpu("single_precision_kernels_equal_the_host_ones") else {
        return;
    };
    let single = Precision::Single;
    let mut rng = Rng::new(77);
    for (br, bc) in [(3, 3), (6, 6), (3, 6), (6, 3), (2, 5), (1, 1)] {
        let (nbr, nbc) = (60, 25);
        let p = random_bsr(&mut rng, nbr, nbc, br, bc, 0.1);
        let ph = p.to_precision(single).unwrap();
        let pd = p.to_device(&dev).unwrap().to_precision(single).unwrap();
        assert_eq!(pd.precision(), single);
        assert!(pd.device().same_as(&dev));
        assert_eq!(pd.to_host_vec().unwrap(), ph.to_host_vec().unwrap());
        // y = 0.5 P x + 2 y, and x += P y
        let x = Vector::from_vec(rng.vec(nbc * bc));
        let y0 = Vector::from_vec(rng.vec(nbr * br));
        let (mut yh, mut yd) = (y0.clone(), y0.to_device(&dev).unwrap());
        ph.spmv_add(0.5, &x, 2.0, &mut yh).unwrap();
        pd.spmv_add(0.5, &x.to_device(&dev).unwrap(), 2.0, &mut yd)
            .unwrap();
        assert_eq!(
            yd.to_host_vec().unwrap(),
            yh.to_host_vec().unwrap(),
            "({br}, {bc}) spmv"
        );
        prolong_add(&ph, &x, &mut yh).unwrap();
        prolong_add(&pd, &x.to_device(&dev).unwrap(), &mut yd).unwrap();
        assert_eq!(
            yd.to_host_vec().unwrap(),
            yh.to_host_vec().unwrap(),
            "({br}, {bc}) prolong"
        );
        // y = P^T x through a Galerkin plan
        let a_pat = random_pattern(&mut rng, nbr, nbr, 0.05, true);
        let plan = PtapPlan::new(&a_pat, p.pattern()).unwrap();
        let r = Vector::from_vec(rng.vec(nbr * br));
        let mut rh = Vector::zeros(nbc * bc);
        let mut rd = Vector::zeros_on(&dev, nbc * bc).unwrap();
        restrict(&plan, &ph, &r, &mut rh).unwrap();
        restrict(&plan, &pd, &r.to_device(&dev).unwrap(), &mut rd).unwrap();
        assert_eq!(
            rd.to_host_vec().unwrap(),
            rh.to_host_vec().unwrap(),
            "({br}, {bc}) restrict"
        );
    }
    for (b, c) in [(3, 6), (6, 6), (3, 3)] {
        let n = 80;
        let a = dominant(&mut rng, n, b);
        let p = random_bsr(&mut rng, n, 12, b, c, 0.2);
        let plan = PtapPlan::new(a.pattern(), p.pattern()).unwrap();
        let (ph, pd) = (
            p.to_precision(single).unwrap(),
            p.to_device(&dev).unwrap().to_precision(single).unwrap(),
        );
        for a_prec in [Precision::Double, single] {
            let ah = a.to_precision(a_prec).unwrap();
            let ad = a.to_device(&dev).unwrap().to_precision(a_prec).unwrap();
            let new = |d: &Device| Bsr::zeros_in(d, plan.pattern().clone(), c, c, single).unwrap();
            let (mut ach, mut acd) = (new(&Device::Host), new(&dev));
            ptap_numeric(&plan, &ah, &ph, &mut ach, &mut plan.workspace()).unwrap();
            ptap_numeric(&plan, &ad, &pd, &mut acd, &mut plan.workspace()).unwrap();
            assert_eq!(acd.precision(), single);
            let diff = rel_diff(&acd.to_host_vec().unwrap(), &ach.to_host_vec().unwrap());
            assert!(
                diff <= 1e-6,
                "({b}, {c}) A {a_prec:?}: Galerkin differs by {diff:e}"
            );
            // the coarsest level's dense solve takes fp32 storage (factored in fp64): one
            // well-conditioned fp32 matrix factored on both sides
            let s = symmetric_dominant(&mut rng, 8 * c, c)
                .to_precision(single)
                .unwrap();
            let fh = DenseFactor::factor(&s).unwrap();
            let fd = DenseFactor::factor(&s.to_device(&dev).unwrap()).unwrap();
            let rhs = Vector::from_vec(rng.vec(s.n_rows()));
            let (mut zh, mut zd) = (
                Vector::zeros(s.n_rows()),
                Vector::zeros_on(&dev, s.n_rows()).unwrap(),
            );
            fh.solve(&rhs, &mut zh).unwrap();
            fd.solve(&rhs.to_device(&dev).unwrap(), &mut zd).unwrap();
            let diff = rel_diff(&zd.to_host_vec().unwrap(), &zh.to_host_vec().unwrap());
            assert!(
                diff <= 1e-12,
                "({b}, {c}): coarse solves differ by {diff:e}"
            );
        }
    }
    for bs in [1, 3, 6] {
        let a = dominant(&mut rng, 50, bs);
        for a_prec in [Precision::Double, single] {
            let ah = a.to_precision(a_prec).unwrap();
            let ad = a.to_device(&dev).unwrap().to_precision(a_prec).unwrap();
            let dh = BlockDiagonal::inverse_of_diagonal_in(&ah, bs, single).unwrap();
            let mut dd = BlockDiagonal::inverse_of_diagonal_in(&ad, bs, single).unwrap();
            assert_eq!((dh.precision(), dd.precision()), (single, single));
            assert_eq!(
                dd.to_host_vec().unwrap(),
                dh.to_host_vec().unwrap(),
                "bs {bs}"
            );
            dd.refresh_inverse(&ad).unwrap();
            assert_eq!(dd.precision(), single);
            assert_eq!(
                dd.to_host_vec().unwrap(),
                dh.to_host_vec().unwrap(),
                "bs {bs}"
            );
            let r = Vector::from_vec(rng.vec(50 * bs));
            let x0 = Vector::from_vec(rng.vec(50 * bs));
            let (mut xh, mut xd) = (x0.clone(), x0.to_device(&dev).unwrap());
            dh.apply(0.7, &r, 0.3, &mut xh).unwrap();
            dd.apply(0.7, &r.to_device(&dev).unwrap(), 0.3, &mut xd)
                .unwrap();
            assert_eq!(
                xd.to_host_vec().unwrap(),
                xh.to_host_vec().unwrap(),
                "bs {bs} apply"
            );
        }
    }
}

/// The distributed Galerkin product's kernels (`linalg::gpu::gather_blocks_two` and
/// `sum_blocks_in_order`): blocks gathered from two sources, and blocks summed from listed
/// contributions in the listed order (first assigned, then added), equal the host loops bit for
/// bit; indices beyond the first source read the second.
#[test]
fn galerkin_kernels_gather_and_sum_blocks_in_the_listed_order() {
    use linalg::gpu::{gather_blocks_two, sum_blocks_in_order, TwoSources};
    let Some(device) = gpu("galerkin_kernels_gather_and_sum_blocks_in_the_listed_order") else {
        return;
    };
    let ctx = device.cuda_context().unwrap();
    let mut rng = Rng::new(91);
    let (bl, n0, n1) = (36, 50, 70);
    // values of mixed magnitudes, so that the order of the sums shows in the bits
    let mut values = |n: usize| -> Vec<f64> {
        (0..n * bl)
            .map(|i| rng.unit() * 10f64.powi((i % 7) as i32 - 3))
            .collect()
    };
    let (a, b) = (values(n0), values(n1));
    let block = |j: usize| -> &[f64] {
        if j < n0 {
            &a[j * bl..(j + 1) * bl]
        } else {
            &b[(j - n0) * bl..(j - n0 + 1) * bl]
        }
    };
    let idx: Vec<u32> = (0..90u32)
        .map(|k| (k * 37 + 11) % (n0 + n1) as u32)
        .collect();
    // slots with 1 to 4 contributions from both sources
    let mut ptr = vec![0u32];
    let mut contrib = Vec::new();
    for s in 0..40u32 {
        for t in 0..=(s % 4) {
            contrib.push((s * 13 + t * 29 + 5) % (n0 + n1) as u32);
        }
        ptr.push(contrib.len() as u32);
    }
    let gathered: Vec<f64> = idx
        .iter()
        .flat_map(|&j| block(j as usize))
        .copied()
        .collect();
    let mut summed = vec![0.0; (ptr.len() - 1) * bl];
    for s in 0..ptr.len() - 1 {
        let list = &contrib[ptr[s] as usize..ptr[s + 1] as usize];
        let out = &mut summed[s * bl..(s + 1) * bl];
        out.copy_from_slice(block(list[0] as usize));
        for &c in &list[1..] {
            out.iter_mut()
                .zip(block(c as usize))
                .for_each(|(x, y)| *x += y);
        }
    }
    let (ad, bd) = (ctx.upload(&a).unwrap(), ctx.upload(&b).unwrap());
    let src = TwoSources { n0, a: &ad, b: &bd };
    let idx_d = ctx.upload(&idx).unwrap();
    let mut g = ctx.zeros::<f64>(gathered.len()).unwrap();
    gather_blocks_two(ctx, bl, &idx_d, src, &mut g).unwrap();
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&ctx.download(&g).unwrap()), bits(&gathered));
    let mut out = ctx.zeros::<f64>(summed.len()).unwrap();
    let (pd, cd) = (ctx.upload(&ptr).unwrap(), ctx.upload(&contrib).unwrap());
    sum_blocks_in_order(ctx, bl, &pd, &cd, src, &mut out).unwrap();
    assert_eq!(bits(&ctx.download(&out).unwrap()), bits(&summed));
    // a first source of another length than n0 blocks is an error
    let short = TwoSources { n0: n0 + 1, ..src };
    assert!(gather_blocks_two(ctx, bl, &idx_d, short, &mut g).is_err());
}

/// The block transpose of device matrices (`linalg::transpose`, `transpose_numeric` through a
/// plan whose slot map goes up once): the host transpose's pattern and bits, for `3 x 6` and
/// `3 x 3` blocks, the plan reused for new values; operands on different devices are an error.
#[test]
fn device_transpose_is_the_host_transpose_bit_for_bit() {
    let Some(device) = gpu("device_transpose_is_the_host_transpose_bit_for_bit") else {
        return;
    };
    let mut rng = Rng::new(77);
    let bits = |m: &Bsr| -> Vec<u64> {
        m.to_device(&Device::Host)
            .unwrap()
            .host()
            .unwrap()
            .iter()
            .map(|x| x.to_bits())
            .collect()
    };
    for (rows, cols, br, bc) in [(300, 40, 3, 6), (200, 200, 3, 3), (0, 5, 3, 6)] {
        let a = random_bsr(&mut rng, rows, cols, br, bc, 0.1);
        let host = linalg::transpose(&a).unwrap();
        let on_gpu = linalg::transpose(&a.to_device(&device).unwrap()).unwrap();
        assert!(!on_gpu.device().is_host());
        assert_eq!(on_gpu.pattern(), host.pattern());
        assert_eq!(bits(&on_gpu), bits(&host), "{rows}x{cols} blocks {br}x{bc}");
        // a plan kept for new values of the same pattern
        let plan = linalg::transpose_symbolic(a.pattern());
        let mut at = Bsr::zeros_on(&device, plan.pattern().clone(), bc, br).unwrap();
        for round in 0..2 {
            let values = rng.vec(a.pattern().nnz() * br * bc);
            let a2 = Bsr::from_parts(a.pattern().clone(), br, bc, values).unwrap();
            linalg::transpose_numeric(&plan, &a2.to_device(&device).unwrap(), &mut at).unwrap();
            assert_eq!(
                bits(&at),
                bits(&linalg::transpose(&a2).unwrap()),
                "round {round}"
            );
        }
        let mut on_host = Bsr::zeros(plan.pattern().clone(), bc, br);
        let a_gpu = a.to_device(&device).unwrap();
        assert!(linalg::transpose_numeric(&plan, &a_gpu, &mut on_host).is_err());
    }
}

/// A kernel of "another crate" for the device seam's tests: one parameter of every
/// [`linalg::gpu::KernelArg`] kind, a `#define`, and a gather so that a misplaced argument shows.
const SEAM_MODULE: linalg::gpu::KernelModule = linalg::gpu::KernelModule {
    name: "linalg-tests/seam.cu",
    text: r#"
extern "C" __global__ void seam_gather_scale(const u32 n, const u32* __restrict__ idx,
                                            const double* __restrict__ x, const u64 shift,
                                            const double a, double* __restrict__ y,
                                            u32* __restrict__ seen) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    y[i] = a * x[idx[i]] + (double)(shift + OFFSET);
    seen[i] = idx[i] + 1;
}
"#,
    fmad: false,
};

/// What `seam_gather_scale` computes, on the host.
fn seam_gather_scale_host(idx: &[u32], x: &[f64], shift: u64, a: f64, offset: i64) -> Vec<f64> {
    idx.iter()
        .map(|&j| a * x[j as usize] + (shift as i64 + offset) as f64)
        .collect()
}

#[test]
fn kernel_module_compiles_without_a_device() {
    // NVRTC alone: a source another crate owns, and a rejected one with its log.
    match SEAM_MODULE.compile_only(&[("OFFSET", 3)], "sm_90") {
        Ok(bytes) => assert!(bytes > 0),
        Err(LinalgError::CudaUnavailable { reason }) => {
            println!("SKIP kernel_module_compiles_without_a_device: no NVRTC ({reason})");
            return;
        }
        Err(e) => panic!("{e}"),
    }
    let broken = linalg::gpu::KernelModule {
        name: "linalg-tests/broken.cu",
        text: "extern \"C\" __global__ void broken() { undeclared_name = 1; }",
        fmad: false,
    };
    match broken.compile_only(&[], "sm_90") {
        Err(LinalgError::CudaCompile { .. }) => {}
        other => panic!("a rejected source must give its log, got {other:?}"),
    }
}

#[test]
fn kernel_module_launch_takes_typed_arguments_in_order() {
    use linalg::gpu::{KernelArg, LaunchShape};
    let Some(dev) = gpu("kernel_module_launch_takes_typed_arguments_in_order") else {
        return;
    };
    let ctx = dev.cuda_context().unwrap();
    let mut rng = Rng::new(41);
    let x = rng.vec(700);
    let n = 1000usize;
    let idx: Vec<u32> = (0..n).map(|i| ((i * 389) % x.len()) as u32).collect();
    let (shift, a, offset) = (5u64, -1.75, 3i64);
    let (idx_d, x_d) = (ctx.upload(&idx).unwrap(), ctx.upload(&x).unwrap());
    let mut y_d = ctx.filled(n, f64::NAN).unwrap();
    let mut seen_d = ctx.zeros::<u32>(n).unwrap();
    SEAM_MODULE
        .launch(
            ctx,
            &[("OFFSET", offset)],
            "seam_gather_scale",
            LaunchShape {
                blocks: n.div_ceil(128) as u32,
                threads: 128,
                shared_bytes: 0,
            },
            &mut [
                KernelArg::U32(n as u32),
                KernelArg::U32s(&idx_d),
                KernelArg::F64s(&x_d),
                KernelArg::U64(shift),
                KernelArg::F64(a),
                KernelArg::F64sMut(&mut y_d),
                KernelArg::U32sMut(&mut seen_d),
            ],
        )
        .unwrap();
    assert_eq!(
        ctx.download(&y_d).unwrap(),
        seam_gather_scale_host(&idx, &x, shift, a, offset)
    );
    let seen: Vec<u32> = idx.iter().map(|j| j + 1).collect();
    assert_eq!(ctx.download(&seen_d).unwrap(), seen);
}

#[test]
fn gpu_array_operations_are_the_bits_of_vector_operations() {
    // `linalg::gpu`'s operations on bare device arrays and `ops` on device vectors: one kernel
    // each, the same bits.
    let Some(dev) = gpu("gpu_array_operations_are_the_bits_of_vector_operations") else {
        return;
    };
    let ctx = dev.cuda_context().unwrap();
    let mut rng = Rng::new(43);
    let (xh, yh) = (rng.vec(5000), rng.vec(5000));
    let (x, mut y) = (
        Vector::from_vec(xh.clone()).to_device(&dev).unwrap(),
        Vector::from_vec(yh.clone()).to_device(&dev).unwrap(),
    );
    let (xd, mut yd) = (ctx.upload(&xh).unwrap(), ctx.upload(&yh).unwrap());
    assert_eq!(
        linalg::gpu::dot(ctx, &xd, &yd).unwrap().to_bits(),
        ops::dot(&x, &y).unwrap().to_bits()
    );
    assert_eq!(
        linalg::gpu::norm_inf(ctx, &xd, xd.len()).unwrap().to_bits(),
        ops::norm_inf(&x).unwrap().to_bits()
    );
    linalg::gpu::axpby(ctx, 0.5, &xd, -2.0, &mut yd).unwrap();
    ops::axpby(0.5, &x, -2.0, &mut y).unwrap();
    assert_eq!(ctx.download(&yd).unwrap(), y.to_host_vec().unwrap());
    linalg::gpu::axpy(ctx, 3.0, &xd, &mut yd).unwrap();
    ops::axpy(3.0, &x, &mut y).unwrap();
    assert_eq!(ctx.download(&yd).unwrap(), y.to_host_vec().unwrap());
    let exact = linalg::exact::ExactSum::of(xh.iter().copied()).value();
    assert_eq!(
        linalg::gpu::sum(ctx, &xd, linalg::gpu::Term::Value)
            .unwrap()
            .to_bits(),
        exact.to_bits()
    );
}

/// The coarsest level's explicit inverse is the host's bit for bit on the device's two paths of
/// a Hopper GPU: in one block's shared memory (up to 169 unknowns: 169 at the limit) and a
/// launch per pivot step beyond it (170, 240), with pivot rows other than the diagonal's on
/// each (a matrix whose largest column entries lie off the diagonal). A singular matrix names
/// the host's column on each path. (The third path, one block in global memory below 160
/// unknowns, runs only on GPUs with less shared memory a block: not reached here.)
#[test]
fn coarse_inverse_in_shared_memory_and_by_steps_is_the_hosts() {
    let Some(dev) = gpu("coarse_inverse_in_shared_memory_and_by_steps_is_the_hosts") else {
        return;
    };
    let mut rng = Rng::new(169);
    for n in [30, 168, 169, 170, 240] {
        for shuffled in [false, true] {
            let mut a = symmetric_dominant(&mut rng, n, 1).to_dense().unwrap();
            if shuffled {
                // rows rotated by one: the first column's largest entry is in the last row,
                // so the pivot searches swap rows
                a.rotate_left(n);
            }
            let a = Bsr::from_dense(&a, n, n, 1, 1).unwrap();
            let host = DenseFactor::invert(&a).unwrap();
            let device = DenseFactor::factor(&a.to_device(&dev).unwrap()).unwrap();
            let b = Vector::from_vec(rng.vec(n));
            let (mut xh, mut x) = (Vector::zeros(n), Vector::zeros_on(&dev, n).unwrap());
            host.solve(&b, &mut xh).unwrap();
            device.solve(&b.to_device(&dev).unwrap(), &mut x).unwrap();
            assert_eq!(
                x.to_host_vec().unwrap(),
                xh.host().unwrap(),
                "n {n}, rows rotated {shuffled}: host and device inverses"
            );
        }
        // rows 0 and 1 equal: singular, at the host's column
        let mut d = symmetric_dominant(&mut rng, n, 1).to_dense().unwrap();
        let row0 = d[..n].to_vec();
        d[n..2 * n].copy_from_slice(&row0);
        let singular = Bsr::from_dense(&d, n, n, 1, 1).unwrap();
        let Err(LinalgError::SingularMatrix { column, .. }) = DenseFactor::invert(&singular) else {
            panic!("n {n}: the host inverts a singular matrix");
        };
        assert!(
            matches!(
                DenseFactor::factor(&singular.to_device(&dev).unwrap()),
                Err(LinalgError::SingularMatrix { column: c, .. }) if c == column
            ),
            "n {n}: the singular matrix"
        );
    }
}
