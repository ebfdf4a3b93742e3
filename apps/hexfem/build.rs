//! Records the git commit the `hexfem` binary is built from (`hexfem --version`): from
//! `HEXFEM_GIT_COMMIT` where a packager sets it, else `git rev-parse` in the source tree, else
//! `unknown` (a tarball without `.git`, or no git installed).

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// Whether the git repository around the sources is hexfem's own (its top is the workspace
/// root), not one that a tarball was unpacked into.
fn in_own_repository() -> bool {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    match (git(&["rev-parse", "--show-toplevel"]), root.canonicalize()) {
        (Some(top), Ok(root)) => Path::new(&top).canonicalize().is_ok_and(|top| top == root),
        _ => false,
    }
}

/// Asks cargo to run this again when `path` changes (only an existing file: a missing one
/// would make every build rerun it).
fn watch(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}

fn main() {
    println!("cargo:rerun-if-env-changed=HEXFEM_GIT_COMMIT");
    let commit = std::env::var("HEXFEM_GIT_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| in_own_repository().then(|| git(&["rev-parse", "--short=12", "HEAD"]))?)
        .unwrap_or_else(|| "unknown".into());
    // rebuilt when HEAD moves: HEAD itself, the branch it names, the packed refs
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let dir = Path::new(&dir);
        watch(&dir.join("HEAD"));
        if let Some(common) = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]) {
            let common = Path::new(&common);
            watch(&common.join("packed-refs"));
            if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
                watch(&common.join(branch));
            }
        }
    }
    println!("cargo:rustc-env=HEXFEM_GIT_COMMIT={commit}");
}
