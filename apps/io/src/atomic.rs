//! The two write primitives of the text files: whole-file replacement that readers never see
//! half done, and in-place writes at a position. Each is one write position for [`Faults`].

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::faults::Faults;
use super::OutputError;

/// Replaces `path` with `bytes` atomically: writes `.<name>.tmp` beside it and renames it over
/// `path`, so a reader (or a killed run) sees either the old or the new content. Two write
/// positions: the temporary file, the rename. The temporary file is removed on error.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8], faults: &Faults) -> Result<(), OutputError> {
    let tmp = temp_path(path);
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| OutputError::Io { path, source }
    };
    let result = fs::File::create(&tmp)
        .and_then(|mut file| match faults.hit(bytes.len()) {
            Some(cut) => {
                file.write_all(&bytes[..cut])?;
                Err(faults.stop())
            }
            None => file.write_all(bytes),
        })
        .map_err(io(&tmp))
        .and_then(|()| {
            if faults.hit(0).is_some() {
                return Err(faults.stop()).map_err(io(path));
            }
            fs::rename(&tmp, path).map_err(io(path))
        });
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Writes `bytes` at `offset` of `file` (one write position).
pub(crate) fn write_at_position(
    file: &fs::File,
    faults: &Faults,
    offset: u64,
    bytes: &[u8],
) -> io::Result<()> {
    if let Some(cut) = faults.hit(bytes.len()) {
        file.write_all_at(&bytes[..cut], offset)?;
        return Err(faults.stop());
    }
    file.write_all_at(bytes, offset)
}

/// `.<file name>.tmp` in the same directory (a rename within one directory is atomic).
pub(crate) fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.tmp"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("hexfem-atomic-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.json");
        write_atomic(&path, b"first", &Faults::none()).unwrap();
        write_atomic(&path, b"second", &Faults::none()).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second");
        assert!(!temp_path(&path).exists());
        let missing = dir.join("no/such/dir/a.json");
        assert!(matches!(
            write_atomic(&missing, b"x", &Faults::none()),
            Err(OutputError::Io { .. })
        ));
        fs::remove_dir_all(&dir).unwrap();
    }
}
