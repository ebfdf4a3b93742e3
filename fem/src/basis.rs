//! Tensor-product Lagrange bases on the reference cube and square, and the faces of the cube.
//!
//! Node `(i, j, k)`, `i, j, k in 0..=order`, has index `i + (p+1) j + (p+1)^2 k` and reference
//! coordinates `(-1 + 2 i / p, -1 + 2 j / p, -1 + 2 k / p)` (see ARCHITECTURE.md).

use crate::error::{FemError, Result};

/// Largest number of nodes of a supported cell (Q2).
pub const MAX_NODES: usize = 27;

fn check_order(order: usize) -> Result<()> {
    match order {
        1 | 2 => Ok(()),
        _ => Err(FemError::UnsupportedOrder { order }),
    }
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

/// A face of the reference cube: `XMin` is `xi_0 = -1`, `XMax` is `xi_0 = +1`, and so on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Face {
    XMin,
    XMax,
    YMin,
    YMax,
    ZMin,
    ZMax,
}

impl Face {
    /// All faces, in declaration order.
    pub const ALL: [Face; 6] = [
        Face::XMin,
        Face::XMax,
        Face::YMin,
        Face::YMax,
        Face::ZMin,
        Face::ZMax,
    ];

    /// Reference direction normal to the face (0, 1 or 2).
    pub fn axis(self) -> usize {
        match self {
            Face::XMin | Face::XMax => 0,
            Face::YMin | Face::YMax => 1,
            Face::ZMin | Face::ZMax => 2,
        }
    }

    /// Sign of the outward reference normal along [`Face::axis`]: -1 for `*Min`, +1 for `*Max`.
    pub fn normal_sign(self) -> f64 {
        match self {
            Face::XMin | Face::YMin | Face::ZMin => -1.0,
            Face::XMax | Face::YMax | Face::ZMax => 1.0,
        }
    }

    /// The two in-face reference directions `(eta_1, eta_2)`, ascending.
    pub fn tangent_axes(self) -> [usize; 2] {
        match self.axis() {
            0 => [1, 2],
            1 => [0, 2],
            _ => [0, 1],
        }
    }

    /// `+1` if `dX/deta_1 x dX/deta_2` points out of the cell (for a positively oriented map),
    /// `-1` if it points in. Needed for follower loads such as pressure.
    pub fn orientation(self) -> f64 {
        // e_y x e_z = e_x, e_x x e_z = -e_y, e_x x e_y = e_z.
        let cross_sign = if self.axis() == 1 { -1.0 } else { 1.0 };
        cross_sign * self.normal_sign()
    }

    /// Cell reference coordinates of the face point with face coordinates `eta`.
    pub fn reference_point(self, eta: [f64; 2]) -> [f64; 3] {
        let mut xi = [0.0; 3];
        let [t1, t2] = self.tangent_axes();
        xi[self.axis()] = self.normal_sign();
        xi[t1] = eta[0];
        xi[t2] = eta[1];
        xi
    }

    /// Cell-local indices of the face nodes, in the tensor order of the two in-face directions
    /// (lower direction fastest), i.e. matching [`LagrangeQuad`] node order.
    pub fn local_nodes(self, order: usize) -> Result<Vec<usize>> {
        check_order(order)?;
        let p = order;
        let fixed = if self.normal_sign() < 0.0 { 0 } else { p };
        let [t1, t2] = self.tangent_axes();
        let stride = [1, p + 1, (p + 1) * (p + 1)];
        let mut out = Vec::with_capacity((p + 1) * (p + 1));
        for b in 0..=p {
            for a in 0..=p {
                out.push(fixed * stride[self.axis()] + a * stride[t1] + b * stride[t2]);
            }
        }
        Ok(out)
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
    fn face_nodes_lie_on_face_in_tensor_order() {
        for order in [1, 2] {
            let cell = LagrangeHex::new(order).unwrap().node_coords();
            let quad = LagrangeQuad::new(order).unwrap().node_coords();
            for face in Face::ALL {
                let nodes = face.local_nodes(order).unwrap();
                assert_eq!(nodes.len(), quad.len());
                for (a, &c) in nodes.iter().enumerate() {
                    assert_eq!(
                        cell[c],
                        face.reference_point(quad[a]),
                        "{face:?} order {order} node {a}"
                    );
                }
            }
        }
        assert_eq!(Face::XMin.local_nodes(1).unwrap(), vec![0, 2, 4, 6]);
        assert_eq!(Face::YMax.local_nodes(1).unwrap(), vec![2, 3, 6, 7]);
        assert_eq!(Face::ZMax.local_nodes(1).unwrap(), vec![4, 5, 6, 7]);
    }

    #[test]
    fn face_orientation_matches_cross_product() {
        for face in Face::ALL {
            let [t1, t2] = face.tangent_axes();
            let (mut e1, mut e2) = ([0.0; 3], [0.0; 3]);
            e1[t1] = 1.0;
            e2[t2] = 1.0;
            let c = [
                e1[1] * e2[2] - e1[2] * e2[1],
                e1[2] * e2[0] - e1[0] * e2[2],
                e1[0] * e2[1] - e1[1] * e2[0],
            ];
            assert_eq!(
                c[face.axis()] * face.normal_sign(),
                face.orientation(),
                "{face:?}"
            );
        }
    }

    #[test]
    fn rejects_unsupported_orders() {
        assert_eq!(
            LagrangeHex::new(3),
            Err(FemError::UnsupportedOrder { order: 3 })
        );
        assert!(LagrangeQuad::new(0).is_err());
        assert!(Face::XMin.local_nodes(4).is_err());
        let b = LagrangeHex::new(1).unwrap();
        assert!(b.eval([0.0; 3], &mut [0.0; 7], &mut [[0.0; 3]; 8]).is_err());
    }
}
