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

use linalg::comm;
use linalg::dist::{DistBsr, DistPattern, RowPartition};

use crate::aggregation::UNAGGREGATED;
use crate::dist_aggregation::DistGraph;
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

/// A member of an owned aggregate: serial id, the rank it came from, its near-null rows.
type Member<'a> = (u64, usize, &'a [f64]);

/// Collective. `labels`: the aggregate of each owned vertex of `g` (its root's serial id, or
/// [`UNAGGREGATED`]); `nns`: the owned vertices' near-null rows, `bs x k` per vertex,
/// row-major; `fine`: the partition of the fine block rows (`g`'s owned vertices). The serial
/// ids of `g` must be a permutation of `0..fine.global_len()`.
pub fn dist_tentative_prolongator(
    g: &DistGraph,
    labels: &[u32],
    nns: &[f64],
    bs: usize,
    k: usize,
    fine: &RowPartition,
) -> Result<DistTentative, AmgError> {
    let comm = fine.comm().clone();
    let (rank, size) = (comm.rank(), comm.size());
    let n = fine.n_owned();
    let slab = bs * k;
    let check = if labels.len() != n || nns.len() != n * slab || g.graph.n_vertices() != n {
        Err(format!(
            "tentative prolongator: {} labels, {} near-null values, {} graph rows for {n} owned vertices of {slab} values",
            labels.len(),
            nns.len(),
            g.graph.n_vertices()
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
        if l != UNAGGREGATED && u64::from(l) == g.serial_ids[v] {
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
    asked.sort_unstable();
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

    // Round 3: members send [label, serial id, near-null rows] to the aggregate's owner.
    let mut rows = vec![Vec::new(); size];
    for (v, &l) in labels.iter().enumerate() {
        if l == UNAGGREGATED {
            continue;
        }
        let (owner, _) = where_is(u64::from(l)).ok_or(AmgError::InvalidParameter {
            name: "aggregate labels",
            value: l.to_string(),
            reason: "no owner known for this aggregate",
        })?;
        rows[owner].extend([f64::from(l), g.serial_ids[v] as f64]);
        rows[owner].extend_from_slice(&nns[v * slab..(v + 1) * slab]);
    }
    let received = comm.alltoallv_f64(&rows)?;
    // Owned aggregates: members (label, serial id, source rank, rows) by label, then serial id.
    let mut members: Vec<(u64, Member<'_>)> = received
        .iter()
        .enumerate()
        .flat_map(|(r, msg)| {
            msg.chunks(2 + slab)
                .map(move |rec| (rec[0] as u64, (rec[1] as u64, r, &rec[2..])))
        })
        .collect();
    members.par_sort_unstable_by_key(|&(label, (serial, _, _))| (label, serial));
    let mut groups: Vec<&[(u64, Member<'_>)]> = Vec::new();
    for run in members.chunk_by(|a, b| a.0 == b.0) {
        groups.push(run);
    }
    let coarse_partition = RowPartition::new(comm.clone(), groups.len()).map_err(AmgError::from)?;
    let coarse_first = coarse_partition.owned_range().start;
    let mut coarse_nns = vec![0.0; groups.len() * k * k];
    // each aggregate's stacked rows factored (`Q` in place, `R` its coarse near-null rows)
    let factored: Vec<Result<Vec<f64>, String>> = groups
        .par_iter()
        .zip(coarse_nns.par_chunks_mut((k * k).max(1)))
        .map(|(group, r)| {
            let m = group.len() * bs;
            if m < k {
                return Err(format!(
                    "aggregate of root {}: {m} unknowns, fewer than the {k} near-null vectors",
                    group[0].0
                ));
            }
            let mut q: Vec<f64> = group
                .iter()
                .flat_map(|&(_, (_, _, rows))| rows.iter().copied())
                .collect();
            let mut work = vec![0.0; m * k];
            thin_qr(&mut q, m, k, r, &mut work);
            Ok(q)
        })
        .collect();
    let mut coarse_serial_ids = Vec::with_capacity(groups.len());
    let mut back = vec![Vec::new(); size];
    let mut failure = None;
    for (c, (group, q)) in groups.iter().zip(&factored).enumerate() {
        let q = match q {
            Ok(q) => q,
            Err(e) => {
                failure.get_or_insert(e.clone());
                continue;
            }
        };
        coarse_serial_ids.push(where_is(group[0].0).map_or(u64::MAX, |(_, s)| s));
        for (i, &(_, (serial, r, _))) in group.iter().enumerate() {
            back[r].extend([serial as f64, (coarse_first + c as u64) as f64]);
            back[r].extend_from_slice(&q[i * slab..(i + 1) * slab]);
        }
    }
    comm::agree(&*comm, failure.map_or(Ok(()), Err))?;

    // Round 4: each member gets its Q rows and its aggregate's coarse global id.
    let returned = comm.alltoallv_f64(&back)?;
    let mut row_of: Vec<(u64, usize)> = (0..n).map(|v| (g.serial_ids[v], v)).collect();
    row_of.par_sort_unstable();
    let mut entry: Vec<Option<(u64, &[f64])>> = vec![None; n];
    for msg in &returned {
        for rec in msg.chunks(2 + slab) {
            let serial = rec[0] as u64;
            let v = row_of
                .binary_search_by_key(&serial, |&(s, _)| s)
                .map(|i| row_of[i].1)
                .map_err(|_| AmgError::InvalidParameter {
                    name: "tentative prolongator rows",
                    value: serial.to_string(),
                    reason: "a Q row came back for a vertex this rank does not own",
                })?;
            entry[v] = Some((rec[1] as u64, &rec[2..]));
        }
    }
    let (mut row_ptr, mut cols, mut values) = (vec![0], Vec::new(), Vec::new());
    for e in &entry {
        if let Some((c, q)) = e {
            cols.push(*c);
            values.extend_from_slice(q);
        }
        row_ptr.push(cols.len());
    }
    let pattern = DistPattern::new_rect(
        fine.clone(),
        coarse_partition.clone(),
        bs,
        k,
        &row_ptr,
        &cols,
    )?;
    let p = DistBsr::from_values(pattern, &values)?;
    Ok(DistTentative {
        p,
        coarse_partition,
        coarse_serial_ids,
        coarse_nns,
    })
}
