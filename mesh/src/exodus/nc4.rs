//! The netCDF-4 side of the Exodus II reader: an HDF5 file read through the HDF5 library, its
//! netCDF variables being datasets of the root group, its dimensions datasets marked as
//! dimension scales (`CLASS = "DIMENSION_SCALE"`, the length their extent), attributes HDF5
//! attributes, character variables (`eb_names`) 2-d datasets of one-character strings.
//!
//! Sizes in the file are untrusted: a dataset announcing more values than
//! [`MAX_EXPANSION`] times the file's bytes could hold is refused before anything is allocated
//! (HDF5 compresses chunks, so a dataset may be larger than the file, but not by that much).
//! Every HDF5 failure (a truncated file, a damaged object header) is an error naming the
//! variable; the HDF5 library's own error printing is silenced (by the `hdf5` crate).

use std::path::Path;

use hdf5::types::{FixedAscii, FixedUnicode, TypeDescriptor, VarLenAscii, VarLenUnicode};

use super::netcdf::NcError;
use super::source::{missing, ExodusSource};

/// How many times its file's bytes a dataset may expand to (compression).
const MAX_EXPANSION: u64 = 4096;

/// The `NAME` attribute netCDF gives a dimension that is not also a variable.
const DIMENSION_ONLY: &str = "This is a netCDF dimension but not a netCDF variable";

/// An open netCDF-4 file.
pub(crate) struct Nc4File {
    file: hdf5::File,
    /// The file's size in bytes.
    bytes: u64,
}

fn variable_error(name: &str, message: impl Into<String>) -> NcError {
    NcError {
        place: format!("variable '{name}'"),
        message: message.into(),
    }
}

/// The text of a string attribute (scalar, or an array of one-character strings), up to its
/// first NUL and without trailing blanks.
fn text_of(attr: &hdf5::Attribute) -> Option<String> {
    let descriptor = attr.dtype().ok()?.to_descriptor().ok()?;
    let bytes: Vec<u8> = match descriptor {
        TypeDescriptor::FixedAscii(_) if attr.is_scalar() => attr
            .read_scalar::<FixedAscii<1024>>()
            .ok()?
            .as_bytes()
            .to_vec(),
        TypeDescriptor::FixedUnicode(_) if attr.is_scalar() => attr
            .read_scalar::<FixedUnicode<1024>>()
            .ok()?
            .as_bytes()
            .to_vec(),
        TypeDescriptor::FixedAscii(1) => attr
            .read_raw::<FixedAscii<1>>()
            .ok()?
            .iter()
            .map(|c| c.as_bytes().first().copied().unwrap_or(0))
            .collect(),
        TypeDescriptor::VarLenAscii if attr.is_scalar() => {
            attr.read_scalar::<VarLenAscii>().ok()?.as_bytes().to_vec()
        }
        TypeDescriptor::VarLenUnicode if attr.is_scalar() => attr
            .read_scalar::<VarLenUnicode>()
            .ok()?
            .as_bytes()
            .to_vec(),
        _ => return None,
    };
    Some(text_until_nul(&bytes))
}

fn text_until_nul(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end])
        .trim_end()
        .to_string()
}

impl Nc4File {
    /// Opens the HDF5 file at `path` for reading.
    pub fn open(path: &Path) -> Result<Self, NcError> {
        let file = hdf5::File::open(path).map_err(|e| NcError {
            place: "HDF5 file".into(),
            message: format!("cannot be read: {e} (a damaged or truncated netCDF-4 file?)"),
        })?;
        let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
        Ok(Nc4File { file, bytes })
    }

    /// Whether the file has the dimensions of an Exodus II mesh (`num_nodes` or `num_dim`).
    pub fn has_exodus_dimensions(&self) -> bool {
        self.dim("num_nodes").is_some() || self.dim("num_dim").is_some()
    }

    /// Whether the root group links the name `name` (never a path: `/` is refused).
    fn has_link(&self, name: &str) -> bool {
        !name.is_empty() && !name.contains('/') && name != "." && self.file.link_exists(name)
    }

    /// The dataset `name` of the root group, if it opens.
    fn dataset(&self, name: &str) -> Option<hdf5::Dataset> {
        self.has_link(name)
            .then(|| self.file.dataset(name).ok())
            .flatten()
    }

    fn is_dimension_scale(ds: &hdf5::Dataset) -> bool {
        ds.attr("CLASS")
            .ok()
            .and_then(|a| text_of(&a))
            .is_some_and(|c| c == "DIMENSION_SCALE")
    }

    /// The dataset of variable `name`, checked to hold at most what the file could.
    fn variable(&self, name: &str) -> Result<(hdf5::Dataset, TypeDescriptor, usize), NcError> {
        if !self.has_link(name) {
            return Err(missing(name));
        }
        let fail = |e: hdf5::Error| variable_error(name, format!("cannot be read: {e}"));
        let ds = self.file.dataset(name).map_err(fail)?;
        if !self.is_variable(&ds) {
            return Err(missing(name));
        }
        let descriptor = ds.dtype().and_then(|t| t.to_descriptor()).map_err(fail)?;
        let shape = ds.get_shape().map_err(fail)?;
        let count = shape
            .iter()
            .try_fold(1u64, |acc, &n| acc.checked_mul(n as u64))
            .ok_or_else(|| variable_error(name, "has an impossible number of values"))?;
        let bytes = count.saturating_mul(descriptor.size() as u64);
        if bytes > self.bytes.saturating_mul(MAX_EXPANSION) {
            return Err(variable_error(
                name,
                format!(
                    "announces {count} values ({bytes} bytes), more than a file of {} bytes can \
                     hold (corrupt file?)",
                    self.bytes
                ),
            ));
        }
        Ok((ds, descriptor, count as usize))
    }

    /// Whether `ds` is a netCDF variable (not a dimension alone).
    fn is_variable(&self, ds: &hdf5::Dataset) -> bool {
        !(Self::is_dimension_scale(ds)
            && ds
                .attr("NAME")
                .ok()
                .and_then(|a| text_of(&a))
                .is_some_and(|n| n.starts_with(DIMENSION_ONLY)))
    }
}

impl ExodusSource for Nc4File {
    fn dim(&self, name: &str) -> Option<u64> {
        let ds = self.dataset(name)?;
        if !Self::is_dimension_scale(&ds) {
            return None;
        }
        match ds.get_shape().ok()?.as_slice() {
            [n] => Some(*n as u64),
            _ => None,
        }
    }

    /// A linked name that does not open as a dataset (damaged) counts as a variable, so that
    /// reading it gives HDF5's error rather than "missing".
    fn has_variable(&self, name: &str) -> bool {
        self.has_link(name)
            && self
                .file
                .dataset(name)
                .map_or(true, |ds| self.is_variable(&ds))
    }

    fn read_f64(&self, name: &str) -> Result<Vec<f64>, NcError> {
        let (ds, descriptor, _) = self.variable(name)?;
        if !matches!(
            descriptor,
            TypeDescriptor::Float(_) | TypeDescriptor::Integer(_) | TypeDescriptor::Unsigned(_)
        ) {
            return Err(variable_error(
                name,
                format!("has type {descriptor}; numbers were expected"),
            ));
        }
        ds.read_raw::<f64>()
            .map_err(|e| variable_error(name, format!("cannot be read: {e}")))
    }

    fn read_i64(&self, name: &str) -> Result<Vec<i64>, NcError> {
        let (ds, descriptor, _) = self.variable(name)?;
        if !matches!(
            descriptor,
            TypeDescriptor::Integer(_) | TypeDescriptor::Unsigned(_)
        ) {
            return Err(variable_error(
                name,
                format!("has type {descriptor}; integers were expected"),
            ));
        }
        ds.read_raw::<i64>()
            .map_err(|e| variable_error(name, format!("cannot be read: {e}")))
    }

    fn read_strings(&self, name: &str) -> Result<Vec<String>, NcError> {
        let (ds, descriptor, _) = self.variable(name)?;
        let width = match (descriptor, ds.get_shape().as_deref()) {
            (TypeDescriptor::FixedAscii(1), Ok([_, width])) => *width,
            _ => {
                return Err(variable_error(
                    name,
                    "is not a 2-d character variable (a list of names)",
                ))
            }
        };
        if width == 0 {
            return Ok(Vec::new());
        }
        let chars: Vec<u8> = ds
            .read_raw::<FixedAscii<1>>()
            .map_err(|e| variable_error(name, format!("cannot be read: {e}")))?
            .iter()
            .map(|c| c.as_bytes().first().copied().unwrap_or(0))
            .collect();
        Ok(chars.chunks_exact(width).map(text_until_nul).collect())
    }

    fn text_attribute(&self, variable: &str, attribute: &str) -> Option<String> {
        let ds = self.dataset(variable)?;
        text_of(&ds.attr(attribute).ok()?)
    }
}
