//! Checks, before a run, that its output files can be written: what `hexfem check` reports and
//! what `hexfem run` verifies before building the problem.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::OutputError;

/// Longest run name in bytes: the longest file name written, `.<name>.summary.json.tmp`, must
/// fit the 255 bytes that Linux file systems allow.
pub const MAX_NAME_BYTES: usize = 255 - ".".len() - ".summary.json.tmp".len();

/// The files a run named `name` writes in `dir`: HDF5, XDMF, summary, step log.
pub fn output_files(dir: &Path, name: &str) -> [PathBuf; 4] {
    ["h5", "xdmf", "summary.json", "steps.jsonl"].map(|ext| dir.join(format!("{name}.{ext}")))
}

/// The files of an earlier run named `name` in `dir` that a new run would replace (results,
/// descriptions, logs; `<name>_vtu/` with `<name>.pvd`), in a fixed order; empty when there are
/// none.
pub fn existing_results(dir: &Path, name: &str) -> Vec<PathBuf> {
    [
        "h5",
        "xdmf",
        "last.xdmf",
        "summary.json",
        "steps.jsonl",
        "probes.csv",
        "pvd",
    ]
    .iter()
    .map(|ext| dir.join(format!("{name}.{ext}")))
    .chain(std::iter::once(dir.join(format!("{name}_vtu"))))
    .filter(|path| fs::symlink_metadata(path).is_ok())
    .collect()
}

/// Checks that `name` is a usable file name and that `dir` exists as a writable directory or
/// can be created (its nearest existing ancestor is a writable directory), by creating and
/// removing a probe file there. Nothing else is left behind.
pub fn preflight(dir: &Path, name: &str) -> Result<(), OutputError> {
    let bad = |why: String| Err(OutputError::Name(why));
    if name.is_empty() || name == "." || name == ".." {
        return bad(format!("`{name}` is not a file name"));
    }
    if name.contains(['/', '\0']) {
        return bad("the name contains `/` or NUL".into());
    }
    if name.len() > MAX_NAME_BYTES {
        return bad(format!(
            "the name is {} bytes long; at most {MAX_NAME_BYTES} are possible (file names have \
             at most 255 bytes, and the longest one written adds `.` and `.summary.json.tmp`)",
            name.len()
        ));
    }
    // The nearest existing ancestor (the directory itself when it exists).
    let mut existing = dir;
    let meta = loop {
        match fs::metadata(existing) {
            Ok(meta) => break meta,
            Err(_) => match existing.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => existing = parent,
                _ => {
                    existing = Path::new(".");
                }
            },
        }
    };
    if !meta.is_dir() {
        let why = if existing == dir {
            "is not a directory".to_owned()
        } else {
            "is not a directory, so the output directory cannot be created in it".to_owned()
        };
        return Err(OutputError::Io {
            path: existing.to_owned(),
            source: io::Error::new(io::ErrorKind::NotADirectory, why),
        });
    }
    // Unique per call: concurrent checks of one directory must not collide.
    static PROBES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let probe = existing.join(format!(
        ".hexfem-probe-{}-{}",
        std::process::id(),
        PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = fs::remove_file(&probe);
        }
        Err(source) => {
            return Err(OutputError::Io {
                path: existing.to_owned(),
                source: io::Error::new(
                    source.kind(),
                    format!("the output directory cannot be written here: {source}"),
                ),
            })
        }
    }
    for file in output_files(dir, name) {
        if file.is_dir() {
            return Err(OutputError::Io {
                path: file,
                source: io::Error::new(
                    io::ErrorKind::IsADirectory,
                    "is a directory, where an output file would be written",
                ),
            });
        }
    }
    Ok(())
}
