//! Whole-file replacement that readers never see half done.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::OutputError;

/// Replaces `path` with `bytes` atomically: writes `.<name>.tmp` beside it, syncs it to disk and
/// renames it over `path`, so a reader (or a killed run) sees either the old or the new content.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let tmp = temp_path(path);
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| OutputError::Io { path, source }
    };
    let result = fs::File::create(&tmp)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_all()
        })
        .map_err(io(&tmp))
        .and_then(|()| fs::rename(&tmp, path).map_err(io(path)));
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// `.<file name>.tmp` in the same directory (a rename within one directory is atomic).
fn temp_path(path: &Path) -> PathBuf {
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
        write_atomic(&path, b"first").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second");
        assert!(!temp_path(&path).exists());
        let missing = dir.join("no/such/dir/a.json");
        assert!(matches!(
            write_atomic(&missing, b"x"),
            Err(OutputError::Io { .. })
        ));
        fs::remove_dir_all(&dir).unwrap();
    }
}
