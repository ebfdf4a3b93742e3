//! Reading the MSH 4.1 ASCII sections into raw, still tag-based records.

use std::collections::HashMap;

use super::scanner::Scanner;
use crate::cell::CellKind;
use crate::error::MeshError;

/// Where an element came from, for error messages.
#[derive(Debug, Clone, Copy)]
pub(super) struct ElementRef {
    pub tag: usize,
    pub line: usize,
}

/// A boundary quadrangle of a physical surface.
#[derive(Debug, Clone)]
pub(super) struct FaceElement {
    pub group: i64,
    pub element: ElementRef,
    /// Node tags of the 4 corners.
    pub corners: [usize; 4],
}

/// The file's content, before node renumbering.
#[derive(Debug, Default)]
pub(super) struct RawMesh {
    /// `(dim, physical tag) -> name`.
    pub physical_names: HashMap<(usize, i64), String>,
    /// `(dim, entity tag) -> physical tags`.
    pub entity_groups: HashMap<(usize, i64), Vec<i64>>,
    pub node_tags: Vec<usize>,
    pub node_lines: Vec<usize>,
    pub node_coords: Vec<[f64; 3]>,
    /// Cell kind and the element that fixed it.
    pub kind: Option<(CellKind, ElementRef)>,
    /// Node tags of the hexahedra, in Gmsh order.
    pub cell_nodes: Vec<usize>,
    pub cells: Vec<ElementRef>,
    /// `(physical tag, cell index)` of dim-3 groups.
    pub cell_groups: Vec<(i64, usize)>,
    pub faces: Vec<FaceElement>,
    /// `(dim, physical tag, node tag, element)` of dim-0/1 groups.
    pub node_groups: Vec<(usize, i64, usize, ElementRef)>,
    /// Line of the `$Elements` header.
    pub elements_line: usize,
}

/// Fewest bytes of text a number takes: one character and a separator. Capacities reserved from
/// counts in the file are bounded by the unread text divided by this (times numbers per item).
const MIN_TOKEN_BYTES: usize = 2;

/// Checks `$MeshFormat`: version 4.1, ASCII.
pub(super) fn mesh_format(sc: &mut Scanner) -> Result<(), MeshError> {
    let (version, line) = sc.expect("format version")?;
    if version != "4.1" {
        return Err(sc.error(
            line,
            format!(
                "MSH format version {version} is not supported; only 4.1 ASCII is \
                 (export with Mesh.MshFileVersion = 4.1)"
            ),
        ));
    }
    let file_type = sc.usize("file type")?;
    if file_type != 0 {
        return Err(sc.error(
            line,
            "binary MSH files are not supported; export as ASCII (Mesh.Binary = 0)",
        ));
    }
    sc.usize("data size")?;
    Ok(())
}

pub(super) fn physical_names(sc: &mut Scanner, raw: &mut RawMesh) -> Result<(), MeshError> {
    let n = sc.usize("number of physical names")?;
    for _ in 0..n {
        let dim = sc.usize("physical group dimension")?;
        let tag = sc.i64("physical tag")?;
        let (name, _) = sc.expect("physical name")?;
        raw.physical_names.insert((dim, tag), name.to_string());
    }
    Ok(())
}

pub(super) fn entities(sc: &mut Scanner, raw: &mut RawMesh) -> Result<(), MeshError> {
    let counts = [
        sc.usize("number of points")?,
        sc.usize("number of curves")?,
        sc.usize("number of surfaces")?,
        sc.usize("number of volumes")?,
    ];
    for (dim, &count) in counts.iter().enumerate() {
        for _ in 0..count {
            let tag = sc.i64("entity tag")?;
            // Points carry X Y Z, higher entities a bounding box.
            let n_coords = if dim == 0 { 3 } else { 6 };
            for _ in 0..n_coords {
                sc.f64("entity coordinate")?;
            }
            let n_phys = sc.usize("number of physical tags")?;
            let mut groups = Vec::with_capacity(sc.capacity_for(n_phys, MIN_TOKEN_BYTES));
            for _ in 0..n_phys {
                groups.push(sc.i64("physical tag")?);
            }
            if dim > 0 {
                let n_bound = sc.usize("number of bounding entities")?;
                for _ in 0..n_bound {
                    sc.i64("bounding entity tag")?;
                }
            }
            raw.entity_groups.insert((dim, tag), groups);
        }
    }
    Ok(())
}

/// Reads `$Nodes`. Each block header (`entity_dim entity_tag parametric count`) is checked
/// before its nodes are read: `entity_dim <= 3`, `parametric` 0 or 1.
pub(super) fn nodes(sc: &mut Scanner, raw: &mut RawMesh) -> Result<(), MeshError> {
    let n_blocks = sc.usize("number of node blocks")?;
    let header_line = sc.line();
    let n_nodes = sc.usize("number of nodes")?;
    sc.usize("minimum node tag")?;
    sc.usize("maximum node tag")?;
    // A node is at least a tag and three coordinates.
    let capacity = sc.capacity_for(n_nodes, 4 * MIN_TOKEN_BYTES);
    raw.node_tags.reserve(capacity);
    raw.node_lines.reserve(capacity);
    raw.node_coords.reserve(capacity);
    for _ in 0..n_blocks {
        let (dim_tok, block_line) = sc.expect("entity dimension")?;
        let entity_dim = match dim_tok.parse::<usize>() {
            Ok(d) if d <= 3 => d,
            _ => {
                return Err(sc.error(
                    block_line,
                    format!("invalid entity dimension '{dim_tok}' (expected 0, 1, 2 or 3)"),
                ))
            }
        };
        sc.i64("entity tag")?;
        let n_parametric = match sc.usize("parametric flag")? {
            0 => 0,
            1 => entity_dim,
            other => {
                return Err(sc.error(
                    sc.line(),
                    format!("invalid parametric flag {other} (expected 0 or 1)"),
                ))
            }
        };
        let count = sc.usize("number of nodes in block")?;
        for _ in 0..count {
            raw.node_tags.push(sc.usize("node tag")?);
            raw.node_lines.push(sc.line());
        }
        for _ in 0..count {
            let x = [sc.f64("x")?, sc.f64("y")?, sc.f64("z")?];
            for _ in 0..n_parametric {
                sc.f64("parametric coordinate")?;
            }
            raw.node_coords.push(x);
        }
    }
    if raw.node_tags.len() != n_nodes {
        return Err(sc.error(
            header_line,
            format!(
                "$Nodes header announces {n_nodes} nodes, but its blocks hold {}",
                raw.node_tags.len()
            ),
        ));
    }
    Ok(())
}

/// Human-readable name of a Gmsh element type.
pub(super) fn element_type_name(t: usize) -> String {
    match t {
        1 => "2-node line".into(),
        2 => "3-node triangle".into(),
        3 => "4-node quadrangle".into(),
        4 => "4-node tetrahedron".into(),
        5 => "8-node hexahedron".into(),
        6 => "6-node prism".into(),
        7 => "5-node pyramid".into(),
        8 => "3-node line".into(),
        9 => "6-node triangle".into(),
        10 => "9-node quadrangle".into(),
        11 => "10-node tetrahedron".into(),
        12 => "27-node hexahedron".into(),
        15 => "1-node point".into(),
        16 => "8-node quadrangle".into(),
        17 => "20-node hexahedron".into(),
        _ => format!("element type {t}"),
    }
}

/// Node count of the element types this reader interprets.
fn expected_nodes(t: usize) -> Option<usize> {
    match t {
        1 => Some(2),
        3 => Some(4),
        5 => Some(8),
        8 => Some(3),
        10 => Some(9),
        12 => Some(27),
        15 => Some(1),
        _ => None,
    }
}

/// Reads `$Elements`. Every element is one line: `tag node_tag...`.
///
/// Kept: hexahedra (types 5, 12) of volume entities (any other volume element is an error,
/// the mesh would have holes); quadrangles (3, 10) of surfaces in a physical group (other
/// surface elements there are an error); the nodes of any element of a point or curve entity
/// in a physical group. Everything else (elements of entities without physical groups below
/// dimension 3) is skipped.
pub(super) fn elements(sc: &mut Scanner, raw: &mut RawMesh) -> Result<(), MeshError> {
    raw.elements_line = sc.line();
    let n_blocks = sc.usize("number of element blocks")?;
    sc.usize("number of elements")?;
    sc.usize("minimum element tag")?;
    sc.usize("maximum element tag")?;
    for _ in 0..n_blocks {
        let entity_dim = sc.usize("entity dimension")?;
        let entity_tag = sc.i64("entity tag")?;
        let (type_tok, type_line) = sc.expect("element type")?;
        let elem_type: usize = type_tok.parse().map_err(|_| {
            sc.error(
                type_line,
                format!("expected element type (an unsigned integer), found '{type_tok}'"),
            )
        })?;
        let count = sc.usize("number of elements in block")?;
        sc.rest_of_line()?;
        let groups = raw
            .entity_groups
            .get(&(entity_dim, entity_tag))
            .cloned()
            .unwrap_or_default();
        let block_kind = match (entity_dim, elem_type) {
            (3, 5) => Some(CellKind::Hex8),
            (3, 12) => Some(CellKind::Hex27),
            (3, _) => {
                return Err(sc.error(
                    type_line,
                    format!(
                        "volume entity {entity_tag} holds {} elements; only hexahedra \
                         (types 5 and 12) are supported",
                        element_type_name(elem_type)
                    ),
                ))
            }
            (2, 3 | 10) | (0 | 1, _) => None,
            (2, _) if !groups.is_empty() => {
                return Err(sc.error(
                    type_line,
                    format!(
                        "surface entity {entity_tag} of physical group(s) {groups:?} holds {} \
                         elements; only quadrangles (types 3 and 10) can form face sets",
                        element_type_name(elem_type)
                    ),
                ))
            }
            (d, _) if d > 3 => {
                return Err(sc.error(
                    type_line,
                    format!("invalid entity dimension '{d}' (expected 0, 1, 2 or 3)"),
                ))
            }
            _ => None,
        };
        for _ in 0..count {
            let (tag_tok, line) = sc.expect("element tag")?;
            let tag: usize = tag_tok.parse().map_err(|_| {
                sc.error(
                    line,
                    format!("expected element tag (an unsigned integer), found '{tag_tok}'"),
                )
            })?;
            let element = ElementRef { tag, line };
            let tokens = sc.rest_of_line()?;
            if entity_dim < 3 && groups.is_empty() {
                continue;
            }
            if let Some(expected) = expected_nodes(elem_type) {
                if tokens.len() != expected {
                    return Err(sc.error(
                        line,
                        format!(
                            "element {tag} ({}) lists {} nodes, expected {expected}",
                            element_type_name(elem_type),
                            tokens.len()
                        ),
                    ));
                }
            }
            let mut node_tags = Vec::with_capacity(tokens.len());
            for tok in tokens {
                node_tags.push(tok.parse::<usize>().map_err(|_| {
                    sc.error(
                        line,
                        format!("element {tag}: expected a node tag, found '{tok}'"),
                    )
                })?);
            }
            if let Some(kind) = block_kind {
                push_cell(sc, raw, kind, element, &node_tags, &groups)?;
            } else if entity_dim == 2 {
                for &group in &groups {
                    raw.faces.push(FaceElement {
                        group,
                        element,
                        corners: [node_tags[0], node_tags[1], node_tags[2], node_tags[3]],
                    });
                }
            } else {
                for &group in &groups {
                    for &n in &node_tags {
                        raw.node_groups.push((entity_dim, group, n, element));
                    }
                }
            }
        }
    }
    Ok(())
}

fn push_cell(
    sc: &Scanner,
    raw: &mut RawMesh,
    kind: CellKind,
    element: ElementRef,
    node_tags: &[usize],
    groups: &[i64],
) -> Result<(), MeshError> {
    match raw.kind {
        None => raw.kind = Some((kind, element)),
        Some((first, first_elem)) if first != kind => {
            return Err(sc.error(
                element.line,
                format!(
                    "element {} is a {} but element {} (line {}) is a {}; mixed hex8/hex27 \
                     meshes are not supported",
                    element.tag,
                    element_type_name(if kind == CellKind::Hex8 { 5 } else { 12 }),
                    first_elem.tag,
                    first_elem.line,
                    element_type_name(if first == CellKind::Hex8 { 5 } else { 12 }),
                ),
            ))
        }
        Some(_) => {}
    }
    let mut sorted = node_tags.to_vec();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(sc.error(
            element.line,
            format!("element {} repeats node {}", element.tag, w[0]),
        ));
    }
    let cell = raw.cells.len();
    raw.cells.push(element);
    raw.cell_nodes.extend_from_slice(node_tags);
    raw.cell_groups.extend(groups.iter().map(|&g| (g, cell)));
    Ok(())
}
