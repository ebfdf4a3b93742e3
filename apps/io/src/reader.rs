//! Reading a results file back through the HDF5 library (an implementation independent of the
//! writer): what tests and tools use to check a run's output.

use std::path::{Path, PathBuf};

use super::OutputError;

/// An open results file (read-only).
pub struct ResultsReader {
    file: hdf5::File,
    path: PathBuf,
}

impl ResultsReader {
    /// Opens `path` with the HDF5 library.
    pub fn open(path: &Path) -> Result<Self, OutputError> {
        let file = hdf5::File::open(path).map_err(|source| OutputError::Hdf5 {
            path: path.to_owned(),
            context: "cannot open the file".into(),
            source,
        })?;
        Ok(ResultsReader {
            file,
            path: path.to_owned(),
        })
    }

    fn error(&self, context: String) -> impl Fn(hdf5::Error) -> OutputError + '_ {
        move |source| OutputError::Hdf5 {
            path: self.path.clone(),
            context: context.clone(),
            source,
        }
    }

    /// Index and load factor of every step in the file, in order.
    pub fn steps(&self) -> Result<Vec<(usize, f64)>, OutputError> {
        let steps = self
            .file
            .group("steps")
            .map_err(self.error("cannot open /steps".into()))?;
        let mut out = Vec::new();
        for name in steps
            .member_names()
            .map_err(self.error("cannot list /steps".into()))?
        {
            let index = name.parse().map_err(|_| {
                OutputError::InvalidData(format!("/steps/{name} is not a step number"))
            })?;
            let load_factor = steps
                .group(&name)
                .and_then(|g| g.attr("load_factor"))
                .and_then(|a| a.read_scalar::<f64>())
                .map_err(self.error(format!("cannot read /steps/{name}@load_factor")))?;
            out.push((index, load_factor));
        }
        Ok(out)
    }

    /// The f64 attribute `name` of the step group `/steps/NNNNNN`, `None` where it is absent.
    pub fn step_attribute(&self, step: usize, name: &str) -> Result<Option<f64>, OutputError> {
        let group = self
            .file
            .group(&format!("steps/{step:06}"))
            .map_err(self.error(format!("cannot open /steps/{step:06}")))?;
        if !group
            .attr_names()
            .map_err(self.error(format!("cannot list the attributes of /steps/{step:06}")))?
            .iter()
            .any(|a| a == name)
        {
            return Ok(None);
        }
        group
            .attr(name)
            .and_then(|a| a.read_scalar::<f64>())
            .map(Some)
            .map_err(self.error(format!("cannot read /steps/{step:06}@{name}")))
    }

    /// Whether the dataset at `path` stores IEEE binary64 values (a float32 dataset reads as
    /// f64 too, widened: callers that must not accept it ask first).
    pub fn is_f64(&self, path: &str) -> Result<bool, OutputError> {
        let dtype = self
            .file
            .dataset(path)
            .and_then(|d| d.dtype())
            .map_err(self.error(format!("cannot read the type of {path}")))?;
        Ok(dtype.is::<f64>())
    }

    /// Shape and values (row-major) of the f64 dataset at `path` (`/steps/000001/displacement`).
    pub fn read_f64(&self, path: &str) -> Result<(Vec<usize>, Vec<f64>), OutputError> {
        let dataset = self
            .file
            .dataset(path)
            .map_err(self.error(format!("cannot open {path}")))?;
        let values = dataset
            .read_raw::<f64>()
            .map_err(self.error(format!("cannot read {path}")))?;
        Ok((dataset.shape(), values))
    }

    /// Shape of the f64 dataset at `path` and the values of its rows `rows` (row-major; rows
    /// past the end are left out): a part of a dataset, read without the rest.
    pub fn read_f64_rows(
        &self,
        path: &str,
        rows: std::ops::Range<usize>,
    ) -> Result<(Vec<usize>, Vec<f64>), OutputError> {
        let dataset = self
            .file
            .dataset(path)
            .map_err(self.error(format!("cannot open {path}")))?;
        let shape = dataset.shape();
        let end = rows.end.min(shape.first().copied().unwrap_or(0));
        let start = rows.start.min(end);
        let what = || format!("cannot read rows {start}..{end} of {path}");
        let values = match shape.len() {
            1 => dataset
                .read_slice_1d::<f64, _>(start..end)
                .map_err(self.error(what()))?
                .iter()
                .copied()
                .collect(),
            2 => dataset
                .read_slice_2d::<f64, _>((start..end, ..))
                .map_err(self.error(what()))?
                .iter()
                .copied()
                .collect(),
            _ => {
                return Err(OutputError::InvalidData(format!(
                    "{path} has {} dimensions, not 1 or 2",
                    shape.len()
                )))
            }
        };
        Ok((shape, values))
    }

    /// Shape and values of the integer dataset at `path` (`/mesh/connectivity`).
    pub fn read_i64(&self, path: &str) -> Result<(Vec<usize>, Vec<i64>), OutputError> {
        let dataset = self
            .file
            .dataset(path)
            .map_err(self.error(format!("cannot open {path}")))?;
        let values = dataset
            .read_raw::<i64>()
            .map_err(self.error(format!("cannot read {path}")))?;
        Ok((dataset.shape(), values))
    }

    /// Paths of every dataset in the file, depth first (`/mesh/connectivity`, ...).
    pub fn dataset_paths(&self) -> Result<Vec<String>, OutputError> {
        let mut out = Vec::new();
        self.collect(&self.file, "", &mut out)?;
        Ok(out)
    }

    fn collect(
        &self,
        group: &hdf5::Group,
        prefix: &str,
        out: &mut Vec<String>,
    ) -> Result<(), OutputError> {
        for name in group
            .member_names()
            .map_err(self.error(format!("cannot list {prefix}/")))?
        {
            let path = format!("{prefix}/{name}");
            match group.group(&name) {
                Ok(child) => self.collect(&child, &path, out)?,
                Err(_) => out.push(path),
            }
        }
        Ok(())
    }
}
