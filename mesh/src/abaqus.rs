//! Abaqus input (`.inp`) reader: the mesh and its sets.
//!
//! Keywords are case-insensitive; `**` starts a comment line; a keyword or data line ending in a
//! comma continues on the next line (element node lists may wrap anywhere). Read:
//! - `*NODE` (optional `NSET=`): `id, x, y, z`;
//! - `*ELEMENT, TYPE=...` (optional `ELSET=`): C3D8, C3D8R, C3D8H, C3D8I, C3D8RH (8 nodes) and
//!   C3D27, C3D27R, C3D27H, C3D27RH (27 nodes) are the cells, one node count per file (the
//!   letters after the node count choose Abaqus formulations; hexfem's own element is used).
//!   Quadrilateral surface elements (S4, S4R, CPS4, CPE4, M3D4, SFM3D4, R3D4 and their 8/9-node
//!   versions) are read as faces and line elements (T3D2, T3D3, B31, B32) as node lists, for the
//!   element sets that name them (Gmsh exports physical surfaces that way);
//! - `*NSET, NSET=` and `*ELSET, ELSET=` (data: ids or names of sets read before; `GENERATE`:
//!   `first, last[, step]`): node sets; an element set becomes a cell set (its hexahedra), a
//!   face set (its surface elements, each matched to a boundary face) and a node set (the nodes
//!   of its line elements), each where it has any;
//! - `*SURFACE, NAME=, TYPE=ELEMENT` (the default type): `element or element set, S1..S6`: a
//!   face set; Abaqus faces by [`crate::ordering::ABAQUS_HEX_FACES`];
//! - `*PART`, `*ASSEMBLY`, `*INSTANCE`: one part with one instance without a placement (or a
//!   flat file without parts).
//!
//! Refused, naming line and column: C3D20 and other element types; keywords that change the
//! mesh without listing it (`*NCOPY`, `*NFILL`, `*NGEN`, `*NMAP`, `*ELGEN`, `*ELCOPY`,
//! `*INCLUDE`, `*PARAMETER`, `*SYSTEM`, `*NODE` with `SYSTEM=` or `INPUT=`); several instances;
//! ids defined twice; unknown nodes, elements or sets. Every other keyword (materials, steps,
//! loads, output) is skipped with its data.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::cell::{CellFace, CellKind};
use crate::error::MeshError;
use crate::foreign::{build, face_sharing, BuildError, RawHexMesh};
use crate::hex_mesh::{ElementTags, HexMesh, SetIds};
use crate::ordering::{gather, side_face, NodeOrdering, ABAQUS_HEX_FACES};

/// Reads the Abaqus input file at `path`.
pub fn read_abaqus(path: impl AsRef<Path>) -> Result<HexMesh, MeshError> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|error| MeshError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    parse_abaqus_bytes(&bytes, &path.display().to_string())
}

/// Parses Abaqus input text; errors name the source as `<text>`.
pub fn parse_abaqus(text: &str) -> Result<HexMesh, MeshError> {
    parse_abaqus_bytes(text.as_bytes(), "<text>")
}

/// Parses the bytes of an Abaqus input file; errors name the source as `source_name`.
pub fn parse_abaqus_bytes(bytes: &[u8], source_name: &str) -> Result<HexMesh, MeshError> {
    let text = String::from_utf8_lossy(bytes);
    let mut reader = Reader {
        source_name,
        ..Reader::default()
    };
    reader.read(&text)?;
    reader.finish()
}

/// A place in the file: 1-based line and column.
#[derive(Debug, Clone, Copy, Default)]
struct Loc {
    line: usize,
    column: usize,
}

/// What an element is to the mesh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Cell(CellKind),
    /// A quadrilateral surface element: its first four nodes are the corners.
    Face,
    /// A line element: its nodes.
    Line,
}

#[derive(Debug)]
struct Element {
    role: Role,
    nodes: Vec<i64>,
    loc: Loc,
}

/// One face of a surface: `(element id, face 1..=6, where)`.
type SurfaceFace = (i64, usize, Loc);

/// A logical line: its text (continuations joined) and, for each physical line in it, the
/// offset in the text where it starts and its line number.
#[derive(Debug, Default)]
struct LogicalLine {
    text: String,
    pieces: Vec<(usize, usize)>,
}

#[derive(Debug, Default)]
struct Reader<'s> {
    source_name: &'s str,
    node_pos: HashMap<i64, usize>,
    coords: Vec<[f64; 3]>,
    elements: HashMap<i64, Element>,
    /// Cell element ids in file order.
    cell_ids: Vec<i64>,
    kind: Option<(CellKind, Loc)>,
    /// Sets by upper-case name: `(name as first written, ids, where defined)`.
    nsets: BTreeMap<String, (String, Vec<i64>, Loc)>,
    elsets: BTreeMap<String, (String, Vec<i64>, Loc)>,
    /// Surfaces by upper-case name: `(name, (element id, face 1..=6, where))`.
    surfaces: BTreeMap<String, (String, Vec<SurfaceFace>)>,
    parts: usize,
    instances: usize,
}

/// One keyword line: the keyword (upper case) and its parameters (upper-case keys, values as
/// written), with where each sits.
struct Keyword {
    name: String,
    loc: Loc,
    params: Vec<(String, Option<String>, Loc)>,
}

impl Keyword {
    fn param(&self, key: &str) -> Option<(&str, Loc)> {
        self.params
            .iter()
            .find(|(k, ..)| k == key)
            .map(|(_, v, loc)| (v.as_deref().unwrap_or(""), *loc))
    }

    fn flag(&self, key: &str) -> bool {
        self.params.iter().any(|(k, ..)| k == key)
    }
}

/// A data line split at commas: `(token, column)`; a trailing empty token (line ending in a
/// comma) is dropped.
fn fields(text: &str) -> Vec<(&str, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for piece in text.split(',') {
        let lead = piece.len() - piece.trim_start().len();
        out.push((piece.trim(), start + lead + 1));
        start += piece.len() + 1;
    }
    if out.last().is_some_and(|(t, _)| t.is_empty()) {
        out.pop();
    }
    out
}

const REFUSED: [&str; 9] = [
    "NCOPY",
    "NFILL",
    "NGEN",
    "NMAP",
    "ELGEN",
    "ELCOPY",
    "INCLUDE",
    "PARAMETER",
    "SYSTEM",
];

impl<'s> Reader<'s> {
    fn error(&self, loc: Loc, message: impl Into<String>) -> MeshError {
        MeshError::Abaqus {
            source_name: self.source_name.to_owned(),
            line: loc.line,
            column: loc.column,
            message: message.into(),
        }
    }

    /// Splits the text into logical lines (continuations joined), each with the line number
    /// and column offset of every physical piece, and hands them out keyword by keyword.
    fn read(&mut self, text: &str) -> Result<(), MeshError> {
        let mut logical: Vec<LogicalLine> = Vec::new();
        let mut pending: Option<LogicalLine> = None;
        // Whether the data lines of the current keyword continue after a trailing comma: those
        // of *ELEMENT (long node lists wrap) and of the sets; a *NODE line ending in a comma is
        // complete.
        let mut data_continues = false;
        for (i, raw_line) in text.lines().enumerate() {
            let line = raw_line.trim_end();
            if line.trim_start().starts_with("**") {
                continue;
            }
            if line.trim().is_empty() && pending.is_none() {
                continue;
            }
            let is_keyword = line.trim_start().starts_with('*');
            if is_keyword {
                if let Some(p) = pending.take() {
                    logical.push(p);
                }
                let name = line.trim_start()[1..].split(',').next().unwrap_or("");
                let name = name.trim().to_ascii_uppercase();
                data_continues = matches!(name.as_str(), "ELEMENT" | "NSET" | "ELSET");
            }
            let keyword_continues = pending
                .as_ref()
                .is_some_and(|p| p.text.trim_start().starts_with('*'));
            let mut current = pending.take().unwrap_or_default();
            current.pieces.push((current.text.len(), i + 1));
            current.text.push_str(line);
            if line.ends_with(',') && (is_keyword || keyword_continues || data_continues) {
                pending = Some(current);
            } else {
                logical.push(current);
            }
        }
        if let Some(p) = pending {
            logical.push(p);
        }

        let mut current: Option<Keyword> = None;
        for LogicalLine { text: buf, pieces } in &logical {
            let loc_of = |offset: usize| -> Loc {
                let &(start, line) = pieces
                    .iter()
                    .rev()
                    .find(|(s, _)| *s <= offset)
                    .unwrap_or(&pieces[0]);
                Loc {
                    line,
                    column: offset - start + 1,
                }
            };
            let trimmed = buf.trim_start();
            if trimmed.starts_with('*') {
                let kw = self.keyword(buf, &loc_of)?;
                self.begin(&kw)?;
                current = Some(kw);
                continue;
            }
            let Some(kw) = &current else {
                return Err(self.error(loc_of(0), "data before the first keyword line"));
            };
            let toks: Vec<(&str, Loc)> = fields(buf)
                .into_iter()
                .map(|(t, c)| (t, loc_of(c - 1)))
                .collect();
            if toks.is_empty() {
                continue;
            }
            self.data(kw, &toks)?;
        }
        Ok(())
    }

    fn keyword(&self, buf: &str, loc_of: &dyn Fn(usize) -> Loc) -> Result<Keyword, MeshError> {
        let toks = fields(buf);
        let (first, col) = toks[0];
        let name = first.trim_start_matches('*').trim().to_ascii_uppercase();
        let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut params = Vec::new();
        for &(tok, c) in &toks[1..] {
            let loc = loc_of(c - 1);
            match tok.split_once('=') {
                Some((k, v)) => params.push((
                    k.trim().to_ascii_uppercase(),
                    Some(v.trim().trim_matches('"').to_string()),
                    loc,
                )),
                None if tok.is_empty() => {}
                None => params.push((tok.to_ascii_uppercase(), None, loc)),
            }
        }
        Ok(Keyword {
            name,
            loc: loc_of(col - 1),
            params,
        })
    }

    /// Checks a keyword line and acts on those without data.
    fn begin(&mut self, kw: &Keyword) -> Result<(), MeshError> {
        if REFUSED.contains(&kw.name.as_str()) {
            return Err(self.error(
                kw.loc,
                format!(
                    "*{} changes the mesh in a way this reader does not follow; write the mesh \
                     out in full (nodes and elements listed) and read that",
                    kw.name
                ),
            ));
        }
        match kw.name.as_str() {
            "NODE" => {
                for key in ["SYSTEM", "INPUT"] {
                    if let Some((_, loc)) = kw.param(key) {
                        return Err(self.error(
                            loc,
                            format!("*NODE with {key}= is not supported: list the nodes in full"),
                        ));
                    }
                }
                if let Some((name, loc)) = kw.param("NSET") {
                    self.new_set(true, name, loc);
                }
            }
            "ELEMENT" => {
                let Some((t, loc)) = kw.param("TYPE") else {
                    return Err(self.error(kw.loc, "*ELEMENT without TYPE="));
                };
                self.element_role(t, loc)?;
                if let Some((name, loc)) = kw.param("ELSET") {
                    self.new_set(false, name, loc);
                }
            }
            "NSET" | "ELSET" => {
                let is_node = kw.name == "NSET";
                let Some((name, loc)) = kw.param(&kw.name) else {
                    return Err(self.error(kw.loc, format!("*{0} without {0}=", kw.name)));
                };
                if is_node {
                    if let Some((_, loc)) = kw.param("ELSET") {
                        return Err(
                            self.error(loc, "*NSET with ELSET= is not supported: list the nodes")
                        );
                    }
                }
                self.new_set(is_node, name, loc);
            }
            "SURFACE" => {
                let Some((name, loc)) = kw.param("NAME") else {
                    return Err(self.error(kw.loc, "*SURFACE without NAME="));
                };
                if let Some((t, loc)) = kw.param("TYPE") {
                    if !t.eq_ignore_ascii_case("ELEMENT") {
                        return Err(self.error(
                            loc,
                            format!(
                                "*SURFACE of TYPE={t} is not supported; TYPE=ELEMENT (element \
                                 faces S1..S6) is"
                            ),
                        ));
                    }
                }
                self.surfaces
                    .entry(name.to_ascii_uppercase())
                    .or_insert_with(|| (name.to_string(), Vec::new()));
                let _ = loc;
            }
            "PART" => {
                self.parts += 1;
                if self.parts > 1 {
                    return Err(self.error(
                        kw.loc,
                        "a second *PART: hexfem reads one part with one instance, or a flat \
                         input (Abaqus/CAE: write the input without parts and assemblies)",
                    ));
                }
            }
            "INSTANCE" => {
                self.instances += 1;
                if self.instances > 1 {
                    return Err(self.error(
                        kw.loc,
                        "a second *INSTANCE: hexfem reads one part with one instance, or a flat \
                         input (Abaqus/CAE: write the input without parts and assemblies)",
                    ));
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn new_set(&mut self, is_node: bool, name: &str, loc: Loc) {
        let sets = if is_node {
            &mut self.nsets
        } else {
            &mut self.elsets
        };
        sets.entry(name.to_ascii_uppercase())
            .or_insert_with(|| (name.to_string(), Vec::new(), loc));
    }

    fn element_role(&self, t: &str, loc: Loc) -> Result<Role, MeshError> {
        let upper = t.to_ascii_uppercase();
        let role = match upper.as_str() {
            "C3D8" | "C3D8R" | "C3D8H" | "C3D8I" | "C3D8RH" | "C3D8IH" => {
                Role::Cell(CellKind::Hex8)
            }
            "C3D27" | "C3D27R" | "C3D27H" | "C3D27RH" => Role::Cell(CellKind::Hex27),
            "S4" | "S4R" | "S4R5" | "CPS4" | "CPS4R" | "CPE4" | "CPE4R" | "M3D4" | "M3D4R"
            | "SFM3D4" | "SFM3D4R" | "R3D4" | "S8R" | "S8R5" | "S9R5" | "CPS8" | "CPS8R"
            | "CPE8" | "CPE8R" | "M3D8" | "M3D8R" | "M3D9" | "M3D9R" | "SFM3D8" | "SFM3D8R" => {
                Role::Face
            }
            "T3D2" | "T3D3" | "B31" | "B32" => Role::Line,
            _ if upper.starts_with("C3D20") => {
                return Err(self.error(
                    loc,
                    format!(
                        "element type {t} (20-node serendipity brick) is not supported; hexfem \
                         reads C3D8 (C3D8R, C3D8H, C3D8I) and C3D27 bricks: remesh with \
                         27-node bricks (Gmsh: Mesh.SecondOrderIncomplete = 0)"
                    ),
                ))
            }
            _ => {
                return Err(self.error(
                    loc,
                    format!(
                        "element type {t} is not supported; hexfem reads C3D8 (C3D8R, C3D8H, \
                         C3D8I) and C3D27 bricks, and quadrilateral surface (S4, CPS4, M3D4, \
                         SFM3D4, ...) and line (T3D2, B31, ...) elements as sets"
                    ),
                ))
            }
        };
        Ok(role)
    }

    fn data(&mut self, kw: &Keyword, toks: &[(&str, Loc)]) -> Result<(), MeshError> {
        match kw.name.as_str() {
            "NODE" => self.node_line(kw, toks),
            "ELEMENT" => self.element_line(kw, toks),
            "NSET" | "ELSET" => self.set_line(kw, toks),
            "SURFACE" => self.surface_line(kw, toks),
            "INSTANCE" => Err(self.error(
                toks[0].1,
                "an *INSTANCE placed by a translation or rotation is not supported: write the \
                 input without parts and assemblies",
            )),
            _ => Ok(()),
        }
    }

    fn int(&self, (tok, loc): (&str, Loc), what: &str) -> Result<i64, MeshError> {
        tok.parse::<i64>()
            .map_err(|_| self.error(loc, format!("expected {what} (an integer), found '{tok}'")))
    }

    fn node_line(&mut self, kw: &Keyword, toks: &[(&str, Loc)]) -> Result<(), MeshError> {
        let id = self.int(toks[0], "a node number")?;
        if toks.len() > 4 {
            return Err(self.error(
                toks[4].1,
                "a node line has at most a number and three coordinates",
            ));
        }
        let mut x = [0.0; 3];
        for (d, &(tok, loc)) in toks[1..].iter().enumerate() {
            x[d] = tok
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| {
                    self.error(loc, format!("expected a finite coordinate, found '{tok}'"))
                })?;
        }
        if self.node_pos.insert(id, self.coords.len()).is_some() {
            return Err(self.error(toks[0].1, format!("node {id} is defined twice")));
        }
        self.coords.push(x);
        if let Some((name, _)) = kw.param("NSET") {
            if let Some(set) = self.nsets.get_mut(&name.to_ascii_uppercase()) {
                set.1.push(id);
            }
        }
        Ok(())
    }

    fn element_line(&mut self, kw: &Keyword, toks: &[(&str, Loc)]) -> Result<(), MeshError> {
        let (t, tloc) = kw.param("TYPE").unwrap_or(("", kw.loc));
        let role = self.element_role(t, tloc)?;
        let id = self.int(toks[0], "an element number")?;
        let npe = toks.len() - 1;
        let expected: &[usize] = match role {
            Role::Cell(k) => &[k.nodes_per_cell()][..],
            Role::Face => &[4, 8, 9],
            Role::Line => &[2, 3],
        };
        if !expected.contains(&npe) {
            return Err(self.error(
                toks[0].1,
                format!(
                    "element {id} of type {t} lists {npe} nodes; {} expected",
                    expected
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(" or ")
                ),
            ));
        }
        let mut nodes = Vec::with_capacity(npe);
        for &tok in &toks[1..] {
            nodes.push(self.int(tok, "a node number")?);
        }
        if let Role::Cell(kind) = role {
            match self.kind {
                Some((k, first)) if k != kind => {
                    return Err(self.error(
                        tloc,
                        format!(
                            "{t} elements mix with the {}-node bricks of line {}: one kind of \
                             brick per mesh",
                            k.nodes_per_cell(),
                            first.line
                        ),
                    ))
                }
                Some(_) => {}
                None => self.kind = Some((kind, tloc)),
            }
            self.cell_ids.push(id);
        }
        let old = self.elements.insert(
            id,
            Element {
                role,
                nodes,
                loc: toks[0].1,
            },
        );
        if let Some(old) = old {
            return Err(self.error(
                toks[0].1,
                format!(
                    "element {id} is defined twice (first on line {})",
                    old.loc.line
                ),
            ));
        }
        if let Some((name, _)) = kw.param("ELSET") {
            if let Some(set) = self.elsets.get_mut(&name.to_ascii_uppercase()) {
                set.1.push(id);
            }
        }
        Ok(())
    }

    fn set_line(&mut self, kw: &Keyword, toks: &[(&str, Loc)]) -> Result<(), MeshError> {
        let is_node = kw.name == "NSET";
        let (name, _) = kw.param(&kw.name).unwrap_or(("", kw.loc));
        let key = name.to_ascii_uppercase();
        let mut ids = Vec::new();
        if kw.flag("GENERATE") {
            if !(2..=3).contains(&toks.len()) {
                return Err(self.error(toks[0].1, "a GENERATE line is 'first, last[, step]'"));
            }
            let first = self.int(toks[0], "the first number")?;
            let last = self.int(toks[1], "the last number")?;
            let step = match toks.get(2) {
                Some(&t) => self.int(t, "the step")?,
                None => 1,
            };
            if step < 1 || last < first {
                return Err(self.error(
                    toks[0].1,
                    format!("GENERATE {first}, {last}, {step}: need first <= last and step >= 1"),
                ));
            }
            // Bounded by the ids that exist: a larger range names unknown ids (an error later).
            let limit = if is_node {
                self.node_pos.len()
            } else {
                self.elements.len()
            } as i64;
            if last
                .checked_sub(first)
                .is_none_or(|span| span / step > limit)
            {
                return Err(self.error(
                    toks[1].1,
                    format!(
                        "GENERATE {first}, {last}, {step} names more {} than the file defines",
                        if is_node { "nodes" } else { "elements" }
                    ),
                ));
            }
            ids.extend((first..=last).step_by(step as usize));
        } else {
            for &(tok, loc) in toks {
                if let Ok(id) = tok.parse::<i64>() {
                    ids.push(id);
                    continue;
                }
                let sets = if is_node { &self.nsets } else { &self.elsets };
                match sets.get(&tok.to_ascii_uppercase()) {
                    Some((_, members, _)) => ids.extend_from_slice(members),
                    None => {
                        return Err(self.error(
                            loc,
                            format!(
                                "'{tok}' is neither a number nor {} set defined above",
                                if is_node { "a node" } else { "an element" }
                            ),
                        ))
                    }
                }
            }
        }
        let sets = if is_node {
            &mut self.nsets
        } else {
            &mut self.elsets
        };
        if let Some(set) = sets.get_mut(&key) {
            set.1.extend(ids);
        }
        Ok(())
    }

    fn surface_line(&mut self, kw: &Keyword, toks: &[(&str, Loc)]) -> Result<(), MeshError> {
        let (name, _) = kw.param("NAME").unwrap_or(("", kw.loc));
        let Some(&(face_tok, face_loc)) = toks.get(1) else {
            return Err(self.error(
                toks[0].1,
                "a surface line is 'element or element set, S1..S6' (the face is required)",
            ));
        };
        let face = face_tok
            .to_ascii_uppercase()
            .strip_prefix('S')
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| (1..=6).contains(n))
            .ok_or_else(|| {
                self.error(
                    face_loc,
                    format!("expected a brick face S1..S6, found '{face_tok}'"),
                )
            })?;
        let (tok, loc) = toks[0];
        let elements: Vec<i64> = match tok.parse::<i64>() {
            Ok(id) => vec![id],
            Err(_) => match self.elsets.get(&tok.to_ascii_uppercase()) {
                Some((_, members, _)) => members.clone(),
                None => {
                    return Err(self.error(
                        loc,
                        format!(
                            "'{tok}' is neither an element number nor an element set defined above"
                        ),
                    ))
                }
            },
        };
        if let Some(s) = self.surfaces.get_mut(&name.to_ascii_uppercase()) {
            s.1.extend(elements.into_iter().map(|e| (e, face, loc)));
        }
        Ok(())
    }

    /// Resolves ids and sets and builds the mesh.
    fn finish(self) -> Result<HexMesh, MeshError> {
        let Some((kind, _)) = self.kind else {
            return Err(self.error(
                Loc::default(),
                "no C3D8 or C3D27 elements: the mesh has no cells",
            ));
        };
        let npc = kind.nodes_per_cell();
        let to_lex = match kind {
            CellKind::Hex8 => NodeOrdering::ExodusHex8,
            CellKind::Hex27 => NodeOrdering::AbaqusHex27,
        }
        .to_lexicographic();
        let cell_of: HashMap<i64, usize> = self
            .cell_ids
            .iter()
            .enumerate()
            .map(|(c, &id)| (id, c))
            .collect();
        let node = |id: i64, loc: Loc, what: &str| -> Result<usize, MeshError> {
            self.node_pos.get(&id).copied().ok_or_else(|| {
                self.error(
                    loc,
                    format!("{what} names node {id}, which no *NODE defines"),
                )
            })
        };
        let mut cells = Vec::with_capacity(self.cell_ids.len() * npc);
        let mut element = Vec::with_capacity(npc);
        for id in &self.cell_ids {
            let e = &self.elements[id];
            element.clear();
            for &n in &e.nodes {
                element.push(node(n, e.loc, &format!("element {id}"))?);
            }
            cells.extend(gather(&element, &to_lex));
        }

        let mut node_sets: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (name, ids, loc) in self.nsets.values() {
            let set = node_sets.entry(name.clone()).or_default();
            for &id in ids {
                set.push(node(id, *loc, &format!("node set '{name}'"))?);
            }
        }
        let mut cell_sets: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut face_elements: BTreeMap<String, Vec<(i64, [usize; 4])>> = BTreeMap::new();
        for (name, ids, loc) in self.elsets.values() {
            for &id in ids {
                let Some(e) = self.elements.get(&id) else {
                    return Err(self.error(
                        *loc,
                        format!(
                            "element set '{name}' names element {id}, which no *ELEMENT defines"
                        ),
                    ));
                };
                match e.role {
                    Role::Cell(_) => cell_sets
                        .entry(name.clone())
                        .or_default()
                        .push(cell_of[&id]),
                    Role::Line => {
                        let set = node_sets.entry(name.clone()).or_default();
                        for &n in &e.nodes {
                            set.push(node(n, e.loc, &format!("element {id}"))?);
                        }
                    }
                    Role::Face => {
                        let mut corners = [0; 4];
                        for (c, &n) in corners.iter_mut().zip(&e.nodes) {
                            *c = node(n, e.loc, &format!("element {id}"))?;
                        }
                        face_elements
                            .entry(name.clone())
                            .or_default()
                            .push((id, corners));
                    }
                }
            }
        }
        let mut face_sets: BTreeMap<String, Vec<CellFace>> = BTreeMap::new();
        for (name, entries) in self.surfaces.values() {
            let set = face_sets.entry(name.clone()).or_default();
            for &(id, s, loc) in entries {
                let Some(&cell) = cell_of.get(&id) else {
                    return Err(self.error(
                        loc,
                        format!(
                            "surface '{name}' names element {id}, which is no C3D8/C3D27 brick"
                        ),
                    ));
                };
                let face = side_face(ABAQUS_HEX_FACES[s - 1])
                    .ok_or_else(|| self.error(loc, "unreachable face table entry"))?;
                set.push(CellFace { cell, face });
            }
        }
        if !face_elements.is_empty() {
            // Match surface elements to cell faces by their corner nodes (file positions).
            let probe = HexMesh::new(kind, vec![[0.0; 3]; self.coords.len()], cells.clone());
            let sharing = face_sharing(&probe);
            for (name, elems) in face_elements {
                let set = face_sets.entry(name.clone()).or_default();
                for (id, mut key) in elems {
                    key.sort_unstable();
                    match sharing.get(&key).map(Vec::as_slice) {
                        Some([cf]) => set.push(*cf),
                        Some([_, _, ..]) => {
                            return Err(self.error(
                                self.elements[&id].loc,
                                format!(
                                    "surface element {id} of set '{name}' is an interior face; \
                                     face sets must lie on the boundary"
                                ),
                            ))
                        }
                        _ => {
                            return Err(self.error(
                                self.elements[&id].loc,
                                format!(
                                    "surface element {id} of set '{name}' is not a face of any \
                                     brick"
                                ),
                            ))
                        }
                    }
                }
            }
        }

        let raw = RawHexMesh {
            kind,
            coords: self.coords.clone(),
            cells,
            node_sets,
            face_sets,
            cell_sets,
            element_tags: ElementTags::new(
                "Abaqus",
                self.cell_ids
                    .iter()
                    .map(|&id| usize::try_from(id).unwrap_or(0))
                    .collect(),
            ),
            set_ids: SetIds::default(),
        };
        build(raw).map_err(|e| match e {
            BuildError::Cell { cell, message } => {
                let id = self.cell_ids[cell];
                self.error(self.elements[&id].loc, format!("element {id}: {message}"))
            }
            BuildError::Set { name, message } => {
                let key = name.to_ascii_uppercase();
                let loc = self
                    .nsets
                    .get(&key)
                    .or_else(|| self.elsets.get(&key))
                    .map_or(Loc::default(), |s| s.2);
                self.error(loc, format!("set '{name}': {message}"))
            }
            BuildError::Mesh(e) => e,
        })
    }
}
