//! The tentative prolongator on several ranks: the serial per-aggregate thin QR
//! ([`crate::tentative`]) with aggregates that span ranks.
//!
//! Each aggregate is owned by its root's rank. A directory (the serial id range split evenly
//! over the ranks) tells every member where its aggregate lives and the aggregate's serial
//! coarse index (its rank among all roots by serial id); members owned by another rank send
//! their near-null rows to the owner, which stacks each aggregate's rows (its own read in
//! place) in serial order, factors them as the serial code does (the same bits) and sends each
//! such member its `Q` rows and the aggregate's coarse global id. Coarse vertices are numbered
//! rank after rank (owned aggregates by root serial id); their serial ids (the serial coarse
//! numbering, for the next level's priorities) come with them.
//!
//! Calling order: [`crate::dist_aggregation::dist_aggregate`] -> [`dist_tentative_prolongator`].

use rayon::prelude::*;

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use linalg::comm;
use linalg::dist::{move_rows, DistBsr, DistPattern, RowPartition};
use linalg::Vector;

use crate::aggregation::UNAGGREGATED;
use crate::label_set::LabelSet;
use crate::AmgError;
use linalg::thin_qr_of_groups;

mod device;

/// A rank's part of the tentative prolongator and of the coarse level it defines.
#[derive(Debug)]
pub struct DistTentative {
    /// Owned fine block rows x coarse block columns, `bs x k` blocks (one per aggregated row).
    pub p: DistBsr,
    /// Which rank owns which coarse vertices (aggregates).
    pub coarse_partition: RowPartition,
    /// Serial coarse index of each owned coarse vertex (the serial [`crate::Aggregates`] id).
    pub coarse_serial_ids: Vec<u64>,
    /// Coarse near-null space rows of the owned coarse vertices: `k x k` per vertex, row-major;
    /// where they were made (the host, or the level's GPU: [`DistTentativePlan::numeric_on_device`]).
    pub coarse_nns: Vector,
}

/// A member of an owned aggregate, `(rank, index)`: where its near-null rows are and where its
/// `Q` rows go. `rank` this rank: owned vertex `index` (its rows read in place, its `Q` rows
/// written into `P`); another rank: record `index` of that rank's message (its `Q` rows go
/// back in the same place of the answer).
type Member = (u32, u32);

/// What a renewal that keeps the aggregates keeps of a level's tentative prolongator (the
/// symbolic phase of [`dist_tentative_planned`]): where each owned vertex of an aggregate owned
/// elsewhere sends its near-null rows, how the owners stack them, the prolongator's pattern and
/// the coarse vertices.
///
/// Invariants: only rows of aggregates owned by another rank travel: `senders[r]` are the owned
/// vertices whose aggregate rank `r` owns, in vertex order (`senders[rank]` is empty);
/// `received_counts[r]` rows come from rank `r`; `members[group_ptr[c]..group_ptr[c + 1]]` are
/// owned aggregate `c`'s members ([`Member`]) in serial order, and `member_at[r][i]` is the
/// index in `members` of record `i` from rank `r`; `entry_source[e]` is where the `Q` rows of
/// the `e`-th aggregated owned vertex (in vertex order: `P`'s entry `e`) are: (this rank, its
/// index in `members`) or (the owner, its index in `senders[owner]`); `p_pattern` has one block
/// per aggregated vertex, in vertex order; `labels` are the aggregate labels of the owned
/// vertices the plan was made from.
#[derive(Debug)]
pub struct DistTentativePlan {
    labels: Vec<u32>,
    senders: Vec<Vec<u32>>,
    entry_source: Vec<(u32, u32)>,
    members: Vec<Member>,
    member_at: Vec<Vec<u32>>,
    group_ptr: Vec<usize>,
    received_counts: Vec<usize>,
    p_pattern: Arc<DistPattern>,
    coarse_partition: RowPartition,
    coarse_serial_ids: Vec<u64>,
    /// The coarse partition before [`crate::dist_telescope::onto_first_ranks`] moved the
    /// coarse vertices (the near-null rows are made there and moved).
    telescoped_from: Option<RowPartition>,
    bs: usize,
    k: usize,
    /// The plan's arrays on the level's GPU, made by the first [`Self::numeric_on_device`].
    device: OnceLock<device::DeviceTentativePlan>,
}

/// `owner` of an unaggregated vertex.
const NO_OWNER: u32 = u32::MAX;

/// The group of a member whose aggregate this rank does not own (an error).
const NO_GROUP: u32 = u32::MAX;

/// The owned vertices whose rows go to each of `size` ranks other than `rank`, in vertex order
/// (`owner[v]`: the rank owning `v`'s aggregate, or [`NO_OWNER`]).
fn senders_of(owner: &[u32], rank: usize, size: usize) -> Vec<Vec<u32>> {
    // each run of vertices its own lists, joined in run order
    let per_run: Vec<Vec<Vec<u32>>> = owner
        .par_chunks(VERTICES_PER_TASK)
        .enumerate()
        .map(|(k, run)| {
            let mut senders = vec![Vec::new(); size];
            for (j, &o) in run.iter().enumerate() {
                if o != NO_OWNER && o as usize != rank {
                    senders[o as usize].push((k * VERTICES_PER_TASK + j) as u32);
                }
            }
            senders
        })
        .collect();
    (0..size)
        .map(|r| per_run.iter().flat_map(|s| s[r].iter().copied()).collect())
        .collect()
}

/// One message per rank of `len` values per vertex of `senders[r]`, each record written by
/// `fill(vertex, record)` (in parallel).
fn pack(
    senders: &[Vec<u32>],
    len: usize,
    fill: impl Fn(usize, &mut [f64]) + Sync,
) -> Vec<Vec<f64>> {
    senders
        .iter()
        .map(|vertices| {
            let mut msg = vec![0.0; vertices.len() * len];
            msg.par_chunks_mut(len.max(1))
                .zip(vertices.par_iter())
                .for_each(|(rec, &v)| fill(v as usize, rec));
            msg
        })
        .collect()
}

/// Owned vertices a task of [`group_members`] takes at a time.
const VERTICES_PER_TASK: usize = 1 << 15;

/// A member as one word (rank high, index low), for the scatter of [`group_members`].
fn pack_member((r, i): Member) -> u64 {
    (u64::from(r) << 32) | u64::from(i)
}

/// The owned aggregates' members in serial order, grouped: `local_group[v]` is the group of
/// owned vertex `v` (member `(rank, v)`; [`NO_GROUP`]: none here), `remote` the group of each
/// record received from another rank (member `(r, i)`: record `i` from rank `r`), `n_groups`
/// groups, `serial_of(member)` its serial id. Returns `group_ptr` and the members, group after
/// group: a stable counting sort by group, in parallel over runs of `run_len` owned vertices,
/// or `n_groups` where more (each run counts its members per group and puts them in slots of
/// its own: memory linear in the vertices), each group's owned vertices in vertex order, then its
/// records; a group not in serial order then (records from other ranks among them, or owned
/// vertices not numbered by serial id) is sorted alone.
fn group_members(
    local_group: &[u32],
    run_len: usize,
    rank: usize,
    remote: &[(u32, Member)],
    n_groups: usize,
    serial_of: impl Fn(Member) -> u64 + Sync,
) -> (Vec<usize>, Vec<Member>) {
    // runs of at least `n_groups` vertices: their counts take at most `n + n_groups` entries
    let run_len = run_len.max(n_groups).max(1);
    let runs: Vec<&[u32]> = local_group.chunks(run_len).collect();
    let count = |groups: &mut dyn Iterator<Item = u32>| {
        let mut counts = vec![0u32; n_groups];
        for g in groups.filter(|&g| g != NO_GROUP) {
            counts[g as usize] += 1;
        }
        counts
    };
    let run_counts: Vec<Vec<u32>> = runs
        .par_iter()
        .map(|run| count(&mut run.iter().copied()))
        .collect();
    let remote_counts = count(&mut remote.iter().map(|&(g, _)| g));
    // each run's first slot in each group, the group's records after its runs (groups in
    // parallel: each group's firsts, one per run and one for the records, then per run)
    let group_ptr = linalg::row_offsets(n_groups, |g| {
        run_counts.iter().map(|c| c[g] as usize).sum::<usize>() + remote_counts[g] as usize
    });
    let n_runs = runs.len();
    let mut firsts = vec![0usize; n_groups * (n_runs + 1)];
    firsts
        .par_chunks_mut(n_runs + 1)
        .enumerate()
        .for_each(|(g, first)| {
            let mut at = group_ptr[g];
            for (f, counts) in first.iter_mut().zip(&run_counts) {
                *f = at;
                at += counts[g] as usize;
            }
            first[n_runs] = at;
        });
    drop(run_counts);
    let first_of = |g: usize, r: usize| firsts[g * (n_runs + 1) + r];
    let mut run_next: Vec<Vec<usize>> = (0..n_runs)
        .into_par_iter()
        .map(|r| (0..n_groups).map(|g| first_of(g, r)).collect())
        .collect();
    let mut remote_next: Vec<usize> = (0..n_groups).map(|g| first_of(g, n_runs)).collect();
    drop(firsts);
    let at = group_ptr[n_groups];
    // every slot written once (the runs' slots are disjoint): relaxed stores suffice
    let slots: Vec<AtomicU64> = (0..at).into_par_iter().map(|_| AtomicU64::new(0)).collect();
    runs.par_iter()
        .zip(run_next.par_iter_mut())
        .enumerate()
        .for_each(|(k, (run, next))| {
            for (j, &g) in run.iter().enumerate() {
                if g != NO_GROUP {
                    let v = (k * run_len + j) as u32;
                    let at = &mut next[g as usize];
                    slots[*at].store(pack_member((rank as u32, v)), Ordering::Relaxed);
                    *at += 1;
                }
            }
        });
    for &(g, m) in remote {
        let at = &mut remote_next[g as usize];
        slots[*at].store(pack_member(m), Ordering::Relaxed);
        *at += 1;
    }
    let mut members: Vec<Member> = slots
        .into_par_iter()
        .map(|m| {
            let m = m.into_inner();
            ((m >> 32) as u32, m as u32)
        })
        .collect();
    linalg::fill_rows(&group_ptr, &mut members, |_, group| {
        if !group.is_sorted_by_key(|&m| serial_of(m)) {
            group.sort_unstable_by_key(|&m| serial_of(m));
        }
    });
    (group_ptr, members)
}

/// For each rank other than `rank`, the index in `members` of each of its records; `counts[r]`
/// records came from rank `r`.
fn member_index(members: &[Member], counts: &[usize], rank: usize) -> Vec<Vec<u32>> {
    let mut at: Vec<Vec<u32>> = counts.iter().map(|&c| vec![0; c]).collect();
    for (m, &(r, i)) in members.iter().enumerate() {
        if r as usize != rank {
            at[r as usize][i as usize] = m as u32;
        }
    }
    at
}

/// The group of member position `m` (`group_ptr` ascending, `m` below its last entry).
fn group_of(group_ptr: &[usize], m: usize) -> usize {
    group_ptr.partition_point(|&p| p <= m) - 1
}

/// The messages back to the other members' ranks: record `i` to rank `r` is, for the member
/// `member_at[r][i]`, `head(its group)` (where `head` is given) then its `Q` rows (`slab`
/// values of `q`, member after member). In parallel.
fn pack_back(
    member_at: &[Vec<u32>],
    group_ptr: &[usize],
    q: &[f64],
    slab: usize,
    head: Option<&(dyn Fn(usize) -> f64 + Sync)>,
) -> Vec<Vec<f64>> {
    let rec_len = slab + usize::from(head.is_some());
    member_at
        .iter()
        .map(|at| {
            let mut msg = vec![0.0; at.len() * rec_len];
            msg.par_chunks_mut(rec_len.max(1))
                .zip(at.par_iter())
                .for_each(|(rec, &m)| {
                    let m = m as usize;
                    let rows = &q[m * slab..(m + 1) * slab];
                    match head {
                        Some(head) => {
                            rec[0] = head(group_of(group_ptr, m));
                            rec[1..].copy_from_slice(rows);
                        }
                        None => rec.copy_from_slice(rows),
                    }
                });
            msg
        })
        .collect()
}

/// Errors where a message of `returned` does not hold one record of `len` values per vertex
/// this rank sent there (`counts`).
fn check_returned(returned: &[Vec<f64>], counts: &[Vec<u32>], len: usize) -> Result<(), AmgError> {
    for (msg, sent) in returned.iter().zip(counts) {
        if msg.len() != sent.len() * len {
            return Err(AmgError::DimensionMismatch {
                what: "tentative prolongator: Q rows returned by an aggregate's owner",
                expected: sent.len(),
                found: msg.len() / len.max(1),
            });
        }
    }
    Ok(())
}

/// `P` on `pattern` (one block per aggregated owned vertex, in vertex order): each vertex's
/// `Q` rows (`entry_source`) copied from this rank's factors `q` (member after member) or
/// from its record in the messages `returned` (`skip + slab` values a record, the rows last)
/// straight into `P`'s storage.
fn p_of_q_rows(
    pattern: Arc<DistPattern>,
    entry_source: &[(u32, u32)],
    rank: usize,
    q: &[f64],
    returned: &[Vec<f64>],
    skip: usize,
) -> Result<DistBsr, AmgError> {
    let slab = pattern.block_rows() * pattern.block_cols();
    let rec = skip + slab;
    let mut p = DistBsr::zeros(pattern);
    p.set_values_with(|e, block| {
        let (r, i) = entry_source[e];
        let i = i as usize;
        block.copy_from_slice(if r as usize == rank {
            &q[i * slab..(i + 1) * slab]
        } else {
            &returned[r as usize][i * rec + skip..i * rec + skip + slab]
        });
    })?;
    Ok(p)
}

/// Where each aggregated owned vertex's `Q` rows will be (see [`DistTentativePlan`]'s
/// `entry_source`), in vertex order.
fn entry_sources(owner: &[u32], members: &[Member], rank: usize, size: usize) -> Vec<(u32, u32)> {
    // each owned vertex's member position (every slot written at most once: relaxed stores)
    let local_at: Vec<AtomicU32> = (0..owner.len())
        .into_par_iter()
        .map(|_| AtomicU32::new(u32::MAX))
        .collect();
    members.par_iter().enumerate().for_each(|(m, &(r, i))| {
        if r as usize == rank {
            local_at[i as usize].store(m as u32, Ordering::Relaxed);
        }
    });
    // runs of vertices in parallel: each run's aggregated vertices and its vertices sent to
    // each rank give its first entry and its first record number per rank
    let runs: Vec<&[u32]> = owner.chunks(VERTICES_PER_TASK).collect();
    let counts: Vec<(usize, Vec<u32>)> = runs
        .par_iter()
        .map(|run| {
            let mut sent = vec![0u32; size];
            let mut aggregated = 0;
            for &o in run.iter().filter(|&&o| o != NO_OWNER) {
                aggregated += 1;
                if o as usize != rank {
                    sent[o as usize] += 1;
                }
            }
            (aggregated, sent)
        })
        .collect();
    let mut first_sent = Vec::with_capacity(runs.len());
    let mut sent = vec![0u32; size];
    for (_, run_sent) in &counts {
        first_sent.push(sent.clone());
        for (s, r) in sent.iter_mut().zip(run_sent) {
            *s += r;
        }
    }
    let total = counts.iter().map(|(a, _)| a).sum();
    let mut sources = vec![(0u32, 0u32); total];
    let mut rest = &mut sources[..];
    let mut outs = Vec::with_capacity(runs.len());
    for (aggregated, _) in &counts {
        let (out, tail) = rest.split_at_mut(*aggregated);
        outs.push(out);
        rest = tail;
    }
    outs.into_par_iter()
        .zip(first_sent)
        .enumerate()
        .for_each(|(k, (out, mut sent))| {
            let run = runs[k].iter().enumerate().filter(|(_, &o)| o != NO_OWNER);
            for (slot, (j, &o)) in out.iter_mut().zip(run) {
                *slot = match o as usize == rank {
                    true => (
                        o,
                        local_at[k * VERTICES_PER_TASK + j].load(Ordering::Relaxed),
                    ),
                    false => {
                        let s = &mut sent[o as usize];
                        *s += 1;
                        (o, *s - 1)
                    }
                };
            }
        });
    sources
}

/// Each owned aggregate's members' near-null rows (`bs x k` values each) stacked in serial
/// order and factored as the serial code does: `Q` (member after member, `members`' order)
/// and `R` (the aggregate's coarse near-null rows, `k x k`, one after another). An owned
/// vertex's rows are read from `nns`, another rank's from its record in `received` (records of
/// `offset + bs k` values, the rows last). Local; an aggregate with fewer unknowns than `k` is
/// an error naming it (`describe(group)`; for the caller to agree on).
#[allow(clippy::too_many_arguments)]
fn factor_groups(
    group_ptr: &[usize],
    members: &[Member],
    rank: usize,
    nns: &[f64],
    received: &[Vec<f64>],
    offset: usize,
    (bs, k): (usize, usize),
    describe: &(dyn Fn(usize) -> String + Sync),
) -> Result<(Vec<f64>, Vec<f64>), String> {
    let slab = bs * k;
    let rec = offset + slab;
    let n_groups = group_ptr.len() - 1;
    if let Some(c) = (0..n_groups).find(|&c| (group_ptr[c + 1] - group_ptr[c]) * bs < k) {
        let m = (group_ptr[c + 1] - group_ptr[c]) * bs;
        return Err(format!(
            "{}: {m} unknowns, fewer than the {k} near-null vectors",
            describe(c)
        ));
    }
    Ok(thin_qr_of_groups(group_ptr, bs, k, |at| {
        let (src, i) = members[at];
        let i = i as usize;
        match src as usize == rank {
            true => &nns[i * slab..(i + 1) * slab],
            false => &received[src as usize][i * rec + offset..(i + 1) * rec],
        }
    }))
}

/// Collective. [`dist_tentative_planned`] without its plan.
pub fn dist_tentative_prolongator(
    serial_ids: &[u64],
    labels: &[u32],
    nns: &[f64],
    bs: usize,
    k: usize,
    fine: &RowPartition,
) -> Result<DistTentative, AmgError> {
    Ok(dist_tentative_planned(serial_ids, labels, nns, bs, k, fine)?.0)
}

/// Collective. `serial_ids`: the serial ids of the level's local vertices (owned, then any
/// ghosts: the strength graph's, `DistGraph::serial_ids`); `labels`: the aggregate of each
/// owned vertex (its root's serial id, or [`UNAGGREGATED`]); `nns`: the owned vertices'
/// near-null rows, `bs x k` per vertex, row-major; `fine`: the partition of the fine block
/// rows (the owned vertices). The owned serial ids must be a permutation of
/// `0..fine.global_len()` over the ranks. Also returns the plan that
/// makes the same prolongator for new near-null rows ([`DistTentativePlan::numeric`]).
///
/// An aggregate is factored by its root's rank; only the rows of members owned elsewhere
/// travel (one all-to-all there, their `Q` rows back in another), so a partition whose
/// aggregates lie within the ranks moves little.
pub fn dist_tentative_planned(
    serial_ids: &[u64],
    labels: &[u32],
    nns: &[f64],
    bs: usize,
    k: usize,
    fine: &RowPartition,
) -> Result<(DistTentative, DistTentativePlan), AmgError> {
    let (t, plan) = plan_and_factor(serial_ids, labels, Some(nns), bs, k, fine)?;
    let t = t.ok_or(AmgError::InvalidParameter {
        name: "tentative prolongator",
        value: "no values".into(),
        reason: "must come with the near-null rows given (an internal error)",
    })?;
    Ok((t, plan))
}

/// Collective. The plan of [`dist_tentative_planned`] without its values (no near-null rows
/// travel): for a level whose near-null rows live on its GPU, where
/// [`DistTentativePlan::numeric_on_device`] then makes `P0` (the same bits).
pub fn dist_tentative_plan(
    serial_ids: &[u64],
    labels: &[u32],
    bs: usize,
    k: usize,
    fine: &RowPartition,
) -> Result<DistTentativePlan, AmgError> {
    Ok(plan_and_factor(serial_ids, labels, None, bs, k, fine)?.1)
}

/// [`dist_tentative_planned`] (`nns` given) or [`dist_tentative_plan`] (`None`: the messages
/// carry no rows, nothing is factored).
fn plan_and_factor(
    serial_ids: &[u64],
    labels: &[u32],
    nns: Option<&[f64]>,
    bs: usize,
    k: usize,
    fine: &RowPartition,
) -> Result<(Option<DistTentative>, DistTentativePlan), AmgError> {
    let comm = fine.comm().clone();
    let (rank, size) = (comm.rank(), comm.size());
    let n = fine.n_owned();
    let slab = bs * k;
    // values a record carries (none for the plan alone)
    let carried = if nns.is_some() { slab } else { 0 };
    let nns_len = nns.map_or(n * slab, <[f64]>::len);
    let check = if labels.len() != n || nns_len != n * slab || serial_ids.len() < n {
        Err(format!(
            "tentative prolongator: {} labels, {nns_len} near-null values, {} serial ids for {n} owned vertices of {slab} values",
            labels.len(),
            serial_ids.len()
        ))
    } else {
        Ok(())
    };
    comm::agree(&*comm, check)?;
    let n_serial = fine.global_len();
    let directory = |label: u64| -> usize {
        ((label as u128 * size as u128) / n_serial.max(1) as u128) as usize
    };

    // The owned aggregates: those of the roots owned here, by root serial id (the coarse
    // vertices' order).
    let is_root = |v: usize| labels[v] != UNAGGREGATED && u64::from(labels[v]) == serial_ids[v];
    let mut roots: Vec<u64> = (0..n)
        .into_par_iter()
        .filter(|&v| is_root(v))
        .map(|v| serial_ids[v])
        .collect();
    roots.par_sort_unstable();

    // Round 1: roots register with the directory.
    let mut send = vec![Vec::new(); size];
    for &l in &roots {
        send[directory(l)].extend([l, rank as u64]);
    }
    let registered = comm.alltoallv_u64(&send)?;
    let mut held: Vec<(u64, u64)> = registered
        .iter()
        .flat_map(|r| r.chunks(2).map(|c| (c[0], c[1])))
        .collect();
    held.sort_unstable();
    // The serial coarse index: the rank of a root's serial id among all roots.
    let (before, _) = comm::exclusive_scan(&*comm, held.len() as u64)?;

    // Round 2: every rank asks for the aggregates of its owned vertices.
    let asked = LabelSet::new(labels);
    let mut send = vec![Vec::new(); size];
    for &l in asked.labels() {
        let l = u64::from(l);
        send[directory(l)].push(l);
    }
    let queries = comm.alltoallv_u64(&send)?;
    let mut replies = vec![Vec::new(); size];
    for (r, q) in queries.iter().enumerate() {
        for &l in q {
            let i = held
                .binary_search_by_key(&l, |&(label, _)| label)
                .map_err(|_| AmgError::InvalidParameter {
                    name: "aggregate labels",
                    value: l.to_string(),
                    reason: "no root registered this aggregate",
                })?;
            replies[r].extend([held[i].1, before + i as u64]);
        }
    }
    let answers = comm.alltoallv_u64(&replies)?;
    // (owner rank, serial coarse index) of `asked.labels()[i]` (each directory rank answered in
    // the order it was asked)
    let mut next = vec![0usize; size];
    let mut where_asked = Vec::with_capacity(asked.labels().len());
    for &l in asked.labels() {
        let l = u64::from(l);
        let r = directory(l);
        let i = next[r];
        next[r] += 1;
        match (answers[r].get(2 * i), answers[r].get(2 * i + 1)) {
            (Some(&owner), Some(&serial)) => where_asked.push((owner as usize, serial)),
            _ => {
                return Err(AmgError::InvalidParameter {
                    name: "aggregate labels",
                    value: l.to_string(),
                    reason: "the directory did not answer for this aggregate",
                })
            }
        }
    }
    let where_is = |l: u64| {
        let i = asked.index_of(u32::try_from(l).ok()?)?;
        Some(where_asked[i])
    };

    // Round 3: members of aggregates owned elsewhere send [label, serial id, near-null rows]
    // to the owner, in vertex order.
    let owner: Vec<u32> = labels
        .par_iter()
        .map(|&l| {
            if l == UNAGGREGATED {
                return Ok(NO_OWNER);
            }
            where_is(u64::from(l))
                .map(|(o, _)| o as u32)
                .ok_or(AmgError::InvalidParameter {
                    name: "aggregate labels",
                    value: l.to_string(),
                    reason: "no owner known for this aggregate",
                })
        })
        .collect::<Result<_, _>>()?;
    let senders = senders_of(&owner, rank, size);
    let rows = pack(&senders, 2 + carried, |v, rec| {
        rec[0] = f64::from(labels[v]);
        rec[1] = serial_ids[v] as f64;
        if let Some(nns) = nns {
            rec[2..].copy_from_slice(&nns[v * slab..(v + 1) * slab]);
        }
    });
    let received = comm.alltoallv_f64_moving(rows)?;
    // Owned aggregates' members, grouped in serial order.
    let group_of_label = |l: u64| roots.binary_search(&l).map_or(NO_GROUP, |c| c as u32);
    // each owned vertex's owned aggregate (none: its aggregate lives elsewhere, or it has
    // none), each received record's
    let local_group: Vec<u32> = (0..n)
        .into_par_iter()
        .map(|v| match owner[v] as usize == rank {
            true => group_of_label(u64::from(labels[v])),
            false => NO_GROUP,
        })
        .collect();
    let mut remote: Vec<(u32, Member)> = Vec::new();
    for (r, msg) in received.iter().enumerate() {
        remote.par_extend(
            msg.par_chunks(2 + carried)
                .enumerate()
                .map(|(i, rec)| (group_of_label(rec[0] as u64), (r as u32, i as u32))),
        );
    }
    let stray = (0..n)
        .into_par_iter()
        .any(|v| owner[v] as usize == rank && local_group[v] == NO_GROUP)
        || remote.iter().any(|&(g, _)| g == NO_GROUP);
    comm::agree(
        &*comm,
        match stray {
            true => {
                Err("tentative prolongator: a member of an aggregate whose root is not owned here")
            }
            false => Ok(()),
        },
    )?;
    let n_groups = roots.len();
    let serial_of = |(r, i): Member| match r as usize == rank {
        true => serial_ids[i as usize],
        false => received[r as usize][i as usize * (2 + carried) + 1] as u64,
    };
    let (group_ptr, members) = group_members(
        &local_group,
        VERTICES_PER_TASK,
        rank,
        &remote,
        n_groups,
        serial_of,
    );
    drop((local_group, remote));
    let coarse_partition = RowPartition::new(comm.clone(), n_groups).map_err(AmgError::from)?;
    let coarse_first = coarse_partition.owned_range().start;
    let coarse_serial_ids: Vec<u64> = roots
        .iter()
        .map(|&l| where_is(l).map_or(u64::MAX, |(_, s)| s))
        .collect();
    let received_counts: Vec<usize> = received.iter().map(|m| m.len() / (2 + carried)).collect();
    let describe = |c: usize| format!("aggregate of root {}", roots[c]);
    let factored = nns
        .map(|nns| {
            comm::agree(
                &*comm,
                factor_groups(
                    &group_ptr,
                    &members,
                    rank,
                    nns,
                    &received,
                    2,
                    (bs, k),
                    &describe,
                ),
            )
        })
        .transpose()?;
    drop(received);
    let (q, coarse_nns) = factored.unwrap_or_default();

    // Round 4: each member owned elsewhere gets its aggregate's coarse global id and its Q
    // rows, in the order it sent its rows.
    let member_at = member_index(&members, &received_counts, rank);
    let coarse_id = |c: usize| (coarse_first + c as u64) as f64;
    let back = pack_back(&member_at, &group_ptr, &q, carried, Some(&coarse_id));
    let returned = comm.alltoallv_f64_moving(back)?;
    // each record: the coarse global id, then the `Q` rows (read straight from the messages)
    check_returned(&returned, &senders, 1 + carried)?;
    let entry_source = entry_sources(&owner, &members, rank, size);
    let cols: Vec<u64> = entry_source
        .par_iter()
        .map(|&(r, i)| match r as usize == rank {
            true => coarse_first + group_of(&group_ptr, i as usize) as u64,
            false => returned[r as usize][i as usize * (1 + carried)] as u64,
        })
        .collect();
    let row_ptr = linalg::row_offsets(n, |v| usize::from(owner[v] != NO_OWNER));
    let pattern = DistPattern::new_rect(
        fine.clone(),
        coarse_partition.clone(),
        bs,
        k,
        &row_ptr,
        &cols,
    )?;
    let plan = DistTentativePlan {
        labels: labels.to_vec(),
        senders,
        entry_source,
        members,
        member_at,
        group_ptr,
        received_counts,
        p_pattern: pattern.clone(),
        coarse_partition: coarse_partition.clone(),
        coarse_serial_ids: coarse_serial_ids.clone(),
        telescoped_from: None,
        bs,
        k,
        device: OnceLock::new(),
    };
    let t = match nns {
        Some(_) => {
            let p = p_of_q_rows(pattern, &plan.entry_source, rank, &q, &returned, 1)?;
            Some(DistTentative {
                p,
                coarse_partition,
                coarse_serial_ids,
                coarse_nns: Vector::from(coarse_nns),
            })
        }
        None => None,
    };
    drop((q, returned));
    Ok((t, plan))
}

impl DistTentativePlan {
    /// True when the plan was made from the aggregate labels `labels` of the owned vertices
    /// (local: a renewal that recomputes the aggregates keeps the plans where every rank says
    /// so).
    pub fn made_from(&self, labels: &[u32]) -> bool {
        self.labels == labels
    }

    /// After [`crate::dist_telescope::onto_first_ranks`] moved `t`'s coarse vertices: the
    /// moved prolongator's pattern and coarse vertices are the ones to make again.
    pub fn telescoped(&mut self, t: &DistTentative) {
        self.telescoped_from = Some(std::mem::replace(
            &mut self.coarse_partition,
            t.coarse_partition.clone(),
        ));
        self.p_pattern = t.p.pattern().clone();
        self.coarse_serial_ids = t.coarse_serial_ids.clone();
        self.device = OnceLock::new();
    }

    /// Which rank owns which coarse vertices (those of [`DistTentative::coarse_partition`]).
    pub fn coarse_partition(&self) -> &RowPartition {
        &self.coarse_partition
    }

    /// Collective. The tentative prolongator of the plan's aggregates for new near-null rows
    /// `nns` of the owned vertices (`bs x k` each): the bits of [`dist_tentative_planned`] with
    /// the same inputs, on the same pattern (`Arc`), in two all-to-alls of values (the rows of
    /// members owned elsewhere to the aggregates' owners, their `Q` rows back).
    pub fn numeric(&self, nns: &[f64]) -> Result<DistTentative, AmgError> {
        let comm = self.coarse_partition.comm().clone();
        let slab = self.bs * self.k;
        let n = self.labels.len();
        let check = if nns.len() == n * slab {
            Ok(())
        } else {
            Err(format!(
                "tentative prolongator: {} near-null values for {n} owned vertices of {slab} values",
                nns.len(),
            ))
        };
        comm::agree(&*comm, check)?;
        let rows = pack(&self.senders, slab, |v, rec| {
            rec.copy_from_slice(&nns[v * slab..(v + 1) * slab]);
        });
        let received = comm.alltoallv_f64_moving(rows)?;
        let counts_fit = received
            .iter()
            .zip(&self.received_counts)
            .all(|(m, &c)| m.len() == c * slab);
        let counts = if counts_fit {
            Ok(())
        } else {
            Err("tentative prolongator: near-null rows received do not match the plan")
        };
        comm::agree(&*comm, counts)?;
        let rank = comm.rank();
        let describe = |c: usize| format!("owned aggregate {c}");
        let (q, coarse_nns) = comm::agree(
            &*comm,
            factor_groups(
                &self.group_ptr,
                &self.members,
                rank,
                nns,
                &received,
                0,
                (self.bs, self.k),
                &describe,
            ),
        )?;
        drop(received);
        let back = pack_back(&self.member_at, &self.group_ptr, &q, slab, None);
        let returned = comm.alltoallv_f64_moving(back)?;
        check_returned(&returned, &self.senders, slab)?;
        let p = p_of_q_rows(
            self.p_pattern.clone(),
            &self.entry_source,
            rank,
            &q,
            &returned,
            0,
        )?;
        drop((q, returned));
        self.with_coarse_rows(p, Vector::from(coarse_nns))
    }

    /// `p` and the coarse near-null rows `coarse_nns` (each owned aggregate's, where they were
    /// made) as the plan's [`DistTentative`]: the rows moved (on the host) where the plan's
    /// coarse vertices were moved onto fewer ranks. Collective.
    fn with_coarse_rows(&self, p: DistBsr, coarse_nns: Vector) -> Result<DistTentative, AmgError> {
        let coarse_nns = match &self.telescoped_from {
            Some(from) => {
                let comm = self.coarse_partition.comm();
                Vector::from(move_rows(
                    from,
                    &self.coarse_partition,
                    &coarse_nns.to_host_vec()?,
                    self.k * self.k,
                    |s| comm.alltoallv_f64(s),
                )?)
            }
            None => coarse_nns,
        };
        Ok(DistTentative {
            p,
            coarse_partition: self.coarse_partition.clone(),
            coarse_serial_ids: self.coarse_serial_ids.clone(),
            coarse_nns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn senders_and_entry_sources_over_runs_are_the_vertex_order_walks() {
        // rank 1 of 3: vertices over several runs of VERTICES_PER_TASK, owners of every kind
        let (rank, size) = (1usize, 3usize);
        let n = 3 * VERTICES_PER_TASK + 1234;
        let owner: Vec<u32> = (0..n)
            .map(|v| match (v * 7919) % 11 {
                0 | 1 => NO_OWNER,
                2 | 3 => 0,
                4 => 2,
                _ => 1,
            })
            .collect();
        // this rank's members: its own aggregated vertices, in reverse vertex order
        let members: Vec<Member> = (0..n as u32)
            .rev()
            .filter(|&v| owner[v as usize] == rank as u32)
            .map(|v| (rank as u32, v))
            .chain([(0, 5), (2, 7)])
            .collect();
        let mut want_senders = vec![Vec::new(); size];
        let mut want_sources = Vec::new();
        let mut sent = vec![0u32; size];
        for (v, &o) in owner.iter().enumerate() {
            match o {
                NO_OWNER => {}
                o if o as usize == rank => {
                    let m = members.iter().position(|&m| m == (o, v as u32)).unwrap();
                    want_sources.push((o, m as u32));
                }
                o => {
                    want_senders[o as usize].push(v as u32);
                    want_sources.push((o, sent[o as usize]));
                    sent[o as usize] += 1;
                }
            }
        }
        assert_eq!(senders_of(&owner, rank, size), want_senders);
        assert_eq!(entry_sources(&owner, &members, rank, size), want_sources);
    }

    #[test]
    fn members_are_grouped_in_serial_order_over_runs_of_owned_vertices() {
        // 40 owned vertices in 5 groups (some in none), serial ids not ascending everywhere,
        // and records from ranks 0 and 2 (this is rank 1) with serial ids among them
        let n_groups = 5;
        let local_group: Vec<u32> = (0..40u32)
            .map(|v| if v % 7 == 3 { NO_GROUP } else { (v * 3) % 5 })
            .collect();
        let serial_local: Vec<u64> = (0..40u64)
            .map(|v| if v < 30 { 100 + 2 * v } else { 300 - v })
            .collect();
        let remote: Vec<(u32, Member)> = (0..9u32)
            .map(|i| (i % 5, (if i % 2 == 0 { 0 } else { 2 }, i)))
            .collect();
        let serial_of = |(r, i): Member| match r {
            1 => serial_local[i as usize],
            _ => 101 + 14 * u64::from(i) + 2 * u64::from(r), // odd: no serial id twice
        };
        // the reference: every member by (group, serial id)
        let mut want: Vec<(u32, u64, Member)> = local_group
            .iter()
            .enumerate()
            .filter(|&(_, &g)| g != NO_GROUP)
            .map(|(v, &g)| (g, serial_of((1, v as u32)), (1, v as u32)))
            .chain(remote.iter().map(|&(g, m)| (g, serial_of(m), m)))
            .collect();
        want.sort_unstable();
        for run_len in [1, 3, 7, 40, 64] {
            let (group_ptr, members) =
                group_members(&local_group, run_len, 1, &remote, n_groups, serial_of);
            assert_eq!(
                members,
                want.iter().map(|w| w.2).collect::<Vec<_>>(),
                "runs of {run_len}"
            );
            for g in 0..n_groups {
                let size = want.iter().filter(|w| w.0 == g as u32).count();
                assert_eq!(group_ptr[g + 1] - group_ptr[g], size, "group {g}");
            }
        }
    }
}
