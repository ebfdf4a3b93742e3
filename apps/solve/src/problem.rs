//! The discrete problem of a run: mesh, materials per cell, constraints and dead loads, built from
//! plain [`ProblemParams`]. Knows nothing of the nonlinear solution strategy.

use anyhow::{bail, Context, Result};
use assembly::{
    add_traction_load, body_force_load, rigid_body_modes, CellMaterials, Constraints,
    DiscreteProblem, ElasticityAssembler, Prescribed, RIGID_BODY_MODES_3D,
};
use fem::Load;
use mesh::{generate_box, read_gmsh, HexMesh};

use crate::params::{CellSelection, MeshSource, ProblemParams};

/// The discrete problem of one run: the mesh and what is assembled on it.
pub struct Problem {
    pub mesh: HexMesh,
    /// Element loop, constraints and dead loads; Newton's one assemble-and-eliminate path.
    pub discrete: DiscreteProblem,
}

impl Problem {
    /// Builds mesh, materials, constraints and loads of `params`.
    pub fn new(params: &ProblemParams) -> Result<Self> {
        let mesh = build_mesh(&params.mesh)?;
        let materials = cell_materials(params, &mesh)?;
        let points = quadrature_points(params, &mesh)?;
        let assembler = ElasticityAssembler::new(&mesh, materials, points)
            .context("setting up the element loop")?;
        let mut problem = Self {
            discrete: DiscreteProblem {
                constraints: build_constraints(params, &mesh, &assembler)?,
                external: linalg::Vector::zeros(3 * mesh.n_nodes()),
                assembler,
            },
            mesh,
        };
        problem.set_loads(params)?;
        Ok(problem)
    }

    /// Rebuilds materials, constraints and loads from `params` on this problem's mesh and
    /// element loop, whose geometry checks and COO plans are kept. The caller guarantees that
    /// `params.mesh` and `params.quadrature_points` are those the problem was built with.
    pub fn reconfigure(&mut self, params: &ProblemParams) -> Result<()> {
        let materials = cell_materials(params, &self.mesh)?;
        self.discrete.assembler.set_materials(materials)?;
        self.discrete.constraints =
            build_constraints(params, &self.mesh, &self.discrete.assembler)?;
        self.set_loads(params)
    }

    /// The dead loads of `params` (checks first that some set is constrained).
    fn set_loads(&mut self, params: &ProblemParams) -> Result<()> {
        if params.dirichlet.is_empty() && params.twist.is_empty() {
            bail!("boundary: no dirichlet or twist condition, so rigid-body motions are free and the tangent is singular; fix at least one set (boundary.dirichlet)");
        }
        let points = quadrature_points(params, &self.mesh)?;
        let mesh = &self.mesh;
        let mut external = body_force_load(
            &mut self.discrete.assembler,
            Load::Constant(params.body_force),
        )?;
        for t in &params.traction {
            let faces = mesh.face_sets.get(&t.set).with_context(|| {
                format!(
                    "traction on set '{}': no face set of that name (face sets: {})",
                    t.set,
                    names(mesh.face_sets.keys())
                )
            })?;
            add_traction_load(mesh, faces, t.value, points, &mut external)?;
        }
        self.discrete.external = external;
        Ok(())
    }

    /// Unknowns (three per node, constrained ones included).
    pub fn n_dofs(&self) -> usize {
        self.discrete.n_dofs()
    }
}

/// Gauss points per direction: the configured number, at least `order + 1`.
fn quadrature_points(params: &ProblemParams, mesh: &HexMesh) -> Result<usize> {
    let points = params.quadrature_points.unwrap_or(mesh.order() + 1);
    if points < mesh.order() + 1 {
        bail!(
            "quadrature.points: {points} Gauss points per direction under-integrate Q{} cells (hourglass modes make the tangent singular); use at least {}",
            mesh.order(),
            mesh.order() + 1
        );
    }
    Ok(points)
}

/// The rigid-body modes at `coords` as the AMG's near-null space (six vectors, node-major).
pub fn near_null_space(coords: &[[f64; 3]]) -> Result<amg::NearNullSpace> {
    Ok(amg::NearNullSpace::from_row_major(
        3 * coords.len(),
        RIGID_BODY_MODES_3D,
        rigid_body_modes(coords),
    )?)
}

/// The mesh of a run.
pub fn build_mesh(source: &MeshSource) -> Result<HexMesh> {
    match source {
        MeshSource::Box(spec) => Ok(generate_box(spec)?),
        MeshSource::Gmsh(file) => {
            read_gmsh(file).with_context(|| format!("reading Gmsh mesh {}", file.display()))
        }
    }
}

/// Material of every cell: entries apply in order, later ones override earlier ones.
fn cell_materials(params: &ProblemParams, mesh: &HexMesh) -> Result<CellMaterials> {
    let mut table = Vec::with_capacity(params.materials.len());
    let mut of_cell: Vec<Option<u16>> = vec![None; mesh.n_cells()];
    for (index, entry) in params.materials.iter().enumerate() {
        entry
            .material
            .validate()
            .with_context(|| format!("materials[{index}]"))?;
        table.push(entry.material);
        let cells = match &entry.cells {
            CellSelection::All => (0..mesh.n_cells()).collect(),
            CellSelection::Set(name) => mesh
                .cell_set(name)
                .with_context(|| format!("materials[{index}].cells"))?,
        };
        let index = u16::try_from(index).map_err(|_| {
            anyhow::anyhow!("materials: at most {} entries are supported", u16::MAX)
        })?;
        for c in cells {
            of_cell[c] = Some(index);
        }
    }
    if let Some(c) = of_cell.iter().position(Option::is_none) {
        bail!("cell {c} has no material: add an entry with `cells: all` or cover every cell set");
    }
    Ok(CellMaterials::new(
        table,
        of_cell.into_iter().flatten().collect(),
    )?)
}

fn build_constraints(
    params: &ProblemParams,
    mesh: &HexMesh,
    assembler: &ElasticityAssembler,
) -> Result<Constraints> {
    let mut prescribed = Vec::new();
    for d in &params.dirichlet {
        let nodes = mesh
            .set_nodes(&d.set)
            .with_context(|| format!("boundary.dirichlet set '{}'", d.set))?;
        prescribed.push(Prescribed::Components {
            set: d.set.clone(),
            nodes,
            values: d.values,
        });
    }
    for t in &params.twist {
        let nodes = mesh
            .set_nodes(&t.set)
            .with_context(|| format!("boundary.twist set '{}'", t.set))?;
        prescribed.push(Prescribed::Twist {
            set: t.set.clone(),
            nodes,
            axis: t.axis,
            center: t.center,
            angle: t.angle,
            axial: t.axial,
        });
    }
    Ok(Constraints::new(
        mesh.n_nodes(),
        prescribed,
        &assembler.orphan_nodes(),
    )?)
}

fn names<'a>(keys: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<&str> = keys.map(String::as_str).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}
