//! The rounds of a Luby-style maximal independent set on the device (`linalg/cuda/mis.cu`):
//! the same Jacobi-style rounds as the host's `amg::aggregation::mis`, integer only, so the set
//! is the host's exactly. The graph and the initial status (priorities) come from the host.

use cudarc::driver::PushKernelArg;

use super::context::{check_len, driver_err};
use super::kernels::{grid_1d, MIS};
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
    let mut m1 = ctx.zeros::<u64>(n.max(1))?;
    let mut m2 = ctx.zeros::<u64>(n.max(1))?;
    let closed_min = ctx.function(&MIS, &[], "closed_min")?;
    let update = ctx.function(&MIS, &[], "mis_update")?;
    let nn = n as u32;
    let cfg = grid_1d(n as u64, 256);
    loop {
        let mut changed = ctx.zeros::<u32>(1)?;
        let mut l = ctx.stream().launch_builder(&closed_min);
        l.arg(&nn).arg(&rp).arg(&cols).arg(&s).arg(&mut m1);
        // SAFETY: arguments match `closed_min`; every buffer holds n entries (row_ptr n + 1).
        unsafe { l.launch(cfg) }.map_err(driver_err("closed_min"))?;
        if distance_two {
            let mut l = ctx.stream().launch_builder(&closed_min);
            l.arg(&nn).arg(&rp).arg(&cols).arg(&m1).arg(&mut m2);
            // SAFETY: as above.
            unsafe { l.launch(cfg) }.map_err(driver_err("closed_min"))?;
        }
        let reach = if distance_two { &m2 } else { &m1 };
        let mut l = ctx.stream().launch_builder(&update);
        l.arg(&nn).arg(&mut s).arg(reach).arg(&mut changed);
        // SAFETY: arguments match `mis_update`.
        unsafe { l.launch(cfg) }.map_err(driver_err("mis_update"))?;
        if ctx.download(&changed)?[0] == 0 {
            break;
        }
    }
    ctx.download(&s)
}
