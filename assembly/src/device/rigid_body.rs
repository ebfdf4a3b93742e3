//! The rigid-body modes of the deformed configuration `X + u` on the device (kernels in
//! `assembly/cuda/rigid_body.cu`): the AMG's near-null space of a load step where the
//! displacement lives, the bits of [`crate::rigid_body_modes`] at the host's deformed
//! coordinates. The centroid is the exact sum of each direction's deformed coordinates
//! (`linalg::gpu::sum_exact_prefix`, the bits of [`crate::coordinate_sums`]) over the node
//! count: three exact sums come down, nothing goes up. On a rank's part the sums run over its
//! owned nodes and are added over the ranks (`ExactSum::allreduce`), as the host's
//! distributed modes do: every rank's modes are the serial run's bits.

use std::sync::Arc;

use linalg::exact::ExactSum;
use linalg::gpu::{
    sum_exact_prefix, CudaContext, DeviceBuffer, KernelArg, KernelModule, LaunchShape, Term,
};
use linalg::Layout;

use super::elements::check;
use crate::{AssemblyError, RIGID_BODY_MODES_3D};

const RIGID_BODY_SOURCE: KernelModule = KernelModule {
    name: "assembly/rigid_body.cu",
    text: include_str!("../../cuda/rigid_body.cu"),
    fmad: false,
};

const THREADS: u32 = 256;

fn shape(n: usize) -> LaunchShape {
    LaunchShape::one_thread_each(n, THREADS)
}

/// The rigid-body modes about the deformed positions `coords + u` (both node-major, `3 n`
/// values on `ctx`), rotations about their centroid, node-major
/// (`[(3 node + c) 6 + mode]`, `18 n` values on `ctx`): [`crate::rigid_body_modes`] at
/// `X + u` bit for bit. Waits for the three sums of the centroid. `ranks`: the layout of a
/// rank's part (owned nodes first, then ghosts): the centroid is all ranks' owned nodes'
/// (collective), the modes those of the host's distributed modes (every local node's rows).
pub fn deformed_rigid_body_modes(
    ctx: &Arc<CudaContext>,
    coords: &DeviceBuffer<f64>,
    u: &DeviceBuffer<f64>,
    ranks: Option<&Layout>,
) -> Result<DeviceBuffer<f64>, AssemblyError> {
    let n = coords.len() / 3;
    let (n_owned, n_global) = match ranks {
        Some(layout) => (layout.owned() / 3, (layout.global_len() / 3) as usize),
        None => (n, n),
    };
    // this part's sums of the deformed coordinates; on ranks every rank's outcome is agreed
    // on before the sums are added (none waits in the reduction a failing rank skipped)
    let local = owned_coordinate_sums(ctx, coords, u, n_owned);
    let sums = match ranks {
        Some(layout) => {
            let comm = &**layout.comm();
            let mut sums = linalg::comm::agree(comm, local.map_err(|e| e.to_string()))
                .map_err(linalg::LinalgError::from)?;
            ExactSum::allreduce(comm, &mut sums).map_err(linalg::LinalgError::from)?;
            sums
        }
        None => local?,
    };
    let centroid = sums.map(|s| s.value() / n_global.max(1) as f64);
    let mut modes = ctx.zeros::<f64>((3 * n * RIGID_BODY_MODES_3D).max(1))?;
    if n == 0 {
        return Ok(modes);
    }
    RIGID_BODY_SOURCE.launch(
        ctx,
        &[],
        "rigid_body_modes",
        shape(3 * n),
        &mut [
            KernelArg::U32(n as u32),
            KernelArg::F64s(coords),
            KernelArg::F64s(u),
            KernelArg::F64(centroid[0]),
            KernelArg::F64(centroid[1]),
            KernelArg::F64(centroid[2]),
            KernelArg::F64sMut(&mut modes),
        ],
    )?;
    Ok(modes)
}

/// The exact sums of each direction's deformed coordinates `coords + u` over the first
/// `n_owned` nodes (local; checks the lengths and the kernels' 32-bit indices).
fn owned_coordinate_sums(
    ctx: &Arc<CudaContext>,
    coords: &DeviceBuffer<f64>,
    u: &DeviceBuffer<f64>,
    n_owned: usize,
) -> Result<[ExactSum; 3], AssemblyError> {
    let n = coords.len() / 3;
    check("rigid-body modes: coordinates", 3 * n, coords.len())?;
    check("rigid-body modes: displacement", 3 * n, u.len())?;
    if n >= u32::MAX as usize / 3 {
        return Err(AssemblyError::DeviceUnsupported {
            what: format!("{n} nodes exceed the rigid-body kernel's 32-bit indices"),
        });
    }
    if n_owned > n {
        return Err(AssemblyError::DeviceUnsupported {
            what: format!("rigid-body modes: {n_owned} owned nodes of {n} local ones"),
        });
    }
    let mut sums = [ExactSum::new(), ExactSum::new(), ExactSum::new()];
    if n == 0 {
        return Ok(sums);
    }
    let mut directions = [
        ctx.zeros::<f64>(n)?,
        ctx.zeros::<f64>(n)?,
        ctx.zeros::<f64>(n)?,
    ];
    let [x, y, z] = &mut directions;
    RIGID_BODY_SOURCE.launch(
        ctx,
        &[],
        "deformed_coordinates",
        shape(n),
        &mut [
            KernelArg::U32(n as u32),
            KernelArg::F64s(coords),
            KernelArg::F64s(u),
            KernelArg::F64sMut(x),
            KernelArg::F64sMut(y),
            KernelArg::F64sMut(z),
        ],
    )?;
    for (s, d) in sums.iter_mut().zip(&directions) {
        *s = sum_exact_prefix(ctx, d, Term::Value, n_owned)?;
    }
    Ok(sums)
}

/// Compiles `rigid_body.cu` for `arch` without a device (NVRTC only): the source's check.
#[cfg(test)]
pub(crate) fn compile_rigid_body_source(arch: &str) -> Result<usize, AssemblyError> {
    Ok(RIGID_BODY_SOURCE.compile_only(&[], arch)?)
}
