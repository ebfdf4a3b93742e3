//! Surface kernels on cell faces: nodal forces of dead-load tractions and face areas.
//!
//! A face is given by the reference coordinates of its `(order + 1)^2` nodes in the face node order
//! of ARCHITECTURE.md (see [`crate::face_local_nodes`]); the surface element is
//! `dA = |dX/deta_1 x dX/deta_2| deta_1 deta_2`, so the orientation of the parametrisation does not
//! matter for the quantities computed here.

use crate::basis::LagrangeQuad;
use crate::error::{FemError, Result};
use crate::load::Load;
use crate::quadrature::QuadratureFace;

/// Precomputed face integration for one Lagrange order and one Gauss rule.
#[derive(Debug, Clone)]
pub struct FaceKernel {
    basis: LagrangeQuad,
    weights: Vec<f64>,
    /// `values[q * n + a]`.
    values: Vec<f64>,
    /// `grads[q * n + a] = dN_a/deta`.
    grads: Vec<[f64; 2]>,
}

impl FaceKernel {
    /// Kernel for Lagrange `order` (1 or 2) with a `points_per_direction`^2 Gauss rule (`1..=6`).
    pub fn new(order: usize, points_per_direction: usize) -> Result<Self> {
        let basis = LagrangeQuad::new(order)?;
        let rule = QuadratureFace::quad(points_per_direction)?;
        let n = basis.n_nodes();
        let mut values = vec![0.0; rule.len() * n];
        let mut grads = vec![[0.0; 2]; rule.len() * n];
        for (q, eta) in rule.points().iter().enumerate() {
            basis.eval(
                *eta,
                &mut values[q * n..(q + 1) * n],
                &mut grads[q * n..(q + 1) * n],
            )?;
        }
        Ok(Self {
            basis,
            weights: rule.weights().to_vec(),
            values,
            grads,
        })
    }

    /// Nodes per face (4 or 9).
    pub fn n_nodes(&self) -> usize {
        self.basis.n_nodes()
    }

    /// Quadrature points per face.
    pub fn n_qp(&self) -> usize {
        self.weights.len()
    }

    /// Weights of the rule's points (reference face), in point order.
    pub fn qp_weights(&self) -> &[f64] {
        &self.weights
    }

    /// `N_a` at the rule's points, `[q * n_nodes + a]` (what the device face kernel takes).
    pub fn qp_values(&self) -> &[f64] {
        &self.values
    }

    /// `dN_a/deta` at the rule's points, `[q * n_nodes + a]`.
    pub fn qp_reference_gradients(&self) -> &[[f64; 2]] {
        &self.grads
    }

    /// The reference positions of the rule's points on the face with nodes at `face_x`, in point
    /// order: where a traction that is a field is evaluated (the bits [`Self::nodal_forces`]
    /// evaluates it at).
    pub fn quadrature_points(&self, face_x: &[[f64; 3]]) -> Result<Vec<[f64; 3]>> {
        let mut points = Vec::with_capacity(self.n_qp());
        self.for_each_qp(face_x, |_, _, xq| points.push(xq))?;
        Ok(points)
    }

    /// Calls `body(w dA, N, X)` at every quadrature point.
    fn for_each_qp(
        &self,
        face_x: &[[f64; 3]],
        mut body: impl FnMut(f64, &[f64], [f64; 3]),
    ) -> Result<()> {
        let n = self.n_nodes();
        if face_x.len() != n {
            return Err(FemError::LengthMismatch {
                what: "face coordinates",
                expected: n,
                got: face_x.len(),
            });
        }
        let shape = self.values.chunks_exact(n).zip(self.grads.chunks_exact(n));
        for (&w, (nv, dn)) in self.weights.iter().zip(shape) {
            let (mut t1, mut t2, mut xq) = ([0.0; 3], [0.0; 3], [0.0; 3]);
            for a in 0..n {
                for d in 0..3 {
                    t1[d] += dn[a][0] * face_x[a][d];
                    t2[d] += dn[a][1] * face_x[a][d];
                    xq[d] += nv[a] * face_x[a][d];
                }
            }
            let c = [
                t1[1] * t2[2] - t1[2] * t2[1],
                t1[2] * t2[0] - t1[0] * t2[2],
                t1[0] * t2[1] - t1[1] * t2[0],
            ];
            let da = (c[0] * c[0] + c[1] * c[1] + c[2] * c[2]).sqrt();
            body(w * da, nv, xq);
        }
        Ok(())
    }

    /// Reference area of the face.
    pub fn area(&self, face_x: &[[f64; 3]]) -> Result<f64> {
        let mut area = 0.0;
        self.for_each_qp(face_x, |wda, _, _| area += wda)?;
        Ok(area)
    }

    /// Nodal forces `f_a = int t(X) N_a dA` of a dead-load traction `t` per unit reference area
    /// (overwrites `f`, length `n_nodes`). These enter the right-hand side: Newton solves
    /// `K du = -(r - f)`.
    pub fn nodal_forces(
        &self,
        face_x: &[[f64; 3]],
        traction: Load<'_>,
        f: &mut [[f64; 3]],
    ) -> Result<()> {
        let n = self.n_nodes();
        if f.len() != n {
            return Err(FemError::LengthMismatch {
                what: "face nodal forces",
                expected: n,
                got: f.len(),
            });
        }
        f.fill([0.0; 3]);
        if let Load::None = traction {
            return self.for_each_qp(face_x, |_, _, _| ());
        }
        self.for_each_qp(face_x, |wda, nv, xq| {
            let t = match traction {
                Load::Constant(t) => t,
                Load::Field(field) => field(xq),
                Load::None => [0.0; 3],
            };
            for (fa, na) in f.iter_mut().zip(nv) {
                for d in 0..3 {
                    fa[d] += wda * na * t[d];
                }
            }
        })
    }
}

impl FaceKernel {
    /// Residual and tangent of a follower pressure `p` (per unit current area, pushing against
    /// the outward normal) on a face whose nodes are at the current positions `face_x`:
    /// `r_a = s p int N_a (x,1 x x,2) deta` (the residual is internal minus external force, and
    /// the external force is `-p n da`), with `s` = `orientation` (`Face::orientation`, +1 where
    /// `x,1 x x,2` points out of the cell). The tangent block `k[a n + b][3 i + k] =
    /// d r_{a,i} / d x_{b,k}` (not symmetric in general). Overwrites `r` and `k`.
    pub fn pressure_residual_tangent(
        &self,
        face_x: &[[f64; 3]],
        p: f64,
        orientation: f64,
        r: &mut [[f64; 3]],
        mut k: Option<&mut [[f64; 9]]>,
    ) -> Result<()> {
        let n = self.n_nodes();
        for (what, expected, got) in [
            ("face coordinates", n, face_x.len()),
            ("face residual", n, r.len()),
            ("face tangent", n * n, k.as_ref().map_or(n * n, |k| k.len())),
        ] {
            if expected != got {
                return Err(FemError::LengthMismatch {
                    what,
                    expected,
                    got,
                });
            }
        }
        r.fill([0.0; 3]);
        if let Some(k) = k.as_deref_mut() {
            k.fill([0.0; 9]);
        }
        let skew = |v: [f64; 3]| [0.0, -v[2], v[1], v[2], 0.0, -v[0], -v[1], v[0], 0.0];
        let shape = self.values.chunks_exact(n).zip(self.grads.chunks_exact(n));
        for (&w, (nv, dn)) in self.weights.iter().zip(shape) {
            let (mut t1, mut t2) = ([0.0; 3], [0.0; 3]);
            for a in 0..n {
                for d in 0..3 {
                    t1[d] += dn[a][0] * face_x[a][d];
                    t2[d] += dn[a][1] * face_x[a][d];
                }
            }
            let c = [
                t1[1] * t2[2] - t1[2] * t2[1],
                t1[2] * t2[0] - t1[0] * t2[2],
                t1[0] * t2[1] - t1[1] * t2[0],
            ];
            let scale = orientation * p * w;
            for a in 0..n {
                for d in 0..3 {
                    r[a][d] += scale * nv[a] * c[d];
                }
            }
            if let Some(k) = k.as_deref_mut() {
                // d(t1 x t2)/dx_b = N_b,1 (-[t2]x) + N_b,2 [t1]x
                let (s1, s2) = (skew(t1), skew(t2));
                for a in 0..n {
                    for b in 0..n {
                        let block = &mut k[a * n + b];
                        let f = scale * nv[a];
                        for e in 0..9 {
                            block[e] += f * (dn[b][1] * s1[e] - dn[b][0] * s2[e]);
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::basis::LagrangeHex;
    use crate::reference::{face_local_nodes, CellKind, Face};

    /// Face nodes of the parallelogram spanned by `e1`, `e2` from corner `o`.
    fn parallelogram(order: usize, o: [f64; 3], e1: [f64; 3], e2: [f64; 3]) -> Vec<[f64; 3]> {
        LagrangeQuad::new(order)
            .unwrap()
            .node_coords()
            .iter()
            .map(|&[s, t]| {
                let (a, b) = (0.5 * (s + 1.0), 0.5 * (t + 1.0));
                std::array::from_fn(|d| o[d] + a * e1[d] + b * e2[d])
            })
            .collect()
    }

    #[test]
    fn constant_traction_on_flat_face_sums_to_traction_times_area() {
        let (e1, e2) = ([2.0, 0.5, 0.0], [0.3, 1.5, 0.0]);
        let exact_area = 2.0 * 1.5 - 0.5 * 0.3;
        for order in [1, 2] {
            let fk = FaceKernel::new(order, order + 1).unwrap();
            let x = parallelogram(order, [1.0, -1.0, 4.0], e1, e2);
            let area = fk.area(&x).unwrap();
            assert!((area - exact_area).abs() < 1e-13, "order {order}: {area}");
            let t = [0.7, -1.3, 2.1];
            let mut f = vec![[0.0; 3]; fk.n_nodes()];
            fk.nodal_forces(&x, Load::Constant(t), &mut f).unwrap();
            for d in 0..3 {
                let total: f64 = f.iter().map(|fa| fa[d]).sum();
                assert!(
                    (total - t[d] * exact_area).abs() < 1e-12,
                    "order {order} dir {d}"
                );
            }
            // Moment balance: sum_a X_a f_a = t int X dA = t * area * centroid.
            let centroid: [f64; 3] =
                std::array::from_fn(|d| 1.0 * [1.0, -1.0, 4.0][d] + 0.5 * (e1[d] + e2[d]));
            let m: f64 = f.iter().zip(&x).map(|(fa, xa)| fa[0] * xa[1]).sum();
            assert!(
                (m - t[0] * exact_area * centroid[1]).abs() < 1e-12,
                "order {order}"
            );
        }
    }

    #[test]
    fn linear_traction_field_is_integrated_exactly() {
        // Unit square z = 0, t = (x, 0, 0): total force int x dA = 1/2.
        let fk = FaceKernel::new(2, 3).unwrap();
        let x = parallelogram(2, [0.0; 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]);
        let field = |p: [f64; 3]| [p[0], 0.0, 0.0];
        let mut f = vec![[0.0; 3]; 9];
        fk.nodal_forces(&x, Load::Field(&field), &mut f).unwrap();
        let total: f64 = f.iter().map(|fa| fa[0]).sum();
        assert!((total - 0.5).abs() < 1e-14);
    }

    #[test]
    fn reference_cell_faces_have_area_four() {
        let cell = LagrangeHex::new(2).unwrap().node_coords();
        let fk = FaceKernel::new(2, 3).unwrap();
        for face in Face::ALL {
            let x: Vec<[f64; 3]> = face_local_nodes(CellKind::Hex27, face)
                .iter()
                .map(|&c| cell[c])
                .collect();
            assert!((fk.area(&x).unwrap() - 4.0).abs() < 1e-14, "{face:?}");
        }
    }

    #[test]
    fn rejects_bad_lengths() {
        let fk = FaceKernel::new(1, 2).unwrap();
        assert!(fk.area(&[[0.0; 3]; 3]).is_err());
        let mut f = vec![[0.0; 3]; 5];
        assert!(fk.nodal_forces(&[[0.0; 3]; 4], Load::None, &mut f).is_err());
    }

    /// The follower pressure's tangent is the derivative of its residual (central differences on
    /// a distorted Q1 and Q2 face), and on a flat unit square it is `p` times the area along the
    /// normal.
    #[test]
    fn pressure_tangent_matches_finite_differences() {
        for order in [1, 2] {
            let fk = FaceKernel::new(order, order + 1).unwrap();
            let n = fk.n_nodes();
            let flat = parallelogram(order, [0.0; 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]);
            let mut r = vec![[0.0; 3]; n];
            fk.pressure_residual_tangent(&flat, 2.0, 1.0, &mut r, None)
                .unwrap();
            let total: [f64; 3] = (0..3)
                .map(|d| r.iter().map(|ra| ra[d]).sum::<f64>())
                .collect::<Vec<_>>()
                .try_into()
                .unwrap();
            assert!(
                (total[2] - 2.0).abs() < 1e-13 && total[0].abs() < 1e-13,
                "{total:?}"
            );
            let x: Vec<[f64; 3]> = flat
                .iter()
                .enumerate()
                .map(|(a, p)| {
                    let s = (a as f64 * 0.731).sin();
                    [
                        p[0] + 0.1 * s,
                        p[1] - 0.07 * s * s,
                        p[2] + 0.2 * p[0] * p[1] + 0.05 * s,
                    ]
                })
                .collect();
            let mut k = vec![[0.0; 9]; n * n];
            fk.pressure_residual_tangent(&x, 1.7, -1.0, &mut r, Some(&mut k))
                .unwrap();
            let h = 1e-6;
            for b in 0..n {
                for kk in 0..3 {
                    let (mut xp, mut xm) = (x.clone(), x.clone());
                    xp[b][kk] += h;
                    xm[b][kk] -= h;
                    let (mut rp, mut rm) = (vec![[0.0; 3]; n], vec![[0.0; 3]; n]);
                    fk.pressure_residual_tangent(&xp, 1.7, -1.0, &mut rp, None)
                        .unwrap();
                    fk.pressure_residual_tangent(&xm, 1.7, -1.0, &mut rm, None)
                        .unwrap();
                    for a in 0..n {
                        for i in 0..3 {
                            let fd = (rp[a][i] - rm[a][i]) / (2.0 * h);
                            let exact = k[a * n + b][3 * i + kk];
                            assert!(
                                (fd - exact).abs() < 1e-7,
                                "order {order} a {a} b {b} ({i},{kk}): fd {fd} vs {exact}"
                            );
                        }
                    }
                }
            }
        }
    }
}
