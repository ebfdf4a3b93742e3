//! The crate's single error type.

use std::path::PathBuf;

/// Everything that can go wrong while building, reading or querying a mesh.
#[derive(Debug, thiserror::Error)]
pub enum MeshError {
    /// A generator was given an unusable specification.
    #[error("invalid box specification: {0}")]
    InvalidSpec(String),

    /// A set name that is neither a node set nor a face set (or not a cell set).
    #[error("unknown {kind} set '{name}'; available: {available}")]
    UnknownSet {
        /// "node/face" or "cell".
        kind: &'static str,
        name: String,
        /// Comma-separated list of the names that do exist ("(none)" if empty).
        available: String,
    },

    /// The mesh violates an invariant checked by [`crate::HexMesh::validate`].
    #[error("invalid mesh: {0}")]
    Invalid(String),

    /// A mesh file could not be read from disk. The message includes the I/O error's, which is
    /// therefore not also the [`std::error::Error::source`] (a printed chain would repeat it).
    #[error("cannot read '{path}': {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },

    /// A Gmsh file is malformed or uses something this reader does not support.
    /// `source_name` is the file path, or `<text>` for [`crate::gmsh::parse_gmsh`].
    #[error("{source_name}:{line}: {message}")]
    Gmsh {
        source_name: String,
        line: usize,
        message: String,
    },

    /// An Exodus II (netCDF) file is malformed or uses something this reader does not support.
    /// `place` names the netCDF variable (`variable 'connect1'`), dimension or header byte.
    #[error("{source_name}: {place}: {message}")]
    Exodus {
        source_name: String,
        place: String,
        message: String,
    },

    /// An Abaqus input file is malformed or uses something this reader does not support.
    #[error("{source_name}:{line}:{column}: {message}")]
    Abaqus {
        source_name: String,
        line: usize,
        column: usize,
        message: String,
    },

    /// A file in a format hexfem does not read (named, with how to convert it), or one whose
    /// format is not recognised.
    #[error("{source_name}: {message}")]
    Format {
        source_name: String,
        message: String,
    },
}
