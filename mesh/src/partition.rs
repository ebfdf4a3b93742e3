//! A rank's part of a mesh ([`MeshPart`]): its owned nodes (a contiguous range of the global
//! numbering), the cells it needs (every cell with an owned node: its owned cells and one layer
//! of ghost cells) and their remaining nodes (ghosts).
//!
//! Box meshes are generated distributed ([`generate_box_part`]): a rank builds only its part,
//! in memory proportional to it, and the global numbering is the serial one whatever the rank
//! count. Other meshes are split by a cell partition ([`partition_mesh`]; METIS on the element
//! graph in [`metis_cell_parts`]).
//!
//! Numbering of a part: local nodes are the owned nodes (ascending global id, so local `i` is
//! global `node_offsets[rank] + i`), then the ghosts (ascending global id); local cells ascend
//! by their serial id, so an element loop over them meets the contributions to an owned row in
//! the serial order (the owned rows of an assembled matrix are bit-identical to the serial
//! ones). Sets hold local indices, restricted to the part.

use std::collections::BTreeMap;

use crate::cell::{CellFace, Face};
use crate::error::MeshError;
use crate::generate::BoxSpec;
use crate::hex_mesh::HexMesh;

/// One rank's part of a mesh distributed over `n_ranks` ranks (see the module doc).
///
/// Invariants: `mesh` holds the local nodes and cells; `node_globals` ascends on the owned
/// nodes (`node_offsets[rank]..node_offsets[rank + 1]`) and on the ghosts, none of which is
/// owned here; `node_offsets` has `n_ranks + 1` entries, the same on every rank; every cell
/// with an owned node is local; `cell_owned` marks the local cells this rank owns, and every
/// cell of the mesh is owned by exactly one rank.
#[derive(Debug, Clone, PartialEq)]
pub struct MeshPart {
    /// The local mesh (local numbering, local sets).
    pub mesh: HexMesh,
    pub rank: usize,
    pub n_ranks: usize,
    /// Rank `r` owns global nodes `node_offsets[r]..node_offsets[r + 1]`.
    pub node_offsets: Vec<u64>,
    /// Global (solver) id of each local node.
    pub node_globals: Vec<u64>,
    /// Id of each local node in the serial mesh (the numbering of output files, the same for
    /// any rank count); equal to `node_globals` for generated boxes.
    pub node_serial_ids: Vec<u64>,
    /// Serial id of each local cell, ascending.
    pub cell_serial_ids: Vec<u64>,
    /// Whether this rank owns each local cell (computes its outputs and cell sums).
    pub cell_owned: Vec<bool>,
    /// Cells of the whole mesh.
    pub n_global_cells: u64,
}

impl MeshPart {
    /// Nodes this rank owns (the first local nodes).
    pub fn n_owned_nodes(&self) -> usize {
        (self.node_offsets[self.rank + 1] - self.node_offsets[self.rank]) as usize
    }

    /// Ghost nodes (after the owned ones).
    pub fn n_ghost_nodes(&self) -> usize {
        self.mesh.n_nodes() - self.n_owned_nodes()
    }

    /// Nodes of the whole mesh.
    pub fn n_global_nodes(&self) -> u64 {
        *self.node_offsets.last().expect("n_ranks + 1 entries")
    }

    /// The part of a one-rank run: the whole mesh, every node and cell owned.
    pub fn whole(mesh: HexMesh) -> Self {
        let (n, c) = (mesh.n_nodes() as u64, mesh.n_cells() as u64);
        Self {
            node_offsets: vec![0, n],
            node_globals: (0..n).collect(),
            node_serial_ids: (0..n).collect(),
            cell_serial_ids: (0..c).collect(),
            cell_owned: vec![true; c as usize],
            n_global_cells: c,
            rank: 0,
            n_ranks: 1,
            mesh,
        }
    }
}

fn check_rank(rank: usize, n_ranks: usize) -> Result<(), MeshError> {
    if n_ranks == 0 || rank >= n_ranks {
        return Err(MeshError::InvalidSpec(format!(
            "rank {rank} of {n_ranks} ranks does not exist"
        )));
    }
    Ok(())
}

/// Rank `rank`'s part of the box [`crate::generate_box`] builds, built alone: nodes keep the
/// serial (lexicographic) numbering, rank `r` owns nodes `N r / n_ranks .. N (r + 1) / n_ranks`
/// (`N` nodes), a cell is owned by the owner of its first node. Coordinates are computed as the
/// serial generator computes them (bit-identical). Work and memory are proportional to the
/// part (plus its layers of ghost cells).
pub fn generate_box_part(
    spec: &BoxSpec,
    rank: usize,
    n_ranks: usize,
) -> Result<MeshPart, MeshError> {
    spec.check()?;
    check_rank(rank, n_ranks)?;
    let kind = spec.kind;
    let p = kind.order();
    let [cx, cy, cz] = spec.cells;
    let [nx, ny, nz] = spec.cells.map(|c| p * c + 1);
    let n_nodes = (nx * ny * nz) as u64;
    let node_offsets: Vec<u64> = (0..=n_ranks as u64)
        .map(|r| (n_nodes as u128 * r as u128 / n_ranks as u128) as u64)
        .collect();
    let owned = node_offsets[rank]..node_offsets[rank + 1];
    let owner = |g: u64| node_offsets.partition_point(|&o| o <= g) - 1;

    let npe = p + 1;
    let local_offsets: Vec<usize> = (0..npe)
        .flat_map(|c| (0..npe).flat_map(move |b| (0..npe).map(move |a| a + nx * (b + ny * c))))
        .collect();
    // Cell layers (in z) whose nodes can meet the owned node layers.
    let mut cell_serial_ids = Vec::new();
    let mut cell_owned = Vec::new();
    let mut cell_nodes_global: Vec<u64> = Vec::new();
    if !owned.is_empty() {
        let layer = (nx * ny) as u64;
        let (k_lo, k_hi) = (
            (owned.start / layer) as usize,
            ((owned.end - 1) / layer) as usize,
        );
        let kc_lo = k_lo.saturating_sub(p).div_ceil(p);
        let kc_hi = (k_hi / p).min(cz - 1);
        for k in kc_lo..=kc_hi {
            for j in 0..cy {
                for i in 0..cx {
                    let base = p * i + nx * (p * j + ny * p * k);
                    let nodes = local_offsets.iter().map(|&o| (base + o) as u64);
                    if nodes.clone().any(|g| owned.contains(&g)) {
                        cell_serial_ids.push((i + cx * (j + cy * k)) as u64);
                        cell_owned.push(owner(base as u64) == rank);
                        cell_nodes_global.extend(nodes);
                    }
                }
            }
        }
    }

    let mut ghosts: Vec<u64> = cell_nodes_global
        .iter()
        .copied()
        .filter(|g| !owned.contains(g))
        .collect();
    ghosts.sort_unstable();
    ghosts.dedup();
    let node_globals: Vec<u64> = owned.clone().chain(ghosts.iter().copied()).collect();
    let local_of = |g: u64| -> usize {
        if owned.contains(&g) {
            (g - owned.start) as usize
        } else {
            (owned.end - owned.start) as usize + ghosts.binary_search(&g).expect("ghost collected")
        }
    };
    let logical = |i: usize, d: usize| i as f64 / (p * spec.cells[d]) as f64;
    let grid = |g: u64| {
        let g = g as usize;
        [g % nx, (g / nx) % ny, g / (nx * ny)]
    };
    let coords = node_globals
        .iter()
        .map(|&g| {
            let [i, j, k] = grid(g);
            spec.map([logical(i, 0), logical(j, 1), logical(k, 2)])
        })
        .collect();
    let cells = cell_nodes_global.iter().map(|&g| local_of(g)).collect();
    let mut mesh = HexMesh::new(kind, coords, cells);

    let node_counts = [nx, ny, nz];
    let cell_grid = |c: u64| {
        let c = c as usize;
        [c % cx, (c / cx) % cy, c / (cx * cy)]
    };
    for face in Face::ALL {
        let axis = face.axis();
        let node_layer = if face.is_max() {
            node_counts[axis] - 1
        } else {
            0
        };
        let cell_layer = if face.is_max() {
            spec.cells[axis] - 1
        } else {
            0
        };
        // Local node order is ascending within owned and within ghosts: sort the union.
        let mut nodes: Vec<usize> = (0..node_globals.len())
            .filter(|&l| grid(node_globals[l])[axis] == node_layer)
            .collect();
        nodes.sort_unstable();
        let faces = (0..cell_serial_ids.len())
            .filter(|&l| cell_grid(cell_serial_ids[l])[axis] == cell_layer)
            .map(|cell| CellFace { cell, face })
            .collect();
        mesh.node_sets.insert(face.name().to_string(), nodes);
        mesh.face_sets.insert(face.name().to_string(), faces);
    }
    mesh.cell_sets = BTreeMap::from([("all".to_string(), (0..cell_serial_ids.len()).collect())]);
    Ok(MeshPart {
        mesh,
        rank,
        n_ranks,
        node_offsets,
        node_serial_ids: node_globals.clone(),
        node_globals,
        cell_serial_ids,
        cell_owned,
        n_global_cells: (cx * cy * cz) as u64,
    })
}

/// Rank `rank`'s part of `mesh` (held whole by every rank, e.g. read from a file) under the
/// cell partition `cell_part` (a rank per cell, the same on every rank). A node is owned by
/// the lowest rank among its cells' (a node of no cell by rank 0); the global numbering orders
/// nodes by owner, then by serial id. Cells of part `rank` and cells with an owned node are
/// local.
pub fn partition_mesh(
    mesh: &HexMesh,
    cell_part: &[u32],
    rank: usize,
    n_ranks: usize,
) -> Result<MeshPart, MeshError> {
    check_rank(rank, n_ranks)?;
    let n_cells = mesh.n_cells();
    if cell_part.len() != n_cells {
        return Err(MeshError::Invalid(format!(
            "cell partition of {} entries for {n_cells} cells",
            cell_part.len()
        )));
    }
    if let Some(c) = cell_part.iter().position(|&r| r as usize >= n_ranks) {
        return Err(MeshError::Invalid(format!(
            "cell partition puts {} on rank {} of {n_ranks}",
            mesh.describe_cell(c),
            cell_part[c]
        )));
    }
    let n_nodes = mesh.n_nodes();
    let mut node_owner = vec![u32::MAX; n_nodes];
    for c in 0..n_cells {
        for &n in mesh.cell_nodes(c) {
            node_owner[n] = node_owner[n].min(cell_part[c]);
        }
    }
    for o in &mut node_owner {
        if *o == u32::MAX {
            *o = 0;
        }
    }
    let mut counts = vec![0u64; n_ranks];
    for &o in &node_owner {
        counts[o as usize] += 1;
    }
    let mut node_offsets = vec![0u64; n_ranks + 1];
    for r in 0..n_ranks {
        node_offsets[r + 1] = node_offsets[r] + counts[r];
    }
    let mut next = node_offsets[..n_ranks].to_vec();
    let global_of: Vec<u64> = node_owner
        .iter()
        .map(|&o| {
            let g = next[o as usize];
            next[o as usize] += 1;
            g
        })
        .collect();
    let rank32 = rank as u32;
    let local_cells: Vec<usize> = (0..n_cells)
        .filter(|&c| {
            cell_part[c] == rank32 || mesh.cell_nodes(c).iter().any(|&n| node_owner[n] == rank32)
        })
        .collect();
    let owned_serial: Vec<usize> = (0..n_nodes).filter(|&n| node_owner[n] == rank32).collect();
    let mut ghost_serial: Vec<usize> = local_cells
        .iter()
        .flat_map(|&c| mesh.cell_nodes(c).iter().copied())
        .filter(|&n| node_owner[n] != rank32)
        .collect();
    ghost_serial.sort_unstable_by_key(|&n| global_of[n]);
    ghost_serial.dedup();
    let serial_of_local: Vec<usize> = owned_serial.iter().chain(&ghost_serial).copied().collect();
    let mut local_of = vec![usize::MAX; n_nodes];
    for (l, &n) in serial_of_local.iter().enumerate() {
        local_of[n] = l;
    }
    let mut local_of_cell = vec![usize::MAX; n_cells];
    for (l, &c) in local_cells.iter().enumerate() {
        local_of_cell[c] = l;
    }
    let coords = serial_of_local.iter().map(|&n| mesh.coords[n]).collect();
    let cells = local_cells
        .iter()
        .flat_map(|&c| mesh.cell_nodes(c).iter().map(|&n| local_of[n]))
        .collect();
    let mut part = HexMesh::new(mesh.kind, coords, cells);
    part.cell_tags = mesh
        .cell_tags
        .as_ref()
        .map(|tags| local_cells.iter().map(|&c| tags[c]).collect());
    for (name, nodes) in &mesh.node_sets {
        let mut local: Vec<usize> = nodes
            .iter()
            .map(|&n| local_of[n])
            .filter(|&l| l != usize::MAX)
            .collect();
        local.sort_unstable();
        part.node_sets.insert(name.clone(), local);
    }
    for (name, faces) in &mesh.face_sets {
        let mut local: Vec<CellFace> = faces
            .iter()
            .filter(|cf| local_of_cell[cf.cell] != usize::MAX)
            .map(|cf| CellFace {
                cell: local_of_cell[cf.cell],
                face: cf.face,
            })
            .collect();
        local.sort_unstable();
        part.face_sets.insert(name.clone(), local);
    }
    for (name, cells) in &mesh.cell_sets {
        let local: Vec<usize> = cells
            .iter()
            .map(|&c| local_of_cell[c])
            .filter(|&l| l != usize::MAX)
            .collect();
        part.cell_sets.insert(name.clone(), local);
    }
    Ok(MeshPart {
        mesh: part,
        rank,
        n_ranks,
        node_offsets,
        node_globals: serial_of_local.iter().map(|&n| global_of[n]).collect(),
        node_serial_ids: serial_of_local.iter().map(|&n| n as u64).collect(),
        cell_serial_ids: local_cells.iter().map(|&c| c as u64).collect(),
        cell_owned: local_cells
            .iter()
            .map(|&c| cell_part[c] == rank32)
            .collect(),
        n_global_cells: n_cells as u64,
    })
}

/// A partition of `mesh`'s cells into `n_parts` parts by METIS (k-way, on the element graph:
/// cells are adjacent when they share a face, i.e. four corner nodes), balanced in cells and
/// with a small cut. Deterministic (fixed seed): every rank computes the same partition.
pub fn metis_cell_parts(mesh: &HexMesh, n_parts: usize) -> Result<Vec<u32>, MeshError> {
    let n_cells = mesh.n_cells();
    if n_parts <= 1 || n_cells <= 1 {
        return Ok(vec![0; n_cells]);
    }
    let too_big = |what: &str| MeshError::Invalid(format!("{what} exceed METIS's index range"));
    let idx = |v: usize| metis::Idx::try_from(v).map_err(|_| too_big("mesh sizes"));
    let p = mesh.order();
    let corners: Vec<usize> = (0..8)
        .map(|c| {
            let (i, j, k) = (c & 1, (c >> 1) & 1, c >> 2);
            p * i + (p + 1) * (p * j + (p + 1) * p * k)
        })
        .collect();
    let mut eptr = Vec::with_capacity(n_cells + 1);
    let mut eind = Vec::with_capacity(8 * n_cells);
    eptr.push(0);
    for c in 0..n_cells {
        let nodes = mesh.cell_nodes(c);
        for &l in &corners {
            eind.push(idx(nodes[l])?);
        }
        eptr.push(idx(eind.len())?);
    }
    let metis_error = |e: metis::Error| MeshError::Invalid(format!("METIS failed: {e}"));
    let dual = metis::mesh_to_dual(&eptr, &eind, 4).map_err(metis_error)?;
    let mut part = vec![0 as metis::Idx; n_cells];
    let (xadj, adjncy) = (dual.xadj(), dual.adjncy());
    metis::Graph::new(1, idx(n_parts)?, xadj, adjncy)
        .map_err(|e| MeshError::Invalid(format!("METIS rejected the element graph: {e}")))?
        .set_option(metis::option::Seed(1))
        .part_kway(&mut part)
        .map_err(metis_error)?;
    Ok(part.into_iter().map(|r| r as u32).collect())
}
