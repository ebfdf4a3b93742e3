//! [`CooPlan`]: the symbolic step of blocked COO assembly, and its numeric steps.
//!
//! Contributions are numbered `0..n`; contribution `c` is one block that lands on the slot of its
//! block coordinates. A plan may cut the contributions into *segments* of `segment_len` consecutive
//! ones (`[s * len, (s + 1) * len)`), so that a producer (an element loop) can fill and sum one
//! segment at a time in a small buffer instead of holding every value at once.
//!
//! Calling order: build the plan once ([`CooPlan::new`]: one segment; [`CooPlan::with_segments`],
//! [`CooPlan::from_fn`]; an element loop's blocks: [`CooPlan::of_cell_blocks`]), make a matrix
//! on its pattern (`Bsr::zeros(plan.pattern().clone(), br, bc)`), then, as often as needed, either
//! [`CooPlan::assemble`] all values at once, or [`CooPlan::begin`] a [`CooSum`],
//! [`CooSum::add_segment`] the values of segments `0, 1, 2, ...` in this order and
//! [`CooSum::finish`]. Both paths compute every block as `0.0 + c1 + c2 + ...` over its
//! contributions in ascending order: results are bit-identical whatever the segmentation and the
//! thread count.
//!
//! The contribution values are host slices (the element loop's batch buffer): COO sums are the
//! host-side entry of assembly, and the matrix they fill must hold its values on the host.

use std::num::NonZeroUsize;
use std::ops::Range;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rayon::prelude::*;

use crate::backend::host::sum::{add_runs_any, RunList};
use crate::rows::split_rows;
use crate::{BlockPattern, Bsr, LinalgError};

mod cells;

pub(crate) use cells::check_cell_blocks;

/// Contributions per task when validating and counting in the row sort.
const SORT_CHUNK: usize = 1 << 16;
/// Rows a task of [`sort_by_row`]'s offsets holds.
const OFFSET_ROWS: usize = 1 << 14;
/// Block rows per task when grouping a row's contributions by column.
const ROWS_PER_TASK: usize = 512;
/// Slots per task when cutting the slot lists into segments.
const SLOT_CHUNK: usize = 1 << 15;
/// Runs per task of the numeric sums (fixed: the split never depends on the thread count).
const RUNS_PER_TASK: usize = 2048;

/// Assembly plan: the pattern of the summed matrix and, for each segment, its *runs*: a run is the
/// contributions of one segment to one slot, in ascending order.
///
/// Layout: runs are stored segment after segment, slots ascending within a segment. A run *opens*
/// its slot if it holds the slot's first contribution (the sum starts from zero), else it
/// *continues* it (the sum starts from the value earlier segments left).
///
/// The construction leaves the contributions grouped by slot ([`SlotOrder`], what a device sum
/// reads); the runs are cut from them at the first host sum (or [`CooPlan::runs`]), which then
/// drops the grouping: a plan summed on the host holds its runs only, one summed on a device
/// never makes them. Either determines the other, so plans compare by their grouping.
#[derive(Debug)]
pub struct CooPlan {
    pattern: Arc<BlockPattern>,
    n_contributions: usize,
    segment_len: usize,
    /// The contributions grouped by slot until the runs are made from them (then `None`: the
    /// runs are set before the grouping is dropped).
    grouped: Mutex<Option<SlotOrder>>,
    runs: OnceLock<Runs>,
}

impl Clone for CooPlan {
    fn clone(&self) -> Self {
        Self {
            pattern: Arc::clone(&self.pattern),
            n_contributions: self.n_contributions,
            segment_len: self.segment_len,
            grouped: Mutex::new(self.lock_grouped().clone()),
            runs: self.runs.clone(),
        }
    }
}

impl PartialEq for CooPlan {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
            || (*self.pattern == *other.pattern
                && self.n_contributions == other.n_contributions
                && self.segment_len == other.segment_len
                && {
                    // one lock at a time: two plans compared in opposite orders cannot deadlock
                    let theirs = other.slot_order();
                    self.with_slot_order(|ours| *ours == theirs)
                })
    }
}

/// A [`CooPlan`]'s contributions grouped by slot ([`CooPlan::slot_order`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotOrder {
    /// `nnz + 1` offsets into `contributions`: slot `s` owns `slot_ptr[s]..slot_ptr[s + 1]`.
    pub slot_ptr: Vec<u32>,
    /// Each slot's contribution indices (absolute, not per segment), ascending.
    pub contributions: Vec<u32>,
}

/// The contributions one segment adds to one slot ([`CooPlan::runs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotRun<'a> {
    /// The segment the contributions belong to.
    pub segment: usize,
    /// The slot: position of the block in the pattern's `col_idx`.
    pub slot: usize,
    /// Whether the run holds the slot's first contribution (its sum starts from zero).
    pub opens: bool,
    /// Contribution indices relative to the segment's first contribution, ascending.
    pub contributions: &'a [u32],
}

impl CooPlan {
    /// Builds a one-segment plan for contributions `c` at blocks `(rows[c], cols[c])`; duplicates
    /// and any order are allowed.
    pub fn new(
        n_block_rows: usize,
        n_block_cols: usize,
        rows: &[u32],
        cols: &[u32],
    ) -> Result<Self, LinalgError> {
        let one_segment = NonZeroUsize::new(rows.len()).unwrap_or(NonZeroUsize::MIN);
        Self::with_segments(n_block_rows, n_block_cols, rows, cols, one_segment)
    }

    /// Like [`Self::new`], with the contributions cut into segments of `segment_len` (the last
    /// may be shorter) for [`CooSum::add_segment`].
    pub fn with_segments(
        n_block_rows: usize,
        n_block_cols: usize,
        rows: &[u32],
        cols: &[u32],
        segment_len: NonZeroUsize,
    ) -> Result<Self, LinalgError> {
        if rows.len() != cols.len() {
            return Err(LinalgError::LengthMismatch {
                what: "CooPlan cols",
                expected: rows.len(),
                found: cols.len(),
            });
        }
        Self::from_fn(n_block_rows, n_block_cols, rows.len(), segment_len, |c| {
            (rows[c] as usize, cols[c] as usize)
        })
    }

    /// Builds the plan for `n_contributions` contributions, contribution `c` at block
    /// `block_of(c) = (row, col)`, cut into segments of `segment_len`. `block_of` is called a few
    /// times per contribution, in parallel: the caller need not materialise coordinate arrays.
    ///
    /// A parallel stable counting sort by row, a small sort within each row (which yields the
    /// pattern and every slot's contributions in ascending order), then a stable distribution of
    /// each slot's contributions over the segments. Besides the plan, the construction holds one
    /// `u32` per contribution and a few per slot.
    pub fn from_fn<F>(
        n_block_rows: usize,
        n_block_cols: usize,
        n_contributions: usize,
        segment_len: NonZeroUsize,
        block_of: F,
    ) -> Result<Self, LinalgError>
    where
        F: Fn(usize) -> (usize, usize) + Sync,
    {
        let n = n_contributions;
        if n > u32::MAX as usize {
            return Err(LinalgError::TooManyContributions { found: n });
        }
        for (what, value) in [
            ("n_block_rows", n_block_rows),
            ("n_block_cols", n_block_cols),
        ] {
            if value > u32::MAX as usize {
                return Err(LinalgError::DimensionTooLarge { what, value });
            }
        }
        let bad = chunk_ranges(n, SORT_CHUNK)
            .into_par_iter()
            .find_map_first(|mut chunk| {
                chunk.find(|&c| {
                    let (i, j) = block_of(c);
                    i >= n_block_rows || j >= n_block_cols
                })
            });
        if let Some(index) = bad {
            let (row, col) = block_of(index);
            return Err(LinalgError::ContributionOutOfRange {
                index,
                row,
                col,
                n_block_rows,
                n_block_cols,
            });
        }
        // At most one segment per contribution (and one for none): offsets then fit in u32.
        let segment_len = segment_len.get().min(n.max(1));

        let (row_start, mut by_slot) = sort_by_row(n_block_rows, n, &block_of);
        let (pattern, slot_ptr) = match n_block_cols {
            // a vector's plan: a row's contributions are its one slot's, ascending already
            1 => one_slot_a_row(n_block_rows, &row_start),
            _ => group_by_slot(
                n_block_rows,
                n_block_cols,
                &row_start,
                &mut by_slot,
                &block_of,
            ),
        };
        drop(row_start);
        Ok(Self {
            pattern: Arc::new(pattern),
            n_contributions: n,
            segment_len,
            grouped: Mutex::new(Some(SlotOrder {
                slot_ptr,
                contributions: by_slot,
            })),
            runs: OnceLock::new(),
        })
    }

    fn lock_grouped(&self) -> std::sync::MutexGuard<'_, Option<SlotOrder>> {
        self.grouped.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The runs, cut from the grouping at the first call (which then drops the grouping).
    fn segment_runs(&self) -> &Runs {
        self.runs.get_or_init(|| {
            let mut grouped = self.lock_grouped();
            // the grouping is dropped only here, once the runs are made from it: it is present
            let runs = grouped
                .as_ref()
                .map(|g| split_into_runs(&g.slot_ptr, &g.contributions, self.segment_len))
                .unwrap_or_default();
            *grouped = None;
            runs
        })
    }

    /// The pattern of the assembled matrix (sorted unique blocks of each row).
    pub fn pattern(&self) -> &Arc<BlockPattern> {
        &self.pattern
    }

    /// Number of contributions the plan was built for.
    pub fn n_contributions(&self) -> usize {
        self.n_contributions
    }

    /// Contributions per segment (the last segment may hold fewer).
    pub fn segment_len(&self) -> usize {
        self.segment_len
    }

    /// Number of segments (zero without contributions).
    pub fn n_segments(&self) -> usize {
        self.n_contributions.div_ceil(self.segment_len)
    }

    /// The contributions of segment `s` (empty past the last segment).
    pub fn segment_range(&self, s: usize) -> Range<usize> {
        let (n, len) = (self.n_contributions, self.segment_len);
        s.saturating_mul(len).min(n)..s.saturating_add(1).saturating_mul(len).min(n)
    }

    /// Every run in plan order: segment after segment, slots ascending within a segment.
    pub fn runs(&self) -> impl Iterator<Item = SlotRun<'_>> + '_ {
        let r = self.segment_runs();
        r.segment_ptr
            .windows(2)
            .enumerate()
            .flat_map(move |(segment, w)| {
                (w[0]..w[1]).map(move |k| SlotRun {
                    segment,
                    slot: r.run_slot[k] as usize,
                    opens: r.run_opens[k / 64] >> (k % 64) & 1 == 1,
                    contributions: &r.contributions
                        [r.run_ptr[k] as usize..r.run_ptr[k + 1] as usize],
                })
            })
    }

    /// `f` of the contributions grouped by slot ([`Self::slot_order`]) without a copy where
    /// the plan still holds them (no host sum has run).
    pub fn with_slot_order<R>(&self, f: impl FnOnce(&SlotOrder) -> R) -> R {
        let grouped = self.lock_grouped();
        match grouped.as_ref() {
            Some(order) => f(order),
            None => {
                drop(grouped);
                f(&self.slot_order_of_runs())
            }
        }
    }

    /// The contributions grouped by slot, each slot's ascending: the order in which the sums
    /// add them whatever the segmentation (what an owner-computes device sum reads). In
    /// parallel: the runs are counted and placed through per-slot cursors in any order, then
    /// each slot's few entries are sorted; the indices are distinct, so the result does not
    /// depend on the threads.
    pub fn slot_order(&self) -> SlotOrder {
        self.with_slot_order(SlotOrder::clone)
    }

    /// [`Self::slot_order`] regrouped from the runs.
    fn slot_order_of_runs(&self) -> SlotOrder {
        let r = self.segment_runs();
        let nnz = self.pattern.nnz();
        let n_segments = r.segment_ptr.len() - 1;
        let runs_of = |g: usize| r.segment_ptr[g]..r.segment_ptr[g + 1];
        let run = |k: usize| &r.contributions[r.run_ptr[k] as usize..r.run_ptr[k + 1] as usize];
        // per slot: its number of contributions, then the cursor where its next run goes
        let cursor = atomic_zeros(nnz);
        (0..n_segments).into_par_iter().for_each(|g| {
            for k in runs_of(g) {
                cursor[r.run_slot[k] as usize].fetch_add(run(k).len() as u32, Ordering::Relaxed);
            }
        });
        let mut slot_ptr = Vec::with_capacity(nnz + 1);
        let mut running = 0u32;
        slot_ptr.push(running);
        for c in &cursor {
            // at most `n_contributions` < 2^32 in all (checked at construction)
            running += c.load(Ordering::Relaxed);
            slot_ptr.push(running);
        }
        cursor
            .par_iter()
            .zip(slot_ptr.par_iter())
            .for_each(|(c, &start)| c.store(start, Ordering::Relaxed));
        let placed = atomic_zeros(self.n_contributions);
        (0..n_segments).into_par_iter().for_each(|g| {
            let segment_start = (g * self.segment_len) as u32;
            for k in runs_of(g) {
                let run = run(k);
                let slot = r.run_slot[k] as usize;
                let first = cursor[slot].fetch_add(run.len() as u32, Ordering::Relaxed) as usize;
                // disjoint positions (each run takes its own range of its slot's)
                for (dst, &c) in placed[first..].iter().zip(run) {
                    dst.store(segment_start + c, Ordering::Relaxed);
                }
            }
        });
        drop(cursor);
        let mut contributions = into_plain(placed);
        let mut tasks = Vec::with_capacity(nnz.div_ceil(SLOT_CHUNK));
        let mut rest = contributions.as_mut_slice();
        for first in (0..nnz).step_by(SLOT_CHUNK) {
            let last = (first + SLOT_CHUNK).min(nnz);
            let (head, tail) = rest.split_at_mut((slot_ptr[last] - slot_ptr[first]) as usize);
            tasks.push((first..last, head));
            rest = tail;
        }
        tasks.into_par_iter().for_each(|(slots, chunk)| {
            let offset = slot_ptr[slots.start];
            for s in slots {
                chunk[(slot_ptr[s] - offset) as usize..(slot_ptr[s + 1] - offset) as usize]
                    .sort_unstable();
            }
        });
        SlotOrder {
            slot_ptr,
            contributions,
        }
    }

    /// Bytes held by the plan's own arrays; the pattern, which assembled matrices share, is not
    /// counted.
    pub fn heap_bytes(&self) -> usize {
        let grouped = self.lock_grouped().as_ref().map_or(0, |g| {
            std::mem::size_of_val(g.slot_ptr.as_slice())
                + std::mem::size_of_val(g.contributions.as_slice())
        });
        let runs = self.runs.get().map_or(0, |r| {
            std::mem::size_of_val(r.segment_ptr.as_slice())
                + std::mem::size_of_val(r.run_slot.as_slice())
                + std::mem::size_of_val(r.run_opens.as_slice())
                + std::mem::size_of_val(r.run_ptr.as_slice())
                + std::mem::size_of_val(r.contributions.as_slice())
        });
        grouped + runs
    }

    /// Overwrites `matrix`'s values with the sums of `values` (contribution-major, `block_len` values
    /// per contribution, blocks row-major). `matrix` must carry the plan's pattern.
    pub fn assemble(&self, values: &[f64], matrix: &mut Bsr) -> Result<(), LinalgError> {
        self.check_pattern(matrix, "CooPlan::assemble")?;
        let block_len = matrix.block_len();
        self.assemble_host(values, block_len, matrix.host_mut()?)
    }

    /// Like [`Self::assemble`] into a plain host slice of `nnz * block_len` values (e.g. vector
    /// assembly with a pattern of one block column). Runs the segments in order, each parallel
    /// over fixed tasks of runs.
    pub fn assemble_host(
        &self,
        values: &[f64],
        block_len: usize,
        out: &mut [f64],
    ) -> Result<(), LinalgError> {
        let expected = self.n_contributions * block_len;
        if values.len() != expected {
            return Err(LinalgError::LengthMismatch {
                what: "CooPlan values",
                expected,
                found: values.len(),
            });
        }
        let mut sum = self.begin_host(block_len, out)?;
        for segment in values.chunks(self.segment_len * block_len) {
            sum.add_segment(segment)?;
        }
        sum.finish()
    }

    /// Starts a segment-by-segment sum into `matrix`, which must carry the plan's pattern. Its
    /// values are overwritten once every segment has been added.
    pub fn begin<'a>(&'a self, matrix: &'a mut Bsr) -> Result<CooSum<'a>, LinalgError> {
        self.check_pattern(matrix, "CooPlan::begin")?;
        let block_len = matrix.block_len();
        self.begin_host(block_len, matrix.host_mut()?)
    }

    /// Like [`Self::begin`] into a plain host slice of `nnz * block_len` values.
    pub fn begin_host<'a>(
        &'a self,
        block_len: usize,
        out: &'a mut [f64],
    ) -> Result<CooSum<'a>, LinalgError> {
        if block_len == 0 {
            return Err(LinalgError::InvalidBlockSize {
                block_rows: 0,
                block_cols: 0,
            });
        }
        let expected = self.pattern.nnz() * block_len;
        if out.len() != expected {
            return Err(LinalgError::LengthMismatch {
                what: "CooPlan output",
                expected,
                found: out.len(),
            });
        }
        Ok(CooSum {
            plan: self,
            block_len,
            out,
            next: 0,
        })
    }

    fn check_pattern(&self, matrix: &Bsr, what: &'static str) -> Result<(), LinalgError> {
        if !BlockPattern::same(matrix.pattern(), &self.pattern) {
            return Err(LinalgError::PatternMismatch { what });
        }
        Ok(())
    }

    /// Adds the runs of segment `s` onto `out`, in parallel over fixed tasks of runs. A segment's
    /// slots ascend, so each task owns the output blocks from its first slot up to the next task's.
    fn add_segment_runs(&self, s: usize, block_len: usize, values: &[f64], out: &mut [f64]) {
        let r = self.segment_runs();
        let runs = r.segment_ptr[s]..r.segment_ptr[s + 1];
        if runs.is_empty() {
            return;
        }
        let slots = &r.run_slot;
        let mut tasks = Vec::with_capacity(runs.len().div_ceil(RUNS_PER_TASK));
        let mut first_slot = slots[runs.start] as usize;
        let mut rest = &mut out[first_slot * block_len..];
        for first in runs.clone().step_by(RUNS_PER_TASK) {
            let last = (first + RUNS_PER_TASK).min(runs.end);
            let end_slot = if last < runs.end {
                slots[last] as usize
            } else {
                slots[last - 1] as usize + 1
            };
            let (head, tail) = rest.split_at_mut((end_slot - first_slot) * block_len);
            tasks.push((first..last, first_slot, head));
            rest = tail;
            first_slot = end_slot;
        }
        tasks.into_par_iter().for_each(|(runs, first_slot, out)| {
            let runs = RunList {
                first_run: runs.start,
                slots: &slots[runs.clone()],
                opens: &r.run_opens,
                run_ptr: &r.run_ptr[runs.start..=runs.end],
                contributions: &r.contributions,
            };
            add_runs_any(block_len, runs, values, first_slot, out)
        });
    }
}

/// A segment-by-segment sum in progress ([`CooPlan::begin`]): add the values of segments
/// `0, 1, 2, ...` in this order, then [`Self::finish`]. Each call is parallel over the segment's
/// runs; a slot's first run overwrites it, later runs add onto it, so the output holds the sums
/// only once every segment is added.
#[must_use = "the output holds the sums only once every segment is added and `finish` returns Ok"]
#[derive(Debug)]
pub struct CooSum<'a> {
    plan: &'a CooPlan,
    block_len: usize,
    out: &'a mut [f64],
    /// The segment [`Self::add_segment`] adds next.
    next: usize,
}

impl CooSum<'_> {
    /// The contributions of the segment [`Self::add_segment`] expects next; `None` once every
    /// segment is added.
    pub fn next_segment(&self) -> Option<Range<usize>> {
        (self.next < self.plan.n_segments()).then(|| self.plan.segment_range(self.next))
    }

    /// Adds the values of the next segment (contribution-major, `block_len` values per
    /// contribution, in contribution order).
    pub fn add_segment(&mut self, values: &[f64]) -> Result<(), LinalgError> {
        let n_segments = self.plan.n_segments();
        let Some(range) = self.next_segment() else {
            return Err(LinalgError::DimensionMismatch {
                what: "CooSum segments added",
                expected: n_segments,
                found: n_segments + 1,
            });
        };
        let expected = range.len() * self.block_len;
        if values.len() != expected {
            return Err(LinalgError::LengthMismatch {
                what: "CooSum segment values",
                expected,
                found: values.len(),
            });
        }
        self.plan
            .add_segment_runs(self.next, self.block_len, values, self.out);
        self.next += 1;
        Ok(())
    }

    /// Checks that every segment was added: only then does the output hold the sums.
    pub fn finish(self) -> Result<(), LinalgError> {
        let n_segments = self.plan.n_segments();
        if self.next != n_segments {
            return Err(LinalgError::DimensionMismatch {
                what: "CooSum segments added",
                expected: n_segments,
                found: self.next,
            });
        }
        Ok(())
    }
}

/// Unwraps atomics used for disjoint parallel writes (in place: same layout).
fn into_plain(v: Vec<AtomicU32>) -> Vec<u32> {
    v.into_iter().map(AtomicU32::into_inner).collect()
}

/// `n` zeroed atomics, allocated in parallel.
fn atomic_zeros(n: usize) -> Vec<AtomicU32> {
    (0..n).into_par_iter().map(|_| AtomicU32::new(0)).collect()
}

/// Consecutive ranges of `len` (the last shorter) covering `0..n`.
fn chunk_ranges(n: usize, len: usize) -> Vec<Range<usize>> {
    (0..n).step_by(len).map(|s| s..(s + len).min(n)).collect()
}

/// Stable parallel counting sort of the contributions by row. Returns `row_start`
/// (`n_block_rows + 1` offsets) and the contribution indices ordered by row, ascending within a row.
/// Every chunk of contributions counts its rows, offsets are laid out chunk after chunk within each
/// row, and every chunk scatters its indices: the output does not depend on the number of chunks.
/// The chunks are at most one a thread and at most as many as the contributions a row, so their
/// counts (a `u32` a row and chunk) hold at most a `u32` a contribution; the offsets are laid out
/// by blocks of rows in parallel (no pass over every row and chunk on one thread: with 32
/// threads and 8 contributions a row that pass was most of the sort).
fn sort_by_row<F>(n_block_rows: usize, n: usize, block_of: &F) -> (Vec<usize>, Vec<u32>)
where
    F: Fn(usize) -> (usize, usize) + Sync,
{
    let n_chunks = n
        .div_ceil(SORT_CHUNK)
        .min(rayon::current_num_threads())
        .min(n.div_ceil(n_block_rows.max(1)))
        .max(1);
    let chunks = chunk_ranges(n, n.div_ceil(n_chunks).max(1));
    let mut next: Vec<Vec<u32>> = chunks
        .par_iter()
        .map(|chunk| {
            let mut count = vec![0u32; n_block_rows];
            chunk.clone().for_each(|c| count[block_of(c).0] += 1);
            count
        })
        .collect();
    // the rows' totals (blocks of rows in parallel), their exclusive scan
    let mut row_start = vec![0usize; n_block_rows + 1];
    row_start[..n_block_rows]
        .par_chunks_mut(OFFSET_ROWS)
        .enumerate()
        .for_each(|(b, totals)| {
            let rows = b * OFFSET_ROWS..b * OFFSET_ROWS + totals.len();
            for count in &next {
                for (t, &k) in totals.iter_mut().zip(&count[rows.clone()]) {
                    *t += k as usize;
                }
            }
        });
    let mut running = 0usize;
    for start in row_start.iter_mut() {
        let k = *start;
        *start = running;
        running += k;
    }
    // next[t][r] becomes the first output position of chunk t's contributions in row r: per
    // block of rows, the chunks' pieces of it in chunk order
    let mut blocks: Vec<Vec<&mut [u32]>> = (0..n_block_rows.div_ceil(OFFSET_ROWS))
        .map(|_| Vec::with_capacity(next.len()))
        .collect();
    for count in next.iter_mut() {
        for (block, piece) in blocks.iter_mut().zip(count.chunks_mut(OFFSET_ROWS)) {
            block.push(piece);
        }
    }
    blocks
        .into_par_iter()
        .zip(row_start[..n_block_rows].par_chunks(OFFSET_ROWS))
        .for_each(|(pieces, starts)| {
            let mut at = starts.to_vec();
            for piece in pieces {
                for (c, a) in piece.iter_mut().zip(at.iter_mut()) {
                    let k = *c as usize;
                    // at most `n` <= u32::MAX (checked by the callers)
                    *c = *a as u32;
                    *a += k;
                }
            }
        });
    let sorted = atomic_zeros(n);
    chunks
        .par_iter()
        .zip(next.par_iter_mut())
        .for_each(|(chunk, next)| {
            for c in chunk.clone() {
                let pos = &mut next[block_of(c).0];
                // Positions are disjoint across chunks by construction; relaxed stores suffice
                // because rayon's join synchronises before anyone reads.
                sorted[*pos as usize].store(c as u32, Ordering::Relaxed);
                *pos += 1;
            }
        });
    (row_start, into_plain(sorted))
}

/// Per block row: sorts the row's contributions by `(col, index)`, which groups them by column (the
/// pattern row is the distinct columns) in ascending order within a column, and writes them back in
/// place. Returns the pattern and `slot_ptr` (`nnz + 1` offsets into `by_row`, now slot-major).
fn group_by_slot<F>(
    n_block_rows: usize,
    n_block_cols: usize,
    row_start: &[usize],
    by_row: &mut [u32],
    block_of: &F,
) -> (BlockPattern, Vec<u32>)
where
    F: Fn(usize) -> (usize, usize) + Sync,
{
    let n = by_row.len();
    let tasks = split_rows(row_start, 1, ROWS_PER_TASK, by_row);
    struct Group {
        row_nnz: Vec<usize>,
        col_idx: Vec<u32>,
        slot_ptr: Vec<u32>,
    }
    let groups: Vec<Group> = tasks
        .into_par_iter()
        .map(|(range, entries)| {
            let mut g = Group {
                row_nnz: Vec::with_capacity(range.len()),
                col_idx: Vec::new(),
                slot_ptr: Vec::new(),
            };
            let mut keys = Vec::new();
            let base = row_start[range.start];
            for r in range {
                let row = &mut entries[row_start[r] - base..row_start[r + 1] - base];
                keys.clear();
                keys.extend(
                    row.iter()
                        .map(|&c| (block_of(c as usize).1 as u64) << 32 | c as u64),
                );
                keys.sort_unstable();
                let nnz_before = g.col_idx.len();
                for (pos, (entry, &key)) in (row_start[r]..).zip(row.iter_mut().zip(&keys)) {
                    let col = (key >> 32) as u32;
                    if g.col_idx.len() == nnz_before || g.col_idx[g.col_idx.len() - 1] != col {
                        g.col_idx.push(col);
                        g.slot_ptr.push(pos as u32);
                    }
                    *entry = key as u32;
                }
                g.row_nnz.push(g.col_idx.len() - nnz_before);
            }
            g
        })
        .collect();
    let nnz: usize = groups.iter().map(|g| g.col_idx.len()).sum();
    let mut row_ptr = Vec::with_capacity(n_block_rows + 1);
    let mut col_idx = Vec::with_capacity(nnz);
    let mut slot_ptr = Vec::with_capacity(nnz + 1);
    row_ptr.push(0);
    for g in groups {
        for k in g.row_nnz {
            row_ptr.push(row_ptr[row_ptr.len() - 1] + k);
        }
        col_idx.extend_from_slice(&g.col_idx);
        slot_ptr.extend_from_slice(&g.slot_ptr);
    }
    slot_ptr.push(n as u32);
    let pattern = BlockPattern::new_trusted(n_block_rows, n_block_cols, row_ptr, col_idx);
    (pattern, slot_ptr)
}

/// [`group_by_slot`] where every contribution is in block column 0: a non-empty row is one
/// slot, whose contributions (sorted by row, stably) are already the row's, ascending.
fn one_slot_a_row(n_block_rows: usize, row_start: &[usize]) -> (BlockPattern, Vec<u32>) {
    let filled = |i: usize| row_start[i + 1] > row_start[i];
    let mut row_ptr = Vec::with_capacity(n_block_rows + 1);
    row_ptr.push(0);
    for i in 0..n_block_rows {
        row_ptr.push(row_ptr[i] + usize::from(filled(i)));
    }
    let nnz = row_ptr[n_block_rows];
    // at most `n` <= u32::MAX contributions (checked by the callers)
    let mut slot_ptr: Vec<u32> = (0..n_block_rows)
        .into_par_iter()
        .filter(|&i| filled(i))
        .map(|i| row_start[i] as u32)
        .collect();
    slot_ptr.push(row_start[n_block_rows] as u32);
    let pattern = BlockPattern::new_trusted(n_block_rows, 1, row_ptr, vec![0; nnz]);
    (pattern, slot_ptr)
}

/// The run arrays of a [`CooPlan`].
///
/// Invariants: `segment_ptr.len() == n_segments + 1`; `run_ptr.len() == n_runs + 1` and
/// `run_ptr[n_runs] == n_contributions`; every slot has exactly one opening run, in the segment of
/// its first contribution, and its continuing runs in later segments; `contributions` holds every
/// contribution once, as an offset from its segment's first contribution.
#[derive(Debug, Clone, PartialEq, Default)]
struct Runs {
    /// Runs of segment `s` are `segment_ptr[s]..segment_ptr[s + 1]`.
    segment_ptr: Vec<usize>,
    /// The slot (position in the pattern's `col_idx`) of each run.
    run_slot: Vec<u32>,
    /// Bit `k % 64` of word `k / 64` is set if run `k` opens its slot.
    run_opens: Vec<u64>,
    /// Run `k`'s contributions are `contributions[run_ptr[k]..run_ptr[k + 1]]`.
    run_ptr: Vec<u32>,
    /// Contribution indices relative to their segment's first.
    contributions: Vec<u32>,
}

/// Cuts every slot's contribution list (`by_slot[slot_ptr[s]..slot_ptr[s + 1]]`, ascending) at
/// segment boundaries into runs and distributes them, stably, over the segments: a counting sort
/// over fixed chunks of slots whose output, like [`sort_by_row`]'s, does not depend on the number
/// of chunks.
fn split_into_runs(slot_ptr: &[u32], by_slot: &[u32], segment_len: usize) -> Runs {
    let n = by_slot.len();
    let nnz = slot_ptr.len() - 1;
    let n_segments = n.div_ceil(segment_len);
    // The runs of a slot in segment order, each with its segment; the first opens the slot.
    let runs_of = |slot: usize| {
        let mut list = &by_slot[slot_ptr[slot] as usize..slot_ptr[slot + 1] as usize];
        std::iter::from_fn(move || {
            let segment = *list.first()? as usize / segment_len;
            let end = ((segment + 1) * segment_len).min(n) as u32;
            let (run, rest) = list.split_at(list.partition_point(|&c| c < end));
            list = rest;
            Some((segment, run))
        })
    };
    // At most one chunk per thread, and few enough that the counters (two per segment and chunk)
    // stay below the contributions in number.
    let n_chunks = nnz
        .div_ceil(SLOT_CHUNK)
        .min(n / n_segments.max(1))
        .clamp(1, rayon::current_num_threads().max(1));
    let chunks = chunk_ranges(nnz, nnz.div_ceil(n_chunks).max(1));
    // Per chunk and segment: runs and contributions, then their first output positions.
    let mut next: Vec<(Vec<u32>, Vec<u32>)> = chunks
        .par_iter()
        .map(|chunk| {
            let (mut runs, mut entries) = (vec![0u32; n_segments], vec![0u32; n_segments]);
            for (segment, run) in chunk.clone().flat_map(runs_of) {
                runs[segment] += 1;
                entries[segment] += run.len() as u32;
            }
            (runs, entries)
        })
        .collect();
    let mut segment_ptr = Vec::with_capacity(n_segments + 1);
    let (mut run_pos, mut entry_pos) = (0usize, 0usize);
    for s in 0..n_segments {
        segment_ptr.push(run_pos);
        for (runs, entries) in next.iter_mut() {
            let (r, e) = (runs[s] as usize, entries[s] as usize);
            runs[s] = run_pos as u32;
            entries[s] = entry_pos as u32;
            run_pos += r;
            entry_pos += e;
        }
    }
    segment_ptr.push(run_pos);
    let n_runs = run_pos;
    let run_slot = atomic_zeros(n_runs);
    let run_ptr = atomic_zeros(n_runs + 1);
    let contributions = atomic_zeros(n);
    let run_opens: Vec<AtomicU64> = (0..n_runs.div_ceil(64))
        .map(|_| AtomicU64::new(0))
        .collect();
    run_ptr[n_runs].store(n as u32, Ordering::Relaxed);
    chunks
        .par_iter()
        .zip(next.par_iter_mut())
        .for_each(|(chunk, (runs, entries))| {
            for slot in chunk.clone() {
                for (i, (segment, run)) in runs_of(slot).enumerate() {
                    // Disjoint positions, as in `sort_by_row`; bits of a shared word are set
                    // atomically.
                    let k = runs[segment] as usize;
                    let first = entries[segment] as usize;
                    runs[segment] += 1;
                    entries[segment] += run.len() as u32;
                    run_slot[k].store(slot as u32, Ordering::Relaxed);
                    run_ptr[k].store(first as u32, Ordering::Relaxed);
                    if i == 0 {
                        run_opens[k / 64].fetch_or(1 << (k % 64), Ordering::Relaxed);
                    }
                    let segment_start = (segment * segment_len) as u32;
                    for (dst, &c) in contributions[first..].iter().zip(run) {
                        dst.store(c - segment_start, Ordering::Relaxed);
                    }
                }
            }
        });
    Runs {
        segment_ptr,
        run_slot: into_plain(run_slot),
        run_opens: run_opens.into_iter().map(AtomicU64::into_inner).collect(),
        run_ptr: into_plain(run_ptr),
        contributions: into_plain(contributions),
    }
}
