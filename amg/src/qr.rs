//! Householder thin QR of the small dense slabs of the tentative prolongator (one per aggregate):
//! host set-up arithmetic on the near-null space, which is host data.

/// Reflections kept on the stack up to this many columns (the near-null vectors: 6 in 3D).
const STACK_REFLECTIONS: usize = 64;

/// Householder thin QR of the `m x k` row-major matrix `a` (`m >= k`), overwriting `a` with the
/// orthonormal factor `Q` (`m x k`, row-major) and writing `R` (`k x k`, row-major, upper triangular)
/// into `r`. `Q` has orthonormal columns even when `a` is rank deficient (a dependent column then
/// yields a zero diagonal entry of `R`, and its `Q` column completes the basis), so `Q R = a` holds in
/// every case. `work` must hold at least `m * k` entries.
pub(crate) fn thin_qr(a: &mut [f64], m: usize, k: usize, r: &mut [f64], work: &mut [f64]) {
    debug_assert!(m >= k && a.len() >= m * k && r.len() >= k * k && work.len() >= m * k);
    // Householder vectors are stored column-wise in `work` (column j uses rows j..m).
    let v = &mut work[..m * k];
    v.fill(0.0);
    let mut betas = [0.0f64; STACK_REFLECTIONS];
    let mut betas_vec;
    let betas: &mut [f64] = if k <= STACK_REFLECTIONS {
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
}
