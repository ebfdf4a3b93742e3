//! The output writer: where a converged step's files are written while the next step computes.
//!
//! One process hands each state's output to a background thread that owns the results file
//! ([`BackgroundWriter`]): the solver thread computes what needs the problem (the cells' outputs,
//! the figures and probes), hands over an owned snapshot of the state, and goes on with Newton;
//! the writer derives the remaining fields (nodal averages, principal stresses) while it writes
//! the others, and commits the step ([`crate::state_write`]). At most one step is in flight: a hand-off first waits for the step before it, so the
//! memory held is one snapshot being written and the one being prepared. The first state's
//! hand-off does not wait for the file's creation (the mesh written): it waits behind it in
//! the writer's queue while Newton starts. An error of the writer
//! (a full disk) is the result of the next [`StepOutput::wait`] (the next hand-off, or the run's
//! end), the same typed error the write returned; a panic on the writer becomes an error, the
//! file keeping its committed steps.
//!
//! On ranks the writer is rank 0's ([`StepOutput::Elsewhere`] on the others): rank 0's solver
//! thread runs the collective gathers window by window and hands each window's pieces to the
//! writer through a bounded queue ([`StepOutput::submit_in_pieces`], at most
//! [`QUEUED_BYTES`] of values waiting), so the gathers end as soon as the ranks have sent
//! their records and the writer writes while Newton goes on, rank 0's memory still bounded.
//!
//! Crash safety is the results file's ([`io::ResultsWriter`]): what the run reports as written
//! ([`crate::observer::RunObserver::step_written`], the summary's step records) is reported
//! only after [`StepOutput::wait`] has returned the step's write, so every step reported is on
//! disk. While the writer writes, the solver thread writes no file, so the output's writes keep
//! one order (the fault injection's write positions are those of a run without the writer).

use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;
use std::time::Instant;

use io::{ResultsWriter, StepHeader};

use crate::error::WriterFailure;
use crate::Result;

/// One state's output, run on the thread that owns the results file.
pub(crate) type WriteJob = Box<dyn FnOnce(&mut ResultsWriter) -> Result<()> + Send>;

/// A write's outcome and the writer's seconds in it.
type Done = (Result<()>, f64);

/// Values a file or step written in pieces may have waiting for the writer (256 MiB of f64 per
/// queue; the mesh's and the first state's queues may both be full while the file is created): rank 0's
/// gathers wait for the writer beyond it.
pub(crate) const QUEUED_BYTES: usize = 256 << 20;

/// Where a run's states are written: by this process's [`BackgroundWriter`], or (on ranks but
/// 0) by rank 0's. Every state is written only later: its records wait for
/// [`StepOutput::wait`] (which on ranks but 0 has nothing to wait for).
pub(crate) enum StepOutput {
    /// Written on the writer's thread while the caller goes on.
    Background(BackgroundWriter),
    /// Written by another rank's writer (ranks but 0).
    Elsewhere,
}

impl StepOutput {
    /// Hands `job` to the writer after the state handed off before it is written (that write's
    /// error is returned and `job` dropped); nothing on a rank without the file.
    pub(crate) fn submit(&mut self, job: WriteJob) -> Result<()> {
        match self {
            StepOutput::Background(writer) => writer.submit(job),
            StepOutput::Elsewhere => Ok(()),
        }
    }

    /// Hands the writer the step `header` whose values come in pieces through the returned
    /// queue (`None` on a rank without the file), once the state before it is written (that
    /// write's error is returned instead). The step is committed when the queue is
    /// [`PieceQueue::complete`]d with every value put; a queue dropped before leaves the file
    /// with the steps before it (and the writer refusing more).
    pub(crate) fn submit_in_pieces(
        &mut self,
        header: StepHeader,
        piece_values: usize,
    ) -> Result<Option<PieceQueue>> {
        if let StepOutput::Elsewhere = self {
            return Ok(None);
        }
        let (queue, pieces) = PieceQueue::new(piece_values);
        self.submit(Box::new(move |results| {
            results.write_step_in_pieces(&header, |p| pieces.drain_into(p))
        }))?;
        Ok(Some(queue))
    }

    /// Starts a writer whose thread first creates the results file `name.h5` in `dir` with the
    /// mesh of `shape`, its values coming in pieces through the returned queue (rank 0 of a
    /// run on ranks, whose gathers bring the mesh window by window): the file is created once
    /// the queue is [`PieceQueue::complete`]d, and left out (its temporary file removed) if
    /// the queue is dropped before; a failed creation is the first [`StepOutput::wait`]'s
    /// error, as with [`BackgroundWriter::start`]. The first state handed over waits behind
    /// the creation while the caller goes on.
    pub(crate) fn create_in_pieces(
        target: ResultsTarget,
        shape: io::MeshShape,
        piece_values: usize,
    ) -> Result<(Self, PieceQueue)> {
        let (queue, pieces) = PieceQueue::new(piece_values);
        let ResultsTarget {
            dir,
            name,
            faults,
            single_precision,
        } = target;
        let writer = BackgroundWriter::start(Box::new(move || {
            let mut results = ResultsWriter::create_in_pieces(&dir, &name, &shape, &faults, |p| {
                pieces.drain_into(p)
            })?;
            results.set_single_precision_fields(single_precision);
            Ok(results)
        }))?;
        Ok((StepOutput::Background(writer), queue))
    }

    /// Waits until every state handed off is written: the error of the write, if it failed.
    pub(crate) fn wait(&mut self) -> Result<()> {
        match self {
            StepOutput::Background(writer) => writer.wait(),
            StepOutput::Elsewhere => Ok(()),
        }
    }

    /// The writer's seconds in its writes so far, and their count.
    pub(crate) fn busy(&self) -> (f64, u64) {
        match self {
            StepOutput::Background(writer) => (writer.busy_s, writer.writes),
            StepOutput::Elsewhere => (0.0, 0),
        }
    }

    /// Waits for the last write and ends the writer: that write's outcome, and the results
    /// file (`None` on ranks but 0, or where the writer's thread could not be joined).
    pub(crate) fn finish(self) -> (Result<()>, Option<ResultsWriter>) {
        match self {
            StepOutput::Background(writer) => writer.finish(),
            StepOutput::Elsewhere => (Ok(()), None),
        }
    }
}

/// Where [`StepOutput::create_in_pieces`] creates the results file.
pub(crate) struct ResultsTarget {
    pub dir: std::path::PathBuf,
    pub name: String,
    pub faults: io::Faults,
    /// Whether field values are stored in fp32 (`output.precision: single`).
    pub single_precision: bool,
}

/// What a file or step written in pieces sends its writer.
enum Piece {
    /// `values` at value `first` of dataset `dataset`.
    Values {
        dataset: usize,
        first: usize,
        values: Vec<f64>,
    },
    /// `values` at value `first` of the index dataset `dataset`.
    Indices {
        dataset: usize,
        first: usize,
        values: Vec<u64>,
    },
    /// Every value is put: the file or step may be committed.
    Complete,
}

/// The writer's end of a [`PieceQueue`].
struct PieceReceiver(Receiver<Piece>);

impl PieceReceiver {
    /// Puts every piece into `p` until the queue is completed; [`WriterFailure::Incomplete`]
    /// where it was dropped before.
    fn drain_into(self, p: &mut io::Pieces<'_>) -> Result<()> {
        for piece in self.0 {
            match piece {
                Piece::Values {
                    dataset,
                    first,
                    values,
                } => p.put_f64(dataset, first, &values),
                Piece::Indices {
                    dataset,
                    first,
                    values,
                } => p.put_indices(dataset, first, &values),
                Piece::Complete => return Ok(()),
            }
        }
        Err(WriterFailure::Incomplete.into())
    }
}

/// The caller's end of a file or step written in pieces by the writer
/// ([`StepOutput::create_in_pieces`], [`StepOutput::submit_in_pieces`]).
pub(crate) struct PieceQueue {
    sender: SyncSender<Piece>,
}

impl PieceQueue {
    /// A queue holding at most [`QUEUED_BYTES`] of pieces of up to `piece_values` values.
    fn new(piece_values: usize) -> (Self, PieceReceiver) {
        let capacity = (QUEUED_BYTES / (8 * piece_values.max(1))).max(2);
        let (sender, pieces) = mpsc::sync_channel::<Piece>(capacity);
        (Self { sender }, PieceReceiver(pieces))
    }

    /// Puts `values` at value `first` of dataset `dataset` (as [`io::Pieces::put_f64`]),
    /// waiting while the queue is full. Where the writer has stopped (a failed write) the
    /// values are dropped: its error is the next [`StepOutput::wait`]'s.
    pub(crate) fn put(&self, dataset: usize, first: usize, values: Vec<f64>) {
        let _ = self.sender.send(Piece::Values {
            dataset,
            first,
            values,
        });
    }

    /// [`PieceQueue::put`] for an index dataset (as [`io::Pieces::put_indices`]).
    pub(crate) fn put_indices(&self, dataset: usize, first: usize, values: Vec<u64>) {
        let _ = self.sender.send(Piece::Indices {
            dataset,
            first,
            values,
        });
    }

    /// Every value is put: the writer commits the file or step.
    pub(crate) fn complete(self) {
        let _ = self.sender.send(Piece::Complete);
    }
}

/// Creates a results file (with its mesh) on the writer's thread.
pub(crate) type CreateJob = Box<dyn FnOnce() -> Result<ResultsWriter> + Send>;

/// A thread that creates a results file and writes the states handed to it, one at a time.
pub(crate) struct BackgroundWriter {
    jobs: Option<SyncSender<WriteJob>>,
    done: Receiver<Done>,
    /// The file, `None` where its creation failed.
    thread: Option<JoinHandle<Option<ResultsWriter>>>,
    /// Outcomes not taken yet: the file's creation's and at most one handed-off state's each.
    in_flight: usize,
    /// Whether the first outcome in flight is the file's creation (not counted as a write).
    creating: bool,
    /// The writer's seconds in the writes whose outcome was taken, and their count.
    busy_s: f64,
    writes: u64,
}

impl BackgroundWriter {
    /// Starts the writer's thread, which first creates the results file with `create` (the
    /// mesh datasets written there while the caller goes on): its error is the result of the
    /// first [`StepOutput::wait`] (or hand-off), as a write's, and the thread then ends.
    pub(crate) fn start(create: CreateJob) -> Result<Self> {
        let (jobs, incoming) = mpsc::sync_channel::<WriteJob>(1);
        let (finished, done) = mpsc::sync_channel::<Done>(1);
        let thread = std::thread::Builder::new()
            .name("hexfem-output".into())
            .spawn(move || {
                let started = Instant::now();
                let created = std::panic::catch_unwind(std::panic::AssertUnwindSafe(create))
                    .unwrap_or_else(|_| Err(WriterFailure::Panicked.into()));
                let seconds = started.elapsed().as_secs_f64();
                let mut results = match created {
                    Ok(results) => {
                        finished.send((Ok(()), seconds)).ok()?;
                        results
                    }
                    Err(e) => {
                        let _ = finished.send((Err(e), seconds));
                        return None;
                    }
                };
                for job in incoming {
                    let started = Instant::now();
                    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        job(&mut results)
                    }))
                    .unwrap_or_else(|_| Err(WriterFailure::Panicked.into()));
                    if finished
                        .send((outcome, started.elapsed().as_secs_f64()))
                        .is_err()
                    {
                        break;
                    }
                }
                Some(results)
            })
            .map_err(|error| WriterFailure::Thread { error })?;
        Ok(BackgroundWriter {
            jobs: Some(jobs),
            done,
            thread: Some(thread),
            in_flight: 1,
            creating: true,
            busy_s: 0.0,
            writes: 0,
        })
    }

    /// Hands `job` to the writer once the state before it is written (its error is returned
    /// instead, `job` dropped); the first state goes at once, to wait behind the file's
    /// creation (whose error, if it fails, is the next wait's, `job` then dropped unrun).
    fn submit(&mut self, job: WriteJob) -> Result<()> {
        let behind_creation = self.creating && self.in_flight == 1;
        if !behind_creation {
            self.wait()?;
        }
        let sent = self.jobs.as_ref().map(|jobs| jobs.send(job));
        match sent {
            Some(Ok(())) => {
                self.in_flight += 1;
                Ok(())
            }
            // the thread ended: why (a failed creation) is in its outcome, if not yet taken
            _ => self.wait().and(Err(WriterFailure::Stopped.into())),
        }
    }

    /// Waits for everything handed off: the first error among the outcomes (the file's
    /// creation, then the state's write), all of them taken.
    fn wait(&mut self) -> Result<()> {
        while self.in_flight > 0 {
            self.in_flight -= 1;
            let outcome = match self.done.recv() {
                Ok((outcome, seconds)) => {
                    self.busy_s += seconds;
                    if !std::mem::take(&mut self.creating) {
                        self.writes += 1;
                    }
                    outcome
                }
                Err(_) => Err(WriterFailure::Stopped.into()),
            };
            if outcome.is_err() {
                // a failed creation ends the writer's thread: nothing more comes
                self.in_flight = 0;
                return outcome;
            }
        }
        Ok(())
    }

    /// [`StepOutput::finish`].
    fn finish(mut self) -> (Result<()>, Option<ResultsWriter>) {
        let outcome = self.wait();
        self.jobs = None;
        let results = self.thread.take().and_then(|t| t.join().ok().flatten());
        let outcome = match (outcome, &results) {
            (Ok(()), None) => Err(WriterFailure::Stopped.into()),
            (outcome, _) => outcome,
        };
        (outcome, results)
    }
}

impl Drop for BackgroundWriter {
    /// Ends the writer's thread after its last write (a run that stops early).
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
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
        let mut output =
            StepOutput::Background(BackgroundWriter::start(Box::new(move || Ok(results))).unwrap());
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
        let mut output =
            StepOutput::Background(BackgroundWriter::start(Box::new(move || Ok(results))).unwrap());
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
        let mut output = StepOutput::Background(
            BackgroundWriter::start(Box::new(move || {
                gate.recv().unwrap();
                flag.store(1, Ordering::SeqCst);
                Ok(results)
            }))
            .unwrap(),
        );
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
        let mut output = StepOutput::Background(
            BackgroundWriter::start(Box::new(move || {
                gate.recv().unwrap();
                Err(crate::Error::failure("no space for the mesh".into()))
            }))
            .unwrap(),
        );
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
        let mut output = StepOutput::Background(
            BackgroundWriter::start(Box::new(|| {
                Err(crate::Error::failure("no space for the mesh".into()))
            }))
            .unwrap(),
        );
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
        let mut output =
            StepOutput::Background(BackgroundWriter::start(Box::new(move || Ok(results))).unwrap());
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
    /// A step written in pieces (the ranks' output): the pieces put through the queue, in any
    /// order and more of them than the queue holds, are the step once it is completed; a queue
    /// dropped before its completion (a gather that failed) leaves that step out, its error
    /// the next wait's, and the file with the steps before it.
    #[test]
    fn a_step_in_pieces_is_committed_when_complete_and_left_out_when_dropped() {
        let (dir, results) = results("pieces");
        let mut output =
            StepOutput::Background(BackgroundWriter::start(Box::new(move || Ok(results))).unwrap());
        let header = |step| io::StepHeader {
            step,
            load_factor: step as f64,
            next_increment: None,
            time: None,
            fields: vec![io::StepField::Displacement],
        };
        let values: Vec<f64> = (0..24).map(|v| f64::from(v) + 0.5).collect();
        // pieces of 3 values: eight of them, backwards, through a queue of capacity 2
        let queue = output
            .submit_in_pieces(header(1), QUEUED_BYTES / 8 / 2)
            .unwrap()
            .unwrap();
        for first in (0..24).step_by(3).rev() {
            queue.put(0, first, values[first..first + 3].to_vec());
        }
        queue.complete();
        output.wait().unwrap();
        // step 2: half the values, then the queue is dropped
        let queue = output.submit_in_pieces(header(2), 12).unwrap().unwrap();
        queue.put(0, 0, values[..12].to_vec());
        drop(queue);
        let waited = output.wait().unwrap_err().to_string();
        assert!(waited.contains("could not be gathered"), "{waited}");
        let (_, kept) = output.finish();
        drop(kept);
        let file = io::ResultsReader::open(&dir.join("w.h5")).unwrap();
        assert_eq!(
            file.read_f64("steps/000001/displacement").unwrap().1,
            values
        );
        assert!(file.read_f64("steps/000002/displacement").is_err());
        // a rank without the file takes no queue
        assert!(StepOutput::Elsewhere
            .submit_in_pieces(header(1), 12)
            .unwrap()
            .is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A file created in pieces (rank 0 of a run on ranks): the mesh's values and indices come
    /// through the queue, out of order; the file exists once the queue is completed, and a
    /// queue dropped unfinished leaves no file and its error for the first wait.
    #[test]
    fn a_file_created_in_pieces_has_its_mesh_and_one_left_unfinished_is_not_created() {
        let dir = std::env::temp_dir().join(format!("sim-writer-create-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let shape = io::MeshShape {
            nodes_per_cell: 8,
            n_nodes: 8,
            n_cells: 1,
            has_material: true,
            node_sets: vec![("xmin".into(), 4)],
            cell_sets: Vec::new(),
            face_sets: Vec::new(),
            node_indicators: None,
        };
        let at = |d| shape.dataset(d).unwrap();
        let coordinates: Vec<f64> = (0..24).map(f64::from).collect();
        let target = |name: &str| ResultsTarget {
            dir: dir.clone(),
            name: name.into(),
            faults: io::Faults::none(),
            single_precision: false,
        };
        let (mut output, queue) =
            StepOutput::create_in_pieces(target("made"), shape.clone(), 3).unwrap();
        for first in (0..24).step_by(3).rev() {
            queue.put(
                at(io::MeshDataset::Coordinates),
                first,
                coordinates[first..first + 3].to_vec(),
            );
        }
        queue.put_indices(at(io::MeshDataset::Connectivity), 4, vec![4, 5, 7, 6]);
        queue.put_indices(at(io::MeshDataset::Connectivity), 0, vec![0, 1, 3, 2]);
        queue.put_indices(at(io::MeshDataset::Material), 0, vec![0]);
        queue.put_indices(at(io::MeshDataset::NodeSet(0)), 0, vec![0, 2, 4, 6]);
        queue.complete();
        output.wait().unwrap();
        let (finished, results) = output.finish();
        finished.unwrap();
        drop(results);
        let file = io::ResultsReader::open(&dir.join("made.h5")).unwrap();
        assert_eq!(file.read_f64("mesh/coordinates").unwrap().1, coordinates);
        assert_eq!(
            file.read_i64("mesh/connectivity").unwrap().1,
            [0, 1, 3, 2, 4, 5, 7, 6]
        );
        // unfinished: no file, the gathers' failure for the first wait
        let (mut output, queue) =
            StepOutput::create_in_pieces(target("left"), shape.clone(), 3).unwrap();
        queue.put(
            at(io::MeshDataset::Coordinates),
            0,
            coordinates[..3].to_vec(),
        );
        drop(queue);
        let waited = output.wait().unwrap_err().to_string();
        assert!(waited.contains("could not be gathered"), "{waited}");
        drop(output);
        assert!(!dir.join("left.h5").exists());
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("left"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
