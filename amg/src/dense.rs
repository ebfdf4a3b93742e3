//! Small dense kernels on row-major slices: block inversion (Gauss-Jordan with partial pivoting),
//! Householder thin QR, Cholesky and LU for the coarsest level.
//!
//! Every routine reports failure through a value (never panics on singular input).

/// Relative pivot tolerance: a pivot below `PIVOT_RTOL * max|a|` counts as zero.
pub const PIVOT_RTOL: f64 = 1e-13;

/// A zero pivot met by a factorisation: the elimination step and the pivot's value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ZeroPivot {
    /// Column (elimination step) at which the pivot vanished.
    pub column: usize,
    /// The pivot found (after pivoting, the largest candidate).
    pub pivot: f64,
}

/// Inverts the `n x n` row-major matrix `a` in place by Gauss-Jordan elimination with partial
/// pivoting. `work` must hold at least `n` entries (row permutation record).
/// Fails when a pivot is below [`PIVOT_RTOL`] times the largest entry of `a` (or `a` is zero).
pub fn invert_in_place(a: &mut [f64], n: usize, work: &mut [usize]) -> Result<(), ZeroPivot> {
    debug_assert!(a.len() >= n * n && work.len() >= n);
    let scale = a[..n * n].iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let tol = PIVOT_RTOL * scale;
    let perm = &mut work[..n];
    for k in 0..n {
        // Partial pivoting: largest |a[i][k]| for i >= k.
        let (mut piv_row, mut piv_val) = (k, a[k * n + k].abs());
        for i in k + 1..n {
            let v = a[i * n + k].abs();
            if v > piv_val {
                piv_row = i;
                piv_val = v;
            }
        }
        if !(piv_val > tol) {
            return Err(ZeroPivot {
                column: k,
                pivot: a[piv_row * n + k],
            });
        }
        perm[k] = piv_row;
        if piv_row != k {
            for j in 0..n {
                a.swap(k * n + j, piv_row * n + j);
            }
        }
        let inv_p = 1.0 / a[k * n + k];
        a[k * n + k] = 1.0;
        for j in 0..n {
            a[k * n + j] *= inv_p;
        }
        for i in 0..n {
            if i == k {
                continue;
            }
            let f = a[i * n + k];
            if f != 0.0 {
                a[i * n + k] = 0.0;
                for j in 0..n {
                    a[i * n + j] -= f * a[k * n + j];
                }
            }
        }
    }
    // Undo the row interchanges as column interchanges, in reverse order.
    for k in (0..n).rev() {
        let p = perm[k];
        if p != k {
            for i in 0..n {
                a.swap(i * n + k, i * n + p);
            }
        }
    }
    Ok(())
}

/// Householder thin QR of the `m x k` row-major matrix `a` (`m >= k`), overwriting `a` with the
/// orthonormal factor `Q` (`m x k`, row-major) and writing `R` (`k x k`, row-major, upper triangular)
/// into `r`. `Q` has orthonormal columns even when `a` is rank deficient (a dependent column then
/// yields a zero diagonal entry of `R`, and its `Q` column completes the basis), so `Q R = a` holds in
/// every case. `work` must hold at least `m * k` entries.
pub fn thin_qr(a: &mut [f64], m: usize, k: usize, r: &mut [f64], work: &mut [f64]) {
    debug_assert!(m >= k && a.len() >= m * k && r.len() >= k * k && work.len() >= m * k);
    // Householder vectors are stored column-wise in `work` (column j uses rows j..m).
    let v = &mut work[..m * k];
    v.fill(0.0);
    let mut betas = [0.0f64; 64];
    let mut betas_vec;
    let betas: &mut [f64] = if k <= 64 {
        &mut betas[..k]
    } else {
        betas_vec = vec![0.0; k];
        &mut betas_vec
    };
    for j in 0..k {
        let mut norm2 = 0.0;
        for i in j..m {
            norm2 += a[i * k + j] * a[i * k + j];
        }
        let norm = norm2.sqrt();
        let x0 = a[j * k + j];
        if norm == 0.0 {
            betas[j] = 0.0; // identity reflection: the column is already zero below and at j
            continue;
        }
        let alpha = if x0 >= 0.0 { -norm } else { norm };
        // v = x - alpha e_j, beta = 2 / (v^T v)
        let mut vtv = 0.0;
        for i in j..m {
            let vi = if i == j { x0 - alpha } else { a[i * k + j] };
            v[i * k + j] = vi;
            vtv += vi * vi;
        }
        let beta = if vtv > 0.0 { 2.0 / vtv } else { 0.0 };
        betas[j] = beta;
        // Apply H_j = I - beta v v^T to columns j..k of a.
        for c in j..k {
            let mut s = 0.0;
            for i in j..m {
                s += v[i * k + j] * a[i * k + c];
            }
            s *= beta;
            for i in j..m {
                a[i * k + c] -= s * v[i * k + j];
            }
        }
    }
    // R = upper triangle of the reduced a.
    for i in 0..k {
        for c in 0..k {
            r[i * k + c] = if c >= i { a[i * k + c] } else { 0.0 };
        }
    }
    // Q = H_0 H_1 ... H_{k-1} [I_k; 0], accumulated backwards into a.
    for i in 0..m {
        for c in 0..k {
            a[i * k + c] = if i == c { 1.0 } else { 0.0 };
        }
    }
    for j in (0..k).rev() {
        let beta = betas[j];
        if beta == 0.0 {
            continue;
        }
        for c in j..k {
            let mut s = 0.0;
            for i in j..m {
                s += v[i * k + j] * a[i * k + c];
            }
            s *= beta;
            for i in j..m {
                a[i * k + c] -= s * v[i * k + j];
            }
        }
    }
}

/// Dense factorisation of the coarsest-level matrix: Cholesky when the matrix is symmetric positive
/// definite, LU with partial pivoting otherwise. Factored once per numeric setup, solved per cycle.
#[derive(Debug, Clone)]
pub enum DenseFactor {
    /// Lower-triangular `L` (row-major `n x n`) with `A = L L^T`.
    Cholesky { n: usize, l: Vec<f64> },
    /// Packed `L\U` (row-major) with the row permutation `perm`: `P A = L U`.
    Lu {
        n: usize,
        lu: Vec<f64>,
        perm: Vec<usize>,
    },
}

impl DenseFactor {
    /// Factors the row-major `n x n` matrix `a`: Cholesky first, LU with partial pivoting if Cholesky
    /// meets a non-positive pivot. Fails with the LU pivot that vanished.
    pub fn factor(a: &[f64], n: usize) -> Result<Self, ZeroPivot> {
        debug_assert_eq!(a.len(), n * n);
        cholesky(a, n).map_or_else(|| lu(a, n), Ok)
    }

    /// Number of unknowns.
    pub fn n(&self) -> usize {
        match self {
            Self::Cholesky { n, .. } | Self::Lu { n, .. } => *n,
        }
    }

    /// Solves `A x = b` in place (`x` holds `b` on entry).
    pub fn solve_in_place(&self, x: &mut [f64]) {
        match self {
            Self::Cholesky { n, l } => {
                let n = *n;
                for i in 0..n {
                    let row = &l[i * n..i * n + i];
                    let s: f64 = row.iter().zip(&x[..i]).map(|(a, b)| a * b).sum();
                    x[i] = (x[i] - s) / l[i * n + i];
                }
                for i in (0..n).rev() {
                    let mut s = x[i];
                    for j in i + 1..n {
                        s -= l[j * n + i] * x[j];
                    }
                    x[i] = s / l[i * n + i];
                }
            }
            Self::Lu { n, lu, perm } => {
                let n = *n;
                for (k, &p) in perm.iter().enumerate() {
                    x.swap(k, p);
                }
                for i in 0..n {
                    let s: f64 = lu[i * n..i * n + i]
                        .iter()
                        .zip(&x[..i])
                        .map(|(a, b)| a * b)
                        .sum();
                    x[i] -= s;
                }
                for i in (0..n).rev() {
                    let s: f64 = lu[i * n + i + 1..(i + 1) * n]
                        .iter()
                        .zip(&x[i + 1..n])
                        .map(|(a, b)| a * b)
                        .sum();
                    x[i] = (x[i] - s) / lu[i * n + i];
                }
            }
        }
    }
}

/// Cholesky `A = L L^T`; `None` when a pivot is not positive relative to the diagonal's scale.
fn cholesky(a: &[f64], n: usize) -> Option<DenseFactor> {
    let scale = (0..n).fold(0.0f64, |m, i| m.max(a[i * n + i].abs()));
    let mut l = vec![0.0; n * n];
    for j in 0..n {
        let s: f64 = l[j * n..j * n + j].iter().map(|v| v * v).sum();
        let d = a[j * n + j] - s;
        if !(d > PIVOT_RTOL * scale) {
            return None;
        }
        let d = d.sqrt();
        l[j * n + j] = d;
        for i in j + 1..n {
            let s: f64 = l[i * n..i * n + j]
                .iter()
                .zip(&l[j * n..j * n + j])
                .map(|(x, y)| x * y)
                .sum();
            l[i * n + j] = (a[i * n + j] - s) / d;
        }
    }
    Some(DenseFactor::Cholesky { n, l })
}

/// LU with partial pivoting, `P A = L U` (unit lower `L`).
fn lu(a: &[f64], n: usize) -> Result<DenseFactor, ZeroPivot> {
    let mut lu = a.to_vec();
    let mut perm = vec![0usize; n];
    let scale = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for k in 0..n {
        let (mut p, mut pv) = (k, lu[k * n + k].abs());
        for i in k + 1..n {
            if lu[i * n + k].abs() > pv {
                p = i;
                pv = lu[i * n + k].abs();
            }
        }
        if !(pv > PIVOT_RTOL * scale) {
            return Err(ZeroPivot {
                column: k,
                pivot: lu[p * n + k],
            });
        }
        perm[k] = p;
        if p != k {
            for j in 0..n {
                lu.swap(k * n + j, p * n + j);
            }
        }
        let d = lu[k * n + k];
        for i in k + 1..n {
            let f = lu[i * n + k] / d;
            lu[i * n + k] = f;
            if f != 0.0 {
                for j in k + 1..n {
                    lu[i * n + j] -= f * lu[k * n + j];
                }
            }
        }
    }
    Ok(DenseFactor::Lu { n, lu, perm })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::rand_vec;

    fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for p in 0..k {
                for j in 0..n {
                    c[i * n + j] += a[i * k + p] * b[p * n + j];
                }
            }
        }
        c
    }

    #[test]
    fn invert_matches_identity_with_pivoting() {
        for n in [1, 3, 6] {
            let mut a = rand_vec(n as u64, n * n);
            if n > 1 {
                a[0] = 0.0; // forces a row interchange
            }
            let mut inv = a.clone();
            let mut work = vec![0; n];
            invert_in_place(&mut inv, n, &mut work).unwrap();
            let prod = matmul(&a, &inv, n, n, n);
            for i in 0..n {
                for j in 0..n {
                    let e = if i == j { 1.0 } else { 0.0 };
                    assert!(
                        (prod[i * n + j] - e).abs() < 1e-10,
                        "n={n} ({i},{j}) {}",
                        prod[i * n + j]
                    );
                }
            }
        }
    }

    #[test]
    fn invert_reports_singular_column() {
        // Third row = first + second: rank 2.
        let mut a = vec![1.0, 2.0, 3.0, 0.0, 1.0, 4.0, 1.0, 3.0, 7.0];
        let err = invert_in_place(&mut a, 3, &mut [0; 3]).unwrap_err();
        assert_eq!(err.column, 2);
    }

    #[test]
    fn thin_qr_reconstructs_and_is_orthonormal_even_if_rank_deficient() {
        let (m, k) = (9, 4);
        let mut a = rand_vec(7, m * k);
        for i in 0..m {
            a[i * k + 3] = a[i * k] - 2.0 * a[i * k + 1]; // dependent column
        }
        let mut q = a.clone();
        let mut r = vec![0.0; k * k];
        thin_qr(&mut q, m, k, &mut r, &mut vec![0.0; m * k]);
        let qr = matmul(&q, &r, m, k, k);
        for (x, y) in qr.iter().zip(&a) {
            assert!((x - y).abs() < 1e-12);
        }
        for c1 in 0..k {
            for c2 in 0..k {
                let d: f64 = (0..m).map(|i| q[i * k + c1] * q[i * k + c2]).sum();
                let e = if c1 == c2 { 1.0 } else { 0.0 };
                assert!((d - e).abs() < 1e-12, "Q^T Q ({c1},{c2}) = {d}");
            }
        }
        assert!(r[3 * k + 3].abs() < 1e-12);
    }

    #[test]
    fn dense_factor_solves_spd_and_indefinite() {
        let n = 7;
        let b = rand_vec(3, n * n);
        // SPD: B B^T + n I
        let mut spd = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                spd[i * n + j] = (0..n).map(|p| b[i * n + p] * b[j * n + p]).sum::<f64>();
            }
            spd[i * n + i] += 1.0;
        }
        let f = DenseFactor::factor(&spd, n).unwrap();
        assert!(matches!(f, DenseFactor::Cholesky { .. }));
        let x_true = rand_vec(11, n);
        let rhs = matmul(&spd, &x_true, n, n, 1);
        let mut x = rhs.clone();
        f.solve_in_place(&mut x);
        for (u, v) in x.iter().zip(&x_true) {
            assert!((u - v).abs() < 1e-10);
        }
        // Indefinite: falls back to LU.
        let f = DenseFactor::factor(&b, n).unwrap();
        assert!(matches!(f, DenseFactor::Lu { .. }));
        let rhs = matmul(&b, &x_true, n, n, 1);
        let mut x = rhs.clone();
        f.solve_in_place(&mut x);
        for (u, v) in x.iter().zip(&x_true) {
            assert!((u - v).abs() < 1e-9);
        }
        assert!(DenseFactor::factor(&[1.0, 2.0, 2.0, 4.0], 2).is_err());
    }
}
