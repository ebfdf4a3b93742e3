//! Exodus II reader (the mesh format of Cubit, MOOSE and Sierra), on the netCDF classic formats
//! (CDF-1, the 64-bit offset CDF-2 and the 64-bit data CDF-5) parsed directly by [`netcdf`], and
//! on netCDF-4 (HDF5, `NETCDF4` and `NETCDF4_CLASSIC`) read through the HDF5 library by [`nc4`].
//! Both are an [`ExodusSource`] of dimensions, variables and attributes, from which one
//! `Reader` builds the mesh.
//!
//! Read: the coordinates (`coordx`, `coordy`, `coordz`, or the older `coord`); the element
//! blocks (`connect<i>` with their `elem_type` attribute: HEX/HEX8 or HEX27, one kind per file)
//! as cells in block order, each block also a cell set named by `eb_names` or else by its id
//! (`eb_prop1`); node sets (`node_ns<i>`, named by `ns_names` or their id `ns_prop1`); side sets
//! (`elem_ss<i>`, `side_ss<i>`, named by `ss_names` or `ss_prop1`) as face sets, the Exodus hex
//! sides mapped by [`crate::ordering::EXODUS_HEX_SIDES`]. The ids of blocks, node sets and side
//! sets are kept in [`HexMesh::set_ids`], so that a named set is found by its id too. Results, variables and maps are
//! ignored. Refused, naming the variable: HEX20 and every non-hexahedral block (with the element
//! types read), 2-d files, indices out of range, sizes that disagree with their dimensions, data
//! past the end of the file; and what [`crate::foreign`] refuses for every reader.

mod nc4;
pub(crate) mod netcdf;
mod source;

use std::collections::BTreeMap;
use std::path::Path;

use crate::cell::{CellFace, CellKind};
use crate::error::MeshError;
use crate::foreign::{build, BuildError, RawHexMesh};
use crate::hex_mesh::{ElementTags, HexMesh, SetIds};
use crate::ordering::{gather, side_face, NodeOrdering, EXODUS_HEX_SIDES};
use nc4::Nc4File;
use netcdf::{NcError, NcFile};
use source::ExodusSource;

/// Reads the Exodus II file at `path` (netCDF classic, 64-bit offset, 64-bit data or netCDF-4).
pub fn read_exodus(path: impl AsRef<Path>) -> Result<HexMesh, MeshError> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|error| MeshError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    read_exodus_file(&bytes, path)
}

/// Reads the Exodus II file at `path` whose content is `bytes`: a netCDF-4 (HDF5) file through
/// the HDF5 library, a classic one from `bytes`.
pub(crate) fn read_exodus_file(bytes: &[u8], path: &Path) -> Result<HexMesh, MeshError> {
    let name = path.display().to_string();
    if !crate::format::is_hdf5(bytes) {
        return parse_exodus_bytes(bytes, &name);
    }
    let located = located(&name);
    let file = Nc4File::open(path).map_err(located)?;
    if !file.has_exodus_dimensions() {
        return Err(MeshError::Format {
            source_name: name,
            message: format!(
                "an HDF5 file, but not a netCDF-4 Exodus II mesh (it has no dimension \
                 'num_nodes'): MED, CGNS or hexfem output? Other HDF5 meshes convert with \
                 `meshio convert IN OUT.msh` (which keeps no face sets); {}",
                crate::format::READABLE_FORMATS
            ),
        });
    }
    mesh_from(&file, &name)
}

/// Parses the bytes of an Exodus II file in a netCDF classic format; errors name the source as
/// `source_name`. (A netCDF-4 file is read from its path: [`read_exodus`].)
pub fn parse_exodus_bytes(bytes: &[u8], source_name: &str) -> Result<HexMesh, MeshError> {
    let located = located(source_name);
    if crate::format::is_hdf5(bytes) {
        return Err(located(err(
            "HDF5 file",
            "a netCDF-4 Exodus II file is read from its path (read_exodus, read_mesh), not from \
             bytes",
        )));
    }
    let file = NcFile::parse(bytes).map_err(located)?;
    mesh_from(&file, source_name)
}

/// The error of `source_name` at a netCDF place.
fn located(source_name: &str) -> impl Fn(NcError) -> MeshError + '_ {
    move |e: NcError| MeshError::Exodus {
        source_name: source_name.to_owned(),
        place: e.place,
        message: e.message,
    }
}

/// The mesh of the Exodus II variables of `file`.
fn mesh_from<S: ExodusSource + ?Sized>(file: &S, source_name: &str) -> Result<HexMesh, MeshError> {
    let located = located(source_name);
    let reader = Reader { file };
    let (raw, blocks) = reader.read().map_err(&located)?;
    build(raw).map_err(|e| match e {
        BuildError::Cell { cell, message } => located(NcError {
            place: blocks.describe(cell),
            message,
        }),
        BuildError::Set { name, message } => located(NcError {
            place: format!("set '{name}'"),
            message,
        }),
        // the file's mesh breaks an invariant (a non-finite coordinate): name the file
        BuildError::Mesh(MeshError::Invalid(message)) => located(NcError {
            place: "mesh".into(),
            message,
        }),
        BuildError::Mesh(e) => e,
    })
}

/// The blocks of the cells, for messages: `(first cell, block id, block name)`.
struct Blocks(Vec<(usize, i64, String)>);

impl Blocks {
    fn describe(&self, cell: usize) -> String {
        match self.0.iter().rev().find(|(first, ..)| *first <= cell) {
            Some((first, id, name)) => format!(
                "element {} (element {} of block {id}{}, variable 'connect{}')",
                cell + 1,
                cell - first + 1,
                if name.is_empty() {
                    String::new()
                } else {
                    format!(" '{name}'")
                },
                self.0
                    .iter()
                    .position(|b| b.0 == *first)
                    .map_or(0, |i| i + 1)
            ),
            None => format!("element {}", cell + 1),
        }
    }
}

/// The mesh-building half of the reader, on any [`ExodusSource`].
struct Reader<'f, S: ExodusSource + ?Sized> {
    file: &'f S,
}

fn err(place: impl Into<String>, message: impl Into<String>) -> NcError {
    NcError {
        place: place.into(),
        message: message.into(),
    }
}

impl<S: ExodusSource + ?Sized> Reader<'_, S> {
    fn dim(&self, name: &str) -> Option<usize> {
        self.file.dim(name).map(|n| n as usize)
    }

    fn required_dim(&self, name: &str, why: &str) -> Result<usize, NcError> {
        self.dim(name).ok_or_else(|| {
            err(
                format!("dimension '{name}'"),
                format!("is missing ({why}); is this an Exodus II file?"),
            )
        })
    }

    /// The values of variable `name`, which must number `len`.
    fn f64s(&self, name: &str, len: usize) -> Result<Vec<f64>, NcError> {
        let v = self.file.read_f64(name)?;
        check_len(name, v.len(), len)?;
        Ok(v)
    }

    fn i64s(&self, name: &str, len: usize) -> Result<Vec<i64>, NcError> {
        let v = self.file.read_i64(name)?;
        check_len(name, v.len(), len)?;
        Ok(v)
    }

    /// Names of `count` entities from `names_var`, falling back on their ids from `ids_var`
    /// (or on their 1-based index).
    fn entity_names(
        &self,
        names_var: &str,
        ids_var: &str,
        count: usize,
    ) -> Result<(Vec<String>, Vec<i64>), NcError> {
        let ids = if self.file.has_variable(ids_var) {
            self.i64s(ids_var, count)?
        } else {
            (1..=count as i64).collect()
        };
        let names = if self.file.has_variable(names_var) {
            self.file.read_strings(names_var)?
        } else {
            Vec::new()
        };
        let names = (0..count)
            .map(|i| match names.get(i) {
                Some(n) if !n.is_empty() => n.clone(),
                _ => ids[i].to_string(),
            })
            .collect();
        Ok((names, ids))
    }

    fn read(&self) -> Result<(RawHexMesh, Blocks), NcError> {
        let n_nodes = self.required_dim("num_nodes", "the number of nodes")?;
        let n_dim = self.required_dim("num_dim", "the spatial dimension")?;
        if n_dim != 3 {
            return Err(err(
                "dimension 'num_dim'",
                format!("is {n_dim}: hexfem reads 3-d meshes"),
            ));
        }
        let coords = self.coords(n_nodes)?;
        let mut set_ids = SetIds::default();
        let (kind, cells, blocks, cell_sets) = self.blocks(n_nodes, &mut set_ids.cell)?;
        let node_sets = self.node_sets(n_nodes, &mut set_ids.node)?;
        let face_sets = self.side_sets(cells.len() / kind.nodes_per_cell(), &mut set_ids.face)?;
        Ok((
            RawHexMesh {
                element_tags: ElementTags::new(
                    "Exodus",
                    (1..=cells.len() / kind.nodes_per_cell()).collect(),
                ),
                kind,
                coords,
                cells,
                node_sets,
                face_sets,
                cell_sets,
                set_ids,
            },
            blocks,
        ))
    }

    fn coords(&self, n_nodes: usize) -> Result<Vec<[f64; 3]>, NcError> {
        let axes: Vec<Vec<f64>> = if self.file.has_variable("coordx") {
            ["coordx", "coordy", "coordz"]
                .iter()
                .map(|name| self.f64s(name, n_nodes))
                .collect::<Result<_, _>>()?
        } else if self.file.has_variable("coord") {
            let len = n_nodes
                .checked_mul(3)
                .ok_or_else(|| err("dimension 'num_nodes'", "is impossibly large"))?;
            let all = self.f64s("coord", len)?;
            all.chunks_exact(n_nodes.max(1))
                .map(<[f64]>::to_vec)
                .collect()
        } else {
            return Err(err(
                "variable 'coordx'",
                "is missing (and so is the older 'coord'): no node coordinates",
            ));
        };
        if n_nodes == 0 {
            return Ok(Vec::new());
        }
        Ok((0..n_nodes)
            .map(|i| [axes[0][i], axes[1][i], axes[2][i]])
            .collect())
    }

    #[allow(clippy::type_complexity)]
    fn blocks(
        &self,
        n_nodes: usize,
        set_ids: &mut BTreeMap<i64, String>,
    ) -> Result<(CellKind, Vec<usize>, Blocks, BTreeMap<String, Vec<usize>>), NcError> {
        let n_blocks = self.required_dim("num_el_blk", "the number of element blocks")?;
        let (names, ids) = self.entity_names("eb_names", "eb_prop1", n_blocks)?;
        let mut kind: Option<(CellKind, usize)> = None;
        let mut cells = Vec::new();
        let mut blocks = Vec::new();
        let mut cell_sets: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for b in 0..n_blocks {
            let connect = format!("connect{}", b + 1);
            let n_elem = self.dim(&format!("num_el_in_blk{}", b + 1)).unwrap_or(0);
            if n_elem == 0 {
                continue; // a null block
            }
            if !self.file.has_variable(&connect) {
                return Err(source::missing(&connect));
            }
            let npe = self.required_dim(
                &format!("num_nod_per_el{}", b + 1),
                "the nodes per element of a block",
            )?;
            let elem_type = self
                .file
                .text_attribute(&connect, "elem_type")
                .unwrap_or_default();
            let block = format!(
                "block {}{} ({} elements of type '{elem_type}', {npe} nodes each)",
                ids[b],
                if names[b] == ids[b].to_string() {
                    String::new()
                } else {
                    format!(" '{}'", names[b])
                },
                n_elem
            );
            let upper = elem_type.to_ascii_uppercase();
            let this_kind = match (upper.starts_with("HEX"), npe) {
                (true, 8) => CellKind::Hex8,
                (true, 27) => CellKind::Hex27,
                (true, 20) => {
                    return Err(err(
                        format!("variable '{connect}'"),
                        format!(
                            "{block}: HEX20 (20-node serendipity) elements are not supported; \
                             hexfem reads HEX8 and HEX27 blocks (Cubit: `block {} element type \
                             hex27`)",
                            ids[b]
                        ),
                    ))
                }
                _ => {
                    return Err(err(
                        format!("variable '{connect}'"),
                        format!(
                            "{block}: only hexahedral blocks are supported (HEX8 or HEX27, one \
                             kind per file)"
                        ),
                    ))
                }
            };
            match kind {
                Some((k, first)) if k != this_kind => {
                    return Err(err(
                        format!("variable '{connect}'"),
                        format!(
                            "{block} mixes {this_kind:?} with the {k:?} cells of block {}: \
                             one kind of hexahedron per mesh",
                            ids[first]
                        ),
                    ))
                }
                Some(_) => {}
                None => kind = Some((this_kind, b)),
            }
            let len = n_elem
                .checked_mul(npe)
                .ok_or_else(|| err(format!("variable '{connect}'"), "has an impossible size"))?;
            let conn = self.i64s(&connect, len)?;
            let to_lex = match this_kind {
                CellKind::Hex8 => NodeOrdering::ExodusHex8,
                CellKind::Hex27 => NodeOrdering::ExodusHex27,
            }
            .to_lexicographic();
            let first_cell = cells.len() / npe;
            let mut element = Vec::with_capacity(npe);
            for (e, nodes) in conn.chunks_exact(npe).enumerate() {
                element.clear();
                for &n in nodes {
                    if n < 1 || n as u64 > n_nodes as u64 {
                        return Err(err(
                            format!("variable '{connect}'"),
                            format!(
                                "element {} of {block} names node {n}; nodes are 1..={n_nodes}",
                                e + 1
                            ),
                        ));
                    }
                    element.push(n as usize - 1);
                }
                cells.extend(gather(&element, &to_lex));
            }
            cell_sets
                .entry(names[b].clone())
                .or_default()
                .extend(first_cell..first_cell + n_elem);
            set_ids.insert(ids[b], names[b].clone());
            blocks.push((first_cell, ids[b], names[b].clone()));
        }
        let Some((kind, _)) = kind else {
            return Err(err(
                "dimension 'num_el_blk'",
                "no element block has elements: the mesh has no cells",
            ));
        };
        Ok((kind, cells, Blocks(blocks), cell_sets))
    }

    fn node_sets(
        &self,
        n_nodes: usize,
        set_ids: &mut BTreeMap<i64, String>,
    ) -> Result<BTreeMap<String, Vec<usize>>, NcError> {
        let count = self.dim("num_node_sets").unwrap_or(0);
        let (names, ids) = self.entity_names("ns_names", "ns_prop1", count)?;
        let mut sets: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, name) in names.into_iter().enumerate() {
            set_ids.insert(ids[i], name.clone());
            let var = format!("node_ns{}", i + 1);
            let len = self.dim(&format!("num_nod_ns{}", i + 1)).unwrap_or(0);
            if len == 0 {
                sets.entry(name).or_default();
                continue;
            }
            let nodes = self.i64s(&var, len)?;
            let set = sets.entry(name).or_default();
            for n in nodes {
                if n < 1 || n as u64 > n_nodes as u64 {
                    return Err(err(
                        format!("variable '{var}'"),
                        format!("names node {n}; nodes are 1..={n_nodes}"),
                    ));
                }
                set.push(n as usize - 1);
            }
        }
        Ok(sets)
    }

    fn side_sets(
        &self,
        n_cells: usize,
        set_ids: &mut BTreeMap<i64, String>,
    ) -> Result<BTreeMap<String, Vec<CellFace>>, NcError> {
        let count = self.dim("num_side_sets").unwrap_or(0);
        let (names, ids) = self.entity_names("ss_names", "ss_prop1", count)?;
        let mut sets: BTreeMap<String, Vec<CellFace>> = BTreeMap::new();
        for (i, name) in names.into_iter().enumerate() {
            set_ids.insert(ids[i], name.clone());
            let len = self.dim(&format!("num_side_ss{}", i + 1)).unwrap_or(0);
            let set = sets.entry(name).or_default();
            if len == 0 {
                continue;
            }
            let elem_var = format!("elem_ss{}", i + 1);
            let side_var = format!("side_ss{}", i + 1);
            let elems = self.i64s(&elem_var, len)?;
            let sides = self.i64s(&side_var, len)?;
            for (&e, &s) in elems.iter().zip(&sides) {
                if e < 1 || e as u64 > n_cells as u64 {
                    return Err(err(
                        format!("variable '{elem_var}'"),
                        format!("names element {e}; elements are 1..={n_cells}"),
                    ));
                }
                let face = usize::try_from(s)
                    .ok()
                    .and_then(|s| s.checked_sub(1))
                    .and_then(|s| EXODUS_HEX_SIDES.get(s))
                    .and_then(|&corners| side_face(corners))
                    .ok_or_else(|| {
                        err(
                            format!("variable '{side_var}'"),
                            format!("element {e} has side {s}; hexahedron sides are 1..=6"),
                        )
                    })?;
                set.push(CellFace {
                    cell: e as usize - 1,
                    face,
                });
            }
        }
        Ok(sets)
    }
}

fn check_len(name: &str, found: usize, expected: usize) -> Result<(), NcError> {
    if found != expected {
        return Err(err(
            format!("variable '{name}'"),
            format!("has {found} values where its dimensions call for {expected}"),
        ));
    }
    Ok(())
}
