//! Multi-rank tests: a test function that runs its body on N ranks by starting its own test
//! binary under `mpirun` (oversubscribed, so 4 ranks run on a 2-core machine).
//!
//! ```text
//! #[test]
//! fn distributed_dot_equals_serial() {
//!     comm::launch::on_ranks("distributed_dot_equals_serial", &[2, 4], |comm| { /* body */ });
//! }
//! ```
//! Run by `cargo test`, the test starts `mpirun -np 2` and `mpirun -np 4` on the same test
//! binary filtered to this test; inside those processes (`launched_by_mpi`), the body runs on the
//! world communicator. A panic on any rank aborts every rank (`MPI_Abort`), so a failing rank
//! never leaves the others waiting; `mpirun --timeout` bounds the whole run.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::session::launched_by_mpi;
use crate::{Comm, Session};

/// Seconds after which `mpirun` stops a multi-rank test run.
pub const MPIRUN_TIMEOUT_S: u32 = 300;

/// One `mpirun` at a time in this process: Open MPI's start-up races on its session directory
/// when several start at once.
static LAUNCH: Mutex<()> = Mutex::new(());

/// Runs `mpirun` on `np` ranks (see [`mpirun`]) with the arguments `configure` adds, and
/// returns its output. Launches of this process run one at a time, each with its own Open MPI
/// session directory (under the temp dir, removed afterwards), so that concurrent launches of
/// other processes cannot collide with it.
pub fn run_mpirun(np: usize, configure: impl FnOnce(&mut Command)) -> std::io::Result<Output> {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let _one_at_a_time = LAUNCH.lock().unwrap_or_else(|p| p.into_inner());
    let dir: PathBuf = std::env::temp_dir().join(format!(
        "hexfem-mpirun-{}-{}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir)?;
    let mut cmd = mpirun(np);
    cmd.env("OMPI_MCA_orte_tmpdir_base", &dir);
    configure(&mut cmd);
    let out = cmd.output();
    let _ = std::fs::remove_dir_all(&dir);
    out
}

/// `mpirun` with the options every multi-rank run of the tests needs: `--oversubscribe` (more
/// ranks than cores), permission to run as root (containers, CI), a time limit, one rayon
/// thread per rank. Prefer [`run_mpirun`], which also keeps concurrent launches apart.
pub fn mpirun(np: usize) -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.args([
        "--oversubscribe",
        "--timeout",
        &MPIRUN_TIMEOUT_S.to_string(),
    ])
    .args(["-np", &np.to_string()])
    .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
    .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
    .env("RAYON_NUM_THREADS", "1");
    cmd
}

/// Runs `body` on each rank count in `ranks` (see the module doc). `test_name` is the test
/// function's path as the test harness filters it (`--exact`). Panics, with every rank's output,
/// if a run fails.
pub fn on_ranks(test_name: &str, ranks: &[usize], body: impl FnOnce(&Arc<dyn Comm>)) {
    if launched_by_mpi() {
        run_rank(test_name, body);
        return;
    }
    let exe = std::env::current_exe().expect("test binary path");
    for &np in ranks {
        let out = run_mpirun(np, |cmd| {
            cmd.arg(&exe)
                .args([test_name, "--exact", "--nocapture", "--test-threads=1"]);
        })
        .unwrap_or_else(|e| panic!("could not start mpirun (Open MPI): {e}"));
        assert!(
            out.status.success(),
            "{test_name} on {np} ranks failed ({}):\n{}",
            out.status,
            output_text(&out)
        );
        let marker = format!("{PASSED_MARKER} {test_name}");
        let passed = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains(&marker))
            .count();
        assert_eq!(
            passed,
            np,
            "{test_name} on {np} ranks: expected every rank to run the test:\n{}",
            output_text(&out)
        );
    }
}

/// Inside `mpirun`: the body on the world communicator; a panic aborts every rank.
fn run_rank(test_name: &str, body: impl FnOnce(&Arc<dyn Comm>)) {
    let session = Session::init_mpi().expect("MPI initialisation");
    let comm = session.comm();
    if catch_unwind(AssertUnwindSafe(|| body(&comm))).is_err() {
        eprintln!(
            "rank {} of {} panicked: aborting every rank",
            comm.rank(),
            comm.size()
        );
        comm.abort(3);
    }
    println!("{PASSED_MARKER} {test_name}");
    drop(session);
}

/// The line each rank prints when its body passed (then the test's name): one short write, so
/// ranks' lines do not mix (the test harness writes its own lines in pieces).
const PASSED_MARKER: &str = "hexfem-launch: body passed:";

/// Standard output and error of a finished process, for failure messages.
pub fn output_text(out: &Output) -> String {
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
