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
    /// record)`, `width` values); rank 0's `sink(ids, records)` receives each window's entities
    /// in ascending serial id (`records`: `width` values per id), window after window, in
    /// ascending order. Returns what rank 0 held (zeros on the other ranks).
    pub fn gather(
        &self,
        comm: &dyn Comm,
        mut record: impl FnMut(usize, &mut [f64]),
        mut sink: impl FnMut(&[u64], &[f64]),
    ) -> Result<GatherStats> {
        let (w, size) = (self.width, comm.size());
        let mut stats = GatherStats::default();
        // one window's message: ids (as bits), then records
        let pack = |k: usize, record: &mut dyn FnMut(usize, &mut [f64])| {
            let mine = &self.owned[self.starts[k]..self.starts[k + 1]];
            let mut message = vec![0.0; mine.len() * (1 + w)];
            let (ids, records) = message.split_at_mut(mine.len());
            for (i, &(id, local)) in mine.iter().enumerate() {
                ids[i] = f64::from_bits(id);
                record(local, &mut records[i * w..(i + 1) * w]);
            }
            message
        };
        let Some(counts) = &self.counts else {
            for k in 0..self.n_windows {
                let message = pack(k, &mut record);
                stats.max_window_values = stats.max_window_values.max(message.len());
                if !message.is_empty() {
                    comm.exchange(&[(0, &message)], &mut [], &mut || ())?;
                }
            }
            return Ok(stats);
        };
        for k in 0..self.n_windows {
            let per_rank = &counts[k * size..(k + 1) * size];
            let mut messages: Vec<Vec<f64>> = per_rank
                .iter()
                .map(|&n| vec![0.0; n as usize * (1 + w)])
                .collect();
            messages[0] = pack(k, &mut record);
            if messages[0].len() != per_rank[0] as usize * (1 + w) {
                fail!("window {k}: rank 0's count changed since the plan");
            }
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
            comm.exchange(&[], &mut recvs, &mut || ())?;
            // merge: (id, rank, position) sorted by id
            let mut order: Vec<(u64, usize, usize)> = Vec::new();
            for (r, m) in messages.iter().enumerate() {
                let n = per_rank[r] as usize;
                order.extend((0..n).map(|i| (m[i].to_bits(), r, i)));
            }
            order.sort_unstable();
            let ids: Vec<u64> = order.iter().map(|o| o.0).collect();
            let mut records = vec![0.0; ids.len() * w];
            for (j, &(_, r, i)) in order.iter().enumerate() {
                let n = per_rank[r] as usize;
                records[j * w..(j + 1) * w]
                    .copy_from_slice(&messages[r][n + i * w..n + (i + 1) * w]);
            }
            stats.max_window_values = stats
                .max_window_values
                .max(messages.iter().map(Vec::len).sum());
            drop(messages);
            stats.windows += 1;
            sink(&ids, &records);
        }
        Ok(stats)
    }

    /// Serial ids per window.
    pub fn ids_per_window(&self) -> u64 {
        self.ids
    }
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
