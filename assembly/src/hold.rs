//! Whether the constraints hold the body: the rigid-body motions that the prescribed components
//! leave free (a body held only in `x` can still translate along `y` and `z` and turn about `x`).
//!
//! The test samples the six rigid-body modes at every prescribed component: a motion is free
//! exactly when it vanishes at all of them, i.e. when it lies in the null space of the Gram
//! matrix `G = sum m m^T` of those samples. Rotations are measured in a [`MotionFrame`] (about
//! the mesh's centre, per unit of its size), so the test does not depend on the unit system or
//! on where the mesh sits. `G` of a rank's owned nodes adds over the ranks.

use std::fmt;

use nalgebra::{DMatrix, DVector, Matrix3, Matrix6, SymmetricEigen, Vector3, Vector6};

/// An eigenvalue of the scaled Gram matrix below this fraction of the number of samples is a
/// free motion: a motion held by a sliver of the body narrower than `1e-6` of its size counts as
/// free too (the tangent is then singular to working accuracy).
const FREE_EIGENVALUE: f64 = 1e-12;

/// A direction within this of a coordinate axis is named by the axis.
const AXIS_SNAP: f64 = 1e-9;

/// The frame in which rigid motions are measured: rotations are about `center` and scaled by
/// `length` (the mesh's bounding-box centre and size).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MotionFrame {
    pub center: [f64; 3],
    pub length: f64,
}

impl MotionFrame {
    /// The frame of the bounding box of `coords` (size 1 for a single point or none).
    pub fn of_points(coords: &[[f64; 3]]) -> Self {
        let mut lower = [f64::INFINITY; 3];
        let mut upper = [f64::NEG_INFINITY; 3];
        for x in coords {
            for d in 0..3 {
                lower[d] = lower[d].min(x[d]);
                upper[d] = upper[d].max(x[d]);
            }
        }
        Self::of_box(lower, upper)
    }

    /// The frame of the box `lower..upper` (size 1 where the box is empty or a point).
    pub fn of_box(lower: [f64; 3], upper: [f64; 3]) -> Self {
        if (0..3).any(|d| lower[d].partial_cmp(&upper[d]).is_none_or(|o| o.is_gt())) {
            return Self {
                center: [0.0; 3],
                length: 1.0,
            };
        }
        let center = [0, 1, 2].map(|d| 0.5 * (lower[d] + upper[d]));
        let length = (0..3).map(|d| upper[d] - lower[d]).fold(0.0, f64::max);
        Self {
            center,
            length: if length > 0.0 && length.is_finite() {
                length
            } else {
                1.0
            },
        }
    }
}

/// The Gram matrix (row-major 6x6) of the rigid-body modes sampled at the prescribed components:
/// `held[node]` has bit `c` set where component `c` of `coords[node]` is prescribed. Modes:
/// translations along x, y, z, then rotations about x, y, z (about `frame.center`, divided by
/// `frame.length`). Sums of several ranks' matrices are the whole body's.
pub fn hold_gram(coords: &[[f64; 3]], held: &[u8], frame: MotionFrame) -> [f64; 36] {
    let mut gram = Matrix6::<f64>::zeros();
    for (x, &bits) in coords.iter().zip(held) {
        if bits == 0 {
            continue;
        }
        let r = [0, 1, 2].map(|d| (x[d] - frame.center[d]) / frame.length);
        // u = t + w x r: the rows of d u_c / d(t, w)
        let rows = [
            Vector6::new(1.0, 0.0, 0.0, 0.0, r[2], -r[1]),
            Vector6::new(0.0, 1.0, 0.0, -r[2], 0.0, r[0]),
            Vector6::new(0.0, 0.0, 1.0, r[1], -r[0], 0.0),
        ];
        for (c, row) in rows.iter().enumerate() {
            if bits & (1 << c) != 0 {
                gram += row * row.transpose();
            }
        }
    }
    let mut out = [0.0; 36];
    for i in 0..6 {
        for j in 0..6 {
            out[6 * i + j] = gram[(i, j)];
        }
    }
    out
}

/// A rigid motion the constraints leave free.
#[derive(Clone, Debug, PartialEq)]
pub enum FreeMotion {
    /// A translation along the unit vector.
    Translation([f64; 3]),
    /// A rotation about the axis along the unit vector through the point.
    Rotation { axis: [f64; 3], through: [f64; 3] },
}

impl fmt::Display for FreeMotion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FreeMotion::Translation(d) => write!(f, "translation along {}", direction(d)),
            FreeMotion::Rotation { axis, through } => write!(
                f,
                "rotation about {} through ({}, {}, {})",
                direction(axis),
                number(through[0]),
                number(through[1]),
                number(through[2])
            ),
        }
    }
}

/// The rigid motions that a [`hold_gram`] (of `n_samples` prescribed components, over every
/// rank) leaves free: translations first, then rotations, each along a coordinate axis wherever
/// the free motions include one. Empty when the body is held.
pub fn free_motions(gram: &[f64; 36], frame: MotionFrame) -> Vec<FreeMotion> {
    let g = Matrix6::from_row_slice(gram);
    let scale = g.trace().max(1.0);
    let eigen = SymmetricEigen::new(g);
    let null: Vec<Vector6<f64>> = (0..6)
        .filter(|&k| eigen.eigenvalues[k] <= FREE_EIGENVALUE * scale)
        .map(|k| eigen.eigenvectors.column(k).into_owned())
        .collect();
    if null.is_empty() {
        return Vec::new();
    }
    // the rotation parts of the free motions span the free rotation directions; the motions
    // whose rotation part vanishes are the free translations
    let rotations_of =
        Matrix3::from_fn(|i, j| null.iter().map(|v| v[3 + i] * v[3 + j]).sum::<f64>());
    let rotation_dirs = principal_directions(&rotations_of);
    let translations = translation_directions(&null);
    let mut free: Vec<FreeMotion> = translations
        .iter()
        .map(|t| FreeMotion::Translation(snap(*t)))
        .collect();
    for w in rotation_dirs {
        // the free motion of least norm with rotation part w: c = W^T (W W^T)^+ w
        let y = pseudo_inverse(&rotations_of) * w;
        let mut t = Vector3::zeros();
        let mut rw = Vector3::zeros();
        for v in &null {
            let c = Vector3::new(v[3], v[4], v[5]).dot(&y);
            t += Vector3::new(v[0], v[1], v[2]) * c;
            rw += Vector3::new(v[3], v[4], v[5]) * c;
        }
        // drop the share of free translations; what is left is a rotation about an axis
        // through c + (w x t) / |w|^2 (in frame units)
        for d in &translations {
            t -= d * d.dot(&t);
        }
        let offset = rw.cross(&t) / rw.norm_squared();
        let through = [0, 1, 2].map(|d| frame.center[d] + frame.length * offset[d]);
        free.push(FreeMotion::Rotation {
            axis: snap(rw.normalize()),
            through: through.map(|x| {
                if x.abs() <= 1e-9 * frame.length {
                    0.0
                } else {
                    x
                }
            }),
        });
    }
    free
}

/// The pseudo-inverse of the symmetric positive semidefinite `m` (eigenvalues at round-off
/// dropped).
fn pseudo_inverse(m: &Matrix3<f64>) -> Matrix3<f64> {
    let eigen = SymmetricEigen::new(*m);
    let largest = eigen.eigenvalues.iter().fold(0.0f64, |a, &b| a.max(b));
    let mut p = Matrix3::zeros();
    for k in 0..3 {
        let l = eigen.eigenvalues[k];
        if l > 1e-8 * largest && largest > 1e-8 {
            let v = eigen.eigenvectors.column(k);
            p += v * v.transpose() / l;
        }
    }
    p
}

/// Orthonormal directions spanning the range of the symmetric positive semidefinite `m`
/// (eigenvalues above round-off), coordinate axes first where the range holds them.
fn principal_directions(m: &Matrix3<f64>) -> Vec<Vector3<f64>> {
    let eigen = SymmetricEigen::new(*m);
    let largest = eigen.eigenvalues.iter().fold(0.0f64, |a, &b| a.max(b));
    let range: Vec<Vector3<f64>> = (0..3)
        .filter(|&k| eigen.eigenvalues[k] > 1e-8 * largest.max(1e-300) && largest > 1e-8)
        .map(|k| eigen.eigenvectors.column(k).into_owned())
        .collect();
    prefer_axes(range)
}

/// The free translations: orthonormal directions of the translation parts of the combinations
/// of null-space motions whose rotation parts cancel (the kernel of `W`, the 3 x k matrix of
/// rotation parts).
fn translation_directions(null: &[Vector6<f64>]) -> Vec<Vector3<f64>> {
    let k = null.len();
    let w = DMatrix::from_fn(3, k, |i, j| null[j][3 + i]);
    let mut t = Matrix3::zeros();
    for c in kernel(&w) {
        let mut v = Vector3::zeros();
        for (j, cj) in c.iter().enumerate() {
            v += Vector3::new(null[j][0], null[j][1], null[j][2]) * *cj;
        }
        t += v * v.transpose();
    }
    principal_directions(&t)
}

/// An orthonormal basis of the kernel of the 3 x k matrix `w`: the unit vectors of `R^k`
/// orthogonalised against its row space (Gram-Schmidt).
fn kernel(w: &DMatrix<f64>) -> Vec<DVector<f64>> {
    let k = w.ncols();
    let mut basis: Vec<DVector<f64>> = Vec::new();
    let push = |mut v: DVector<f64>, basis: &mut Vec<DVector<f64>>| {
        for _ in 0..2 {
            for b in basis.iter() {
                let d = b.dot(&v);
                v -= b * d;
            }
        }
        if v.norm() > 1e-8 {
            basis.push(v.normalize());
        }
    };
    for i in 0..3 {
        push(w.row(i).transpose(), &mut basis);
    }
    let rows = basis.len();
    for e in 0..k {
        let mut v = DVector::zeros(k);
        v[e] = 1.0;
        push(v, &mut basis);
    }
    basis.split_off(rows)
}

/// An orthonormal basis of the span of `dirs` with the coordinate axes that lie in it first.
fn prefer_axes(dirs: Vec<Vector3<f64>>) -> Vec<Vector3<f64>> {
    let mut chosen: Vec<Vector3<f64>> = Vec::new();
    for axis in 0..3 {
        let mut e = Vector3::zeros();
        e[axis] = 1.0;
        let in_span: f64 = dirs.iter().map(|d| d.dot(&e).powi(2)).sum();
        if in_span > 1.0 - 1e-6 && chosen.len() < dirs.len() {
            chosen.push(e);
        }
    }
    for d in &dirs {
        if chosen.len() == dirs.len() {
            break;
        }
        let mut v = *d;
        for c in &chosen {
            v -= c * c.dot(&v);
        }
        if v.norm() > 1e-6 {
            chosen.push(v.normalize());
        }
    }
    chosen
}

fn snap(d: Vector3<f64>) -> [f64; 3] {
    let sign = if d
        .iter()
        .fold(0.0, |a: f64, &b| if b.abs() > a.abs() { b } else { a })
        < 0.0
    {
        -1.0
    } else {
        1.0
    };
    [d[0], d[1], d[2]].map(|x| {
        let x = sign * x;
        if x.abs() < AXIS_SNAP {
            0.0
        } else if (x.abs() - 1.0).abs() < AXIS_SNAP {
            x.signum()
        } else {
            x
        }
    })
}

fn direction(d: &[f64; 3]) -> String {
    match d {
        [1.0, 0.0, 0.0] => "x".into(),
        [0.0, 1.0, 0.0] => "y".into(),
        [0.0, 0.0, 1.0] => "z".into(),
        _ => format!("({}, {}, {})", number(d[0]), number(d[1]), number(d[2])),
    }
}

/// Four significant digits, without trailing zeros.
fn number(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if !(1e-3..1e6).contains(&x.abs()) {
        return format!("{x:.3e}");
    }
    let decimals = (3 - x.abs().log10().floor() as i32).clamp(0, 6) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2 x 2 x 2-node cube's faces, scaled and shifted.
    fn cube(size: f64, shift: f64) -> Vec<[f64; 3]> {
        let mut c = Vec::new();
        for k in 0..3 {
            for j in 0..3 {
                for i in 0..3 {
                    c.push([i, j, k].map(|v| shift + size * v as f64 / 2.0));
                }
            }
        }
        c
    }

    fn held_where(coords: &[[f64; 3]], pred: impl Fn(&[f64; 3]) -> Option<u8>) -> Vec<u8> {
        coords.iter().map(|x| pred(x).unwrap_or(0)).collect()
    }

    fn free(coords: &[[f64; 3]], held: &[u8]) -> Vec<String> {
        let frame = MotionFrame::of_points(coords);
        free_motions(&hold_gram(coords, held, frame), frame)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_clamped_face_holds_the_body_in_any_unit_system() {
        for (size, shift) in [(1.0, 0.0), (1e-4, 3e-4), (1e3, -5e3)] {
            let c = cube(size, shift);
            let held = held_where(&c, |x| (x[0] == shift).then_some(0b111));
            assert!(free(&c, &held).is_empty(), "size {size}");
        }
    }

    #[test]
    fn a_face_held_in_x_only_leaves_two_translations_and_a_rotation_free() {
        for (size, shift) in [(1.0, 0.0), (2e-5, 1e-5), (250.0, 100.0)] {
            let c = cube(size, shift);
            let held = held_where(&c, |x| (x[0] == shift).then_some(0b001));
            let f = free(&c, &held);
            assert_eq!(f.len(), 3, "{f:?}");
            assert_eq!(f[0], "translation along y");
            assert_eq!(f[1], "translation along z");
            assert!(f[2].starts_with("rotation about x"), "{f:?}");
        }
    }

    #[test]
    fn symmetry_planes_and_a_point_hold_the_body() {
        // the usual eighth model: u_x = 0 on x = 0, u_y = 0 on y = 0, u_z = 0 on z = 0
        let c = cube(1.0, 0.0);
        let held = held_where(&c, |x| {
            let b = (0..3).filter(|&d| x[d] == 0.0).fold(0u8, |b, d| b | 1 << d);
            (b != 0).then_some(b)
        });
        assert!(free(&c, &held).is_empty());
    }

    #[test]
    fn a_hinge_leaves_the_rotation_about_it_free() {
        // every component held on the edge y = 0.5, z = 1 (along x): a hinge
        let c = cube(1.0, 0.0);
        let held = held_where(&c, |x| (x[1] == 0.5 && x[2] == 1.0).then_some(0b111));
        let f = free(&c, &held);
        // the axis point nearest the centre (0.5, 0.5, 0.5)
        assert_eq!(
            f,
            vec!["rotation about x through (0.5, 0.5, 1)".to_string()]
        );
    }

    #[test]
    fn a_single_held_node_leaves_every_rotation_free() {
        let c = cube(1.0, 0.0);
        let held = held_where(&c, |x| (*x == [1.0, 0.0, 0.0]).then_some(0b111));
        let f = free(&c, &held);
        assert_eq!(f.len(), 3, "{f:?}");
        // about axes through the node, each named by its point nearest the centre
        assert_eq!(f[0], "rotation about x through (0.5, 0, 0)");
        assert_eq!(f[1], "rotation about y through (1, 0.5, 0)");
        assert_eq!(f[2], "rotation about z through (1, 0, 0.5)");
    }

    #[test]
    fn nothing_held_leaves_all_six_free() {
        let c = cube(1.0, 0.0);
        let f = free(&c, &vec![0; c.len()]);
        assert_eq!(f.len(), 6, "{f:?}");
        assert_eq!(
            &f[..3],
            [
                "translation along x",
                "translation along y",
                "translation along z"
            ]
        );
    }

    #[test]
    fn two_rollers_leave_the_translation_along_their_planes_free() {
        // u_x held on x = 0 and u_y on y = 0: the rotations are held, u_z is not
        let c = cube(1.0, 0.0);
        let held = held_where(&c, |x| {
            let b = u8::from(x[0] == 0.0) | (u8::from(x[1] == 0.0) << 1);
            (b != 0).then_some(b)
        });
        assert_eq!(free(&c, &held), vec!["translation along z".to_string()]);
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(number(0.5), "0.5");
        assert_eq!(number(1.0), "1");
        assert_eq!(number(1.5e-5), "1.500e-5");
        assert_eq!(number(123.456), "123.5");
    }
}
