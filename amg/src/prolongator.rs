//! Prolongator smoothing `P = (I - omega D^{-1} A) P0`, with `D` the point-block diagonal of `A`.
//!
//! `A P0` comes from `linalg::spgemm`; its pattern contains `P0`'s (every diagonal block of `A` is
//! stored), so `P` lives on the pattern of `A P0` and `linalg::smooth_prolongator_in_place` turns
//! `A P0` into `P` where it lies.

use crate::{AmgError, PointBlockJacobi};
use linalg::{Bsr, SpgemmPlan};

/// Returns `P = P0 - omega D^{-1} (A P0)`; `pbj` holds `D^{-1}` of `a`.
pub fn smooth_prolongator(
    a: &Bsr,
    pbj: &PointBlockJacobi,
    p0: &Bsr,
    omega: f64,
) -> Result<Bsr, AmgError> {
    smooth_prolongator_planned(&smoothing_plan(a, p0)?, a, pbj, p0, omega)
}

/// The symbolic product `A P0` of the prolongator smoothing (its pattern is `P`'s), sharing the
/// patterns of `a` and `p0`: kept by a hierarchy for later [`smooth_prolongator_planned`] calls
/// on the same patterns. Made where `a` lives (on a GPU the pattern is built there and only
/// comes down: [`SpgemmPlan::new_on`]).
pub fn smoothing_plan(a: &Bsr, p0: &Bsr) -> Result<SpgemmPlan, AmgError> {
    Ok(SpgemmPlan::new_on(&a.device(), a.pattern(), p0.pattern())?)
}

/// [`smooth_prolongator`] on a plan of `A P0` from [`smoothing_plan`] (the operands must carry
/// the plan's patterns): the same values, bit for bit, without the symbolic product.
pub fn smooth_prolongator_planned(
    plan: &SpgemmPlan,
    a: &Bsr,
    pbj: &PointBlockJacobi,
    p0: &Bsr,
    omega: f64,
) -> Result<Bsr, AmgError> {
    let bs = a.block_rows();
    if pbj.block_size() != bs || pbj.n_blocks() != a.pattern().n_block_rows() {
        return Err(AmgError::DimensionMismatch {
            what: "prolongator smoothing: point-block Jacobi blocks",
            expected: a.pattern().n_block_rows(),
            found: pbj.n_blocks(),
        });
    }
    let mut p = Bsr::zeros_on(&a.device(), plan.pattern().clone(), bs, p0.block_cols())?;
    linalg::spgemm_numeric(plan, a, p0, &mut p)?;
    // on a GPU the smoothing's slot maps are kept with the plan: a renewal uploads none
    linalg::smooth_prolongator_planned(plan, &mut p, omega, pbj.inverse(), p0)?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{rand_vec, random_spd_block_tridiagonal};
    use linalg::BlockPattern;
    use std::sync::Arc;

    #[test]
    fn matches_dense_formula() {
        let (n, bs, k) = (12, 3, 2);
        let a = random_spd_block_tridiagonal(n, bs, 5);
        // P0: rows grouped in pairs (aggregate i / 2), row 7 unaggregated.
        let mut row_ptr = vec![0];
        let mut cols = vec![];
        for i in 0..n {
            if i != 7 {
                cols.push((i / 2) as u32);
            }
            row_ptr.push(cols.len());
        }
        let pat = Arc::new(BlockPattern::new(n, n / 2, row_ptr, cols).unwrap());
        let p0 = Bsr::from_parts(pat, bs, k, rand_vec(2, (n - 1) * bs * k)).unwrap();
        let pbj = PointBlockJacobi::new(&a).unwrap();
        let omega = 0.7;
        let p = smooth_prolongator(&a, &pbj, &p0, omega).unwrap();
        // Dense reference.
        let (nr, nc) = (n * bs, n / 2 * k);
        let ad = a.to_dense().unwrap();
        let p0d = p0.to_dense().unwrap();
        let mut dinv = vec![0.0; nr * nr];
        let inv = pbj.inverse().host().unwrap();
        for b in 0..n {
            for r in 0..bs {
                for c in 0..bs {
                    dinv[(b * bs + r) * nr + b * bs + c] = inv[b * bs * bs + r * bs + c];
                }
            }
        }
        let mul = |x: &[f64], y: &[f64], m: usize, q: usize, w: usize| {
            let mut o = vec![0.0; m * w];
            for i in 0..m {
                for t in 0..q {
                    for j in 0..w {
                        o[i * w + j] += x[i * q + t] * y[t * w + j];
                    }
                }
            }
            o
        };
        let dap = mul(&dinv, &mul(&ad, &p0d, nr, nr, nc), nr, nr, nc);
        let pd = p.to_dense().unwrap();
        for i in 0..nr * nc {
            assert!((pd[i] - (p0d[i] - omega * dap[i])).abs() < 1e-12);
        }
    }
}
