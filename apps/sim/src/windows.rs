//! Windowed gathers to rank 0 in serial order: what lets rank 0 write a distributed run's
//! output without ever holding the mesh or a whole field.
//!
//! The serial ids of a kind of entity (nodes or cells, `n_global` of them) are cut into windows
//! of `ids` consecutive ids: `[k ids, (k + 1) ids)`. [`WindowPlan::new`] (collective, once per
//! kind of record) sorts the entities this rank owns by serial id and tells rank 0 how many of
//! them fall in each window; [`WindowPlan::gather`] (collective, per use) then has every rank
//! send rank 0, window after window, one message holding its owned entities of the window (their
//! ids, then their records of `width` values), and hands rank 0 each window's entities in
//! ascending serial id. A window holds at most `limit` values in all (ids and records), so rank
//! 0 holds `O(limit)` values besides what it owns, whatever the mesh's size.

use comm::Comm;
use rayon::prelude::*;

use crate::error::fail;
use crate::Result;

/// Values per window of the output's gathers by default (8 MiB of f64).
pub const DEFAULT_WINDOW_VALUES: usize = 1 << 20;

/// The windows of one kind of record (see the module doc).
#[derive(Clone, Debug)]
pub struct WindowPlan {
    /// Serial ids per window.
    ids: u64,
    /// Values per entity's record (its id not included).
    width: usize,
    n_windows: usize,
    /// This rank's owned entities: (serial id, local index), ascending id.
    owned: Vec<(u64, usize)>,
    /// Start in `owned` of each window (`n_windows + 1` entries).
    starts: Vec<usize>,
    /// On rank 0: entities each rank sends per window, window-major (`n_windows x size`).
    counts: Option<Vec<u32>>,
}

/// What one [`WindowPlan::gather`] moved: for checking the bound on rank 0's holding (on the
/// other ranks: `max_window_values` is their largest message).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GatherStats {
    pub windows: usize,
    /// The most values rank 0 held for one window (received and its own).
    pub max_window_values: usize,
    /// The largest message rank 0 received, in values.
    pub max_message_values: usize,
}

impl WindowPlan {
    /// Collective. `owned`: (serial id, local index) of each entity this rank owns, each serial
    /// id below `n_global` and owned by exactly one rank; `width`: values per record; `limit`:
    /// values per window (at least `width + 1`: one entity).
    pub fn new(
        comm: &dyn Comm,
        mut owned: Vec<(u64, usize)>,
        n_global: u64,
        width: usize,
        limit: usize,
    ) -> Result<Self> {
        let ids = (limit / (width + 1)).max(1) as u64;
        let n_windows = n_global.div_ceil(ids) as usize;
        owned.sort_unstable();
        if let Some(&(id, _)) = owned.iter().find(|(id, _)| *id >= n_global) {
            fail!("serial id {id} of {n_global} entities");
        }
        let mut starts = Vec::with_capacity(n_windows + 1);
        let mut at = 0;
        for k in 0..n_windows as u64 {
            starts.push(at);
            at += owned[at..].partition_point(|&(id, _)| id < (k + 1) * ids);
        }
        starts.push(owned.len());
        let mine: Vec<f64> = starts.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let lens = vec![n_windows; comm.size()];
        let counts = gather_to_root(comm, &mine, &lens, GATHER_CHUNK)?.map(|per_rank| {
            let mut counts = vec![0u32; n_windows * per_rank.len()];
            for (r, c) in per_rank.iter().enumerate() {
                for (k, &n) in c.iter().enumerate() {
                    counts[k * per_rank.len() + r] = n as u32;
                }
            }
            counts
        });
        Ok(WindowPlan {
            ids,
            width,
            n_windows,
            owned,
            starts,
            counts,
        })
    }

    /// Values per record.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Collective. Every rank fills the records of its owned entities (`record(local index,
    /// record)`, `width` values, called in parallel); rank 0's `sink(ids, records)` receives
    /// each window's entities in ascending serial id (`records`: `width` values per id), window
    /// after window, in ascending order. The next window travels while rank 0's `sink` takes
    /// one and the other ranks pack theirs, so rank 0 holds at most one window's messages and
    /// the merged copy of the window before (as the window's own merge did). Returns what rank
    /// 0 held (zeros on the other ranks).
    pub fn gather(
        &self,
        comm: &dyn Comm,
        record: impl Fn(usize, &mut [f64]) + Sync,
        mut sink: impl FnMut(&[u64], &[f64]),
    ) -> Result<GatherStats> {
        let (w, size) = (self.width, comm.size());
        let mut stats = GatherStats::default();
        let Some(counts) = &self.counts else {
            // window k + 1 packed while window k travels
            let mut message = if self.n_windows > 0 {
                self.pack(0, &record)
            } else {
                Vec::new()
            };
            for k in 0..self.n_windows {
                stats.max_window_values = stats.max_window_values.max(message.len());
                let mut next = Vec::new();
                let mut pack_next = || {
                    if k + 1 < self.n_windows {
                        next = self.pack(k + 1, &record);
                    }
                };
                if message.is_empty() {
                    pack_next();
                } else {
                    comm.exchange(&[(0, &message)], &mut [], &mut pack_next)?;
                }
                message = next;
            }
            return Ok(stats);
        };
        // rank 0: window k's messages arrive while rank 0 packs its own and sinks window k - 1
        let mut merged: Option<(Vec<u64>, Vec<f64>)> = None;
        for k in 0..self.n_windows {
            let per_rank = &counts[k * size..(k + 1) * size];
            let mut messages: Vec<Vec<f64>> = per_rank
                .iter()
                .enumerate()
                .map(|(r, &n)| match r {
                    0 => Vec::new(),
                    _ => vec![0.0; n as usize * (1 + w)],
                })
                .collect();
            let mut own = Vec::new();
            {
                let mut recvs: Vec<(usize, &mut [f64])> = messages
                    .iter_mut()
                    .enumerate()
                    .skip(1)
                    .filter(|(_, m)| !m.is_empty())
                    .map(|(r, m)| (r, m.as_mut_slice()))
                    .collect();
                stats.max_message_values = recvs
                    .iter()
                    .map(|(_, m)| m.len())
                    .fold(stats.max_message_values, usize::max);
                let mut overlap = || {
                    own = self.pack(k, &record);
                    if let Some((ids, records)) = merged.take() {
                        sink(&ids, &records);
                    }
                };
                comm.exchange(&[], &mut recvs, &mut overlap)?;
            }
            if own.len() != per_rank[0] as usize * (1 + w) {
                fail!("window {k}: rank 0's count changed since the plan");
            }
            messages[0] = own;
            stats.max_window_values = stats
                .max_window_values
                .max(messages.iter().map(Vec::len).sum());
            merged = Some(merge_runs(&messages, per_rank, w));
            stats.windows += 1;
        }
        if let Some((ids, records)) = merged {
            sink(&ids, &records);
        }
        Ok(stats)
    }

    /// This rank's message of window `k`: its owned entities' ids (as bits), then their
    /// records (filled in parallel).
    fn pack(&self, k: usize, record: &(impl Fn(usize, &mut [f64]) + Sync)) -> Vec<f64> {
        let mine = &self.owned[self.starts[k]..self.starts[k + 1]];
        let w = self.width;
        let mut message = vec![0.0; mine.len() * (1 + w)];
        let (ids, records) = message.split_at_mut(mine.len());
        ids.par_iter_mut()
            .zip(mine.par_iter())
            .with_min_len(PACK_GRAIN)
            .for_each(|(x, &(id, _))| *x = f64::from_bits(id));
        if w > 0 {
            records
                .par_chunks_mut(w)
                .zip(mine.par_iter())
                .with_min_len(PACK_GRAIN)
                .for_each(|(r, &(_, local))| record(local, r));
        }
        message
    }

    /// Serial ids per window.
    pub fn ids_per_window(&self) -> u64 {
        self.ids
    }
}

/// Entities a task of [`WindowPlan::gather`]'s parallel packing fills at least.
const PACK_GRAIN: usize = 4096;

/// One window's entities in ascending serial id: `messages[r]` holds rank `r`'s `per_rank[r]`
/// ids (ascending, as bits) then their records of `w` values. Every id is one rank's, so the
/// merge moves runs: the rank with the least next id gives every id below the other ranks'
/// least next id at once (one run per rank where the ranks hold ranges of ids).
fn merge_runs(messages: &[Vec<f64>], per_rank: &[u32], w: usize) -> (Vec<u64>, Vec<f64>) {
    let total: usize = per_rank.iter().map(|&n| n as usize).sum();
    let mut ids = Vec::with_capacity(total);
    let mut records = Vec::with_capacity(total * w);
    let mut at = vec![0usize; messages.len()];
    let head = |r: usize, at: &[usize]| {
        (at[r] < per_rank[r] as usize).then(|| messages[r][at[r]].to_bits())
    };
    while let Some((_, r)) = (0..messages.len())
        .filter_map(|r| head(r, &at).map(|id| (id, r)))
        .min()
    {
        let bound = (0..messages.len())
            .filter(|&o| o != r)
            .filter_map(|o| head(o, &at))
            .min()
            .unwrap_or(u64::MAX);
        let (m, n) = (&messages[r], per_rank[r] as usize);
        let end = at[r] + m[at[r]..n].partition_point(|x| x.to_bits() < bound);
        ids.extend(m[at[r]..end].iter().map(|x| x.to_bits()));
        records.extend_from_slice(&m[n + at[r] * w..n + end * w]);
        at[r] = end;
    }
    (ids, records)
}

/// Values per message of the output's [`gather_to_root`] (8 MiB).
pub const GATHER_CHUNK: usize = 1 << 20;

/// Collective (point to point): every rank's `local` on rank 0, indexed by rank (`lens[r]`:
/// rank `r`'s length, the same on every rank); `None` on the other ranks. Each rank sends its
/// values in messages of at most `chunk` values, and only rank 0 ever holds the whole.
pub fn gather_to_root(
    comm: &dyn Comm,
    local: &[f64],
    lens: &[usize],
    chunk: usize,
) -> Result<Option<Vec<Vec<f64>>>> {
    let chunk = chunk.max(1);
    if lens.len() != comm.size() || lens[comm.rank()] != local.len() {
        fail!(
            "gather to rank 0: {} values here, {:?} expected per rank",
            local.len(),
            lens
        );
    }
    if comm.rank() != 0 {
        for part in local.chunks(chunk) {
            comm.exchange(&[(0, part)], &mut [], &mut || ())?;
        }
        return Ok(None);
    }
    let mut all: Vec<Vec<f64>> = lens.iter().map(|&n| vec![0.0; n]).collect();
    all[0].copy_from_slice(local);
    let rounds = lens[1..]
        .iter()
        .map(|n| n.div_ceil(chunk))
        .max()
        .unwrap_or(0);
    for k in 0..rounds {
        let start = k * chunk;
        let mut recvs: Vec<(usize, &mut [f64])> = all
            .iter_mut()
            .enumerate()
            .skip(1)
            .filter(|(_, v)| start < v.len())
            .map(|(r, v)| {
                let end = (start + chunk).min(v.len());
                (r, &mut v[start..end])
            })
            .collect();
        comm.exchange(&[], &mut recvs, &mut || ())?;
    }
    Ok(Some(all))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The merge of runs is the sort by id: ranks holding ranges, runs, single ids
    /// alternating, and ranks with nothing.
    #[test]
    fn merged_runs_are_the_windows_entities_sorted_by_id() {
        let w = 2;
        let message = |ids: &[u64]| -> Vec<f64> {
            let mut m: Vec<f64> = ids.iter().map(|&id| f64::from_bits(id)).collect();
            m.extend(ids.iter().flat_map(|&id| [id as f64, -(id as f64)]));
            m
        };
        let cases: [Vec<Vec<u64>>; 4] = [
            vec![(0..10).collect(), (10..25).collect(), (25..30).collect()],
            vec![
                (0..30).step_by(3).collect(),
                (1..30).step_by(3).collect(),
                (2..30).step_by(3).collect(),
            ],
            vec![vec![], vec![4, 5, 6, 20, 21], vec![0, 1, 2, 3, 7, 22]],
            vec![vec![], vec![], vec![]],
        ];
        for per_rank_ids in cases {
            let messages: Vec<Vec<f64>> = per_rank_ids.iter().map(|ids| message(ids)).collect();
            let per_rank: Vec<u32> = per_rank_ids.iter().map(|ids| ids.len() as u32).collect();
            let (ids, records) = merge_runs(&messages, &per_rank, w);
            let mut want: Vec<u64> = per_rank_ids.concat();
            want.sort_unstable();
            assert_eq!(ids, want);
            let want_records: Vec<f64> = want
                .iter()
                .flat_map(|&id| [id as f64, -(id as f64)])
                .collect();
            assert_eq!(records, want_records);
        }
    }

    /// Entities `0..n` dealt to the ranks round-robin in blocks of 3 (so every window mixes
    /// ranks); rank 0 receives each window whole, in order, with the records every rank made,
    /// and never holds more than the window's limit of values.
    #[test]
    fn windows_arrive_in_serial_order_within_the_limit() {
        comm::launch::on_ranks(
            "windows::tests::windows_arrive_in_serial_order_within_the_limit",
            &[3],
            |comm| {
                let (rank, size) = (comm.rank(), comm.size());
                let n = 1000u64;
                let owned: Vec<(u64, usize)> = (0..n)
                    .filter(|id| (id / 3) as usize % size == rank)
                    .enumerate()
                    .map(|(local, id)| (id, local))
                    .collect();
                let ids: Vec<u64> = owned.iter().map(|o| o.0).collect();
                for (width, limit) in [(4, 50), (1, 7), (13, 14)] {
                    let plan = WindowPlan::new(&**comm, owned.clone(), n, width, limit).unwrap();
                    let mut next = 0u64;
                    let stats = plan
                        .gather(
                            &**comm,
                            |local, r| {
                                for (j, x) in r.iter_mut().enumerate() {
                                    *x = ids[local] as f64 + j as f64 / 16.0;
                                }
                            },
                            |window, records| {
                                for (i, &id) in window.iter().enumerate() {
                                    assert_eq!(id, next);
                                    next += 1;
                                    for j in 0..width {
                                        assert_eq!(
                                            records[i * width + j],
                                            id as f64 + j as f64 / 16.0
                                        );
                                    }
                                }
                            },
                        )
                        .unwrap();
                    if rank == 0 {
                        assert_eq!(next, n);
                        assert_eq!(stats.windows as u64, n.div_ceil(plan.ids_per_window()));
                        assert!(stats.windows > 5, "{stats:?}");
                        assert!(stats.max_window_values <= limit, "{stats:?} over {limit}");
                        assert!(stats.max_message_values > 0);
                    }
                }
            },
        );
    }
}
