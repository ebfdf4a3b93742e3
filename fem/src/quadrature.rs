//! Gauss-Legendre rules on `[-1, 1]` and their tensor products on the reference square and cube.
//!
//! Points are listed in ascending order in 1D; tensor rules list point `(i, j, k)` at index
//! `i + n j + n^2 k` (`i` fastest), the same lexicographic order as the cell nodes.

use crate::error::{FemError, Result};

/// Largest supported number of points per direction.
pub const MAX_POINTS: usize = 6;

/// Newton's iteration for a root of `P_n` stops at a step of at most this size (round-off, as the
/// roots lie in `[-1, 1]`).
const NEWTON_STEP_TOL: f64 = 1e-16;
/// Most Newton steps per root: a guard, as a handful suffice from the classical initial guess.
const NEWTON_MAX_STEPS: usize = 100;

/// A 1D Gauss-Legendre rule with `n` points, exact for polynomials of degree `2 n - 1`.
#[derive(Debug, Clone, PartialEq)]
pub struct GaussLegendre {
    points: Vec<f64>,
    weights: Vec<f64>,
}

impl GaussLegendre {
    /// The `n`-point rule, `1 <= n <= MAX_POINTS`. Nodes are the roots of the Legendre polynomial
    /// `P_n`, found by Newton iteration to machine precision and mirrored so the rule is exactly
    /// symmetric.
    pub fn new(n: usize) -> Result<Self> {
        if !(1..=MAX_POINTS).contains(&n) {
            return Err(FemError::UnsupportedQuadrature { points: n });
        }
        let mut points = vec![0.0; n];
        let mut weights = vec![0.0; n];
        for i in 0..n.div_ceil(2) {
            // Classical initial guess for the i-th largest root, then Newton on P_n.
            let mut x = (std::f64::consts::PI * (i as f64 + 0.75) / (n as f64 + 0.5)).cos();
            let mut dp = 0.0;
            for _ in 0..NEWTON_MAX_STEPS {
                let (p, d) = legendre(n, x);
                dp = d;
                let dx = p / d;
                x -= dx;
                if dx.abs() <= NEWTON_STEP_TOL {
                    break;
                }
            }
            let (_, d) = legendre(n, x);
            dp = if d != 0.0 { d } else { dp };
            let w = 2.0 / ((1.0 - x * x) * dp * dp);
            points[n - 1 - i] = x;
            points[i] = -x;
            weights[n - 1 - i] = w;
            weights[i] = w;
        }
        if n % 2 == 1 {
            points[n / 2] = 0.0;
        }
        Ok(Self { points, weights })
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Always false: a rule has at least one point.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// Abscissae in ascending order.
    pub fn points(&self) -> &[f64] {
        &self.points
    }

    /// Weights (summing to 2).
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }
}

/// `(P_n(x), P_n'(x))` by the three-term recurrence.
fn legendre(n: usize, x: f64) -> (f64, f64) {
    let (mut p0, mut p1) = (1.0, x);
    for k in 2..=n {
        let kf = k as f64;
        let p2 = ((2.0 * kf - 1.0) * x * p1 - (kf - 1.0) * p0) / kf;
        p0 = p1;
        p1 = p2;
    }
    if n == 0 {
        return (1.0, 0.0);
    }
    // P_n' = n (x P_n - P_{n-1}) / (x^2 - 1); never evaluated at x = +-1 (roots lie inside).
    let d = n as f64 * (x * p1 - p0) / (x * x - 1.0);
    (p1, d)
}

/// Tensor-product Gauss rule on the reference cube `[-1, 1]^3`.
#[derive(Debug, Clone, PartialEq)]
pub struct Quadrature {
    points: Vec<[f64; 3]>,
    weights: Vec<f64>,
}

impl Quadrature {
    /// `n^3` points, exact for polynomials of degree `2 n - 1` in each variable.
    pub fn hex(n: usize) -> Result<Self> {
        let g = GaussLegendre::new(n)?;
        let (x, w) = (g.points(), g.weights());
        let mut points = Vec::with_capacity(n * n * n);
        let mut weights = Vec::with_capacity(n * n * n);
        for k in 0..n {
            for j in 0..n {
                for i in 0..n {
                    points.push([x[i], x[j], x[k]]);
                    weights.push(w[i] * w[j] * w[k]);
                }
            }
        }
        Ok(Self { points, weights })
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Always false: a rule has at least one point.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// Reference coordinates of the points.
    pub fn points(&self) -> &[[f64; 3]] {
        &self.points
    }

    /// Weights (summing to 8).
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }
}

/// Tensor-product Gauss rule on the reference square `[-1, 1]^2` (cell faces).
#[derive(Debug, Clone, PartialEq)]
pub struct QuadratureFace {
    points: Vec<[f64; 2]>,
    weights: Vec<f64>,
}

impl QuadratureFace {
    /// `n^2` points, exact for polynomials of degree `2 n - 1` in each variable.
    pub fn quad(n: usize) -> Result<Self> {
        let g = GaussLegendre::new(n)?;
        let (x, w) = (g.points(), g.weights());
        let mut points = Vec::with_capacity(n * n);
        let mut weights = Vec::with_capacity(n * n);
        for j in 0..n {
            for i in 0..n {
                points.push([x[i], x[j]]);
                weights.push(w[i] * w[j]);
            }
        }
        Ok(Self { points, weights })
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Always false: a rule has at least one point.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// Reference coordinates of the points.
    pub fn points(&self) -> &[[f64; 2]] {
        &self.points
    }

    /// Weights (summing to 4).
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exact integral of x^d over [-1, 1].
    fn monomial_integral(d: u32) -> f64 {
        if d % 2 == 1 {
            0.0
        } else {
            2.0 / (d as f64 + 1.0)
        }
    }

    #[test]
    fn known_values() {
        let g2 = GaussLegendre::new(2).unwrap();
        let a = 1.0 / 3f64.sqrt();
        assert!((g2.points()[1] - a).abs() < 1e-15);
        assert!(g2.weights().iter().all(|w| (w - 1.0).abs() < 1e-15));
        let g3 = GaussLegendre::new(3).unwrap();
        assert!((g3.points()[2] - 0.6f64.sqrt()).abs() < 1e-15);
        assert!((g3.weights()[1] - 8.0 / 9.0).abs() < 1e-15);
        assert!((g3.weights()[0] - 5.0 / 9.0).abs() < 1e-15);
        let g6 = GaussLegendre::new(6).unwrap();
        // Reference values (Abramowitz & Stegun, table 25.4).
        assert!((g6.points()[5] - 0.932_469_514_203_152).abs() < 1e-15);
        assert!((g6.weights()[5] - 0.171_324_492_379_170_3).abs() < 1e-15);
        assert!((g6.points()[3] - 0.238_619_186_083_196_9).abs() < 1e-15);
        assert!((g6.weights()[3] - 0.467_913_934_572_691).abs() < 1e-15);
    }

    #[test]
    fn exact_to_degree_2n_minus_1_and_not_beyond() {
        for n in 1..=MAX_POINTS {
            let g = GaussLegendre::new(n).unwrap();
            for d in 0..=(2 * n as u32 - 1) {
                let q: f64 = g
                    .points()
                    .iter()
                    .zip(g.weights())
                    .map(|(x, w)| w * x.powi(d as i32))
                    .sum();
                assert!((q - monomial_integral(d)).abs() < 1e-14, "n={n} d={d}: {q}");
            }
            let d = 2 * n as u32;
            let q: f64 = g
                .points()
                .iter()
                .zip(g.weights())
                .map(|(x, w)| w * x.powi(d as i32))
                .sum();
            assert!(
                (q - monomial_integral(d)).abs() > 1e-6,
                "n={n} should not be exact at degree {d}"
            );
        }
    }

    #[test]
    fn tensor_rules_integrate_mixed_monomials() {
        for n in 1..=MAX_POINTS {
            let q = Quadrature::hex(n).unwrap();
            assert_eq!(q.len(), n * n * n);
            let top = 2 * n as u32 - 1;
            for (a, b, c) in [
                (0, 0, 0),
                (top, 0, 0),
                (0, top, 1),
                (top, top, top),
                (2, 0, top.min(4)),
            ] {
                let s: f64 = q
                    .points()
                    .iter()
                    .zip(q.weights())
                    .map(|(p, w)| {
                        w * p[0].powi(a as i32) * p[1].powi(b as i32) * p[2].powi(c as i32)
                    })
                    .sum();
                let exact = monomial_integral(a) * monomial_integral(b) * monomial_integral(c);
                assert!(
                    (s - exact).abs() < 1e-13,
                    "n={n} ({a},{b},{c}): {s} vs {exact}"
                );
            }
            let f = QuadratureFace::quad(n).unwrap();
            assert_eq!(f.len(), n * n);
            let s: f64 = f
                .points()
                .iter()
                .zip(f.weights())
                .map(|(p, w)| w * p[0].powi(top as i32 - 1) * p[1].powi(top as i32))
                .sum();
            let exact = monomial_integral(top - 1) * monomial_integral(top);
            assert!((s - exact).abs() < 1e-13, "face n={n}");
        }
    }

    #[test]
    fn tensor_order_is_i_fastest() {
        let q = Quadrature::hex(2).unwrap();
        assert!(q.points()[1][0] > q.points()[0][0]);
        assert_eq!(q.points()[1][1], q.points()[0][1]);
        assert!(q.points()[2][1] > q.points()[0][1]);
        assert!(q.points()[4][2] > q.points()[0][2]);
    }

    #[test]
    fn rejects_unsupported_sizes() {
        assert_eq!(
            GaussLegendre::new(0),
            Err(FemError::UnsupportedQuadrature { points: 0 })
        );
        assert!(Quadrature::hex(7).is_err());
        assert!(QuadratureFace::quad(0).is_err());
    }
}
