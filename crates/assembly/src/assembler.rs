//! The element loop of hyperelasticity on a hex mesh: element residuals and 3x3 tangent blocks are
//! emitted as blocked COO contributions and summed through plans built once.
//!
//! Contribution layout (fixed at construction, reused every Newton iteration): cell-major, then local
//! test node `a`, then local trial node `b`: contribution `(c n + a) n + b` is block
//! `(node(c, a), node(c, b))`. Residual contributions are `c n + a` at block row `node(c, a)`.

use std::sync::Arc;
use std::time::Instant;

use fem::{ElementKernel, Load, Material};
use linalg::{BlockPattern, Bsr, CooPlan, Vector};
use mesh::HexMesh;
use rayon::prelude::*;

use crate::AssemblyError;

/// Materials per cell: an index into a small table.
#[derive(Clone, Debug)]
pub struct CellMaterials {
    table: Vec<Material>,
    of_cell: Vec<u16>,
}

impl CellMaterials {
    /// One material everywhere.
    pub fn uniform(material: Material, n_cells: usize) -> Self {
        Self { table: vec![material], of_cell: vec![0; n_cells] }
    }

    /// `of_cell[c]` indexes `table`.
    pub fn new(table: Vec<Material>, of_cell: Vec<u16>) -> Result<Self, AssemblyError> {
        if let Some(&bad) = of_cell.iter().find(|&&m| m as usize >= table.len()) {
            return Err(AssemblyError::SizeMismatch { what: "material index", expected: table.len(), got: bad as usize });
        }
        Ok(Self { table, of_cell })
    }

    /// The material of cell `c`.
    pub fn of(&self, c: usize) -> &Material {
        &self.table[self.of_cell[c] as usize]
    }
}

/// Largest number of nodes of a supported cell (Q2).
const MAX_NODES: usize = 27;

/// The discrete hyperelastic operator of one mesh: geometry, materials, element kernel, and the COO
/// plans of the tangent (3x3 blocks over nodes) and of the residual.
pub struct ElasticityAssembler {
    coords: Vec<[f64; 3]>,
    cells: Vec<usize>,
    nodes_per_cell: usize,
    materials: CellMaterials,
    kernel: ElementKernel,
    matrix_plan: CooPlan,
    vector_plan: CooPlan,
    /// Slot of each node in the residual plan's pattern (`None` for nodes in no cell).
    slot_of_node: Vec<Option<usize>>,
    /// Reused buffers of element contributions.
    tangent_values: Vec<[f64; 9]>,
    residual_values: Vec<[f64; 3]>,
    vector_slots: Vec<f64>,
    last_timings: AssemblyTimings,
}

/// Wall times of the last residual (and tangent) evaluation, by phase.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AssemblyTimings {
    /// Element kernels writing COO contributions.
    pub elements_s: f64,
    /// Summing contributions through the COO plans (matrix and vector).
    pub sums_s: f64,
}

impl ElasticityAssembler {
    /// Builds the plans and checks every element's geometry (det J > 0 at every quadrature point of
    /// a Gauss rule with `points_per_direction` points).
    pub fn new(mesh: &HexMesh, materials: CellMaterials, points_per_direction: usize) -> Result<Self, AssemblyError> {
        mesh.validate()?;
        let n_cells = mesh.n_cells();
        if materials.of_cell.len() != n_cells {
            return Err(AssemblyError::SizeMismatch { what: "cell materials", expected: n_cells, got: materials.of_cell.len() });
        }
        let npc = mesh.nodes_per_cell();
        let kernel = ElementKernel::new(mesh.order(), points_per_direction)
            .map_err(|source| AssemblyError::InvalidElement { cell: 0, source })?;
        check_geometry(mesh, &kernel)?;
        let n_nodes = mesh.n_nodes();
        let matrix_plan = {
            let (rows, cols) = tangent_coordinates(&mesh.cells, npc);
            CooPlan::new(n_nodes, n_nodes, &rows, &cols)?
        };
        let vector_plan = {
            let rows: Vec<u32> = mesh.cells.iter().map(|&n| n as u32).collect();
            CooPlan::new(n_nodes, 1, &rows, &vec![0; rows.len()])?
        };
        let pattern = vector_plan.pattern().clone();
        let slot_of_node = (0..n_nodes)
            .map(|i| (pattern.row_ptr()[i + 1] > pattern.row_ptr()[i]).then(|| pattern.row_ptr()[i]))
            .collect();
        Ok(Self {
            coords: mesh.coords.clone(),
            cells: mesh.cells.clone(),
            nodes_per_cell: npc,
            materials,
            kernel,
            tangent_values: vec![[0.0; 9]; matrix_plan.n_contributions()],
            residual_values: vec![[0.0; 3]; n_cells * npc],
            vector_slots: vec![0.0; 3 * pattern.nnz()],
            matrix_plan,
            vector_plan,
            slot_of_node,
            last_timings: AssemblyTimings::default(),
        })
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

    /// The element kernel (order and quadrature).
    pub fn kernel(&self) -> &ElementKernel {
        &self.kernel
    }

    /// Nodes that belong to no cell: they carry no stiffness and must be constrained.
    pub fn orphan_nodes(&self) -> Vec<usize> {
        (0..self.n_nodes()).filter(|&i| self.slot_of_node[i].is_none()).collect()
    }

    /// The block pattern of the tangent (3x3 blocks, one block row per node).
    pub fn pattern(&self) -> &Arc<BlockPattern> {
        self.matrix_plan.pattern()
    }

    /// A zero tangent with this operator's pattern.
    pub fn new_matrix(&self) -> Bsr {
        Bsr::zeros(self.pattern().clone(), 3, 3)
    }

    /// Internal-force residual `r(u) = int P(u) : grad N - int f N` with the body force `body`.
    pub fn residual(&mut self, u: &Vector, body: Load<'_>, r: &mut Vector) -> Result<(), AssemblyError> {
        self.evaluate(u, body, r, None)
    }

    /// Residual and tangent at `u`; the tangent's values are overwritten (its pattern must be
    /// [`Self::pattern`]).
    pub fn residual_tangent(&mut self, u: &Vector, body: Load<'_>, r: &mut Vector, k: &mut Bsr) -> Result<(), AssemblyError> {
        self.evaluate(u, body, r, Some(k))
    }

    fn evaluate(&mut self, u: &Vector, body: Load<'_>, r: &mut Vector, k: Option<&mut Bsr>) -> Result<(), AssemblyError> {
        let n_dofs = 3 * self.n_nodes();
        for (what, len) in [("displacement", u.len()), ("residual", r.len())] {
            if len != n_dofs {
                return Err(AssemblyError::SizeMismatch { what, expected: n_dofs, got: len });
            }
        }
        let npc = self.nodes_per_cell;
        let start = Instant::now();
        let (coords, cells, materials, kernel) = (&self.coords, &self.cells, &self.materials, &self.kernel);
        let u_nodes = as_node_vectors(u.as_slice());
        let element = |c: usize, re: &mut [[f64; 3]], ke: Option<&mut [[f64; 9]]>| {
            let nodes = &cells[c * npc..(c + 1) * npc];
            let mut xe = [[0.0; 3]; MAX_NODES];
            let mut ue = [[0.0; 3]; MAX_NODES];
            for (a, &node) in nodes.iter().enumerate() {
                xe[a] = coords[node];
                ue[a] = u_nodes[node];
            }
            kernel
                .residual_tangent(&xe[..npc], &ue[..npc], materials.of(c), body, re, ke)
                .map_err(|source| AssemblyError::ElementFailure { cell: c, source })
        };
        // The first failing cell in cell order is reported, whatever the thread schedule.
        let failure = match k {
            Some(_) => self
                .residual_values
                .par_chunks_mut(npc)
                .zip(self.tangent_values.par_chunks_mut(npc * npc))
                .enumerate()
                .with_min_len(64)
                .filter_map(|(c, (re, ke))| element(c, re, Some(ke)).err())
                .min_by_key(cell_of),
            None => self
                .residual_values
                .par_chunks_mut(npc)
                .enumerate()
                .with_min_len(64)
                .filter_map(|(c, re)| element(c, re, None).err())
                .min_by_key(cell_of),
        };
        if let Some(err) = failure {
            return Err(err);
        }
        let elements_s = start.elapsed().as_secs_f64();
        let start = Instant::now();
        if let Some(k) = k {
            self.matrix_plan.assemble(self.tangent_values.as_flattened(), k)?;
        }
        self.vector_plan.assemble_slots(self.residual_values.as_flattened(), 3, &mut self.vector_slots)?;
        scatter_node_slots(&self.slot_of_node, &self.vector_slots, r);
        self.last_timings = AssemblyTimings { elements_s, sums_s: start.elapsed().as_secs_f64() };
        Ok(())
    }

    /// Phase times of the last successful evaluation.
    pub fn last_timings(&self) -> AssemblyTimings {
        self.last_timings
    }

    /// The plan that sums tangent contributions (one per cell and pair of local nodes).
    pub fn matrix_plan(&self) -> &CooPlan {
        &self.matrix_plan
    }

    /// Applies `f` to each cell's reference coordinates and displacements, in parallel, collecting
    /// the results in cell order. Post-processing (stresses, energies, errors) goes through here.
    pub fn map_cells<T: Send>(
        &self,
        u: &Vector,
        f: impl Fn(usize, &[[f64; 3]], &[[f64; 3]], &Material) -> Result<T, fem::FemError> + Sync,
    ) -> Result<Vec<T>, AssemblyError> {
        let npc = self.nodes_per_cell;
        let u_nodes = as_node_vectors(u.as_slice());
        (0..self.n_cells())
            .into_par_iter()
            .map(|c| {
                let nodes = &self.cells[c * npc..(c + 1) * npc];
                let mut xe = [[0.0; 3]; MAX_NODES];
                let mut ue = [[0.0; 3]; MAX_NODES];
                for (a, &node) in nodes.iter().enumerate() {
                    xe[a] = self.coords[node];
                    ue[a] = u_nodes[node];
                }
                f(c, &xe[..npc], &ue[..npc], self.materials.of(c)).map_err(|source| AssemblyError::ElementFailure { cell: c, source })
            })
            .collect()
    }
}

fn cell_of(err: &AssemblyError) -> usize {
    match err {
        AssemblyError::ElementFailure { cell, .. } | AssemblyError::InvalidElement { cell, .. } => *cell,
        _ => usize::MAX,
    }
}

/// Views a node-major vector (3 entries per node) as node vectors.
fn as_node_vectors(u: &[f64]) -> &[[f64; 3]] {
    let (nodes, rest) = u.as_chunks::<3>();
    debug_assert!(rest.is_empty());
    nodes
}

/// Copies per-node slot values into a node-major vector; nodes in no cell get zero.
fn scatter_node_slots(slot_of_node: &[Option<usize>], slots: &[f64], r: &mut Vector) {
    r.as_mut_slice().par_chunks_mut(3).zip(slot_of_node.par_iter()).for_each(|(ri, slot)| match slot {
        Some(s) => ri.copy_from_slice(&slots[3 * s..3 * s + 3]),
        None => ri.fill(0.0),
    });
}

/// Block coordinates of every tangent contribution, in the layout documented at the top.
fn tangent_coordinates(cells: &[usize], npc: usize) -> (Vec<u32>, Vec<u32>) {
    let per_cell = npc * npc;
    let n = cells.len() / npc * per_cell;
    let mut rows = vec![0u32; n];
    let mut cols = vec![0u32; n];
    rows.par_chunks_mut(per_cell)
        .zip(cols.par_chunks_mut(per_cell))
        .zip(cells.par_chunks(npc))
        .for_each(|((rows, cols), nodes)| {
            for (a, &na) in nodes.iter().enumerate() {
                for (b, &nb) in nodes.iter().enumerate() {
                    rows[a * npc + b] = na as u32;
                    cols[a * npc + b] = nb as u32;
                }
            }
        });
    (rows, cols)
}

/// Checks det J > 0 at every quadrature point of every cell; the error names the first bad cell.
fn check_geometry(mesh: &HexMesh, kernel: &ElementKernel) -> Result<(), AssemblyError> {
    let npc = mesh.nodes_per_cell();
    (0..mesh.n_cells())
        .into_par_iter()
        .filter_map(|c| {
            let mut xe = [[0.0; 3]; MAX_NODES];
            for (a, &node) in mesh.cell_nodes(c).iter().enumerate() {
                xe[a] = mesh.coords[node];
            }
            kernel.check_geometry(&xe[..npc]).err().map(|source| AssemblyError::InvalidElement { cell: c, source })
        })
        .min_by_key(cell_of)
        .map_or(Ok(()), Err)
}
