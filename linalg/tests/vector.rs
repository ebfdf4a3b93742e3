//! Vector operations: values, layouts, errors and thread-count independence of reductions.

mod common;

use std::sync::Arc;

use common::{with_threads, Rng};
use linalg::{ops, Device, Layout, LinalgError, Vector};

#[test]
fn blas1_values() {
    let mut rng = Rng::new(10);
    let n = 10_007;
    let (x, y) = (Vector::from_vec(rng.vec(n)), Vector::from_vec(rng.vec(n)));
    let exact: f64 = x
        .host()
        .unwrap()
        .iter()
        .zip(y.host().unwrap())
        .map(|(a, b)| a * b)
        .sum();
    assert!((ops::dot(&x, &y).unwrap() - exact).abs() < 1e-10);
    let nx: f64 = x.host().unwrap().iter().map(|a| a * a).sum::<f64>().sqrt();
    assert!((ops::norm2(&x).unwrap() - nx).abs() < 1e-10);

    let mut z = y.clone();
    ops::axpy(2.0, &x, &mut z).unwrap();
    assert!(
        (0..n).all(|i| z.host().unwrap()[i] == y.host().unwrap()[i] + 2.0 * x.host().unwrap()[i])
    );
    let mut z = Vector::from_vec(vec![f64::NAN; n]);
    ops::axpby(3.0, &x, 0.0, &mut z).unwrap();
    assert!((0..n).all(|i| z.host().unwrap()[i] == 3.0 * x.host().unwrap()[i]));
    let mut z = y.clone();
    ops::axpby(3.0, &x, -1.5, &mut z).unwrap();
    assert!((0..n)
        .all(|i| z.host().unwrap()[i] == 3.0 * x.host().unwrap()[i] - 1.5 * y.host().unwrap()[i]));
    ops::scale(0.5, &mut z).unwrap();
    assert!((0..n)
        .all(|i| z.host().unwrap()[i]
            == 0.5 * (3.0 * x.host().unwrap()[i] - 1.5 * y.host().unwrap()[i])));

    let mut w = Vector::zeros(n);
    w.copy_from(&x).unwrap();
    assert_eq!(w, x);
    w.fill(1.0).unwrap();
    assert_eq!(ops::dot(&w, &w).unwrap(), n as f64);
}

#[test]
fn dot_is_bit_identical_across_thread_counts() {
    let mut rng = Rng::new(11);
    let n = 1_000_003;
    let (x, y) = (Vector::from_vec(rng.vec(n)), Vector::from_vec(rng.vec(n)));
    let d: Vec<u64> = [1, 2, 3, 4]
        .into_iter()
        .map(|t| with_threads(t, || ops::dot(&x, &y).unwrap()).to_bits())
        .collect();
    assert!(d.iter().all(|&b| b == d[0]), "{d:?}");
    // several at once: each pair's exact sum of the rounded products, rounded once (an
    // independent reference: `dot` is `dots` of one pair)
    let exact = |a: &Vector, b: &Vector| {
        let (a, b) = (a.host().unwrap(), b.host().unwrap());
        linalg::exact::ExactSum::of(a.iter().zip(b).map(|(p, q)| p * q)).value()
    };
    let [xy, xx, none] = ops::dots([(&x, &y), (&x, &x), (&x, &Vector::zeros(n))]).unwrap();
    assert_eq!(xy.to_bits(), d[0]);
    assert_eq!(xy.to_bits(), exact(&x, &y).to_bits());
    assert_eq!(xx.to_bits(), exact(&x, &x).to_bits());
    assert_eq!(none, 0.0);
    assert!(ops::dots([(&x, &y), (&x, &Vector::zeros(n - 1))]).is_err());
}

/// Reductions sum the owned entries only (the ghost tail is another rank's), element-wise
/// operations act on every local entry, and operands of other lengths or layouts are errors,
/// not panics.
#[test]
fn layouts_reductions_and_mismatches() {
    let comm = linalg::comm::SelfComm::shared();
    let layout = Arc::new(Layout::new(3, 2, 0, 3, comm).unwrap());
    let x =
        Vector::from_vec_with_layout(layout.clone(), vec![1.0, 2.0, 3.0, 100.0, 100.0]).unwrap();
    assert_eq!(x.layout().owned(), 3);
    assert_eq!(ops::dot(&x, &x).unwrap(), 14.0);
    assert_eq!(ops::norm2(&x).unwrap(), 14f64.sqrt());
    assert_eq!(ops::norm_inf(&x).unwrap(), 3.0);
    let with_nan = Vector::from_vec(vec![1.0, f64::NAN, -7.0]);
    assert!(ops::norm_inf(&with_nan).unwrap().is_nan());
    assert_eq!(
        ops::norm_inf(&Vector::from_vec(vec![-0.0, 1e-300])).unwrap(),
        1e-300
    );
    let mut y = x.zeros_like().unwrap();
    ops::axpy(2.0, &x, &mut y).unwrap();
    assert_eq!(y.host().unwrap(), &[2.0, 4.0, 6.0, 200.0, 200.0]);
    assert!(Vector::from_vec_with_layout(layout, vec![0.0; 4]).is_err());

    let serial = Vector::zeros(5);
    assert_eq!(
        ops::dot(&x, &serial),
        Err(LinalgError::LayoutMismatch { what: "ops::dot" })
    );
    let mut short = Vector::zeros(4);
    assert_eq!(
        ops::axpy(1.0, &serial, &mut short),
        Err(LinalgError::LengthMismatch {
            what: "ops::axpy",
            expected: 4,
            found: 5
        })
    );
    assert!(short.copy_from(&serial).is_err());
    assert!(x.device().is_host() && x.device().same_as(&Device::Host));
    assert_eq!(x.to_host_vec().unwrap().len(), 5);
}

/// `copy_to_host` writes every local entry (owned and ghosts) into the slice, bit for bit, and
/// refuses a slice of another length.
#[test]
fn copy_to_host_overwrites_the_slice() {
    let comm = linalg::comm::SelfComm::shared();
    let layout = Arc::new(Layout::new(3, 2, 0, 3, comm).unwrap());
    let values = vec![1.0, -0.0, f64::MIN_POSITIVE / 4.0, f64::INFINITY, -7.5];
    let x = Vector::from_vec_with_layout(layout, values.clone()).unwrap();
    let mut into = vec![f64::NAN; 5];
    x.copy_to_host(&mut into).unwrap();
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&into), bits(&values));
    let mut short = vec![0.0; 4];
    assert_eq!(
        x.copy_to_host(&mut short),
        Err(LinalgError::LengthMismatch {
            what: "Vector::copy_to_host",
            expected: 5,
            found: 4
        })
    );
    assert_eq!(short, [0.0; 4], "left as it was");
    let mut none: [f64; 0] = [];
    Vector::zeros(0).copy_to_host(&mut none).unwrap();
}

/// The hashed fill depends on the global index only: a rank holding entries 4.. of a vector sees
/// the values a serial run has there.
#[test]
fn hashed_fill_follows_global_indices() {
    let mut whole = Vector::zeros(10);
    ops::fill_hashed(&mut whole, 7).unwrap();
    let comm = linalg::comm::SelfComm::shared();
    let part = Arc::new(Layout::new(6, 1, 4, 10, comm).unwrap());
    let mut tail = Vector::from_vec_with_layout(part, vec![f64::NAN; 7]).unwrap();
    ops::fill_hashed(&mut tail, 7).unwrap();
    assert_eq!(&tail.host().unwrap()[..6], &whole.host().unwrap()[4..]);
    assert!(
        tail.host().unwrap()[6].is_nan(),
        "ghosts are left as they are"
    );
    assert!(whole
        .host()
        .unwrap()
        .iter()
        .all(|v| (-1.0..1.0).contains(v)));
}
