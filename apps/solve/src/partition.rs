//! The mesh part of one rank of a distributed run: box meshes generated distributed (the rank
//! builds only its part), Gmsh meshes read whole and split by METIS on the element graph (every
//! rank computes the same partition and keeps its part).

use anyhow::{bail, Context, Result};
use assembly::{AssemblyError, CellMaterials, ElasticityAssembler};
use mesh::{generate_box_part, metis_cell_parts, partition_mesh, MeshPart};

use crate::params::{MeshSource, ProblemParams};

/// Rank `rank`'s part of the mesh of `source` over `n_ranks` ranks.
pub fn build_mesh_part(source: &MeshSource, rank: usize, n_ranks: usize) -> Result<MeshPart> {
    match source {
        MeshSource::Box(spec) => Ok(generate_box_part(spec, rank, n_ranks)?),
        MeshSource::Gmsh { file, scale } => {
            let mesh = crate::problem::read_mesh_file(file, *scale)?;
            let parts = metis_cell_parts(&mesh, n_ranks)
                .with_context(|| format!("partitioning {} with METIS", file.display()))?;
            Ok(partition_mesh(&mesh, &parts, rank, n_ranks)?)
        }
    }
}

/// Checks the reference geometry (det J > 0 at every quadrature point) of every cell of the
/// part (owned and ghost cells), as the serial run's element loop does; an error names the
/// cell by its serial index (and its Gmsh tag), as the serial run would.
pub fn check_part_geometry(part: &MeshPart, params: &ProblemParams) -> Result<()> {
    let mesh = &part.mesh;
    let points = params.quadrature_points.unwrap_or(mesh.order() + 1);
    let Some(first) = params.materials.first() else {
        bail!("materials: no entry");
    };
    // The geometry check does not depend on the material.
    let materials = CellMaterials::uniform(first.material, mesh.n_cells());
    match ElasticityAssembler::new(mesh, materials, points) {
        Ok(_) => Ok(()),
        Err(AssemblyError::InvalidElement { cell, error, .. }) => {
            let serial = part.cell_serial_ids[cell] as usize;
            let name = match &mesh.cell_tags {
                Some(tags) => format!("Gmsh element {} (cell {serial})", tags[cell]),
                None => format!("cell {serial}"),
            };
            Err(AssemblyError::InvalidElement {
                cell: serial,
                name,
                error,
            })
            .context("setting up the element loop")
        }
        Err(e) => Err(e).context("setting up the element loop"),
    }
}
