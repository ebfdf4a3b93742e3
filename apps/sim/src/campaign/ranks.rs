//! A campaign on the ranks of an MPI job (`mpirun -np N hexfem campaign FILE
//! [--ranks-per-case K]`): the world splits into N / K groups of K consecutive ranks; each group
//! runs one case at a time, with the serial solver where K = 1 (keeping its problem, and with
//! `share_solver` its AMG hierarchy, for the next case on the same mesh) and with the
//! distributed run path ([`crate::run`]) where K > 1.
//!
//! Rank 0 validates every case (as a campaign in one process does) and hands the cases out: a
//! group's first rank (its leader) asks for a case when it has none, sending the row of the case
//! it finished, and rank 0 answers with the next case on the mesh the group holds, else on a
//! mesh no group holds, else any, the largest meshes first (so that groups finish together).
//! Rank 0's own group takes its cases on a thread of rank 0 while the main thread answers the
//! others, collects the rows and writes the table, `campaign.json` (and, in the `hexfem`
//! command, the plots). The leader writes its case's `case.json` (atomically) before it asks for
//! the next: a rank that dies ends the job (`mpirun`), and `--resume` keeps every case whose
//! files are complete.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use comm::Comm;
use config::campaign::Campaign;
use serde::{Deserialize, Serialize};

use super::{
    build_problems, placement, resolve, run_case, summarize, table, write_input,
    CampaignInterrupted, CampaignObserver, CampaignOptions, CampaignSummary, CaseRow, CaseStatus,
    Prepared, Scheduler, Tally, Totals, Warm, Where,
};
use crate::distributed::agreed;
use crate::error::{fail, Context};
use crate::{Error, Result};

/// Tag of a leader's message to rank 0 (a [`Report`]).
const REPORT_TAG: u16 = 2901;
/// Tag of rank 0's answer (the next case, JSON `null` for none).
const ASSIGN_TAG: u16 = 2902;

/// A leader's word to rank 0: the case it finished (if any) and whether it stops.
#[derive(Serialize, Deserialize)]
struct Report {
    finished: Option<(usize, CaseRow)>,
    stopping: bool,
}

/// Runs the campaign of `options.file` on the ranks of `world` (see the module's
/// documentation). Collective. Rank 0 tells `observer` of the progress and returns the summary;
/// the other ranks return `None`. Errors before the first case are every rank's.
pub fn run_campaign_on_ranks(
    world: &Arc<dyn Comm>,
    options: &CampaignOptions,
    observer: &mut dyn CampaignObserver,
) -> Result<Option<CampaignSummary>> {
    let started = Instant::now();
    let (rank, size) = (world.rank(), world.size());
    let k = options.ranks_per_case.max(1);
    if size % k != 0 {
        fail!(
            "--ranks-per-case {k}: the {size} ranks do not split into groups of {k} (use a \
             rank count that is a multiple of {k})"
        );
    }
    let groups = size / k;
    let group = rank / k;
    let group_comm = world.split(group, rank)?;
    let c = &**world;
    let campaign = agreed(c, Campaign::load(&options.file))?;
    let directory = options
        .output_dir
        .clone()
        .unwrap_or_else(|| campaign.directory.clone());
    // rank 0 checks every case and builds its problem; the others resolve them
    let prepared = agreed(c, resolve(&campaign, &directory, rank == 0))?;
    let validated = agreed(
        c,
        if rank == 0 {
            build_problems(&campaign, &prepared).map(Some)
        } else {
            Ok(None)
        },
    )?;
    let visible = placement::visible_gpus(&prepared.iter().map(|p| &p.config).collect::<Vec<_>>());
    let gpu_list = options.gpus.as_deref();
    agreed(
        c,
        gpu_list.map_or(Ok(()), |l| placement::check_gpu_list(l, visible)),
    )?;
    // one case per group at once on each node: rank 0's node must hold its groups' largest
    let on_node = (world.node_local().1 / k).max(1);
    agreed(
        c,
        if rank == 0 {
            let all = (0..prepared.len()).collect();
            super::check_memory(
                &prepared,
                &all,
                on_node,
                &format!("{on_node} rank groups on one node"),
                "start fewer ranks per node, or more ranks per case (--ranks-per-case)",
            )
        } else {
            Ok(())
        },
    )?;
    let validate_s = started.elapsed().as_secs_f64();
    let place = Where {
        host: placement::host_name(),
        group,
        ranks: k,
        // a rank's GPU is that of its place among the ranks of its node, as `hexfem run` picks
        gpu: placement::gpu_of_slot(world.node_local().0, visible, gpu_list),
    };
    let mut warm = Warm::new(campaign.share_solver);
    if let Some(mut validated) = validated.filter(|_| k == 1) {
        validated.share_solver = campaign.share_solver;
        warm = validated;
    }
    let group_ctx = Group {
        comm: &group_comm,
        campaign: &campaign,
        prepared: &prepared,
        place,
        interrupt: options.interrupt.as_ref(),
        abort_in_case: options.test_abort_in_case,
    };
    if rank != 0 {
        let fetch = |finished, stopping| -> Result<Option<usize>> {
            let report = serde_json::to_vec(&Report { finished, stopping })?;
            world.send_bytes(0, REPORT_TAG, &report)?;
            Ok(serde_json::from_slice(
                &world.receive_bytes(0, ASSIGN_TAG)?,
            )?)
        };
        group_ctx.work(warm, fetch)?;
        return Ok(None);
    }
    let root = Root {
        world: c,
        campaign: &campaign,
        prepared: &prepared,
        directory: &directory,
        options,
        groups,
        k,
    };
    let (rows, resumed, table) = root.coordinate(&group_ctx, warm, observer)?;
    let totals = Totals {
        resumed,
        jobs: 1,
        ranks: size,
        ranks_per_case: k,
        validate_s,
        started,
    };
    Ok(Some(summarize(
        options, &campaign, &directory, &table, rows, &totals,
    )?))
}

/// One rank group: its communicator and what it runs.
struct Group<'a> {
    comm: &'a Arc<dyn Comm>,
    campaign: &'a Campaign,
    prepared: &'a [Prepared],
    place: Where,
    interrupt: Option<&'a crate::Interrupt>,
    /// Test-only: abort the process on starting this case.
    abort_in_case: Option<usize>,
}

impl Group<'_> {
    fn stopping(&self) -> bool {
        self.interrupt.is_some_and(|i| i.requested())
    }

    /// Runs cases until none is left: the leader gets each from `fetch` (handing over the
    /// row of the one before and whether it stops) and passes it to the group's other ranks.
    fn work(
        &self,
        mut warm: Warm,
        mut fetch: impl FnMut(Option<(usize, CaseRow)>, bool) -> Result<Option<usize>>,
    ) -> Result<()> {
        let leader = self.comm.rank() == 0;
        let threads = if std::env::var_os("RAYON_NUM_THREADS").is_some() {
            rayon::current_num_threads()
        } else {
            let (_, on_node) = self.comm.node_local();
            placement::threads_per_worker(rayon::current_num_threads(), on_node)
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .context("starting the thread pool")?;
        let mut finished = None;
        loop {
            let next = if leader {
                // rank 0 hands out no case to a leader that says it stops
                let next = fetch(finished.take(), self.stopping())?;
                // the group's other ranks read the case's input from the file: a case whose
                // input cannot be written fails here, and the group goes on to the next
                if let (Some(i), true) = (next, self.comm.size() > 1) {
                    let p = &self.prepared[i];
                    if let Err(e) = write_input(self.campaign, p) {
                        let mut row = CaseRow::new(p.spec.index, &p.hash, &p.dir, &p.spec);
                        self.place.stamp(&mut row, p);
                        row.failed(&format!("{e:#}"));
                        finished = Some((i, row));
                        continue;
                    }
                }
                self.share(next)?
            } else {
                self.share(None)?
            };
            let Some(i) = next else {
                return Ok(());
            };
            let p = &self.prepared[i];
            if self.abort_in_case == Some(p.spec.index) {
                std::process::abort();
            }
            let row = if self.comm.size() == 1 {
                pool.install(|| run_case(self.campaign, p, &mut warm, self.interrupt, &self.place))
            } else {
                self.run_on_group(p)
            };
            if leader {
                // a case stopped on request leaves no row: `--resume` runs it again
                if self.stopping() && row.status != CaseStatus::Completed {
                    fetch(None, true)?;
                    self.share(None)?;
                    return Ok(());
                }
                let mut row = row;
                // a row that cannot be saved is a failed case (`--resume` runs it again)
                if let Err(e) = row.write(&p.dir.join("case.json")) {
                    row.status = CaseStatus::Failed;
                    row.error = Some(format!("{e:#}"));
                }
                finished = Some((i, row));
            }
        }
    }

    /// The leader's `next` on every rank of the group.
    fn share(&self, next: Option<usize>) -> Result<Option<usize>> {
        if self.comm.size() == 1 {
            return Ok(next);
        }
        let bytes = if self.comm.rank() == 0 {
            serde_json::to_vec(&next)?
        } else {
            Vec::new()
        };
        let all = self.comm.allgatherv_bytes(&bytes)?;
        Ok(serde_json::from_slice(&all[0])?)
    }

    /// Runs case `p` on the group's ranks with the distributed run path; the row on the leader.
    fn run_on_group(&self, p: &Prepared) -> CaseRow {
        let started = Instant::now();
        let mut row = CaseRow::new(p.spec.index, &p.hash, &p.dir, &p.spec);
        self.place.stamp(&mut row, p);
        let name = crate::run::output_name(&p.config, &self.campaign.base);
        let outcome = (|| {
            let options = crate::RunOptions {
                // the serial campaign's file names (not `input.*`)
                overrides: vec![format!(
                    "output.name={}",
                    serde_json::to_string(&name).map_err(Error::from)?
                )],
                output_dir: Some(p.dir.clone()),
                overwrite: true,
                interrupt: self.interrupt.cloned(),
                ..crate::RunOptions::new(p.dir.join("input.yaml"))
            };
            crate::run(self.comm, &options, &crate::Quiet)
        })();
        row.wall_s = started.elapsed().as_secs_f64();
        match outcome {
            Ok(outcome) => row.completed(&outcome),
            Err(e) => row.failed(&format!("{e:#}")),
        }
        row
    }
}

/// Rank 0's part: the queue, the rows, the table.
struct Root<'a> {
    world: &'a dyn Comm,
    campaign: &'a Campaign,
    prepared: &'a [Prepared],
    directory: &'a Path,
    options: &'a CampaignOptions,
    groups: usize,
    k: usize,
}

impl Root<'_> {
    /// Runs group 0's cases on a thread of its own while this thread hands cases to the other
    /// groups and writes each row it receives into the table; returns the rows (by case), the
    /// cases resumed and the table.
    fn coordinate(
        &self,
        group0: &Group,
        warm: Warm,
        observer: &mut dyn CampaignObserver,
    ) -> Result<(Vec<Option<CaseRow>>, usize, table::Table)> {
        let prepared = self.prepared;
        std::fs::create_dir_all(self.directory).with_context(|| {
            format!(
                "creating the campaign directory {}",
                self.directory.display()
            )
        })?;
        let mut rows: Vec<Option<CaseRow>> = vec![None; prepared.len()];
        let mut resumed = 0;
        let mut pending = Vec::new();
        let keys: Vec<&str> = prepared.iter().map(|p| p.key.as_str()).collect();
        let sizes = prepared
            .iter()
            .map(|p| Ok(crate::memory::estimate(&p.config)?.total))
            .collect::<Result<Vec<f64>>>()?;
        for i in largest_first(&keys, &sizes) {
            match super::resumable(self.campaign, &prepared[i], self.options.resume) {
                Some(row) => {
                    rows[i] = Some(row);
                    resumed += 1;
                }
                None => pending.push(i),
            }
        }
        let table = table::Table::new(self.directory, &self.campaign.parameters);
        table.write(&rows)?;
        let mut tally = Tally::new(prepared.len(), resumed);
        observer.started(&tally);
        let mut held = vec![None; self.groups];
        if self.k == 1 {
            held[0] = warm.problem_key().map(str::to_owned);
        }
        let scheduler = Mutex::new(Scheduler { pending, held });
        let stopping = || group0.stopping();
        let next_for = |group: usize, stop: bool| -> Option<usize> {
            if stop || stopping() {
                return None;
            }
            scheduler
                .lock()
                .ok()
                .and_then(|mut s| s.next(group, |i| prepared[i].key.as_str()))
        };
        let (sender, receiver) = mpsc::channel::<(usize, CaseRow)>();
        let mut failure: Option<Error> = None;
        std::thread::scope(|scope| -> Result<()> {
            let next_for = &next_for;
            let local = scope.spawn(move || {
                group0.work(warm, move |finished, stop| {
                    if let Some(done) = finished {
                        sender.send(done).ok();
                    }
                    Ok(next_for(0, stop))
                })
            });
            // the other groups still to be told that no case is left
            let mut open = self.groups - 1;
            let mut local_done = false;
            let mut record = |i: usize, row: CaseRow, failure: &mut Option<Error>| {
                tally.finished(&row, 1);
                let description = self.campaign.describe(&prepared[i].spec);
                observer.case_finished(&row, &description, &tally);
                rows[i] = Some(row);
                if let Err(e) = table.write(&rows) {
                    failure.get_or_insert(e);
                }
            };
            let mut pause = Duration::from_micros(50);
            while !(local_done && open == 0) {
                let mut idle = true;
                match receiver.try_recv() {
                    Ok((i, row)) => {
                        record(i, row, &mut failure);
                        idle = false;
                    }
                    Err(mpsc::TryRecvError::Disconnected) => local_done = true,
                    Err(mpsc::TryRecvError::Empty) => {}
                }
                if open > 0 {
                    if let Some((from, bytes)) = self.world.try_receive_bytes(None, REPORT_TAG)? {
                        idle = false;
                        let report: Report = serde_json::from_slice(&bytes)
                            .with_context(|| format!("a report from rank {from}"))?;
                        if let Some((i, row)) = report.finished {
                            record(i, row, &mut failure);
                        }
                        // after a failure here no further case starts; the running ones end
                        let next = next_for(from / self.k, report.stopping || failure.is_some());
                        self.world
                            .send_bytes(from, ASSIGN_TAG, &serde_json::to_vec(&next)?)?;
                        if next.is_none() {
                            open -= 1;
                        }
                    }
                }
                if idle {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(2));
                } else {
                    pause = Duration::from_micros(50);
                }
            }
            // the local group's last rows
            for (i, row) in receiver.try_iter() {
                record(i, row, &mut failure);
            }
            match local.join() {
                Ok(result) => result,
                Err(_) => fail!("rank 0's group stopped with a panic"),
            }
        })?;
        if let Some(e) = failure {
            return Err(e);
        }
        observer.done(&tally);
        if stopping() && rows.iter().any(Option::is_none) {
            return Err(CampaignInterrupted {
                done: tally.done,
                total: tally.total,
                table: table.csv.clone(),
            }
            .into());
        }
        Ok((rows, resumed, table))
    }
}

/// The cases in the order they are handed out: grouped by mesh (`keys`), the meshes with the
/// largest case first (`sizes`: the memory estimates, which grow with the unknowns), each
/// mesh's cases in case order.
fn largest_first(keys: &[&str], sizes: &[f64]) -> Vec<usize> {
    let mut largest: BTreeMap<&str, f64> = BTreeMap::new();
    for (key, size) in keys.iter().zip(sizes) {
        let entry = largest.entry(key).or_insert(0.0);
        *entry = entry.max(*size);
    }
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by(|&a, &b| {
        let (ka, kb) = (keys[a], keys[b]);
        largest[kb]
            .total_cmp(&largest[ka])
            .then(ka.cmp(kb))
            .then(a.cmp(&b))
    });
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The largest mesh's cases go first, each mesh's in case order; meshes of equal size in
    /// the order of their keys.
    #[test]
    fn cases_go_out_largest_mesh_first_and_grouped_by_mesh() {
        let keys = ["small", "big", "small", "mid", "big", "tie"];
        let sizes = [1.0, 9.0, 1.0, 5.0, 9.0, 5.0];
        assert_eq!(largest_first(&keys, &sizes), [1, 4, 3, 5, 0, 2]);
    }

    /// A group keeps to the mesh it holds, a group without one takes a mesh nobody holds, and
    /// when every mesh is held a group takes the next case of any: three groups on two meshes.
    #[test]
    fn groups_keep_to_their_mesh_and_share_the_rest() {
        let keys = ["a", "a", "a", "b", "b"];
        let mut s = Scheduler {
            pending: vec![0, 1, 2, 3, 4],
            held: vec![None, Some("b".into()), None],
        };
        let key = |i: usize| keys[i];
        assert_eq!(s.next(1, key), Some(3));
        assert_eq!(s.next(0, key), Some(0));
        // both meshes held: group 2 takes the next case
        assert_eq!(s.next(2, key), Some(1));
        assert_eq!(s.next(1, key), Some(4));
        assert_eq!(s.next(1, key), Some(2));
        assert_eq!(s.next(0, key), None);
    }
}
