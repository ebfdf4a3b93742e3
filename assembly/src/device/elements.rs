//! [`DeviceElements`]: the element kernels of one mesh on the device.

use std::sync::Arc;

use fem::{ElementKernel, FemError, Material, ELEMENT_CUDA_SOURCE, LOADS_CUDA_SOURCE};
use linalg::backend::cuda::external::{launch, ExternalSource, KernelArg, LaunchShape};
use linalg::backend::cuda::{CudaContext, DeviceBuffer};

use crate::{AssemblyError, ElasticityAssembler};

/// The element source as linalg's external-kernel entry point takes it. `--fmad=false`: the
/// kernels mirror the host's operations one for one, so they round as the host does.
const ELEMENT_SOURCE: ExternalSource = ExternalSource {
    name: "fem/element.cu",
    text: ELEMENT_CUDA_SOURCE,
    fmad: false,
};

/// The dead-load kernels (after the element source, with its defines).
pub(crate) const LOADS_SOURCE: ExternalSource = ExternalSource {
    name: "fem/element.cu + fem/loads.cu",
    text: LOADS_CUDA_SOURCE,
    fmad: false,
};

/// Values per cell of [`DeviceElements::cell_fields`].
pub const CELL_FIELDS: usize = 10;

/// Threads per block of the element kernels.
const THREADS: u32 = 256;

/// "No cell failed" in the failure flag.
const NO_FAILURE: u32 = u32::MAX;

/// Cells per thread block: as many as the 48 KiB of static shared memory hold (see the kernel's
/// `CellShared`), at most 8.
fn cells_per_block(nodes: usize, split_tangent: bool) -> usize {
    match (nodes, split_tangent) {
        (8, true) => 8,
        (8, false) => 4,
        _ => 1,
    }
}

/// Mesh (reference coordinates, connectivity), quadrature tables and material of an
/// [`ElasticityAssembler`], uploaded once; evaluates element residuals, tangent blocks and energies
/// of every cell at a device displacement.
///
/// Outputs are in the assembler's contribution layout: residual `[(c n + a) 3 + i]`, tangent
/// `[((c n + a) n + b) 9 + 3 i + k]` (`n` nodes per cell).
pub struct DeviceElements {
    ctx: Arc<CudaContext>,
    n_cells: usize,
    n_nodes: usize,
    nodes_per_cell: usize,
    material: Material,
    defines: [(&'static str, i64); 4],
    cells: DeviceBuffer<u32>,
    coords: DeviceBuffer<f64>,
    weights: DeviceBuffer<f64>,
    gradients: DeviceBuffer<f64>,
    fail: DeviceBuffer<u32>,
    /// Host copies, to name a failing cell exactly as the host path does.
    host_kernel: ElementKernel,
    host_coords: Vec<[f64; 3]>,
    host_cells: Vec<usize>,
    cell_tags: Option<Vec<usize>>,
}

impl DeviceElements {
    /// Uploads `assembler`'s mesh and tables. Errors if the cells do not share one material, or the
    /// mesh does not fit 32-bit indices.
    pub fn new(
        ctx: &Arc<CudaContext>,
        assembler: &ElasticityAssembler,
    ) -> Result<Self, AssemblyError> {
        let material =
            *assembler
                .materials()
                .single()
                .ok_or_else(|| AssemblyError::DeviceUnsupported {
                    what: "cells with different materials (the device kernels take one material; \
                       use the CPU)"
                        .into(),
                })?;
        let kernel = assembler.kernel().clone();
        let npc = kernel.n_nodes();
        let n_nodes = assembler.n_nodes();
        if n_nodes >= u32::MAX as usize || assembler.n_cells() * npc * npc >= u32::MAX as usize {
            return Err(AssemblyError::DeviceUnsupported {
                what: format!(
                    "{} nodes and {} cells exceed the device plans' 32-bit indices",
                    n_nodes,
                    assembler.n_cells()
                ),
            });
        }
        let cells: Vec<u32> = assembler.cells().iter().map(|&n| n as u32).collect();
        let defines = element_defines(&kernel, &material);
        Ok(Self {
            ctx: ctx.clone(),
            n_cells: assembler.n_cells(),
            n_nodes,
            nodes_per_cell: npc,
            material,
            defines,
            cells: ctx.upload(&cells)?,
            coords: ctx.upload(assembler.coords().as_flattened())?,
            weights: ctx.upload(kernel.qp_weights())?,
            gradients: ctx.upload(kernel.qp_reference_gradients().as_flattened())?,
            fail: ctx.upload(&[NO_FAILURE])?,
            host_kernel: kernel,
            host_coords: assembler.coords().to_vec(),
            host_cells: assembler.cells().to_vec(),
            cell_tags: assembler.cell_tags().map(|t| t.to_vec()),
        })
    }

    /// The device.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Cells.
    pub fn n_cells(&self) -> usize {
        self.n_cells
    }

    /// Nodes per cell (8 or 27).
    pub fn nodes_per_cell(&self) -> usize {
        self.nodes_per_cell
    }

    /// Quadrature points per cell.
    pub fn n_qp(&self) -> usize {
        self.host_kernel.n_qp()
    }

    /// The material of every cell.
    pub fn material(&self) -> &Material {
        &self.material
    }

    /// Length of the residual contributions (`3 n` per cell).
    pub fn residual_len(&self) -> usize {
        self.n_cells * self.nodes_per_cell * 3
    }

    /// Length of the tangent contributions (`9 n^2` per cell).
    pub fn tangent_len(&self) -> usize {
        self.n_cells * self.nodes_per_cell * self.nodes_per_cell * 9
    }

    fn check_u(&self, u: &DeviceBuffer<f64>) -> Result<(), AssemblyError> {
        check("displacement", 3 * self.n_nodes, u.len())
    }

    fn params(&self) -> [f64; 3] {
        self.material.device_params()
    }

    fn blocks(&self) -> u32 {
        self.n_cells.div_ceil(self.defines[3].1 as usize) as u32
    }

    /// Queues element residuals and tangent blocks at `u` into `r` ([`Self::residual_len`]) and
    /// `k` ([`Self::tangent_len`]). Asynchronous; [`Self::check_failure`] reports a failed cell.
    pub fn residual_tangent(
        &mut self,
        u: &DeviceBuffer<f64>,
        r: &mut DeviceBuffer<f64>,
        k: &mut DeviceBuffer<f64>,
    ) -> Result<(), AssemblyError> {
        self.check_u(u)?;
        check("element residuals", self.residual_len(), r.len())?;
        check("element tangents", self.tangent_len(), k.len())?;
        let [p0, p1, p2] = self.params();
        let shape = LaunchShape {
            blocks: self.blocks(),
            threads: THREADS,
            shared_bytes: 0,
        };
        launch(
            &self.ctx,
            &ELEMENT_SOURCE,
            &self.defines,
            "element_residual_tangent",
            shape,
            &mut [
                KernelArg::U32(self.n_cells as u32),
                KernelArg::U32s(&self.cells),
                KernelArg::F64s(&self.coords),
                KernelArg::F64s(u),
                KernelArg::F64s(&self.weights),
                KernelArg::F64s(&self.gradients),
                KernelArg::F64(p0),
                KernelArg::F64(p1),
                KernelArg::F64(p2),
                KernelArg::F64sMut(r),
                KernelArg::F64sMut(k),
                KernelArg::U32sMut(&mut self.fail),
            ],
        )?;
        Ok(())
    }

    /// Queues element residuals only (no tangent work) at `u` into `r`.
    pub fn residual(
        &mut self,
        u: &DeviceBuffer<f64>,
        r: &mut DeviceBuffer<f64>,
    ) -> Result<(), AssemblyError> {
        self.check_u(u)?;
        check("element residuals", self.residual_len(), r.len())?;
        let [p0, p1, p2] = self.params();
        let shape = LaunchShape {
            blocks: self.blocks(),
            threads: THREADS,
            shared_bytes: 0,
        };
        launch(
            &self.ctx,
            &ELEMENT_SOURCE,
            &self.defines,
            "element_residual",
            shape,
            &mut [
                KernelArg::U32(self.n_cells as u32),
                KernelArg::U32s(&self.cells),
                KernelArg::F64s(&self.coords),
                KernelArg::F64s(u),
                KernelArg::F64s(&self.weights),
                KernelArg::F64s(&self.gradients),
                KernelArg::F64(p0),
                KernelArg::F64(p1),
                KernelArg::F64(p2),
                KernelArg::F64sMut(r),
                KernelArg::U32sMut(&mut self.fail),
            ],
        )?;
        Ok(())
    }

    /// Queues the strain energy `int psi dV` of every cell at `u` into `energies` (one per cell).
    pub fn energies(
        &mut self,
        u: &DeviceBuffer<f64>,
        energies: &mut DeviceBuffer<f64>,
    ) -> Result<(), AssemblyError> {
        self.check_u(u)?;
        check("cell energies", self.n_cells, energies.len())?;
        let [p0, p1, p2] = self.params();
        let shape = LaunchShape {
            blocks: self.n_cells.div_ceil(128) as u32,
            threads: 128,
            shared_bytes: 0,
        };
        launch(
            &self.ctx,
            &ELEMENT_SOURCE,
            &self.defines,
            "element_energy",
            shape,
            &mut [
                KernelArg::U32(self.n_cells as u32),
                KernelArg::U32s(&self.cells),
                KernelArg::F64s(&self.coords),
                KernelArg::F64s(u),
                KernelArg::F64s(&self.weights),
                KernelArg::F64s(&self.gradients),
                KernelArg::F64(p0),
                KernelArg::F64(p1),
                KernelArg::F64(p2),
                KernelArg::F64sMut(energies),
                KernelArg::U32sMut(&mut self.fail),
            ],
        )?;
        Ok(())
    }

    /// Queues the output fields of every cell at `u` into `fields` (10 per cell, the fields of
    /// [`fem::CellFields`] in order: Cauchy stress `[xx, yy, zz, xy, yz, xz]`, von Mises, `J`,
    /// energy density, strain energy).
    pub fn cell_fields(
        &mut self,
        u: &DeviceBuffer<f64>,
        fields: &mut DeviceBuffer<f64>,
    ) -> Result<(), AssemblyError> {
        self.check_u(u)?;
        check("cell fields", CELL_FIELDS * self.n_cells, fields.len())?;
        let [p0, p1, p2] = self.params();
        let shape = LaunchShape {
            blocks: self.n_cells.div_ceil(128) as u32,
            threads: 128,
            shared_bytes: 0,
        };
        launch(
            &self.ctx,
            &ELEMENT_SOURCE,
            &self.defines,
            "element_cell_fields",
            shape,
            &mut [
                KernelArg::U32(self.n_cells as u32),
                KernelArg::U32s(&self.cells),
                KernelArg::F64s(&self.coords),
                KernelArg::F64s(u),
                KernelArg::F64s(&self.weights),
                KernelArg::F64s(&self.gradients),
                KernelArg::F64(p0),
                KernelArg::F64(p1),
                KernelArg::F64(p2),
                KernelArg::F64sMut(fields),
                KernelArg::U32sMut(&mut self.fail),
            ],
        )?;
        Ok(())
    }

    /// Queues the body-force contributions `-int f N_a dV` of every cell into `r`
    /// ([`Self::residual_len`], the residual layout): the element residual at zero displacement
    /// under the body force, as the host's `body_force_load` computes it. `force`: the force per
    /// unit reference volume at every quadrature point, `[(c n_qp + q) 3 + i]`. Asynchronous;
    /// [`Self::check_failure`] reports an inverted cell.
    pub fn body_force(
        &mut self,
        force: &DeviceBuffer<f64>,
        r: &mut DeviceBuffer<f64>,
    ) -> Result<(), AssemblyError> {
        check(
            "body force per point",
            self.n_cells * self.n_qp() * 3,
            force.len(),
        )?;
        check("element residuals", self.residual_len(), r.len())?;
        let values = self.ctx.upload(self.host_kernel.qp_values())?;
        launch(
            &self.ctx,
            &LOADS_SOURCE,
            &self.defines,
            "body_force_contributions",
            LaunchShape {
                blocks: self.n_cells.div_ceil(64) as u32,
                threads: 64,
                shared_bytes: 0,
            },
            &mut [
                KernelArg::U32(self.n_cells as u32),
                KernelArg::U32s(&self.cells),
                KernelArg::F64s(&self.coords),
                KernelArg::F64s(&self.weights),
                KernelArg::F64s(&self.gradients),
                KernelArg::F64s(&values),
                KernelArg::F64s(force),
                KernelArg::F64sMut(r),
                KernelArg::U32sMut(&mut self.fail),
            ],
        )?;
        Ok(())
    }

    /// Waits for the queued kernels and reports the first failed cell (in cell order) since the
    /// last check, with the host kernel's error for that cell (`u` is downloaded only then). Moves
    /// 4 bytes each way when nothing failed.
    pub fn check_failure(&mut self, u: &DeviceBuffer<f64>) -> Result<(), AssemblyError> {
        let flag = self.ctx.download(&self.fail)?[0];
        if flag == NO_FAILURE {
            return Ok(());
        }
        self.ctx.upload_into(&[NO_FAILURE], &mut self.fail)?;
        let cell = flag as usize;
        let u_host = self.ctx.download(u)?;
        let npc = self.nodes_per_cell;
        let nodes = &self.host_cells[cell * npc..(cell + 1) * npc];
        let xe: Vec<[f64; 3]> = nodes.iter().map(|&n| self.host_coords[n]).collect();
        let ue: Vec<[f64; 3]> = nodes
            .iter()
            .map(|&n| [u_host[3 * n], u_host[3 * n + 1], u_host[3 * n + 2]])
            .collect();
        let error = match self.host_kernel.check_geometry(&xe) {
            Err(e) => e,
            Ok(()) => self
                .host_kernel
                .strain_energy(&xe, &ue, &self.material)
                .err()
                .unwrap_or(FemError::NonPositiveJ { j: f64::NAN }),
        };
        Err(AssemblyError::element_failure(
            self.cell_tags.as_deref(),
            cell,
            error,
        ))
    }
}

/// The `#define`s of the element source for `kernel` (order, quadrature) and `material`.
fn element_defines(kernel: &ElementKernel, material: &Material) -> [(&'static str, i64); 4] {
    let split = matches!(
        material,
        Material::Linear { .. } | Material::NeoHookean { .. }
    );
    let npc = kernel.n_nodes();
    [
        ("NODES", npc as i64),
        ("NQP", kernel.n_qp() as i64),
        ("MATERIAL", material.device_code()),
        ("EPB", cells_per_block(npc, split) as i64),
    ]
}

/// Compiles the element kernels for `kernel` and `material` for `arch` (`"sm_90"`) with NVRTC
/// alone (no device needed) and returns the cubin's size; a rejected source returns NVRTC's log.
pub fn compile_element_source(
    kernel: &ElementKernel,
    material: &Material,
    arch: &str,
) -> Result<usize, AssemblyError> {
    Ok(linalg::backend::cuda::external::compile_only(
        &ELEMENT_SOURCE,
        &element_defines(kernel, material),
        arch,
    )?)
}

pub(crate) fn check(what: &'static str, expected: usize, got: usize) -> Result<(), AssemblyError> {
    if expected == got {
        Ok(())
    } else {
        Err(AssemblyError::SizeMismatch {
            what,
            expected,
            got,
        })
    }
}

/// Launches `scatter_node_slots` of the element source: residual slots (3 values each) to
/// node-major entries of `r`, zero for nodes in no cell (`slot_of_node[i] == u32::MAX`).
pub(crate) fn scatter_node_slots(
    ctx: &CudaContext,
    defines: &[(&'static str, i64)],
    slot_of_node: &DeviceBuffer<u32>,
    slots: &DeviceBuffer<f64>,
    r: &mut DeviceBuffer<f64>,
) -> Result<(), AssemblyError> {
    check("residual", 3 * slot_of_node.len(), r.len())?;
    let n = slot_of_node.len();
    let shape = LaunchShape {
        blocks: (3 * n).div_ceil(256) as u32,
        threads: 256,
        shared_bytes: 0,
    };
    launch(
        ctx,
        &ELEMENT_SOURCE,
        defines,
        "scatter_node_slots",
        shape,
        &mut [
            KernelArg::U32(n as u32),
            KernelArg::U32s(slot_of_node),
            KernelArg::F64s(slots),
            KernelArg::F64sMut(r),
        ],
    )?;
    Ok(())
}

impl DeviceElements {
    pub(crate) fn defines(&self) -> &[(&'static str, i64)] {
        &self.defines
    }
}
