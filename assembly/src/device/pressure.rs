//! [`DevicePressure`]: a [`FollowerPressure`] on the device (kernel `pressure_contributions` of
//! `fem/cuda/loads.cu`): its residual and load stiffness at a device displacement, added into the
//! device residual and tangent in the host's face order through two gather plans, so the sums
//! are the host's bits.

use std::sync::Arc;

use linalg::gpu::{CudaContext, DeviceBsr, DeviceBuffer};
use linalg::gpu::{KernelArg, LaunchShape};
use linalg::BlockPattern;

use super::elements::{check, LOADS_SOURCE};
use super::loads::{GatherPlan, FACE_DEFINES};
use crate::{AssemblyError, FollowerPressure};

/// A follower pressure uploaded once for one tangent pattern: its faces (nodes in face basis
/// order, orientations), the face tables, the contribution streams and the plans that add them
/// into nodes (residual) and blocks (tangent) face by face, as [`FollowerPressure::add`] does.
pub struct DevicePressure {
    ctx: Arc<CudaContext>,
    n_faces: usize,
    nodes_per_face: usize,
    n_qp: usize,
    n_dofs: usize,
    face_nodes: DeviceBuffer<u32>,
    orientation: DeviceBuffer<f64>,
    coords: DeviceBuffer<f64>,
    weights: DeviceBuffer<f64>,
    values: DeviceBuffer<f64>,
    gradients: DeviceBuffer<f64>,
    residual_stream: DeviceBuffer<f64>,
    tangent_stream: DeviceBuffer<f64>,
    into_nodes: GatherPlan,
    into_blocks: GatherPlan,
    /// Blocks of the pattern the plans were built for.
    n_blocks: usize,
    /// The pressure at load factor one.
    pressure: f64,
    /// The factor of the pressure's own load curve at the current load step (`None`: the load
    /// factor), as [`FollowerPressure::own_factor`]; set per load step.
    pub own_factor: Option<f64>,
}

impl DevicePressure {
    /// Uploads `pressure` on nodes at `coords` for tangents on `pattern` (every face block must be
    /// in it, as on the host).
    pub fn new(
        ctx: &Arc<CudaContext>,
        pressure: &FollowerPressure,
        coords: &[[f64; 3]],
        pattern: &BlockPattern,
    ) -> Result<Self, AssemblyError> {
        let kernel = pressure.kernel();
        let (nf, nq) = (kernel.n_nodes(), kernel.n_qp());
        let faces = pressure.faces();
        if faces.len() * nf * nf * 9 >= u32::MAX as usize || coords.len() >= u32::MAX as usize {
            return Err(AssemblyError::DeviceUnsupported {
                what: format!(
                    "{} pressure faces exceed the device plans' 32-bit indices",
                    faces.len()
                ),
            });
        }
        let mut per_node: Vec<Vec<u32>> = vec![Vec::new(); coords.len()];
        let mut per_block: Vec<Vec<u32>> = vec![Vec::new(); pattern.nnz()];
        let mut nodes = Vec::with_capacity(faces.len() * nf);
        for (face, (fnodes, _)) in faces.iter().enumerate() {
            for (a, &ga) in fnodes.iter().enumerate() {
                per_node[ga].push((face * nf + a) as u32);
                for (b, &gb) in fnodes.iter().enumerate() {
                    let slot = pattern.find(ga, gb).ok_or(AssemblyError::SizeMismatch {
                        what: "pressure face block outside the tangent's pattern",
                        expected: ga,
                        got: gb,
                    })?;
                    per_block[slot].push(((face * nf + a) * nf + b) as u32);
                }
            }
            nodes.extend(fnodes.iter().map(|&n| n as u32));
        }
        let orientation: Vec<f64> = faces.iter().map(|(_, s)| *s).collect();
        Ok(Self {
            ctx: ctx.clone(),
            n_faces: faces.len(),
            nodes_per_face: nf,
            n_qp: nq,
            n_dofs: 3 * coords.len(),
            face_nodes: ctx.upload(&nodes)?,
            orientation: ctx.upload(&orientation)?,
            coords: ctx.upload(coords.as_flattened())?,
            weights: ctx.upload(kernel.qp_weights())?,
            values: ctx.upload(kernel.qp_values())?,
            gradients: ctx.upload(kernel.qp_reference_gradients().as_flattened())?,
            residual_stream: ctx.zeros(faces.len() * nf * 3)?,
            tangent_stream: ctx.zeros(faces.len() * nf * nf * 9)?,
            into_nodes: GatherPlan::new(ctx, &per_node)?,
            into_blocks: GatherPlan::new(ctx, &per_block)?,
            n_blocks: pattern.nnz(),
            pressure: pressure.pressure(),
            own_factor: pressure.own_factor,
        })
    }

    /// Adds the pressure's residual at `load_factor` (or its own factor) and displacement `u` to
    /// `r` and, where `k` is given, its load stiffness to `k`'s blocks (the pattern given at
    /// construction): [`FollowerPressure::add`] on the device.
    pub fn add(
        &mut self,
        u: &DeviceBuffer<f64>,
        load_factor: f64,
        r: &mut DeviceBuffer<f64>,
        k: Option<&mut DeviceBsr>,
    ) -> Result<(), AssemblyError> {
        check("pressure: displacement", self.n_dofs, u.len())?;
        check("pressure: residual", self.n_dofs, r.len())?;
        if let Some(k) = &k {
            check("pressure: tangent blocks", self.n_blocks, k.pattern().nnz())?;
            check(
                "pressure: tangent block size",
                9,
                k.block_rows() * k.block_cols(),
            )?;
        }
        if self.n_faces == 0 {
            return Ok(());
        }
        let p = self.own_factor.unwrap_or(load_factor) * self.pressure;
        let threads = self.n_faces * self.nodes_per_face;
        LOADS_SOURCE.launch(
            &self.ctx,
            &FACE_DEFINES,
            "pressure_contributions",
            LaunchShape {
                blocks: threads.div_ceil(64) as u32,
                threads: 64,
                shared_bytes: 0,
            },
            &mut [
                KernelArg::U32(self.n_faces as u32),
                KernelArg::U32(self.nodes_per_face as u32),
                KernelArg::U32(self.n_qp as u32),
                KernelArg::U32s(&self.face_nodes),
                KernelArg::F64s(&self.orientation),
                KernelArg::F64s(&self.coords),
                KernelArg::F64s(u),
                KernelArg::F64s(&self.weights),
                KernelArg::F64s(&self.values),
                KernelArg::F64s(&self.gradients),
                KernelArg::F64(p),
                KernelArg::U32(u32::from(k.is_some())),
                KernelArg::F64sMut(&mut self.residual_stream),
                KernelArg::F64sMut(&mut self.tangent_stream),
            ],
        )?;
        self.into_nodes
            .add(&self.ctx, 3, &self.residual_stream, r)?;
        if let Some(k) = k {
            self.into_blocks
                .add(&self.ctx, 9, &self.tangent_stream, k.values_mut())?;
        }
        Ok(())
    }
}
