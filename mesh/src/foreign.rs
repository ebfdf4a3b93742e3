//! The part shared by the Exodus II and Abaqus readers: a mesh in the file's node order, with
//! sets by file node position, turned into a [`HexMesh`] the way the Gmsh reader builds one.
//!
//! Nodes not used by any hexahedron are dropped (the others keep the file's order); sets are
//! sorted and deduplicated; refused, as the Gmsh reader refuses them: two hexahedra with the
//! same corners, set nodes of no hexahedron, face-set faces inside the mesh (shared by two
//! cells), faces shared by more than two cells, and (27-node cells) a node far from the place
//! its position in the element names (another node ordering).

use std::collections::{BTreeMap, HashMap};

use crate::cell::{face_corner_local_nodes, CellFace, CellKind, Face};
use crate::error::MeshError;
use crate::hex_mesh::{ElementTags, HexMesh, SetIds};
use crate::ordering::lexicographic_coords;

/// A mesh as read, before node compaction.
#[derive(Debug)]
pub(crate) struct RawHexMesh {
    pub kind: CellKind,
    /// Every node of the file, in file order.
    pub coords: Vec<[f64; 3]>,
    /// Cell nodes as positions into `coords`, lexicographic local order.
    pub cells: Vec<usize>,
    /// Node sets as positions into `coords`.
    pub node_sets: BTreeMap<String, Vec<usize>>,
    pub face_sets: BTreeMap<String, Vec<CellFace>>,
    pub cell_sets: BTreeMap<String, Vec<usize>>,
    /// The file's element numbers, one per cell (for messages).
    pub element_tags: ElementTags,
    /// The file's numeric ids of the sets (Exodus II), by kind.
    pub set_ids: SetIds,
}

/// What went wrong, for the reader to locate in its file.
#[derive(Debug)]
pub(crate) enum BuildError {
    /// About the cell with this index (file order).
    Cell { cell: usize, message: String },
    /// About the named set.
    Set { name: String, message: String },
    /// Anything else (an invariant of [`HexMesh::validate`]).
    Mesh(MeshError),
}

pub(crate) fn build(raw: RawHexMesh) -> Result<HexMesh, BuildError> {
    let kind = raw.kind;
    let npc = kind.nodes_per_cell();
    check_duplicate_cells(&raw.cells, kind)?;
    if kind == CellKind::Hex27 {
        check_q2_placement(&raw.coords, &raw.cells)?;
    }
    const UNUSED: usize = usize::MAX;
    let mut new_index = vec![UNUSED; raw.coords.len()];
    for &p in &raw.cells {
        new_index[p] = 0;
    }
    let mut coords = Vec::new();
    for (p, idx) in new_index.iter_mut().enumerate() {
        if *idx != UNUSED {
            *idx = coords.len();
            coords.push(raw.coords[p]);
        }
    }
    let cells: Vec<usize> = raw.cells.iter().map(|&p| new_index[p]).collect();
    let mut mesh = HexMesh::new(kind, coords, cells);
    mesh.cell_tags = Some(raw.element_tags);
    mesh.set_ids = raw.set_ids;

    for (name, positions) in raw.node_sets {
        let mut nodes = Vec::with_capacity(positions.len());
        for p in positions {
            match new_index.get(p) {
                Some(&i) if i != UNUSED => nodes.push(i),
                _ => {
                    return Err(BuildError::Set {
                        message: format!(
                            "node {} (1-based position in the file) is not a node of any \
                             hexahedron",
                            p + 1
                        ),
                        name,
                    })
                }
            }
        }
        nodes.sort_unstable();
        nodes.dedup();
        mesh.node_sets.insert(name, nodes);
    }

    if !raw.face_sets.is_empty() {
        let sharing = face_sharing(&mesh);
        if let Some(shared) = sharing.values().find(|f| f.len() > 2) {
            return Err(BuildError::Cell {
                cell: shared[0].cell,
                message: format!(
                    "the mesh is not manifold: cells {} share one face",
                    shared
                        .iter()
                        .map(|f| f.cell.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        for (name, mut faces) in raw.face_sets {
            for f in &faces {
                if f.cell >= mesh.n_cells() {
                    return Err(BuildError::Set {
                        name,
                        message: format!(
                            "names cell {}, but the mesh has {}",
                            f.cell,
                            mesh.n_cells()
                        ),
                    });
                }
                let key = face_key(&mesh, *f);
                if let Some([a, b]) = sharing.get(&key).map(Vec::as_slice) {
                    let other = if a == f { b } else { a };
                    return Err(BuildError::Set {
                        name,
                        message: format!(
                            "face {} of cell {} is an interior face (shared with cell {}); face \
                             sets must lie on the boundary",
                            f.face.name(),
                            f.cell,
                            other.cell
                        ),
                    });
                }
            }
            faces.sort_unstable();
            faces.dedup();
            mesh.face_sets.insert(name, faces);
        }
    }
    for (name, mut cells) in raw.cell_sets {
        cells.sort_unstable();
        cells.dedup();
        mesh.cell_sets.insert(name, cells);
    }
    debug_assert_eq!(mesh.cells.len() % npc, 0);
    mesh.validate().map_err(BuildError::Mesh)?;
    Ok(mesh)
}

/// Sorted corner nodes of a cell face.
fn face_key(mesh: &HexMesh, cf: CellFace) -> [usize; 4] {
    let nodes = mesh.cell_nodes(cf.cell);
    let mut key = face_corner_local_nodes(mesh.kind, cf.face).map(|l| nodes[l]);
    key.sort_unstable();
    key
}

/// Sorted corner nodes of every cell face -> the cell faces with those corners.
pub(crate) fn face_sharing(mesh: &HexMesh) -> HashMap<[usize; 4], Vec<CellFace>> {
    let mut map: HashMap<[usize; 4], Vec<CellFace>> = HashMap::with_capacity(6 * mesh.n_cells());
    for cell in 0..mesh.n_cells() {
        for face in Face::ALL {
            let cf = CellFace { cell, face };
            map.entry(face_key(mesh, cf)).or_default().push(cf);
        }
    }
    map
}

fn check_duplicate_cells(cells: &[usize], kind: CellKind) -> Result<(), BuildError> {
    let npc = kind.nodes_per_cell();
    let corners = kind.corner_local_nodes();
    let mut seen: HashMap<[usize; 8], usize> = HashMap::with_capacity(cells.len() / npc);
    for (c, nodes) in cells.chunks_exact(npc).enumerate() {
        let mut key = corners.map(|l| nodes[l]);
        key.sort_unstable();
        if let Some(&first) = seen.get(&key) {
            return Err(BuildError::Cell {
                cell: c,
                message: format!(
                    "has the same corner nodes as cell {first}: the hexahedron is listed twice"
                ),
            });
        }
        seen.insert(key, c);
    }
    Ok(())
}

/// Every non-corner node of a 27-node cell must lie nearer the trilinear image of its own
/// reference point than half its distance to the image of any other non-corner point: a file
/// in another 27-node ordering (the formats differ in their face and centre nodes) is refused
/// instead of giving a scrambled element. Curved cells pass (their nodes move by a fraction of
/// the spacing).
fn check_q2_placement(coords: &[[f64; 3]], cells: &[usize]) -> Result<(), BuildError> {
    let reference = lexicographic_coords(3, 2);
    let corners_lex = CellKind::Hex27.corner_local_nodes();
    for (c, nodes) in cells.chunks_exact(27).enumerate() {
        let corner_x: [[f64; 3]; 8] = std::array::from_fn(|k| coords[nodes[corners_lex[k]]]);
        let image = |r: [i8; 3]| -> [f64; 3] {
            let mut x = [0.0; 3];
            for (k, cx) in corner_x.iter().enumerate() {
                let w: f64 = (0..3)
                    .map(|d| {
                        let s = if k >> d & 1 == 1 { 1.0 } else { -1.0 };
                        0.5 * (1.0 + s * f64::from(r[d]))
                    })
                    .product();
                for d in 0..3 {
                    x[d] += w * cx[d];
                }
            }
            x
        };
        let mids: Vec<(usize, [f64; 3])> = reference
            .iter()
            .enumerate()
            .filter(|(_, r)| r.contains(&0))
            .map(|(l, r)| (l, image(*r)))
            .collect();
        let dist = |a: [f64; 3], b: [f64; 3]| {
            ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
        };
        for &(l, own) in &mids {
            let x = coords[nodes[l]];
            let d_own = dist(x, own);
            if let Some(&(other, _)) = mids
                .iter()
                .filter(|(m, _)| *m != l)
                .find(|(_, p)| 2.0 * dist(x, *p) < d_own)
            {
                return Err(BuildError::Cell {
                    cell: c,
                    message: format!(
                        "27-node element: the node at reference point {:?} lies where the node \
                         at {:?} belongs (a different 27-node ordering?)",
                        reference[l], reference[other]
                    ),
                });
            }
        }
    }
    Ok(())
}
