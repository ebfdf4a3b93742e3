//! The host backend: kernels on slices in main memory, parallel with rayon, deterministic (fixed
//! work splits, fixed summation orders). Block kernels are monomorphised over const-generic block
//! sizes, each with a runtime-size fallback.
//!
//! Dispatch happens once per task (a chunk of rows), never per block: the `dispatch_*` macros match on
//! the runtime sizes and call the const-generic kernel for the common shapes (1x1, 2x2, 3x3, 3x6, 6x3,
//! 6x6) or the `*_dyn` fallback, which is correct for any size. Block products use the
//! [`gemm::BlockProduct`] trait instead, dispatched by `dispatch_product!`.

pub(crate) mod blas1;
pub(crate) mod block_diagonal;
pub(crate) mod bsr;
pub(crate) mod gemm;
pub(crate) mod mask;
pub(crate) mod products;
pub(crate) mod spmv;
pub(crate) mod sum;
pub(crate) mod transfer;

/// `dispatch_rc!((rows, cols), fixed_fn, dyn_fn, (args...))` calls `fixed_fn::<R, C>(args...)` for a
/// monomorphised shape, else `dyn_fn(rows, cols, args...)`.
macro_rules! dispatch_rc {
    (($r:expr, $c:expr), $fixed:ident, $dynamic:ident, ($($arg:expr),* $(,)?)) => {
        match ($r, $c) {
            (1, 1) => $fixed::<1, 1>($($arg),*),
            (2, 2) => $fixed::<2, 2>($($arg),*),
            (3, 3) => $fixed::<3, 3>($($arg),*),
            (3, 6) => $fixed::<3, 6>($($arg),*),
            (6, 3) => $fixed::<6, 3>($($arg),*),
            (6, 6) => $fixed::<6, 6>($($arg),*),
            (r, c) => $dynamic(r, c, $($arg),*),
        }
    };
}

pub(crate) use dispatch_rc;
