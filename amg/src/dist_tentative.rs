//! The tentative prolongator on several ranks: the serial per-aggregate thin QR
//! ([`crate::tentative`]) with aggregates that span ranks.
//!
//! Each aggregate is owned by its root's rank. A directory (the serial id range split evenly
//! over the ranks) tells every member where its aggregate lives and the aggregate's serial
//! coarse index (its rank among all roots by serial id); members send their near-null rows to
//! the owner, which stacks them in serial order, factors them as the serial code does (the same
//! bits) and sends each member its `Q` rows and the aggregate's coarse global id. Coarse
//! vertices are numbered rank after rank (owned aggregates by root serial id); their serial
//! ids (the serial coarse numbering, for the next level's priorities) come with them.
//!
//! Calling order: [`crate::dist_aggregation::dist_aggregate`] -> [`dist_tentative_prolongator`].

use rayon::prelude::*;

use std::sync::Arc;

use linalg::comm;
use linalg::dist::{move_rows, DistBsr, DistPattern, RowPartition};

use crate::aggregation::UNAGGREGATED;
use crate::AmgError;
use linalg::thin_qr;

/// A rank's part of the tentative prolongator and of the coarse level it defines.
#[derive(Debug)]
pub struct DistTentative {
    /// Owned fine block rows x coarse block columns, `bs x k` blocks (one per aggregated row).
    pub p: DistBsr,
    /// Which rank owns which coarse vertices (aggregates).
    pub coarse_partition: RowPartition,
    /// Serial coarse index of each owned coarse vertex (the serial [`crate::Aggregates`] id).
    pub coarse_serial_ids: Vec<u64>,
    /// Coarse near-null space rows of the owned coarse vertices: `k x k` per vertex, row-major.
    pub coarse_nns: Vec<f64>,
}

/// What a renewal that keeps the aggregates keeps of a level's tentative prolongator (the
/// symbolic phase of [`dist_tentative_planned`]): where each owned vertex sends its near-null
/// rows, how the owners stack them, the prolongator's pattern and the coarse vertices.
///
/// Invariants: a rank sends the rows of its aggregated vertices to their aggregates' owners in
/// vertex order: `senders[r]` are the owned vertices whose aggregate rank `r` owns, and
/// `entry_source[e]` is (rank, index in `senders[rank]`) of the `e`-th aggregated owned vertex
/// (in vertex order: `P`'s entry `e`); `received_counts[r]` rows come from rank `r`;
/// `members[group_ptr[c]..group_ptr[c + 1]]` are the (source rank, index in its message) of
/// owned aggregate `c`'s members in serial order, and `member_at[r][i]` is the index in
/// `members` of record `i` from rank `r`; `p_pattern` has one block per aggregated vertex, in
/// vertex order; `labels` are the aggregate labels of the owned vertices the plan was made
/// from.
#[derive(Debug)]
pub struct DistTentativePlan {
    labels: Vec<u32>,
    senders: Vec<Vec<u32>>,
    entry_source: Vec<(u32, u32)>,
    members: Vec<(u32, u32)>,
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
}

/// `owner` of an unaggregated vertex.
const NO_OWNER: u32 = u32::MAX;

/// The owned vertices whose rows go to each of `size` ranks, in vertex order (`owner[v]`: the
/// rank owning `v`'s aggregate, or [`NO_OWNER`]), and each aggregated vertex's (rank, index in
/// that rank's list), in vertex order.
fn senders_of(owner: &[u32], size: usize) -> (Vec<Vec<u32>>, Vec<(u32, u32)>) {
    let mut senders = vec![Vec::new(); size];
    let mut entry_source = Vec::with_capacity(owner.len());
    for (v, &o) in owner.iter().enumerate() {
        if o != NO_OWNER {
            let list = &mut senders[o as usize];
            entry_source.push((o, list.len() as u32));
            list.push(v as u32);
        }
    }
    (senders, entry_source)
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

/// For each source rank, the index in `members` of each of its records (`members[m]` is
/// (source rank, record index)); `counts[r]` records came from rank `r`.
fn member_index(members: &[(u32, u32)], counts: &[usize]) -> Vec<Vec<u32>> {
    let mut at: Vec<Vec<u32>> = counts.iter().map(|&c| vec![0; c]).collect();
    for (m, &(r, i)) in members.iter().enumerate() {
        at[r as usize][i as usize] = m as u32;
    }
    at
}

/// The messages back to the members' ranks: record `i` to rank `r` is, for the member
/// `member_at[r][i]`, `head(its group)` (where `head` is given) then its `Q` rows (`slab`
/// values of its group's `qs`, in member order). In parallel.
fn pack_back(
    member_at: &[Vec<u32>],
    group_ptr: &[usize],
    qs: &[Vec<f64>],
    slab: usize,
    head: Option<&(dyn Fn(usize) -> f64 + Sync)>,
) -> Vec<Vec<f64>> {
    let mut group_of = vec![0u32; group_ptr[group_ptr.len() - 1]];
    for c in 0..group_ptr.len() - 1 {
        group_of[group_ptr[c]..group_ptr[c + 1]].fill(c as u32);
    }
    let rec_len = slab + usize::from(head.is_some());
    member_at
        .iter()
        .map(|at| {
            let mut msg = vec![0.0; at.len() * rec_len];
            msg.par_chunks_mut(rec_len.max(1))
                .zip(at.par_iter())
                .for_each(|(rec, &m)| {
                    let c = group_of[m as usize] as usize;
                    let i = m as usize - group_ptr[c];
                    let q = &qs[c][i * slab..(i + 1) * slab];
                    match head {
                        Some(head) => {
                            rec[0] = head(c);
                            rec[1..].copy_from_slice(q);
                        }
                        None => rec.copy_from_slice(q),
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

/// The `len` values at `skip..skip + len` of each aggregated vertex's record (`entry_source`:
/// its rank and index there) in the messages `returned` of `skip + len` values a record, in
/// vertex order (one copy, straight from the messages).
fn gather_records(
    returned: &[Vec<f64>],
    entry_source: &[(u32, u32)],
    skip: usize,
    len: usize,
) -> Vec<f64> {
    let rec = skip + len;
    let mut out = vec![0.0; entry_source.len() * len];
    out.par_chunks_mut(len.max(1))
        .zip(entry_source.par_iter())
        .for_each(|(values, &(r, i))| {
            let at = i as usize * rec + skip;
            values.copy_from_slice(&returned[r as usize][at..at + len]);
        });
    out
}

/// Each aggregated vertex's record (`entry_source`: its rank and index there) from the
/// messages `returned` of `len` values a record: its `len` values, in vertex order. An error
/// where a message does not hold one record per vertex this rank sent there (`counts`).
fn unpack_returned(
    returned: &[Vec<f64>],
    counts: &[Vec<u32>],
    entry_source: &[(u32, u32)],
    len: usize,
) -> Result<Vec<f64>, AmgError> {
    check_returned(returned, counts, len)?;
    Ok(gather_records(returned, entry_source, 0, len))
}

/// Each owned aggregate's members' near-null rows (`bs x k` values each) stacked in serial
/// order and factored as the serial code does:
/// `Q` (in place of the rows, member-major) and `R` (the aggregate's coarse near-null rows,
/// `k x k`, one after another). `received[r]` holds records of `offset + bs k` values (the
/// rows last; with `offset > 0` the record starts with the root's serial id); member `(r, i)`
/// is record `i` of rank `r`. Local; an aggregate with fewer unknowns than `k` is an error (for
/// the caller to agree on).
fn factor_groups(
    group_ptr: &[usize],
    members: &[(u32, u32)],
    received: &[Vec<f64>],
    offset: usize,
    bs: usize,
    k: usize,
) -> Result<(Vec<Vec<f64>>, Vec<f64>), String> {
    let slab = bs * k;
    let rec = offset + slab;
    let n_groups = group_ptr.len() - 1;
    let mut coarse_nns = vec![0.0; n_groups * k * k];
    let factored: Vec<Result<Vec<f64>, String>> = (0..n_groups)
        .into_par_iter()
        .zip(coarse_nns.par_chunks_mut((k * k).max(1)))
        .map(|(c, r)| {
            let group = &members[group_ptr[c]..group_ptr[c + 1]];
            let m = group.len() * bs;
            if m < k {
                let (src, i) = group[0];
                let root = match offset {
                    0 => String::from("an aggregate"),
                    _ => format!(
                        "aggregate of root {}",
                        received[src as usize][i as usize * rec]
                    ),
                };
                return Err(format!(
                    "{root}: {m} unknowns, fewer than the {k} near-null vectors"
                ));
            }
            let mut q: Vec<f64> = Vec::with_capacity(m * k);
            for &(src, i) in group {
                let at = i as usize * rec + offset;
                q.extend_from_slice(&received[src as usize][at..at + slab]);
            }
            let mut work = vec![0.0; m * k];
            thin_qr(&mut q, m, k, r, &mut work);
            Ok(q)
        })
        .collect();
    let qs = factored.into_iter().collect::<Result<Vec<_>, String>>()?;
    Ok((qs, coarse_nns))
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
pub fn dist_tentative_planned(
    serial_ids: &[u64],
    labels: &[u32],
    nns: &[f64],
    bs: usize,
    k: usize,
    fine: &RowPartition,
) -> Result<(DistTentative, DistTentativePlan), AmgError> {
    let comm = fine.comm().clone();
    let (rank, size) = (comm.rank(), comm.size());
    let n = fine.n_owned();
    let slab = bs * k;
    let check = if labels.len() != n || nns.len() != n * slab || serial_ids.len() < n {
        Err(format!(
            "tentative prolongator: {} labels, {} near-null values, {} serial ids for {n} owned vertices of {slab} values",
            labels.len(),
            nns.len(),
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

    // Round 1: roots register with the directory.
    let mut send = vec![Vec::new(); size];
    for (v, &l) in labels.iter().enumerate() {
        if l != UNAGGREGATED && u64::from(l) == serial_ids[v] {
            send[directory(u64::from(l))].extend([u64::from(l), rank as u64]);
        }
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
    let mut asked: Vec<u64> = labels
        .iter()
        .filter(|&&l| l != UNAGGREGATED)
        .map(|&l| u64::from(l))
        .collect();
    asked.par_sort_unstable();
    asked.dedup();
    let mut send = vec![Vec::new(); size];
    for &l in &asked {
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
    // (owner rank, serial coarse index) of `asked[i]` (each directory rank answered in the
    // order it was asked)
    let mut next = vec![0usize; size];
    let mut where_asked = Vec::with_capacity(asked.len());
    for &l in &asked {
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
    let where_is = |l: u64| asked.binary_search(&l).map(|i| where_asked[i]).ok();

    // Round 3: members send [label, serial id, near-null rows] to the aggregate's owner, in
    // vertex order.
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
    let (senders, entry_source) = senders_of(&owner, size);
    let rows = pack(&senders, 2 + slab, |v, rec| {
        rec[0] = f64::from(labels[v]);
        rec[1] = serial_ids[v] as f64;
        rec[2..].copy_from_slice(&nns[v * slab..(v + 1) * slab]);
    });
    let received = comm.alltoallv_f64_moving(rows)?;
    // Owned aggregates: members (label, serial id, (source rank, index in its message)) by
    // label, then serial id.
    let mut members: Vec<(u64, u64, (u32, u32))> =
        Vec::with_capacity(received.iter().map(|m| m.len() / (2 + slab)).sum());
    for (r, msg) in received.iter().enumerate() {
        members.par_extend(
            msg.par_chunks(2 + slab)
                .enumerate()
                .map(|(i, rec)| (rec[0] as u64, rec[1] as u64, (r as u32, i as u32))),
        );
    }
    members.par_sort_unstable();
    let mut group_ptr = vec![0];
    for run in members.chunk_by(|a, b| a.0 == b.0) {
        group_ptr.push(group_ptr[group_ptr.len() - 1] + run.len());
    }
    let n_groups = group_ptr.len() - 1;
    let coarse_partition = RowPartition::new(comm.clone(), n_groups).map_err(AmgError::from)?;
    let coarse_first = coarse_partition.owned_range().start;
    let coarse_serial_ids: Vec<u64> = group_ptr[..n_groups]
        .iter()
        .map(|&m| where_is(members[m].0).map_or(u64::MAX, |(_, s)| s))
        .collect();
    let plan_members: Vec<(u32, u32)> = members.par_iter().map(|&(_, _, m)| m).collect();
    let received_counts: Vec<usize> = received.iter().map(|m| m.len() / (2 + slab)).collect();
    let (qs, coarse_nns) = comm::agree(
        &*comm,
        factor_groups(&group_ptr, &plan_members, &received, 2, bs, k),
    )?;

    // Round 4: each member gets its aggregate's coarse global id and its Q rows, in the order
    // it sent its rows.
    let member_at = member_index(&plan_members, &received_counts);
    let coarse_id = |c: usize| (coarse_first + c as u64) as f64;
    let back = pack_back(&member_at, &group_ptr, &qs, slab, Some(&coarse_id));
    drop(qs);
    let returned = comm.alltoallv_f64_moving(back)?;
    // each record: the coarse global id, then the `Q` rows (read straight from the messages)
    check_returned(&returned, &senders, 1 + slab)?;
    let cols: Vec<u64> = entry_source
        .par_iter()
        .map(|&(r, i)| returned[r as usize][i as usize * (1 + slab)] as u64)
        .collect();
    let values = gather_records(&returned, &entry_source, 1, slab);
    drop(returned);
    let mut row_ptr = Vec::with_capacity(n + 1);
    row_ptr.push(0);
    for &o in &owner {
        row_ptr.push(row_ptr[row_ptr.len() - 1] + usize::from(o != NO_OWNER));
    }
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
        members: plan_members,
        member_at,
        group_ptr,
        received_counts,
        p_pattern: pattern.clone(),
        coarse_partition: coarse_partition.clone(),
        coarse_serial_ids: coarse_serial_ids.clone(),
        telescoped_from: None,
        bs,
        k,
    };
    let p = DistBsr::from_values(pattern, &values)?;
    Ok((
        DistTentative {
            p,
            coarse_partition,
            coarse_serial_ids,
            coarse_nns,
        },
        plan,
    ))
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
    }

    /// Collective. The tentative prolongator of the plan's aggregates for new near-null rows
    /// `nns` of the owned vertices (`bs x k` each): the bits of [`dist_tentative_planned`] with
    /// the same inputs, on the same pattern (`Arc`), in two all-to-alls of values (rows to the
    /// aggregates' owners, `Q` rows back).
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
        let (qs, coarse_nns) = comm::agree(
            &*comm,
            factor_groups(
                &self.group_ptr,
                &self.members,
                &received,
                0,
                self.bs,
                self.k,
            ),
        )?;
        let back = pack_back(&self.member_at, &self.group_ptr, &qs, slab, None);
        drop(qs);
        let returned = comm.alltoallv_f64_moving(back)?;
        let values = unpack_returned(&returned, &self.senders, &self.entry_source, slab)?;
        let coarse_nns = match &self.telescoped_from {
            Some(from) => move_rows(
                from,
                &self.coarse_partition,
                &coarse_nns,
                self.k * self.k,
                |s| comm.alltoallv_f64(s),
            )?,
            None => coarse_nns,
        };
        Ok(DistTentative {
            p: DistBsr::from_values(self.p_pattern.clone(), &values)?,
            coarse_partition: self.coarse_partition.clone(),
            coarse_serial_ids: self.coarse_serial_ids.clone(),
            coarse_nns,
        })
    }
}
