//! The output writer: where a converged step's files are written while the next step computes.
//!
//! One process hands each state's output to a thread of its own that owns the results file
//! ([`StepOutput`]): the solver thread computes what needs the problem (the cells' outputs,
//! the figures and probes), hands over an owned snapshot of the state, and goes on with Newton;
//! the writer derives the remaining fields (nodal averages, principal stresses) while it writes
//! the others, and commits the step ([`crate::state_write`]). At most one step is in flight: a
//! hand-off first waits for the step before it, so the memory held is one snapshot being
//! written and the one being prepared. The first state's hand-off does not wait for the file's
//! creation (the mesh written): it waits behind it in the writer's queue while Newton starts.
//! An error of the writer (a full disk) is the result of the next [`StepOutput::wait`] (the
//! next hand-off, or the run's end), the same typed error the write returned; a panic on the
//! writer becomes an error, the file keeping its committed steps.
//!
//! On ranks every rank has such a thread ([`StepOutput::start_gathering`]): its jobs run the
//! output's collective gathers to rank 0 on a communicator of their own
//! ([`comm::Comm::concurrent`]) while the solver threads go on, and rank 0's writes what they
//! bring into the file as it comes. Every rank's thread runs every job, in the order handed
//! over (rank 0's also after its file failed: the other ranks' gathers need it), so the
//! gathers match. Where MPI cannot run two threads' calls at once the jobs run on the caller's
//! thread, at the hand-off (the same jobs, in the same order).
//!
//! Crash safety is the results file's ([`io::ResultsWriter`]): what the run reports as written
//! ([`crate::observer::RunObserver::step_written`], the summary's step records) is reported
//! only after [`StepOutput::wait`] has returned the step's write, so every step reported is on
//! disk. While the writer writes, the solver thread writes no file, so the output's writes keep
//! one order (the fault injection's write positions are those of a run without the writer).

use std::collections::VecDeque;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;
use std::time::Instant;

use io::ResultsWriter;

use crate::error::WriterFailure;
use crate::Result;

/// One state's output, run on the thread that owns the results file.
pub(crate) type WriteJob = Box<dyn FnOnce(&mut ResultsWriter) -> Result<()> + Send>;

/// Creates a results file (with its mesh) on the writer's thread.
pub(crate) type CreateJob = Box<dyn FnOnce() -> Result<ResultsWriter> + Send>;

/// One job of a rank's output thread ([`StepOutput::start_gathering`]): the rank's part of a
/// collective output, with the results file where this rank has one (rank 0, its file
/// created and not failed).
pub(crate) type GatherJob = Box<dyn FnOnce(Option<&mut ResultsWriter>) -> Result<()> + Send>;

/// A rank's first job: its part of the file's creation; rank 0's returns the file.
pub(crate) type CreateGatheredJob = Box<dyn FnOnce() -> Result<Option<ResultsWriter>> + Send>;

/// A job's outcome and the writer's seconds in it.
type Done = (Result<()>, f64);

/// Where a run's states are written: a thread that creates the results file and writes the
/// states handed to it, one at a time (see the module doc).
pub(crate) struct StepOutput {
    runner: Runner,
    /// Outcomes not taken yet: the file's creation's and at most one handed-off state's each.
    in_flight: usize,
    /// Whether the first outcome in flight is the file's creation (not counted as a write).
    creating: bool,
    /// The writer's seconds in the jobs whose outcome was taken, and their count.
    busy_s: f64,
    writes: u64,
}

/// Where the jobs run.
enum Runner {
    /// On a thread of their own.
    Thread {
        jobs: Option<SyncSender<GatherJob>>,
        done: Receiver<Done>,
        /// The file, `None` where there is none (its creation failed, a rank but 0).
        thread: Option<JoinHandle<Option<ResultsWriter>>>,
    },
    /// On the caller's thread at the hand-off, their outcomes kept for the waits.
    Inline {
        file: Option<Box<ResultsWriter>>,
        outcomes: VecDeque<Done>,
    },
}

/// Runs `job`, timed, a panic in it an error.
fn run_timed<T>(job: impl FnOnce() -> Result<T>) -> (Result<T>, f64) {
    let started = Instant::now();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job))
        .unwrap_or_else(|_| Err(WriterFailure::Panicked.into()));
    (outcome, started.elapsed().as_secs_f64())
}

impl StepOutput {
    /// Starts the writer's thread, which first creates the results file with `create` (the
    /// mesh datasets written there while the caller goes on): its error is the result of the
    /// first [`StepOutput::wait`] (or hand-off), as a write's, and the thread then ends.
    pub(crate) fn start(create: CreateJob) -> Result<Self> {
        Self::spawn(Box::new(move || create().map(Some)), false)
    }

    /// A rank's output thread (see the module doc), or its jobs on the caller's thread where
    /// `inline`: `create` first (rank 0's gives the file), then every job handed over, each
    /// with the file where there is one. Unlike [`StepOutput::start`]'s, the thread goes on
    /// after a failed creation (its error the first wait's): the jobs still run, without a file.
    pub(crate) fn start_gathering(create: CreateGatheredJob, inline: bool) -> Result<Self> {
        if !inline {
            return Self::spawn(create, true);
        }
        let (created, seconds) = run_timed(create);
        let (file, outcome) = match created {
            Ok(file) => (file, Ok(())),
            Err(e) => (None, Err(e)),
        };
        Ok(Self::with_runner(Runner::Inline {
            file: file.map(Box::new),
            outcomes: VecDeque::from([(outcome, seconds)]),
        }))
    }

    fn with_runner(runner: Runner) -> Self {
        StepOutput {
            runner,
            in_flight: 1,
            creating: true,
            busy_s: 0.0,
            writes: 0,
        }
    }

    /// The thread of [`StepOutput::start`] (`after_failure`: false) or of
    /// [`StepOutput::start_gathering`] (true: it runs the jobs without a file after a failed
    /// creation).
    fn spawn(create: CreateGatheredJob, after_failure: bool) -> Result<Self> {
        let (jobs, incoming) = mpsc::sync_channel::<GatherJob>(1);
        let (finished, done) = mpsc::sync_channel::<Done>(1);
        let thread = std::thread::Builder::new()
            .name("hexfem-output".into())
            .spawn(move || {
                let (created, seconds) = run_timed(create);
                let mut file = match created {
                    Ok(file) => {
                        finished.send((Ok(()), seconds)).ok()?;
                        file
                    }
                    Err(e) => {
                        let _ = finished.send((Err(e), seconds));
                        if !after_failure {
                            return None;
                        }
                        None
                    }
                };
                for job in incoming {
                    let done = run_timed(|| job(file.as_mut()));
                    if finished.send(done).is_err() {
                        break;
                    }
                }
                file
            })
            .map_err(|error| WriterFailure::Thread { error })?;
        Ok(Self::with_runner(Runner::Thread {
            jobs: Some(jobs),
            done,
            thread: Some(thread),
        }))
    }

    /// Hands `job` to the writer once the state before it is written (its error is returned
    /// instead, `job` dropped); the first state goes at once, to wait behind the file's
    /// creation (whose error, if it fails, is the next wait's, `job` then dropped unrun).
    pub(crate) fn submit(&mut self, job: WriteJob) -> Result<()> {
        let behind_creation = self.creating && self.in_flight == 1;
        if !behind_creation {
            self.wait()?;
        }
        self.hand_over(Box::new(move |file| match file {
            Some(file) => job(file),
            None => Err(WriterFailure::Stopped.into()),
        }))
    }

    /// Hands a rank's output thread `job` (see [`StepOutput::start_gathering`]) behind the
    /// jobs before it, whatever their outcomes (every rank's thread runs every job: the
    /// outcomes are the next [`StepOutput::wait`]'s). The caller waits for the job before
    /// (the driver settles each state before the next): at most one job runs and one waits.
    pub(crate) fn submit_gathered(&mut self, job: GatherJob) -> Result<()> {
        self.hand_over(job)
    }

    fn hand_over(&mut self, job: GatherJob) -> Result<()> {
        match &mut self.runner {
            Runner::Thread { jobs, .. } => match jobs.as_ref().map(|jobs| jobs.send(job)) {
                Some(Ok(())) => {
                    self.in_flight += 1;
                    Ok(())
                }
                // the thread ended: why (a failed creation) is in its outcome, if not yet taken
                _ => self.wait().and(Err(WriterFailure::Stopped.into())),
            },
            Runner::Inline { file, outcomes } => {
                outcomes.push_back(run_timed(|| job(file.as_deref_mut())));
                self.in_flight += 1;
                Ok(())
            }
        }
    }

    /// The next outcome in flight; `None` where the thread ended without it.
    fn next_outcome(&mut self) -> Option<Done> {
        match &mut self.runner {
            Runner::Thread { done, .. } => done.recv().ok(),
            Runner::Inline { outcomes, .. } => outcomes.pop_front(),
        }
    }

    /// Waits for everything handed off: the first error among the outcomes (the file's
    /// creation, then the states' writes), all of them taken.
    pub(crate) fn wait(&mut self) -> Result<()> {
        let mut first = Ok(());
        while self.in_flight > 0 {
            self.in_flight -= 1;
            let outcome = match self.next_outcome() {
                Some((outcome, seconds)) => {
                    self.busy_s += seconds;
                    if !std::mem::take(&mut self.creating) {
                        self.writes += 1;
                    }
                    outcome
                }
                None => {
                    // the thread ended (after a failed creation): nothing more comes
                    self.in_flight = 0;
                    Err(WriterFailure::Stopped.into())
                }
            };
            if first.is_ok() {
                first = outcome;
            }
        }
        first
    }

    /// The writer's seconds in its writes so far, and their count.
    pub(crate) fn busy(&self) -> (f64, u64) {
        (self.busy_s, self.writes)
    }

    /// Waits for the last write and ends the writer: that write's outcome, and the results
    /// file (`None` on ranks but 0, or where the writer's thread could not be joined).
    pub(crate) fn finish(mut self) -> (Result<()>, Option<ResultsWriter>) {
        let outcome = self.wait();
        let results = match &mut self.runner {
            Runner::Thread { jobs, thread, .. } => {
                *jobs = None;
                thread.take().and_then(|t| t.join().ok().flatten())
            }
            Runner::Inline { file, .. } => file.take().map(|file| *file),
        };
        (outcome, results)
    }
}

impl Drop for StepOutput {
    /// Ends the writer's thread after its last write (a run that stops early).
    fn drop(&mut self) {
        if let Runner::Thread { jobs, thread, .. } = &mut self.runner {
            *jobs = None;
            if let Some(thread) = thread.take() {
                let _ = thread.join();
            }
        }
    }
}

/// Where a rank's output thread creates the results file.
pub(crate) struct ResultsTarget {
    pub dir: std::path::PathBuf,
    pub name: String,
    pub faults: io::Faults,
    /// Whether field values are stored in fp32 (`output.precision: single`).
    pub single_precision: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A results file of one Q1 cell in a fresh directory (removed by the caller).
    fn results(tag: &str) -> (std::path::PathBuf, ResultsWriter) {
        let dir = std::env::temp_dir().join(format!("sim-writer-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let coordinates: Vec<[f64; 3]> = (0..8)
            .map(|i| [f64::from(i & 1), f64::from((i >> 1) & 1), f64::from(i >> 2)])
            .collect();
        let connectivity = [0, 1, 3, 2, 4, 5, 7, 6];
        let mesh = io::MeshData {
            nodes_per_cell: 8,
            coordinates: &coordinates,
            connectivity: &connectivity,
            material: None,
            node_sets: &[],
            cell_sets: &[],
            face_sets: &[],
            node_indicators: None,
        };
        let results = ResultsWriter::create(&dir, "w", &mesh, &io::Faults::none()).unwrap();
        (dir, results)
    }

    /// A step's write error is the next hand-off's result (the job handed then is dropped,
    /// not run), and the final one's is `finish`'s; the writer keeps the file.
    #[test]
    fn a_write_error_is_returned_at_the_next_hand_off_or_at_the_end() {
        let (dir, results) = results("error");
        let mut output = StepOutput::start(Box::new(move || Ok(results))).unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        output
            .submit(Box::new(|_| {
                Err(crate::Error::failure("disk full at step 1".into()))
            }))
            .unwrap();
        let counter = Arc::clone(&ran);
        let next = output.submit(Box::new(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }));
        assert_eq!(next.unwrap_err().to_string(), "disk full at step 1");
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        // the writer goes on; the last write's error comes with the file at the end
        output
            .submit(Box::new(|_| {
                Err(crate::Error::failure("disk full at step 2".into()))
            }))
            .unwrap();
        let (outcome, results) = output.finish();
        assert_eq!(outcome.unwrap_err().to_string(), "disk full at step 2");
        assert!(results.is_some());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A panic inside a write becomes that write's error; the file comes back.
    #[test]
    fn a_panic_on_the_writer_is_an_error_not_a_panic() {
        let (dir, results) = results("panic");
        let mut output = StepOutput::start(Box::new(move || Ok(results))).unwrap();
        output.submit(Box::new(|_| panic!("a bug"))).unwrap();
        let waited = output.wait();
        assert!(waited
            .unwrap_err()
            .to_string()
            .contains("failed unexpectedly"));
        let (outcome, results) = output.finish();
        assert!(outcome.is_ok());
        assert!(results.is_some());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The first state is handed off while the file is created (the mesh written) and written
    /// after it; the creation is not counted as a write.
    #[test]
    fn the_first_state_waits_behind_the_files_creation_not_its_caller() {
        let (dir, results) = results("first");
        let (release, gate) = mpsc::channel::<()>();
        let created = Arc::new(AtomicUsize::new(0));
        let flag = Arc::clone(&created);
        let mut output = StepOutput::start(Box::new(move || {
            gate.recv().unwrap();
            flag.store(1, Ordering::SeqCst);
            Ok(results)
        }))
        .unwrap();
        let flag = Arc::clone(&created);
        // returns while the creation is held back
        output
            .submit(Box::new(move |_| {
                assert_eq!(flag.load(Ordering::SeqCst), 1, "written after the creation");
                Ok(())
            }))
            .unwrap();
        assert_eq!(created.load(Ordering::SeqCst), 0);
        release.send(()).unwrap();
        output.wait().unwrap();
        assert_eq!(output.busy().1, 1);
        let (outcome, results) = output.finish();
        outcome.unwrap();
        assert!(results.is_some());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A failed creation is the first wait's error, even with the first state handed off
    /// behind it (that state is never written), and the writer then has no file.
    #[test]
    fn a_failed_creation_is_the_first_waits_error_and_the_state_behind_it_is_not_run() {
        let (release, gate) = mpsc::channel::<()>();
        let mut output = StepOutput::start(Box::new(move || {
            gate.recv().unwrap();
            Err(crate::Error::failure("no space for the mesh".into()))
        }))
        .unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&ran);
        output
            .submit(Box::new(move |_| {
                counter.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }))
            .unwrap();
        release.send(()).unwrap();
        assert_eq!(
            output.wait().unwrap_err().to_string(),
            "no space for the mesh"
        );
        // nothing more in flight; the next hand-off finds the writer stopped
        output.wait().unwrap();
        assert!(output.submit(Box::new(|_| Ok(()))).is_err());
        let (_, results) = output.finish();
        assert!(results.is_none());
        assert_eq!(ran.load(Ordering::SeqCst), 0);
    }

    /// A creation that failed before the first hand-off (the writer's thread ended): the
    /// hand-off or the wait after it returns the creation's error, not that the writer stopped.
    #[test]
    fn a_creation_failed_before_the_first_hand_off_is_its_error() {
        let mut output = StepOutput::start(Box::new(|| {
            Err(crate::Error::failure("no space for the mesh".into()))
        }))
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let error = output
            .submit(Box::new(|_| Ok(())))
            .and_then(|()| output.wait())
            .unwrap_err();
        assert_eq!(error.to_string(), "no space for the mesh");
    }

    /// At most one state is in flight: a hand-off returns only once the state before it is
    /// written, and the writes run in order, each counted with its seconds.
    #[test]
    fn one_state_is_in_flight_and_writes_run_in_order() {
        let (dir, results) = results("order");
        let mut output = StepOutput::start(Box::new(move || Ok(results))).unwrap();
        let done = Arc::new(AtomicUsize::new(0));
        for k in 0..4 {
            let counter = Arc::clone(&done);
            output
                .submit(Box::new(move |_| {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    assert_eq!(counter.fetch_add(1, Ordering::SeqCst), k);
                    Ok(())
                }))
                .unwrap();
            // the hand-off returned once the write before it had finished
            assert!(done.load(Ordering::SeqCst) >= k);
        }
        output.wait().unwrap();
        assert_eq!(done.load(Ordering::SeqCst), 4);
        let (busy_s, writes) = output.busy();
        assert_eq!(writes, 4);
        assert!(busy_s >= 0.02, "{busy_s}");
        let (outcome, _) = output.finish();
        outcome.unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
    /// A rank's output thread goes on after its file's creation failed: the creation's
    /// error is the first wait's, and every job still runs, in order, without a file (the other
    /// ranks' gathers need rank 0's); on a rank without a file every job runs without one.
    #[test]
    fn a_ranks_thread_runs_every_job_after_a_failed_creation() {
        for inline in [false, true] {
            let mut output = StepOutput::start_gathering(
                Box::new(|| Err(crate::Error::failure("no space for the mesh".into()))),
                inline,
            )
            .unwrap();
            let ran = Arc::new(AtomicUsize::new(0));
            for k in 0..3 {
                let counter = Arc::clone(&ran);
                output
                    .submit_gathered(Box::new(move |file| {
                        assert!(file.is_none());
                        assert_eq!(counter.fetch_add(1, Ordering::SeqCst), k);
                        Ok(())
                    }))
                    .unwrap();
                if k == 0 {
                    let waited = output.wait().unwrap_err().to_string();
                    assert_eq!(waited, "no space for the mesh", "inline: {inline}");
                }
            }
            output.wait().unwrap();
            assert_eq!(ran.load(Ordering::SeqCst), 3, "inline: {inline}");
            let (outcome, file) = output.finish();
            outcome.unwrap();
            assert!(file.is_none());
        }
    }

    /// Rank 0's output thread hands each job its file; a job's error is the next wait's and
    /// the jobs after it still run; `finish` returns the file. Inline, each job has run when
    /// its hand-off returns.
    #[test]
    fn a_ranks_jobs_get_the_file_and_their_errors_come_at_the_waits() {
        for inline in [false, true] {
            let (dir, results) = results(if inline { "inline" } else { "gathered" });
            let mut output =
                StepOutput::start_gathering(Box::new(move || Ok(Some(results))), inline).unwrap();
            let ran = Arc::new(AtomicUsize::new(0));
            let counter = Arc::clone(&ran);
            output
                .submit_gathered(Box::new(move |file| {
                    assert!(file.is_some());
                    counter.fetch_add(1, Ordering::SeqCst);
                    Err(crate::Error::failure("disk full at step 1".into()))
                }))
                .unwrap();
            if inline {
                assert_eq!(ran.load(Ordering::SeqCst), 1);
            }
            let waited = output.wait().unwrap_err().to_string();
            assert_eq!(waited, "disk full at step 1");
            let counter = Arc::clone(&ran);
            output
                .submit_gathered(Box::new(move |file| {
                    assert!(file.is_some());
                    counter.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                }))
                .unwrap();
            output.wait().unwrap();
            assert_eq!(ran.load(Ordering::SeqCst), 2);
            assert_eq!(output.busy().1, 2);
            let (outcome, file) = output.finish();
            outcome.unwrap();
            assert!(file.is_some());
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}
