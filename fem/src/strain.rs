//! Strain measures of a displacement gradient `h = grad_X u` and principal values of symmetric
//! tensors: what the output's strain and principal-stress fields evaluate.
//!
//! Every measure is formed from `h` (never from `F = I + h`), so small strains keep their digits:
//! the Green-Lagrange strain is `(h + h^T + h^T h) / 2`, the logarithmic strain takes
//! `ln(1 + b)` of the eigenvalues `b` of `B - I = h + h^T + h h^T` with `ln_1p`
//! ([`crate::sym3::half_ln_1p`]). The principal values are [`crate::sym3`]'s Jacobi
//! eigenvalues.

use nalgebra::Matrix3;

use crate::sym3;

use crate::material::Material;

/// A strain measure of the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrainMeasure {
    /// The measure of the material model: the small (engineering-theory) strain
    /// `(h + h^T) / 2` for `linear`, the Green-Lagrange strain for every hyperelastic model.
    Model,
    /// Green-Lagrange `E = (F^T F - I) / 2 = (h + h^T + h^T h) / 2` (reference frame).
    GreenLagrange,
    /// Logarithmic (Hencky) strain `ln V = ln(F F^T) / 2` (deformed frame; Abaqus' `LE`).
    Logarithmic,
}

/// The strain `measure` of the gradient `h` for `material`.
pub fn strain(measure: StrainMeasure, material: &Material, h: &Matrix3<f64>) -> Matrix3<f64> {
    match measure {
        StrainMeasure::Model if matches!(material, Material::Linear { .. }) => {
            (h + h.transpose()) * 0.5
        }
        StrainMeasure::Model | StrainMeasure::GreenLagrange => {
            (h + h.transpose() + h.transpose() * h) * 0.5
        }
        StrainMeasure::Logarithmic => {
            let a = h + h.transpose() + h * h.transpose();
            let [xx, yy, zz, xy, yz, xz] = sym3::half_ln_1p(&upper_triangle(&a));
            Matrix3::new(xx, xy, xz, xy, yy, yz, xz, yz, zz)
        }
    }
}

/// The upper triangle of `t` as `[xx, yy, zz, xy, yz, xz]`.
fn upper_triangle(t: &Matrix3<f64>) -> [f64; 6] {
    [
        t[(0, 0)],
        t[(1, 1)],
        t[(2, 2)],
        t[(0, 1)],
        t[(1, 2)],
        t[(0, 2)],
    ]
}

/// The principal values of the symmetric tensor `t` (its upper triangle is read), largest
/// first.
pub fn principal_values(t: &Matrix3<f64>) -> [f64; 3] {
    largest_first(sym3::eigenvalues(&upper_triangle(t)))
}

/// [`principal_values`] of a full 3x3 tensor stored row-major.
pub fn principal_values_of(t: &[f64; 9]) -> [f64; 3] {
    largest_first(sym3::eigenvalues(&[t[0], t[4], t[8], t[1], t[5], t[2]]))
}

/// `v` sorted largest first (`NaN`s by their total order).
fn largest_first(mut v: [f64; 3]) -> [f64; 3] {
    v.sort_by(|a, b| b.total_cmp(a));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rotation(a: f64, b: f64, c: f64) -> Matrix3<f64> {
        let rx = Matrix3::new(1.0, 0.0, 0.0, 0.0, a.cos(), -a.sin(), 0.0, a.sin(), a.cos());
        let ry = Matrix3::new(b.cos(), 0.0, b.sin(), 0.0, 1.0, 0.0, -b.sin(), 0.0, b.cos());
        let rz = Matrix3::new(c.cos(), -c.sin(), 0.0, c.sin(), c.cos(), 0.0, 0.0, 0.0, 1.0);
        rz * ry * rx
    }

    const NEO: Material = Material::NeoHookean {
        lambda: 1.0,
        mu: 1.0,
    };

    /// A stretch `s` along x: E_xx = (s^2 - 1) / 2, ln V_xx = ln s, small strain s - 1.
    #[test]
    fn uniaxial_stretch_has_the_textbook_strains() {
        let s: f64 = 1.25;
        let h = Matrix3::new(s - 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        let linear = Material::Linear {
            lambda: 1.0,
            mu: 0.5,
        };
        let small = strain(StrainMeasure::Model, &linear, &h);
        assert_eq!(small[(0, 0)], 0.25);
        let gl = strain(StrainMeasure::Model, &NEO, &h);
        assert_eq!(gl[(0, 0)], (s * s - 1.0) / 2.0);
        assert_eq!(gl, strain(StrainMeasure::GreenLagrange, &linear, &h));
        let log = strain(StrainMeasure::Logarithmic, &NEO, &h);
        assert!((log[(0, 0)] - s.ln()).abs() < 1e-15, "{log}");
        assert!(log
            .iter()
            .enumerate()
            .all(|(k, v)| k == 0 || v.abs() < 1e-16));
    }

    /// A rigid rotation strains nothing in the finite measures; a tiny strain keeps its digits.
    #[test]
    fn rotations_do_not_strain_and_small_strains_keep_digits() {
        let q = rotation(0.3, -1.1, 2.0);
        let h = q - Matrix3::identity();
        for m in [StrainMeasure::GreenLagrange, StrainMeasure::Logarithmic] {
            let e = strain(m, &NEO, &h);
            assert!(e.amax() < 1e-14, "{m:?}: {e}");
        }
        let tiny = Matrix3::new(1e-12, 2e-13, 0.0, 0.0, -3e-13, 0.0, 0.0, 0.0, 5e-13);
        let small = strain(
            StrainMeasure::Model,
            &Material::Linear {
                lambda: 1.0,
                mu: 0.5,
            },
            &tiny,
        );
        for m in [StrainMeasure::GreenLagrange, StrainMeasure::Logarithmic] {
            let e = strain(m, &NEO, &tiny);
            assert!((e - small).amax() < 1e-24, "{m:?}: {e} vs {small}");
        }
    }

    /// Principal values are those of the diagonal form, whatever the frame.
    #[test]
    fn principal_values_are_invariant_under_rotation() {
        let d = Matrix3::from_diagonal(&nalgebra::Vector3::new(-2.0, 7.0, 0.5));
        assert_eq!(principal_values(&d), [7.0, 0.5, -2.0]);
        let q = rotation(0.7, 0.2, -1.3);
        let rotated = q * d * q.transpose();
        let p = principal_values(&rotated);
        for (got, want) in p.iter().zip([7.0, 0.5, -2.0]) {
            assert!((got - want).abs() < 1e-13, "{p:?}");
        }
        let row_major: [f64; 9] = std::array::from_fn(|k| rotated[(k / 3, k % 3)]);
        assert_eq!(principal_values_of(&row_major), p);
    }
}
