//! The mesh container: coordinates, cell connectivity and named sets.

use std::collections::BTreeMap;

use rayon::prelude::*;

use crate::cell::{face_local_nodes, CellFace, CellKind};
use crate::error::MeshError;

/// A conforming mesh of hexahedra of one kind.
///
/// Invariants (checked by [`HexMesh::validate`], established by every constructor of this
/// crate): `cells.len() == n_cells * nodes_per_cell`, every node index is `< coords.len()`,
/// no cell repeats a node, cell-local order is lexicographic (ARCHITECTURE.md), node sets and
/// cell sets are sorted and unique, face sets are sorted and unique by `(cell, face)`,
/// `cell_tags` (when present) has one entry per cell.
#[derive(Debug, Clone, PartialEq)]
pub struct HexMesh {
    pub kind: CellKind,
    pub coords: Vec<[f64; 3]>,
    /// Flat connectivity, `kind.nodes_per_cell()` entries per cell.
    pub cells: Vec<usize>,
    /// Element tag of each cell in the file it was read from (set by the Gmsh reader), so that
    /// messages name elements as the user's mesh does; `None` for generated meshes.
    pub cell_tags: Option<ElementTags>,
    pub node_sets: BTreeMap<String, Vec<usize>>,
    pub face_sets: BTreeMap<String, Vec<CellFace>>,
    pub cell_sets: BTreeMap<String, Vec<usize>>,
    /// The numeric ids the source file gives its sets (Exodus II), so that the input can name a
    /// set by its id as well as by its name; empty for other meshes.
    pub set_ids: SetIds,
}

/// The numeric ids of a mesh's sets, by kind: id -> the name of the set in
/// [`HexMesh::node_sets`], [`HexMesh::face_sets`] or [`HexMesh::cell_sets`]. The kinds number
/// their sets independently (an Exodus node set, side set and element block may all be id 1).
/// Invariant: every name is a key of the map of its kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SetIds {
    pub node: BTreeMap<i64, String>,
    pub face: BTreeMap<i64, String>,
    pub cell: BTreeMap<i64, String>,
}

/// The first id of `ids` whose set is not in `sets`.
fn first_dangling<'a, T>(
    ids: &'a BTreeMap<i64, String>,
    sets: &BTreeMap<String, T>,
) -> Option<(&'a i64, &'a String)> {
    ids.iter().find(|(_, name)| !sets.contains_key(*name))
}

/// The id a set reference `key` is, if it is a number (`"12"`, `" 12"` is not).
fn parse_id(key: &str) -> Option<i64> {
    key.parse().ok()
}

impl HexMesh {
    /// A mesh without named sets or element tags; call [`HexMesh::validate`] on untrusted input.
    pub fn new(kind: CellKind, coords: Vec<[f64; 3]>, cells: Vec<usize>) -> Self {
        HexMesh {
            kind,
            coords,
            cells,
            cell_tags: None,
            node_sets: BTreeMap::new(),
            face_sets: BTreeMap::new(),
            cell_sets: BTreeMap::new(),
            set_ids: SetIds::default(),
        }
    }

    pub fn n_nodes(&self) -> usize {
        self.coords.len()
    }

    pub fn n_cells(&self) -> usize {
        self.cells.len() / self.kind.nodes_per_cell()
    }

    /// Polynomial order of the cells (1 or 2).
    pub fn order(&self) -> usize {
        self.kind.order()
    }

    pub fn nodes_per_cell(&self) -> usize {
        self.kind.nodes_per_cell()
    }

    /// Global nodes of cell `c` in lexicographic local order. Panics if `c >= n_cells()`.
    pub fn cell_nodes(&self, c: usize) -> &[usize] {
        let npc = self.kind.nodes_per_cell();
        &self.cells[c * npc..(c + 1) * npc]
    }

    /// Cell `c` as messages name it: `"Gmsh element <tag> (cell c)"` for a cell read from a file,
    /// `"cell c"` otherwise (see [`cell_name`]).
    pub fn describe_cell(&self, c: usize) -> String {
        cell_name(self.cell_tags.as_ref(), c)
    }

    /// Global nodes of a cell face, in the face's tensor order.
    pub fn face_nodes(&self, cf: CellFace) -> Vec<usize> {
        let nodes = self.cell_nodes(cf.cell);
        face_local_nodes(self.kind, cf.face)
            .into_iter()
            .map(|l| nodes[l])
            .collect()
    }

    /// The name of the set that the input's `key` refers to: `key` itself when a set of any kind
    /// is named so, else the set whose id `key` is (node sets first, then face sets, then cell
    /// sets), else `key` (which then names no set).
    pub fn set_name<'a>(&'a self, key: &'a str) -> &'a str {
        let named = self.node_sets.contains_key(key)
            || self.face_sets.contains_key(key)
            || self.cell_sets.contains_key(key);
        if named {
            return key;
        }
        parse_id(key)
            .and_then(|id| {
                [&self.set_ids.node, &self.set_ids.face, &self.set_ids.cell]
                    .into_iter()
                    .find_map(|ids| ids.get(&id))
            })
            .map_or(key, String::as_str)
    }

    /// The name of the node set `key` names or is the id of.
    fn node_set_name<'a>(&'a self, key: &'a str) -> Option<&'a str> {
        resolve(&self.node_sets, &self.set_ids.node, key)
    }

    /// The name of the face set `key` names or is the id of.
    fn face_set_name<'a>(&'a self, key: &'a str) -> Option<&'a str> {
        resolve(&self.face_sets, &self.set_ids.face, key)
    }

    /// Sorted unique nodes of the node set `key`, or else of the face set `key`: by name first
    /// (a node set, then a face set), then by id (the same order).
    pub fn set_nodes(&self, key: &str) -> Result<Vec<usize>, MeshError> {
        let by_name = self.node_sets.contains_key(key) || self.face_sets.contains_key(key);
        let (node_set, face_set) = if by_name {
            (
                self.node_sets.get(key),
                self.face_sets.get(key).map(Vec::as_slice),
            )
        } else {
            let node_set = self
                .node_set_name(key)
                .and_then(|name| self.node_sets.get(name));
            (node_set, self.face_set(key).ok())
        };
        if let Some(nodes) = node_set {
            return Ok(nodes.clone());
        }
        if let Some(faces) = face_set {
            let mut nodes: Vec<usize> = faces.iter().flat_map(|&cf| self.face_nodes(cf)).collect();
            nodes.sort_unstable();
            nodes.dedup();
            return Ok(nodes);
        }
        let mut names = described(&self.node_sets, &self.set_ids.node);
        names.extend(described(&self.face_sets, &self.set_ids.face));
        names.sort_unstable();
        names.dedup();
        Err(unknown_set("node/face", key, &names))
    }

    /// The faces of the face set `key` (its name, or its id).
    pub fn face_set(&self, key: &str) -> Result<&[CellFace], MeshError> {
        match self
            .face_set_name(key)
            .and_then(|name| self.face_sets.get(name))
        {
            Some(faces) => Ok(faces),
            None => Err(unknown_set(
                "face",
                key,
                &described(&self.face_sets, &self.set_ids.face),
            )),
        }
    }

    /// Sorted cells of the cell set `key` (its name, or its id); `"all"` is every cell unless a
    /// set of that name exists.
    pub fn cell_set(&self, key: &str) -> Result<Vec<usize>, MeshError> {
        if let Some(cells) = resolve(&self.cell_sets, &self.set_ids.cell, key)
            .and_then(|name| self.cell_sets.get(name))
        {
            return Ok(cells.clone());
        }
        if key == "all" {
            return Ok((0..self.n_cells()).collect());
        }
        let mut names = described(&self.cell_sets, &self.set_ids.cell);
        if !self.cell_sets.contains_key("all") {
            names.push("all".to_string());
        }
        Err(unknown_set("cell", key, &names))
    }

    /// Checks the invariants listed on [`HexMesh`].
    pub fn validate(&self) -> Result<(), MeshError> {
        let npc = self.kind.nodes_per_cell();
        let n_nodes = self.n_nodes();
        if self.n_cells() * npc != self.cells.len() {
            return Err(MeshError::Invalid(format!(
                "connectivity length {} is not a multiple of {npc} ({:?})",
                self.cells.len(),
                self.kind
            )));
        }
        if let Some(p) = self
            .coords
            .iter()
            .position(|x| x.iter().any(|v| !v.is_finite()))
        {
            return Err(MeshError::Invalid(format!(
                "node {p} has a non-finite coordinate"
            )));
        }
        if let Some(tags) = &self.cell_tags {
            if tags.len() != self.n_cells() {
                return Err(MeshError::Invalid(format!(
                    "{} element tags for {} cells",
                    tags.len(),
                    self.n_cells()
                )));
            }
        }
        // every cell's nodes in range and distinct; the first failing cell in cell order is
        // named, whatever the thread schedule
        let cell_error = |c: usize| -> Option<MeshError> {
            let nodes = self.cell_nodes(c);
            if let Some(&bad) = nodes.iter().find(|&&n| n >= n_nodes) {
                return Some(MeshError::Invalid(format!(
                    "{} references node {bad}, but the mesh has {n_nodes} nodes",
                    self.describe_cell(c)
                )));
            }
            let mut sorted = [0usize; fem::reference::MAX_NODES];
            let sorted = &mut sorted[..nodes.len()];
            sorted.copy_from_slice(nodes);
            sorted.sort_unstable();
            let w = sorted.windows(2).find(|w| w[0] == w[1])?;
            Some(MeshError::Invalid(format!(
                "{} repeats node {}",
                self.describe_cell(c),
                w[0]
            )))
        };
        if let Some(e) = (0..self.n_cells())
            .into_par_iter()
            .with_min_len(1 << 12)
            .find_map_first(cell_error)
        {
            return Err(e);
        }
        for (name, nodes) in &self.node_sets {
            check_sorted_in_range(nodes, n_nodes, &format!("node set '{name}'"))?;
        }
        for (name, cells) in &self.cell_sets {
            check_sorted_in_range(cells, self.n_cells(), &format!("cell set '{name}'"))?;
        }
        let dangling = [
            ("node", first_dangling(&self.set_ids.node, &self.node_sets)),
            ("face", first_dangling(&self.set_ids.face, &self.face_sets)),
            ("cell", first_dangling(&self.set_ids.cell, &self.cell_sets)),
        ];
        if let Some((kind, Some((id, name)))) = dangling.into_iter().find(|(_, d)| d.is_some()) {
            return Err(MeshError::Invalid(format!(
                "{kind} set id {id} refers to '{name}', which is no {kind} set"
            )));
        }
        for (name, faces) in &self.face_sets {
            if faces.windows(2).any(|w| w[0] >= w[1]) {
                return Err(MeshError::Invalid(format!(
                    "face set '{name}' is not sorted and unique"
                )));
            }
            if let Some(cf) = faces.iter().find(|cf| cf.cell >= self.n_cells()) {
                return Err(MeshError::Invalid(format!(
                    "face set '{name}' references cell {}, but the mesh has {} cells",
                    cf.cell,
                    self.n_cells()
                )));
            }
        }
        Ok(())
    }
}

/// The element numbers of the file a mesh was read from (one per cell, in cell order) and the
/// file's format, so that messages name cells as the user's mesh does (`Abaqus element 81`).
/// Dereferences to the numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElementTags {
    /// The format's name as messages say it: `Gmsh`, `Exodus`, `Abaqus`.
    pub format: &'static str,
    pub tags: Vec<usize>,
}

impl ElementTags {
    pub fn new(format: &'static str, tags: Vec<usize>) -> Self {
        Self { format, tags }
    }

    /// Tags of a Gmsh file.
    pub fn gmsh(tags: Vec<usize>) -> Self {
        Self::new("Gmsh", tags)
    }
}

impl std::ops::Deref for ElementTags {
    type Target = [usize];
    fn deref(&self) -> &[usize] {
        &self.tags
    }
}

/// Cell `c` as messages name it, given the source file's element tags (one per cell):
/// `"<format> element <tag> (cell c)"`, or `"cell c"` without tags (or for a `c` they do not
/// cover). For code that keeps the tags but not the mesh, such as an assembler reporting a
/// failure.
pub fn cell_name(tags: Option<&ElementTags>, c: usize) -> String {
    part_cell_name(tags, c, c as u64)
}

/// Cell `c` of a mesh part ([`crate::MeshPart`]) as the whole mesh's messages name it: the tag
/// of local cell `c` (a part keeps the file's tags) and its number `serial` in the whole mesh
/// ([`crate::MeshPart::cell_serial_ids`]): the name a serial run gives the same cell.
pub fn part_cell_name(tags: Option<&ElementTags>, c: usize, serial: u64) -> String {
    match tags.and_then(|t| t.get(c).map(|tag| (t.format, tag))) {
        Some((format, tag)) => format!("{format} element {tag} (cell {serial})"),
        None => format!("cell {serial}"),
    }
}

fn check_sorted_in_range(items: &[usize], bound: usize, what: &str) -> Result<(), MeshError> {
    if items.windows(2).any(|w| w[0] >= w[1]) {
        return Err(MeshError::Invalid(format!(
            "{what} is not sorted and unique"
        )));
    }
    match items.last() {
        Some(&last) if last >= bound => Err(MeshError::Invalid(format!(
            "{what} references index {last}, but only {bound} exist"
        ))),
        _ => Ok(()),
    }
}

/// The name of the set in `sets` that `key` names, or else whose id (in `ids`) it is.
fn resolve<'a, T>(
    sets: &'a BTreeMap<String, T>,
    ids: &'a BTreeMap<i64, String>,
    key: &'a str,
) -> Option<&'a str> {
    if sets.contains_key(key) {
        return Some(key);
    }
    parse_id(key)
        .and_then(|id| ids.get(&id))
        .map(String::as_str)
}

/// The sets of `sets` as error messages list them: `name`, or `name (id 12)` for a set with an
/// id other than its name.
fn described<T>(sets: &BTreeMap<String, T>, ids: &BTreeMap<i64, String>) -> Vec<String> {
    sets.keys()
        .map(|name| {
            let own: Vec<String> = ids
                .iter()
                .filter(|(id, n)| *n == name && id.to_string() != *name)
                .map(|(id, _)| id.to_string())
                .collect();
            match own.as_slice() {
                [] => name.clone(),
                [id] => format!("{name} (id {id})"),
                more => format!("{name} (ids {})", more.join(", ")),
            }
        })
        .collect()
}

fn unknown_set(kind: &'static str, name: &str, names: &[String]) -> MeshError {
    MeshError::UnknownSet {
        kind,
        name: name.to_string(),
        available: if names.is_empty() {
            "(none)".to_string()
        } else {
            names.join(", ")
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::Face;

    /// Two Q1 cells sharing the face x = 1.
    fn two_cells() -> HexMesh {
        let mut coords = Vec::new();
        for k in 0..2 {
            for j in 0..2 {
                for i in 0..3 {
                    coords.push([i as f64, j as f64, k as f64]);
                }
            }
        }
        let cell = |o: usize| vec![o, o + 1, o + 3, o + 4, o + 6, o + 7, o + 9, o + 10];
        let cells = [cell(0), cell(1)].concat();
        let mut mesh = HexMesh::new(CellKind::Hex8, coords, cells);
        mesh.face_sets.insert(
            "right".into(),
            vec![CellFace {
                cell: 1,
                face: Face::XMax,
            }],
        );
        mesh.node_sets.insert("origin".into(), vec![0]);
        mesh
    }

    #[test]
    fn accessors_and_sets() {
        let mesh = two_cells();
        mesh.validate().unwrap();
        assert_eq!((mesh.n_nodes(), mesh.n_cells(), mesh.order()), (12, 2, 1));
        assert_eq!(mesh.cell_nodes(1), [1, 2, 4, 5, 7, 8, 10, 11]);
        assert_eq!(mesh.set_nodes("right").unwrap(), [2, 5, 8, 11]);
        assert_eq!(mesh.set_nodes("origin").unwrap(), [0]);
        assert_eq!(mesh.cell_set("all").unwrap(), [0, 1]);
        let err = mesh.set_nodes("left").unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown node/face set 'left'; available: origin, right"
        );
        let err = mesh.cell_set("body").unwrap_err().to_string();
        assert_eq!(err, "unknown cell set 'body'; available: all");
    }

    #[test]
    fn cells_are_named_by_their_element_tags() {
        let mut mesh = two_cells();
        assert_eq!(mesh.cell_tags, None);
        assert_eq!(mesh.describe_cell(1), "cell 1");
        mesh.cell_tags = Some(ElementTags::gmsh(vec![41, 42]));
        mesh.validate().unwrap();
        assert_eq!(mesh.describe_cell(1), "Gmsh element 42 (cell 1)");
        assert_eq!(mesh.describe_cell(0), "Gmsh element 41 (cell 0)");
        assert_eq!(
            cell_name(Some(&ElementTags::gmsh(vec![41, 42])), 7),
            "cell 7"
        );
        assert_eq!(
            cell_name(Some(&ElementTags::new("Abaqus", vec![81])), 0),
            "Abaqus element 81 (cell 0)"
        );
        // a part's local cell 1 is the whole mesh's cell 5: the tag of the local cell, the
        // serial number
        let tags = ElementTags::gmsh(vec![41, 42]);
        assert_eq!(
            part_cell_name(Some(&tags), 1, 5),
            "Gmsh element 42 (cell 5)"
        );
        assert_eq!(part_cell_name(None, 1, 5), "cell 5");
    }

    #[test]
    fn validate_rejects_broken_meshes() {
        let mut mesh = two_cells();
        mesh.cells[3] = 99;
        let err = mesh.validate().unwrap_err().to_string();
        assert!(err.contains("cell 0 references node 99"), "{err}");

        let mut mesh = two_cells();
        mesh.cells[9] = mesh.cells[8];
        let err = mesh.validate().unwrap_err().to_string();
        assert!(err.contains("cell 1 repeats node 1"), "{err}");

        let mut mesh = two_cells();
        mesh.cells.pop();
        assert!(mesh.validate().is_err());

        let mut mesh = two_cells();
        mesh.cell_tags = Some(ElementTags::gmsh(vec![41, 42]));
        mesh.cells[9] = mesh.cells[8];
        let err = mesh.validate().unwrap_err().to_string();
        assert!(
            err.contains("Gmsh element 42 (cell 1) repeats node 1"),
            "{err}"
        );

        let mut mesh = two_cells();
        mesh.cell_tags = Some(ElementTags::gmsh(vec![41]));
        let err = mesh.validate().unwrap_err().to_string();
        assert_eq!(err, "invalid mesh: 1 element tags for 2 cells");

        let mut mesh = two_cells();
        mesh.node_sets.insert("bad".into(), vec![3, 2]);
        assert!(mesh
            .validate()
            .unwrap_err()
            .to_string()
            .contains("node set 'bad'"));

        let mut mesh = two_cells();
        mesh.face_sets.get_mut("right").unwrap()[0].cell = 5;
        assert!(mesh
            .validate()
            .unwrap_err()
            .to_string()
            .contains("references cell 5"));
    }
}
