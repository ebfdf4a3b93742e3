//! Tensor-product Lagrange bases on the reference cube and square.
//!
//! Node `(i, j, k)`, `i, j, k in 0..=order`, has index `i + (p+1) j + (p+1)^2 k` and reference
//! coordinates `(-1 + 2 i / p, -1 + 2 j / p, -1 + 2 k / p)` (see ARCHITECTURE.md).

use crate::error::{FemError, Result};
use crate::reference::CellKind;

fn check_order(order: usize) -> Result<()> {
    CellKind::from_order(order).map(|_| ())
}

fn check_len(what: &'static str, expected: usize, got: usize) -> Result<()> {
    if expected == got {
        Ok(())
    } else {
        Err(FemError::LengthMismatch {
            what,
            expected,
            got,
        })
    }
}

/// Values and derivatives of the 1D Lagrange polynomials of `order` (1 or 2, validated by the
/// callers) on the equispaced nodes of `[-1, 1]`; entries beyond `order` are zero.
#[inline(always)]
pub(crate) fn lagrange_1d(order: usize, x: f64) -> ([f64; 3], [f64; 3]) {
    if order == 1 {
        ([0.5 * (1.0 - x), 0.5 * (1.0 + x), 0.0], [-0.5, 0.5, 0.0])
    } else {
        (
            [0.5 * x * (x - 1.0), 1.0 - x * x, 0.5 * x * (x + 1.0)],
            [x - 0.5, -2.0 * x, x + 0.5],
        )
    }
}

/// Lagrange basis of order 1 (8 nodes) or 2 (27 nodes) on the reference cube `[-1, 1]^3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LagrangeHex {
    order: usize,
}

impl LagrangeHex {
    /// Basis of `order` 1 or 2.
    pub fn new(order: usize) -> Result<Self> {
        check_order(order)?;
        Ok(Self { order })
    }

    /// Polynomial order per direction.
    pub fn order(&self) -> usize {
        self.order
    }

    /// `(order + 1)^3`.
    pub fn n_nodes(&self) -> usize {
        (self.order + 1).pow(3)
    }

    /// Reference coordinates of the nodes, in lexicographic order.
    pub fn node_coords(&self) -> Vec<[f64; 3]> {
        let p = self.order;
        let c = |i: usize| -1.0 + 2.0 * i as f64 / p as f64;
        let mut out = Vec::with_capacity(self.n_nodes());
        for k in 0..=p {
            for j in 0..=p {
                for i in 0..=p {
                    out.push([c(i), c(j), c(k)]);
                }
            }
        }
        out
    }

    /// Values `N_a(xi)` and reference gradients `dN_a/dxi` at `xi`; both buffers hold `n_nodes`
    /// entries and are overwritten.
    pub fn eval(&self, xi: [f64; 3], values: &mut [f64], grads: &mut [[f64; 3]]) -> Result<()> {
        let n = self.n_nodes();
        check_len("LagrangeHex::eval values", n, values.len())?;
        check_len("LagrangeHex::eval grads", n, grads.len())?;
        let p = self.order;
        let (nx, dx) = lagrange_1d(p, xi[0]);
        let (ny, dy) = lagrange_1d(p, xi[1]);
        let (nz, dz) = lagrange_1d(p, xi[2]);
        let mut a = 0;
        for k in 0..=p {
            for j in 0..=p {
                for i in 0..=p {
                    values[a] = nx[i] * ny[j] * nz[k];
                    grads[a] = [
                        dx[i] * ny[j] * nz[k],
                        nx[i] * dy[j] * nz[k],
                        nx[i] * ny[j] * dz[k],
                    ];
                    a += 1;
                }
            }
        }
        Ok(())
    }
}

/// Lagrange basis of order 1 (4 nodes) or 2 (9 nodes) on the reference square `[-1, 1]^2`
/// (cell faces); node `(i, j)` has index `i + (p+1) j`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LagrangeQuad {
    order: usize,
}

impl LagrangeQuad {
    /// Basis of `order` 1 or 2.
    pub fn new(order: usize) -> Result<Self> {
        check_order(order)?;
        Ok(Self { order })
    }

    /// Polynomial order per direction.
    pub fn order(&self) -> usize {
        self.order
    }

    /// `(order + 1)^2`.
    pub fn n_nodes(&self) -> usize {
        (self.order + 1).pow(2)
    }

    /// Reference coordinates of the nodes, in lexicographic order.
    pub fn node_coords(&self) -> Vec<[f64; 2]> {
        let p = self.order;
        let c = |i: usize| -1.0 + 2.0 * i as f64 / p as f64;
        (0..=p)
            .flat_map(|j| (0..=p).map(move |i| [c(i), c(j)]))
            .collect()
    }

    /// Values and reference gradients at `eta`; both buffers hold `n_nodes` entries.
    pub fn eval(&self, eta: [f64; 2], values: &mut [f64], grads: &mut [[f64; 2]]) -> Result<()> {
        let n = self.n_nodes();
        check_len("LagrangeQuad::eval values", n, values.len())?;
        check_len("LagrangeQuad::eval grads", n, grads.len())?;
        let p = self.order;
        let (nx, dx) = lagrange_1d(p, eta[0]);
        let (ny, dy) = lagrange_1d(p, eta[1]);
        let mut a = 0;
        for j in 0..=p {
            for i in 0..=p {
                values[a] = nx[i] * ny[j];
                grads[a] = [dx[i] * ny[j], nx[i] * dy[j]];
                a += 1;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kronecker_delta_and_partition_of_unity() {
        for order in [1, 2] {
            let b = LagrangeHex::new(order).unwrap();
            let n = b.n_nodes();
            let (mut v, mut g) = (vec![0.0; n], vec![[0.0; 3]; n]);
            for (a, x) in b.node_coords().iter().enumerate() {
                b.eval(*x, &mut v, &mut g).unwrap();
                for (c, vc) in v.iter().enumerate() {
                    assert_eq!(
                        *vc,
                        if a == c { 1.0 } else { 0.0 },
                        "order {order} node {a} basis {c}"
                    );
                }
            }
            for xi in [[0.3, -0.7, 0.1], [-1.0, 0.25, 0.9], [0.0, 0.0, 0.0]] {
                b.eval(xi, &mut v, &mut g).unwrap();
                assert!((v.iter().sum::<f64>() - 1.0).abs() < 1e-15);
                for d in 0..3 {
                    assert!(g.iter().map(|gr| gr[d]).sum::<f64>().abs() < 1e-14);
                }
                // Linear completeness: sum_a N_a X_a = xi and sum_a X_a (x) dN_a = I.
                let nodes = b.node_coords();
                for d in 0..3 {
                    let s: f64 = v.iter().zip(&nodes).map(|(n, x)| n * x[d]).sum();
                    assert!((s - xi[d]).abs() < 1e-15);
                    for e in 0..3 {
                        let s: f64 = g.iter().zip(&nodes).map(|(gr, x)| gr[e] * x[d]).sum();
                        assert!((s - if d == e { 1.0 } else { 0.0 }).abs() < 1e-14);
                    }
                }
            }
        }
    }

    #[test]
    fn gradients_match_finite_differences() {
        for order in [1, 2] {
            let b = LagrangeHex::new(order).unwrap();
            let n = b.n_nodes();
            let (mut v, mut g) = (vec![0.0; n], vec![[0.0; 3]; n]);
            let (mut vp, mut vm, mut gd) = (vec![0.0; n], vec![0.0; n], vec![[0.0; 3]; n]);
            let xi = [0.21, -0.43, 0.67];
            b.eval(xi, &mut v, &mut g).unwrap();
            let h = 1e-6;
            for d in 0..3 {
                let (mut xp, mut xm) = (xi, xi);
                xp[d] += h;
                xm[d] -= h;
                b.eval(xp, &mut vp, &mut gd).unwrap();
                b.eval(xm, &mut vm, &mut gd).unwrap();
                for a in 0..n {
                    assert!(((vp[a] - vm[a]) / (2.0 * h) - g[a][d]).abs() < 1e-9);
                }
            }
        }
    }

    #[test]
    fn quad_basis_kronecker_and_unity() {
        for order in [1, 2] {
            let b = LagrangeQuad::new(order).unwrap();
            let n = b.n_nodes();
            let (mut v, mut g) = (vec![0.0; n], vec![[0.0; 2]; n]);
            for (a, x) in b.node_coords().iter().enumerate() {
                b.eval(*x, &mut v, &mut g).unwrap();
                for (c, vc) in v.iter().enumerate() {
                    assert_eq!(*vc, if a == c { 1.0 } else { 0.0 });
                }
            }
            b.eval([0.37, -0.11], &mut v, &mut g).unwrap();
            assert!((v.iter().sum::<f64>() - 1.0).abs() < 1e-15);
        }
    }

    #[test]
    fn rejects_unsupported_orders() {
        assert_eq!(
            LagrangeHex::new(3),
            Err(FemError::UnsupportedOrder { order: 3 })
        );
        assert!(LagrangeQuad::new(0).is_err());
        let b = LagrangeHex::new(1).unwrap();
        assert!(b.eval([0.0; 3], &mut [0.0; 7], &mut [[0.0; 3]; 8]).is_err());
    }
}
