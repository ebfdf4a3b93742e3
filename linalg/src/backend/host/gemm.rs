//! Block products `c += op(a) b` for SpGEMM and PtAP, as a trait so one row loop serves every shape.
//!
//! Every implementation computes entry `(r, j)` as `c[r][j] += (sum over k ascending of
//! op(a)[r][k] b[k][j])`, so fixed-size and runtime-size variants give bit-identical results.

/// `c (rows x cols) += op(a) (rows x inner) * b (inner x cols)`, blocks row-major.
pub(crate) trait BlockProduct: Copy + Send + Sync {
    /// Rows of `op(a)` and `c`.
    fn rows(self) -> usize;
    /// Columns of `op(a)`, rows of `b`.
    fn inner(self) -> usize;
    /// Columns of `b` and `c`.
    fn cols(self) -> usize;
    /// `c += op(a) b`.
    fn mul_add(self, a: &[f64], b: &[f64], c: &mut [f64]);
}

/// `op(a) = a`, `a` stored `R x K`; sizes known at compile time.
#[derive(Clone, Copy)]
pub(crate) struct Nn<const R: usize, const K: usize, const C: usize>;

/// `op(a) = a^T`, `a` stored `K x R`; sizes known at compile time.
#[derive(Clone, Copy)]
pub(crate) struct Tn<const R: usize, const K: usize, const C: usize>;

/// Runtime-size `op(a) = a`.
#[derive(Clone, Copy)]
pub(crate) struct DynNn {
    pub r: usize,
    pub k: usize,
    pub c: usize,
}

/// Runtime-size `op(a) = a^T`.
#[derive(Clone, Copy)]
pub(crate) struct DynTn {
    pub r: usize,
    pub k: usize,
    pub c: usize,
}

#[inline(always)]
fn mul_add_nn(r_: usize, k_: usize, c_: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
    let (a, b, c) = (&a[..r_ * k_], &b[..k_ * c_], &mut c[..r_ * c_]);
    for r in 0..r_ {
        for j in 0..c_ {
            let mut t = 0.0;
            for k in 0..k_ {
                t += a[r * k_ + k] * b[k * c_ + j];
            }
            c[r * c_ + j] += t;
        }
    }
}

#[inline(always)]
fn mul_add_tn(r_: usize, k_: usize, c_: usize, a: &[f64], b: &[f64], c: &mut [f64]) {
    let (a, b, c) = (&a[..k_ * r_], &b[..k_ * c_], &mut c[..r_ * c_]);
    for r in 0..r_ {
        for j in 0..c_ {
            let mut t = 0.0;
            for k in 0..k_ {
                t += a[k * r_ + r] * b[k * c_ + j];
            }
            c[r * c_ + j] += t;
        }
    }
}

/// Fixed-size `c += a b` (`a` R x K) or, with `TRANSPOSED`, `c += a^T b` (`a` K x R, read by
/// columns): row `r` of the product is built as a row vector over `j` (so it vectorizes), with
/// the same operations per entry as [`mul_add_nn`] / [`mul_add_tn`].
#[inline(always)]
fn mul_add_fixed<const TRANSPOSED: bool, const R: usize, const K: usize, const C: usize>(
    a: &[f64],
    b: &[f64],
    c: &mut [f64],
) {
    let (a, b, c) = (&a[..R * K], &b[..K * C], &mut c[..R * C]);
    for r in 0..R {
        let mut t = [0.0f64; C];
        for k in 0..K {
            let a_rk = if TRANSPOSED {
                a[k * R + r]
            } else {
                a[r * K + k]
            };
            for j in 0..C {
                t[j] += a_rk * b[k * C + j];
            }
        }
        for j in 0..C {
            c[r * C + j] += t[j];
        }
    }
}

impl<const R: usize, const K: usize, const C: usize> BlockProduct for Nn<R, K, C> {
    fn rows(self) -> usize {
        R
    }
    fn inner(self) -> usize {
        K
    }
    fn cols(self) -> usize {
        C
    }
    #[inline(always)]
    fn mul_add(self, a: &[f64], b: &[f64], c: &mut [f64]) {
        mul_add_fixed::<false, R, K, C>(a, b, c);
    }
}

impl<const R: usize, const K: usize, const C: usize> BlockProduct for Tn<R, K, C> {
    fn rows(self) -> usize {
        R
    }
    fn inner(self) -> usize {
        K
    }
    fn cols(self) -> usize {
        C
    }
    #[inline(always)]
    fn mul_add(self, a: &[f64], b: &[f64], c: &mut [f64]) {
        mul_add_fixed::<true, R, K, C>(a, b, c);
    }
}

impl BlockProduct for DynNn {
    fn rows(self) -> usize {
        self.r
    }
    fn inner(self) -> usize {
        self.k
    }
    fn cols(self) -> usize {
        self.c
    }
    fn mul_add(self, a: &[f64], b: &[f64], c: &mut [f64]) {
        mul_add_nn(self.r, self.k, self.c, a, b, c);
    }
}

impl BlockProduct for DynTn {
    fn rows(self) -> usize {
        self.r
    }
    fn inner(self) -> usize {
        self.k
    }
    fn cols(self) -> usize {
        self.c
    }
    fn mul_add(self, a: &[f64], b: &[f64], c: &mut [f64]) {
        mul_add_tn(self.r, self.k, self.c, a, b, c);
    }
}

/// `dispatch_product!(Nn, DynNn, (r, k, c), m => body)` binds `m` to the fixed-size product for the
/// Galerkin shapes (3,3,6), (6,3,6), (6,6,6) and the square shapes (1,1,1), (3,3,3), else to the
/// runtime-size one, and evaluates `body` (monomorphised per arm).
macro_rules! dispatch_product {
    ($fixed:ident, $dynamic:ident, ($r:expr, $k:expr, $c:expr), $m:ident => $body:expr) => {
        match ($r, $k, $c) {
            (1, 1, 1) => {
                let $m = $fixed::<1, 1, 1>;
                $body
            }
            (3, 3, 3) => {
                let $m = $fixed::<3, 3, 3>;
                $body
            }
            (3, 3, 6) => {
                let $m = $fixed::<3, 3, 6>;
                $body
            }
            (6, 3, 6) => {
                let $m = $fixed::<6, 3, 6>;
                $body
            }
            (6, 6, 6) => {
                let $m = $fixed::<6, 6, 6>;
                $body
            }
            (r, k, c) => {
                let $m = $dynamic { r, k, c };
                $body
            }
        }
    };
}

pub(crate) use dispatch_product;
