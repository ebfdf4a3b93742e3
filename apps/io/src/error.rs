//! The output error: which file, and what failed.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// An error while writing results.
#[derive(Debug)]
pub enum OutputError {
    /// A file or directory could not be written.
    Io { path: PathBuf, source: io::Error },
    /// The HDF5 library reported an error; `context` says what was being done.
    Hdf5 {
        path: PathBuf,
        context: String,
        source: hdf5::Error,
    },
    /// The summary could not be serialised.
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// The run's name cannot name its output files.
    Name(String),
    /// The data handed to the writer is inconsistent (sizes, indices, names, step order);
    /// nothing was written.
    InvalidData(String),
}

impl fmt::Display for OutputError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            OutputError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            OutputError::Hdf5 {
                path,
                context,
                source,
            } => write!(f, "{}: {context}: {source}", path.display()),
            OutputError::Json { path, source } => write!(f, "{}: {source}", path.display()),
            OutputError::Name(message) => write!(f, "{message}"),
            OutputError::InvalidData(message) => write!(f, "invalid output data: {message}"),
        }
    }
}

/// The message of every variant already includes its cause's, so no cause is chained (a printed
/// chain would repeat it).
impl std::error::Error for OutputError {}
