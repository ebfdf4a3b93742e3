//! The device seam: what a crate other than linalg may use of a GPU. Every item is typed
//! (linalg's own handles, arrays, matrices and plans); no cudarc type, no `CudaSlice` and no raw
//! device pointer crosses it: a buffer reaches a kernel only as a typed [`KernelArg`], and only
//! linalg's backend talks to the CUDA runtime. The items are the backend's own (re-exported, so
//! zero-cost: no wrapper, no copy, no extra wait).
//!
//! - The GPU: [`CudaContext`], the handle of a [`crate::Device::Cuda`] (uploads, downloads,
//!   zeros, copies, timing [`Event`]s, memory); [`device_count`], [`unavailable_reason`].
//! - Typed data on it: [`DeviceBuffer<T>`] (an array of `f64`, `f32`, `u32` or `u64`: element
//!   data, index tables, the values behind a device [`crate::Vector`]; its element types are
//!   linalg's [`DeviceData`], the bound of the context's uploads and downloads); [`DevicePattern`] and
//!   [`DeviceBsr`] (a [`crate::BlockPattern`] and the values of a device [`crate::Bsr`]);
//!   [`DeviceCooPlan`] (a [`crate::CooPlan`] uploaded once, summing contributions on the device).
//! - Kernels of other crates: a [`KernelModule`] (a `.cu` source, compiled by NVRTC at first use
//!   and cached like linalg's own), [`KernelModule::launch`] with [`KernelArg`]s in the order of
//!   the kernel's parameters and a [`LaunchShape`]; [`KernelModule::compile_only`] checks a source
//!   without a device.
//! - Operations on device arrays, each bit-identical to its host counterpart on the same values:
//!   [`fill`], [`axpy`], [`axpby`], [`dot`], [`dot_exact`], [`dot_exact_prefix`], [`sum`] and
//!   [`sum_exact_prefix`] (a [`Term`]), [`norm_inf`], [`spmv`], [`gather_blocks`];
//!   a device operator's strength graph and its MIS aggregation ([`DeviceGraph`]: `amg`'s
//!   graph, roots and aggregates, bit for bit); the rows of two column blocks joined under a
//!   column map ([`joined_by_position`]: a rank's local `A`, its pattern and gather list).
//!   Operations on [`crate::Vector`], [`crate::Bsr`] and [`crate::dist::DistBsr`] ([`crate::ops`],
//!   the matrix methods, down to a distributed product's parts and a rank's unreduced dot) run
//!   on a GPU by themselves and are what solvers, problems and benchmarks use; these are for the
//!   code that owns bare device arrays below them (an element loop, `amg`'s device hierarchy).
//! - The distributed Galerkin product's pieces (`amg`'s device hot update): block gathers from
//!   two sources ([`gather_blocks_two`], [`TwoSources`]) and sums in a fixed order
//!   ([`sum_blocks_in_order`]), pinned staging buffers and stream marks ([`PinnedBuffer`],
//!   [`StreamMark`]), the peer-write channel between ranks' GPUs ([`PeerChannel`],
//!   [`PeerLists`]).
//!
//! The backend module itself is private: linalg's kernel tests reach into it from inside the
//! crate, and only the `kernel-bench` feature (the single-kernel benchmark
//! `examples/cuda_bench.rs`, which requires it) makes it public, hidden from the docs.

pub use crate::backend::cuda::external::{KernelArg, KernelModule, LaunchShape};
pub use crate::backend::cuda::galerkin::{gather_blocks_two, sum_blocks_in_order, TwoSources};
pub use crate::backend::cuda::graph::{DeviceGraph, HostGraph};
pub use crate::backend::cuda::halo::{
    gather_blocks, pinned_at_first_use, PinnedBuffer, StreamMark,
};
pub use crate::backend::cuda::ops::norm_inf;
pub use crate::backend::cuda::peer::{PeerChannel, PeerLists};
pub use crate::backend::cuda::vector::{
    axpby, axpy, dot, dot_exact, dot_exact_prefix, fill, sum, sum_exact_prefix, Term,
};
pub use crate::backend::cuda::{
    device_count, joined_by_position, spmv, unavailable_reason, CudaContext, DeviceBsr,
    DeviceBuffer, DeviceCooPlan, DeviceData, DevicePattern, Event,
};
