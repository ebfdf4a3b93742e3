//! Run configuration: typed, validated parameters read from a YAML file.
//!
//! Reading goes text -> YAML tree with origins (`tree`) -> `--set` overrides applied to the tree
//! -> typed [`Config`] (`de`, every struct rejects unknown keys) -> [`Config::validate`]; then
//! `convert` hands the solution layer its plain parameters ([`Config::problem_params`], `From`
//! for the solver sections). Every error names the file and, where the offending value was
//! written in it, `line:column`, or the `--set` argument that wrote it; unknown keys and choices
//! list the valid ones.
//!
//! ```yaml
//! mesh: { box: { cells: [8, 2, 2], lower: [0, 0, 0], upper: [10, 2, 2], order: 1 } }
//! materials:
//!   - { model: neo_hookean, young_modulus: 1.0e3, poisson_ratio: 0.3 }
//! boundary:
//!   dirichlet: [{ set: xmin, x: 0.0, y: 0.0, z: 0.0 }]
//!   traction: [{ set: xmax, value: [0, 0, -1.0e-3] }]
//! ```

pub mod campaign;
mod convert;
mod de;
mod error;
mod material;
mod params;
mod resolved;
pub mod schema;
mod tree;
mod validate;

use std::fs;
use std::io::Read;
use std::path::Path;

use serde::Deserialize;

pub use error::{ConfigError, ErrorKind};
pub use material::{CellSelection, MaterialError, MaterialModel, MaterialParams};
pub use params::{
    BoundaryParams, BoxMesh, ComputeDevice, Config, DirichletParams, ElementFormulation, Forcing,
    GeometricSet, GeometricSetKind, GlobalProbe, GmshMesh, LineSearch, LinearSolverMethod,
    LinearSolverParams, LoadingParams, MeshSource, NewtonParams, OutputField, OutputParams,
    OutputPrecision, PointProbe, ProbesParams, QuadratureParams, RegionBox, RegionPlane, SetProbe,
    Source, TractionParams, TwistParams,
};
pub use tree::Origin;

/// Reads and validates the configuration at `path`.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    load_with_overrides(path, &[])
}

/// Reads the configuration at `path`, applies `overrides` (`key.path=value` arguments of
/// `--set`, in order; see [`load_str`]) and validates the result.
pub fn load_with_overrides(path: &Path, overrides: &[String]) -> Result<Config, ConfigError> {
    let bytes = fs::read(path).map_err(|e| ConfigError::io(path, e))?;
    let text = String::from_utf8(bytes).map_err(|e| invalid_utf8(path, e.as_bytes(), &e))?;
    load_str(&text, path, overrides)
}

/// The name of standard input in errors, and the stem of its default output name.
pub const STDIN_NAME: &str = "stdin";

/// Reads the configuration from `reader` (`hexfem run -`: standard input), applies `overrides`
/// and validates. Errors name it [`STDIN_NAME`]; a relative mesh path is relative to the
/// working directory (there is no YAML file to anchor it), and the default output name is
/// `stdin`.
pub fn load_reader(mut reader: impl Read, overrides: &[String]) -> Result<Config, ConfigError> {
    let path = Path::new(STDIN_NAME);
    let mut bytes = Vec::new();
    reader
        .read_to_end(&mut bytes)
        .map_err(|e| ConfigError::io(path, e))?;
    let text = String::from_utf8(bytes).map_err(|e| invalid_utf8(path, e.as_bytes(), &e))?;
    load_str(&text, path, overrides)
}

/// The error for a file that is not UTF-8: line and column (in characters) of the first bad
/// byte, and the byte.
fn invalid_utf8(path: &Path, bytes: &[u8], error: &std::string::FromUtf8Error) -> ConfigError {
    let good = error.utf8_error().valid_up_to();
    let before = String::from_utf8_lossy(&bytes[..good]);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    ConfigError::new(
        ErrorKind::Syntax,
        path,
        None,
        Some(Origin::File {
            line: line as u32,
            column: column as u32,
        }),
        None,
        format!(
            "the file is not valid UTF-8 (byte 0x{:02x}); save it as UTF-8 text",
            bytes[good]
        ),
    )
}

/// Parses configuration `text` as if read from `file` (named in errors; its directory anchors
/// relative mesh paths, its stem is the default output name), applies `overrides` and validates.
///
/// An override is `key.path=value`: segments separated by `.`, sequence entries as `name[i]`
/// (or `name.i`), the value parsed as YAML (`4`, `1e-6`, `true`, `neo_hookean`, `[0, 0, -1]`,
/// `{ x: 0 }`). Keys missing from the file are created; a key or value the schema rejects is
/// reported with the `--set` argument in place of a line and column.
pub fn load_str(text: &str, file: &Path, overrides: &[String]) -> Result<Config, ConfigError> {
    let mut tree = tree::Node::parse(text).map_err(|e| ConfigError::syntax(file, text, &e))?;
    for arg in overrides {
        tree.apply_override(arg).map_err(|e| {
            ConfigError::new(
                ErrorKind::Override,
                file,
                None,
                Some(Origin::Override(arg.clone())),
                (!e.path.is_empty()).then_some(e.path),
                e.message,
            )
        })?;
    }
    let mut config = Config::deserialize(de::NodeDe::root(&tree)).map_err(|e| {
        let (origin, path) = e.place.unzip();
        ConfigError::new(ErrorKind::Schema, file, Some(text), origin, path, e.message)
    })?;
    config.source = Source {
        file: file.to_owned(),
        text: text.to_owned(),
        origins: tree.origins(),
    };
    config.resolve_paths(file);
    config.validate()?;
    Ok(config)
}

impl Config {
    /// Anchors a relative Gmsh path at the configuration file's directory and fills in the
    /// default output name (the file's stem).
    fn resolve_paths(&mut self, file: &Path) {
        if let MeshSource::Gmsh(gmsh) = &mut self.mesh {
            if gmsh.file.is_relative() {
                if let Some(dir) = file.parent() {
                    gmsh.file = dir.join(&gmsh.file);
                }
            }
        }
        if self.output.name.is_none() {
            self.output.name = file
                .file_stem()
                .map(|stem| stem.to_string_lossy().into_owned());
        }
    }
}

#[cfg(test)]
mod tests;
