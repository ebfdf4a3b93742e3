//! Block sparse linear algebra for hexfem: validated block patterns, BSR matrices with independent
//! row and column block sizes, vectors with a [`Layout`] over ranks, block diagonals, COO assembly
//! plans, constraint masks, and products (SpMV, transpose, SpGEMM, PtAP) split into a symbolic
//! step that returns a reusable plan and a numeric step that uses it.
//!
//! Values live on a [`Device`] (host today); every numeric call runs where its operands live and
//! returns a `Result` (a launch, an allocation or a message can fail). Host access is explicit
//! (`host`, `host_mut`, `to_host_vec`, host constructors). Symbolic results (patterns, plans) are
//! immutable host-side values shared in `Arc`s.
//!
//! Every numeric phase is parallel (rayon) and deterministic: work is split into fixed chunks and
//! every sum runs in a fixed order, so results are bit-identical for any thread count.

/// The kernels by device: internal. Other crates use [`gpu`] and the typed operations of
/// [`Vector`], [`Bsr`] and [`dist::DistBsr`]. Public (hidden from the docs) only with the
/// `kernel-bench` feature, for the single-kernel benchmark `examples/cuda_bench.rs`.
#[cfg(feature = "kernel-bench")]
#[doc(hidden)]
pub mod backend;
#[cfg(not(feature = "kernel-bench"))]
mod backend;
mod block_diagonal;
mod bsr;
mod cg_coefficients;
mod coo;
pub mod dense;
mod device;
pub mod direct;
pub mod dist;
mod error;
pub mod exact;
pub mod gpu;
pub mod grouped_qr;
pub mod hash;
mod layout;
mod mask;
mod owned_dot;
mod pattern;
mod precision;
mod ptap;
mod rows;
mod scan;
mod spgemm;
mod transfer;
mod transpose;
mod vector;

pub use block_diagonal::BlockDiagonal;
pub use bsr::Bsr;
pub use cg_coefficients::CgCoefficients;
pub use comm;
pub use coo::{CooPlan, CooSum, SlotOrder, SlotRun};
pub use device::{
    kernel_build_seconds, kernel_cache_report, Device, KernelCacheReport, Transfers,
    KERNEL_CACHE_ENV,
};
pub use error::LinalgError;
pub use grouped_qr::{thin_qr, thin_qr_of_groups, GroupedQrPlan};
pub use layout::Layout;
pub use mask::{DofMask, EliminationPlan, ELIMINATED_DIAGONAL_FRACTION, MAX_MASK_BLOCK};
pub use pattern::BlockPattern;
pub use precision::Precision;
pub use ptap::{ptap, ptap_numeric, ptap_symbolic, PtapPlan, PtapWorkspace};
pub use rows::{collect_rows, fill_rows, split_rows};
pub use scan::{exclusive_sums, inverse_permutation, row_offsets};
pub use spgemm::{spgemm, spgemm_numeric, spgemm_symbolic, SpgemmPlan};
pub use transfer::{
    prolong_add, restrict, smooth_prolongator_in_place, smooth_prolongator_mapped,
    smooth_prolongator_planned, SmoothingMap,
};
pub use transpose::{transpose, transpose_numeric, transpose_symbolic, TransposePlan};
pub use vector::{ops, Vector};
