//! Vector operations: values and thread-count independence of reductions.

mod common;

use common::{with_threads, Rng};
use linalg::{ops, Vector};

#[test]
fn blas1_values() {
    let mut rng = Rng::new(10);
    let n = 10_007;
    let (x, y) = (Vector::from_vec(rng.vec(n)), Vector::from_vec(rng.vec(n)));
    let exact: f64 = x
        .as_slice()
        .iter()
        .zip(y.as_slice())
        .map(|(a, b)| a * b)
        .sum();
    assert!((ops::dot(&x, &y) - exact).abs() < 1e-10);
    let nx: f64 = x.as_slice().iter().map(|a| a * a).sum::<f64>().sqrt();
    assert!((ops::norm2(&x) - nx).abs() < 1e-10);

    let mut z = y.clone();
    ops::axpy(2.0, &x, &mut z);
    assert!((0..n).all(|i| z.as_slice()[i] == y.as_slice()[i] + 2.0 * x.as_slice()[i]));
    let mut z = Vector::from_vec(vec![f64::NAN; n]);
    ops::axpby(3.0, &x, 0.0, &mut z);
    assert!((0..n).all(|i| z.as_slice()[i] == 3.0 * x.as_slice()[i]));
    let mut z = y.clone();
    ops::axpby(3.0, &x, -1.5, &mut z);
    assert!((0..n).all(|i| z.as_slice()[i] == 3.0 * x.as_slice()[i] - 1.5 * y.as_slice()[i]));
    ops::scale(0.5, &mut z);
    assert!(
        (0..n).all(|i| z.as_slice()[i] == 0.5 * (3.0 * x.as_slice()[i] - 1.5 * y.as_slice()[i]))
    );

    let mut w = Vector::zeros(n);
    w.copy_from(&x);
    assert_eq!(w, x);
    w.fill(1.0);
    assert_eq!(ops::dot(&w, &w), n as f64);
}

#[test]
fn dot_is_bit_identical_across_thread_counts() {
    let mut rng = Rng::new(11);
    let n = 1_000_003;
    let (x, y) = (Vector::from_vec(rng.vec(n)), Vector::from_vec(rng.vec(n)));
    let d: Vec<u64> = [1, 2, 3, 4]
        .into_iter()
        .map(|t| with_threads(t, || ops::dot(&x, &y)).to_bits())
        .collect();
    assert!(d.iter().all(|&b| b == d[0]), "{d:?}");
}
