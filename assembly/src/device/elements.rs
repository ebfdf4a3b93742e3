//! [`DeviceElements`]: the element kernels of one mesh on the device.

use rayon::prelude::*;
use std::sync::Arc;

use fem::{
    CellFieldSet, CellFields, ElementKernel, FemError, Formulation, Material, StateCellFields,
    StrainMeasure, ELEMENT_CUDA_SOURCE, LOADS_CUDA_SOURCE, PROJECTED_CUDA_SOURCE,
};
use linalg::gpu::{CudaContext, DeviceBuffer};
use linalg::gpu::{KernelArg, KernelModule, LaunchShape};

use crate::{AssemblyError, CellMaterials, ElasticityAssembler};

/// The element source as linalg's external-kernel entry point takes it. `--fmad=false`: the
/// kernels mirror the host's operations one for one, so they round as the host does.
const ELEMENT_SOURCE: KernelModule = KernelModule {
    name: "fem/element.cu",
    text: ELEMENT_CUDA_SOURCE,
    fmad: false,
};

/// The projected formulation's kernels (after the element source, with its defines and `MODES`).
const PROJECTED_SOURCE: KernelModule = KernelModule {
    name: "fem/element.cu + fem/projected.cu",
    text: PROJECTED_CUDA_SOURCE,
    fmad: false,
};

/// The dead-load kernels (after the element source, with its defines).
pub(crate) const LOADS_SOURCE: KernelModule = KernelModule {
    name: "fem/element.cu + fem/loads.cu",
    text: LOADS_CUDA_SOURCE,
    fmad: false,
};

/// Values per cell of [`DeviceElements::cell_fields`].
pub const CELL_FIELDS: usize = 10;

/// Values per cell of [`DeviceElements::cell_checks`].
pub const CELL_CHECKS: usize = 2;

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

/// Static shared memory per block of the element kernels.
const SHARED_BYTES: usize = 48 * 1024;

/// Bytes of one cell's `ProjectedShared` (fem/cuda/projected.cu; the kernel's `static_assert`
/// checks `EPB` cells against [`SHARED_BYTES`]): doubles for the nodes, per point (gradients,
/// weight, modes, measure, `e_Theta`, two 3x3s, the 9x9 Hessian), the coefficients, `Z`, `U`, the
/// Gram matrix, and the failure flag (padded to 8 bytes).
fn projected_cell_bytes(nodes: usize, n_qp: usize, modes: usize) -> usize {
    let per_point = 3 * nodes + 1 + modes + 2 + 18 + 81;
    let doubles = 6 * nodes + n_qp * per_point + 2 * modes + 6 * modes * nodes + modes * modes;
    8 * doubles + 8
}

/// [`AssemblyError::DeviceUnsupported`] where some material of `assembler` has the projected
/// formulation and one cell's `ProjectedShared` exceeds the shared memory (rules of more than 27
/// points at Q2).
pub(crate) fn check_projected_fits(assembler: &ElasticityAssembler) -> Result<(), AssemblyError> {
    let Some(kernel) = assembler.kernel_of_formulation(Formulation::Projected) else {
        return Ok(());
    };
    let (npc, n_qp) = (kernel.n_nodes(), kernel.n_qp());
    match kernel.projection_table() {
        Some((modes, _)) if projected_cells_per_block(npc, n_qp, modes) == 0 => {
            Err(AssemblyError::DeviceUnsupported {
                what: format!(
                    "the projected formulation's device kernels hold a cell's {n_qp} points of \
                     {npc} nodes in shared memory only up to 27 points"
                ),
            })
        }
        _ => Ok(()),
    }
}

/// Cells per block of the projected kernels: as many as fit (at most 8); 0 where one cell does not
/// fit (rules of more than 27 points at Q2, 27 at Q1 is the largest that fits there).
fn projected_cells_per_block(nodes: usize, n_qp: usize, modes: usize) -> usize {
    (SHARED_BYTES / projected_cell_bytes(nodes, n_qp, modes)).min(8)
}

/// The cells of one material and formulation: the plan of [`DeviceElements`]' launches, built
/// once.
struct MaterialGroup {
    material: Material,
    formulation: Formulation,
    /// The element source's `#define`s for this material and formulation.
    defines: Defines,
    /// The group's cells, ascending; where the group is the whole mesh (`INDIRECT` 0) one unread
    /// entry, the kernels taking cells `0..len` directly.
    cells: DeviceBuffer<u32>,
    len: usize,
}

impl MaterialGroup {
    fn len(&self) -> usize {
        self.len
    }
}

/// The `#define`s of one compilation of the element source.
type Defines = [(&'static str, i64); 6];

/// A material, its formulation and its cells.
type Group = (Material, Formulation, Vec<u32>);

/// The cells of each distinct material and formulation of `materials` (first appearance order;
/// cells ascending within a group). Every cell is in exactly one group.
pub(super) fn material_groups(materials: &CellMaterials, n_cells: usize) -> Vec<Group> {
    const CELLS_A_TASK: usize = 1 << 14;
    // the cells of `(m, f)` in `groups`, a new group at the end where it has none
    fn cells_of(groups: &mut Vec<Group>, m: Material, f: Formulation) -> &mut Vec<u32> {
        let at = match groups.iter().position(|(g, gf, _)| *g == m && *gf == f) {
            Some(at) => at,
            None => {
                groups.push((m, f, Vec::new()));
                groups.len() - 1
            }
        };
        &mut groups[at].2
    }
    // each task's groups in its cells' order, then joined task by task: the first appearance
    // order and ascending cells of one pass
    let tasks: Vec<Vec<Group>> = (0..n_cells.div_ceil(CELLS_A_TASK))
        .into_par_iter()
        .map(|t| {
            let mut groups = Vec::new();
            for c in t * CELLS_A_TASK..n_cells.min((t + 1) * CELLS_A_TASK) {
                cells_of(&mut groups, *materials.of(c), materials.formulation_of(c)).push(c as u32);
            }
            groups
        })
        .collect();
    let mut groups = Vec::new();
    for (m, f, cells) in tasks.into_iter().flatten() {
        cells_of(&mut groups, m, f).extend(cells);
    }
    groups
}

/// Mesh (reference coordinates, connectivity), quadrature tables and the materials of an
/// [`ElasticityAssembler`], uploaded once; evaluates element residuals, tangent blocks and energies
/// of every cell at a device displacement.
///
/// Cells are grouped by material and formulation once (a plan of cell lists); every evaluation
/// launches each group's kernel (its formulation's source) over its cells. Outputs are in the assembler's contribution layout whatever
/// the grouping: residual `[(c n + a) 3 + i]`, tangent `[((c n + a) n + b) 9 + 3 i + k]` (`n` nodes
/// per cell), so the COO plans sum them as the host does.
pub struct DeviceElements {
    ctx: Arc<CudaContext>,
    n_cells: usize,
    n_nodes: usize,
    nodes_per_cell: usize,
    groups: Vec<MaterialGroup>,
    /// The projected formulation's table `[1, xi, eta, zeta]` per point (`None`: no group is
    /// projected).
    projection: Option<DeviceBuffer<f64>>,
    cells: DeviceBuffer<u32>,
    coords: DeviceBuffer<f64>,
    weights: DeviceBuffer<f64>,
    gradients: DeviceBuffer<f64>,
    fail: DeviceBuffer<u32>,
    /// Host copies, to name a failing cell exactly as the host path does (the displacement
    /// formulation's kernel and the projected one's, where some group has it).
    host_kernel: ElementKernel,
    host_projected: Option<ElementKernel>,
    host_coords: Arc<[[f64; 3]]>,
    host_cells: Arc<[usize]>,
    host_materials: CellMaterials,
    cell_tags: Option<mesh::ElementTags>,
}

/// One element kernel of [`DeviceElements`]: its name in the displacement formulation's source
/// and in the projected one's, and whether it shares each cell among a block's threads (`EPB` cells
/// per block of [`THREADS`]) or runs one cell per thread.
struct Launch {
    name: &'static str,
    projected: &'static str,
    blocked: bool,
}

impl Launch {
    /// The kernel's name in the source of `formulation`.
    fn name(&self, formulation: Formulation) -> &'static str {
        match formulation {
            Formulation::Displacement => self.name,
            Formulation::Projected => self.projected,
        }
    }
}

impl DeviceElements {
    /// Uploads `assembler`'s mesh, tables and cell lists per material. Errors if the mesh does not
    /// fit 32-bit indices.
    pub fn new(
        ctx: &Arc<CudaContext>,
        assembler: &ElasticityAssembler,
    ) -> Result<Self, AssemblyError> {
        let kernel = assembler.kernel().clone();
        let projected = assembler
            .kernel_of_formulation(Formulation::Projected)
            .cloned();
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
        check_projected_fits(assembler)?;
        let projection = projected.as_ref().and_then(ElementKernel::projection_table);
        let groups = material_groups(assembler.materials(), assembler.n_cells());
        let whole_mesh = groups.len() == 1;
        let groups = groups
            .into_iter()
            .map(|(material, formulation, cells)| {
                let group_kernel = match (formulation, &projected) {
                    (Formulation::Projected, Some(p)) => p,
                    _ => &kernel,
                };
                Ok(MaterialGroup {
                    defines: element_defines(group_kernel, &material, !whole_mesh),
                    material,
                    formulation,
                    len: cells.len(),
                    cells: ctx.upload(if whole_mesh { &cells[..1] } else { &cells })?,
                })
            })
            .collect::<Result<Vec<_>, AssemblyError>>()?;
        let cells: Vec<u32> = assembler.cells().par_iter().map(|&n| n as u32).collect();
        let (host_coords, host_cells) = assembler.shared_geometry();
        Ok(Self {
            ctx: ctx.clone(),
            n_cells: assembler.n_cells(),
            n_nodes,
            nodes_per_cell: npc,
            groups,
            projection: match &projection {
                Some((_, phi)) => Some(ctx.upload(phi)?),
                None => None,
            },
            cells: ctx.upload(&cells)?,
            coords: ctx.upload(assembler.coords().as_flattened())?,
            weights: ctx.upload(kernel.qp_weights())?,
            gradients: ctx.upload(kernel.qp_reference_gradients().as_flattened())?,
            fail: ctx.upload(&[NO_FAILURE])?,
            host_kernel: kernel,
            host_projected: projected,
            host_coords,
            host_cells,
            host_materials: assembler.materials().clone(),
            cell_tags: assembler.cell_tags().cloned(),
        })
    }

    /// The device.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The reference node coordinates on the device, node-major (`3 n_nodes` values).
    pub fn coords(&self) -> &DeviceBuffer<f64> {
        &self.coords
    }

    /// Cells.
    pub fn n_cells(&self) -> usize {
        self.n_cells
    }

    /// Nodes per cell (8 or 27).
    #[cfg(test)]
    pub fn nodes_per_cell(&self) -> usize {
        self.nodes_per_cell
    }

    /// Quadrature points per cell.
    pub fn n_qp(&self) -> usize {
        self.host_kernel.n_qp()
    }

    /// The distinct materials with their number of cells (one kernel launch each per evaluation),
    /// in order of first appearance (a material of two formulations: twice).
    #[cfg(test)]
    pub fn materials(&self) -> Vec<(Material, usize)> {
        self.groups.iter().map(|g| (g.material, g.len())).collect()
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

    /// Launches `launch` once per group over its cells, from the source of the group's formulation:
    /// the arguments are the group's size and cells, the mesh, `u`, the tables (and the
    /// projection's, in the projected formulation), the material's parameters, `scalars`, then
    /// `outputs`, then the failure flag.
    fn launch_groups(
        &mut self,
        launch_of: Launch,
        u: &DeviceBuffer<f64>,
        scalars: &[u32],
        outputs: &mut [&mut DeviceBuffer<f64>],
    ) -> Result<(), AssemblyError> {
        for group in &self.groups {
            let [p0, p1, p2] = group.material.device_params();
            let shape = if launch_of.blocked {
                LaunchShape {
                    blocks: group.len().div_ceil(group.defines[3].1 as usize) as u32,
                    threads: THREADS,
                    shared_bytes: 0,
                }
            } else {
                LaunchShape {
                    blocks: group.len().div_ceil(128) as u32,
                    threads: 128,
                    shared_bytes: 0,
                }
            };
            let mut args = vec![
                KernelArg::U32(group.len() as u32),
                KernelArg::U32s(&group.cells),
                KernelArg::U32s(&self.cells),
                KernelArg::F64s(&self.coords),
                KernelArg::F64s(u),
                KernelArg::F64s(&self.weights),
                KernelArg::F64s(&self.gradients),
            ];
            let formulation = group.formulation;
            if formulation == Formulation::Projected {
                let phi =
                    self.projection
                        .as_ref()
                        .ok_or_else(|| AssemblyError::DeviceUnsupported {
                            what: "a projected group without the projection's table".to_string(),
                        })?;
                args.push(KernelArg::F64s(phi));
            }
            args.extend([KernelArg::F64(p0), KernelArg::F64(p1), KernelArg::F64(p2)]);
            args.extend(scalars.iter().map(|&s| KernelArg::U32(s)));
            args.extend(outputs.iter_mut().map(|o| KernelArg::F64sMut(o)));
            args.push(KernelArg::U32sMut(&mut self.fail));
            element_source(formulation).launch(
                &self.ctx,
                &group.defines,
                launch_of.name(formulation),
                shape,
                &mut args,
            )?;
        }
        Ok(())
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
        let launch = Launch {
            name: "element_residual_tangent",
            projected: "projected_residual_tangent",
            blocked: true,
        };
        self.launch_groups(launch, u, &[], &mut [r, k])
    }

    /// Queues element residuals only (no tangent work) at `u` into `r`.
    pub fn residual(
        &mut self,
        u: &DeviceBuffer<f64>,
        r: &mut DeviceBuffer<f64>,
    ) -> Result<(), AssemblyError> {
        self.check_u(u)?;
        check("element residuals", self.residual_len(), r.len())?;
        let launch = Launch {
            name: "element_residual",
            projected: "projected_residual",
            blocked: true,
        };
        self.launch_groups(launch, u, &[], &mut [r])
    }

    /// Queues the strain energy `int psi dV` of every cell at `u` into `energies` (one per cell).
    pub fn energies(
        &mut self,
        u: &DeviceBuffer<f64>,
        energies: &mut DeviceBuffer<f64>,
    ) -> Result<(), AssemblyError> {
        self.check_u(u)?;
        check("cell energies", self.n_cells, energies.len())?;
        let launch = Launch {
            name: "element_energy",
            projected: "projected_energy",
            blocked: false,
        };
        self.launch_groups(launch, u, &[], &mut [energies])
    }

    /// Queues the output fields of every cell at `u` into `fields` (10 per cell, the fields of
    /// [`fem::CellFields`] in order: Cauchy stress `[xx, yy, zz, xy, yz, xz]`, von Mises, `J`,
    /// energy density, strain energy).
    pub fn cell_fields(
        &mut self,
        u: &DeviceBuffer<f64>,
        fields: &mut DeviceBuffer<f64>,
    ) -> Result<(), AssemblyError> {
        self.cell_outputs(u, CELL_FIELDS, fields)
    }

    /// Queues the checks' pair of every cell at `u` into `checks` (2 per cell: `J`, NaN where
    /// some field of [`Self::cell_fields`] of the cell is not finite, and the strain energy; the
    /// bits of [`Self::cell_fields`]' `J` and strain energy: the same kernel).
    pub fn cell_checks(
        &mut self,
        u: &DeviceBuffer<f64>,
        checks: &mut DeviceBuffer<f64>,
    ) -> Result<(), AssemblyError> {
        self.cell_outputs(u, CELL_CHECKS, checks)
    }

    /// The cell-field kernels writing `width` values a cell ([`CELL_FIELDS`] or
    /// [`CELL_CHECKS`]) into `out`.
    fn cell_outputs(
        &mut self,
        u: &DeviceBuffer<f64>,
        width: usize,
        out: &mut DeviceBuffer<f64>,
    ) -> Result<(), AssemblyError> {
        self.check_u(u)?;
        check("cell fields", width * self.n_cells, out.len())?;
        let launch = Launch {
            name: "element_cell_fields",
            projected: "projected_cell_fields",
            blocked: false,
        };
        self.launch_groups(launch, u, &[width as u32], &mut [out])
    }

    /// The fields `set` of every cell at `u`, computed on the device and downloaded: every
    /// field ([`Self::download_cell_fields`]), or `J` and the strain energy (`16` bytes a cell
    /// come down), every field where some cell's other fields are not finite (so that the
    /// state's checks name the field and the cell, as for [`CellFieldSet::Every`]). Waits; a
    /// failed cell is reported like [`Self::check_failure`].
    pub fn download_state_cell_fields(
        &mut self,
        u: &DeviceBuffer<f64>,
        set: CellFieldSet,
    ) -> Result<StateCellFields, AssemblyError> {
        if set == CellFieldSet::Every {
            return Ok(StateCellFields::Every(self.download_cell_fields(u)?));
        }
        let mut checks = self.ctx.zeros::<f64>(CELL_CHECKS * self.n_cells)?;
        self.cell_checks(u, &mut checks)?;
        self.check_failure(u)?;
        let checks = self.ctx.download(&checks)?;
        let (pairs, _) = checks.as_chunks::<CELL_CHECKS>();
        if pairs.par_iter().any(|[j, _]| j.is_nan()) {
            return Ok(StateCellFields::Every(self.download_cell_fields(u)?));
        }
        let (j, strain_energy) = rayon::join(
            || pairs.par_iter().map(|&[j, _]| j).collect(),
            || pairs.par_iter().map(|&[_, e]| e).collect(),
        );
        Ok(StateCellFields::Checks { j, strain_energy })
    }

    /// The output fields of every cell at `u`, computed on the device and downloaded (the state's
    /// output at a converged step: `8` [`CELL_FIELDS`] bytes per cell come down). Waits; a failed
    /// cell is reported like [`Self::check_failure`].
    pub fn download_cell_fields(
        &mut self,
        u: &DeviceBuffer<f64>,
    ) -> Result<Vec<CellFields>, AssemblyError> {
        let mut fields = self.ctx.zeros::<f64>(CELL_FIELDS * self.n_cells)?;
        self.cell_fields(u, &mut fields)?;
        self.check_failure(u)?;
        // converted on the host's threads (a fresh vector's page faults in parallel)
        Ok(self
            .ctx
            .download(&fields)?
            .as_chunks::<CELL_FIELDS>()
            .0
            .par_iter()
            .map(
                |&[xx, yy, zz, xy, yz, xz, von_mises, j, energy_density, strain_energy]| {
                    CellFields {
                        cauchy: [xx, yy, zz, xy, yz, xz],
                        von_mises,
                        j,
                        energy_density,
                        strain_energy,
                    }
                },
            )
            .collect())
    }

    /// Whether [`Self::cell_strains`] computes the strain `measure` here, bit for bit the host's
    /// [`ElementKernel::cell_strain`]: the material model's and the Green-Lagrange strain where
    /// every cell has the displacement formulation. Not the logarithmic strain (the host takes
    /// it from nalgebra's iterative eigen-decomposition and the C library's `log1p`, whose bits
    /// differ between CPUs: glibc picks an FMA build by CPU), nor the projected formulation's
    /// strains (its `h_bar` takes `ln` and `exp` of the volume change, CUDA's and the C
    /// library's at large strain).
    pub fn computes_strain(&self, measure: StrainMeasure) -> bool {
        strain_code(measure).is_some()
            && self
                .groups
                .iter()
                .all(|g| g.formulation == Formulation::Displacement)
    }

    /// Queues the reference-volume average of the strain `measure` over every cell at `u` into
    /// `strains` (9 per cell, full 3x3 row-major: [`ElementKernel::cell_strain`]'s values bit
    /// for bit); [`AssemblyError::DeviceUnsupported`] where [`Self::computes_strain`] is false.
    pub fn cell_strains(
        &mut self,
        u: &DeviceBuffer<f64>,
        measure: StrainMeasure,
        strains: &mut DeviceBuffer<f64>,
    ) -> Result<(), AssemblyError> {
        self.check_u(u)?;
        check("cell strains", 9 * self.n_cells, strains.len())?;
        let code = strain_code(measure)
            .filter(|_| self.computes_strain(measure))
            .ok_or_else(|| AssemblyError::DeviceUnsupported {
                what: format!(
                    "the {measure:?} strain on the device (only the model's and the \
                     Green-Lagrange strain, in the displacement formulation)"
                ),
            })?;
        let launch = Launch {
            name: "element_cell_strains",
            projected: "element_cell_strains",
            blocked: false,
        };
        self.launch_groups(launch, u, &[code], &mut [strains])
    }

    /// [`Self::cell_strains`] downloaded (`72` bytes per cell come down). Waits; a failed cell is
    /// reported like [`Self::check_failure`].
    pub fn download_cell_strains(
        &mut self,
        u: &DeviceBuffer<f64>,
        measure: StrainMeasure,
    ) -> Result<Vec<[f64; 9]>, AssemblyError> {
        let mut strains = self.ctx.zeros::<f64>(9 * self.n_cells)?;
        self.cell_strains(u, measure, &mut strains)?;
        self.check_failure(u)?;
        let mut out = vec![[0.0; 9]; self.n_cells];
        self.ctx.download_into(&strains, out.as_flattened_mut())?;
        Ok(out)
    }

    // the device dead loads (`loads.rs`): checked by the tests, not yet called by DeviceProblem
    #[cfg_attr(not(test), allow(dead_code))]
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
        LOADS_SOURCE.launch(
            &self.ctx,
            &self.defines(),
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
        let kernel = match (
            self.host_materials.formulation_of(cell),
            &self.host_projected,
        ) {
            (Formulation::Projected, Some(projected)) => projected,
            _ => &self.host_kernel,
        };
        let error = match kernel.check_geometry(&xe) {
            Err(e) => e,
            Ok(()) => kernel
                .strain_energy(&xe, &ue, self.host_materials.of(cell))
                .err()
                .unwrap_or(FemError::NonPositiveJ { j: f64::NAN }),
        };
        Err(AssemblyError::element_failure(
            self.cell_tags.as_ref(),
            cell,
            error,
        ))
    }
}

/// The element source's code of the strain `measure` (`STRAIN_MODEL`, `STRAIN_GREEN_LAGRANGE`
/// of fem/cuda/element.cu); `None`: the device does not compute it.
fn strain_code(measure: StrainMeasure) -> Option<u32> {
    match measure {
        StrainMeasure::Model => Some(0),
        StrainMeasure::GreenLagrange => Some(1),
        StrainMeasure::Logarithmic => None,
    }
}

/// The element source of `formulation`'s kernels.
fn element_source(formulation: Formulation) -> &'static KernelModule {
    match formulation {
        Formulation::Displacement => &ELEMENT_SOURCE,
        Formulation::Projected => &PROJECTED_SOURCE,
    }
}

/// The `#define`s of the element source for `kernel` (order, quadrature, formulation) and
/// `material`; `indirect`: a launch's cells come from a list (a mesh of several materials), else
/// they are `0..n`. `MODES`: the projection's modes (0 in the displacement formulation).
fn element_defines(kernel: &ElementKernel, material: &Material, indirect: bool) -> Defines {
    let split = matches!(
        material,
        Material::Linear { .. } | Material::NeoHookean { .. }
    );
    let (npc, n_qp) = (kernel.n_nodes(), kernel.n_qp());
    let modes = kernel.projection_table().map_or(0, |(modes, _)| modes);
    let epb = if modes == 0 {
        cells_per_block(npc, split)
    } else {
        projected_cells_per_block(npc, n_qp, modes).max(1)
    };
    [
        ("NODES", npc as i64),
        ("NQP", n_qp as i64),
        ("MATERIAL", material.device_code()),
        ("EPB", epb as i64),
        ("INDIRECT", indirect as i64),
        ("MODES", modes as i64),
    ]
}

/// Compiles the element kernels for `kernel` (its formulation's source) and `material` for `arch`
/// (`"sm_90"`) with NVRTC alone (no device needed), both the whole-mesh and the cell-list
/// variants, and returns the cubins' size; a rejected source returns NVRTC's log.
#[cfg(test)]
pub(crate) fn compile_element_source(
    kernel: &ElementKernel,
    material: &Material,
    arch: &str,
) -> Result<usize, AssemblyError> {
    let mut bytes = 0;
    for indirect in [false, true] {
        bytes += element_source(kernel.formulation())
            .compile_only(&element_defines(kernel, material, indirect), arch)?;
    }
    Ok(bytes)
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
    ELEMENT_SOURCE.launch(
        ctx,
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
    /// `#define`s that compile the element source (any material's: for its material-free
    /// kernels such as `scatter_node_slots`).
    pub(crate) fn defines(&self) -> Defines {
        match self.groups.first() {
            Some(g) => g.defines,
            None => element_defines(
                &self.host_kernel,
                &Material::Linear {
                    lambda: 0.0,
                    mu: 0.0,
                },
                false,
            ),
        }
    }
}
