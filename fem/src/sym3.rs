//! Eigenvalues and eigenvectors of symmetric 3x3 tensors by cyclic Jacobi rotations, and
//! `ln(I + t) / 2` ([`half_ln_1p`]): what the output's principal values and logarithmic strain
//! evaluate at every cell and Gauss point.
//!
//! A tensor is its six components in the order `[xx, yy, zz, xy, yz, xz]` (that of
//! [`crate::CellFields::cauchy`]). The tensor is first scaled by a power of two that brings its
//! largest component into `[1, 2)` (exact: the results scale back exactly, so the values of
//! `2^k a` are `2^k` times those of `a`, whatever `k`), then each off-diagonal entry in turn is
//! annihilated by a rotation until every one is negligible beside the diagonal entries of its
//! row and column (`a_pq^2 <= eps^2 |a_pp a_qq|`, or below `2^-500` of the largest component).
//! Jacobi's method converges quadratically and is stable for repeated and nearly repeated
//! eigenvalues: the eigenvalues come within a few ulps of the largest one's magnitude (small
//! eigenvalues of a graded tensor usually to a few ulps of their own), the eigenvectors
//! orthonormal to a few ulps. Three sweeps of three rotations are typical, [`MAX_SWEEPS`] bound
//! them. A tensor with a component that is not finite has `NaN` eigenvalues and vectors.

/// Sweeps of the three rotations at most (quadratic convergence needs about four from any start
/// to the rounding level; the bound only guards against a tensor that never settles).
pub const MAX_SWEEPS: usize = 12;

/// An off-diagonal entry is negligible once its square is at most this times the product of the
/// two diagonal entries it couples (`eps^2`).
const RELATIVE_TOLERANCE_SQUARED: f64 = f64::EPSILON * f64::EPSILON;

/// An off-diagonal entry of the scaled tensor (largest component in `[1, 2)`) below this is
/// negligible whatever the diagonal.
const ABSOLUTE_TOLERANCE: f64 = 3.054936363499605e-151; // 2^-500

/// The off-diagonal pairs `(p, q)` of one sweep and the index of the third row, `r`, with the
/// index of `a_pq` among `[xy, yz, xz]`, and those of `a_rp`, `a_rq`.
const PAIRS: [(usize, usize, usize, usize, usize, usize); 3] = [
    // (p, q, r, pq, rp, rq)
    (0, 1, 2, 0, 2, 1), // a_01 = xy; a_20 = xz, a_21 = yz
    (1, 2, 0, 1, 0, 2), // a_12 = yz; a_01 = xy, a_02 = xz
    (0, 2, 1, 2, 0, 1), // a_02 = xz; a_10 = xy, a_12 = yz
];

/// The eigenvalues of the symmetric tensor `t` (`[xx, yy, zz, xy, yz, xz]`), in no particular
/// order.
pub fn eigenvalues(t: &[f64; 6]) -> [f64; 3] {
    jacobi::<false>(t).0
}

/// The eigenvalues of the symmetric tensor `t` (`[xx, yy, zz, xy, yz, xz]`) and orthonormal
/// eigenvectors: `vectors[i][k]` is component `i` of the eigenvector of `values[k]`, so that
/// `t = V diag(values) V^T` with `V = vectors`.
pub fn eigen(t: &[f64; 6]) -> ([f64; 3], [[f64; 3]; 3]) {
    jacobi::<true>(t)
}

/// The sweep count [`eigen`] takes for `t` (benchmarks and tests).
pub fn sweeps(t: &[f64; 6]) -> usize {
    let Some((scaled, _)) = scaled(t) else {
        return 0;
    };
    let (mut d, mut o) = split(&scaled);
    let mut v = IDENTITY;
    (0..MAX_SWEEPS)
        .take_while(|_| sweep::<false>(&mut d, &mut o, &mut v))
        .count()
}

/// `ln(I + t) / 2` of the symmetric tensor `t` (`[xx, yy, zz, xy, yz, xz]`, eigenvalues above
/// `-1`): the logarithmic strain of `B - I = t`.
///
/// Without eigenvectors where that is as accurate: the eigenvalues `l1 >= l2 >= l3` in closed
/// form (the trigonometric solution of the characteristic cubic), then Newton's interpolation
/// of `f(x) = ln(1 + x) / 2` on them, `f(t) = f(l1) I + f[l1, l2] (t - l1 I) +
/// f[l1, l2, l3] (t - l1 I)(t - l2 I)`, with the divided differences in forms that keep their
/// digits as eigenvalues meet (`f[a, b] = ln_1p((a - b) / (1 + b)) / (2 (a - b))`). The closed
/// form's eigenvalues lose digits as two of them meet (an error `d ~ eps p^2 / gap`, `p` their
/// spread), but the interpolation's error is `~|f'''| p gap d`: the result stays within
/// `~eps s^3` of the largest component, `s = (l1 - l3) / (1 + l3)` (measured: within `16 eps`
/// of the eigenvectors' result for `s <= 16`). Where `s` exceeds [`CLOSED_FORM_SPREAD`]
/// (stretches far apart, or a strong compression), or a value is not finite, the result is
/// [`half_ln_1p_by_eigenvectors`]'s (within `~eps s`). A diagonal `t` is taken entry by entry.
pub fn half_ln_1p(t: &[f64; 6]) -> [f64; 6] {
    let f = |x: f64| 0.5 * x.ln_1p();
    let [xx, yy, zz, xy, yz, xz] = *t;
    if xy == 0.0 && yz == 0.0 && xz == 0.0 {
        return [f(xx), f(yy), f(zz), 0.0, 0.0, 0.0];
    }
    let Some([l1, l2, l3]) = closed_form_eigenvalues(t) else {
        return half_ln_1p_by_eigenvectors(t);
    };
    let spread = (l1 - l3) / (1.0 + l3);
    if !(0.0..=CLOSED_FORM_SPREAD).contains(&spread) {
        return half_ln_1p_by_eigenvectors(t);
    }
    // divided differences of f on l1 >= l2 >= l3
    let first = |a: f64, b: f64| {
        let d = a - b;
        if d == 0.0 {
            0.5 / (1.0 + b)
        } else {
            0.5 * (d / (1.0 + b)).ln_1p() / d
        }
    };
    let (f1, f12, f23) = (f(l1), first(l1, l2), first(l2, l3));
    let d13 = l1 - l3;
    let f123 = if d13 == 0.0 {
        -0.25 / ((1.0 + l2) * (1.0 + l2))
    } else {
        (f12 - f23) / d13
    };
    // M1 = t - l1 I, M2 = t - l2 I and their product (symmetric: they commute)
    let (m1x, m1y, m1z) = (xx - l1, yy - l1, zz - l1);
    let (m2x, m2y, m2z) = (xx - l2, yy - l2, zz - l2);
    let product = [
        m1x * m2x + xy * xy + xz * xz,
        xy * xy + m1y * m2y + yz * yz,
        xz * xz + yz * yz + m1z * m2z,
        m1x * xy + xy * m2y + xz * yz,
        xy * xz + m1y * yz + yz * m2z,
        m1x * xz + xy * yz + xz * m2z,
    ];
    [
        f1 + f12 * m1x + f123 * product[0],
        f1 + f12 * m1y + f123 * product[1],
        f1 + f12 * m1z + f123 * product[2],
        f12 * xy + f123 * product[3],
        f12 * yz + f123 * product[4],
        f12 * xz + f123 * product[5],
    ]
}

/// The largest `(l1 - l3) / (1 + l3)` [`half_ln_1p`] takes in closed form: for `t = B - I`
/// the squared ratio of the largest to the smallest principal stretch less one, so ratios up to
/// 3 (within `~10 eps` of the largest component by measurement).
pub const CLOSED_FORM_SPREAD: f64 = 8.0;

/// [`half_ln_1p`] through [`eigen`]'s eigenvectors: `sum_k f(l_k) v_k v_k^T`.
pub fn half_ln_1p_by_eigenvectors(t: &[f64; 6]) -> [f64; 6] {
    let (b, v) = eigen(t);
    let f = b.map(|b| 0.5 * b.ln_1p());
    let entry = |i: usize, j: usize| {
        v[i][0] * f[0] * v[j][0] + v[i][1] * f[1] * v[j][1] + v[i][2] * f[2] * v[j][2]
    };
    [
        entry(0, 0),
        entry(1, 1),
        entry(2, 2),
        entry(0, 1),
        entry(1, 2),
        entry(0, 2),
    ]
}

/// The eigenvalues `l1 >= l2 >= l3` of `t` in closed form (Smith's trigonometric solution of
/// the characteristic cubic): `None` for a multiple of the identity or where a value is not
/// finite.
fn closed_form_eigenvalues(t: &[f64; 6]) -> Option<[f64; 3]> {
    let [xx, yy, zz, xy, yz, xz] = *t;
    let q = (xx + yy + zz) / 3.0;
    let (bx, by, bz) = (xx - q, yy - q, zz - q);
    let p2 = (bx * bx + by * by + bz * bz + 2.0 * (xy * xy + yz * yz + xz * xz)) / 6.0;
    if !(p2 > 0.0 && p2.is_finite()) {
        return None;
    }
    let p = p2.sqrt();
    // det(t - q I) / (2 p^3): the cosine of 3 phi
    let det = bx * (by * bz - yz * yz) - xy * (xy * bz - yz * xz) + xz * (xy * yz - by * xz);
    let r = (det / (2.0 * p2 * p)).clamp(-1.0, 1.0);
    let phi = r.acos() / 3.0;
    let l1 = q + 2.0 * p * phi.cos();
    let l3 = q + 2.0 * p * (phi + 2.0 * std::f64::consts::FRAC_PI_3).cos();
    let l2 = 3.0 * q - l1 - l3;
    [l1, l2, l3]
        .iter()
        .all(|x| x.is_finite())
        .then_some([l1, l2, l3])
}

const IDENTITY: [[f64; 3]; 3] = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];

/// Jacobi's method with (`VECTORS`) or without the accumulated rotations.
fn jacobi<const VECTORS: bool>(t: &[f64; 6]) -> ([f64; 3], [[f64; 3]; 3]) {
    let Some((scaled, exponent)) = scaled(t) else {
        return if t.iter().all(|x| x.is_finite()) {
            ([0.0; 3], IDENTITY)
        } else {
            ([f64::NAN; 3], [[f64::NAN; 3]; 3])
        };
    };
    let (mut d, mut o) = split(&scaled);
    let mut v = IDENTITY;
    for _ in 0..MAX_SWEEPS {
        if !sweep::<VECTORS>(&mut d, &mut o, &mut v) {
            break;
        }
    }
    (d.map(|x| times_power_of_two(x, exponent)), v)
}

/// `t`'s diagonal `[xx, yy, zz]` and off-diagonal `[xy, yz, xz]`.
fn split(t: &[f64; 6]) -> ([f64; 3], [f64; 3]) {
    ([t[0], t[1], t[2]], [t[3], t[4], t[5]])
}

/// One sweep: a rotation for each off-diagonal entry that is not negligible. Whether any was.
fn sweep<const VECTORS: bool>(d: &mut [f64; 3], o: &mut [f64; 3], v: &mut [[f64; 3]; 3]) -> bool {
    let mut rotated = false;
    for (p, q, _, pq, rp, rq) in PAIRS {
        let apq = o[pq];
        if apq.abs() <= ABSOLUTE_TOLERANCE
            || apq * apq <= RELATIVE_TOLERANCE_SQUARED * (d[p] * d[q]).abs()
        {
            continue;
        }
        rotated = true;
        // the rotation with tangent t, the smaller root of t^2 + 2 theta t - 1 = 0 for
        // theta = g / (2 a_pq), g = a_qq - a_pp: with r = sqrt(g^2 + 4 a_pq^2) and
        // w = sqrt(2 r (r + |g|)), t = 2 a_pq sign(g) / (r + |g|), c = (r + |g|) / w and
        // s = 2 a_pq sign(g) / w (no cancellation; the largest entry in [1, 2) and
        // |a_pq| > 2^-500 keep every square normal)
        let g = d[q] - d[p];
        let two_apq = if g < 0.0 { -2.0 * apq } else { 2.0 * apq };
        let r = (g * g + two_apq * two_apq).sqrt();
        let sum = r + g.abs();
        let t_apq = two_apq * apq / sum;
        let inverse_w = 1.0 / (2.0 * r * sum).sqrt();
        let c = sum * inverse_w;
        let s = two_apq * inverse_w;
        d[p] -= t_apq;
        d[q] += t_apq;
        o[pq] = 0.0;
        let (arp, arq) = (o[rp], o[rq]);
        o[rp] = c * arp - s * arq;
        o[rq] = s * arp + c * arq;
        if VECTORS {
            for row in v.iter_mut() {
                let (vp, vq) = (row[p], row[q]);
                row[p] = c * vp - s * vq;
                row[q] = s * vp + c * vq;
            }
        }
    }
    rotated
}

/// `t` scaled by the power of two `2^-e` that brings its largest component into `[1, 2)`, and
/// `e`; `None` for a zero tensor or one with a component that is not finite.
fn scaled(t: &[f64; 6]) -> Option<([f64; 6], i32)> {
    let largest = t.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
    if largest == 0.0 || !t.iter().all(|x| x.is_finite()) {
        return None;
    }
    let exponent = binary_exponent(largest);
    Some((t.map(|x| times_power_of_two(x, -exponent)), exponent))
}

/// The `e` with `2^e <= x < 2^(e+1)` of a positive finite `x` (subnormals included).
fn binary_exponent(x: f64) -> i32 {
    let biased = ((x.to_bits() >> 52) & 0x7ff) as i32;
    if biased == 0 {
        // subnormal: 2^64 x is normal
        binary_exponent(x * TWO_TO_64) - 64
    } else {
        biased - 1023
    }
}

const TWO_TO_64: f64 = 18446744073709551616.0;

/// `x 2^e`, exact unless the result is subnormal or overflows (for `|e| <= 2 * 1023`).
fn times_power_of_two(x: f64, e: i32) -> f64 {
    let half = e / 2;
    x * power_of_two(half) * power_of_two(e - half)
}

/// `2^e` for `-1022 <= e <= 1023` (clamped to that range).
fn power_of_two(e: i32) -> f64 {
    let biased = (e.clamp(-1022, 1023) + 1023) as u64;
    f64::from_bits(biased << 52)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rotation from three angles (x, then y, then z), row-major.
    fn rotation(a: f64, b: f64, c: f64) -> [[f64; 3]; 3] {
        let rx = [
            [1.0, 0.0, 0.0],
            [0.0, a.cos(), -a.sin()],
            [0.0, a.sin(), a.cos()],
        ];
        let ry = [
            [b.cos(), 0.0, b.sin()],
            [0.0, 1.0, 0.0],
            [-b.sin(), 0.0, b.cos()],
        ];
        let rz = [
            [c.cos(), -c.sin(), 0.0],
            [c.sin(), c.cos(), 0.0],
            [0.0, 0.0, 1.0],
        ];
        mul(&rz, &mul(&ry, &rx))
    }

    fn mul(a: &[[f64; 3]; 3], b: &[[f64; 3]; 3]) -> [[f64; 3]; 3] {
        std::array::from_fn(|i| std::array::from_fn(|j| (0..3).map(|k| a[i][k] * b[k][j]).sum()))
    }

    /// `Q diag(values) Q^T` as `[xx, yy, zz, xy, yz, xz]`.
    fn rotated(q: &[[f64; 3]; 3], values: [f64; 3]) -> [f64; 6] {
        let a = |i: usize, j: usize| (0..3).map(|k| q[i][k] * values[k] * q[j][k]).sum();
        [a(0, 0), a(1, 1), a(2, 2), a(0, 1), a(1, 2), a(0, 2)]
    }

    fn sorted(mut v: [f64; 3]) -> [f64; 3] {
        v.sort_by(f64::total_cmp);
        v
    }

    /// The residual `max |t v_k - values_k v_k|` and the orthonormality defect `max |V^T V - I|`.
    fn defects(t: &[f64; 6], values: &[f64; 3], v: &[[f64; 3]; 3]) -> (f64, f64) {
        let full = [[t[0], t[3], t[5]], [t[3], t[1], t[4]], [t[5], t[4], t[2]]];
        let mut residual: f64 = 0.0;
        let mut orthonormality: f64 = 0.0;
        for k in 0..3 {
            for i in 0..3 {
                let tv: f64 = (0..3).map(|j| full[i][j] * v[j][k]).sum();
                residual = residual.max((tv - values[k] * v[i][k]).abs());
            }
            for l in 0..3 {
                let dot: f64 = (0..3).map(|i| v[i][k] * v[i][l]).sum();
                let want = if k == l { 1.0 } else { 0.0 };
                orthonormality = orthonormality.max((dot - want).abs());
            }
        }
        (residual, orthonormality)
    }

    /// A diagonal tensor is its own decomposition, bit for bit, with the identity's vectors.
    #[test]
    fn a_diagonal_tensor_is_exact() {
        let t = [-2.0, 7.0, 0.5, 0.0, 0.0, 0.0];
        assert_eq!(eigenvalues(&t), [-2.0, 7.0, 0.5]);
        assert_eq!(eigen(&t), ([-2.0, 7.0, 0.5], IDENTITY));
        assert_eq!(eigen(&[0.0; 6]), ([0.0; 3], IDENTITY));
        assert_eq!(sweeps(&t), 0);
    }

    /// Rotated diagonal tensors, distinct, repeated, nearly repeated and graded eigenvalues, at
    /// scales from 1e-300 to 1e300: values to a few ulps of the largest, vectors orthonormal and
    /// `t v = lambda v` to a few ulps, in a few sweeps.
    #[test]
    fn rotated_tensors_give_their_eigenvalues() {
        let spectra = [
            [1.0, 2.0, 3.0],
            [-2.0, 7.0, 0.5],
            [1.0, 1.0, 1.0],
            [1.0, 1.0, -1.0],
            [1.0, 1.0 + 1e-15, 1.0 - 1e-15],
            [1.0, 1.0 + 1e-9, 5.0],
            [1e-8, 1.0, 1.0 + 1e-12],
            [0.0, 0.0, 1.0],
            [0.0, 1e-20, 1.0],
            [-1.0, 1e-3, 1e3],
        ];
        let frames = [
            (0.3, -1.1, 2.0),
            (0.7, 0.2, -1.3),
            (1e-9, 0.0, 0.0),
            (std::f64::consts::FRAC_PI_2, 0.0, 0.0),
        ];
        for spectrum in spectra {
            for (a, b, c) in frames {
                let q = rotation(a, b, c);
                for scale in [1e-300, 1e-12, 1.0, 2.1e5, 1e300] {
                    let values = spectrum.map(|x| x * scale);
                    let t = rotated(&q, values);
                    let norm = values.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
                    let got = eigen(&t);
                    let only = eigenvalues(&t);
                    assert_eq!(only, got.0, "{t:?}");
                    for (g, w) in sorted(got.0).iter().zip(sorted(values)) {
                        assert!((g - w).abs() <= 8.0 * f64::EPSILON * norm, "{t:?}: {got:?}");
                    }
                    let (residual, orthonormality) = defects(&t, &got.0, &got.1);
                    assert!(residual <= 8.0 * f64::EPSILON * norm, "{t:?}: {residual:e}");
                    assert!(
                        orthonormality <= 8.0 * f64::EPSILON,
                        "{t:?}: {orthonormality:e}"
                    );
                    assert!(sweeps(&t) <= 6, "{t:?}: {} sweeps", sweeps(&t));
                }
            }
        }
    }

    /// Scaling by a power of two scales the values and keeps the vectors, bit for bit.
    #[test]
    fn powers_of_two_scale_exactly() {
        let t = rotated(&rotation(0.4, 0.9, -0.2), [3.0, -1.0, 0.25]);
        let (values, vectors) = eigen(&t);
        for e in [-1000, -60, -1, 1, 17, 1000] {
            let s = power_of_two(e);
            let (scaled_values, scaled_vectors) = eigen(&t.map(|x| x * s));
            assert_eq!(scaled_values, values.map(|x| x * s));
            assert_eq!(scaled_vectors, vectors);
        }
    }

    /// Subnormal and huge components, and components that are not finite.
    #[test]
    fn extreme_components_are_handled() {
        let tiny = 5e-324;
        let (values, _) = eigen(&[tiny, 0.0, 0.0, tiny, 0.0, 0.0]);
        assert!(values.iter().all(|x| x.is_finite()), "{values:?}");
        let (values, _) = eigen(&[1e308, -1e308, 0.0, 5e307, 0.0, 0.0]);
        assert!(values.iter().all(|x| x.is_finite()), "{values:?}");
        for bad in [f64::NAN, f64::INFINITY] {
            let (values, vectors) = eigen(&[1.0, 2.0, bad, 0.5, 0.0, 0.0]);
            assert!(values
                .iter()
                .chain(vectors.as_flattened())
                .all(|x| x.is_nan()));
            assert!(eigenvalues(&[bad, 0.0, 0.0, 0.0, 0.0, 0.0])
                .iter()
                .all(|x| x.is_nan()));
        }
        assert_eq!(binary_exponent(1.0), 0);
        assert_eq!(binary_exponent(3.9), 1);
        assert_eq!(binary_exponent(5e-324), -1074);
        assert_eq!(binary_exponent(f64::MAX), 1023);
    }

    /// The largest difference of two `[xx, yy, zz, xy, yz, xz]` tensors.
    fn distance(a: &[f64; 6], b: &[f64; 6]) -> f64 {
        a.iter().zip(b).fold(0.0, |m, (x, y)| m.max((x - y).abs()))
    }

    /// `ln(I + t) / 2` in closed form against the eigenvectors' at strains from 1e-12 to ~1,
    /// with distinct, repeated, nearly repeated and graded eigenvalues in several frames, on
    /// both sides of [`CLOSED_FORM_SPREAD`]: within `64 eps` of the largest component; its
    /// eigenvalues are `ln(1 + l) / 2` of those of `t`.
    #[test]
    fn the_closed_form_log_is_the_eigenvectors_log() {
        let spectra = [
            [0.5625, 0.0, 0.0],
            [0.3, -0.2, 0.1],
            [0.44, 0.44, -0.19],
            [0.9, 0.44, 0.44 + 3e-8],
            [-0.3, 0.44, 0.44 + 1e-8],
            [0.44, 0.44 + 1e-9, 0.44 - 1e-12],
            [0.1, 0.1 + 1e-7, 0.1 - 2e-7],
            [2e-6, 2e-6, 2e-6 + 1e-20],
            [1e-3, 1e-3 + 1e-12, -2e-3],
            [1e-12, -3e-13, 5e-13],
            [1e-12, 1e-12, 1e-12 * (1.0 + 1e-9)],
            [8.0, -0.8, 1.0],
            [8.0, -0.8889, 1.0],
            [-0.99, -0.99 + 1e-9, 0.5],
            [3.0, -0.5, 0.2],
            [3.0, 3.0 + 1e-9, -0.55],
        ];
        let frames = [
            (0.3, -1.1, 2.0),
            (0.7, 0.2, -1.3),
            (1e-9, 0.0, 0.0),
            (std::f64::consts::FRAC_PI_2, 0.0, 0.0),
        ];
        for spectrum in spectra {
            for (a, b, c) in frames {
                let t = rotated(&rotation(a, b, c), spectrum);
                let want = half_ln_1p_by_eigenvectors(&t);
                let got = half_ln_1p(&t);
                let scale = want.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
                let error = distance(&got, &want);
                assert!(
                    error <= 64.0 * f64::EPSILON * scale,
                    "{spectrum:?} in frame {a}: {error:e} of {scale:e}"
                );
                let logs = spectrum.map(|l| 0.5 * l.ln_1p());
                let values = sorted(eigen(&got).0);
                for (g, w) in values.iter().zip(sorted(logs)) {
                    assert!(
                        (g - w).abs() <= 64.0 * f64::EPSILON * scale,
                        "{spectrum:?}: {values:?} vs {logs:?}"
                    );
                }
            }
        }
    }

    /// A diagonal tensor is taken entry by entry; a multiple of the identity is scalar; a
    /// tensor outside the closed form's range or not finite goes through the eigenvectors.
    #[test]
    fn the_log_of_special_tensors() {
        let f = |x: f64| 0.5 * x.ln_1p();
        assert_eq!(
            half_ln_1p(&[0.25, -0.5, 3.0, 0.0, 0.0, 0.0]),
            [f(0.25), f(-0.5), f(3.0), 0.0, 0.0, 0.0]
        );
        let t = rotated(&rotation(0.3, -1.1, 2.0), [0.2; 3]);
        let got = half_ln_1p(&t);
        assert!(distance(&got, &[f(0.2), f(0.2), f(0.2), 0.0, 0.0, 0.0]) <= 4.0 * f64::EPSILON);
        let wide = rotated(&rotation(0.7, 0.2, -1.3), [8.0, -0.9, 0.0]);
        assert_eq!(half_ln_1p(&wide), half_ln_1p_by_eigenvectors(&wide));
        assert!(half_ln_1p(&[f64::NAN, 0.0, 0.0, 0.1, 0.0, 0.0])
            .iter()
            .all(|x| x.is_nan()));
        assert_eq!(half_ln_1p(&[0.0; 6]), [0.0; 6]);
    }
}
