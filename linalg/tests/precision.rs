//! Matrices and block diagonals stored in fp32 ([`Precision::Single`]): every kernel that reads
//! them equals a dense fp64 reference on the rounded values (fp32 loads, fp64 arithmetic), for
//! random block shapes; operations without an fp32 kernel are errors.

mod common;

use common::{assert_close, dense_mul, dense_transpose, random_bsr, random_pattern, Rng};
use linalg::{
    prolong_add, ptap, ptap_numeric, ptap_symbolic, restrict, BlockDiagonal, Bsr, LinalgError,
    Precision, Vector,
};

/// The dense matrix of `a` with every value rounded to fp32.
fn rounded_dense(a: &Bsr) -> Vec<f64> {
    a.to_dense()
        .unwrap()
        .iter()
        .map(|&v| v as f32 as f64)
        .collect()
}

#[test]
fn conversion_rounds_and_keeps_the_pattern() {
    let mut rng = Rng::new(1);
    let a = random_bsr(&mut rng, 7, 5, 3, 6, 0.4);
    let s = a.to_precision(Precision::Single).unwrap();
    assert_eq!(s.precision(), Precision::Single);
    assert_eq!(s.n_values(), a.n_values());
    assert!(std::sync::Arc::ptr_eq(s.pattern(), a.pattern()));
    assert_eq!(s.to_dense().unwrap(), rounded_dense(&a));
    let back = s.to_precision(Precision::Double).unwrap();
    assert_eq!(back.precision(), Precision::Double);
    assert_eq!(back.to_dense().unwrap(), rounded_dense(&a));
    // the fp64 view of fp32 storage is an error naming the precision, not a silent copy
    assert!(matches!(
        s.host(),
        Err(LinalgError::PrecisionUnsupported {
            precision: "single",
            ..
        })
    ));
    let z = s.zeros_like().unwrap();
    assert_eq!(z.precision(), Precision::Single);
}

#[test]
fn single_spmv_restriction_and_prolongation_match_dense_references() {
    let mut rng = Rng::new(2);
    for br in 1..=6 {
        for bc in 1..=6 {
            let (nbr, nbc) = (9, 7);
            let p = random_bsr(&mut rng, nbr, nbc, br, bc, 0.35);
            let ps = p.to_precision(Precision::Single).unwrap();
            let d = rounded_dense(&p);
            let (m, n) = (nbr * br, nbc * bc);
            // y = 0.5 P x + 2 y
            let x = rng.vec(n);
            let y0 = rng.vec(m);
            let mut y = Vector::from_vec(y0.clone());
            ps.spmv_add(0.5, &Vector::from_vec(x.clone()), 2.0, &mut y)
                .unwrap();
            let px = dense_mul(&d, &x, m, n, 1);
            let want: Vec<f64> = px.iter().zip(&y0).map(|(a, b)| 0.5 * a + 2.0 * b).collect();
            assert_close(y.host().unwrap(), &want, 1e-13);
            // x += P y (prolongation)
            let yc = rng.vec(n);
            let mut xf = Vector::from_vec(y0.clone());
            prolong_add(&ps, &Vector::from_vec(yc.clone()), &mut xf).unwrap();
            let want: Vec<f64> = dense_mul(&d, &yc, m, n, 1)
                .iter()
                .zip(&y0)
                .map(|(a, b)| a + b)
                .collect();
            assert_close(xf.host().unwrap(), &want, 1e-13);
            // y = P^T x through a Galerkin plan (restriction)
            let a_pat = random_pattern(&mut rng, nbr, nbr, 0.3, true);
            let plan = ptap_symbolic(&a_pat, p.pattern()).unwrap();
            let r = rng.vec(m);
            let mut yr = Vector::zeros(n);
            restrict(&plan, &ps, &Vector::from_vec(r.clone()), &mut yr).unwrap();
            let want = dense_mul(&dense_transpose(&d, m, n), &r, n, m, 1);
            assert_close(yr.host().unwrap(), &want, 1e-13);
        }
    }
}

#[test]
fn single_galerkin_product_matches_dense_reference() {
    let mut rng = Rng::new(3);
    for (b, c) in [(3, 6), (6, 6), (3, 3), (2, 5)] {
        let nf = 12;
        let pat = random_pattern(&mut rng, nf, nf, 0.3, true);
        let a = Bsr::from_parts(pat.clone(), b, b, rng.vec(pat.nnz() * b * b)).unwrap();
        let p = random_bsr(&mut rng, nf, 4, b, c, 0.4);
        // fp64 A (the fine level) and fp32 A (coarse levels), fp32 P, fp32 result
        for a_prec in [Precision::Double, Precision::Single] {
            let a_s = a.to_precision(a_prec).unwrap();
            let p_s = p.to_precision(Precision::Single).unwrap();
            let plan = ptap_symbolic(a.pattern(), p.pattern()).unwrap();
            let mut ac = Bsr::zeros_in(
                &linalg::Device::Host,
                plan.pattern().clone(),
                c,
                c,
                Precision::Single,
            )
            .unwrap();
            ptap_numeric(&plan, &a_s, &p_s, &mut ac, &mut plan.workspace()).unwrap();
            assert_eq!(ac.precision(), Precision::Single);
            let (m, n) = (nf * b, 4 * c);
            let ad = a_s.to_dense().unwrap();
            let pd = rounded_dense(&p);
            let ap = dense_mul(&ad, &pd, m, m, n);
            let want = dense_mul(&dense_transpose(&pd, m, n), &ap, n, m, n);
            // the result is rounded once to fp32
            assert_close(&ac.to_dense().unwrap(), &want, 2e-7);
            // the fp64 product of the same rounded operands, rounded: equal to fp32 rounding
            let exact = ptap(
                &a_s.to_precision(Precision::Double).unwrap(),
                &p_s.to_precision(Precision::Double).unwrap(),
            )
            .unwrap();
            let rounded: Vec<f64> = exact
                .to_dense()
                .unwrap()
                .iter()
                .map(|&v| v as f32 as f64)
                .collect();
            assert_eq!(ac.to_dense().unwrap(), rounded, "({b}, {c}) {a_prec:?}");
        }
    }
}

#[test]
fn single_block_diagonal_inverts_in_double_and_applies() {
    let mut rng = Rng::new(4);
    for bs in 1..=6 {
        let n = 10;
        let pat = random_pattern(&mut rng, n, n, 0.3, true);
        let mut v = rng.vec(pat.nnz() * bs * bs);
        // diagonally dominant diagonal blocks
        for k in pat.diagonal_positions().unwrap() {
            for c in 0..bs {
                v[k * bs * bs + c * (bs + 1)] += 2.0 * bs as f64;
            }
        }
        let a = Bsr::from_parts(pat, bs, bs, v).unwrap();
        for a_prec in [Precision::Double, Precision::Single] {
            let a_s = a.to_precision(a_prec).unwrap();
            let mut dinv =
                BlockDiagonal::inverse_of_diagonal_in(&a_s, bs, Precision::Single).unwrap();
            assert_eq!(dinv.precision(), Precision::Single);
            let mut exact = BlockDiagonal::from_diagonal(&a_s, bs).unwrap();
            exact.invert().unwrap();
            let want: Vec<f64> = exact
                .host()
                .unwrap()
                .iter()
                .map(|&v| v as f32 as f64)
                .collect();
            assert_eq!(dinv.to_host_vec().unwrap(), want);
            // x = 0.7 D r + 0.3 x, in fp64 arithmetic on the rounded blocks
            let r = rng.vec(n * bs);
            let x0 = rng.vec(n * bs);
            let mut x = Vector::from_vec(x0.clone());
            dinv.apply(0.7, &Vector::from_vec(r.clone()), 0.3, &mut x)
                .unwrap();
            for i in 0..n {
                for row in 0..bs {
                    let s: f64 = (0..bs)
                        .map(|c| want[i * bs * bs + row * bs + c] * r[i * bs + c])
                        .sum();
                    let w = 0.7 * s + 0.3 * x0[i * bs + row];
                    let got = x.host().unwrap()[i * bs + row];
                    assert!((got - w).abs() <= 1e-14 * (1.0 + w.abs()), "{got} vs {w}");
                }
            }
            // a refresh keeps the stored precision
            dinv.refresh_inverse(&a_s).unwrap();
            assert_eq!(dinv.precision(), Precision::Single);
            assert_eq!(dinv.to_host_vec().unwrap(), want);
        }
    }
}

#[test]
fn precision_is_an_axis_of_host_storage_apart_from_the_values() {
    let mut rng = Rng::new(5);
    let a = random_bsr(&mut rng, 6, 6, 2, 2, 0.5);
    let mut s = a.to_precision(Precision::Single).unwrap();
    // the fp64 views of fp32 values are errors naming the precision, mutable ones too
    for result in [s.host().map(|_| ()), s.host_block(0).map(|_| ())] {
        assert!(matches!(
            result,
            Err(LinalgError::PrecisionUnsupported {
                precision: "single",
                ..
            })
        ));
    }
    assert!(matches!(
        s.host_mut(),
        Err(LinalgError::PrecisionUnsupported {
            precision: "single",
            ..
        })
    ));
    // copies keep the precision and the values; a copy in the same precision is the same bits
    assert_eq!(s.clone().to_host_vec().unwrap(), s.to_host_vec().unwrap());
    let again = s.to_precision(Precision::Single).unwrap();
    assert_eq!(again.precision(), Precision::Single);
    assert_eq!(again.to_host_vec().unwrap(), s.to_host_vec().unwrap());
    assert_eq!(again, s);
    s.scale(2.0).unwrap();
    assert_eq!(s.to_dense().unwrap(), {
        let d: Vec<f64> = rounded_dense(&a).iter().map(|v| v * 2.0).collect();
        d
    });

    // a block diagonal: fp32 storage rounds, widening back gives the rounded values in fp64
    let values = rng.vec(4 * 3 * 3);
    let d = BlockDiagonal::from_vec(4, 3, values.clone()).unwrap();
    let d32 = d.to_precision(Precision::Single).unwrap();
    let rounded: Vec<f64> = values.iter().map(|&v| v as f32 as f64).collect();
    assert_eq!(d32.precision(), Precision::Single);
    assert_eq!(d32.to_host_vec().unwrap(), rounded);
    assert!(matches!(
        d32.host(),
        Err(LinalgError::PrecisionUnsupported { .. })
    ));
    let d64 = d32.to_precision(Precision::Double).unwrap();
    assert_eq!(d64.precision(), Precision::Double);
    assert_eq!(d64.host().unwrap(), &rounded[..]);
    assert_eq!(d.to_precision(Precision::Double).unwrap(), d);
}
