//! Element kernel checks: tangent against finite differences of the residual, residual against
//! finite differences of the energy, invariance under rigid motions, patch tests, divergence
//! theorem with the face kernel, geometry errors and error norms.

use nalgebra::{Matrix3, Rotation3, Vector3};

use super::*;
use crate::face::FaceKernel;
use crate::material::{split_tangent, Moduli, SplitTangent};
use crate::reference::{face_local_nodes, CellKind, Face};

pub(super) struct Rng(pub(super) u64);

impl Rng {
    /// splitmix64 mapped to `[-1, 1)`.
    pub(super) fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

/// Nodes of a distorted cell: the reference nodes mapped by a smooth, orientation-preserving,
/// non-affine map, then perturbed.
pub(super) fn distorted_cell(order: usize, rng: &mut Rng) -> Vec<[f64; 3]> {
    LagrangeHex::new(order)
        .unwrap()
        .node_coords()
        .iter()
        .map(|&[a, b, c]| {
            [
                1.0 + 0.9 * a + 0.2 * b + 0.1 * a * b + 0.05 * rng.next(),
                -2.0 + 0.1 * a + 1.1 * b + 0.15 * c * c + 0.05 * rng.next(),
                0.5 + 0.05 * a + 0.1 * b * c + 0.8 * c + 0.05 * rng.next(),
            ]
        })
        .collect()
}

pub(super) fn random_displacement(n: usize, scale: f64, rng: &mut Rng) -> Vec<[f64; 3]> {
    (0..n)
        .map(|_| [scale * rng.next(), scale * rng.next(), scale * rng.next()])
        .collect()
}

pub(super) fn all_materials() -> Vec<Material> {
    let m = Moduli::from_young_poisson(10.0, 0.3).unwrap();
    vec![
        Material::linear(m),
        Material::saint_venant_kirchhoff(m),
        Material::neo_hookean(m),
        Material::decoupled_neo_hookean(m),
        Material::mooney_rivlin(m, 0.3).unwrap(),
    ]
}

fn residual(
    kernel: &ElementKernel,
    x: &[[f64; 3]],
    u: &[[f64; 3]],
    mat: &Material,
    load: Load,
) -> Vec<[f64; 3]> {
    let mut r = vec![[0.0; 3]; kernel.n_nodes()];
    kernel.residual(x, u, mat, load, &mut r).unwrap();
    r
}

#[test]
fn tangent_matches_finite_differences_of_residual() {
    let mut rng = Rng(42);
    for order in [1, 2] {
        let kernel = ElementKernel::new(order, order + 1).unwrap();
        let n = kernel.n_nodes();
        let x = distorted_cell(order, &mut rng);
        for mat in all_materials() {
            if order == 2
                && !matches!(
                    mat,
                    Material::NeoHookean { .. } | Material::MooneyRivlin { .. }
                )
            {
                continue;
            }
            let u = random_displacement(n, 0.08, &mut rng);
            let mut r = vec![[0.0; 3]; n];
            let mut k = vec![[0.0; 9]; n * n];
            kernel
                .residual_tangent(&x, &u, &mat, Load::None, &mut r, Some(&mut k))
                .unwrap();
            assert_eq!(
                r,
                residual(&kernel, &x, &u, &mat, Load::None),
                "{}",
                mat.name()
            );
            let h = 1e-6;
            let (mut num, mut den) = (0.0f64, 0.0f64);
            for b in 0..n {
                for kk in 0..3 {
                    let (mut up, mut um) = (u.clone(), u.clone());
                    up[b][kk] += h;
                    um[b][kk] -= h;
                    let rp = residual(&kernel, &x, &up, &mat, Load::None);
                    let rm = residual(&kernel, &x, &um, &mat, Load::None);
                    for a in 0..n {
                        for i in 0..3 {
                            let fd = (rp[a][i] - rm[a][i]) / (2.0 * h);
                            let an = k[a * n + b][3 * i + kk];
                            num = num.max((fd - an).abs());
                            den = den.max(an.abs());
                        }
                    }
                }
            }
            assert!(
                num / den < 1e-6,
                "order {order} {}: rel err {:e}",
                mat.name(),
                num / den
            );
        }
    }
}

#[test]
fn split_contraction_equals_general_contraction() {
    // The fast path for neo-Hookean / linear must agree with contracting the full 9x9 tangent.
    let mut rng = Rng(21);
    let m = Moduli::from_young_poisson(10.0, 0.3).unwrap();
    let h = Matrix3::from_fn(|_, _| 0.2 * rng.next());
    let g: [[f64; 3]; 27] = std::array::from_fn(|_| [rng.next(), rng.next(), rng.next()]);
    for mat in [Material::neo_hookean(m), Material::linear(m)] {
        let SplitTangent { p, finv_t, c } = split_tangent(&mat, &h).unwrap().unwrap();
        let (p_full, a) = mat.stress_tangent(&h).unwrap();
        assert!((p - p_full).norm() < 1e-13 * p.norm());
        let hg: [[f64; 3]; 27] = std::array::from_fn(|q| (finv_t * Vector3::from(g[q])).into());
        let (mut k_split, mut k_full) = (vec![[0.0; 9]; 27 * 27], vec![[0.0; 9]; 27 * 27]);
        add_split_tangent(&mut k_split, [0.7 * c[0], 0.7 * c[1], 0.7 * c[2]], &g, &hg);
        add_material_tangent(&mut k_full, a.as_slice().try_into().unwrap(), 0.7, &g);
        let scale = k_full.iter().flatten().fold(0.0f64, |s, v| s.max(v.abs()));
        for (ks, kf) in k_split.iter().flatten().zip(k_full.iter().flatten()) {
            assert!((ks - kf).abs() < 1e-13 * scale, "{}", mat.name());
        }
    }
}

#[test]
fn residual_is_gradient_of_strain_energy() {
    let mut rng = Rng(5);
    for order in [1, 2] {
        let kernel = ElementKernel::new(order, order + 1).unwrap();
        let n = kernel.n_nodes();
        let x = distorted_cell(order, &mut rng);
        let mat = Material::decoupled_neo_hookean(Moduli::from_young_poisson(10.0, 0.3).unwrap());
        let u = random_displacement(n, 0.1, &mut rng);
        let r = residual(&kernel, &x, &u, &mat, Load::None);
        let h = 1e-6;
        let mut worst = 0.0f64;
        let rmax = r.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs()));
        for a in 0..n {
            for i in 0..3 {
                let (mut up, mut um) = (u.clone(), u.clone());
                up[a][i] += h;
                um[a][i] -= h;
                let fd = (kernel.strain_energy(&x, &up, &mat).unwrap()
                    - kernel.strain_energy(&x, &um, &mat).unwrap())
                    / (2.0 * h);
                worst = worst.max((fd - r[a][i]).abs());
            }
        }
        assert!(worst / rmax < 1e-6, "order {order}: {:e}", worst / rmax);
    }
}

#[test]
fn rigid_motions_give_zero_residual() {
    let mut rng = Rng(9);
    let rot = Rotation3::from_axis_angle(
        &nalgebra::Unit::new_normalize(Vector3::new(0.3, -0.5, 0.8)),
        1.1,
    );
    for order in [1, 2] {
        let kernel = ElementKernel::new(order, order + 1).unwrap();
        let x = distorted_cell(order, &mut rng);
        let shift = [0.3, -1.2, 2.5];
        let translation = vec![shift; x.len()];
        let rotation: Vec<[f64; 3]> = x
            .iter()
            .map(|xa| {
                let p = Vector3::from(*xa);
                let q = rot * p + Vector3::from(shift);
                [q[0] - p[0], q[1] - p[1], q[2] - p[2]]
            })
            .collect();
        for mat in all_materials() {
            let r = residual(&kernel, &x, &translation, &mat, Load::None);
            assert!(
                r.iter().flatten().all(|v| v.abs() < 1e-12),
                "{} translation",
                mat.name()
            );
            if !matches!(mat, Material::Linear { .. }) {
                // Objectivity: a finite rotation is stress free for every finite-strain model.
                let r = residual(&kernel, &x, &rotation, &mat, Load::None);
                assert!(
                    r.iter().flatten().all(|v| v.abs() < 1e-11),
                    "{} rotation: {r:?}",
                    mat.name()
                );
                assert!(kernel.strain_energy(&x, &rotation, &mat).unwrap().abs() < 1e-12);
            }
        }
    }
}

/// Displacement `u(X) = G X + c` at the nodes.
pub(super) fn linear_field(x: &[[f64; 3]], g: &Matrix3<f64>) -> Vec<[f64; 3]> {
    x.iter()
        .map(|xa| {
            let v = g * Vector3::from(*xa);
            [v[0] + 0.1, v[1] - 0.2, v[2] + 0.3]
        })
        .collect()
}

#[test]
fn patch_test_linear_field_gives_constant_stress() {
    let mut rng = Rng(13);
    let g = Matrix3::new(0.02, -0.01, 0.015, 0.005, -0.03, 0.01, 0.012, 0.007, 0.025);
    let f = Matrix3::identity() + g;
    for order in [1, 2] {
        let kernel = ElementKernel::new(order, order + 1).unwrap();
        let x = distorted_cell(order, &mut rng);
        let u = linear_field(&x, &g);
        for mat in all_materials() {
            let expected = mat.cauchy(&g).unwrap();
            if let Material::Linear { lambda, mu } = mat {
                let eps = (g + g.transpose()) * 0.5;
                let hooke = eps * (2.0 * mu) + Matrix3::identity() * (lambda * eps.trace());
                assert!((expected - hooke).norm() < 1e-14);
            }
            let mut at_points = vec![Matrix3::zeros(); kernel.n_qp()];
            kernel
                .cauchy_at_points(&x, &u, &mat, &mut at_points)
                .unwrap();
            for (q, s) in at_points.iter().enumerate() {
                assert!(
                    (s - expected).norm() < 1e-12 * expected.norm(),
                    "{} order {order} qp {q}",
                    mat.name()
                );
            }
            let cf = kernel.cell_fields(&x, &u, &mat).unwrap();
            let e6 = [
                expected[(0, 0)],
                expected[(1, 1)],
                expected[(2, 2)],
                expected[(0, 1)],
                expected[(1, 2)],
                expected[(0, 2)],
            ];
            for (c, (got, want)) in cf.cauchy.iter().zip(&e6).enumerate() {
                assert!(
                    (got - want).abs() < 1e-12 * expected.norm(),
                    "{} comp {c}",
                    mat.name()
                );
            }
            assert!((cf.von_mises - von_mises(&expected)).abs() < 1e-12 * expected.norm());
            assert!((cf.j - f.determinant()).abs() < 1e-13);
            assert!(
                (cf.energy_density - mat.energy(&g).unwrap()).abs()
                    < 1e-12 * mat.energy(&g).unwrap()
            );
            let energy = kernel.strain_energy(&x, &u, &mat).unwrap();
            let volume = kernel.volume(&x).unwrap();
            assert!((cf.strain_energy - energy).abs() < 1e-13 * energy.abs());
            assert!((cf.strain_energy - cf.energy_density * volume).abs() < 1e-12 * energy.abs());
        }
    }
}

#[test]
fn constant_stress_residual_equals_face_tractions() {
    // Parallelepiped cell (planar faces) with a displaced Q2 interior node: for a linear field the
    // internal forces int P grad N_a dV equal the nodal forces of the traction P N on the faces.
    let a = Matrix3::new(1.2, 0.3, 0.1, -0.2, 0.9, 0.2, 0.1, 0.15, 1.1);
    let g = Matrix3::new(0.02, -0.01, 0.015, 0.005, -0.03, 0.01, 0.012, 0.007, 0.025);
    let mat = Material::neo_hookean(Moduli::from_young_poisson(10.0, 0.3).unwrap());
    let p = mat.stress(&g).unwrap();
    for order in [1, 2] {
        let kernel = ElementKernel::new(order, order + 1).unwrap();
        let mut x: Vec<[f64; 3]> = LagrangeHex::new(order)
            .unwrap()
            .node_coords()
            .iter()
            .map(|xi| (a * Vector3::from(*xi)).into())
            .collect();
        if order == 2 {
            x[13] = [0.05, -0.04, 0.03];
        }
        let u = linear_field(&x, &g);
        let r = residual(&kernel, &x, &u, &mat, Load::None);
        let fk = FaceKernel::new(order, order + 1).unwrap();
        let mut total = vec![[0.0; 3]; x.len()];
        for face in Face::ALL {
            let nodes = face_local_nodes(CellKind::from_order(order).unwrap(), face);
            let fx: Vec<[f64; 3]> = nodes.iter().map(|&c| x[c]).collect();
            // Outward unit normal of the planar face in the reference configuration.
            let n_ref = a.try_inverse().unwrap().transpose()
                * Vector3::from(face.reference_point([0.0, 0.0]));
            let n_out = n_ref.normalize();
            let t = p * n_out;
            let mut f = vec![[0.0; 3]; nodes.len()];
            fk.nodal_forces(&fx, Load::Constant([t[0], t[1], t[2]]), &mut f)
                .unwrap();
            for (c, fa) in nodes.iter().zip(&f) {
                for d in 0..3 {
                    total[*c][d] += fa[d];
                }
            }
        }
        for (ra, ta) in r.iter().zip(&total) {
            for d in 0..3 {
                assert!(
                    (ra[d] - ta[d]).abs() < 1e-12,
                    "order {order}: {r:?} vs {total:?}"
                );
            }
        }
        assert!((kernel.volume(&x).unwrap() - 8.0 * a.determinant()).abs() < 1e-13);
    }
}

#[test]
fn constant_body_force_integrates_to_force_times_volume() {
    let mut rng = Rng(17);
    for order in [1, 2] {
        // order + 3 points integrate det(dX/dxi) * X exactly on these cells (degree <= 7 per variable).
        let kernel = ElementKernel::new(order, order + 3).unwrap();
        let x = distorted_cell(order, &mut rng);
        let vol = kernel.volume(&x).unwrap();
        let zero = vec![[0.0; 3]; x.len()];
        let mat = all_materials()[2];
        let b = [1.0, -2.0, 0.5];
        let r = residual(&kernel, &x, &zero, &mat, Load::Constant(b));
        let field = |_: [f64; 3]| b;
        assert_eq!(r, residual(&kernel, &x, &zero, &mat, Load::Field(&field)));
        for d in 0..3 {
            let s: f64 = r.iter().map(|ra| ra[d]).sum();
            assert!((s + b[d] * vol).abs() < 1e-13, "order {order} dir {d}");
        }
        // A field linear in X: int X_0 dV = vol * centroid_0, centroid = int X dV / vol.
        let fx = |p: [f64; 3]| [p[0], 0.0, 0.0];
        let r = residual(&kernel, &x, &zero, &mat, Load::Field(&fx));
        let s: f64 = r.iter().map(|ra| ra[0]).sum();
        // int X_0 dV, obtained as the squared L2 distance between 0 and sqrt(X_0) (X_0 > 0 here).
        let (moment, _) = kernel
            .errors(&x, &zero, &|p| ([p[0].sqrt(), 0.0, 0.0], [[0.0; 3]; 3]))
            .unwrap();
        assert!((s + moment).abs() < 1e-12, "order {order}: {s} vs {moment}");
    }
}

#[test]
fn inverted_element_names_first_bad_quadrature_point() {
    let kernel = ElementKernel::new(1, 2).unwrap();
    let basis = LagrangeHex::new(1).unwrap();
    let mut x = basis.node_coords();
    // Pull corner 7 through the cell: the Jacobian turns negative near it only.
    x[7] = [-0.6, -0.6, -0.6];
    let rule = Quadrature::hex(2).unwrap();
    let (mut v, mut dn) = ([0.0; 8], [[0.0; 3]; 8]);
    let dets: Vec<f64> = rule
        .points()
        .iter()
        .map(|xi| {
            basis.eval(*xi, &mut v, &mut dn).unwrap();
            Matrix3::from_fn(|d, e| (0..8).map(|a| x[a][d] * dn[a][e]).sum()).determinant()
        })
        .collect();
    let first_bad = dets.iter().position(|d| *d <= 0.0).unwrap();
    assert!(
        first_bad > 0,
        "test geometry should start with valid points: {dets:?}"
    );
    let err = kernel.check_geometry(&x).unwrap_err();
    assert_eq!(
        err,
        FemError::NonPositiveJacobian {
            qp: first_bad,
            det: dets[first_bad]
        }
    );
    let mut r = vec![[0.0; 3]; 8];
    let mat = all_materials()[0];
    assert!(matches!(
        kernel.residual_tangent(&x, &[[0.0; 3]; 8], &mat, Load::None, &mut r, Some(&mut [[0.0; 9]; 64])),
        Err(FemError::NonPositiveJacobian { qp, .. }) if qp == first_bad
    ));
    kernel.check_geometry(&basis.node_coords()).unwrap();
}

#[test]
fn error_norms_of_quadratic_field_on_q1() {
    // u = (X^2, 0, 0) on the unit cube, interpolated by Q1 as u_h = (X, 0, 0):
    // ||u - u_h||^2 = int (X^2 - X)^2 = 1/30, |u - u_h|_1^2 = int (2X - 1)^2 = 1/3.
    let kernel = ElementKernel::new(1, 2).unwrap();
    let x: Vec<[f64; 3]> = LagrangeHex::new(1)
        .unwrap()
        .node_coords()
        .iter()
        .map(|p| [0.5 * (p[0] + 1.0), 0.5 * (p[1] + 1.0), 0.5 * (p[2] + 1.0)])
        .collect();
    let uh: Vec<[f64; 3]> = x.iter().map(|p| [p[0] * p[0], 0.0, 0.0]).collect();
    let exact = |p: [f64; 3]| {
        (
            [p[0] * p[0], 0.0, 0.0],
            [[2.0 * p[0], 0.0, 0.0], [0.0; 3], [0.0; 3]],
        )
    };
    let (l2, h1) = kernel.errors(&x, &uh, &exact).unwrap();
    assert!((l2 - 1.0 / 30.0).abs() < 1e-15, "{l2}");
    assert!((h1 - 1.0 / 3.0).abs() < 1e-15, "{h1}");
    // Q2 reproduces it exactly.
    let k2 = ElementKernel::new(2, 3).unwrap();
    let x2: Vec<[f64; 3]> = LagrangeHex::new(2)
        .unwrap()
        .node_coords()
        .iter()
        .map(|p| [0.5 * (p[0] + 1.0), 0.5 * (p[1] + 1.0), 0.5 * (p[2] + 1.0)])
        .collect();
    let uh2: Vec<[f64; 3]> = x2.iter().map(|p| [p[0] * p[0], 0.0, 0.0]).collect();
    let (l2, h1) = k2.errors(&x2, &uh2, &exact).unwrap();
    assert!(l2 < 1e-30 && h1 < 1e-28, "{l2} {h1}");
}

#[test]
fn rejects_mismatched_buffers() {
    let kernel = ElementKernel::new(1, 2).unwrap();
    let x = LagrangeHex::new(1).unwrap().node_coords();
    let mat = all_materials()[0];
    let mut r = vec![[0.0; 3]; 8];
    let err = kernel
        .residual(&x[..7], &[[0.0; 3]; 7], &mat, Load::None, &mut r)
        .unwrap_err();
    assert_eq!(
        err,
        FemError::LengthMismatch {
            what: "element coordinates",
            expected: 8,
            got: 7
        }
    );
    let mut k = vec![[0.0; 9]; 63];
    assert!(kernel
        .residual_tangent(&x, &[[0.0; 3]; 8], &mat, Load::None, &mut r, Some(&mut k))
        .is_err());
    assert!(kernel
        .residual(&x, &[[0.0; 3]; 8], &mat, Load::None, &mut r[..5])
        .is_err());
    assert!(ElementKernel::new(3, 2).is_err());
    assert!(ElementKernel::new(1, 0).is_err());
}

/// A 2 x 2 x 2 patch of order-`order` cells of size `size` on the parallelepiped `X = a xi`
/// (`xi` in `[0, 2 size]^3`), the centre node of a Q1 patch moved off its affine place: the global
/// node coordinates and each cell's global nodes (element order).
fn patch(order: usize, size: f64, a: &Matrix3<f64>) -> (Vec<[f64; 3]>, Vec<Vec<usize>>) {
    let m = 2 * order + 1;
    let index = |i: usize, j: usize, k: usize| i + m * (j + m * k);
    let mut x = vec![[0.0; 3]; m * m * m];
    for k in 0..m {
        for j in 0..m {
            for i in 0..m {
                let xi = Vector3::new(i as f64, j as f64, k as f64) * (size / order as f64);
                x[index(i, j, k)] = (a * xi).into();
            }
        }
    }
    if order == 1 {
        // Non-affine Q1 cells.
        let c = index(1, 1, 1);
        x[c] = [
            x[c][0] + 0.1 * size,
            x[c][1] - 0.05 * size,
            x[c][2] + 0.07 * size,
        ];
    }
    let local = LagrangeHex::new(order).unwrap().node_coords();
    let mut cells = Vec::new();
    for (ck, cj, ci) in (0..8).map(|c| (c / 4, (c / 2) % 2, c % 2)) {
        let node =
            |xi: f64, c: usize| c * order + ((xi + 1.0) * order as f64 / 2.0).round() as usize;
        cells.push(
            local
                .iter()
                .map(|p| index(node(p[0], ci), node(p[1], cj), node(p[2], ck)))
                .collect(),
        );
    }
    (x, cells)
}

/// The patch residual `sum_cells r_cell` at nodal displacements `u`, through the residual-only or
/// the residual-and-tangent path.
fn assemble_patch(
    kernel: &ElementKernel,
    x: &[[f64; 3]],
    cells: &[Vec<usize>],
    u: &[[f64; 3]],
    mat: &Material,
    with_tangent: bool,
) -> Vec<[f64; 3]> {
    let n = kernel.n_nodes();
    let mut r = vec![[0.0; 3]; x.len()];
    for cell in cells {
        let xe: Vec<[f64; 3]> = cell.iter().map(|&c| x[c]).collect();
        let ue: Vec<[f64; 3]> = cell.iter().map(|&c| u[c]).collect();
        let mut re = vec![[0.0; 3]; n];
        let mut ke = vec![[0.0; 9]; n * n];
        let k = with_tangent.then_some(ke.as_mut_slice());
        kernel
            .residual_tangent(&xe, &ue, mat, Load::None, &mut re, k)
            .unwrap();
        for (a, &c) in cell.iter().enumerate() {
            for i in 0..3 {
                r[c][i] += re[a][i];
            }
        }
    }
    r
}

/// `max |a - b|` over all components.
fn max_diff(a: &[[f64; 3]], b: &[[f64; 3]]) -> f64 {
    a.iter()
        .flatten()
        .zip(b.iter().flatten())
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
}

/// Steel in pascals (E = 2e11) on a patch of 0.1 m cells under a non-uniform displacement: the
/// assembled residual carries round-off of the stress, not of the modulus.
/// Linear model at strain 1e-6: `r(u)` equals `s r(u / s)` (`s = 1e-6`, the latter at strain 1, no
/// small numbers) to `5e-15 |sigma| A` (`A` a cell face; measured 8e-16); every model at strain
/// 1e-8: the odd part `(r(u) - r(-u)) / 2` equals the linear model's residual to `1e-14 |sigma| A`
/// (measured 3e-15; the genuine difference is cubic, 1e-16 relative). Forming `F = I + h` left
/// round-off of `1e-16 E`: `1e-10 |sigma|` at strain 1e-6, `1e-8` at 1e-8.
#[test]
fn patch_residual_round_off_is_relative_to_the_stress_not_the_modulus() {
    let moduli = Moduli::from_young_poisson(2e11, 0.3).unwrap();
    let linear = Material::linear(moduli);
    let materials = [
        linear,
        Material::saint_venant_kirchhoff(moduli),
        Material::neo_hookean(moduli),
        Material::decoupled_neo_hookean(moduli),
        Material::mooney_rivlin(moduli, 0.3).unwrap(),
    ];
    let a = Matrix3::new(1.0, 0.2, 0.1, -0.1, 0.9, 0.15, 0.05, 0.1, 1.1);
    let g = Matrix3::new(1.0, -0.4, 0.3, 0.2, -0.6, 0.5, 0.25, 0.15, 0.8);
    let size = 0.1;
    // u(X) = strain (G X + X_0 X / 0.2 m) (not uniform), at each node.
    let field = |x: &[[f64; 3]], strain: f64| -> Vec<[f64; 3]> {
        x.iter()
            .map(|p| {
                let v = (g * Vector3::from(*p) + Vector3::from(*p) * (p[0] / 0.2)) * strain;
                [v[0], v[1], v[2]]
            })
            .collect()
    };
    let negated =
        |u: &[[f64; 3]]| -> Vec<[f64; 3]> { u.iter().map(|v| [-v[0], -v[1], -v[2]]).collect() };
    for order in [1, 2] {
        let kernel = ElementKernel::new(order, order + 1).unwrap();
        let (x, cells) = patch(order, size, &a);
        let face = size * size * a.determinant().powf(2.0 / 3.0);
        for with_tangent in [false, true] {
            let assemble = |u: &[[f64; 3]], m: &Material| {
                assemble_patch(&kernel, &x, &cells, u, m, with_tangent)
            };
            // Linear model, strain 1e-6 against strain 1 scaled.
            let s = 1e-6;
            let (u, u1) = (field(&x, s), field(&x, 1.0));
            let sigma = linear.stress(&(g * s)).unwrap().norm();
            let r = assemble(&u, &linear);
            let r1: Vec<[f64; 3]> = assemble(&u1, &linear)
                .iter()
                .map(|v| [v[0] * s, v[1] * s, v[2] * s])
                .collect();
            let e = max_diff(&r, &r1) / (sigma * face);
            assert!(e < 5e-15, "order {order}: linear {e:e}");
            // Every model, strain 1e-8: the odd part is the linear residual.
            let s = 1e-8;
            let u = field(&x, s);
            let sigma = linear.stress(&(g * s)).unwrap().norm();
            let r_lin = assemble(&u, &linear);
            for mat in &materials {
                let (rp, rm) = (assemble(&u, mat), assemble(&negated(&u), mat));
                let odd: Vec<[f64; 3]> = rp
                    .iter()
                    .zip(&rm)
                    .map(|(p, m)| {
                        [
                            (p[0] - m[0]) * 0.5,
                            (p[1] - m[1]) * 0.5,
                            (p[2] - m[2]) * 0.5,
                        ]
                    })
                    .collect();
                let e = max_diff(&odd, &r_lin) / (sigma * face);
                assert!(e < 1e-14, "order {order}: {} {e:e}", mat.name());
            }
        }
    }
}
