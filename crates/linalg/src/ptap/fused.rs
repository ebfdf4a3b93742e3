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
//! the caller falls back to the two-pass product.

use std::ops::Range;

use rayon::prelude::*;

use crate::kernels::gemm::BlockProduct;
use crate::BlockPattern;

/// Fewest fine rows per chunk.
const MIN_ROWS_PER_CHUNK: usize = 256;
/// Chunks aimed at (fewer when chunks reach [`MIN_ROWS_PER_CHUNK`]).
const TARGET_CHUNKS: usize = 256;
/// Colours tracked per coarse row (one bit each): more means too little locality.
const MAX_COLORS: usize = 64;
/// Fewest chunks per colour on average for the fused path to keep both threads of a small
/// machine busy; below it the two-pass product is used.
const MIN_CHUNKS_PER_COLOR: usize = 4;

/// Symbolic data of the fused product for one pattern of `P`.
///
/// Invariants: chunk `t` is fine rows `t * rows_per_chunk ..` (the last one shorter);
/// `coarse[coarse_ptr[t]..coarse_ptr[t + 1]]` lists, ascending, the coarse rows chunk `t` writes;
/// `local[s]` is the index of slot `s` of `P`'s column in its chunk's list; chunks of one colour
/// have disjoint lists; `by_color[color_ptr[k]..color_ptr[k + 1]]` are the chunks of colour `k`,
/// ascending.
#[derive(Debug, Clone)]
pub(crate) struct FusedPlan {
    rows_per_chunk: usize,
    coarse_ptr: Vec<usize>,
    coarse: Vec<u32>,
    local: Vec<u32>,
    color_ptr: Vec<usize>,
    by_color: Vec<u32>,
}

impl FusedPlan {
    /// Chunks and colours `P`'s rows; `None` if the rows lack the locality that makes colouring
    /// pay (more than [`MAX_COLORS`] colours, or fewer than [`MIN_CHUNKS_PER_COLOR`] chunks per
    /// colour).
    pub(crate) fn new(p: &BlockPattern) -> Option<Self> {
        let rows_per_chunk = p
            .n_block_rows()
            .div_ceil(TARGET_CHUNKS)
            .max(MIN_ROWS_PER_CHUNK);
        Self::with_rows_per_chunk(p, rows_per_chunk)
    }

    /// [`Self::new`] with chunks of `rows_per_chunk` (>= 1) fine rows.
    pub(crate) fn with_rows_per_chunk(p: &BlockPattern, rows_per_chunk: usize) -> Option<Self> {
        let n_rows = p.n_block_rows();
        let n_chunks = n_rows.div_ceil(rows_per_chunk);
        let (pp, pc) = (p.row_ptr(), p.col_idx());
        let per_chunk: Vec<(Vec<u32>, Vec<u32>)> = (0..n_chunks)
            .into_par_iter()
            .map(|t| {
                let slots = pp[t * rows_per_chunk]..pp[((t + 1) * rows_per_chunk).min(n_rows)];
                let mut coarse = pc[slots.clone()].to_vec();
                coarse.sort_unstable();
                coarse.dedup();
                let local = pc[slots]
                    .iter()
                    .map(|c| coarse.partition_point(|x| x < c) as u32)
                    .collect();
                (coarse, local)
            })
            .collect();

        // Greedy colouring in chunk order: the smallest colour no earlier chunk sharing a coarse
        // row holds.
        let mut used = vec![0u64; p.n_block_cols()];
        let mut color = Vec::with_capacity(n_chunks);
        let mut n_colors = 0;
        for (coarse, _) in &per_chunk {
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
        let (mut coarse, mut local) = (Vec::new(), Vec::with_capacity(pc.len()));
        for (c, l) in per_chunk {
            coarse.extend_from_slice(&c);
            local.extend_from_slice(&l);
            coarse_ptr.push(coarse.len());
        }
        Some(Self {
            rows_per_chunk,
            coarse_ptr,
            coarse,
            local,
            color_ptr,
            by_color,
        })
    }

    /// Number of colours, i.e. of sequential phases of the numeric product.
    pub(crate) fn n_colors(&self) -> usize {
        self.color_ptr.len() - 1
    }

    /// Chunks of colour `k`, ascending.
    pub(crate) fn chunks_of_color(&self, k: usize) -> impl Iterator<Item = usize> + '_ {
        self.by_color[self.color_ptr[k]..self.color_ptr[k + 1]]
            .iter()
            .map(|&t| t as usize)
    }

    /// Coarse rows chunk `t` writes, ascending.
    pub(crate) fn coarse_rows(&self, t: usize) -> &[u32] {
        &self.coarse[self.coarse_ptr[t]..self.coarse_ptr[t + 1]]
    }
}

/// The operands of one fused product; `m_ap` computes blocks of `A P` (`b x b` times `b x c`),
/// `m_ptw` blocks of `P^T W` (`(b x c)^T` times `b x c`).
pub(crate) struct FusedArgs<'a> {
    pub plan: &'a FusedPlan,
    pub a: &'a BlockPattern,
    pub a_values: &'a [f64],
    pub p: &'a BlockPattern,
    pub p_values: &'a [f64],
    /// Pattern of `A P` (the block structure of each `W_i`).
    pub ap: &'a BlockPattern,
    /// Pattern of `A_c`.
    pub ac: &'a BlockPattern,
}

/// Overwrites `ac_values` with `P^T A P` (see the module documentation for the order of sums).
pub(crate) fn fused_numeric<M1: BlockProduct, M2: BlockProduct>(
    m_ap: M1,
    m_ptw: M2,
    args: &FusedArgs<'_>,
    ac_values: &mut [f64],
) {
    let obl = m_ptw.rows() * m_ptw.cols();
    let ac_ptr = args.ac.row_ptr();
    ac_values.par_chunks_mut(1 << 14).for_each(|v| v.fill(0.0));
    let plan = args.plan;
    let n_coarse = args.ac.n_block_rows();
    for k in 0..plan.n_colors() {
        // Hand every chunk of this colour the coarse rows it owns.
        let mut rows: Vec<Option<&mut [f64]>> = Vec::with_capacity(n_coarse);
        let mut rest = &mut *ac_values;
        for w in ac_ptr.windows(2) {
            let (row, tail) = rest.split_at_mut((w[1] - w[0]) * obl);
            rows.push(Some(row));
            rest = tail;
        }
        let tasks: Vec<(usize, Vec<&mut [f64]>)> = plan
            .chunks_of_color(k)
            .map(|t| {
                let owned = plan
                    .coarse_rows(t)
                    .iter()
                    .map(|&c| {
                        rows[c as usize]
                            .take()
                            .expect("linalg internal error: chunks of one colour share a row")
                    })
                    .collect();
                (t, owned)
            })
            .collect();
        tasks.into_par_iter().for_each_init(
            || (vec![0u32; args.ap.n_block_cols()], Vec::new()),
            |(marker, w), (t, mut owned)| {
                let first = t * plan.rows_per_chunk;
                let fine = first..(first + plan.rows_per_chunk).min(args.p.n_block_rows());
                #[cfg(target_arch = "x86_64")]
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU supports AVX2, checked just above.
                    unsafe { fine_rows_avx2(m_ap, m_ptw, args, fine, marker, w, &mut owned) };
                    return;
                }
                fine_rows(m_ap, m_ptw, args, fine, marker, w, &mut owned);
            },
        );
    }
}

/// Runs [`fine_row`] for the fine rows `fine` of one chunk.
#[inline(always)]
fn fine_rows<M1: BlockProduct, M2: BlockProduct>(
    m_ap: M1,
    m_ptw: M2,
    args: &FusedArgs<'_>,
    fine: Range<usize>,
    marker: &mut [u32],
    w: &mut Vec<f64>,
    owned: &mut [&mut [f64]],
) {
    for i in fine {
        fine_row(m_ap, m_ptw, args, i, marker, w, owned);
    }
}

/// [`fine_rows`] compiled for AVX2: twice the vector width for the block products. No FMA, so
/// every operation and its rounding are those of the baseline build: results are bit-identical.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn fine_rows_avx2<M1: BlockProduct, M2: BlockProduct>(
    m_ap: M1,
    m_ptw: M2,
    args: &FusedArgs<'_>,
    fine: Range<usize>,
    marker: &mut [u32],
    w: &mut Vec<f64>,
    owned: &mut [&mut [f64]],
) {
    fine_rows(m_ap, m_ptw, args, fine, marker, w, owned);
}

/// Adds `P_i^T (A_i P)` into the chunk's coarse rows `owned`: first `W_i = A_i P` into `w` (blocks
/// in the order of `A P`'s row `i`, located through `marker`), then each `P_iI^T W_iJ` into block
/// `J` of coarse row `I`, found by walking row `I`'s ascending columns alongside `W_i`'s.
#[inline(always)]
fn fine_row<M1: BlockProduct, M2: BlockProduct>(
    m_ap: M1,
    m_ptw: M2,
    args: &FusedArgs<'_>,
    i: usize,
    marker: &mut [u32],
    w: &mut Vec<f64>,
    owned: &mut [&mut [f64]],
) {
    let (abl, pbl, obl) = (
        m_ap.rows() * m_ap.inner(),
        m_ap.inner() * m_ap.cols(),
        m_ptw.rows() * m_ptw.cols(),
    );
    let (pp, pc, pv) = (args.p.row_ptr(), args.p.col_idx(), args.p_values);
    let w_cols = args.ap.row(i);
    for (l, &j) in w_cols.iter().enumerate() {
        marker[j as usize] = l as u32;
    }
    w.clear();
    w.resize(w_cols.len() * pbl, 0.0);
    let ap = args.a.row_ptr();
    for s in ap[i]..ap[i + 1] {
        let k = args.a.col_idx()[s] as usize;
        let ablk = &args.a_values[s * abl..(s + 1) * abl];
        for t in pp[k]..pp[k + 1] {
            let l = marker[pc[t] as usize] as usize;
            m_ap.mul_add(
                ablk,
                &pv[t * pbl..(t + 1) * pbl],
                &mut w[l * pbl..(l + 1) * pbl],
            );
        }
    }
    for t in pp[i]..pp[i + 1] {
        let coarse_row = pc[t] as usize;
        let out = &mut *owned[args.plan.local[t] as usize];
        let ac_cols = args.ac.row(coarse_row);
        let pblk = &pv[t * pbl..(t + 1) * pbl];
        let mut q = 0;
        for (l, &j) in w_cols.iter().enumerate() {
            // W_i's columns are a subset of row I's (A_c's pattern is that of P^T (A P)).
            while ac_cols[q] != j {
                q += 1;
            }
            m_ptw.mul_add(
                pblk,
                &w[l * pbl..(l + 1) * pbl],
                &mut out[q * obl..(q + 1) * obl],
            );
        }
    }
}
