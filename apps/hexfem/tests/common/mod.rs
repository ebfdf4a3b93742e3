//! What the binary's tests share: scratch directories, the check of the files a failed or
//! killed run left, a tiny file system to fill.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use io::{ResultsReader, RunStatus, Summary};

/// A scratch directory, removed (with everything in it) when dropped.
pub struct Scratch(pub PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh scratch directory `hexfem-{prefix}-{pid}-{tag}` in the temporary directory.
pub fn scratch_in(prefix: &str, tag: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("hexfem-{prefix}-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// Checks well-formedness (tags nest, processing instructions skipped) and returns the step
/// numbers of the XDMF grids (`<Grid Name="step_000003"`).
pub fn xdmf_steps(xml: &str) -> Vec<usize> {
    let mut stack: Vec<&str> = Vec::new();
    let mut steps = Vec::new();
    let mut rest = xml;
    while let Some(open) = rest.find('<') {
        if rest[open..].starts_with("<?") {
            let end = rest[open..].find("?>").expect("unterminated instruction") + open;
            rest = &rest[end + 2..];
            continue;
        }
        let close = rest[open..].find('>').expect("unterminated tag") + open;
        let tag = &rest[open + 1..close];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop(), Some(name), "mismatched </{name}>");
        } else if !tag.ends_with('/') {
            let name = tag.split_whitespace().next().unwrap();
            if let Some(step) = tag.strip_prefix("Grid Name=\"step_") {
                steps.push(step[..6].parse().unwrap());
            }
            stack.push(name);
        }
        rest = &rest[close + 1..];
    }
    assert!(stack.is_empty(), "unclosed tags {stack:?}");
    steps
}

/// What a (possibly interrupted) run left in `dir`: the HDF5 file, if present, opens and holds
/// steps `0..=n` (0: undeformed) with finite displacements; the XDMF files, if present, are well
/// formed and name only those steps; the summary, if present, parses and lists no other step.
/// Returns `n`, the converged steps kept.
pub fn check_leftovers(dir: &Path, context: &str) -> usize {
    let h5 = dir.join("twisting_column.h5");
    let committed = if h5.exists() {
        let file = ResultsReader::open(&h5).unwrap_or_else(|e| panic!("{context}: {e}"));
        let steps = file.steps().unwrap_or_else(|e| panic!("{context}: {e}"));
        // Step 0 is the undeformed state, then the converged steps.
        for (i, &(step, load)) in steps.iter().enumerate() {
            assert_eq!(step, i, "{context}");
            assert!((0.0..=1.0).contains(&load), "{context}");
            assert_eq!(load == 0.0, step == 0, "{context}");
            let (shape, u) = file
                .read_f64(&format!("/steps/{step:06}/displacement"))
                .unwrap_or_else(|e| panic!("{context}: {e}"));
            assert_eq!(shape[1], 3, "{context}");
            assert!(u.iter().all(|v| v.is_finite()), "{context}: step {step}");
        }
        steps.len().saturating_sub(1)
    } else {
        0
    };
    let xdmf = dir.join("twisting_column.xdmf");
    if xdmf.exists() {
        let grids = xdmf_steps(&std::fs::read_to_string(&xdmf).unwrap());
        assert_eq!(grids, (0..grids.len()).collect::<Vec<_>>(), "{context}");
        assert!(
            grids.len() <= committed + 1,
            "{context}: XDMF names {grids:?}"
        );
    }
    let last = dir.join("twisting_column.last.xdmf");
    if last.exists() {
        let grids = xdmf_steps(&std::fs::read_to_string(&last).unwrap());
        assert!(
            grids.len() == 1 && grids[0] <= committed,
            "{context}: {grids:?}"
        );
    }
    let summary = dir.join("twisting_column.summary.json");
    if summary.exists() {
        let summary = Summary::read(&summary).unwrap_or_else(|e| panic!("{context}: {e}"));
        let listed = summary.steps.unwrap();
        assert!(
            listed.len() <= committed,
            "{context}: summary lists {}",
            listed.len()
        );
    }
    committed
}

/// A small file system mounted for one test (root only); unmounted and removed when dropped.
pub struct TinyFs(pub Scratch);

impl TinyFs {
    /// Mounts a tmpfs of `kib` KiB, or `None` with a message when that is not possible.
    pub fn mount(tag: &str, kib: usize) -> Option<TinyFs> {
        let dir = scratch_in("fs", tag);
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(&*dir)
            .stderr(Stdio::null())
            .status();
        match status {
            Ok(s) if s.success() => Some(TinyFs(dir)),
            _ => {
                eprintln!("cannot mount a tmpfs (not root?): the full-disk test is skipped");
                None
            }
        }
    }
}

impl Drop for TinyFs {
    fn drop(&mut self) {
        let unmounted = Command::new("umount")
            .arg(&*self.0)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !unmounted {
            // Busy (a process of a parallel test still inside?): detach it now, freed when idle.
            let _ = Command::new("umount").arg("-l").arg(&*self.0).status();
        }
    }
}

/// Runs the twisting column of 12 steps (`run(dir)`, its output in `dir`) on file systems too
/// small for it (8 to 192 KiB; the whole run writes about 220 KiB): each run fails with the error
/// that stopped it (no space left, no panic), names the steps kept, and leaves files that open
/// with those steps; the summary, where it was written, records the failure. The disk fills up
/// at three places at least. Skipped (a message) where no tmpfs can be mounted.
pub fn fill_the_disk(tag: &str, run: impl Fn(&Path) -> Output) {
    let mut kept = std::collections::BTreeSet::new();
    for kib in [8, 16, 32, 64, 96, 128, 160, 192] {
        let Some(fs) = TinyFs::mount(&format!("{tag}-full-{kib}"), kib) else {
            return;
        };
        let dir = &fs.0;
        let out = run(dir);
        let context = format!("{tag}: tmpfs of {kib} KiB");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{context}: the run fits: {err}");
        assert!(err.contains("No space left on device"), "{context}: {err}");
        assert!(!err.contains("panicked"), "{context}: {err}");
        let committed = check_leftovers(dir, &context);
        kept.insert(committed);
        if committed > 0 {
            assert!(
                err.contains(&format!("{committed} converged steps are in")),
                "{context}: {err}"
            );
        }
        let summary_path = dir.join("twisting_column.summary.json");
        if summary_path.exists() {
            match Summary::read(&summary_path).unwrap().status {
                RunStatus::Failed { message } => {
                    assert!(message.contains("No space left"), "{context}: {message}")
                }
                other => panic!("{context}: summary status {other:?}"),
            }
        }
    }
    assert!(
        kept.len() >= 3,
        "{tag}: the disk filled up at too few places: {kept:?}"
    );
}
