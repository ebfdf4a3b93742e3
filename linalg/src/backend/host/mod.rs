//! The host backend: kernels on slices in main memory, parallel with rayon, deterministic (fixed
//! work splits, fixed summation orders). Block kernels are monomorphised over const-generic block
//! sizes, each with a runtime-size fallback.
//!
//! Dispatch happens once per task (a chunk of rows), never per block: a match on the runtime sizes
//! calls the const-generic kernel for the common shapes (1x1, 2x2, 3x3, 3x6, 6x3, 6x6) or the
//! `*_dyn` fallback, which is correct for any size. Kernels that read matrix values are generic
//! over the stored value type (`f64`, or `f32` widened on load; see [`crate::Precision`]). Block products use the
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
