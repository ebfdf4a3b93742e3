//! A rank's part of a mesh ([`MeshPart`]): its owned nodes (a contiguous range of the global
//! numbering), the cells it needs (every cell with an owned node: its owned cells and one layer
//! of ghost cells) and their remaining nodes (ghosts).
//!
//! Box meshes are generated distributed ([`generate_box_part`]): a rank builds only its part
//! (a box of the node grid, [`BoxRankGrid`]), in memory proportional to it, with the serial ids
//! whatever the rank count. Other meshes are split by a cell partition ([`partition_mesh`];
//! METIS on the element graph in [`metis_cell_parts`]).
//!
//! Numbering of a part: local nodes are the owned nodes (ascending global id, so local `i` is
//! global `node_offsets[rank] + i`), then the ghosts (ascending global id); local cells ascend
//! by their serial id, so an element loop over them meets the contributions to an owned row in
//! the serial order (the owned rows of an assembled matrix are bit-identical to the serial
//! ones). Sets hold local indices, restricted to the part.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::ops::Range;

use rayon::prelude::*;

use crate::cell::{CellFace, Face};
use crate::error::MeshError;
use crate::generate::BoxSpec;
use crate::hex_mesh::{ElementTags, HexMesh};

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
    /// Id of each local node in the serial mesh (the numbering of output files and of the
    /// AMG's hash priorities: the same for any rank count).
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

/// How a box's node grid is cut among ranks: a grid of `ranks[0] x ranks[1] x ranks[2]` boxes,
/// axis `d` cut into `ranks[d]` runs of consecutive node layers, run `q` of `L` layers being
/// layers `L q / ranks[d] .. L (q + 1) / ranks[d]`. Rank `r` owns the box at grid position
/// `(q0, q1, q2)` with `r = q0 + ranks[0] (q1 + ranks[1] q2)` (x fastest).
///
/// The grid is the factorisation of the rank count that cuts the fewest nodes: it minimises the
/// node layers the cuts pass through, `sum_d (ranks[d] - 1) * (nodes across axis d)`, without
/// cutting an axis into more runs than it has layers where that is possible; ties go to the later
/// axes. So one axis is cut for 2 or 3 ranks (the longest, a box cut in z keeping the serial
/// numbering), a cube is cut 2 x 2 x 2 for 8 ranks, and a long beam is cut in slabs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoxRankGrid {
    /// Runs per axis; their product is the rank count.
    pub ranks: [usize; 3],
    /// Per axis, `ranks[d] + 1` ascending layer bounds from 0 to the axis's node count.
    cuts: [Vec<usize>; 3],
}

impl BoxRankGrid {
    /// The grid for a node grid of `counts` nodes per axis (each `>= 1`) and `n_ranks >= 1`.
    pub fn new(counts: [usize; 3], n_ranks: usize) -> Self {
        let n = n_ranks.max(1);
        let divides = |m: usize| move |d: &usize| m.is_multiple_of(*d);
        let across = |d: usize| counts.iter().product::<usize>() / counts[d].max(1);
        let ranks = (1..=n)
            .filter(divides(n))
            .flat_map(|p2| {
                (1..=n / p2)
                    .filter(divides(n / p2))
                    .map(move |p1| [n / (p1 * p2), p1, p2])
            })
            .min_by_key(|ranks| {
                let overcut = (0..3).any(|d| ranks[d] > counts[d]);
                let cut_nodes = (0..3).map(|d| (ranks[d] - 1) * across(d)).sum::<usize>();
                // fewer cut nodes first, then more runs on the later axes
                (overcut, cut_nodes, Reverse(ranks[2]), Reverse(ranks[1]))
            })
            .expect("1 x 1 x n is a candidate");
        Self::cut(counts, ranks)
    }

    /// A chosen grid of `ranks[0] x ranks[1] x ranks[2]` boxes (each `>= 1`) for a node grid
    /// of `counts` nodes per axis (an axis cut into more runs than it has layers leaves some
    /// boxes empty).
    pub fn with_ranks(counts: [usize; 3], ranks: [usize; 3]) -> Result<Self, MeshError> {
        if ranks.contains(&0) {
            return Err(MeshError::InvalidSpec(format!(
                "a rank grid of {ranks:?} boxes has an axis with none; each needs at least one"
            )));
        }
        let fits = ranks.iter().try_fold(1usize, |acc, &p| {
            acc.checked_mul(p).filter(|&n| n <= u32::MAX as usize)
        });
        if fits.is_none() {
            return Err(MeshError::InvalidSpec(format!(
                "a rank grid of {ranks:?} boxes has more boxes than ranks can exist"
            )));
        }
        Ok(Self::cut(counts, ranks))
    }

    fn cut(counts: [usize; 3], ranks: [usize; 3]) -> Self {
        let cuts = [0, 1, 2].map(|d| (0..=ranks[d]).map(|q| counts[d] * q / ranks[d]).collect());
        Self { ranks, cuts }
    }

    /// The rank count: one box each.
    pub fn n_ranks(&self) -> usize {
        self.ranks.iter().product()
    }

    /// The run of axis `d` that holds node layer `layer`.
    fn run_of(&self, d: usize, layer: usize) -> usize {
        self.cuts[d].partition_point(|&c| c <= layer) - 1
    }

    /// The node layers of axis `d` in run `q`.
    fn layers(&self, d: usize, q: usize) -> Range<usize> {
        self.cuts[d][q]..self.cuts[d][q + 1]
    }

    /// Grid position of rank `r`.
    fn position(&self, r: usize) -> [usize; 3] {
        let [p0, p1, _] = self.ranks;
        [r % p0, (r / p0) % p1, r / (p0 * p1)]
    }

    /// The rank at grid position `q`.
    fn rank_at(&self, q: [usize; 3]) -> usize {
        q[0] + self.ranks[0] * (q[1] + self.ranks[1] * q[2])
    }

    /// The owned node box of rank `r`: node layers per axis.
    fn owned(&self, r: usize) -> [Range<usize>; 3] {
        let q = self.position(r);
        [0, 1, 2].map(|d| self.layers(d, q[d]))
    }

    /// The rank that owns the node at grid index `g`.
    fn owner(&self, g: [usize; 3]) -> usize {
        self.rank_at([0, 1, 2].map(|d| self.run_of(d, g[d])))
    }
}

/// Rank `rank`'s part of the box [`crate::generate_box`] builds, built alone (work and memory
/// proportional to the part and its ghost layers). The node grid is cut into boxes by
/// [`BoxRankGrid`]; rank `r` owns box `r`. Global ids number the boxes' nodes rank after rank,
/// each box lexicographically (x fastest), so a box cut in z only has the serial numbering;
/// `node_serial_ids` are always the serial ids. A cell is owned by the owner of its first node.
/// Coordinates are computed as the serial generator computes them (bit-identical).
pub fn generate_box_part(
    spec: &BoxSpec,
    rank: usize,
    n_ranks: usize,
) -> Result<MeshPart, MeshError> {
    spec.check()?;
    let grid = BoxRankGrid::new(spec.node_counts(), n_ranks);
    generate_box_part_on(spec, rank, &grid)
}

/// [`generate_box_part`] on a chosen grid of boxes (made for `spec.node_counts()`): rank
/// `rank` of `grid.n_ranks()`.
pub fn generate_box_part_on(
    spec: &BoxSpec,
    rank: usize,
    grid_of_ranks: &BoxRankGrid,
) -> Result<MeshPart, MeshError> {
    spec.check()?;
    let n_ranks = grid_of_ranks.n_ranks();
    check_rank(rank, n_ranks)?;
    let kind = spec.kind;
    let p = kind.order();
    let cells = spec.cells;
    let [cx, cy, cz] = cells;
    let counts = spec.node_counts();
    let [nx, ny, _] = counts;
    if grid_of_ranks
        .cuts
        .iter()
        .zip(counts)
        .any(|(c, n)| c.last() != Some(&n))
    {
        return Err(MeshError::InvalidSpec(format!(
            "a rank grid made for other node counts than the box's {counts:?}"
        )));
    }
    let box_size = |r: usize| {
        grid_of_ranks
            .owned(r)
            .iter()
            .map(|l| l.len())
            .product::<usize>()
    };
    let mut node_offsets = vec![0u64; n_ranks + 1];
    for r in 0..n_ranks {
        node_offsets[r + 1] = node_offsets[r] + box_size(r) as u64;
    }
    let grid = |s: usize| [s % nx, (s / nx) % ny, s / (nx * ny)];
    // Global id of the node at grid index `g`: its box's offset, then lexicographic in the box.
    let global_of = |g: [usize; 3]| -> u64 {
        let r = grid_of_ranks.owner(g);
        let [lx, ly, lz] = grid_of_ranks.owned(r);
        let h = [g[0] - lx.start, g[1] - ly.start, g[2] - lz.start];
        node_offsets[r] + (h[0] + lx.len() * (h[1] + ly.len() * h[2])) as u64
    };
    let owned_box = grid_of_ranks.owned(rank);
    let is_owned = |g: [usize; 3]| (0..3).all(|d| owned_box[d].contains(&g[d]));

    // The local cells: those with a node in the owned box, per axis the cells whose node
    // layers meet the owned layers (a box of cells, in serial order); their nodes, the local
    // nodes, are the box of node layers `span` (the owned layers and up to `p` ghost layers
    // on each side).
    let has_nodes = owned_box.iter().all(|l| !l.is_empty());
    let cell_range = |d: usize| -> Range<usize> {
        let l = &owned_box[d];
        match has_nodes {
            // cell c spans node layers p c ..= p c + p
            true => l.start.saturating_sub(p).div_ceil(p)..((l.end - 1) / p).min(cells[d] - 1) + 1,
            false => 0..0,
        }
    };
    let cell_box = [0, 1, 2].map(cell_range);
    let span = [0, 1, 2].map(|d| match has_nodes {
        true => p * cell_box[d].start..p * cell_box[d].end + 1,
        false => 0..0,
    });
    let [sx, sy, sz] = [0, 1, 2].map(|d| span[d].len());
    let span_grid = |l: usize| {
        [
            span[0].start + l % sx,
            span[1].start + (l / sx) % sy,
            span[2].start + l / (sx * sy),
        ]
    };

    // Owned nodes: the box, lexicographic (ascending global id, `global - node_offsets[rank]`);
    // then the ghosts (the span's other nodes) by global id.
    let mut serial_of_local: Vec<usize> = Vec::with_capacity(box_size(rank));
    for k in owned_box[2].clone() {
        for j in owned_box[1].clone() {
            for i in owned_box[0].clone() {
                serial_of_local.push(i + nx * (j + ny * k));
            }
        }
    }
    let n_owned = serial_of_local.len();
    let owned_index = |g: [usize; 3]| {
        let [lx, ly, lz] = &owned_box;
        (g[0] - lx.start) + lx.len() * ((g[1] - ly.start) + ly.len() * (g[2] - lz.start))
    };
    // (each value is its node's or cell's: made in parallel, the serial loops' results)
    let mut ghosts: Vec<(u64, usize)> = (0..sx * sy * sz)
        .into_par_iter()
        .map(span_grid)
        .filter(|&g| !is_owned(g))
        .map(|g| (global_of(g), g[0] + nx * (g[1] + ny * g[2])))
        .collect();
    ghosts.par_sort_unstable();
    serial_of_local.extend(ghosts.iter().map(|&(_, s)| s));
    let mut node_globals: Vec<u64> = (node_offsets[rank]..node_offsets[rank + 1]).collect();
    node_globals.extend(ghosts.iter().map(|&(g, _)| g));
    // the local index of each node of the span, in span order
    let local_in_span: Vec<usize> = (0..sx * sy * sz)
        .into_par_iter()
        .map(|l| {
            let g = span_grid(l);
            match is_owned(g) {
                true => owned_index(g),
                false => {
                    let key = (global_of(g), g[0] + nx * (g[1] + ny * g[2]));
                    n_owned + ghosts.binary_search(&key).expect("ghost collected")
                }
            }
        })
        .collect();
    drop(ghosts);
    let logical = |i: usize, d: usize| i as f64 / (p * spec.cells[d]) as f64;
    let coords = serial_of_local
        .par_iter()
        .map(|&s| {
            let [i, j, k] = grid(s);
            spec.map([logical(i, 0), logical(j, 1), logical(k, 2)])
        })
        .collect();

    // The cells, in serial order, with their nodes (the generator's local order) looked up
    // in the span.
    let npe = p + 1;
    let span_offsets: Vec<usize> = (0..npe)
        .flat_map(|c| (0..npe).flat_map(move |b| (0..npe).map(move |a| a + sx * (b + sy * c))))
        .collect();
    let [ncx, ncy, ncz] = [0, 1, 2].map(|d| cell_box[d].len());
    let cell_at = |l: usize| {
        [
            cell_box[0].start + l % ncx,
            cell_box[1].start + (l / ncx) % ncy,
            cell_box[2].start + l / (ncx * ncy),
        ]
    };
    let n_cells = ncx * ncy * ncz;
    let cell_serial_ids: Vec<u64> = (0..n_cells)
        .into_par_iter()
        .map(|l| {
            let [i, j, k] = cell_at(l);
            (i + cx * (j + cy * k)) as u64
        })
        .collect();
    let cell_owned: Vec<bool> = (0..n_cells)
        .into_par_iter()
        .map(|l| {
            let [i, j, k] = cell_at(l);
            grid_of_ranks.owner([p * i, p * j, p * k]) == rank
        })
        .collect();
    let mut local_cells = vec![0usize; n_cells * span_offsets.len()];
    local_cells
        .par_chunks_mut(span_offsets.len())
        .enumerate()
        .for_each(|(l, nodes)| {
            let [i, j, k] = cell_at(l);
            let first = (p * i - span[0].start)
                + sx * ((p * j - span[1].start) + sy * (p * k - span[2].start));
            for (n, &o) in nodes.iter_mut().zip(&span_offsets) {
                *n = local_in_span[first + o];
            }
        });
    drop(local_in_span);
    let mut mesh = HexMesh::new(kind, coords, local_cells);

    let cell_grid = |c: u64| {
        let c = c as usize;
        [c % cx, (c / cx) % cy, c / (cx * cy)]
    };
    for face in Face::ALL {
        let a = face.axis();
        let node_layer = if face.is_max() { counts[a] - 1 } else { 0 };
        let cell_layer = if face.is_max() { cells[a] - 1 } else { 0 };
        let nodes: Vec<usize> = (0..serial_of_local.len())
            .into_par_iter()
            .filter(|&l| grid(serial_of_local[l])[a] == node_layer)
            .collect();
        let faces = (0..cell_serial_ids.len())
            .into_par_iter()
            .filter(|&l| cell_grid(cell_serial_ids[l])[a] == cell_layer)
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
        node_globals,
        node_serial_ids: serial_of_local.iter().map(|&s| s as u64).collect(),
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
    for (c, &part) in cell_part.iter().enumerate() {
        for &n in mesh.cell_nodes(c) {
            node_owner[n] = node_owner[n].min(part);
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
        .map(|tags| ElementTags::new(tags.format, local_cells.iter().map(|&c| tags[c]).collect()));
    part.set_ids = mesh.set_ids.clone();
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
