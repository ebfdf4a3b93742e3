//! A rank's aggregate labels as a set ([`LabelSet`]): its distinct labels, each one's index
//! among them and its number of vertices. The distributed aggregation's small-aggregate check
//! reads the counts; the tentative prolongator's plan asks the directory for the labels and
//! finds each vertex's aggregate by its index.

use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::aggregation::UNAGGREGATED;

/// The distinct labels of a rank's vertices other than [`UNAGGREGATED`], ascending, with each
/// one's number of vertices and its index among them (a rank's labels are its roots' serial
/// ids, close together on the ranks of a partition): counted in an array over the labels' span
/// where it holds at most [`COUNTERS_PER_VERTEX`] counters a vertex, the labels then a bitmap
/// of the counted ones; a bitmap marked first and the vertices counted by their labels' indices
/// where the bitmap is at most a word a vertex; else a sort and binary searches. The same
/// lists and indices every way.
///
/// Invariants: `labels` ascend strictly; `counts[i]` vertices have `labels[i]`; with the
/// bitmap, bit `l - lo` is set exactly for the labels, and `before[w]` counts the labels in the
/// words before `w`.
#[derive(Debug)]
pub(crate) struct LabelSet {
    labels: Vec<u32>,
    counts: Vec<u32>,
    bits: Option<Bitmap>,
}

/// The bitmap of a [`LabelSet`] over the labels from `lo`.
#[derive(Debug)]
struct Bitmap {
    lo: u32,
    words: Vec<u64>,
    before: Vec<usize>,
}

impl LabelSet {
    /// The set of `labels` (one a vertex; [`UNAGGREGATED`] left out).
    pub(crate) fn new(labels: &[u32]) -> Self {
        let aggregated = || labels.par_iter().copied().filter(|&l| l != UNAGGREGATED);
        let span = aggregated()
            .map(|l| (l, l))
            .reduce_with(|a, b| (a.0.min(b.0), a.1.max(b.1)));
        let Some((lo, hi)) = span else {
            return Self {
                labels: Vec::new(),
                counts: Vec::new(),
                bits: None,
            };
        };
        let n_words = ((hi - lo) / 64) as usize + 1;
        let span = (hi - lo) as usize + 1;
        if span <= COUNTERS_PER_VERTEX.saturating_mul(labels.len()) {
            return Self::counted(&label_counts_over_span(aggregated, lo, span), lo);
        }
        if n_words > labels.len() {
            return Self::sorted(labels);
        }
        Self::marked(labels, lo, n_words)
    }

    /// [`Self::new`] through a bitmap of `n_words` words over the labels from `lo` (every
    /// label in it), then each vertex counted at its label's index.
    fn marked(labels: &[u32], lo: u32, n_words: usize) -> Self {
        let aggregated = || labels.par_iter().copied().filter(|&l| l != UNAGGREGATED);
        let marked: Vec<AtomicU64> = (0..n_words)
            .into_par_iter()
            .map(|_| AtomicU64::new(0))
            .collect();
        aggregated().for_each(|l| {
            let at = l - lo;
            marked[at as usize / 64].fetch_or(1 << (at % 64), Ordering::Relaxed);
        });
        let words: Vec<u64> = marked.into_par_iter().map(AtomicU64::into_inner).collect();
        let before = linalg::row_offsets(n_words, |w| words[w].count_ones() as usize);
        let set_labels: Vec<u32> = (0..n_words)
            .into_par_iter()
            .flat_map_iter(|w| {
                let word = words[w];
                (0..64u32)
                    .filter(move |b| word >> b & 1 == 1)
                    .map(move |b| lo + w as u32 * 64 + b)
            })
            .collect();
        let mut set = Self {
            labels: set_labels,
            counts: Vec::new(),
            bits: Some(Bitmap { lo, words, before }),
        };
        let counts: Vec<AtomicU32> = (0..set.labels.len())
            .into_par_iter()
            .map(|_| AtomicU32::new(0))
            .collect();
        aggregated().for_each(|l| {
            if let Some(i) = set.index_of(l) {
                counts[i].fetch_add(1, Ordering::Relaxed);
            }
        });
        set.counts = counts.into_par_iter().map(AtomicU32::into_inner).collect();
        set
    }

    /// [`Self::new`] from the count of each label `lo + i` in `counts[i]`.
    fn counted(counts: &[u32], lo: u32) -> Self {
        let n_words = counts.len().div_ceil(64);
        let words: Vec<u64> = counts
            .par_chunks(64)
            .map(|c| {
                c.iter()
                    .enumerate()
                    .fold(0u64, |w, (b, &n)| w | u64::from(n > 0) << b)
            })
            .collect();
        let before = linalg::row_offsets(n_words, |w| words[w].count_ones() as usize);
        // the counted labels word by word (few next to the span)
        let counted: Vec<(u32, u32)> = (0..n_words)
            .into_par_iter()
            .flat_map_iter(|w| {
                let word = words[w];
                (0..64usize)
                    .filter(move |b| word >> b & 1 == 1)
                    .map(move |b| (lo + (w * 64 + b) as u32, counts[w * 64 + b]))
            })
            .collect();
        let (labels, counts) = counted.into_iter().unzip();
        Self {
            labels,
            counts,
            bits: Some(Bitmap { lo, words, before }),
        }
    }

    /// [`Self::new`] through a sort of the labels and a count of their runs.
    fn sorted(labels: &[u32]) -> Self {
        let mut sorted: Vec<u32> = labels
            .par_iter()
            .copied()
            .filter(|&l| l != UNAGGREGATED)
            .collect();
        sorted.par_sort_unstable();
        let (labels, counts) = sorted
            .chunk_by(|a, b| a == b)
            .map(|run| (run[0], run.len() as u32))
            .unzip();
        Self {
            labels,
            counts,
            bits: None,
        }
    }

    /// The distinct labels, ascending.
    pub(crate) fn labels(&self) -> &[u32] {
        &self.labels
    }

    /// Each label's number of vertices (in the order of [`Self::labels`]).
    pub(crate) fn counts(&self) -> &[u32] {
        &self.counts
    }

    /// The index of `label` among the labels, if it is one.
    pub(crate) fn index_of(&self, label: u32) -> Option<usize> {
        match &self.bits {
            None => self.labels.binary_search(&label).ok(),
            Some(Bitmap { lo, words, before }) => {
                let at = label.checked_sub(*lo)?;
                let (w, b) = (at as usize / 64, at % 64);
                let word = *words.get(w)?;
                let below = word & ((1u64 << b) - 1);
                (word >> b & 1 == 1).then(|| before[w] + below.count_ones() as usize)
            }
        }
    }

    /// The number of vertices of `label` (0 where it is none of the labels).
    pub(crate) fn count_of(&self, label: u32) -> u32 {
        self.index_of(label).map_or(0, |i| self.counts[i])
    }
}

/// Counters a vertex at most for which [`LabelSet::new`] counts the labels in an array over
/// their span.
const COUNTERS_PER_VERTEX: usize = 4;

/// The number of labels `lo + i` among `aggregated` (every one in `lo..lo + span`), in
/// parallel.
fn label_counts_over_span<I: ParallelIterator<Item = u32>>(
    aggregated: impl Fn() -> I,
    lo: u32,
    span: usize,
) -> Vec<u32> {
    let counts: Vec<AtomicU32> = (0..span)
        .into_par_iter()
        .map(|_| AtomicU32::new(0))
        .collect();
    aggregated().for_each(|l| {
        counts[(l - lo) as usize].fetch_add(1, Ordering::Relaxed);
    });
    counts.into_par_iter().map(AtomicU32::into_inner).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use linalg::hash::splitmix64;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a pool")
    }

    #[test]
    fn a_label_set_counted_marked_and_sorted_has_the_same_labels_counts_and_indices() {
        // (vertices, span of the labels, tenths unaggregated): one label, dense spans with
        // repeats, empty and full words, a span for the bitmap but not the counters, a span too
        // wide for the bitmap
        for (n, span, unaggregated) in [
            (0usize, 1u32, 0u64),
            (5, 1, 5),
            (1000, 300, 7),
            (5000, 64 * 40, 1),
            (50_000, 20_000, 3),
            (1000, 30_000, 0),
            (2000, 1 << 30, 2),
        ] {
            let labels: Vec<u32> = (0..n as u64)
                .map(|i| {
                    let h = splitmix64(i ^ 0x1abe1);
                    match h % 10 < unaggregated {
                        true => UNAGGREGATED,
                        false => 1000 + (h >> 8) as u32 % span,
                    }
                })
                .collect();
            let mut want: Vec<u32> = labels
                .iter()
                .copied()
                .filter(|&l| l != UNAGGREGATED)
                .collect();
            want.sort_unstable();
            let want_counts: Vec<u32> = want
                .chunk_by(|a, b| a == b)
                .map(|r| r.len() as u32)
                .collect();
            want.dedup();
            for threads in [1, 3] {
                let set = pool(threads).install(|| LabelSet::new(&labels));
                assert_eq!(set.bits.is_some(), !want.is_empty() && span < 1 << 20);
                let by_sort = pool(threads).install(|| LabelSet::sorted(&labels));
                assert!(by_sort.bits.is_none());
                let mut sets = vec![set, by_sort];
                if let (Some(&lo), Some(&hi)) = (want.first(), want.last()) {
                    let (span, n_words) = ((hi - lo) as usize + 1, ((hi - lo) / 64) as usize + 1);
                    if span < 1 << 24 {
                        let aggregated =
                            || labels.par_iter().copied().filter(|&l| l != UNAGGREGATED);
                        let counts = label_counts_over_span(aggregated, lo, span);
                        sets.push(pool(threads).install(|| LabelSet::counted(&counts, lo)));
                        sets.push(pool(threads).install(|| LabelSet::marked(&labels, lo, n_words)));
                    }
                }
                for set in &sets {
                    assert_eq!(set.labels(), &want[..], "n {n} span {span}");
                    assert_eq!(set.counts(), &want_counts[..], "n {n} span {span}");
                    let probes = want.iter().flat_map(|&l| [l.saturating_sub(1), l, l + 1]);
                    for l in probes.chain([0, 999, UNAGGREGATED]) {
                        let i = want.binary_search(&l).ok();
                        assert_eq!(set.index_of(l), i, "label {l}");
                        assert_eq!(set.count_of(l), i.map_or(0, |i| want_counts[i]));
                    }
                }
            }
        }
    }
}
