//! Largest-eigenvalue estimate of `D^{-1} A` (`D` the point-block diagonal) by the Lanczos process
//! hidden in preconditioned CG: a few CG steps on `A x = b`, preconditioned by point-block Jacobi, from
//! a deterministic pseudo-random `b`; the CG coefficients form the Lanczos tridiagonal matrix whose
//! largest eigenvalue (by bisection) approximates `lambda_max(D^{-1} A)` from below.

use crate::{AmgError, LinearOperator, PointBlockJacobi, Preconditioner};
use linalg::{ops, Bsr, CgCoefficients, Vector};

/// Seed of the start vector's hash (any fixed value: the estimate must not depend on threads).
const START_SEED: u64 = 0x5EED;
/// The iteration stops when `r^T z` drops below this fraction of its previous value: the Krylov
/// space is exhausted (or the operator is numerically singular there).
const BREAKDOWN_RATIO: f64 = 1e-28;
/// Bisection steps of the tridiagonal eigenvalue (enough to reach adjacent doubles).
const BISECTION_STEPS: usize = 200;

/// Estimate of `lambda_max(D^{-1} A)` from `steps` CG/Lanczos steps (fewer if CG breaks down or
/// converges). `Ok(None)` when not even one step is possible (zero operator, non-SPD breakdown).
/// Allocates three vectors of `a.n_rows()`; [`estimate_emax_in`] takes them from the caller.
pub fn estimate_emax(
    a: &Bsr,
    pbj: &PointBlockJacobi,
    steps: usize,
) -> Result<Option<f64>, AmgError> {
    let n = a.n_rows();
    let d = a.device();
    let (mut r, mut p, mut w) = (
        Vector::zeros_on(&d, n)?,
        Vector::zeros_on(&d, n)?,
        Vector::zeros_on(&d, n)?,
    );
    estimate_emax_in(a, pbj, steps, [&mut r, &mut p, &mut w])
}

/// [`estimate_emax`] in the caller's scratch vectors (any content; overwritten). Errors if a
/// scratch vector's length is not `a.n_rows()`.
pub fn estimate_emax_in(
    a: &Bsr,
    pbj: &PointBlockJacobi,
    steps: usize,
    work: [&mut Vector; 3],
) -> Result<Option<f64>, AmgError> {
    let [r, p, w] = work;
    ops::fill_hashed(r, START_SEED)?;
    estimate_emax_from(a, pbj, steps, [r, p, w])
}

/// Entry `i` of the start vector of [`estimate_emax`] when the entry's global index in the
/// serial numbering is `serial_index`: what [`estimate_emax_from`] needs on ranks whose
/// numbering is not the serial one, to start (and end) where the serial estimate does.
pub fn start_entry(serial_index: u64) -> f64 {
    linalg::hash::signed_unit(linalg::hash::splitmix64(
        serial_index ^ START_SEED.rotate_left(32),
    ))
}

/// [`estimate_emax_in`] from the start vector the caller put in `work[0]` (see [`start_entry`]),
/// for any operator (a distributed one included: its reductions are exact, so ranks and the
/// serial run get the same coefficients up to the products' rounding). The CG scalars live
/// where the vectors do when that is one GPU rank (no wait for the device until the one
/// download of the coefficients), on the host otherwise: [`estimate_emax_with`].
pub fn estimate_emax_from<A: LinearOperator + ?Sized>(
    a: &A,
    pbj: &PointBlockJacobi,
    steps: usize,
    work: [&mut Vector; 3],
) -> Result<Option<f64>, AmgError> {
    let coefficients = CgCoefficients::with_vectors(work[0], steps, BREAKDOWN_RATIO)?;
    estimate_emax_with(a, pbj, coefficients, work)
}

/// The scalars of the estimate's CG/Lanczos recurrence for `steps` steps on the host, whatever
/// the vectors' device: [`estimate_emax_with`] with them is the estimate of every operator on
/// every device and rank count, one host wait per dot.
pub fn host_coefficients(steps: usize) -> CgCoefficients {
    CgCoefficients::on_host(steps, BREAKDOWN_RATIO)
}

/// [`estimate_emax_from`] with the caller's recurrence scalars (of [`host_coefficients`], or
/// those [`estimate_emax_from`] makes: on one GPU on the device); the step count is theirs. The
/// one algorithm of the estimate: the same steps in the same order wherever the scalars are
/// (host scalars end the loop at a stop; on the device the launches after one change nothing),
/// and the same coefficients bit for bit (linalg's [`CgCoefficients`] invariant), so the same
/// estimate.
pub fn estimate_emax_with<A: LinearOperator + ?Sized>(
    a: &A,
    pbj: &PointBlockJacobi,
    mut cg: CgCoefficients,
    work: [&mut Vector; 3],
) -> Result<Option<f64>, AmgError> {
    let [r, p, w] = work;
    // `w` holds `z = D^{-1} r` and `q = A p` in turn: each is dead when the other is written.
    pbj.apply(r, w)?;
    cg.start(r, w)?;
    p.copy_from(w)?;
    for _ in 0..cg.steps() {
        // host scalars: a stop is known at once; device scalars: the updates after one do
        // nothing, the products still run (nothing recorded depends on them)
        if cg.stopped() {
            break;
        }
        a.apply(p, w)?; // q = A p
        cg.alpha_update(p, w, r)?; // alpha = rz / pq; r -= alpha q
        if cg.stopped() {
            break;
        }
        pbj.apply(r, w)?; // z = D^{-1} r
        cg.beta_update(r, w, p)?; // beta = rz_new / rz; p = z + beta p
    }
    let (alphas, betas) = cg.coefficients()?;
    let m = alphas.len();
    if m == 0 {
        return Ok(None);
    }
    // Lanczos tridiagonal: T_jj = 1/alpha_j + beta_{j-1}/alpha_{j-1}, T_{j,j+1} = sqrt(beta_j)/alpha_j.
    let diag: Vec<f64> = (0..m)
        .map(|j| {
            1.0 / alphas[j]
                + if j > 0 {
                    betas[j - 1] / alphas[j - 1]
                } else {
                    0.0
                }
        })
        .collect();
    let off: Vec<f64> = (0..m - 1).map(|j| betas[j].sqrt() / alphas[j]).collect();
    Ok(Some(tridiagonal_max_eigenvalue(&diag, &off)))
}

/// Largest eigenvalue of the symmetric tridiagonal matrix (`diag`, `off`) by Sturm-count bisection.
fn tridiagonal_max_eigenvalue(diag: &[f64], off: &[f64]) -> f64 {
    let m = diag.len();
    let radius = |j: usize| {
        (if j > 0 { off[j - 1].abs() } else { 0.0 }) + if j + 1 < m { off[j].abs() } else { 0.0 }
    };
    let mut lo = (0..m)
        .map(|j| diag[j] - radius(j))
        .fold(f64::INFINITY, f64::min);
    let mut hi = (0..m)
        .map(|j| diag[j] + radius(j))
        .fold(f64::NEG_INFINITY, f64::max);
    // Number of eigenvalues below x (Sturm sequence of the LDL^T pivots).
    let count_below = |x: f64| {
        let mut count = 0;
        let mut d = 1.0;
        for j in 0..m {
            let o2 = if j > 0 { off[j - 1] * off[j - 1] } else { 0.0 };
            d = diag[j] - x - if j > 0 { o2 / d } else { 0.0 };
            if d == 0.0 {
                d = -f64::EPSILON * (x.abs() + 1.0);
            }
            if d < 0.0 {
                count += 1;
            }
        }
        count
    };
    for _ in 0..BISECTION_STEPS {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if count_below(mid) == m {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::laplace_1d_blocks;

    #[test]
    fn tridiagonal_eigenvalue_matches_closed_form() {
        // tridiag(-1, 2, -1) of size m: lambda_max = 2 - 2 cos(m pi / (m + 1)).
        let m = 12;
        let lmax = tridiagonal_max_eigenvalue(&vec![2.0; m], &vec![-1.0; m - 1]);
        let exact = 2.0 - 2.0 * (m as f64 * std::f64::consts::PI / (m as f64 + 1.0)).cos();
        assert!((lmax - exact).abs() < 1e-12, "{lmax} vs {exact}");
    }

    #[test]
    fn estimate_is_close_below_the_true_value() {
        // D^{-1} A of the 1D Laplacian = A / 2, lambda_max = 1 - cos(n pi / (n + 1)) -> ~2.
        let n = 200;
        let a = laplace_1d_blocks(n, 3);
        let pbj = PointBlockJacobi::new(&a).unwrap();
        let exact = 1.0 - (n as f64 * std::f64::consts::PI / (n as f64 + 1.0)).cos();
        let est = estimate_emax(&a, &pbj, 10).unwrap().unwrap();
        assert!(
            est <= exact * (1.0 + 1e-12) && est > 0.9 * exact,
            "estimate {est}, exact {exact}"
        );
        assert!(estimate_emax(&a, &pbj, 0).unwrap().is_none());
        // The caller's scratch, whatever its content, gives the same estimate bit for bit.
        let n = a.n_rows();
        let mut work = [vec![f64::NAN; n], vec![7.0; n], vec![-1.0; n]].map(Vector::from_vec);
        let [r, p, w] = &mut work;
        assert_eq!(
            estimate_emax_in(&a, &pbj, 10, [r, p, w]).unwrap(),
            Some(est)
        );
        let mut short = Vector::zeros(n - 1);
        let [r, p, _] = &mut work;
        assert!(estimate_emax_in(&a, &pbj, 10, [r, p, &mut short]).is_err());
    }
}
