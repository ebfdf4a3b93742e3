//! The status values of the device's Luby-style maximal independent set (`linalg/cuda/mis.cu`,
//! run on a device graph by [`super::graph::DeviceGraph`]): the same Jacobi-style rounds as the
//! host's `amg::aggregation::mis`, integer only, so the set is the host's exactly.

/// Status of a vertex in the set.
pub const MIS_IN: u64 = 0;
