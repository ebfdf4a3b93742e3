//! The element loop of hyperelasticity on a hex mesh: element residuals and 3x3 tangent blocks are
//! emitted as blocked COO contributions and summed through plans built once.
//!
//! Contribution layout (fixed at construction, reused every Newton iteration): cell-major, then local
//! test node `a`, then local trial node `b`: contribution `(c n + a) n + b` is block
//! `(node(c, a), node(c, b))`. Residual contributions are `c n + a` at block row `node(c, a)`.
//!
//! Cells are processed in batches of consecutive cells: the element kernels fill a batch buffer in
//! parallel, then the plans add the batch (one plan segment) onto the matrix and the residual while
//! it is still in cache. Memory beyond the plans is the batch buffers, whatever the mesh size, and
//! the sums are bit-identical to summing every contribution at once ([`linalg::CooSum`]).

use std::num::NonZeroUsize;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use fem::{ElementKernel, Formulation, Load, Material, MAX_NODES};
use linalg::{BlockPattern, Bsr, CooPlan, Vector};
use mesh::HexMesh;
use rayon::prelude::*;

use crate::AssemblyError;

/// Materials per cell: an index into a small table, and the element formulation of each table
/// entry (displacement unless set: Abaqus' element type per section).
#[derive(Clone, Debug)]
pub struct CellMaterials {
    table: Vec<Material>,
    /// One per `table` entry.
    formulations: Vec<Formulation>,
    of_cell: Vec<u16>,
}

impl CellMaterials {
    /// One material everywhere.
    pub fn uniform(material: Material, n_cells: usize) -> Self {
        Self {
            table: vec![material],
            formulations: vec![Formulation::Displacement],
            of_cell: vec![0; n_cells],
        }
    }

    /// `of_cell[c]` indexes `table`.
    pub fn new(table: Vec<Material>, of_cell: Vec<u16>) -> Result<Self, AssemblyError> {
        if let Some(&bad) = of_cell.iter().find(|&&m| m as usize >= table.len()) {
            return Err(AssemblyError::SizeMismatch {
                what: "material index",
                expected: table.len(),
                got: bad as usize,
            });
        }
        let formulations = vec![Formulation::Displacement; table.len()];
        Ok(Self {
            table,
            formulations,
            of_cell,
        })
    }

    /// The same cells with `formulations[i]` the element formulation of table entry `i`.
    pub fn with_formulations(
        mut self,
        formulations: Vec<Formulation>,
    ) -> Result<Self, AssemblyError> {
        if formulations.len() != self.table.len() {
            return Err(AssemblyError::SizeMismatch {
                what: "material formulations",
                expected: self.table.len(),
                got: formulations.len(),
            });
        }
        self.formulations = formulations;
        Ok(self)
    }

    /// The material of cell `c`.
    pub fn of(&self, c: usize) -> &Material {
        &self.table[self.of_cell[c] as usize]
    }

    /// The element formulation of cell `c`.
    pub fn formulation_of(&self, c: usize) -> Formulation {
        self.formulations[self.of_cell[c] as usize]
    }

    /// The element formulation of each table entry.
    pub fn formulations(&self) -> &[Formulation] {
        &self.formulations
    }
}

/// Target size of a batch's tangent contributions: small enough to stay in cache between the
/// element kernels that write it and the sums that read it (whole cells, at least one).
const BATCH_BYTES: usize = 8 << 20;

/// Tangent blocks per task of the element loop (cells per task: this over `n^2`, at least one).
const BLOCKS_PER_TASK: usize = 4096;

/// The discrete hyperelastic operator of one mesh: geometry, materials, element kernel, and the COO
/// plans of the tangent (3x3 blocks over nodes) and of the residual.
pub struct ElasticityAssembler {
    /// The mesh's node coordinates and cells, shared with a device twin's host copies.
    coords: Arc<[[f64; 3]]>,
    cells: Arc<[usize]>,
    nodes_per_cell: usize,
    /// The mesh's element tags, to name failing cells ([`HexMesh::cell_tags`]).
    cell_tags: Option<mesh::ElementTags>,
    materials: CellMaterials,
    /// The displacement formulation's kernel: order, quadrature and tables of every formulation.
    kernel: ElementKernel,
    /// The projected formulation's kernel, where some material entry has it.
    projected: Option<ElementKernel>,
    /// Plans of the tangent and the residual, one segment per batch of cells. The tangent's is
    /// made at its first use on the host ([`Self::matrix_plan`]): a GPU makes its own
    /// ([`crate::device`]) and a run there needs none here.
    matrix_plan: OnceLock<CooPlan>,
    matrix_segment: NonZeroUsize,
    vector_plan: CooPlan,
    /// The tangent's block pattern: the host plan's, or the one a GPU's plan made
    /// ([`Self::pattern_made_by`]); the same pattern either way.
    pattern: OnceLock<Arc<BlockPattern>>,
    /// Slot of each node in the residual plan's pattern (`None` for nodes in no cell).
    slot_of_node: Vec<Option<usize>>,
    /// Cells per batch (the last batch may hold fewer).
    cells_per_batch: usize,
    /// Reused buffers of one batch's element contributions.
    tangent_batch: Vec<[f64; 9]>,
    residual_batch: Vec<[f64; 3]>,
    vector_slots: Vec<f64>,
    last_timings: AssemblyTimings,
}

/// Wall times of the last residual (and tangent) evaluation, by phase.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AssemblyTimings {
    /// Element kernels writing COO contributions (all batches).
    pub elements_s: f64,
    /// Summing contributions through the COO plans (matrix and vector, all batches).
    pub sums_s: f64,
}

impl ElasticityAssembler {
    /// Builds the plans and checks every element's geometry (det J > 0 at every quadrature point of
    /// a Gauss rule with `points_per_direction` points).
    pub fn new(
        mesh: &HexMesh,
        materials: CellMaterials,
        points_per_direction: usize,
    ) -> Result<Self, AssemblyError> {
        let n_cells = mesh.n_cells();
        if materials.of_cell.len() != n_cells {
            return Err(AssemblyError::SizeMismatch {
                what: "cell materials",
                expected: n_cells,
                got: materials.of_cell.len(),
            });
        }
        let npc = mesh.nodes_per_cell();
        let kernel = checked_kernel(mesh, points_per_direction)?;
        let projected = projected_kernel(&kernel, &materials)?;
        let n_nodes = mesh.n_nodes();
        let cells_per_batch = (BATCH_BYTES / (npc * npc * size_of::<[f64; 9]>())).max(1);
        let segment = |per_cell: usize| {
            NonZeroUsize::new(cells_per_batch * per_cell).unwrap_or(NonZeroUsize::MIN)
        };
        let cells = &mesh.cells;
        let per_cell = npc * npc;
        // the nodes' plan first (the cells around each node), from which the tangent's plan is
        // grouped row by row: cell `e`'s block `(a, b)` is contribution `(e npc + a) npc + b`
        // (the geometry's shared copies made on one thread beside the plan's parallel sort)
        let ((coords, shared_cells), vector_plan) = rayon::join(
            || {
                let coords: Arc<[[f64; 3]]> = mesh.coords.as_slice().into();
                let cells: Arc<[usize]> = cells.as_slice().into();
                (coords, cells)
            },
            || CooPlan::from_fn(n_nodes, 1, cells.len(), segment(npc), |c| (cells[c], 0)),
        );
        let vector_plan = vector_plan?;
        // what the tangent's plan checks, checked now (its construction, later, cannot fail):
        // the nodes (checked by the residual's plan above) and the count of its contributions
        if cells.len().saturating_mul(npc) > u32::MAX as usize {
            return Err(linalg::LinalgError::TooManyContributions {
                found: cells.len().saturating_mul(npc),
            }
            .into());
        }
        let pattern = vector_plan.pattern().clone();
        let slot_of_node = (0..n_nodes)
            .into_par_iter()
            .map(|i| {
                (pattern.row_ptr()[i + 1] > pattern.row_ptr()[i]).then(|| pattern.row_ptr()[i])
            })
            .collect();
        Ok(Self {
            coords,
            cells: shared_cells,
            nodes_per_cell: npc,
            cell_tags: mesh.cell_tags.clone(),
            materials,
            kernel,
            projected,
            tangent_batch: vec![[0.0; 9]; cells_per_batch.min(n_cells) * per_cell],
            residual_batch: vec![[0.0; 3]; cells_per_batch.min(n_cells) * npc],
            vector_slots: vec![0.0; 3 * pattern.nnz()],
            matrix_plan: OnceLock::new(),
            matrix_segment: segment(per_cell),
            vector_plan,
            pattern: OnceLock::new(),
            slot_of_node,
            cells_per_batch,
            last_timings: AssemblyTimings::default(),
        })
    }

    /// Sets the element `formulation` of every material, keeping the geometry checks and the COO
    /// plans (the formulation is element-local).
    pub fn set_formulation(&mut self, formulation: Formulation) -> Result<(), AssemblyError> {
        let n = self.materials.table.len();
        self.set_materials(
            self.materials
                .clone()
                .with_formulations(vec![formulation; n])?,
        )
    }

    /// Replaces the materials of the cells (and their formulations), keeping the geometry checks
    /// and the COO plans (a second problem on the same mesh and quadrature, e.g. the next case of
    /// a parameter study).
    pub fn set_materials(&mut self, materials: CellMaterials) -> Result<(), AssemblyError> {
        if materials.of_cell.len() != self.n_cells() {
            return Err(AssemblyError::SizeMismatch {
                what: "cell materials",
                expected: self.n_cells(),
                got: materials.of_cell.len(),
            });
        }
        self.projected = match self.projected.take() {
            Some(kernel) if materials.formulations.contains(&Formulation::Projected) => {
                Some(kernel)
            }
            _ => projected_kernel(&self.kernel, &materials)?,
        };
        self.materials = materials;
        Ok(())
    }

    /// Number of mesh nodes (block rows of the tangent).
    pub fn n_nodes(&self) -> usize {
        self.coords.len()
    }

    /// Number of cells.
    pub fn n_cells(&self) -> usize {
        self.cells.len() / self.nodes_per_cell
    }

    /// Reference coordinates of the nodes.
    pub fn coords(&self) -> &[[f64; 3]] {
        &self.coords
    }

    /// The node coordinates and the cells (flat, `nodes_per_cell` a cell), shared.
    pub(crate) fn shared_geometry(&self) -> (Arc<[[f64; 3]]>, Arc<[usize]>) {
        (self.coords.clone(), self.cells.clone())
    }

    /// The displacement formulation's element kernel: the order, quadrature and tables that every
    /// formulation shares (a cell's own kernel: [`Self::kernel_of`]).
    pub fn kernel(&self) -> &ElementKernel {
        &self.kernel
    }

    /// The element kernel of cell `c` (its material's formulation).
    pub fn kernel_of(&self, c: usize) -> &ElementKernel {
        kernel_of(&self.kernel, self.projected.as_ref(), &self.materials, c)
    }

    /// The element kernel of `formulation` (`None`: projected, where no material has it).
    pub fn kernel_of_formulation(&self, formulation: Formulation) -> Option<&ElementKernel> {
        match formulation {
            Formulation::Displacement => Some(&self.kernel),
            Formulation::Projected => self.projected.as_ref(),
        }
    }

    /// Nodes that belong to no cell: they carry no stiffness and must be constrained.
    pub fn orphan_nodes(&self) -> Vec<usize> {
        (0..self.n_nodes())
            .filter(|&i| self.slot_of_node[i].is_none())
            .collect()
    }

    /// The block pattern of the tangent (3x3 blocks, one block row per node).
    pub fn pattern(&self) -> &Arc<BlockPattern> {
        self.pattern
            .get_or_init(|| self.matrix_plan().pattern().clone())
    }

    /// The tangent's block pattern: the one made already (by the host plan or an earlier call),
    /// else `make`'s, kept from then on. `make` gives the pattern of this mesh's element blocks
    /// made elsewhere (a GPU's plan: [`crate::device`]), so that no host plan is made for it.
    pub fn pattern_made_by<E>(
        &self,
        make: impl FnOnce() -> Result<BlockPattern, E>,
    ) -> Result<&Arc<BlockPattern>, E> {
        if let Some(p) = self.pattern.get() {
            return Ok(p);
        }
        let made = Arc::new(make()?);
        Ok(self.pattern.get_or_init(|| made))
    }

    /// A zero tangent with this operator's pattern.
    pub fn new_matrix(&self) -> Bsr {
        Bsr::zeros(self.pattern().clone(), 3, 3)
    }

    /// Internal-force residual `r(u) = int P(u) : grad N - int f N` with the body force `body`.
    pub fn residual(
        &mut self,
        u: &Vector,
        body: Load<'_>,
        r: &mut Vector,
    ) -> Result<(), AssemblyError> {
        self.evaluate(u, body, r, None)
    }

    /// Residual and tangent at `u`; the tangent's values are overwritten (its pattern must be
    /// [`Self::pattern`]). On an element failure, `r` and `k` hold unspecified values.
    pub fn residual_tangent(
        &mut self,
        u: &Vector,
        body: Load<'_>,
        r: &mut Vector,
        k: &mut Bsr,
    ) -> Result<(), AssemblyError> {
        self.evaluate(u, body, r, Some(k))
    }

    fn evaluate(
        &mut self,
        u: &Vector,
        body: Load<'_>,
        r: &mut Vector,
        k: Option<&mut Bsr>,
    ) -> Result<(), AssemblyError> {
        let n_dofs = 3 * self.n_nodes();
        for (what, len) in [("displacement", u.len()), ("residual", r.len())] {
            if len != n_dofs {
                return Err(AssemblyError::SizeMismatch {
                    what,
                    expected: n_dofs,
                    got: len,
                });
            }
        }
        let (npc, n_cells, cells_per_batch) =
            (self.nodes_per_cell, self.n_cells(), self.cells_per_batch);
        let (coords, cells, materials) = (&self.coords, &self.cells, &self.materials);
        let (kernel, projected) = (&self.kernel, self.projected.as_ref());
        let cell_tags = self.cell_tags.as_ref();
        let u_nodes = as_node_vectors(u.host()?);
        let element = |c: usize, re: &mut [[f64; 3]], ke: Option<&mut [[f64; 9]]>| {
            let nodes = &cells[c * npc..(c + 1) * npc];
            let (xe, ue) = (gather(nodes, coords), gather(nodes, u_nodes));
            kernel_of(kernel, projected, materials, c)
                .residual_tangent(&xe[..npc], &ue[..npc], materials.of(c), body, re, ke)
                .map_err(|source| AssemblyError::element_failure(cell_tags, c, source))
        };
        let cells_per_task = (BLOCKS_PER_TASK / (npc * npc)).max(1);
        let matrix_plan = host_matrix_plan(
            &self.matrix_plan,
            (&self.vector_plan, &self.cells, npc),
            self.matrix_segment,
        );
        let mut matrix_sum = k.map(|k| matrix_plan.begin(k)).transpose()?;
        let mut vector_sum = self.vector_plan.begin_host(3, &mut self.vector_slots)?;
        let mut timings = AssemblyTimings::default();
        for first in (0..n_cells).step_by(cells_per_batch) {
            let batch = first..(first + cells_per_batch).min(n_cells);
            let start = Instant::now();
            let residuals = &mut self.residual_batch[..batch.len() * npc];
            let tangents = &mut self.tangent_batch[..batch.len() * npc * npc];
            // The first failing cell in cell order is reported, whatever the thread schedule: batches
            // run in cell order, and the first failing one reports its smallest failing cell.
            let failure = if matrix_sum.is_some() {
                residuals
                    .par_chunks_mut(npc)
                    .zip(tangents.par_chunks_mut(npc * npc))
                    .enumerate()
                    .with_min_len(cells_per_task)
                    .filter_map(|(i, (re, ke))| element(first + i, re, Some(ke)).err())
                    .min_by_key(cell_of)
            } else {
                residuals
                    .par_chunks_mut(npc)
                    .enumerate()
                    .with_min_len(cells_per_task)
                    .filter_map(|(i, re)| element(first + i, re, None).err())
                    .min_by_key(cell_of)
            };
            if let Some(err) = failure {
                return Err(err);
            }
            let sums_start = Instant::now();
            timings.elements_s += (sums_start - start).as_secs_f64();
            let (matrix_added, vector_added) = rayon::join(
                || {
                    matrix_sum
                        .as_mut()
                        .map_or(Ok(()), |sum| sum.add_segment(tangents.as_flattened()))
                },
                || vector_sum.add_segment(residuals.as_flattened()),
            );
            matrix_added?;
            vector_added?;
            timings.sums_s += sums_start.elapsed().as_secs_f64();
        }
        let start = Instant::now();
        if let Some(sum) = matrix_sum {
            sum.finish()?;
        }
        vector_sum.finish()?;
        scatter_node_slots(&self.slot_of_node, &self.vector_slots, r.host_mut()?);
        timings.sums_s += start.elapsed().as_secs_f64();
        self.last_timings = timings;
        Ok(())
    }

    /// Cell-to-node connectivity, `nodes_per_cell` entries per cell.
    pub fn cells(&self) -> &[usize] {
        &self.cells
    }

    /// Materials (and formulations) per cell.
    pub fn materials(&self) -> &CellMaterials {
        &self.materials
    }

    /// The mesh's element tags (to name failing cells).
    pub(crate) fn cell_tags(&self) -> Option<&mesh::ElementTags> {
        self.cell_tags.as_ref()
    }

    /// The plan that sums residual contributions (3 values per node contribution).
    pub(crate) fn vector_plan(&self) -> &CooPlan {
        &self.vector_plan
    }

    /// Slot of each node in the residual plan's pattern (`None` for nodes in no cell).
    pub(crate) fn slot_of_node(&self) -> &[Option<usize>] {
        &self.slot_of_node
    }

    /// Phase times of the last successful evaluation.
    pub fn last_timings(&self) -> AssemblyTimings {
        self.last_timings
    }

    /// The plan that sums tangent contributions (one per cell and pair of local nodes; one segment
    /// per batch of cells), made at the first call.
    pub fn matrix_plan(&self) -> &CooPlan {
        host_matrix_plan(
            &self.matrix_plan,
            (&self.vector_plan, &self.cells, self.nodes_per_cell),
            self.matrix_segment,
        )
    }

    /// Whether the tangent's host plan has been made (tests: a GPU's problem makes none).
    #[cfg(test)]
    pub(crate) fn host_matrix_plan_made(&self) -> bool {
        self.matrix_plan.get().is_some()
    }

    /// Applies `f` to each cell's reference coordinates and displacements, in parallel, collecting
    /// the results in cell order. Post-processing (stresses, energies, errors) goes through here.
    /// An error is the first failing cell's in cell order, whatever the thread schedule (as the
    /// element loop's).
    pub fn map_cells<T: Send>(
        &self,
        u: &Vector,
        f: impl Fn(usize, &[[f64; 3]], &[[f64; 3]], &Material) -> Result<T, fem::FemError> + Sync,
    ) -> Result<Vec<T>, AssemblyError> {
        let npc = self.nodes_per_cell;
        let u_nodes = as_node_vectors(u.host()?);
        let cell = |c: usize| {
            let nodes = &self.cells[c * npc..(c + 1) * npc];
            let (xe, ue) = (gather(nodes, &self.coords), gather(nodes, u_nodes));
            f(c, &xe[..npc], &ue[..npc], self.materials.of(c)).map_err(|source| {
                AssemblyError::element_failure(self.cell_tags.as_ref(), c, source)
            })
        };
        // rayon returns any failing cell's error: the first one is looked for after a failure
        (0..self.n_cells())
            .into_par_iter()
            .map(cell)
            .collect::<Result<Vec<T>, AssemblyError>>()
            .map_err(|any| {
                (0..self.n_cells())
                    .into_par_iter()
                    .find_first(|&c| cell(c).is_err())
                    .and_then(|c| cell(c).err())
                    .unwrap_or(any)
            })
    }
}

/// The kernel of cell `c`: `displacement`, or `projected` where its material's formulation is.
#[inline(always)]
fn kernel_of<'k>(
    displacement: &'k ElementKernel,
    projected: Option<&'k ElementKernel>,
    materials: &CellMaterials,
    c: usize,
) -> &'k ElementKernel {
    match (materials.formulation_of(c), projected) {
        (Formulation::Projected, Some(projected)) => projected,
        _ => displacement,
    }
}

/// The projected formulation's kernel of `displacement`'s order and rule, where some entry of
/// `materials` has that formulation (fails where the projection lacks Gauss points).
fn projected_kernel(
    displacement: &ElementKernel,
    materials: &CellMaterials,
) -> Result<Option<ElementKernel>, AssemblyError> {
    if !materials.formulations.contains(&Formulation::Projected) {
        return Ok(None);
    }
    let kernel = displacement
        .clone()
        .with_formulation(Formulation::Projected)
        .map_err(AssemblyError::Kernel)?;
    Ok(Some(kernel))
}

fn cell_of(err: &AssemblyError) -> usize {
    err.cell().unwrap_or(usize::MAX)
}

/// The entries of the nodal field `field` at a cell's `nodes`, in local order, in a stack buffer
/// (the first `nodes.len()` entries): what the element kernels take as `x` and `u`.
#[inline(always)]
fn gather(nodes: &[usize], field: &[[f64; 3]]) -> [[f64; 3]; MAX_NODES] {
    let mut out = [[0.0; 3]; MAX_NODES];
    for (o, &node) in out.iter_mut().zip(nodes) {
        *o = field[node];
    }
    out
}

/// The tangent's plan in `slot`, made there at the first call from the residual's plan
/// `incidence`, the `cells` (`npc` nodes a cell) and the batches' `segment`.
fn host_matrix_plan<'a>(
    slot: &'a OnceLock<CooPlan>,
    (incidence, cells, npc): (&CooPlan, &[usize], usize),
    segment: NonZeroUsize,
) -> &'a CooPlan {
    slot.get_or_init(|| {
        CooPlan::of_cell_blocks(incidence, cells, npc, segment)
            // its nodes and contribution count were checked by `ElasticityAssembler::new`
            .expect("the tangent's plan was checked when the assembler was made")
    })
}

/// Views a node-major vector (3 entries per node) as node vectors.
fn as_node_vectors(u: &[f64]) -> &[[f64; 3]] {
    let (nodes, rest) = u.as_chunks::<3>();
    debug_assert!(rest.is_empty());
    nodes
}

/// Copies per-node slot values into a node-major vector; nodes in no cell get zero.
fn scatter_node_slots(slot_of_node: &[Option<usize>], slots: &[f64], r: &mut [f64]) {
    r.par_chunks_mut(3)
        .zip(slot_of_node.par_iter())
        .for_each(|(ri, slot)| match slot {
            Some(s) => ri.copy_from_slice(&slots[3 * s..3 * s + 3]),
            None => ri.fill(0.0),
        });
}

/// Checks det J > 0 at every quadrature point of every cell; the error names the first bad cell
/// as the mesh does ([`HexMesh::describe_cell`]).
/// The checks of [`ElasticityAssembler::new`] that depend on the mesh alone, with its errors:
/// the mesh's structure, the element rule (`points_per_direction` Gauss points a direction for
/// the mesh's order) and every cell's geometry (the first invalid cell named), without making
/// the assembler's plans (a rank's part checked before its problem is made).
pub fn check_mesh_geometry(
    mesh: &HexMesh,
    points_per_direction: usize,
) -> Result<(), AssemblyError> {
    checked_kernel(mesh, points_per_direction).map(drop)
}

/// The element kernel of `mesh` once the mesh and every cell's geometry are checked
/// ([`check_mesh_geometry`]).
fn checked_kernel(
    mesh: &HexMesh,
    points_per_direction: usize,
) -> Result<ElementKernel, AssemblyError> {
    mesh.validate()?;
    let kernel =
        ElementKernel::new(mesh.order(), points_per_direction).map_err(AssemblyError::Kernel)?;
    check_geometry(mesh, &kernel)?;
    Ok(kernel)
}

fn check_geometry(mesh: &HexMesh, kernel: &ElementKernel) -> Result<(), AssemblyError> {
    let npc = mesh.nodes_per_cell();
    (0..mesh.n_cells())
        .into_par_iter()
        .filter_map(|c| {
            let xe = gather(mesh.cell_nodes(c), &mesh.coords);
            let invalid =
                |source| AssemblyError::invalid_element(mesh.cell_tags.as_ref(), c, source);
            kernel.check_geometry(&xe[..npc]).err().map(invalid)
        })
        .min_by_key(cell_of)
        .map_or(Ok(()), Err)
}
