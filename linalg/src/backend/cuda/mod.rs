//! The CUDA backend: device buffers, the kernels of the solver, and the host plans uploaded once.
//!
//! - [`CudaContext`]: one GPU (driver and NVRTC loaded at run time: a machine without them gets
//!   [`crate::LinalgError::CudaUnavailable`], never a panic), one stream, the kernels compiled
//!   so far and the host<->device transfer counters.
//! - Kernels are the `.cu` files under `linalg/cuda/`, compiled by NVRTC at first use for the
//!   device's `sm_XY`, specialised per block shape by injected `#define`s and cached per process.
//! - Data: [`DeviceBuffer`] (any array), [`DevicePattern`] / [`DeviceBsr`] (mirrors of the host
//!   types, same layout), and device mirrors of the host's symbolic plans: [`DeviceCooPlan`],
//!   [`DeviceSpgemmPlan`], [`DevicePtapPlan`], [`DeviceTransposeMap`].
//! - Operations (all asynchronous on the context's stream; errors of a kernel surface at the
//!   next synchronising call): [`spmv`], [`spmv_transpose`] (restriction), the vector kernels
//!   of [`vector`], [`DeviceBlockDiagonal`] (point-block Jacobi), [`chebyshev_smooth`], COO
//!   assembly, SpGEMM and the Galerkin product.
//!
//! Determinism: every kernel is owner-computes (one thread or warp writes each output value,
//! no atomics on values), so results are the same bits on every run. SpMV, restriction, vector
//! operations and dot, block inversion and apply, Chebyshev, COO sums and SpGEMM are moreover
//! bit-identical to the host (kernels compiled with `--fmad=false` that mirror the host's
//! operation order); the Galerkin product matches the host's streamed order, the fused one to
//! rounding.

mod buffer;
mod context;
mod coo;
pub mod external;
pub mod galerkin;
pub mod graph;
pub mod halo;
mod jacobi;
mod kernel_cache;
mod kernels;
mod matrix;
pub mod mis;
pub mod nccl;
mod nvrtc;
pub mod ops;
pub mod peer;
mod products;
mod qr;
pub mod rank_graph;
mod spmv;
mod staging;
mod symbolic;
#[cfg(test)]
mod term_pairs;
#[cfg(test)]
mod tests;
pub mod vector;

pub use buffer::DeviceBuffer;

/// An element type of device arrays ([`DeviceBuffer<T>`], the uploads, downloads, zeros and
/// copies of [`CudaContext`]): plain numbers that the GPU reads as the host stores them and
/// for which all-zero bits are a value (`f64`, `f32`, the integers). Sealed: linalg implements
/// it, so no cudarc trait appears in a bound outside the backend.
pub trait DeviceData:
    sealed::Sealed
    + cudarc::driver::DeviceRepr
    + cudarc::driver::ValidAsZeroBits
    + Copy
    + Send
    + Sync
    + 'static
{
}

mod sealed {
    /// Implemented by [`super::DeviceData`]'s types alone.
    pub trait Sealed {}
}

macro_rules! device_data {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl DeviceData for $t {}
    )*};
}
device_data!(f64, f32, u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

/// A value type a device matrix or block diagonal stores: `f64`, or `f32` for fp32 storage
/// ([`crate::Precision::Single`]). Kernels read it through the `#define` of its slot (`F32`
/// names below: 1 for `f32`), load it widened to `f64` and accumulate in `f64`.
pub trait DeviceValue: DeviceData {
    /// The `#define` value of a kernel's value-type slot: 1 for `f32`, 0 for `f64`.
    const F32: i64;
    /// The value widened to `f64`.
    fn to_f64(self) -> f64;
}

impl DeviceValue for f64 {
    const F32: i64 = 0;
    fn to_f64(self) -> f64 {
        self
    }
}

impl DeviceValue for f32 {
    const F32: i64 = 1;
    fn to_f64(self) -> f64 {
        self as f64
    }
}
pub use context::{
    can_access_peer, device_count, unavailable_reason, warm_up, warm_up_node_rank, CudaContext,
    Event, Transfers,
};
pub use coo::DeviceCooPlan;
pub use jacobi::DeviceBlockDiagonal;
#[cfg(any(test, feature = "kernel-bench"))]
pub use jacobi::{chebyshev_smooth, Chebyshev};
pub use kernel_cache::{
    kernel_build_seconds, kernel_cache_report, KernelCacheReport, KERNEL_CACHE_ENV,
};
pub use matrix::{DeviceBsr, DevicePattern};
pub use nccl::DeviceComm;
#[cfg(any(test, feature = "kernel-bench"))]
pub use nvrtc::compile_with_log;
pub use ops::DeviceDenseInverse;
pub use products::{DevicePtapPlan, DeviceSpgemmPlan};
pub use qr::DeviceGroupedQr;
#[cfg(test)]
pub use spmv::DeviceTransposeMap;
pub use spmv::{spmv, spmv_rows_add, spmv_transpose};
#[cfg(any(test, feature = "kernel-bench"))]
pub use spmv::{spmv_with, SpmvKernel};
pub use symbolic::joined_by_position;
pub(crate) use symbolic::transpose_pattern;
