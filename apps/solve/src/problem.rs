//! A configured problem: mesh, materials per cell, constraints and dead loads, built from a
//! validated [`Config`]. Knows nothing of the nonlinear solution strategy.

use anyhow::{bail, Context, Result};
use assembly::{
    add_traction_load, body_force_load, rigid_body_modes, CellMaterials, Constraints,
    ElasticityAssembler, Prescribed, RIGID_BODY_MODES_3D,
};
use fem::{Load, Material};
use linalg::{Bsr, Vector};
use mesh::{generate_box, read_gmsh, BoxSpec, CellKind, HexMesh};

use config::{CellSelection, Config, MeshSource, Moduli};

/// The discrete problem of one run.
pub struct Problem {
    pub mesh: HexMesh,
    pub assembler: ElasticityAssembler,
    pub constraints: Constraints,
    /// Dead loads (body force and tractions) at load factor one.
    pub external: Vector,
}

impl Problem {
    /// Builds mesh, materials, constraints and loads of `config`.
    pub fn from_config(config: &Config) -> Result<Self> {
        let mesh = build_mesh(&config.mesh)?;
        let materials = cell_materials(config, &mesh)?;
        let points = config.quadrature.points_for(mesh.order());
        if points < mesh.order() + 1 {
            bail!(
                "quadrature.points: {points} Gauss points per direction under-integrate Q{} cells (hourglass modes make the tangent singular); use at least {}",
                mesh.order(),
                mesh.order() + 1
            );
        }
        let mut assembler = ElasticityAssembler::new(&mesh, materials, points)
            .context("setting up the element loop")?;
        let constraints = build_constraints(config, &mesh, &assembler)?;
        if config.boundary.dirichlet.is_empty() && config.boundary.twist.is_empty() {
            bail!("boundary: no dirichlet or twist condition, so rigid-body motions are free and the tangent is singular; fix at least one set (boundary.dirichlet)");
        }
        let mut external = body_force_load(&mut assembler, Load::Constant(config.body_force))?;
        for t in &config.boundary.traction {
            let faces = mesh.face_sets.get(&t.set).with_context(|| {
                format!(
                    "traction on set '{}': no face set of that name (face sets: {})",
                    t.set,
                    names(mesh.face_sets.keys())
                )
            })?;
            add_traction_load(&mesh, faces, t.value, points, &mut external)?;
        }
        Ok(Self {
            mesh,
            assembler,
            constraints,
            external,
        })
    }

    /// Unknowns (three per node, constrained ones included).
    pub fn n_dofs(&self) -> usize {
        3 * self.mesh.n_nodes()
    }

    /// `r = r_int(u) - load_factor * f_ext`.
    pub fn residual(
        &mut self,
        u: &Vector,
        load_factor: f64,
        r: &mut Vector,
    ) -> Result<(), assembly::AssemblyError> {
        self.assembler.residual(u, Load::None, r)?;
        linalg::ops::axpy(-load_factor, &self.external, r)?;
        Ok(())
    }

    /// Residual as [`Self::residual`] and the (unconstrained) tangent.
    pub fn residual_tangent(
        &mut self,
        u: &Vector,
        load_factor: f64,
        r: &mut Vector,
        k: &mut Bsr,
    ) -> Result<(), assembly::AssemblyError> {
        self.assembler.residual_tangent(u, Load::None, r, k)?;
        linalg::ops::axpy(-load_factor, &self.external, r)?;
        Ok(())
    }
}

/// The rigid-body modes at `coords` as the AMG's near-null space (six vectors, node-major).
pub fn near_null_space(coords: &[[f64; 3]]) -> Result<amg::NearNullSpace> {
    Ok(amg::NearNullSpace::from_row_major(
        3 * coords.len(),
        RIGID_BODY_MODES_3D,
        rigid_body_modes(coords),
    )?)
}

/// The mesh of a configuration (the loader has made Gmsh paths relative to the YAML file's folder).
pub fn build_mesh(source: &MeshSource) -> Result<HexMesh> {
    match source {
        MeshSource::Box(b) => {
            let kind = match b.order {
                1 => CellKind::Hex8,
                2 => CellKind::Hex27,
                other => bail!("mesh.box.order: {other} is not supported (valid: 1, 2)"),
            };
            Ok(generate_box(&BoxSpec {
                cells: b.cells,
                lower: b.lower.unwrap_or([0.0; 3]),
                upper: b.upper.unwrap_or([1.0; 3]),
                kind,
                corners: b.corners,
            })?)
        }
        MeshSource::Gmsh(g) => {
            read_gmsh(&g.file).with_context(|| format!("reading Gmsh mesh {}", g.file.display()))
        }
    }
}

/// Material of every cell: entries apply in order, later ones override earlier ones.
fn cell_materials(config: &Config, mesh: &HexMesh) -> Result<CellMaterials> {
    let mut table = Vec::with_capacity(config.materials.len());
    let mut of_cell: Vec<Option<u16>> = vec![None; mesh.n_cells()];
    for (index, entry) in config.materials.iter().enumerate() {
        let moduli = entry
            .moduli()
            .map_err(|e| anyhow::anyhow!("materials[{index}]: {e:?}"))?;
        table.push(to_fem_material(moduli).with_context(|| format!("materials[{index}]"))?);
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

/// Maps validated moduli to the element layer's material (each model takes its own moduli).
pub fn to_fem_material(moduli: Moduli) -> Result<Material> {
    let material = match moduli {
        Moduli::Linear { lambda, mu } => Material::Linear { lambda, mu },
        Moduli::SaintVenantKirchhoff { lambda, mu } => {
            Material::SaintVenantKirchhoff { lambda, mu }
        }
        Moduli::NeoHookean { lambda, mu } => Material::NeoHookean { lambda, mu },
        Moduli::DecoupledNeoHookean { kappa, mu } => Material::DecoupledNeoHookean { kappa, mu },
        Moduli::MooneyRivlin { lambda, mu1, mu2 } => Material::MooneyRivlin { lambda, mu1, mu2 },
    };
    material.validate()?;
    Ok(material)
}

fn build_constraints(
    config: &Config,
    mesh: &HexMesh,
    assembler: &ElasticityAssembler,
) -> Result<Constraints> {
    let mut prescribed = Vec::new();
    for d in &config.boundary.dirichlet {
        let nodes = mesh
            .set_nodes(&d.set)
            .with_context(|| format!("boundary.dirichlet set '{}'", d.set))?;
        prescribed.push(Prescribed::Components {
            set: d.set.clone(),
            nodes,
            values: d.components(),
        });
    }
    for t in &config.boundary.twist {
        let nodes = mesh
            .set_nodes(&t.set)
            .with_context(|| format!("boundary.twist set '{}'", t.set))?;
        prescribed.push(Prescribed::Twist {
            set: t.set.clone(),
            nodes,
            axis: t.axis,
            center: t.center,
            angle: t.angle_deg.to_radians(),
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
