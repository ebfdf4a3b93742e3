//! Distributed block matrices: rows (block rows) split over the ranks of a [`comm::Comm`] in
//! contiguous ranges ([`RowPartition`]), each rank holding its owned rows as a diagonal part
//! (columns it owns) and an off-diagonal part (columns other ranks own, numbered compactly as
//! the *ghosts* of its vectors) ([`DistBsr`]). The ghost column map and the messages that fill
//! a vector's ghost tail from the owners form a [`HaloPlan`], built once (symbolic) and used by
//! every product (numeric).
//!
//! Calling order: [`RowPartition::new`] (collective) -> [`DistPattern::new`] (collective:
//! builds the halo plan) -> [`DistBsr::from_values`] / [`DistBsr::set_values`] (local) ->
//! [`DistBsr::spmv`] (neighbour messages). Every collective here agrees on errors
//! ([`comm::agree`]) so a rank with bad input never leaves the others waiting.
//!
//! Determinism: one rank's work is the host kernels' (fixed orders), messages carry values
//! unchanged, so results are bit-identical for a fixed rank count. On one rank the diagonal part
//! is the whole matrix in the serial slot order: the serial results exactly.

mod device_graph;
mod device_halo;
mod halo;
mod matrix;
mod partition;
mod parts;
mod rank_device;
mod rows;
mod telescope;

pub use device_graph::{DeviceDistGraph, DeviceSerialIds};
pub use device_halo::{DeviceHalo, HaloBytes};
pub use halo::HaloPlan;
pub use matrix::{DistBsr, DistPattern};
pub use partition::RowPartition;
pub use rank_device::{
    connect_rank_devices, gpu_for, select_rank_devices, select_with, skip_multi_rank_gpu_test,
    warm_up_rank_device, DeviceExchange, RankDeviceRequest, RankDevices,
};
pub use rows::RowGatherPlan;
pub use telescope::move_rows;
