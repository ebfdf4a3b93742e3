//! HDF5 results file with its XDMF description, written step by step so that a run killed at any
//! point, or stopped by a full disk, leaves files that open with every completed step.
//!
//! Layout of `<name>.h5`:
//! - `/mesh/coordinates` f64 `[n_nodes, 3]`, `/mesh/connectivity` i64 `[n_cells, 8 | 27]` (VTK
//!   order), `/mesh/material` i64 `[n_cells]` (when given), `/mesh/sets/nodes/<set>` and
//!   `/mesh/sets/cells/<set>` i64 index lists, `/mesh/sets/faces/<set>` i64 `[n, 2]` (cell, local
//!   face);
//! - `/steps/<6-digit step>/` with attributes `load_factor` (f64) and, for restarts,
//!   `next_increment` (f64), `time` (f64), and the step's datasets (see [`StepData`]).
//!
//! `<name>.last.xdmf` describes the last committed step alone (replaced by rename after each step)
//! for readers of single meshes such as `meshio.read`.
//!
//! Crash safety: the file is written append-only and each step is committed by one rewrite of
//! the superblock (see the `h5` module for why and how); only then is the step appended to the
//! XDMF file, so the XDMF never names a step that is not committed. The file is created under a
//! temporary name and renamed once the mesh is committed.

use std::fs;
use std::path::{Path, PathBuf};

use super::atomic::{temp_path, write_atomic};
use super::data::{Center, MeshData, StepData, StepField};
use super::faults::Faults;
use super::h5::encode::{self, Element};
use super::h5::{AppendFile, Group, IndexBound, Pieces, Reserved};
use super::vtu::VtuWriter;
use super::xdmf::{self, FieldEntry, MeshLayout, StepEntry, XdmfLog};
use super::OutputError;

/// Writes `<dir>/<name>.h5` and `<dir>/<name>.xdmf`. Calling order: [`ResultsWriter::create`]
/// once, then [`ResultsWriter::write_step`] for each converged step with increasing indices.
/// After a failed write the writer refuses further steps (the files keep every committed one).
pub struct ResultsWriter {
    file: AppendFile,
    h5_path: PathBuf,
    xdmf: XdmfLog,
    /// `<name>.last.xdmf`: the last committed step alone.
    last_xdmf: PathBuf,
    /// Optional `.vtu` files and `.pvd` collection.
    vtu: Option<VtuWriter>,
    faults: Faults,
    mesh: MeshLayout,
    /// Object header of `/mesh`.
    mesh_header: u64,
    /// `/steps`, one link per committed step.
    steps: Group,
    last_step: Option<usize>,
    steps_written: usize,
    /// The first write error, after which nothing more is written.
    failed: Option<String>,
    /// Whether the step fields but the displacement are written as float32
    /// ([`ResultsWriter::set_single_precision_fields`]).
    single_fields: bool,
}

impl std::fmt::Debug for ResultsWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.debug_struct("ResultsWriter")
            .field("h5_path", &self.h5_path)
            .field("steps_written", &self.steps_written)
            .finish()
    }
}

impl ResultsWriter {
    /// Writes the HDF5 file with the mesh and an empty `/steps` group, and an XDMF file with an
    /// empty time collection, replacing files of the same name. `dir` must exist.
    pub fn create(
        dir: &Path,
        name: &str,
        mesh: &MeshData,
        faults: &Faults,
    ) -> Result<Self, OutputError> {
        mesh.check()?;
        let shape = MeshShape::of(mesh);
        Self::create_in_pieces(dir, name, &shape, faults, |pieces| {
            put_mesh(pieces, &shape, mesh);
            Ok::<(), OutputError>(())
        })
    }

    /// [`ResultsWriter::create`] for a mesh of `shape` whose datasets `fill` writes in pieces
    /// (datasets numbered as [`MeshShape::dataset`] says; every value exactly once), in the
    /// file layout `create` gives the same mesh. Nothing is visible before every piece is
    /// written. An error of `fill`'s (after which it should still have returned, so that
    /// collective callers stay in step) or of a piece removes the file.
    pub fn create_in_pieces<E: From<OutputError>>(
        dir: &Path,
        name: &str,
        shape: &MeshShape,
        faults: &Faults,
        fill: impl FnOnce(&mut Pieces) -> Result<(), E>,
    ) -> Result<Self, E> {
        shape.check()?;
        let h5_name = format!("{name}.h5");
        let h5_path = dir.join(&h5_name);
        let layout = MeshLayout {
            h5_name,
            n_nodes: shape.n_nodes,
            n_cells: shape.n_cells,
            nodes_per_cell: shape.nodes_per_cell,
            has_material: shape.has_material,
            node_indicators: shape.node_indicators.clone().unwrap_or_default(),
            cell_indicators: shape
                .node_indicators
                .as_ref()
                .map(|_| shape.cell_sets.iter().map(|(n, _)| n.clone()).collect())
                .unwrap_or_default(),
        };
        let tmp = temp_path(&h5_path);
        let io_error = |path: &Path| {
            let path = path.to_owned();
            move |source| OutputError::Io { path, source }
        };
        let mut file = AppendFile::create(&tmp, faults.clone()).map_err(io_error(&tmp))?;
        let reserved = reserve_mesh(&mut file, shape);
        let (mut datasets, mesh_header) = match reserved {
            Ok(r) => r,
            Err(source) => {
                let _ = fs::remove_file(&tmp);
                return Err(OutputError::Io {
                    path: h5_path,
                    source,
                }
                .into());
            }
        };
        let mut pieces = Pieces::new(&mut file, &mut datasets);
        let filled = fill(&mut pieces);
        let pieces = pieces.finish();
        if let Err(e) = filled {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        let written = pieces.map_err(|e| e.into_output(&h5_path)).and_then(|()| {
            (|| {
                let mut steps = Group::new();
                let steps_header = steps.write_header(&mut file, Vec::new())?;
                let root = Group::write_all(
                    &mut file,
                    vec![("mesh".into(), mesh_header), ("steps".into(), steps_header)],
                    Vec::new(),
                )?;
                file.commit(root)?;
                file.rename(&h5_path)?;
                Ok(steps)
            })()
            .map_err(io_error(&h5_path))
        });
        let steps = match written {
            Ok(steps) => steps,
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                return Err(e.into());
            }
        };
        let xdmf = XdmfLog::create(&dir.join(format!("{name}.xdmf")), faults)?;
        Ok(ResultsWriter {
            file,
            h5_path,
            xdmf,
            last_xdmf: dir.join(format!("{name}.last.xdmf")),
            vtu: None,
            faults: faults.clone(),
            mesh: layout,
            mesh_header,
            steps,
            last_step: None,
            steps_written: 0,
            failed: None,
            single_fields: false,
        })
    }

    /// The HDF5 file.
    pub fn h5_path(&self) -> &Path {
        &self.h5_path
    }

    /// The XDMF file.
    pub fn xdmf_path(&self) -> &Path {
        self.xdmf.path()
    }

    /// Writes the fields of the steps to come as float32 datasets, each value rounded to
    /// nearest (`output.precision: single`, for viewing; the XDMF says `Precision="4"`), all
    /// but the displacement: a restart continues from it exactly, so it stays float64.
    pub fn set_single_precision_fields(&mut self, single: bool) {
        self.single_fields = single;
    }

    /// The element type of `field`'s dataset.
    fn element_of(&self, field: StepField) -> Element {
        if self.single_fields && field != StepField::Displacement {
            Element::F32
        } else {
            Element::F64
        }
    }

    /// Number of steps committed.
    pub fn steps_written(&self) -> usize {
        self.steps_written
    }

    /// Index of the last step committed.
    pub fn last_step(&self) -> Option<usize> {
        self.last_step
    }

    /// Appends a converged step to the HDF5 file and commits it, then to the XDMF file. Sizes
    /// and the step order are checked first; on an [`OutputError::InvalidData`] nothing is
    /// written. Any other error leaves the files with the steps committed before it and ends
    /// the writer: later calls fail with that error.
    pub fn write_step(&mut self, data: &StepData) -> Result<(), OutputError> {
        let fields = data.fields();
        for f in &fields {
            let rows = match f.center {
                Center::Node => self.mesh.n_nodes,
                Center::Cell => self.mesh.n_cells,
            };
            if f.values.len() != rows * f.kind.components() {
                return Err(OutputError::InvalidData(format!(
                    "field `{}` of step {} has {} values, expected {rows} x {}",
                    f.name,
                    data.step,
                    f.values.len(),
                    f.kind.components()
                )));
            }
        }
        let header = StepHeader {
            step: data.step,
            load_factor: data.load_factor,
            next_increment: data.next_increment,
            time: data.time,
            fields: fields.iter().map(|f| f.which).collect(),
        };
        self.write_step_in_pieces(&header, |pieces| {
            for (i, f) in fields.iter().enumerate() {
                pieces.put_f64(i, 0, f.values);
            }
            Ok::<(), OutputError>(())
        })?;
        if let Some(vtu) = &mut self.vtu {
            if let Err(error) = vtu.write_step(data) {
                self.failed = Some(error.to_string());
                return Err(error);
            }
        }
        Ok(())
    }

    /// [`ResultsWriter::write_step`] for a step whose fields (`header.fields`, in
    /// [`StepField`] order) `fill` writes in pieces: field `i` of the header is dataset `i`,
    /// rows per node or cell of the mesh, every value exactly once. The step is committed only
    /// when every piece is written; an error of `fill`'s (after which it should still have
    /// returned, so that collective callers stay in step) or of a piece leaves the files with the
    /// steps before it and ends the writer. Not with `.vtu` output (which needs whole fields).
    pub fn write_step_in_pieces<E: From<OutputError>>(
        &mut self,
        header: &StepHeader,
        fill: impl FnOnce(&mut Pieces) -> Result<(), E>,
    ) -> Result<(), E> {
        let invalid = |m: String| Err(OutputError::InvalidData(m).into());
        if let Some(first) = &self.failed {
            return invalid(format!(
                "no more steps are written after the earlier error: {first}"
            ));
        }
        if let Some(last) = self.last_step {
            if header.step <= last {
                return invalid(format!(
                    "step {} written after step {last}: steps must increase",
                    header.step
                ));
            }
        }
        if header
            .fields
            .windows(2)
            .any(|w| w[0].order() >= w[1].order())
        {
            return invalid(format!(
                "the fields {:?} of step {} are not in dataset order, or repeated",
                header.fields, header.step
            ));
        }
        let group = xdmf::step_group(header.step);
        let reserved = (|| {
            let mut datasets = Vec::with_capacity(header.fields.len());
            for &f in &header.fields {
                let rows = match f.center() {
                    Center::Node => self.mesh.n_nodes,
                    Center::Cell => self.mesh.n_cells,
                };
                let components = f.components();
                let shape: &[usize] = if components == 1 {
                    &[rows]
                } else {
                    &[rows, components]
                };
                let element = self.element_of(f);
                datasets.push(Reserved::append(
                    &mut self.file,
                    element,
                    shape,
                    IndexBound::None,
                )?);
            }
            Ok::<_, std::io::Error>(datasets)
        })();
        let mut datasets = match reserved {
            Ok(d) => d,
            Err(source) => return Err(self.fail_io(source).into()),
        };
        let mut pieces = Pieces::new(&mut self.file, &mut datasets);
        let filled = fill(&mut pieces);
        let pieces = pieces.finish();
        if let Err(e) = filled {
            self.file.abandon();
            self.failed = Some("the step's data could not be gathered".into());
            return Err(e);
        }
        if let Err(e) = pieces {
            self.file.abandon();
            let error = e.into_output(&self.h5_path);
            self.failed = Some(error.to_string());
            return Err(error.into());
        }
        let committed = (|| {
            let links = header
                .fields
                .iter()
                .zip(&datasets)
                .map(|(f, d)| (f.name().to_owned(), d.header))
                .collect();
            let step_header = Group::write_all(
                &mut self.file,
                links,
                std::iter::once(encode::scalar_f64_attribute(
                    "load_factor",
                    header.load_factor,
                ))
                .chain(
                    header
                        .next_increment
                        .map(|v| encode::scalar_f64_attribute("next_increment", v)),
                )
                .chain(header.time.map(|v| encode::scalar_f64_attribute("time", v)))
                .collect(),
            )?;
            self.steps
                .push(&mut self.file, &group["/steps/".len()..], step_header)?;
            let steps_header = self.steps.write_header(&mut self.file, Vec::new())?;
            let root = Group::write_all(
                &mut self.file,
                vec![
                    ("mesh".into(), self.mesh_header),
                    ("steps".into(), steps_header),
                ],
                Vec::new(),
            )?;
            self.file.commit(root)
        })();
        if let Err(source) = committed {
            return Err(self.fail_io(source).into());
        }
        self.last_step = Some(header.step);
        self.steps_written += 1;

        let entry = StepEntry {
            step: header.step,
            load_factor: header.load_factor,
            fields: header
                .fields
                .iter()
                .map(|&f| FieldEntry {
                    name: f.name(),
                    center: f.center(),
                    kind: f.kind(),
                    precision: self.element_of(f).size(),
                })
                .collect(),
        };
        let last = xdmf::render_single(&self.mesh, &entry);
        let written = self
            .xdmf
            .append(&self.mesh, &entry)
            .and_then(|()| write_atomic(&self.last_xdmf, last.as_bytes(), &self.faults));
        if let Err(error) = written {
            self.failed = Some(error.to_string());
            return Err(error.into());
        }
        Ok(())
    }

    /// Abandons the transaction after an I/O error and ends the writer.
    fn fail_io(&mut self, source: std::io::Error) -> OutputError {
        self.file.abandon();
        let error = OutputError::Io {
            path: self.h5_path.clone(),
            source,
        };
        self.failed = Some(error.to_string());
        error
    }

    /// Also writes every step as `<dir>/<name>_vtu/step_NNNNNN.vtu`, listed in `<dir>/<name>.pvd`
    /// (call before the first step, with the mesh given to [`ResultsWriter::create`]).
    pub fn enable_vtu(
        &mut self,
        dir: &Path,
        name: &str,
        mesh: &MeshData,
    ) -> Result<(), OutputError> {
        self.vtu = Some(VtuWriter::create(dir, name, mesh, &self.faults)?);
        Ok(())
    }

    /// The ParaView collection of the `.vtu` files, when enabled.
    pub fn pvd_path(&self) -> Option<&Path> {
        self.vtu.as_ref().map(VtuWriter::pvd_path)
    }

    /// `<name>.last.xdmf`: the last committed step alone, as one grid (for `meshio.read` and
    /// `meshio convert`, which do not read time series); written with the first step.
    pub fn last_xdmf_path(&self) -> &Path {
        &self.last_xdmf
    }
}

/// A step written in pieces ([`ResultsWriter::write_step_in_pieces`]): what
/// [`StepData`] holds besides the values.
#[derive(Clone, Debug, PartialEq)]
pub struct StepHeader {
    /// Step index; strictly increasing over the calls of one writer.
    pub step: usize,
    /// Load factor reached (the XDMF time value).
    pub load_factor: f64,
    /// Attribute `next_increment` (see [`StepData::next_increment`]).
    pub next_increment: Option<f64>,
    /// Attribute `time` (see [`StepData::time`]).
    pub time: Option<f64>,
    /// The step's fields in [`StepField`] order; field `i` is dataset `i` of the pieces.
    pub fields: Vec<StepField>,
}

/// The sizes of a mesh's datasets, for a mesh written in pieces
/// ([`ResultsWriter::create_in_pieces`]). Sets are listed in the order their datasets are
/// written (the serial writer lists them by name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeshShape {
    /// 8 or 27.
    pub nodes_per_cell: usize,
    pub n_nodes: usize,
    pub n_cells: usize,
    /// Whether `/mesh/material` is written.
    pub has_material: bool,
    /// (name, members) of each node set.
    pub node_sets: Vec<(String, usize)>,
    /// (name, members) of each cell set.
    pub cell_sets: Vec<(String, usize)>,
    /// (name, `[cell, face]` pairs) of each face set.
    pub face_sets: Vec<(String, usize)>,
    /// The names of the node indicators (`/mesh/indicators/nodes/<name>`, then one per cell set
    /// in `/mesh/indicators/cells/`); `None`: no indicators (see [`MeshData::node_indicators`]).
    pub node_indicators: Option<Vec<String>>,
}

/// A dataset of `/mesh`, for [`MeshShape::dataset`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MeshDataset {
    /// f64 `[n_nodes, 3]`.
    Coordinates,
    /// Indices `[n_cells, nodes_per_cell]`, VTK order.
    Connectivity,
    /// Indices `[n_cells]`.
    Material,
    /// Sorted node indices of node set `i`.
    NodeSet(usize),
    /// Sorted cell indices of cell set `i`.
    CellSet(usize),
    /// `[cell, face]` pairs of face set `i`, flattened.
    FaceSet(usize),
    /// 0/1 per node of node indicator `i`.
    NodeIndicator(usize),
    /// 0/1 per cell of cell set `i`'s indicator.
    CellIndicator(usize),
}

impl MeshShape {
    /// The shape of `mesh`.
    pub fn of(mesh: &MeshData) -> Self {
        let sets = |list: &[(&str, &[usize])]| -> Vec<(String, usize)> {
            list.iter()
                .map(|(n, v)| ((*n).to_owned(), v.len()))
                .collect()
        };
        MeshShape {
            nodes_per_cell: mesh.nodes_per_cell,
            n_nodes: mesh.coordinates.len(),
            n_cells: mesh.n_cells(),
            has_material: mesh.material.is_some(),
            node_sets: sets(mesh.node_sets),
            cell_sets: sets(mesh.cell_sets),
            face_sets: mesh
                .face_sets
                .iter()
                .map(|(n, v)| ((*n).to_owned(), v.len()))
                .collect(),
            node_indicators: mesh
                .node_indicators
                .map(|list| list.iter().map(|(n, _)| (*n).to_owned()).collect()),
        }
    }

    /// The index of `which` among the datasets [`Pieces`] writes (`None`: not in this mesh).
    pub fn dataset(&self, which: MeshDataset) -> Option<usize> {
        let sets = 2 + usize::from(self.has_material);
        let (n, c) = (self.node_sets.len(), self.cell_sets.len());
        match which {
            MeshDataset::Coordinates => Some(0),
            MeshDataset::Connectivity => Some(1),
            MeshDataset::Material => self.has_material.then_some(2),
            MeshDataset::NodeSet(i) => (i < n).then_some(sets + i),
            MeshDataset::CellSet(i) => (i < c).then_some(sets + n + i),
            MeshDataset::FaceSet(i) => (i < self.face_sets.len()).then_some(sets + n + c + i),
            MeshDataset::NodeIndicator(i) => {
                let k = self.node_indicators.as_ref()?.len();
                (i < k).then_some(sets + n + c + self.face_sets.len() + i)
            }
            MeshDataset::CellIndicator(i) => {
                let k = self.node_indicators.as_ref()?.len();
                (i < c).then_some(sets + n + c + self.face_sets.len() + k + i)
            }
        }
    }

    fn check(&self) -> Result<(), OutputError> {
        if self.nodes_per_cell != 8 && self.nodes_per_cell != 27 {
            return Err(OutputError::InvalidData(format!(
                "{} nodes per cell; only 8 and 27 are supported",
                self.nodes_per_cell
            )));
        }
        for (name, _) in self
            .node_sets
            .iter()
            .chain(&self.cell_sets)
            .chain(&self.face_sets)
        {
            super::data::check_name(name)?;
        }
        for name in self.node_indicators.iter().flatten() {
            super::data::check_name(name)?;
        }
        Ok(())
    }
}

/// Writes every dataset of `mesh` (of shape `shape`) whole.
fn put_mesh(pieces: &mut Pieces, shape: &MeshShape, mesh: &MeshData) {
    let at = |d| shape.dataset(d).expect("a dataset of the mesh's shape");
    let indices = |v: &[usize]| -> Vec<u64> { v.iter().map(|&i| i as u64).collect() };
    pieces.put_f64(
        at(MeshDataset::Coordinates),
        0,
        mesh.coordinates.as_flattened(),
    );
    pieces.put_indices(
        at(MeshDataset::Connectivity),
        0,
        &indices(mesh.connectivity),
    );
    if let Some(material) = mesh.material {
        pieces.put_indices(at(MeshDataset::Material), 0, &indices(material));
    }
    for (i, (_, v)) in mesh.node_sets.iter().enumerate() {
        pieces.put_indices(at(MeshDataset::NodeSet(i)), 0, &indices(v));
    }
    for (i, (_, v)) in mesh.cell_sets.iter().enumerate() {
        pieces.put_indices(at(MeshDataset::CellSet(i)), 0, &indices(v));
    }
    for (i, (_, v)) in mesh.face_sets.iter().enumerate() {
        pieces.put_indices(at(MeshDataset::FaceSet(i)), 0, &indices(v.as_flattened()));
    }
    if let Some(list) = mesh.node_indicators {
        let flags = |members: &[usize], n: usize| {
            let mut flags = vec![0u64; n];
            members.iter().for_each(|&m| flags[m] = 1);
            flags
        };
        for (i, (_, nodes)) in list.iter().enumerate() {
            let values = flags(nodes, shape.n_nodes);
            pieces.put_indices(at(MeshDataset::NodeIndicator(i)), 0, &values);
        }
        for (i, (_, cells)) in mesh.cell_sets.iter().enumerate() {
            let values = flags(cells, shape.n_cells);
            pieces.put_indices(at(MeshDataset::CellIndicator(i)), 0, &values);
        }
    }
}

/// Reserves the datasets of `/mesh` (in [`MeshShape::dataset`] order) and writes its groups;
/// returns the datasets and `/mesh`'s object header.
fn reserve_mesh(file: &mut AppendFile, shape: &MeshShape) -> std::io::Result<(Vec<Reserved>, u64)> {
    let (n_nodes, n_cells) = (shape.n_nodes as u64, shape.n_cells as u64);
    let mut datasets = vec![
        Reserved::append(file, Element::F64, &[shape.n_nodes, 3], IndexBound::None)?,
        Reserved::append(
            file,
            Element::I64,
            &[shape.n_cells, shape.nodes_per_cell],
            IndexBound::Below(n_nodes),
        )?,
    ];
    let mut links = vec![
        ("coordinates".to_owned(), datasets[0].header),
        ("connectivity".to_owned(), datasets[1].header),
    ];
    if shape.has_material {
        let material = Reserved::append(file, Element::I64, &[shape.n_cells], IndexBound::None)?;
        links.push(("material".to_owned(), material.header));
        datasets.push(material);
    }
    let mut sets = Vec::new();
    for (kind, list, bound) in [
        ("nodes", &shape.node_sets, n_nodes),
        ("cells", &shape.cell_sets, n_cells),
    ] {
        let mut members = Vec::with_capacity(list.len());
        for (name, len) in list {
            let set = Reserved::append(file, Element::I64, &[*len], IndexBound::Below(bound))?;
            members.push((name.clone(), set.header));
            datasets.push(set);
        }
        sets.push((
            kind.to_owned(),
            Group::write_all(file, members, Vec::new())?,
        ));
    }
    let mut faces = Vec::with_capacity(shape.face_sets.len());
    for (name, pairs) in &shape.face_sets {
        let set = Reserved::append(
            file,
            Element::I64,
            &[*pairs, 2],
            IndexBound::FacePairs(n_cells),
        )?;
        faces.push((name.clone(), set.header));
        datasets.push(set);
    }
    sets.push((
        "faces".to_owned(),
        Group::write_all(file, faces, Vec::new())?,
    ));
    links.push(("sets".to_owned(), Group::write_all(file, sets, Vec::new())?));
    if let Some(names) = &shape.node_indicators {
        let mut groups = Vec::new();
        for (kind, list, rows) in [
            ("nodes", names.clone(), shape.n_nodes),
            (
                "cells",
                shape.cell_sets.iter().map(|(n, _)| n.clone()).collect(),
                shape.n_cells,
            ),
        ] {
            let mut members = Vec::with_capacity(list.len());
            for name in list {
                let flags = Reserved::append(file, Element::I64, &[rows], IndexBound::Below(2))?;
                members.push((name, flags.header));
                datasets.push(flags);
            }
            groups.push((
                kind.to_owned(),
                Group::write_all(file, members, Vec::new())?,
            ));
        }
        links.push((
            "indicators".to_owned(),
            Group::write_all(file, groups, Vec::new())?,
        ));
    }
    Ok((datasets, Group::write_all(file, links, Vec::new())?))
}
