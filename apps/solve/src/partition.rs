//! The mesh part of one rank of a distributed run: box meshes generated distributed (the rank
//! builds only its part), Gmsh meshes read whole and split by METIS on the element graph (every
//! rank computes the same partition and keeps its part).

use anyhow::{bail, Context, Result};
use assembly::{AssemblyError, CellMaterials, ElasticityAssembler};
use mesh::select::{box_side_names, faces_of_sets};
use mesh::{generate_box_part, metis_cell_parts, partition_mesh, MeshPart};

use crate::geometric_sets::add_geometric_sets;

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

/// Rank `rank`'s part of the mesh of `params` over `n_ranks` ranks, with the input's sets by
/// geometry: on a file mesh added before partitioning (as the serial run adds them), on a box
/// part among the box's boundary faces (its six side sets), to the whole box's tolerance.
pub fn build_problem_mesh_part(
    params: &ProblemParams,
    rank: usize,
    n_ranks: usize,
) -> Result<MeshPart> {
    if params.sets.is_empty() {
        return build_mesh_part(&params.mesh, rank, n_ranks);
    }
    match &params.mesh {
        MeshSource::Box(spec) => {
            let mut part = generate_box_part(spec, rank, n_ranks)?;
            let corners = spec.corners.unwrap_or_else(|| {
                std::array::from_fn(|c| {
                    std::array::from_fn(|d| {
                        if c >> d & 1 == 0 {
                            spec.lower[d]
                        } else {
                            spec.upper[d]
                        }
                    })
                })
            });
            let diagonal = (0..3)
                .map(|d| {
                    let lo = corners.iter().map(|x| x[d]).fold(f64::INFINITY, f64::min);
                    let hi = corners
                        .iter()
                        .map(|x| x[d])
                        .fold(f64::NEG_INFINITY, f64::max);
                    (hi - lo).powi(2)
                })
                .sum::<f64>()
                .sqrt();
            let boundary = faces_of_sets(&part.mesh, &box_side_names());
            add_geometric_sets(
                &mut part.mesh,
                &params.sets,
                Some(&boundary),
                false,
                Some(diagonal),
            )?;
            Ok(part)
        }
        MeshSource::Gmsh { file, scale } => {
            let mut mesh = crate::problem::read_mesh_file(file, *scale)?;
            add_geometric_sets(&mut mesh, &params.sets, None, true, None)?;
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
                Some(tags) => format!("{} element {} (cell {serial})", tags.format, tags[cell]),
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
