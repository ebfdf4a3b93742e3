//! Gmsh MSH 4.1 ASCII reader.
//!
//! Sections read: `$MeshFormat` (must come first; version 4.1, ASCII), `$PhysicalNames`,
//! `$Entities` (entity -> physical groups), `$Nodes`, `$Elements`. `$PartitionedEntities` is
//! rejected; any other section (`$Comments`, `$Periodic`, `$NodeData`, ...) is skipped.
//!
//! Result:
//! - cells: the hexahedra (type 5 or 12, one kind per file) in file order, converted to the
//!   lexicographic local order, their element tags kept in [`HexMesh::cell_tags`] for messages;
//!   any other volume element is an error;
//! - nodes: those used by the hexahedra, in `$Nodes` order (tags may be non-contiguous);
//! - physical groups, named by `$PhysicalNames` or else by their tag as a string:
//!   dimension 3 -> cell sets; dimension 2 -> face sets (each quadrangle matched to a cell face
//!   by its sorted corner nodes; an interior face goes to the lowest-numbered cell);
//!   dimensions 0 and 1 -> node sets (the nodes of their elements, of any type).
//!   Elements of entities below dimension 3 without a physical group are skipped.
//!
//! Every error names the line (and the element tag where one is involved). Counts in the file
//! are untrusted: no buffer is reserved beyond what the remaining text could hold, so a hostile
//! header is an error at the end of the text, never an allocation failure.

mod scanner;
mod sections;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::cell::{face_corner_local_nodes, CellFace, CellKind, Face};
use crate::error::MeshError;
use crate::hex_mesh::HexMesh;
use crate::ordering::{gather, NodeOrdering};
use scanner::Scanner;
use sections::RawMesh;

/// Reads and parses the MSH 4.1 ASCII file at `path`; errors are prefixed with the path.
pub fn read_gmsh(path: impl AsRef<Path>) -> Result<HexMesh, MeshError> {
    let path = path.as_ref();
    let text = std::fs::read(path).map_err(|error| MeshError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    // Invalid UTF-8 (binary data) becomes U+FFFD and fails as a bad token on its line; a
    // binary file is reported as such by its ASCII `$MeshFormat` line first.
    parse(&String::from_utf8_lossy(&text), &path.display().to_string())
}

/// Parses MSH 4.1 ASCII text; errors name the source as `<text>`.
pub fn parse_gmsh(text: &str) -> Result<HexMesh, MeshError> {
    parse(text, "<text>")
}

fn parse(text: &str, source_name: &str) -> Result<HexMesh, MeshError> {
    let mut sc = Scanner::new(text, source_name);
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
            "MeshFormat" => sections::mesh_format(&mut sc)?,
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
    mesh.cell_tags = Some(raw.cells.iter().map(|e| e.tag).collect());

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
        let face_of = face_lookup(&mesh);
        let mut face_sets: BTreeMap<String, Vec<CellFace>> = BTreeMap::new();
        for f in &raw.faces {
            let mut key = [0; 4];
            for (k, &tag) in key.iter_mut().zip(&f.corners) {
                *k = node_of_tag(tag, f.element)?;
            }
            key.sort_unstable();
            let Some(&cf) = face_of.get(&key) else {
                return Err(sc.error(
                    f.element.line,
                    format!(
                        "element {}: quadrangle of physical group '{}' is not a face of any \
                         hexahedron",
                        f.element.tag,
                        name(2, f.group)
                    ),
                ));
            };
            face_sets.entry(name(2, f.group)).or_default().push(cf);
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

/// Sorted corner nodes of every cell face -> that face (the lowest cell wins for interior faces).
fn face_lookup(mesh: &HexMesh) -> HashMap<[usize; 4], CellFace> {
    let corners: Vec<[usize; 4]> = Face::ALL
        .iter()
        .map(|&f| face_corner_local_nodes(mesh.kind, f))
        .collect();
    let mut map = HashMap::with_capacity(6 * mesh.n_cells());
    for cell in 0..mesh.n_cells() {
        let nodes = mesh.cell_nodes(cell);
        for (&face, local) in Face::ALL.iter().zip(&corners) {
            let mut key = local.map(|l| nodes[l]);
            key.sort_unstable();
            map.entry(key).or_insert(CellFace { cell, face });
        }
    }
    map
}
