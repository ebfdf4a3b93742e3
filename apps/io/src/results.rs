//! HDF5 results file with its XDMF description, written step by step so that a run killed at any
//! point leaves files that open with every completed step.
//!
//! Layout of `<name>.h5`:
//! - `/mesh/coordinates` f64 `[n_nodes, 3]`, `/mesh/connectivity` i64 `[n_cells, 8 | 27]` (VTK
//!   order), `/mesh/sets/nodes/<set>` and `/mesh/sets/cells/<set>` i64 index lists;
//! - `/steps/<6-digit step>/` with attribute `load_factor` (f64) and datasets `displacement`,
//!   `reaction` `[n_nodes, 3]`, `cauchy_stress` `[n_cells, 9 | 6]`, `von_mises`, `jacobian`,
//!   `energy_density` `[n_cells]`, whichever the step provides.
//!
//! Crash safety: the HDF5 file is opened only while a step is written, then flushed and closed
//! (so no library lock or dirty cache outlives the call, and other programs can read the file
//! while the run goes on); only then is the XDMF file replaced atomically, so it never names a
//! dataset that is not complete on disk.

use std::fs;
use std::path::{Path, PathBuf};

use hdf5::{File, Group};

use super::atomic::write_atomic;
use super::data::{Center, MeshData, StepData};
use super::xdmf::{self, FieldEntry, MeshLayout, StepEntry};
use super::OutputError;

/// Writes `<dir>/<name>.h5` and `<dir>/<name>.xdmf`. Calling order: [`ResultsWriter::create`]
/// once, then [`ResultsWriter::write_step`] for each converged step with increasing indices.
#[derive(Debug)]
pub struct ResultsWriter {
    h5_path: PathBuf,
    xdmf_path: PathBuf,
    mesh: MeshLayout,
    steps: Vec<StepEntry>,
}

impl ResultsWriter {
    /// Creates (or truncates) the HDF5 file with the mesh and writes an XDMF file with an empty
    /// time collection. Creates `dir` if needed.
    pub fn create(dir: &Path, name: &str, mesh: &MeshData) -> Result<Self, OutputError> {
        mesh.check()?;
        fs::create_dir_all(dir).map_err(|source| OutputError::Io {
            path: dir.to_owned(),
            source,
        })?;
        let h5_name = format!("{name}.h5");
        let writer = ResultsWriter {
            h5_path: dir.join(&h5_name),
            xdmf_path: dir.join(format!("{name}.xdmf")),
            mesh: MeshLayout {
                h5_name,
                n_nodes: mesh.coordinates.len(),
                n_cells: mesh.n_cells(),
                nodes_per_cell: mesh.nodes_per_cell,
            },
            steps: Vec::new(),
        };
        let h5 = |context: &str| writer.h5_error(context);
        let file = File::create(&writer.h5_path).map_err(h5("cannot create the file"))?;
        writer.write_mesh(&file, mesh)?;
        file.create_group("steps")
            .map_err(h5("cannot create /steps"))?;
        file.flush().map_err(h5("cannot flush"))?;
        file.close().map_err(h5("cannot close"))?;
        writer.write_xdmf()?;
        Ok(writer)
    }

    /// The HDF5 file.
    pub fn h5_path(&self) -> &Path {
        &self.h5_path
    }

    /// The XDMF file.
    pub fn xdmf_path(&self) -> &Path {
        &self.xdmf_path
    }

    /// Number of steps written.
    pub fn steps_written(&self) -> usize {
        self.steps.len()
    }

    /// Appends a converged step: writes its group and datasets, flushes and closes the HDF5
    /// file, then rewrites the XDMF file. Sizes and the step order are checked first; on an
    /// [`OutputError::InvalidData`] nothing is written.
    pub fn write_step(&mut self, data: &StepData) -> Result<(), OutputError> {
        if let Some(last) = self.steps.last() {
            if data.step <= last.step {
                return Err(OutputError::InvalidData(format!(
                    "step {} written after step {}: steps must increase",
                    data.step, last.step
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

        let h5 = |context: &str| self.h5_error(context);
        let group_path = xdmf::step_group(data.step);
        let file = File::open_rw(&self.h5_path).map_err(h5("cannot reopen the file"))?;
        {
            let group = file
                .create_group(&group_path)
                .map_err(h5(&format!("cannot create {group_path}")))?;
            group
                .new_attr::<f64>()
                .create("load_factor")
                .and_then(|a| a.write_scalar(&data.load_factor))
                .map_err(h5(&format!("cannot write {group_path}@load_factor")))?;
            for f in &fields {
                let components = f.kind.components();
                let rows = f.values.len() / components;
                let shape: &[usize] = if components == 1 {
                    &[rows]
                } else {
                    &[rows, components]
                };
                write_dataset(&group, f.name, shape, f.values)
                    .map_err(h5(&format!("cannot write {group_path}/{}", f.name)))?;
            }
        }
        file.flush().map_err(h5("cannot flush"))?;
        file.close().map_err(h5("cannot close"))?;

        self.steps.push(StepEntry {
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
        });
        self.write_xdmf()
    }

    fn write_mesh(&self, file: &File, mesh: &MeshData) -> Result<(), OutputError> {
        let h5 = |context: &str| self.h5_error(context);
        let group = file
            .create_group("mesh")
            .map_err(h5("cannot create /mesh"))?;
        let n_nodes = mesh.coordinates.len();
        write_dataset(
            &group,
            "coordinates",
            &[n_nodes, 3],
            mesh.coordinates.as_flattened(),
        )
        .map_err(h5("cannot write /mesh/coordinates"))?;
        let connectivity = to_i64(mesh.connectivity)?;
        let shape = [self.mesh.n_cells, mesh.nodes_per_cell];
        write_dataset(&group, "connectivity", &shape, &connectivity)
            .map_err(h5("cannot write /mesh/connectivity"))?;
        let sets = group
            .create_group("sets")
            .map_err(h5("cannot create /mesh/sets"))?;
        for (kind, list) in [("nodes", mesh.node_sets), ("cells", mesh.cell_sets)] {
            let parent = sets
                .create_group(kind)
                .map_err(h5(&format!("cannot create /mesh/sets/{kind}")))?;
            for (name, indices) in list {
                write_dataset(&parent, name, &[indices.len()], &to_i64(indices)?)
                    .map_err(h5(&format!("cannot write /mesh/sets/{kind}/{name}")))?;
            }
        }
        let faces = sets
            .create_group("faces")
            .map_err(h5("cannot create /mesh/sets/faces"))?;
        for (name, pairs) in mesh.face_sets {
            write_dataset(
                &faces,
                name,
                &[pairs.len(), 2],
                &to_i64(pairs.as_flattened())?,
            )
            .map_err(h5(&format!("cannot write /mesh/sets/faces/{name}")))?;
        }
        Ok(())
    }

    fn write_xdmf(&self) -> Result<(), OutputError> {
        write_atomic(
            &self.xdmf_path,
            xdmf::render(&self.mesh, &self.steps).as_bytes(),
        )
    }

    fn h5_error(&self, context: &str) -> impl Fn(hdf5::Error) -> OutputError {
        let path = self.h5_path.clone();
        let context = context.to_owned();
        move |source| OutputError::Hdf5 {
            path: path.clone(),
            context: context.clone(),
            source,
        }
    }
}

/// Creates dataset `name` in `group` with `shape` and writes `values` (row-major).
fn write_dataset<T: hdf5::H5Type>(
    group: &Group,
    name: &str,
    shape: &[usize],
    values: &[T],
) -> hdf5::Result<()> {
    let dataset = group.new_dataset::<T>().shape(shape).create(name)?;
    if !values.is_empty() {
        dataset.write_raw(values)?;
    }
    Ok(())
}

fn to_i64(indices: &[usize]) -> Result<Vec<i64>, OutputError> {
    indices
        .iter()
        .map(|&i| {
            i64::try_from(i)
                .map_err(|_| OutputError::InvalidData(format!("index {i} does not fit in int64")))
        })
        .collect()
}
