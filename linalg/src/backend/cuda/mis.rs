//! The rounds of a Luby-style maximal independent set on the device (`linalg/cuda/mis.cu`):
//! the same Jacobi-style rounds as the host's `amg::aggregation::mis`, integer only, so the set
//! is the host's exactly. The graph and the initial status (priorities) come from the host.

use super::context::check_len;
use super::matrix::offsets_u32;
use super::CudaContext;
use crate::LinalgError;

/// Status of a vertex in the set.
pub const MIS_IN: u64 = 0;
/// Status of a vertex out of the set.
pub const MIS_OUT: u64 = u64::MAX;

/// Runs MIS rounds on the graph (`row_ptr`, `col`: each vertex's neighbours) from `status`
/// ([`MIS_IN`], [`MIS_OUT`] or a priority, smaller wins, unique) until no vertex changes; with
/// `distance_two` the reach is the closed neighbourhood's closed neighbourhood (MIS-2). Returns
/// the final status. Uploads the graph and status, downloads one `u32` per round and the
/// status at the end.
pub fn luby_mis(
    ctx: &CudaContext,
    row_ptr: &[usize],
    col: &[u32],
    status: &[u64],
    distance_two: bool,
) -> Result<Vec<u64>, LinalgError> {
    let n = status.len();
    check_len("device mis: row offsets", n + 1, row_ptr.len())?;
    let rp = ctx.upload(&offsets_u32("device mis: edges", row_ptr)?)?;
    let cols = ctx.upload(col)?;
    let mut s = ctx.upload(status)?;
    super::graph::mis_rounds(ctx, n, &rp, &cols, &mut s, distance_two)?;
    ctx.download(&s)
}
