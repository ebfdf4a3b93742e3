//! Where the Exodus II reader takes its netCDF variables from: [`ExodusSource`], implemented by
//! the classic-format parser ([`super::netcdf::NcFile`]) and by the netCDF-4 (HDF5) reader
//! ([`super::nc4::Nc4File`]), so that the mesh is built from either by the same code.

use super::netcdf::{NcError, NcFile};

/// The netCDF dimensions, variables and attributes an Exodus II mesh is read from. Values
/// come back in the variable's row-major order; errors name the variable.
pub(crate) trait ExodusSource {
    /// The length of dimension `name`, if the file has it.
    fn dim(&self, name: &str) -> Option<u64>;
    /// Whether the file has the variable `name`.
    fn has_variable(&self, name: &str) -> bool;
    /// The values of the numeric variable `name` as `f64`.
    fn read_f64(&self, name: &str) -> Result<Vec<f64>, NcError>;
    /// The values of the integer variable `name`.
    fn read_i64(&self, name: &str) -> Result<Vec<i64>, NcError>;
    /// The rows of the 2-d character variable `name`, each up to its first NUL.
    fn read_strings(&self, name: &str) -> Result<Vec<String>, NcError>;
    /// The character attribute `attribute` of variable `variable`, up to its first NUL.
    fn text_attribute(&self, variable: &str, attribute: &str) -> Option<String>;
}

/// The error of a variable the file lacks.
pub(crate) fn missing(name: &str) -> NcError {
    NcError {
        place: format!("variable '{name}'"),
        message: "is missing".into(),
    }
}

impl ExodusSource for NcFile<'_> {
    fn dim(&self, name: &str) -> Option<u64> {
        NcFile::dim(self, name)
    }

    fn has_variable(&self, name: &str) -> bool {
        self.variable(name).is_some()
    }

    fn read_f64(&self, name: &str) -> Result<Vec<f64>, NcError> {
        NcFile::read_f64(self, self.variable(name).ok_or_else(|| missing(name))?)
    }

    fn read_i64(&self, name: &str) -> Result<Vec<i64>, NcError> {
        NcFile::read_i64(self, self.variable(name).ok_or_else(|| missing(name))?)
    }

    fn read_strings(&self, name: &str) -> Result<Vec<String>, NcError> {
        NcFile::read_strings(self, self.variable(name).ok_or_else(|| missing(name))?)
    }

    fn text_attribute(&self, variable: &str, attribute: &str) -> Option<String> {
        self.variable(variable)?.attribute(attribute)?.text()
    }
}
