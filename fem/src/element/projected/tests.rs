//! Checks of the projected formulation: tangent against finite differences of the residual and
//! residual against finite differences of the energy (small and large strain, Q1 and Q2, every
//! material), the patch test, linearity of B-bar, rigid motions and the rank of the volumetric
//! constraint that removes locking.

use nalgebra::{DMatrix, Matrix3, Rotation3, Vector3};

use super::super::tests::{distorted_cell, linear_field, random_displacement, Rng};
use super::*;
use crate::material::Moduli;

fn kernel(order: usize, formulation: Formulation) -> ElementKernel {
    ElementKernel::new(order, order + 1)
        .unwrap()
        .with_formulation(formulation)
        .unwrap()
}

fn materials(nu: f64) -> Vec<Material> {
    let m = Moduli::from_young_poisson(10.0, nu).unwrap();
    vec![
        Material::linear(m),
        Material::saint_venant_kirchhoff(m),
        Material::neo_hookean(m),
        Material::decoupled_neo_hookean(m),
        Material::mooney_rivlin(m, 0.3).unwrap(),
    ]
}

fn residual(k: &ElementKernel, x: &[[f64; 3]], u: &[[f64; 3]], mat: &Material) -> Vec<[f64; 3]> {
    let mut r = vec![[0.0; 3]; k.n_nodes()];
    k.residual(x, u, mat, Load::None, &mut r).unwrap();
    r
}

fn tangent(
    k: &ElementKernel,
    x: &[[f64; 3]],
    u: &[[f64; 3]],
    mat: &Material,
) -> (Vec<[f64; 3]>, Vec<[f64; 9]>) {
    let n = k.n_nodes();
    let (mut r, mut t) = (vec![[0.0; 3]; n], vec![[0.0; 9]; n * n]);
    k.residual_tangent(x, u, mat, Load::None, &mut r, Some(&mut t))
        .unwrap();
    (r, t)
}

fn max_abs(v: &[[f64; 3]]) -> f64 {
    v.iter().flatten().fold(0.0f64, |m, x| m.max(x.abs()))
}

/// Displacement scales of the checks: small strain (round-off regime of `J - 1`) and large.
const SCALES: [f64; 2] = [1e-4, 0.08];

#[test]
fn tangent_matches_finite_differences_of_residual() {
    let mut rng = Rng(71);
    for order in [1, 2] {
        let k = kernel(order, Formulation::Projected);
        let n = k.n_nodes();
        let x = distorted_cell(order, &mut rng);
        for nu in [0.3, 0.49] {
            for mat in materials(nu) {
                for scale in SCALES {
                    let u = random_displacement(n, scale, &mut rng);
                    let (r, t) = tangent(&k, &x, &u, &mat);
                    assert_eq!(r, residual(&k, &x, &u, &mat), "{}", mat.name());
                    let h = 1e-4 * scale;
                    let (mut err, mut den) = (0.0f64, 0.0f64);
                    for b in 0..n {
                        for kk in 0..3 {
                            let (mut up, mut um) = (u.clone(), u.clone());
                            up[b][kk] += h;
                            um[b][kk] -= h;
                            let rp = residual(&k, &x, &up, &mat);
                            let rm = residual(&k, &x, &um, &mat);
                            for a in 0..n {
                                for i in 0..3 {
                                    let fd = (rp[a][i] - rm[a][i]) / (2.0 * h);
                                    let an = t[a * n + b][3 * i + kk];
                                    err = err.max((fd - an).abs());
                                    den = den.max(an.abs());
                                }
                            }
                        }
                    }
                    assert!(
                        err / den < 1e-6,
                        "Q{order} {} nu {nu} scale {scale}: rel err {:e}",
                        mat.name(),
                        err / den
                    );
                    // Symmetric: K_ab = K_ba^T (mirrored off the diagonal blocks, so exactly there).
                    for a in 0..n {
                        for b in 0..n {
                            for i in 0..3 {
                                for kk in 0..3 {
                                    let (kab, kba) =
                                        (t[a * n + b][3 * i + kk], t[b * n + a][3 * kk + i]);
                                    assert!((kab - kba).abs() <= 1e-13 * den, "{kab} {kba}");
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn residual_is_gradient_of_strain_energy() {
    let mut rng = Rng(72);
    for order in [1, 2] {
        let k = kernel(order, Formulation::Projected);
        let n = k.n_nodes();
        let x = distorted_cell(order, &mut rng);
        for mat in materials(0.49) {
            for scale in SCALES {
                let u = random_displacement(n, scale, &mut rng);
                let r = residual(&k, &x, &u, &mat);
                // A step relative to the displacements: the energies of h keep their digits at
                // small strain (no `1 + small`, no cancellation down to E strain^2).
                let (h, tol) = (1e-4 * scale, 1e-6);
                let mut worst = 0.0f64;
                for a in 0..n {
                    for i in 0..3 {
                        let (mut up, mut um) = (u.clone(), u.clone());
                        up[a][i] += h;
                        um[a][i] -= h;
                        let fd = (k.strain_energy(&x, &up, &mat).unwrap()
                            - k.strain_energy(&x, &um, &mat).unwrap())
                            / (2.0 * h);
                        worst = worst.max((fd - r[a][i]).abs());
                    }
                }
                assert!(
                    worst < tol * max_abs(&r),
                    "Q{order} {} scale {scale}: {worst:e} vs {:e}",
                    mat.name(),
                    max_abs(&r)
                );
            }
        }
    }
}

#[test]
fn homogeneous_deformation_equals_displacement_formulation() {
    // Patch test: J is constant, so Theta = J, F_bar = F and nothing changes.
    let mut rng = Rng(73);
    let g = Matrix3::new(0.02, -0.01, 0.015, 0.005, -0.03, 0.01, 0.012, 0.007, 0.025);
    for order in [1, 2] {
        let (kp, kd) = (
            kernel(order, Formulation::Projected),
            kernel(order, Formulation::Displacement),
        );
        let x = distorted_cell(order, &mut rng);
        let u = linear_field(&x, &g);
        for mat in materials(0.49) {
            let (rp, rd) = (residual(&kp, &x, &u, &mat), residual(&kd, &x, &u, &mat));
            let scale = max_abs(&rd).max(1e-300);
            for (a, b) in rp.iter().flatten().zip(rd.iter().flatten()) {
                assert!((a - b).abs() < 1e-9 * scale, "Q{order} {}", mat.name());
            }
            let (cp, cd) = (
                kp.cell_fields(&x, &u, &mat).unwrap(),
                kd.cell_fields(&x, &u, &mat).unwrap(),
            );
            let s = cd.cauchy.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for (a, b) in cp.cauchy.iter().zip(&cd.cauchy) {
                assert!((a - b).abs() < 1e-9 * s, "Q{order} {}", mat.name());
            }
            assert!((cp.j - cd.j).abs() < 1e-14);
            assert!((cp.strain_energy - cd.strain_energy).abs() < 1e-9 * cd.strain_energy);
        }
    }
}

#[test]
fn linear_material_stays_linear_and_tangent_is_residual_slope() {
    let mut rng = Rng(74);
    let mat = materials(0.499)[0];
    for order in [1, 2] {
        let k = kernel(order, Formulation::Projected);
        let n = k.n_nodes();
        let x = distorted_cell(order, &mut rng);
        let (u1, u2) = (
            random_displacement(n, 0.3, &mut rng),
            random_displacement(n, 0.3, &mut rng),
        );
        let sum: Vec<[f64; 3]> = u1
            .iter()
            .zip(&u2)
            .map(|(a, b)| [a[0] + b[0], a[1] + b[1], a[2] + b[2]])
            .collect();
        let (r1, r2, r12) = (
            residual(&k, &x, &u1, &mat),
            residual(&k, &x, &u2, &mat),
            residual(&k, &x, &sum, &mat),
        );
        let (_, t) = tangent(&k, &x, &u2, &mat);
        let scale = max_abs(&r12);
        for a in 0..n {
            let mut ku = [0.0; 3];
            for b in 0..n {
                for i in 0..3 {
                    for kk in 0..3 {
                        ku[i] += t[a * n + b][3 * i + kk] * u1[b][kk];
                    }
                }
            }
            for i in 0..3 {
                assert!((r1[a][i] + r2[a][i] - r12[a][i]).abs() < 1e-11 * scale);
                assert!((ku[i] - r1[a][i]).abs() < 1e-11 * scale, "Q{order}");
            }
        }
    }
}

#[test]
fn rigid_motions_are_stress_free() {
    let mut rng = Rng(75);
    let rot = Rotation3::from_axis_angle(
        &nalgebra::Unit::new_normalize(Vector3::new(0.3, -0.5, 0.8)),
        1.1,
    );
    for order in [1, 2] {
        let k = kernel(order, Formulation::Projected);
        let x = distorted_cell(order, &mut rng);
        let motion: Vec<[f64; 3]> = x
            .iter()
            .map(|xa| {
                let p = Vector3::from(*xa);
                let q = rot * p + Vector3::new(0.3, -1.2, 2.5);
                [q[0] - p[0], q[1] - p[1], q[2] - p[2]]
            })
            .collect();
        for mat in &materials(0.49)[1..] {
            let r = residual(&k, &x, &motion, mat);
            assert!(max_abs(&r) < 1e-11, "Q{order} {}: {r:?}", mat.name());
            assert!(k.strain_energy(&x, &motion, mat).unwrap().abs() < 1e-12);
        }
    }
}

/// Eigenvalues of the element stiffness at rest, ascending.
fn stiffness_spectrum(k: &ElementKernel, x: &[[f64; 3]], mat: &Material) -> Vec<f64> {
    let n = k.n_nodes();
    let (_, t) = tangent(k, x, &vec![[0.0; 3]; n], mat);
    let dense = DMatrix::from_fn(3 * n, 3 * n, |r, c| {
        t[(r / 3) * n + c / 3][3 * (r % 3) + c % 3]
    });
    let mut ev: Vec<f64> = dense.symmetric_eigenvalues().iter().copied().collect();
    ev.sort_by(f64::total_cmp);
    ev
}

#[test]
fn incompressibility_constrains_one_mode_per_pressure_mode() {
    // Volumetric locking: eigenvalues of order lambda >> mu are constraints on the element's
    // modes. The projected formulation leaves one per mode of P_k (1 for Q1, 4 for Q2); the
    // displacement formulation about one per quadrature point, linear or not.
    let mut rng = Rng(76);
    for order in [1, 2] {
        let x = distorted_cell(order, &mut rng);
        let m = Moduli::from_young_poisson(1.0, 0.4999999).unwrap();
        for mat in [Material::linear(m), Material::neo_hookean(m)] {
            let stiff = |f| {
                let ev = stiffness_spectrum(&kernel(order, f), &x, &mat);
                ev.iter().filter(|&&e| e > 1e3 * m.mu()).count()
            };
            let modes = if order == 1 { 1 } else { 4 };
            assert_eq!(stiff(Formulation::Projected), modes, "Q{order}");
            // 2^3 points less Q1's checkerboard mode; 3^3 for Q2.
            let points = if order == 1 { 7 } else { 27 };
            assert_eq!(stiff(Formulation::Displacement), points, "Q{order}");
        }
    }
}

#[test]
fn projection_needs_two_points_for_p1() {
    let err = ElementKernel::new(2, 1)
        .unwrap()
        .with_formulation(Formulation::Projected)
        .unwrap_err();
    assert_eq!(
        err,
        FemError::ProjectionQuadrature {
            order: 2,
            points: 1,
            min: 2
        }
    );
    let k = ElementKernel::new(1, 1)
        .unwrap()
        .with_formulation(Formulation::Projected)
        .unwrap();
    assert_eq!(k.formulation(), Formulation::Projected);
    assert_eq!(
        ElementKernel::new(1, 2).unwrap().formulation(),
        Formulation::Displacement
    );
}

#[test]
fn f_bar_linearises_to_b_bar_keeping_the_digits_of_small_strains() {
    // At strain 1e-12 every finite-strain model's F-bar residual is the linear model's B-bar
    // residual to O(strain): only if J - 1, alpha - 1 and the stresses keep their digits (formed
    // as 1 + small they would be off by 1e-16 / 1e-12).
    let mut rng = Rng(77);
    for order in [1, 2] {
        let k = kernel(order, Formulation::Projected);
        let x = distorted_cell(order, &mut rng);
        let u = random_displacement(k.n_nodes(), 1e-12, &mut rng);
        let all = materials(0.49);
        let linear = residual(&k, &x, &u, &all[0]);
        for mat in &all[1..] {
            let r = residual(&k, &x, &u, mat);
            let err = r
                .iter()
                .flatten()
                .zip(linear.iter().flatten())
                .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(
                err < 1e-9 * max_abs(&linear),
                "Q{order} {}: {:e}",
                mat.name(),
                err / max_abs(&linear)
            );
        }
    }
}

#[test]
fn richer_gauss_rules_use_larger_buffers_with_the_same_formulas() {
    // 27 and 64 points for Q1, 64 for Q2 (buffers of 27 and 216 points): the tangent is still
    // the residual's derivative.
    let mut rng = Rng(78);
    let mat = materials(0.49)[2];
    for (order, points) in [(1, 3), (1, 4), (2, 4)] {
        let k = ElementKernel::new(order, points)
            .unwrap()
            .with_formulation(Formulation::Projected)
            .unwrap();
        let n = k.n_nodes();
        let x = distorted_cell(order, &mut rng);
        let u = random_displacement(n, 0.08, &mut rng);
        let (_, t) = tangent(&k, &x, &u, &mat);
        let h = 1e-6;
        let (mut err, mut den) = (0.0f64, 0.0f64);
        for b in 0..n {
            for kk in 0..3 {
                let (mut up, mut um) = (u.clone(), u.clone());
                up[b][kk] += h;
                um[b][kk] -= h;
                let (rp, rm) = (residual(&k, &x, &up, &mat), residual(&k, &x, &um, &mat));
                for a in 0..n {
                    for i in 0..3 {
                        let fd = (rp[a][i] - rm[a][i]) / (2.0 * h);
                        err = err.max((fd - t[a * n + b][3 * i + kk]).abs());
                        den = den.max(fd.abs());
                    }
                }
            }
        }
        assert!(err / den < 1e-6, "Q{order} {points}^3: {:e}", err / den);
    }
}

/// Writes the host's projected kernels' inputs and outputs for the device kernels' host-compiled
/// harness (`scripts/projected_harness.sh`, which compiles fem/cuda/projected.cu as C++ and
/// compares its outputs bit for bit): one file per order and model under `$HEXFEM_PROJECTED_DUMP`,
/// cases of distorted cells at strains 1e-6 to 0.3. Ignored: run by the script.
#[test]
#[ignore]
fn dump_cases_for_the_device_harness() {
    use std::fmt::Write as _;
    let Ok(dir) = std::env::var("HEXFEM_PROJECTED_DUMP") else {
        return;
    };
    let hex = |out: &mut String, v: &[f64]| {
        for x in v {
            write!(out, "{:016x} ", x.to_bits()).unwrap();
        }
        out.push('\n');
    };
    for order in [1, 2] {
        for (points, tag) in [(order + 1, ""), (order, "_reduced")] {
            let k = ElementKernel::new(order, points)
                .unwrap()
                .with_formulation(Formulation::Projected);
            let Ok(k) = k else { continue };
            for (mat, nu) in [(0.3, ""), (0.4999, "_incompressible")]
                .into_iter()
                .flat_map(|(nu, tag)| materials(nu).into_iter().map(move |m| (m, tag)))
            {
                let n = k.n_nodes();
                let (modes, phi) = k.projection_table().unwrap();
                let mut out = String::new();
                let p = mat.device_params();
                writeln!(out, "{} {} {modes}", n, k.n_qp()).unwrap();
                hex(&mut out, &p);
                hex(&mut out, k.qp_weights());
                hex(&mut out, k.qp_reference_gradients().as_flattened());
                hex(&mut out, &phi);
                let mut rng = Rng(17 + order as u64);
                for scale in [1e-6, 1e-3, 0.03, 0.1, 0.25] {
                    let mut cells = String::new();
                    let mut count = 0;
                    for _ in 0..6 {
                        let x = distorted_cell(order, &mut rng);
                        let u = random_displacement(n, scale, &mut rng);
                        let mut r = vec![[0.0; 3]; n];
                        let mut kk = vec![[0.0; 9]; n * n];
                        let ok = k
                            .residual_tangent(&x, &u, &mat, Load::None, &mut r, Some(&mut kk))
                            .is_ok();
                        let (Ok(e), Ok(f), true) = (
                            k.strain_energy(&x, &u, &mat),
                            k.cell_fields(&x, &u, &mat),
                            ok,
                        ) else {
                            continue;
                        };
                        count += 1;
                        hex(&mut cells, x.as_flattened());
                        hex(&mut cells, u.as_flattened());
                        hex(&mut cells, r.as_flattened());
                        hex(&mut cells, kk.as_flattened());
                        let mut fields = f.cauchy.to_vec();
                        fields.extend([f.von_mises, f.j, f.energy_density, f.strain_energy]);
                        fields.push(e);
                        hex(&mut cells, &fields);
                    }
                    writeln!(out, "case {scale:e} {count}").unwrap();
                    out.push_str(&cells);
                }
                let path = format!(
                    "{dir}/q{order}{tag}_m{}{nu}_{}.txt",
                    mat.device_code(),
                    k.n_qp()
                );
                std::fs::write(path, out).unwrap();
            }
        }
    }
}
