//! Dead loads integrated on the device (kernels in `fem/cuda/loads.cu`): the body force through
//! the volume quadrature ([`super::DeviceAssembler::body_force_load`], with the forces per
//! quadrature point of [`body_force_at_points`]) and tractions on face sets
//! ([`DeviceTractions`]). Each is the host's computation (`crate::loads`) operation for operation,
//! nodal sums included, so the vectors are the host's bits.
//!
//! Loads that are fields of the reference position are evaluated by the host once, at the
//! quadrature points the host kernels evaluate them at (`fem::ElementKernel::quadrature_points`,
//! `fem::FaceKernel::quadrature_points`), and uploaded (24 bytes per point); the integration and
//! the sums into nodes run on the device.
//!
//! Checked against the host by the crate's device tests; not yet called by
//! [`super::DeviceProblem`] (a run builds its dead-load vector on the host and uploads it once).
#![cfg_attr(not(test), allow(dead_code))]

use std::sync::Arc;

use fem::{FaceKernel, Load};
use linalg::gpu::{CudaContext, DeviceBuffer};
use linalg::gpu::{KernelArg, LaunchShape};
use mesh::{CellFace, HexMesh};

use super::elements::{check, LOADS_SOURCE};
use crate::loads::face_nodes;
use crate::{AssemblyError, ElasticityAssembler};

/// The loads source is compiled after the element source, which needs its defines; the face
/// kernels use none of them (any valid set compiles them once).
pub(super) const FACE_DEFINES: [(&str, i64); 4] =
    [("NODES", 8), ("NQP", 8), ("MATERIAL", 0), ("EPB", 1)];

/// The body force per unit reference volume at every quadrature point of every cell of
/// `assembler`, `[(c n_qp + q) 3 + i]` (a field evaluated at the points the host's residual
/// evaluates it at), for [`super::DeviceAssembler::body_force_load`].
pub fn body_force_at_points(
    assembler: &ElasticityAssembler,
    body: Load<'_>,
) -> Result<Vec<f64>, AssemblyError> {
    let kernel = assembler.kernel();
    let (npc, nqp) = (kernel.n_nodes(), kernel.n_qp());
    let mut out = Vec::with_capacity(assembler.n_cells() * nqp * 3);
    for (c, cell) in assembler.cells().chunks_exact(npc).enumerate() {
        match body {
            Load::None => out.extend(std::iter::repeat_n(0.0, 3 * nqp)),
            Load::Constant(f) => (0..nqp).for_each(|_| out.extend(f)),
            Load::Field(field) => {
                let x: Vec<[f64; 3]> = cell.iter().map(|&n| assembler.coords()[n]).collect();
                let points = kernel.quadrature_points(&x).map_err(|source| {
                    AssemblyError::invalid_element(assembler.cell_tags(), c, source)
                })?;
                out.extend(points.into_iter().flat_map(field));
            }
        }
    }
    Ok(out)
}

/// Dead-load tractions on face sets, uploaded once: every face's nodes (face basis order), the
/// face quadrature tables, the traction at every face point, and the plan that adds the face
/// forces into nodes in the host's order (set by set, face by face, as `add_traction_load` called
/// once per set adds them).
pub struct DeviceTractions {
    ctx: Arc<CudaContext>,
    n_faces: usize,
    nodes_per_face: usize,
    n_qp: usize,
    n_dofs: usize,
    face_nodes: DeviceBuffer<u32>,
    coords: DeviceBuffer<f64>,
    weights: DeviceBuffer<f64>,
    values: DeviceBuffer<f64>,
    gradients: DeviceBuffer<f64>,
    traction: DeviceBuffer<f64>,
    contributions: DeviceBuffer<f64>,
    /// Sums the (face, local node) contributions into the nodes, in face order.
    plan: GatherPlan,
}

/// Sums of contributions (3 or 9 values each) into targets (nodes of a vector, blocks of a
/// tangent) in a fixed order, on the device: per target, the contributions it receives in the
/// order the host adds them, added one by one onto the target's value.
pub(super) struct GatherPlan {
    targets: DeviceBuffer<u32>,
    ptr: DeviceBuffer<u32>,
    entries: DeviceBuffer<u32>,
}

impl GatherPlan {
    /// `per_target[i]`: the contributions target `i` receives, in order; targets receiving none
    /// are left out.
    pub(super) fn new(ctx: &CudaContext, per_target: &[Vec<u32>]) -> Result<Self, AssemblyError> {
        let (mut targets, mut ptr, mut entries) = (Vec::new(), vec![0u32], Vec::new());
        for (i, list) in per_target.iter().enumerate().filter(|(_, l)| !l.is_empty()) {
            targets.push(i as u32);
            entries.extend(list);
            ptr.push(entries.len() as u32);
        }
        Ok(Self {
            targets: ctx.upload(&targets)?,
            ptr: ctx.upload(&ptr)?,
            entries: ctx.upload(&entries)?,
        })
    }

    /// `into[width t + e] += contributions[width j + e]` over the plan (`width` 3: `gather_add`,
    /// 9: `gather_add_blocks`).
    pub(super) fn add(
        &self,
        ctx: &CudaContext,
        width: usize,
        contributions: &DeviceBuffer<f64>,
        into: &mut DeviceBuffer<f64>,
    ) -> Result<(), AssemblyError> {
        let rows = self.targets.len();
        if rows == 0 {
            return Ok(());
        }
        LOADS_SOURCE.launch(
            ctx,
            &FACE_DEFINES,
            if width == 3 {
                "gather_add"
            } else {
                "gather_add_blocks"
            },
            LaunchShape {
                blocks: (width * rows).div_ceil(256) as u32,
                threads: 256,
                shared_bytes: 0,
            },
            &mut [
                KernelArg::U32(rows as u32),
                KernelArg::U32s(&self.targets),
                KernelArg::U32s(&self.ptr),
                KernelArg::U32s(&self.entries),
                KernelArg::F64s(contributions),
                KernelArg::F64sMut(into),
            ],
        )?;
        Ok(())
    }
}

impl DeviceTractions {
    /// Uploads the traction `sets` (faces and their traction per unit reference area, in the order
    /// the host adds them) on `mesh` with a `points_per_direction`^2 Gauss rule per face.
    pub fn new(
        ctx: &Arc<CudaContext>,
        mesh: &HexMesh,
        sets: &[(&[CellFace], Load<'_>)],
        points_per_direction: usize,
    ) -> Result<Self, AssemblyError> {
        let kernel =
            FaceKernel::new(mesh.order(), points_per_direction).map_err(AssemblyError::Kernel)?;
        let (nf, nq) = (kernel.n_nodes(), kernel.n_qp());
        let n_nodes = mesh.n_nodes();
        if n_nodes >= u32::MAX as usize {
            return Err(AssemblyError::DeviceUnsupported {
                what: format!("{n_nodes} nodes exceed the device plans' 32-bit indices"),
            });
        }
        let (mut nodes, mut traction) = (Vec::new(), Vec::new());
        let mut per_node: Vec<Vec<u32>> = vec![Vec::new(); n_nodes];
        for (faces, load) in sets {
            for cf in *faces {
                let (fnodes, x) = face_nodes(mesh, cf)?;
                let face = nodes.len() / nf;
                for (a, &n) in fnodes.iter().enumerate() {
                    per_node[n].push((face * nf + a) as u32);
                }
                nodes.extend(fnodes.iter().map(|&n| n as u32));
                match load {
                    Load::None => traction.extend(std::iter::repeat_n(0.0, 3 * nq)),
                    Load::Constant(t) => (0..nq).for_each(|_| traction.extend(t)),
                    Load::Field(field) => {
                        let points = kernel.quadrature_points(&x).map_err(|source| {
                            AssemblyError::invalid_element(mesh.cell_tags.as_ref(), cf.cell, source)
                        })?;
                        traction.extend(points.into_iter().flat_map(field));
                    }
                }
            }
        }
        let n_faces = nodes.len() / nf;
        if n_faces * nf * 3 >= u32::MAX as usize {
            return Err(AssemblyError::DeviceUnsupported {
                what: format!("{n_faces} traction faces exceed the device plans' 32-bit indices"),
            });
        }
        Ok(Self {
            ctx: ctx.clone(),
            n_faces,
            nodes_per_face: nf,
            n_qp: nq,
            n_dofs: 3 * n_nodes,
            face_nodes: ctx.upload(&nodes)?,
            coords: ctx.upload(mesh.coords.as_flattened())?,
            weights: ctx.upload(kernel.qp_weights())?,
            values: ctx.upload(kernel.qp_values())?,
            gradients: ctx.upload(kernel.qp_reference_gradients().as_flattened())?,
            traction: ctx.upload(&traction)?,
            contributions: ctx.zeros(n_faces * nf * 3)?,
            plan: GatherPlan::new(ctx, &per_node)?,
        })
    }

    /// Faces of all sets.
    pub fn n_faces(&self) -> usize {
        self.n_faces
    }

    /// Adds the nodal forces of every set to `f` (node-major, `3 n_nodes`): the face kernel
    /// writes each face's forces, the plan adds them into their nodes in the host's order.
    pub fn add_to(&mut self, f: &mut DeviceBuffer<f64>) -> Result<(), AssemblyError> {
        check("traction load vector", self.n_dofs, f.len())?;
        if self.n_faces == 0 {
            return Ok(());
        }
        LOADS_SOURCE.launch(
            &self.ctx,
            &FACE_DEFINES,
            "traction_contributions",
            LaunchShape {
                blocks: self.n_faces.div_ceil(64) as u32,
                threads: 64,
                shared_bytes: 0,
            },
            &mut [
                KernelArg::U32(self.n_faces as u32),
                KernelArg::U32(self.nodes_per_face as u32),
                KernelArg::U32(self.n_qp as u32),
                KernelArg::U32s(&self.face_nodes),
                KernelArg::F64s(&self.coords),
                KernelArg::F64s(&self.weights),
                KernelArg::F64s(&self.values),
                KernelArg::F64s(&self.gradients),
                KernelArg::F64s(&self.traction),
                KernelArg::F64sMut(&mut self.contributions),
            ],
        )?;
        self.plan.add(&self.ctx, 3, &self.contributions, f)
    }
}

/// Compiles the dead-load kernels (after the element source, Q1 or Q2 by `order`) for `arch`
/// (`"sm_90"`) with NVRTC alone (no device needed); the cubin's size, or NVRTC's log.
#[cfg(test)]
pub(crate) fn compile_loads_source(order: usize, arch: &str) -> Result<usize, AssemblyError> {
    let nodes = if order == 1 { 8 } else { 27 };
    let defines = [
        ("NODES", nodes),
        ("NQP", nodes),
        ("MATERIAL", 0),
        ("EPB", 1),
    ];
    Ok(LOADS_SOURCE.compile_only(&defines, arch)?)
}
