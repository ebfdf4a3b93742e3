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
use super::data::{Center, MeshData, StepData};
use super::faults::Faults;
use super::h5::encode::{self, Element};
use super::h5::{AppendFile, Group};
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
        let h5_name = format!("{name}.h5");
        let h5_path = dir.join(&h5_name);
        let layout = MeshLayout {
            h5_name,
            n_nodes: mesh.coordinates.len(),
            n_cells: mesh.n_cells(),
            nodes_per_cell: mesh.nodes_per_cell,
            has_material: mesh.material.is_some(),
        };
        let tmp = temp_path(&h5_path);
        let io_error = |path: &Path| {
            let path = path.to_owned();
            move |source| OutputError::Io { path, source }
        };
        let mut file = AppendFile::create(&tmp, faults.clone()).map_err(io_error(&tmp))?;
        let written = (|| {
            let mesh_header = write_mesh(&mut file, mesh)?;
            let mut steps = Group::new();
            let steps_header = steps.write_header(&mut file, Vec::new())?;
            let root = Group::write_all(
                &mut file,
                vec![("mesh".into(), mesh_header), ("steps".into(), steps_header)],
                Vec::new(),
            )?;
            file.commit(root)?;
            file.rename(&h5_path)?;
            Ok((mesh_header, steps))
        })();
        let (mesh_header, steps) = match written {
            Ok(ok) => ok,
            Err(source) => {
                let _ = fs::remove_file(&tmp);
                return Err(OutputError::Io {
                    path: h5_path,
                    source,
                });
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
        if let Some(first) = &self.failed {
            return Err(OutputError::InvalidData(format!(
                "no more steps are written after the earlier error: {first}"
            )));
        }
        if let Some(last) = self.last_step {
            if data.step <= last {
                return Err(OutputError::InvalidData(format!(
                    "step {} written after step {last}: steps must increase",
                    data.step
                )));
            }
        }
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

        let group = xdmf::step_group(data.step);
        let committed = (|| {
            let mut links = Vec::with_capacity(fields.len());
            for f in &fields {
                let components = f.kind.components();
                let rows = f.values.len() / components;
                let shape: &[usize] = if components == 1 {
                    &[rows]
                } else {
                    &[rows, components]
                };
                let header = write_f64(&mut self.file, shape, f.values)?;
                links.push((f.name.to_owned(), header));
            }
            let step_header = Group::write_all(
                &mut self.file,
                links,
                std::iter::once(encode::scalar_f64_attribute(
                    "load_factor",
                    data.load_factor,
                ))
                .chain(
                    data.next_increment
                        .map(|v| encode::scalar_f64_attribute("next_increment", v)),
                )
                .chain(data.time.map(|v| encode::scalar_f64_attribute("time", v)))
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
            self.file.abandon();
            let error = OutputError::Io {
                path: self.h5_path.clone(),
                source,
            };
            self.failed = Some(error.to_string());
            return Err(error);
        }
        self.last_step = Some(data.step);
        self.steps_written += 1;

        let entry = StepEntry {
            step: data.step,
            load_factor: data.load_factor,
            fields: fields
                .iter()
                .map(|f| FieldEntry {
                    name: f.name,
                    center: f.center,
                    kind: f.kind,
                })
                .collect(),
        };
        let last = xdmf::render_single(&self.mesh, &entry);
        let written = self
            .xdmf
            .append(&self.mesh, &entry)
            .and_then(|()| write_atomic(&self.last_xdmf, last.as_bytes(), &self.faults))
            .and_then(|()| match &mut self.vtu {
                Some(vtu) => vtu.write_step(data),
                None => Ok(()),
            });
        if let Err(error) = written {
            self.failed = Some(error.to_string());
            return Err(error);
        }
        Ok(())
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

/// Writes `/mesh` and returns its object header.
fn write_mesh(file: &mut AppendFile, mesh: &MeshData) -> std::io::Result<u64> {
    let n_cells = mesh.n_cells();
    let mut links = vec![
        (
            "coordinates".to_owned(),
            write_f64(
                file,
                &[mesh.coordinates.len(), 3],
                mesh.coordinates.as_flattened(),
            )?,
        ),
        (
            "connectivity".to_owned(),
            write_indices(file, &[n_cells, mesh.nodes_per_cell], mesh.connectivity)?,
        ),
    ];
    if let Some(material) = mesh.material {
        links.push((
            "material".to_owned(),
            write_indices(file, &[n_cells], material)?,
        ));
    }
    let mut sets = Vec::new();
    for (kind, list) in [("nodes", mesh.node_sets), ("cells", mesh.cell_sets)] {
        let mut members = Vec::with_capacity(list.len());
        for (name, indices) in list {
            members.push((
                (*name).to_owned(),
                write_indices(file, &[indices.len()], indices)?,
            ));
        }
        sets.push((
            kind.to_owned(),
            Group::write_all(file, members, Vec::new())?,
        ));
    }
    let mut faces = Vec::with_capacity(mesh.face_sets.len());
    for (name, pairs) in mesh.face_sets {
        faces.push((
            (*name).to_owned(),
            write_indices(file, &[pairs.len(), 2], pairs.as_flattened())?,
        ));
    }
    sets.push((
        "faces".to_owned(),
        Group::write_all(file, faces, Vec::new())?,
    ));
    links.push(("sets".to_owned(), Group::write_all(file, sets, Vec::new())?));
    Group::write_all(file, links, Vec::new())
}

/// Appends a contiguous f64 dataset (its data, then its object header); returns the header.
fn write_f64(file: &mut AppendFile, shape: &[usize], values: &[f64]) -> std::io::Result<u64> {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    write_dataset(file, Element::F64, shape, &bytes)
}

/// Appends a contiguous i64 dataset of indices; returns its object header.
fn write_indices(file: &mut AppendFile, shape: &[usize], values: &[usize]) -> std::io::Result<u64> {
    // `MeshData::check` bounded every index by a count that fits in memory, so by i64.
    let bytes: Vec<u8> = values
        .iter()
        .flat_map(|&v| (v as i64).to_le_bytes())
        .collect();
    write_dataset(file, Element::I64, shape, &bytes)
}

fn write_dataset(
    file: &mut AppendFile,
    element: Element,
    shape: &[usize],
    bytes: &[u8],
) -> std::io::Result<u64> {
    let address = if bytes.is_empty() {
        encode::UNDEF
    } else {
        file.alloc(bytes)?
    };
    file.alloc(&encode::object_header(&[
        encode::dataspace(shape),
        encode::datatype(element),
        encode::fill_value(),
        encode::contiguous_layout(address, bytes.len() as u64),
    ]))
}
