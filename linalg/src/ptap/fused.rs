//! Fused Galerkin product: `A_c = sum over fine rows i of P_i^T (A_i P)`, one fine row at a time,
//! without materialising `W = A P`.
//!
//! Fine rows are cut into fixed chunks. Two chunks conflict when they scatter into a common coarse
//! row (a column of `P` present in both); the symbolic phase colours the chunks greedily in chunk
//! order so that no two chunks of a colour conflict. The numeric phase zeroes `A_c`, then runs the
//! colours one after the other, the chunks of a colour in parallel, each chunk owning its coarse
//! rows outright. Block `A_c[I][J]` therefore sums its terms chunk by chunk in colour order, fine
//! rows ascending within a chunk: a fixed order, whatever the thread count.
//!
//! Colouring needs locality (fine rows numbered so that a chunk meets few coarse rows that later
//! chunks also meet, as any mesh-ordered problem has); [`FusedPlan::new`] declines otherwise and
//! the caller falls back to the streamed product.
//!
//! Plan memory: per chunk its coarse rows and colour, nothing per block of `P` or of `A P` (each
//! row of `W` finds its columns on the fly, see module `wrow`).

use std::marker::PhantomData;
use std::ops::Range;

use rayon::prelude::*;

use super::workspace::{PtapWorkspace, RowScratch};
use super::wrow::{unmark, w_row, Operands};
use crate::backend::host::gemm::BlockProduct;
use crate::BlockPattern;

/// Fine rows per chunk on large levels (fewer chunks than [`TARGET_CHUNKS`] would need more).
const MIN_ROWS_PER_CHUNK: usize = 256;
/// Chunks aimed at (fewer when chunks reach [`MIN_ROWS_PER_CHUNK`]).
const TARGET_CHUNKS: usize = 256;
/// Smallest chunks tried when larger ones do not colour (small levels).
const FEWEST_ROWS_PER_CHUNK: usize = 16;
/// Values per task when zeroing `A_c`.
const ZERO_VALUES_PER_TASK: usize = 1 << 14;
/// Colours tracked per coarse row (one bit each): more means too little locality.
const MAX_COLORS: usize = 64;
/// Fewest chunks per colour on average for the fused path to keep both threads of a small
/// machine busy; below it the two-pass product is used.
const MIN_CHUNKS_PER_COLOR: usize = 4;

/// Symbolic data of the fused product for one pattern of `P`.
///
/// Invariants: chunk `t` is fine rows `t * rows_per_chunk ..` (the last one shorter);
/// `coarse[coarse_ptr[t]..coarse_ptr[t + 1]]` lists, ascending, the coarse rows chunk `t` writes;
/// chunks of one colour have disjoint lists; `by_color[color_ptr[k]..color_ptr[k + 1]]` are the
/// chunks of colour `k`, ascending.
#[derive(Debug, Clone)]
pub(crate) struct FusedPlan {
    rows_per_chunk: usize,
    coarse_ptr: Vec<usize>,
    coarse: Vec<u32>,
    color_ptr: Vec<usize>,
    by_color: Vec<u32>,
}

impl FusedPlan {
    /// Chunks and colours `P`'s rows; `None` if the rows lack the locality that makes colouring
    /// pay (more than [`MAX_COLORS`] colours, or fewer than [`MIN_CHUNKS_PER_COLOR`] chunks per
    /// colour).
    ///
    /// Chunk size: `n / TARGET_CHUNKS` rows, at least [`MIN_ROWS_PER_CHUNK`]; if that does not
    /// colour, halved until it does or would drop below [`FEWEST_ROWS_PER_CHUNK`] (small levels,
    /// where a few large chunks span too many coarse rows). The first size that colours is kept,
    /// so the chunks depend on `P`'s pattern only.
    pub(crate) fn new(p: &BlockPattern) -> Option<Self> {
        let mut rows_per_chunk = p
            .n_block_rows()
            .div_ceil(TARGET_CHUNKS)
            .max(MIN_ROWS_PER_CHUNK);
        loop {
            if let Some(plan) = Self::with_rows_per_chunk(p, rows_per_chunk) {
                return Some(plan);
            }
            rows_per_chunk /= 2;
            if rows_per_chunk < FEWEST_ROWS_PER_CHUNK {
                return None;
            }
        }
    }

    /// [`Self::new`] with chunks of `rows_per_chunk` (>= 1) fine rows.
    pub(crate) fn with_rows_per_chunk(p: &BlockPattern, rows_per_chunk: usize) -> Option<Self> {
        let n_rows = p.n_block_rows();
        let n_chunks = n_rows.div_ceil(rows_per_chunk);
        let (pp, pc) = (p.row_ptr(), p.col_idx());
        let per_chunk: Vec<Vec<u32>> = (0..n_chunks)
            .into_par_iter()
            .map(|t| {
                let slots = pp[t * rows_per_chunk]..pp[((t + 1) * rows_per_chunk).min(n_rows)];
                let mut coarse = pc[slots].to_vec();
                coarse.sort_unstable();
                coarse.dedup();
                coarse
            })
            .collect();

        // Greedy colouring in chunk order: the smallest colour no earlier chunk sharing a coarse
        // row holds.
        let mut used = vec![0u64; p.n_block_cols()];
        let mut color = Vec::with_capacity(n_chunks);
        let mut n_colors = 0;
        for coarse in &per_chunk {
            let taken = coarse.iter().fold(0u64, |m, &c| m | used[c as usize]);
            let k = taken.trailing_ones() as usize;
            if k >= MAX_COLORS {
                return None;
            }
            coarse.iter().for_each(|&c| used[c as usize] |= 1 << k);
            color.push(k);
            n_colors = n_colors.max(k + 1);
        }
        if n_chunks < MIN_CHUNKS_PER_COLOR * n_colors {
            return None;
        }

        let mut color_ptr = vec![0usize; n_colors + 1];
        color.iter().for_each(|&k| color_ptr[k + 1] += 1);
        for k in 0..n_colors {
            color_ptr[k + 1] += color_ptr[k];
        }
        let mut next = color_ptr[..n_colors].to_vec();
        let mut by_color = vec![0u32; n_chunks];
        for (t, &k) in color.iter().enumerate() {
            by_color[next[k]] = t as u32;
            next[k] += 1;
        }
        let mut coarse_ptr = Vec::with_capacity(n_chunks + 1);
        coarse_ptr.push(0);
        let mut coarse = Vec::with_capacity(per_chunk.iter().map(Vec::len).sum());
        for c in per_chunk {
            coarse.extend_from_slice(&c);
            coarse_ptr.push(coarse.len());
        }
        Some(Self {
            rows_per_chunk,
            coarse_ptr,
            coarse,
            color_ptr,
            by_color,
        })
    }

    /// Fine rows per chunk.
    #[cfg(test)]
    pub(crate) fn rows_per_chunk(&self) -> usize {
        self.rows_per_chunk
    }

    /// Bytes of the plan's arrays.
    pub(crate) fn memory_bytes(&self) -> usize {
        use std::mem::size_of_val;
        size_of_val(self.coarse_ptr.as_slice())
            + size_of_val(self.coarse.as_slice())
            + size_of_val(self.color_ptr.as_slice())
            + size_of_val(self.by_color.as_slice())
    }

    /// Number of colours, i.e. of sequential phases of the numeric product.
    pub(crate) fn n_colors(&self) -> usize {
        self.color_ptr.len() - 1
    }

    /// Chunks of colour `k`, ascending.
    #[cfg(test)]
    pub(crate) fn chunks_of_color(&self, k: usize) -> impl Iterator<Item = usize> + '_ {
        self.by_color[self.color_ptr[k]..self.color_ptr[k + 1]]
            .iter()
            .map(|&t| t as usize)
    }

    /// Coarse rows chunk `t` writes, ascending.
    #[cfg(test)]
    pub(crate) fn coarse_rows(&self, t: usize) -> &[u32] {
        &self.coarse[self.coarse_ptr[t]..self.coarse_ptr[t + 1]]
    }
}

/// The operands of one fused product; `m_ap` computes blocks of `A P` (`b x b` times `b x c`),
/// `m_ptw` blocks of `P^T W` (`(b x c)^T` times `b x c`).
pub(crate) struct FusedArgs<'a> {
    pub plan: &'a FusedPlan,
    pub ops: Operands<'a>,
    /// Pattern of `A_c`.
    pub ac: &'a BlockPattern,
}

/// `A_c`'s values, shared by the chunks of one colour, each writing only the coarse rows it
/// owns.
///
/// Invariant (the plan's): chunks of one colour own disjoint sets of coarse rows
/// ([`FusedPlan::coarse_rows`]), so while one colour runs every row has at most one writer.
struct ColourRows<'a> {
    values: *mut f64,
    len: usize,
    row_ptr: &'a [usize],
    /// Values per block of `A_c`.
    obl: usize,
    _values: PhantomData<&'a mut [f64]>,
}

// SAFETY: `ColourRows` hands out a row only to the one chunk that owns it during a colour (see
// `row`), so sharing it between the threads of one colour creates no aliasing.
unsafe impl Sync for ColourRows<'_> {}

impl<'a> ColourRows<'a> {
    fn new(values: &'a mut [f64], row_ptr: &'a [usize], obl: usize) -> Self {
        Self {
            values: values.as_mut_ptr(),
            len: values.len(),
            row_ptr,
            obl,
            _values: PhantomData,
        }
    }

    /// The values of coarse row `r`.
    ///
    /// # Safety
    /// The caller must be the chunk that owns row `r` in the running colour, and must drop the
    /// slice before asking for row `r` again.
    #[allow(clippy::mut_from_ref)]
    unsafe fn row(&self, r: usize) -> &mut [f64] {
        let (start, end) = (self.row_ptr[r] * self.obl, self.row_ptr[r + 1] * self.obl);
        assert!(
            start <= end && end <= self.len,
            "coarse row {r} outside A_c"
        );
        // SAFETY: in bounds (checked above); exclusive by the colouring invariant and the
        // caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.values.add(start), end - start) }
    }
}

/// Overwrites `ac_values` with `P^T A P` (see the module documentation for the order of sums),
/// with the per-thread scratch of `ws`.
pub(crate) fn fused_numeric<M1: BlockProduct, M2: BlockProduct>(
    m_ap: M1,
    m_ptw: M2,
    args: &FusedArgs<'_>,
    ws: &PtapWorkspace,
    ac_values: &mut [f64],
) {
    let obl = m_ptw.rows() * m_ptw.cols();
    ac_values
        .par_chunks_mut(ZERO_VALUES_PER_TASK)
        .for_each(|v| v.fill(0.0));
    let plan = args.plan;
    let rows = ColourRows::new(ac_values, args.ac.row_ptr(), obl);
    for k in 0..plan.n_colors() {
        plan.by_color[plan.color_ptr[k]..plan.color_ptr[k + 1]]
            .par_iter()
            .for_each(|&t| {
                let t = t as usize;
                let first = t * plan.rows_per_chunk;
                let fine = first..(first + plan.rows_per_chunk).min(args.ops.p.n_block_rows());
                ws.rows.with(|scratch| {
                    #[cfg(target_arch = "x86_64")]
                    if std::arch::is_x86_feature_detected!("avx2") {
                        // SAFETY: the CPU supports AVX2, checked just above; chunk `t` owns the
                        // rows it writes in colour `k`.
                        unsafe { fine_rows_avx2(m_ap, m_ptw, args, fine, scratch, &rows) };
                        return;
                    }
                    // SAFETY: chunk `t` owns the rows it writes in colour `k`.
                    unsafe { fine_rows(m_ap, m_ptw, args, fine, scratch, &rows) };
                });
            });
    }
}

/// Runs [`fine_row`] for the fine rows `fine` of one chunk.
///
/// # Safety
/// `fine` must be the rows of one chunk of the running colour (which owns the coarse rows they
/// write in `rows`).
#[inline(always)]
unsafe fn fine_rows<M1: BlockProduct, M2: BlockProduct>(
    m_ap: M1,
    m_ptw: M2,
    args: &FusedArgs<'_>,
    fine: Range<usize>,
    scratch: &mut RowScratch,
    rows: &ColourRows<'_>,
) {
    for i in fine {
        // SAFETY: forwarded from the caller.
        unsafe { fine_row(m_ap, m_ptw, args, i, scratch, rows) };
    }
}

/// [`fine_rows`] compiled for AVX2: twice the vector width for the block products. No FMA, so
/// every operation and its rounding are those of the baseline build: results are bit-identical.
///
/// # Safety
/// The CPU must support AVX2, and the contract of [`fine_rows`] holds.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn fine_rows_avx2<M1: BlockProduct, M2: BlockProduct>(
    m_ap: M1,
    m_ptw: M2,
    args: &FusedArgs<'_>,
    fine: Range<usize>,
    scratch: &mut RowScratch,
    rows: &ColourRows<'_>,
) {
    // SAFETY: forwarded from the caller.
    unsafe { fine_rows(m_ap, m_ptw, args, fine, scratch, rows) };
}

/// Adds `P_i^T (A_i P)` into the chunk's coarse rows of `rows`: first `W_i = A_i P` (module `wrow`),
/// then each `P_iI^T W_iJ` into block `J` of coarse row `I`, found by walking row `I`'s ascending
/// columns alongside `W_i`'s columns, sorted (`W_i`'s columns are a subset of row `I`'s: `A_c`'s
/// pattern is that of `P^T (A P)`); `W_iJ` is located through the row's marker. Each block of
/// `A_c` receives at most one term per fine row.
///
/// # Safety
/// Fine row `i` must belong to a chunk of the running colour, which owns its coarse rows.
#[inline(always)]
unsafe fn fine_row<M1: BlockProduct, M2: BlockProduct>(
    m_ap: M1,
    m_ptw: M2,
    args: &FusedArgs<'_>,
    i: usize,
    scratch: &mut RowScratch,
    rows: &ColourRows<'_>,
) {
    let (pbl, obl) = (m_ap.inner() * m_ap.cols(), m_ptw.rows() * m_ptw.cols());
    let RowScratch {
        w_cols,
        w,
        w_marker,
    } = scratch;
    w_cols.clear();
    w.clear();
    w_row(m_ap, &args.ops, i, w_marker, w_cols, w);
    // Sorting the columns leaves the blocks where they are: the marker still locates them.
    w_cols.sort_unstable();
    let (pp, pc, pv) = (
        args.ops.p.row_ptr(),
        args.ops.p.col_idx(),
        args.ops.p_values,
    );
    for t in pp[i]..pp[i + 1] {
        let coarse_row = pc[t] as usize;
        // SAFETY: the chunk of row `i` owns `coarse_row` in this colour (caller's contract); the
        // slice is dropped before the next block of the row asks again.
        let out = unsafe { rows.row(coarse_row) };
        let pblk = &pv[t * pbl..(t + 1) * pbl];
        let ac_cols = args.ac.row(coarse_row);
        let mut q = 0;
        for &j in w_cols.iter() {
            while ac_cols[q] != j {
                q += 1;
            }
            let l = w_marker[j as usize] as usize;
            m_ptw.mul_add(
                pblk,
                &w[l * pbl..(l + 1) * pbl],
                &mut out[q * obl..(q + 1) * obl],
            );
        }
    }
    unmark(w_marker, w_cols);
}
