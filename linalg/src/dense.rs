//! Small dense kernels: block inversion (Gauss-Jordan with partial pivoting, for
//! [`crate::BlockDiagonal`]) and [`DenseFactor`], the Cholesky / LU factorisation of a small
//! matrix (the coarsest AMG level) whose solves take [`Vector`]s.
//!
//! Every routine reports failure through a value (never panics on singular input). Factorisation
//! and solves are sequential, hence deterministic.

// `!(x > tol)` is deliberate: it also rejects NaN.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use std::sync::Arc;

use crate::backend::cuda::{CudaContext, DeviceDenseInverse};
use crate::device::Placed;
use crate::vector::check_len;
use crate::{Bsr, Device, LinalgError, Vector};

/// Relative pivot tolerance: a pivot below `PIVOT_RTOL * max|a|` counts as zero.
pub const PIVOT_RTOL: f64 = 1e-13;

/// A zero pivot met by a factorisation: the elimination step and the pivot's value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ZeroPivot {
    /// Column (elimination step) at which the pivot vanished.
    pub column: usize,
    /// The pivot found (after pivoting, the largest candidate).
    pub pivot: f64,
}

/// Inverts the `n x n` row-major matrix `a` in place by Gauss-Jordan elimination with partial
/// pivoting. `work` must hold at least `n` entries (row permutation record).
/// Fails when a pivot is below [`PIVOT_RTOL`] times the largest entry of `a` (or `a` is zero).
pub(crate) fn invert_in_place(
    a: &mut [f64],
    n: usize,
    work: &mut [usize],
) -> Result<(), ZeroPivot> {
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

/// Which factorisation [`DenseFactor`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenseMethod {
    /// `A = L L^T`.
    Cholesky,
    /// `P A = L U` with partial pivoting.
    Lu,
    /// The explicit inverse, on a GPU (Gauss-Jordan with partial pivoting; a solve is one dense
    /// matrix-vector product).
    DeviceInverse,
    /// The explicit inverse in host memory, the GPU's [`DenseMethod::DeviceInverse`] bit for
    /// bit (the same Gauss-Jordan steps, the same row sums in the same order).
    Inverse,
}

/// Dense factorisation of a small square matrix: Cholesky when the matrix is symmetric positive
/// definite, LU with partial pivoting otherwise. Factored once, solved many times (host memory).
#[derive(Debug, Clone)]
pub struct DenseFactor {
    n: usize,
    factor: Factor,
}

#[derive(Debug, Clone)]
enum Factor {
    /// Lower-triangular `L` (row-major `n x n`) with `A = L L^T`.
    Cholesky { l: Vec<f64> },
    /// Packed `L\U` (row-major) with the row permutation `perm`: `P A = L U`.
    Lu { lu: Vec<f64>, perm: Vec<usize> },
    /// The explicit inverse (row-major `n x n`) in host memory.
    Inverse { inv: Vec<f64> },
    /// The inverse on a GPU.
    Device {
        ctx: Arc<CudaContext>,
        inv: Arc<DeviceDenseInverse>,
    },
}

impl DenseFactor {
    /// Factors the square matrix `a` (any block size), densified in host memory: Cholesky first,
    /// LU with partial pivoting if Cholesky meets a non-positive pivot. A matrix singular for
    /// both is [`LinalgError::SingularMatrix`].
    pub fn factor(a: &Bsr) -> Result<Self, LinalgError> {
        if a.n_rows() != a.n_cols() {
            return Err(LinalgError::DimensionMismatch {
                what: "DenseFactor::factor: columns",
                expected: a.n_rows(),
                found: a.n_cols(),
            });
        }
        if a.cuda32().is_some() {
            // fp32 storage (the coarsest level of mixed-precision AMG): the factor is fp64
            return Self::factor(&a.to_precision(crate::Precision::Double)?);
        }
        if let Some((ctx, m)) = a.cuda() {
            let inv = DeviceDenseInverse::factor(ctx, m, PIVOT_RTOL)?;
            return Ok(Self {
                n: a.n_rows(),
                factor: Factor::Device {
                    ctx: ctx.clone(),
                    inv: Arc::new(inv),
                },
            });
        }
        Self::factor_dense(&a.to_dense()?, a.n_rows())
    }

    /// The explicit inverse of the square matrix `a` by Gauss-Jordan elimination with partial
    /// pivoting, on `a`'s device; a solve is one dense matrix-vector product with each row summed
    /// in column order. The host's and the GPU's inverses and solves are the same bits (what
    /// makes a GPU AMG cycle equal the host's). A pivot below [`PIVOT_RTOL`] times the largest
    /// entry is [`LinalgError::SingularMatrix`] (its pivot NaN on a GPU).
    pub fn invert(a: &Bsr) -> Result<Self, LinalgError> {
        if a.n_rows() != a.n_cols() {
            return Err(LinalgError::DimensionMismatch {
                what: "DenseFactor::invert: columns",
                expected: a.n_rows(),
                found: a.n_cols(),
            });
        }
        if a.precision() != crate::Precision::Double {
            // fp32 storage (the coarsest level of mixed-precision AMG): the inverse is fp64
            return Self::invert(&a.to_precision(crate::Precision::Double)?);
        }
        if a.cuda().is_some() {
            return Self::factor(a);
        }
        Self::invert_dense(a.to_dense()?, a.n_rows())
    }

    /// [`DenseFactor::invert`] of the row-major `n x n` host matrix `a`.
    pub fn invert_dense(mut a: Vec<f64>, n: usize) -> Result<Self, LinalgError> {
        if a.len() != n * n {
            return Err(LinalgError::LengthMismatch {
                what: "DenseFactor: dense matrix",
                expected: n * n,
                found: a.len(),
            });
        }
        let mut work = vec![0usize; n];
        invert_in_place(&mut a, n, &mut work).map_err(|z| LinalgError::SingularMatrix {
            n,
            column: z.column,
            pivot: z.pivot,
        })?;
        Ok(Self {
            n,
            factor: Factor::Inverse { inv: a },
        })
    }

    /// [`DenseFactor::factor`] of the row-major `n x n` host matrix `a`.
    pub fn factor_dense(a: &[f64], n: usize) -> Result<Self, LinalgError> {
        if a.len() != n * n {
            return Err(LinalgError::LengthMismatch {
                what: "DenseFactor: dense matrix",
                expected: n * n,
                found: a.len(),
            });
        }
        let factor = match cholesky(a, n) {
            Some(l) => Factor::Cholesky { l },
            None => lu(a, n).map_err(|z| LinalgError::SingularMatrix {
                n,
                column: z.column,
                pivot: z.pivot,
            })?,
        };
        Ok(Self { n, factor })
    }

    /// Number of unknowns.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The factorisation used.
    pub fn method(&self) -> DenseMethod {
        match self.factor {
            Factor::Cholesky { .. } => DenseMethod::Cholesky,
            Factor::Lu { .. } => DenseMethod::Lu,
            Factor::Device { .. } => DenseMethod::DeviceInverse,
            Factor::Inverse { .. } => DenseMethod::Inverse,
        }
    }

    /// Solves `A x = b`.
    pub fn solve(&self, b: &Vector, x: &mut Vector) -> Result<(), LinalgError> {
        if let Factor::Device { ctx, inv } = &self.factor {
            check_len("DenseFactor::solve: b", b, self.n)?;
            check_len("DenseFactor::solve: x", x, self.n)?;
            return match (b.storage(), x.storage_mut()) {
                (Placed::Cuda(_, b), Placed::Cuda(_, x)) => inv.solve(ctx, b, x),
                _ => Err(LinalgError::DeviceMismatch {
                    what: "DenseFactor::solve",
                    expected: Device::Cuda(ctx.clone()).name(),
                    found: b.device().name(),
                }),
            };
        }
        x.copy_from(b)?;
        self.solve_in_place(x)
    }

    /// Solves `A x = b` in place (`x` holds `b` on entry).
    pub fn solve_in_place(&self, x: &mut Vector) -> Result<(), LinalgError> {
        check_len("DenseFactor::solve", x, self.n)?;
        if let Factor::Device { .. } = &self.factor {
            let b = x.try_clone()?;
            return self.solve(&b, x);
        }
        match x.storage_mut() {
            Placed::Host(x) => self.solve_host(x),
            Placed::Cuda(..) => {
                return Err(LinalgError::DeviceMismatch {
                    what: "DenseFactor::solve (a host factorisation)",
                    expected: Device::Host.name(),
                    found: x.device().name(),
                })
            }
        }
        Ok(())
    }

    fn solve_host(&self, x: &mut [f64]) {
        let n = self.n;
        match &self.factor {
            Factor::Cholesky { l } => {
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
            Factor::Lu { lu, perm } => {
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
            Factor::Inverse { inv } => {
                // `linalg/cuda/ops.cu`'s dense_matvec: each row from 0.0, in column order
                let b = x.to_vec();
                for (xi, row) in x.iter_mut().zip(inv.chunks_exact(n)) {
                    let mut s = 0.0;
                    for (m, v) in row.iter().zip(&b) {
                        s += m * v;
                    }
                    *xi = s;
                }
            }
            // solve_in_place sends device factors to `solve` before reaching here
            Factor::Device { .. } => {}
        }
    }
}

/// Cholesky `A = L L^T`; `None` when a pivot is not positive relative to the diagonal's scale.
fn cholesky(a: &[f64], n: usize) -> Option<Vec<f64>> {
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
    Some(l)
}

/// LU with partial pivoting, `P A = L U` (unit lower `L`).
fn lu(a: &[f64], n: usize) -> Result<Factor, ZeroPivot> {
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
    Ok(Factor::Lu { lu, perm })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::SplitMix64;

    fn rand_vec(seed: u64, n: usize) -> Vec<f64> {
        let mut g = SplitMix64(seed);
        (0..n).map(|_| g.next_signed_unit()).collect()
    }

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
    fn dense_factor_solves_spd_and_indefinite() {
        let n = 7;
        let b = rand_vec(3, n * n);
        // SPD: B B^T + I
        let mut spd = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                spd[i * n + j] = (0..n).map(|p| b[i * n + p] * b[j * n + p]).sum::<f64>();
            }
            spd[i * n + i] += 1.0;
        }
        let f = DenseFactor::factor_dense(&spd, n).unwrap();
        assert_eq!(f.method(), DenseMethod::Cholesky);
        let x_true = rand_vec(11, n);
        let rhs = Vector::from_vec(matmul(&spd, &x_true, n, n, 1));
        let mut x = Vector::zeros(n);
        f.solve(&rhs, &mut x).unwrap();
        for (u, v) in x.host().unwrap().iter().zip(&x_true) {
            assert!((u - v).abs() < 1e-10);
        }
        // Indefinite: falls back to LU; the Bsr entry point gives the same factor.
        let f = DenseFactor::factor(&Bsr::from_dense(&b, n, n, 1, 1).unwrap()).unwrap();
        assert_eq!(f.method(), DenseMethod::Lu);
        let mut x = Vector::from_vec(matmul(&b, &x_true, n, n, 1));
        f.solve_in_place(&mut x).unwrap();
        for (u, v) in x.host().unwrap().iter().zip(&x_true) {
            assert!((u - v).abs() < 1e-9);
        }
        assert!(matches!(
            DenseFactor::factor_dense(&[1.0, 2.0, 2.0, 4.0], 2),
            Err(LinalgError::SingularMatrix {
                n: 2,
                column: 1,
                ..
            })
        ));
        assert!(f.solve_in_place(&mut Vector::zeros(n + 1)).is_err());
    }

    #[test]
    fn explicit_inverse_solves_as_the_factorisations_do() {
        let n = 30;
        let r = rand_vec(5, n * n);
        // symmetric, diagonally dominant, with an off-diagonal pivot in row order
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                a[i * n + j] = r[i * n + j] + r[j * n + i];
            }
            a[i * n + i] += 2.0 * n as f64;
        }
        let b = rand_vec(6, n);
        let chol = DenseFactor::factor_dense(&a, n).unwrap();
        let inv = DenseFactor::invert_dense(a.clone(), n).unwrap();
        assert_eq!(inv.method(), DenseMethod::Inverse);
        let (mut x, mut y) = (Vector::zeros(n), Vector::zeros(n));
        let bv = Vector::from_vec(b.clone());
        chol.solve(&bv, &mut x).unwrap();
        inv.solve(&bv, &mut y).unwrap();
        for (p, q) in x.host().unwrap().iter().zip(y.host().unwrap()) {
            assert!((p - q).abs() <= 1e-13 * p.abs().max(1.0), "{p} vs {q}");
        }
        // A A^-1 b = b
        let y = y.host().unwrap();
        for i in 0..n {
            let s: f64 = (0..n).map(|j| a[i * n + j] * y[j]).sum();
            assert!((s - b[i]).abs() <= 1e-12, "row {i}: {s} vs {}", b[i]);
        }
        assert!(matches!(
            DenseFactor::invert_dense(vec![1.0, 2.0, 2.0, 4.0], 2),
            Err(LinalgError::SingularMatrix { column: 1, .. })
        ));
        assert!(matches!(
            DenseFactor::invert(&Bsr::from_dense(&[1.0, 2.0], 1, 2, 1, 1).unwrap()),
            Err(LinalgError::DimensionMismatch { .. })
        ));
    }
}
