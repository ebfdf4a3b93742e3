//! Gmsh MSH reader: versions 4.1 and 2.2, ASCII or binary, optionally gzip-compressed.
//!
//! Sections read: `$MeshFormat` (must come first), `$PhysicalNames`, `$Entities` (4.1: entity ->
//! physical groups), `$Nodes`, `$Elements` (2.2: each element's first tag is its physical group).
//! `$PartitionedEntities` is rejected; any other section (`$Comments`, `$Periodic`, `$NodeData`,
//! ...) is skipped.
//!
//! Result:
//! - cells: the hexahedra (type 5 or 12, one kind per file) in file order, converted to the
//!   lexicographic local order, their element tags kept in [`HexMesh::cell_tags`] for messages;
//!   any other volume element is an error, reported before any error about surface elements;
//! - nodes: those used by the hexahedra, in `$Nodes` order (tags may be non-contiguous);
//! - physical groups, named by `$PhysicalNames` or else by their tag as a string:
//!   dimension 3 -> cell sets; dimension 2 -> face sets (each quadrangle matched to a boundary
//!   face of a hexahedron by its sorted corner nodes); dimensions 0 and 1 -> node sets (the nodes
//!   of their elements, of any type). Elements of entities below dimension 3 without a physical
//!   group are skipped.
//!
//! Refused, naming the elements: an element tag used twice, two hexahedra with the same corner
//! nodes (a mesh listed twice would double the stiffness), header counts or tag ranges that do
//! not match the content, set nodes that belong to no hexahedron, quadrangles of face sets that
//! are no face of a hexahedron or an interior face (shared by two), faces shared by more than two
//! hexahedra. Every error names the line (binary data: the section's line and the byte offset)
//! and the element tag where one is involved, and physical groups by name. Counts in the file are
//! untrusted: no buffer is reserved beyond what the remaining bytes could hold, so a hostile
//! header is an error at the end of the data, never an allocation failure; a compressed file may
//! expand to at most [`gzip_inflate_limit`] of its size (64 times it plus 1 GiB, at most
//! [`MAX_MSH_BYTES`]).

mod scanner;
mod sections;

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::Path;

use crate::cell::{face_corner_local_nodes, CellFace, CellKind, Face};
use crate::error::MeshError;
use crate::hex_mesh::{ElementTags, HexMesh};
use crate::ordering::{gather, NodeOrdering};
use scanner::Scanner;
use sections::RawMesh;

/// Largest MSH content read (after decompression): 16 GiB.
pub const MAX_MSH_BYTES: u64 = 16 << 30;

/// A gzip-compressed MSH file may inflate to at most this many times its compressed size plus
/// [`GZIP_ALLOWANCE`] (see [`gzip_inflate_limit`]). Generous for meshes (ASCII MSH compresses
/// about 3 to 6 times, binary 2 to 3); a gzip bomb inflates up to about 1000 times.
pub const GZIP_RATIO: u64 = 64;

/// What any gzip-compressed MSH file may inflate to beyond [`GZIP_RATIO`] times its size: 1 GiB.
pub const GZIP_ALLOWANCE: u64 = 1 << 30;

/// The most bytes a gzip file of `compressed` bytes is inflated to:
/// `GZIP_RATIO * compressed + GZIP_ALLOWANCE`, at most [`MAX_MSH_BYTES`].
pub fn gzip_inflate_limit(compressed: u64) -> u64 {
    compressed
        .saturating_mul(GZIP_RATIO)
        .saturating_add(GZIP_ALLOWANCE)
        .min(MAX_MSH_BYTES)
}

/// Reads and parses the MSH file at `path` (gzip-compressed if it starts with the gzip magic
/// bytes, then inflated to at most [`gzip_inflate_limit`] of its size); errors are prefixed with
/// the path.
pub fn read_gmsh(path: impl AsRef<Path>) -> Result<HexMesh, MeshError> {
    read(path.as_ref(), gzip_inflate_limit)
}

/// [`read_gmsh`] with a gzip-compressed file inflated to at most `limit` bytes (an uncompressed
/// file is read as it is).
pub fn read_gmsh_with_inflate_limit(
    path: impl AsRef<Path>,
    limit: u64,
) -> Result<HexMesh, MeshError> {
    read(path.as_ref(), |_| limit)
}

/// Reads and parses the MSH file at `path`, a gzip-compressed one inflated to at most
/// `limit(compressed size)` bytes.
fn read(path: &Path, limit: impl Fn(u64) -> u64) -> Result<HexMesh, MeshError> {
    let bytes = std::fs::read(path).map_err(|error| MeshError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    let name = path.display().to_string();
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let text = inflate(&bytes, limit(bytes.len() as u64), &name)?;
        return parse(&text, &format!("{name} (decompressed)"));
    }
    parse(&bytes, &name)
}

/// The gzip data `bytes` of the file `name` inflated; an error once more than `limit` bytes
/// come out (nothing beyond `limit + 1` bytes is held).
fn inflate(bytes: &[u8], limit: u64, name: &str) -> Result<Vec<u8>, MeshError> {
    let error = |message: String| MeshError::Gmsh {
        source_name: name.to_owned(),
        line: 0,
        message,
    };
    let mut text = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .take(limit.saturating_add(1))
        .read_to_end(&mut text)
        .map_err(|e| error(format!("cannot decompress the gzip file: {e}")))?;
    if text.len() as u64 > limit {
        return Err(error(format!(
            "the gzip file of {} bytes decompresses to more than {limit} bytes, the most read ({GZIP_RATIO} times the compressed size plus {GZIP_ALLOWANCE}, at most {MAX_MSH_BYTES}): a gzip bomb or a corrupt file; a genuine mesh can be decompressed (gunzip) and read as it is",
            bytes.len()
        )));
    }
    Ok(text)
}

/// Parses MSH text (or bytes of a binary file); errors name the source as `<text>`.
pub fn parse_gmsh(text: &str) -> Result<HexMesh, MeshError> {
    parse(text.as_bytes(), "<text>")
}

/// Parses MSH bytes (any version and encoding this reader supports).
pub fn parse_gmsh_bytes(bytes: &[u8]) -> Result<HexMesh, MeshError> {
    parse(bytes, "<bytes>")
}

fn parse(bytes: &[u8], source_name: &str) -> Result<HexMesh, MeshError> {
    let mut sc = Scanner::new(bytes, source_name);
    let mut raw = RawMesh::default();
    let mut seen: Vec<&str> = Vec::new();
    while let Some((tok, line)) = sc.next_token()? {
        let Some(section) = tok.strip_prefix('$') else {
            return Err(sc.error(
                line,
                format!("expected a section header such as $Nodes, found '{tok}'"),
            ));
        };
        if seen.is_empty() && section != "MeshFormat" {
            return Err(sc.error(line, format!("expected $MeshFormat first, found '{tok}'")));
        }
        if seen.contains(&section) {
            return Err(sc.error(line, format!("section ${section} appears twice")));
        }
        seen.push(section);
        sc.section = section;
        let end = format!("$End{section}");
        match section {
            "MeshFormat" => sections::mesh_format(&mut sc, &mut raw)?,
            "PhysicalNames" => sections::physical_names(&mut sc, &mut raw)?,
            "Entities" => sections::entities(&mut sc, &mut raw)?,
            "Nodes" => sections::nodes(&mut sc, &mut raw)?,
            "Elements" => sections::elements(&mut sc, &mut raw)?,
            "PartitionedEntities" => {
                return Err(sc.error(line, "partitioned meshes are not supported"))
            }
            _ => {
                sc.skip_past(&end)?;
                continue;
            }
        }
        let (closing, close_line) = sc.expect(&end)?;
        if closing != end {
            return Err(sc.error(
                close_line,
                format!("expected {end}, found '{closing}' (wrong count in ${section}?)"),
            ));
        }
    }
    for required in ["MeshFormat", "Nodes", "Elements"] {
        if !seen.contains(&required) {
            return Err(sc.error(sc.line(), format!("missing section ${required}")));
        }
    }
    if raw.kind.is_none() {
        return Err(sc.error(
            raw.elements_line,
            "no hexahedra (element types 5 or 12) in $Elements",
        ));
    }
    if let Some(deferred) = raw.deferred.take() {
        return Err(deferred);
    }
    build(&sc, raw)
}

/// Renumbers nodes, converts cells to lexicographic order and resolves the physical groups.
fn build(sc: &Scanner, raw: RawMesh) -> Result<HexMesh, MeshError> {
    let Some((kind, _)) = raw.kind else {
        return Err(sc.error(
            raw.elements_line,
            "no hexahedra (element types 5 or 12) in $Elements",
        ));
    };
    check_duplicate_cells(sc, &raw, kind)?;

    // Node tag -> position in $Nodes.
    let mut tag_to_pos: HashMap<usize, usize> = HashMap::with_capacity(raw.node_tags.len());
    for (pos, &tag) in raw.node_tags.iter().enumerate() {
        if tag_to_pos.insert(tag, pos).is_some() {
            return Err(sc.error(raw.node_lines[pos], format!("node tag {tag} defined twice")));
        }
    }

    // Keep the nodes used by hexahedra, in $Nodes order.
    let npc = kind.nodes_per_cell();
    let mut cell_pos = Vec::with_capacity(raw.cell_nodes.len());
    for (c, nodes) in raw.cell_nodes.chunks_exact(npc).enumerate() {
        for tag in nodes {
            let Some(&pos) = tag_to_pos.get(tag) else {
                let e = raw.cells[c];
                return Err(sc.error(
                    e.line,
                    format!(
                        "element {} references node {tag}, which is not in $Nodes",
                        e.tag
                    ),
                ));
            };
            cell_pos.push(pos);
        }
    }
    const UNUSED: usize = usize::MAX;
    let mut new_index = vec![UNUSED; raw.node_tags.len()];
    for &pos in &cell_pos {
        new_index[pos] = 0;
    }
    let mut coords = Vec::new();
    for (pos, idx) in new_index.iter_mut().enumerate() {
        if *idx != UNUSED {
            *idx = coords.len();
            coords.push(raw.node_coords[pos]);
        }
    }
    let node_of_tag = |tag: usize, e: sections::ElementRef| -> Result<usize, MeshError> {
        match tag_to_pos.get(&tag).map(|&p| new_index[p]) {
            Some(i) if i != UNUSED => Ok(i),
            Some(_) => Err(sc.error(
                e.line,
                format!(
                    "element {}: node {tag} is not a node of any hexahedron",
                    e.tag
                ),
            )),
            None => Err(sc.error(
                e.line,
                format!(
                    "element {} references node {tag}, which is not in $Nodes",
                    e.tag
                ),
            )),
        }
    };

    let to_lex = match kind {
        CellKind::Hex8 => NodeOrdering::GmshHex8,
        CellKind::Hex27 => NodeOrdering::GmshHex27,
    }
    .to_lexicographic();
    let mut cells = Vec::with_capacity(cell_pos.len());
    for gmsh_cell in cell_pos.chunks_exact(npc) {
        cells.extend(gather(gmsh_cell, &to_lex).into_iter().map(|p| new_index[p]));
    }
    let mut mesh = HexMesh::new(kind, coords, cells);
    mesh.cell_tags = Some(ElementTags::gmsh(raw.cells.iter().map(|e| e.tag).collect()));

    let group_name = |dim: usize, group: i64| raw.group_names(dim, &[group]);
    let name = |dim: usize, group: i64| -> String {
        raw.physical_names
            .get(&(dim, group))
            .cloned()
            .unwrap_or_else(|| group.to_string())
    };

    let mut cell_sets: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for &(group, cell) in &raw.cell_groups {
        cell_sets.entry(name(3, group)).or_default().push(cell);
    }

    if !raw.faces.is_empty() {
        let faces = face_lookup(&mesh);
        let element_of = |cell: usize| raw.cells[cell].tag;
        if let Some(shared) = faces.values().find(|f| f.len() > 2) {
            let tags: Vec<String> = shared
                .iter()
                .map(|f| element_of(f.cell).to_string())
                .collect();
            return Err(sc.error(
                raw.cells[shared[0].cell].line,
                format!(
                    "the mesh is not manifold: elements {} share one face",
                    tags.join(", ")
                ),
            ));
        }
        let mut face_sets: BTreeMap<String, Vec<CellFace>> = BTreeMap::new();
        for f in &raw.faces {
            let mut key = [0; 4];
            for (k, &tag) in key.iter_mut().zip(&f.corners) {
                *k = node_of_tag(tag, f.element)?;
            }
            key.sort_unstable();
            let cells = faces.get(&key).map_or(&[][..], Vec::as_slice);
            match cells {
                [cf] => face_sets.entry(name(2, f.group)).or_default().push(*cf),
                [] => {
                    return Err(sc.error(
                        f.element.line,
                        format!(
                            "element {}: quadrangle of physical group {} is not a face of any \
                             hexahedron",
                            f.element.tag,
                            group_name(2, f.group)
                        ),
                    ))
                }
                [a, b, ..] => {
                    return Err(sc.error(
                        f.element.line,
                        format!(
                            "element {}: quadrangle of physical group {} is an interior face \
                             (between elements {} and {}); face sets must lie on the boundary",
                            f.element.tag,
                            group_name(2, f.group),
                            element_of(a.cell),
                            element_of(b.cell)
                        ),
                    ))
                }
            }
        }
        mesh.face_sets = face_sets;
    }

    let mut node_sets: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for &(dim, group, tag, e) in &raw.node_groups {
        node_sets
            .entry(name(dim, group))
            .or_default()
            .push(node_of_tag(tag, e)?);
    }

    for v in cell_sets.values_mut().chain(node_sets.values_mut()) {
        v.sort_unstable();
        v.dedup();
    }
    for v in mesh.face_sets.values_mut() {
        v.sort_unstable();
        v.dedup();
    }
    mesh.cell_sets = cell_sets;
    mesh.node_sets = node_sets;
    mesh.validate()?;
    Ok(mesh)
}

/// Sorted corner nodes of every cell face -> the cell faces with those corners (one on the
/// boundary, two inside).
fn face_lookup(mesh: &HexMesh) -> HashMap<[usize; 4], Vec<CellFace>> {
    let corners: Vec<[usize; 4]> = Face::ALL
        .iter()
        .map(|&f| face_corner_local_nodes(mesh.kind, f))
        .collect();
    let mut map: HashMap<[usize; 4], Vec<CellFace>> = HashMap::with_capacity(6 * mesh.n_cells());
    for cell in 0..mesh.n_cells() {
        let nodes = mesh.cell_nodes(cell);
        for (&face, local) in Face::ALL.iter().zip(&corners) {
            let mut key = local.map(|l| nodes[l]);
            key.sort_unstable();
            map.entry(key).or_default().push(CellFace { cell, face });
        }
    }
    map
}

/// Two hexahedra with the same corner nodes (an element listed twice under two tags) would add
/// their stiffness twice: an error naming both.
fn check_duplicate_cells(sc: &Scanner, raw: &RawMesh, kind: CellKind) -> Result<(), MeshError> {
    let npc = kind.nodes_per_cell();
    let mut seen: HashMap<[usize; 8], usize> = HashMap::with_capacity(raw.cells.len());
    for (c, nodes) in raw.cell_nodes.chunks_exact(npc).enumerate() {
        // Gmsh lists the 8 corners first for both hexahedron types.
        let mut key: [usize; 8] = nodes[..8].try_into().expect("8 corners");
        key.sort_unstable();
        if let Some(&first) = seen.get(&key) {
            let (a, b) = (raw.cells[first], raw.cells[c]);
            return Err(sc.error(
                b.line,
                format!(
                    "elements {} (line {}) and {} have the same corner nodes: the hexahedron is \
                     listed twice",
                    a.tag, a.line, b.tag
                ),
            ));
        }
        seen.insert(key, c);
    }
    Ok(())
}
