//! Block sparse linear algebra for hexfem: validated block patterns, BSR matrices with independent
//! row and column block sizes, vectors, COO assembly plans, and products (SpMV, transpose, SpGEMM,
//! PtAP) split into a symbolic step that returns a reusable plan and a numeric step that uses it.
//!
//! Every numeric phase is parallel (rayon) and deterministic: work is split into fixed chunks and
//! every sum runs in a fixed order, so results are bit-identical for any thread count.

pub mod backend;
mod bsr;
mod coo;
pub mod direct;
mod error;
mod kernels;
mod pattern;
mod ptap;
mod rows;
mod spgemm;
mod transpose;
mod vector;

pub use bsr::Bsr;
pub use coo::{CooPlan, CooSum, SlotRun};
pub use error::LinalgError;
pub use pattern::BlockPattern;
pub use ptap::{ptap, ptap_numeric, ptap_symbolic, PtapPlan};
pub use spgemm::{spgemm, spgemm_numeric, spgemm_symbolic, SpgemmPlan};
pub use transpose::{transpose, transpose_numeric, transpose_symbolic, TransposePlan};
pub use vector::{ops, Vector};
