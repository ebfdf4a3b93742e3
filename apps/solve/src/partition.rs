//! The mesh part of one rank of a distributed run: box meshes generated distributed (the rank
//! builds only its part), Gmsh meshes read whole and split by METIS on the element graph (every
//! rank computes the same partition and keeps its part).

use mesh::select::{box_side_names, faces_of_sets};
use mesh::{generate_box_part, metis_cell_parts, partition_mesh, MeshPart};

use crate::error::{Error, Result};
use crate::geometric_sets::add_geometric_sets;

use crate::params::{MeshSource, ProblemParams};

/// Rank `rank`'s part of the mesh of `source` over `n_ranks` ranks.
pub fn build_mesh_part(source: &MeshSource, rank: usize, n_ranks: usize) -> Result<MeshPart> {
    if let MeshSource::Box(spec) = source {
        check_box_ranks(spec, n_ranks)?;
    }
    let part = build_mesh_part_unchecked(source, rank, n_ranks)?;
    check_part_owns_cells(&part)?;
    Ok(part)
}

/// Refuses a rank count that a box cannot be split into: each rank owns a block of whole node
/// layers, so `n_ranks` must factor as `px py pz` with at most as many blocks per axis as the
/// axis has node layers. The error names the box and the rank counts it supports.
fn check_box_ranks(spec: &mesh::BoxSpec, n_ranks: usize) -> Result<()> {
    let counts = spec.node_counts();
    let cells: usize = spec.cells.iter().product();
    let fits = |n: usize| {
        (1..=n).filter(|p| n.is_multiple_of(*p)).any(|p0| {
            (1..=n / p0)
                .filter(|p| (n / p0).is_multiple_of(*p))
                .any(|p1| p0 <= counts[0] && p1 <= counts[1] && n / (p0 * p1) <= counts[2])
        })
    };
    if n_ranks <= cells && fits(n_ranks) {
        return Ok(());
    }
    let most = (1..=n_ranks.min(cells))
        .rev()
        .find(|&n| fits(n))
        .unwrap_or(1);
    Err(Error::BoxTooSmallForRanks {
        cells,
        nodes: counts,
        ranks: n_ranks,
        most,
    })
}

/// Refuses a part without cells of its own (a mesh with fewer cells than ranks).
fn check_part_owns_cells(part: &MeshPart) -> Result<()> {
    if part.cell_owned.iter().any(|&o| o) {
        return Ok(());
    }
    Err(Error::PartWithoutCells {
        cells: part.n_global_cells,
        ranks: part.n_ranks,
        rank: part.rank,
        most: part.n_global_cells.min(part.n_ranks as u64 - 1).max(1),
    })
}

fn build_mesh_part_unchecked(source: &MeshSource, rank: usize, n_ranks: usize) -> Result<MeshPart> {
    match source {
        MeshSource::Box(spec) => Ok(generate_box_part(spec, rank, n_ranks)?),
        MeshSource::Gmsh { file, scale } => {
            let mesh = crate::problem::read_mesh_file(file, *scale)?;
            let parts = metis_cell_parts(&mesh, n_ranks).map_err(|error| Error::Partition {
                file: file.clone(),
                error,
            })?;
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
    if let MeshSource::Box(spec) = &params.mesh {
        check_box_ranks(spec, n_ranks)?;
    }
    if params.sets.is_empty() {
        return build_mesh_part(&params.mesh, rank, n_ranks);
    }
    let part = build_problem_mesh_part_with_sets(params, rank, n_ranks)?;
    check_part_owns_cells(&part)?;
    Ok(part)
}

fn build_problem_mesh_part_with_sets(
    params: &ProblemParams,
    rank: usize,
    n_ranks: usize,
) -> Result<MeshPart> {
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
            let parts = metis_cell_parts(&mesh, n_ranks).map_err(|error| Error::Partition {
                file: file.clone(),
                error,
            })?;
            Ok(partition_mesh(&mesh, &parts, rank, n_ranks)?)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mesh::{BoxSpec, CellKind};

    /// More ranks than a box can be split into are refused with the most it supports, on every
    /// rank (not as an empty part failing later).
    #[test]
    fn too_many_ranks_for_a_box_are_refused_with_the_most_it_takes() {
        let cube = MeshSource::Box(BoxSpec::new([1, 1, 1], [0.0; 3], [1.0; 3], CellKind::Hex8));
        for rank in 0..3 {
            let e = build_mesh_part(&cube, rank, 3).unwrap_err().to_string();
            assert!(
                e.contains("the box has 1 cells (2 x 2 x 2 nodes), too few for 3 ranks")
                    && e.contains("at most 1 ranks"),
                "{e}"
            );
        }
        let bar = MeshSource::Box(BoxSpec::new(
            [2, 1, 1],
            [0.0; 3],
            [2.0, 1.0, 1.0],
            CellKind::Hex8,
        ));
        let e = build_mesh_part(&bar, 0, 5).unwrap_err().to_string();
        assert!(e.contains("at most 2 ranks"), "{e}");
        assert!(build_mesh_part(&bar, 1, 2).is_ok());
    }
}
