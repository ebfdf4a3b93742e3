//! [`CgCoefficients`]: on the host, the coefficients of the plain preconditioned CG recurrence
//! (a reference written out below) bit for bit; on one GPU, the host's coefficients bit for bit
//! with no wait before the one download, on operators that run every step, stop early
//! (`D^{-1} A = I`, six unknowns) or stop at once (`r . z` zero or negative, `p . q` negative
//! or infinite), for 0, 1 and 10 steps. Without a GPU the device test prints one `SKIP` line
//! and passes.

// `!(x > 0.0)` is true for NaN too, as the conditions mean
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod common;

use std::sync::OnceLock;

use common::Rng;
use linalg::{ops, BlockDiagonal, Bsr, CgCoefficients, Device, LinalgError, Vector};

/// The stop ratio of `amg`'s eigenvalue estimate.
const RATIO: f64 = 1e-28;

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

/// The recurrence of the module's doc comment: `steps` steps of CG on `a` preconditioned by
/// `d` (the inverse diagonal blocks) from `r0`, with the caller's scalars.
fn recurrence(
    a: &Bsr,
    d: &BlockDiagonal,
    r0: &[f64],
    mut cg: CgCoefficients,
) -> Result<(Vec<f64>, Vec<f64>), LinalgError> {
    let dev = a.device();
    let mut r = Vector::from_vec(r0.to_vec()).to_device(&dev)?;
    let (mut p, mut w) = (r.zeros_like()?, r.zeros_like()?);
    d.apply(1.0, &r, 0.0, &mut w)?;
    cg.start(&r, &w)?;
    p.copy_from(&w)?;
    for _ in 0..cg.steps() {
        if cg.stopped() {
            break;
        }
        a.spmv(&p, &mut w)?;
        cg.alpha_update(&p, &w, &mut r)?;
        if cg.stopped() {
            break;
        }
        d.apply(1.0, &r, 0.0, &mut w)?;
        cg.beta_update(&r, &w, &mut p)?;
    }
    cg.coefficients()
}

/// The same recurrence with every scalar in plain host code (amg's estimate before the
/// coefficients moved into linalg).
fn reference(a: &Bsr, d: &BlockDiagonal, r0: &[f64], steps: usize) -> (Vec<f64>, Vec<f64>) {
    let mut r = Vector::from_vec(r0.to_vec());
    let (mut p, mut w) = (r.zeros_like().unwrap(), r.zeros_like().unwrap());
    d.apply(1.0, &r, 0.0, &mut w).unwrap();
    let mut rz = ops::dot(&r, &w).unwrap();
    p.copy_from(&w).unwrap();
    let (mut alphas, mut betas) = (vec![], vec![]);
    for _ in 0..steps {
        if !(rz > 0.0) {
            break;
        }
        a.spmv(&p, &mut w).unwrap();
        let pq = ops::dot(&p, &w).unwrap();
        if !(pq > 0.0) || !pq.is_finite() {
            break;
        }
        let alpha = rz / pq;
        alphas.push(alpha);
        ops::axpy(-alpha, &w, &mut r).unwrap();
        d.apply(1.0, &r, 0.0, &mut w).unwrap();
        let rz_new = ops::dot(&r, &w).unwrap();
        let beta = rz_new / rz;
        if !(beta > 0.0) || !beta.is_finite() || rz_new <= RATIO * rz {
            break;
        }
        betas.push(beta);
        rz = rz_new;
        ops::axpby(1.0, &w, beta, &mut p).unwrap();
    }
    (alphas, betas)
}

/// Block tridiagonal `[-I, 2.6 I + 0.1 B, -I]` of `n` blocks of `bs <= 6` (B symmetric, entries
/// in [0, 1): diagonally dominant): an SPD operator on which ten steps run.
fn laplace_like(rng: &mut Rng, n: usize, bs: usize) -> Bsr {
    tridiagonal(rng, n, bs, -1.0)
}

/// Block tridiagonal `[off I, 2.6 I + 0.1 B, off I]` (indefinite for `off = -3`).
fn tridiagonal(rng: &mut Rng, n: usize, bs: usize, off: f64) -> Bsr {
    let nr = n * bs;
    let mut d = vec![0.0; nr * nr];
    for b in 0..n {
        for i in 0..bs {
            for j in 0..=i {
                let v = if i == j { 2.6 } else { 0.1 * rng.unit() };
                d[(b * bs + i) * nr + b * bs + j] = v;
                d[(b * bs + j) * nr + b * bs + i] = v;
            }
            if b + 1 < n {
                d[(b * bs + i) * nr + (b + 1) * bs + i] = off;
                d[((b + 1) * bs + i) * nr + b * bs + i] = off;
            }
        }
    }
    Bsr::from_dense(&d, nr, nr, bs, bs).unwrap()
}

/// Block diagonal (each block SPD): `D^{-1} A = I`, the residual vanishes after one step.
fn block_diagonal_only(rng: &mut Rng, n: usize, bs: usize) -> Bsr {
    let mut a = laplace_like(rng, n, bs);
    let nr = n * bs;
    let mut d = a.to_dense().unwrap();
    for i in 0..nr {
        for j in 0..nr {
            if i / bs != j / bs {
                d[i * nr + j] = 0.0;
            }
        }
    }
    a = Bsr::from_dense(&d, nr, nr, bs, bs).unwrap();
    a
}

/// The cases: (name, operator, start vector).
fn cases() -> Vec<(&'static str, Bsr, Vec<f64>)> {
    let mut rng = Rng::new(26);
    let mut out = Vec::new();
    for bs in [3, 6] {
        let a = laplace_like(&mut rng, 100, bs);
        let r0 = rng.vec(a.n_rows());
        out.push(("laplace-like", a, r0));
    }
    // two blocks of 3: the Krylov space is exhausted after at most six steps
    let a = laplace_like(&mut rng, 2, 3);
    let r0 = rng.vec(6);
    out.push(("six unknowns", a, r0));
    let a = block_diagonal_only(&mut rng, 20, 3);
    let r0 = rng.vec(60);
    out.push(("block diagonal", a, r0));
    // r . z == 0 at the start
    let a = laplace_like(&mut rng, 20, 3);
    out.push(("zero start", a, vec![0.0; 60]));
    // negative definite: r . z < 0 at the start
    let mut a = laplace_like(&mut rng, 20, 6);
    a.scale(-1.0).unwrap();
    let r0 = rng.vec(120);
    out.push(("negative definite", a, r0));
    // indefinite, a smooth start: r . z > 0 but p . q < 0 at the first step
    let a = tridiagonal(&mut rng, 20, 3, -3.0);
    out.push(("indefinite", a, vec![1.0; 60]));
    // r . z overflows to infinity, and so does p . q (not finite: the first step stops)
    let a = laplace_like(&mut rng, 20, 3);
    out.push(("overflow", a, vec![1e160; 60]));
    out
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn host_coefficients_are_the_plain_recurrences() {
    for (name, a, r0) in cases() {
        let d = BlockDiagonal::inverse_of_diagonal(&a, a.block_rows()).unwrap();
        for steps in [0, 1, 10] {
            let got = recurrence(&a, &d, &r0, CgCoefficients::on_host(steps, RATIO)).unwrap();
            let want = reference(&a, &d, &r0, steps);
            assert_eq!(bits(&got.0), bits(&want.0), "{name}, {steps} steps: alphas");
            assert_eq!(bits(&got.1), bits(&want.1), "{name}, {steps} steps: betas");
            assert!(got.0.len() <= steps);
            // host vectors keep the scalars on the host
            let x = Vector::from_vec(r0.clone());
            let cg = CgCoefficients::with_vectors(&x, steps, RATIO).unwrap();
            assert!(matches!(cg.device(), Device::Host));
        }
        let ran = reference(&a, &d, &r0, 10).0.len();
        match name {
            "laplace-like" => assert_eq!(ran, 10, "{name}"),
            "six unknowns" => assert!(ran >= 1, "{name}: {ran}"),
            "block diagonal" => assert_eq!(ran, 1, "{name}"),
            _ => assert_eq!(ran, 0, "{name}"),
        }
    }
}

#[test]
fn steps_past_the_capacity_and_updates_out_of_order_are_errors() {
    let mut rng = Rng::new(7);
    let a = laplace_like(&mut rng, 10, 3);
    let x = Vector::from_vec(rng.vec(30));
    let (mut r, mut p) = (x.clone(), x.clone());
    let mut cg = CgCoefficients::on_host(1, RATIO);
    assert!(cg.beta_update(&x, &x, &mut p).is_err());
    cg.start(&x, &x).unwrap();
    a.spmv(&x, &mut p).unwrap();
    cg.alpha_update(&x, &p, &mut r).unwrap();
    assert!(cg.alpha_update(&x, &p, &mut r).is_err());
    let short = Vector::zeros(29);
    assert!(cg.beta_update(&x, &short, &mut p).is_err());
}

#[test]
fn device_coefficients_are_the_host_ones_bit_for_bit() {
    let Some(dev) = gpu("device_coefficients_are_the_host_ones_bit_for_bit") else {
        return;
    };
    for (name, a, r0) in cases() {
        let d = BlockDiagonal::inverse_of_diagonal(&a, a.block_rows()).unwrap();
        let (ad, dd) = (
            a.to_device(&dev).unwrap(),
            BlockDiagonal::inverse_of_diagonal(&a.to_device(&dev).unwrap(), a.block_rows())
                .unwrap(),
        );
        let x = Vector::from_vec(r0.clone()).to_device(&dev).unwrap();
        for steps in [0, 1, 10] {
            let host = recurrence(&a, &d, &r0, CgCoefficients::on_host(steps, RATIO)).unwrap();
            let cg = CgCoefficients::with_vectors(&x, steps, RATIO).unwrap();
            assert!(cg.device().same_as(&dev));
            assert!(!cg.stopped());
            let before = dev.transfers();
            let device = recurrence(&ad, &dd, &r0, cg).unwrap();
            let moved = dev.transfers();
            // the record's one download (2 values a step)
            assert_eq!(
                moved.device_to_host - before.device_to_host,
                16 * steps as u64,
                "{name}, {steps} steps: bytes down"
            );
            // the same device vectors with host scalars (a wait per dot)
            let waiting = recurrence(&ad, &dd, &r0, CgCoefficients::on_host(steps, RATIO)).unwrap();
            for (what, other) in [("host", &host), ("device vectors, host scalars", &waiting)] {
                assert_eq!(
                    bits(&device.0),
                    bits(&other.0),
                    "{name}, {steps} steps: alphas vs {what}"
                );
                assert_eq!(
                    bits(&device.1),
                    bits(&other.1),
                    "{name}, {steps} steps: betas vs {what}"
                );
            }
        }
    }
}
