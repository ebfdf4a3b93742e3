//! Reading the MSH sections (4.1 and 2.2, ASCII and binary) into raw, still tag-based records.
//!
//! Every format ends in [`add_element`], which classifies elements the same way for all of them.

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

/// The MSH format version of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Version {
    #[default]
    V41,
    V22,
}

/// The file's content, before node renumbering.
#[derive(Debug, Default)]
pub(super) struct RawMesh {
    pub version: Version,
    pub binary: bool,
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
    /// Line of every element tag seen (duplicates are errors).
    pub element_lines: HashMap<usize, usize>,
    /// An error about surface elements, reported after the volume elements have been checked
    /// (so that an unsupported cell kind is named first).
    pub deferred: Option<MeshError>,
}

impl RawMesh {
    /// Physical groups as messages name them: `'left' (2)`, or the number alone.
    pub fn group_names(&self, dim: usize, groups: &[i64]) -> String {
        groups
            .iter()
            .map(|&g| match self.physical_names.get(&(dim, g)) {
                Some(name) => format!("'{name}' ({g})"),
                None => g.to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Fewest bytes of text a number takes: one character and a separator. Capacities reserved from
/// counts in the file are bounded by the unread text divided by this (times numbers per item).
const MIN_TOKEN_BYTES: usize = 2;

/// Reads `$MeshFormat`: version 4.1 or 2.2, ASCII or binary (data size 8; for binary files the
/// check integer 1 that fixes the byte order).
pub(super) fn mesh_format(sc: &mut Scanner, raw: &mut RawMesh) -> Result<(), MeshError> {
    let (version, line) = sc.expect("format version")?;
    raw.version = match version {
        "4.1" => Version::V41,
        "2.2" => Version::V22,
        _ => {
            return Err(sc.error(
                line,
                format!(
                    "MSH format version {version} is not supported; 4.1 and 2.2 are (ASCII or \
                     binary; export with Mesh.MshFileVersion = 4.1)"
                ),
            ))
        }
    };
    raw.binary = match sc.usize("file type")? {
        0 => false,
        1 => true,
        other => {
            return Err(sc.error(
                line,
                format!("file type {other} is neither 0 (ASCII) nor 1 (binary)"),
            ))
        }
    };
    let data_size = sc.usize("data size")?;
    if data_size != 8 && !(raw.binary && data_size == 4) {
        return Err(sc.error(line, format!("data size {data_size} is not supported (8)")));
    }
    sc.size_t = data_size;
    if raw.binary {
        sc.end_line();
        let one = sc.bytes(4, "the byte-order check integer")?;
        sc.big_endian = match one {
            [1, 0, 0, 0] => false,
            [0, 0, 0, 1] => true,
            _ => return Err(sc.binary_error("the byte-order check integer is not 1")),
        };
    }
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

/// Reads `$Entities` (4.1): the physical groups of each entity.
pub(super) fn entities(sc: &mut Scanner, raw: &mut RawMesh) -> Result<(), MeshError> {
    let binary = raw.binary;
    let count = |sc: &mut Scanner, what: &str| {
        if binary {
            sc.bin_size(what)
        } else {
            sc.usize(what)
        }
    };
    if binary {
        sc.end_line();
    }
    let counts = [
        count(sc, "number of points")?,
        count(sc, "number of curves")?,
        count(sc, "number of surfaces")?,
        count(sc, "number of volumes")?,
    ];
    for (dim, &n) in counts.iter().enumerate() {
        for _ in 0..n {
            // Points carry X Y Z, higher entities a bounding box.
            let n_coords = if dim == 0 { 3 } else { 6 };
            let (tag, groups) = if binary {
                let tag = i64::from(sc.bin_i32("entity tag")?);
                for _ in 0..n_coords {
                    sc.bytes(8, "entity coordinate")?;
                }
                let n_phys = sc.bin_size("number of physical tags")?;
                let mut groups = Vec::with_capacity(sc.capacity_for(n_phys, 4));
                for _ in 0..n_phys {
                    groups.push(i64::from(sc.bin_i32("physical tag")?));
                }
                if dim > 0 {
                    let n_bound = sc.bin_size("number of bounding entities")?;
                    sc.bytes(
                        n_bound
                            .checked_mul(4)
                            .ok_or_else(|| sc.binary_error("too many bounding entities"))?,
                        "bounding entity tags",
                    )?;
                }
                (tag, groups)
            } else {
                let tag = sc.i64("entity tag")?;
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
                (tag, groups)
            };
            raw.entity_groups.insert((dim, tag), groups);
        }
    }
    Ok(())
}

/// Reads `$Nodes` in the file's version and encoding.
pub(super) fn nodes(sc: &mut Scanner, raw: &mut RawMesh) -> Result<(), MeshError> {
    match (raw.version, raw.binary) {
        (Version::V41, false) => nodes_41(sc, raw),
        (Version::V41, true) => nodes_41_binary(sc, raw),
        (Version::V22, binary) => nodes_22(sc, raw, binary),
    }
}

/// 4.1 ASCII `$Nodes`. Each block header (`entity_dim entity_tag parametric count`) is checked
/// before its nodes are read: `entity_dim <= 3`, `parametric` 0 or 1.
fn nodes_41(sc: &mut Scanner, raw: &mut RawMesh) -> Result<(), MeshError> {
    let n_blocks = sc.usize("number of node blocks")?;
    let header_line = sc.line();
    let n_nodes = sc.usize("number of nodes")?;
    let min_tag = sc.usize("minimum node tag")?;
    let max_tag = sc.usize("maximum node tag")?;
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
    check_node_header(sc, raw, header_line, n_nodes, min_tag, max_tag)
}

/// 4.1 binary `$Nodes`: the same records as `size_t`, `int` and `double` values.
fn nodes_41_binary(sc: &mut Scanner, raw: &mut RawMesh) -> Result<(), MeshError> {
    let header_line = sc.line();
    sc.end_line();
    let n_blocks = sc.bin_size("number of node blocks")?;
    let n_nodes = sc.bin_size("number of nodes")?;
    let min_tag = sc.bin_size("minimum node tag")?;
    let max_tag = sc.bin_size("maximum node tag")?;
    let capacity = sc.capacity_for(n_nodes, 8 + 24);
    raw.node_tags.reserve(capacity);
    raw.node_lines.reserve(capacity);
    raw.node_coords.reserve(capacity);
    for _ in 0..n_blocks {
        let entity_dim = sc.bin_u32("entity dimension")?;
        if entity_dim > 3 {
            return Err(sc.binary_error(format!(
                "invalid entity dimension {entity_dim} (expected 0, 1, 2 or 3)"
            )));
        }
        sc.bin_i32("entity tag")?;
        let n_parametric = match sc.bin_i32("parametric flag")? {
            0 => 0,
            1 => entity_dim,
            other => {
                return Err(
                    sc.binary_error(format!("invalid parametric flag {other} (expected 0 or 1)"))
                )
            }
        };
        let count = sc.bin_size("number of nodes in block")?;
        if sc.capacity_for(count, 8 + 24) < count {
            return Err(sc.binary_error(format!(
                "a block of {count} nodes is longer than the rest of the file"
            )));
        }
        for _ in 0..count {
            raw.node_tags.push(sc.bin_size("node tag")?);
            raw.node_lines.push(header_line);
        }
        for _ in 0..count {
            let x = [sc.bin_f64("x")?, sc.bin_f64("y")?, sc.bin_f64("z")?];
            for _ in 0..n_parametric {
                sc.bin_f64("parametric coordinate")?;
            }
            raw.node_coords.push(x);
        }
    }
    check_node_header(sc, raw, header_line, n_nodes, min_tag, max_tag)
}

/// Checks the `$Nodes` header's counts against the nodes read.
fn check_node_header(
    sc: &Scanner,
    raw: &RawMesh,
    header_line: usize,
    n_nodes: usize,
    min_tag: usize,
    max_tag: usize,
) -> Result<(), MeshError> {
    if raw.node_tags.len() != n_nodes {
        return Err(sc.error(
            header_line,
            format!(
                "$Nodes header announces {n_nodes} nodes, but its blocks hold {}",
                raw.node_tags.len()
            ),
        ));
    }
    let (lo, hi) = min_max(&raw.node_tags);
    if n_nodes > 0 && (lo, hi) != (min_tag, max_tag) {
        return Err(sc.error(
            header_line,
            format!(
                "$Nodes header announces node tags {min_tag} to {max_tag}, but the nodes have \
                 tags {lo} to {hi}"
            ),
        ));
    }
    Ok(())
}

fn min_max(tags: &[usize]) -> (usize, usize) {
    tags.iter()
        .fold((usize::MAX, 0), |(lo, hi), &t| (lo.min(t), hi.max(t)))
}

/// 2.2 `$Nodes`: a count, then `tag x y z` per node (ASCII lines, or `int` + 3 `double`).
fn nodes_22(sc: &mut Scanner, raw: &mut RawMesh, binary: bool) -> Result<(), MeshError> {
    let n_nodes = sc.usize("number of nodes")?;
    let line = sc.line();
    let min_bytes = if binary { 28 } else { 4 * MIN_TOKEN_BYTES };
    let capacity = sc.capacity_for(n_nodes, min_bytes);
    if binary && capacity < n_nodes {
        return Err(sc.error(
            line,
            format!("{n_nodes} nodes announced, more than the rest of the file holds"),
        ));
    }
    raw.node_tags.reserve(capacity);
    raw.node_lines.reserve(capacity);
    raw.node_coords.reserve(capacity);
    if binary {
        sc.end_line();
    }
    for _ in 0..n_nodes {
        if binary {
            raw.node_tags.push(sc.bin_u32("node tag")?);
            raw.node_lines.push(line);
            raw.node_coords
                .push([sc.bin_f64("x")?, sc.bin_f64("y")?, sc.bin_f64("z")?]);
        } else {
            raw.node_tags.push(sc.usize("node tag")?);
            raw.node_lines.push(sc.line());
            raw.node_coords
                .push([sc.f64("x")?, sc.f64("y")?, sc.f64("z")?]);
        }
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
        13 => "18-node prism".into(),
        14 => "14-node pyramid".into(),
        15 => "1-node point".into(),
        16 => "8-node quadrangle".into(),
        17 => "20-node hexahedron".into(),
        18 => "15-node prism".into(),
        19 => "13-node pyramid".into(),
        _ => format!("element type {t}"),
    }
}

/// Nodes per element of the common Gmsh element types (those a binary file can hold here).
fn element_nodes(t: usize) -> Option<usize> {
    Some(match t {
        15 => 1,
        1 => 2,
        2 | 8 => 3,
        3 | 4 | 26 => 4,
        7 | 27 => 5,
        6 | 9 | 28 => 6,
        5 | 16 => 8,
        10 | 20 => 9,
        11 | 21 => 10,
        22 => 12,
        19 => 13,
        14 => 14,
        18 | 23 | 24 => 15,
        13 => 18,
        17 | 29 => 20,
        25 => 21,
        12 => 27,
        30 => 35,
        31 => 56,
        92 => 64,
        93 => 125,
        _ => return None,
    })
}

/// Dimension of an element type (2.2 files have no entities to say it).
fn element_dim(t: usize) -> Option<usize> {
    Some(match t {
        15 => 0,
        1 | 8 | 26 | 27 | 28 => 1,
        2 | 3 | 9 | 10 | 16 | 20 | 21 | 22 | 23 | 24 | 25 => 2,
        4 | 5 | 6 | 7 | 11 | 12 | 13 | 14 | 17 | 18 | 19 | 29 | 30 | 31 | 92 | 93 => 3,
        _ => return None,
    })
}

/// One element as any format gives it.
pub(super) struct Element<'a> {
    pub element: ElementRef,
    pub dim: usize,
    pub entity: i64,
    pub elem_type: usize,
    pub nodes: &'a [usize],
    pub groups: &'a [i64],
}

/// Records an element. Kept: hexahedra (types 5, 12) of volume entities (any other volume element
/// is an error: the mesh would have holes); quadrangles (3, 10) of surfaces in a physical group
/// (other surface elements there are an error, reported after the volume elements); the nodes of
/// any element of a point or curve in a physical group. Everything else (elements below
/// dimension 3 of no physical group) is skipped. Element tags must be unique.
pub(super) fn add_element(sc: &Scanner, raw: &mut RawMesh, e: Element) -> Result<(), MeshError> {
    let Element {
        element,
        dim,
        entity,
        elem_type,
        nodes,
        groups,
    } = e;
    if let Some(first) = raw.element_lines.insert(element.tag, element.line) {
        return Err(sc.error(
            element.line,
            format!(
                "element tag {} is used twice (lines {first} and {})",
                element.tag, element.line
            ),
        ));
    }
    match (dim, elem_type) {
        (3, 5 | 12) => {
            let kind = if elem_type == 5 {
                CellKind::Hex8
            } else {
                CellKind::Hex27
            };
            check_node_count(sc, element, elem_type, nodes)?;
            push_cell(sc, raw, kind, element, nodes, groups)
        }
        (3, _) => Err(sc.error(
            element.line,
            format!(
                "element {} of volume entity {entity} is a {}; only hexahedra (8-node type 5 and \
                 27-node type 12) are supported",
                element.tag,
                element_type_name(elem_type)
            ),
        )),
        (_, _) if groups.is_empty() => Ok(()),
        (2, 3 | 10) => {
            check_node_count(sc, element, elem_type, nodes)?;
            for &group in groups {
                raw.faces.push(FaceElement {
                    group,
                    element,
                    corners: [nodes[0], nodes[1], nodes[2], nodes[3]],
                });
            }
            Ok(())
        }
        (2, _) => {
            if raw.deferred.is_none() {
                raw.deferred = Some(sc.error(
                    element.line,
                    format!(
                        "element {} of surface entity {entity} in physical group {} is a {}; \
                         only quadrangles (types 3 and 10) can form face sets",
                        element.tag,
                        raw.group_names(2, groups),
                        element_type_name(elem_type)
                    ),
                ));
            }
            Ok(())
        }
        (0 | 1, _) => {
            for &group in groups {
                for &n in nodes {
                    raw.node_groups.push((dim, group, n, element));
                }
            }
            Ok(())
        }
        (d, _) => Err(sc.error(
            element.line,
            format!("invalid entity dimension '{d}' (expected 0, 1, 2 or 3)"),
        )),
    }
}

fn check_node_count(
    sc: &Scanner,
    element: ElementRef,
    elem_type: usize,
    nodes: &[usize],
) -> Result<(), MeshError> {
    match element_nodes(elem_type) {
        Some(expected) if nodes.len() != expected => Err(sc.error(
            element.line,
            format!(
                "element {} ({}) lists {} nodes, expected {expected}",
                element.tag,
                element_type_name(elem_type),
                nodes.len()
            ),
        )),
        _ => Ok(()),
    }
}

/// Reads `$Elements` in the file's version and encoding.
pub(super) fn elements(sc: &mut Scanner, raw: &mut RawMesh) -> Result<(), MeshError> {
    raw.elements_line = sc.line();
    match (raw.version, raw.binary) {
        (Version::V41, false) => elements_41(sc, raw),
        (Version::V41, true) => elements_41_binary(sc, raw),
        (Version::V22, false) => elements_22(sc, raw),
        (Version::V22, true) => elements_22_binary(sc, raw),
    }
}

/// Checks the header's element count and tag range against the elements read.
fn check_element_header(
    sc: &Scanner,
    raw: &RawMesh,
    header_line: usize,
    n_elements: usize,
    tag_range: Option<(usize, usize)>,
) -> Result<(), MeshError> {
    let read = raw.element_lines.len();
    if read != n_elements {
        return Err(sc.error(
            header_line,
            format!("$Elements header announces {n_elements} elements, but the file holds {read}"),
        ));
    }
    if let Some((min_tag, max_tag)) = tag_range {
        let (lo, hi) = raw
            .element_lines
            .keys()
            .fold((usize::MAX, 0), |(lo, hi), &t| (lo.min(t), hi.max(t)));
        if read > 0 && (lo, hi) != (min_tag, max_tag) {
            return Err(sc.error(
                header_line,
                format!(
                    "$Elements header announces element tags {min_tag} to {max_tag}, but the \
                     elements have tags {lo} to {hi}"
                ),
            ));
        }
    }
    Ok(())
}

/// 4.1 ASCII `$Elements`: blocks of `tag node_tag...` lines.
fn elements_41(sc: &mut Scanner, raw: &mut RawMesh) -> Result<(), MeshError> {
    let n_blocks = sc.usize("number of element blocks")?;
    let header_line = sc.line();
    let n_elements = sc.usize("number of elements")?;
    let min_tag = sc.usize("minimum element tag")?;
    let max_tag = sc.usize("maximum element tag")?;
    let mut node_tags = Vec::new();
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
        let entity = sc.i64("entity tag")?;
        let elem_type = sc.usize("element type")?;
        let count = sc.usize("number of elements in block")?;
        sc.rest_of_line()?;
        let groups = raw
            .entity_groups
            .get(&(entity_dim, entity))
            .cloned()
            .unwrap_or_default();
        for _ in 0..count {
            let (tag_tok, line) = sc.expect("element tag")?;
            let tag: usize = tag_tok.parse().map_err(|_| {
                sc.error(
                    line,
                    format!("expected element tag (an unsigned integer), found '{tag_tok}'"),
                )
            })?;
            node_tags.clear();
            for tok in sc.rest_of_line()? {
                node_tags.push(tok.parse::<usize>().map_err(|_| {
                    sc.error(
                        line,
                        format!("element {tag}: expected a node tag, found '{tok}'"),
                    )
                })?);
            }
            add_element(
                sc,
                raw,
                Element {
                    element: ElementRef { tag, line },
                    dim: entity_dim,
                    entity,
                    elem_type,
                    nodes: &node_tags,
                    groups: &groups,
                },
            )?;
        }
    }
    check_element_header(sc, raw, header_line, n_elements, Some((min_tag, max_tag)))
}

/// 4.1 binary `$Elements`: per block `int dim, int entity, int type, size_t count`, then per
/// element `size_t tag` and its node tags.
fn elements_41_binary(sc: &mut Scanner, raw: &mut RawMesh) -> Result<(), MeshError> {
    let header_line = sc.line();
    sc.end_line();
    let n_blocks = sc.bin_size("number of element blocks")?;
    let n_elements = sc.bin_size("number of elements")?;
    let min_tag = sc.bin_size("minimum element tag")?;
    let max_tag = sc.bin_size("maximum element tag")?;
    let mut node_tags = Vec::new();
    for _ in 0..n_blocks {
        let entity_dim = sc.bin_u32("entity dimension")?;
        if entity_dim > 3 {
            return Err(sc.binary_error(format!(
                "invalid entity dimension {entity_dim} (expected 0, 1, 2 or 3)"
            )));
        }
        let entity = i64::from(sc.bin_i32("entity tag")?);
        let elem_type = sc.bin_u32("element type")?;
        let count = sc.bin_size("number of elements in block")?;
        let Some(per_element) = element_nodes(elem_type) else {
            return Err(sc.binary_error(format!(
                "element type {elem_type} is unknown, so its elements cannot be read"
            )));
        };
        let groups = raw
            .entity_groups
            .get(&(entity_dim, entity))
            .cloned()
            .unwrap_or_default();
        for _ in 0..count {
            let tag = sc.bin_size("element tag")?;
            node_tags.clear();
            for _ in 0..per_element {
                node_tags.push(sc.bin_size("node tag")?);
            }
            add_element(
                sc,
                raw,
                Element {
                    element: ElementRef {
                        tag,
                        line: header_line,
                    },
                    dim: entity_dim,
                    entity,
                    elem_type,
                    nodes: &node_tags,
                    groups: &groups,
                },
            )?;
        }
    }
    check_element_header(sc, raw, header_line, n_elements, Some((min_tag, max_tag)))
}

/// 2.2 ASCII `$Elements`: a count, then `tag type n_tags tags... nodes...` per line; the first
/// tag is the physical group (0: none), the second the elementary entity.
fn elements_22(sc: &mut Scanner, raw: &mut RawMesh) -> Result<(), MeshError> {
    let n_elements = sc.usize("number of elements")?;
    let header_line = sc.line();
    sc.rest_of_line()?;
    let mut numbers = Vec::new();
    for _ in 0..n_elements {
        let (tag_tok, line) = sc.expect("element tag")?;
        let parse = |sc: &Scanner, tok: &str| {
            tok.parse::<usize>().map_err(|_| {
                sc.error(
                    line,
                    format!("expected an unsigned integer in the element line, found '{tok}'"),
                )
            })
        };
        let tag = parse(sc, tag_tok)?;
        numbers.clear();
        for tok in sc.rest_of_line()? {
            numbers.push(parse(sc, tok)?);
        }
        let (elem_type, n_tags) = match numbers[..] {
            [t, n, ..] => (t, n),
            _ => {
                return Err(sc.error(
                    line,
                    format!("element {tag}: expected its type and number of tags"),
                ))
            }
        };
        let Some(tags) = numbers.get(2..2 + n_tags) else {
            return Err(sc.error(line, format!("element {tag}: fewer than {n_tags} tags")));
        };
        add_element_22(
            sc,
            raw,
            ElementRef { tag, line },
            elem_type,
            tags,
            &numbers[2 + n_tags..],
        )?;
    }
    check_element_header(sc, raw, header_line, n_elements, None)
}

/// 2.2 binary `$Elements`: a count (ASCII), then blocks of `int type, int count, int n_tags`
/// followed by `count` records of `int tag, int tags[n_tags], int nodes[...]`.
fn elements_22_binary(sc: &mut Scanner, raw: &mut RawMesh) -> Result<(), MeshError> {
    let header_line = sc.line();
    let n_elements = sc.usize("number of elements")?;
    sc.end_line();
    let mut read = 0;
    let mut record = Vec::new();
    while read < n_elements {
        let elem_type = sc.bin_u32("element type")?;
        let count = sc.bin_u32("number of elements in block")?;
        let n_tags = sc.bin_u32("number of tags")?;
        let Some(per_element) = element_nodes(elem_type) else {
            return Err(sc.binary_error(format!(
                "element type {elem_type} is unknown, so its elements cannot be read"
            )));
        };
        if count == 0 || count > n_elements - read {
            return Err(sc.binary_error(format!(
                "a block of {count} elements, with {} of the {n_elements} announced left",
                n_elements - read
            )));
        }
        for _ in 0..count {
            let tag = sc.bin_u32("element tag")?;
            record.clear();
            for _ in 0..n_tags + per_element {
                record.push(sc.bin_u32("element tag or node")?);
            }
            let element = ElementRef {
                tag,
                line: header_line,
            };
            add_element_22(
                sc,
                raw,
                element,
                elem_type,
                &record[..n_tags],
                &record[n_tags..],
            )?;
        }
        read += count;
    }
    check_element_header(sc, raw, header_line, n_elements, None)
}

/// An element of a 2.2 file: its physical group is its first tag, its entity its second.
fn add_element_22(
    sc: &Scanner,
    raw: &mut RawMesh,
    element: ElementRef,
    elem_type: usize,
    tags: &[usize],
    nodes: &[usize],
) -> Result<(), MeshError> {
    let Some(dim) = element_dim(elem_type) else {
        return Err(sc.error(
            element.line,
            format!(
                "element {} has type {elem_type}, which this reader does not know",
                element.tag
            ),
        ));
    };
    let group = tags.first().map_or(0, |&g| g as i64);
    let groups: &[i64] = if group != 0 { &[group] } else { &[] };
    add_element(
        sc,
        raw,
        Element {
            element,
            dim,
            entity: tags.get(1).map_or(0, |&e| e as i64),
            elem_type,
            nodes,
            groups,
        },
    )
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
