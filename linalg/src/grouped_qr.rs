//! Householder thin QR of row groups: the per-aggregate QR of the tentative prolongator (one
//! small `m x k` slab per group of block rows), on the host or on a GPU with the same bits.
//!
//! [`GroupedQrPlan`] is the symbolic phase: which rows of the input form each group and where
//! each row of `Q` goes; [`GroupedQrPlan::factor`] the numeric one, repeated for new inputs
//! (a renewal's new near-null space) on the same groups. The device kernel
//! (`linalg/cuda/qr.cu`, one lane per column of a group: no sum of `thin_qr` crosses columns)
//! performs [`thin_qr`]'s operations one for one without FMA contraction, so `Q` and `R` are
//! the host's bit for bit. [`GroupedQrPlan::factor_vector`] reads an input already on the GPU
//! and leaves `R` there. [`GroupedQrPlan::from_assignment`] makes the plan of a row -> group map
//! (the tentative prolongator's aggregates) and `Q`'s pattern; on a GPU it builds both there
//! from the map, so that neither is uploaded.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;

use crate::backend::cuda::{CudaContext, DeviceGroupedQr};
use crate::device::{ByPrecision::Double, Device, Placed};
use crate::rows::split_rows;
use crate::{BlockPattern, Bsr, LinalgError, Vector};

/// The group of a row in no group, in [`GroupedQrPlan::from_assignment`]'s map.
pub const NO_GROUP: u32 = u32::MAX;

/// Reflections kept on the stack up to this many columns (the near-null vectors: 6 in 3D).
const STACK_REFLECTIONS: usize = 64;

/// Householder thin QR of the `m x k` row-major matrix `a` (`m >= k`), overwriting `a` with the
/// orthonormal factor `Q` (`m x k`, row-major) and writing `R` (`k x k`, row-major, upper triangular)
/// into `r`. `Q` has orthonormal columns even when `a` is rank deficient (a dependent column then
/// yields a zero diagonal entry of `R`, and its `Q` column completes the basis), so `Q R = a` holds in
/// every case. `work` must hold at least `m * k` entries.
///
/// Each reflection is applied to all its columns in one sweep over the rows (the row-major
/// entries side by side), but every column's sum still runs over the rows in ascending order
/// and no product is fused: the bits of applying it column after column, which the device
/// kernel (one lane per column) repeats.
pub fn thin_qr(a: &mut [f64], m: usize, k: usize, r: &mut [f64], work: &mut [f64]) {
    debug_assert!(m >= k && a.len() >= m * k && r.len() >= k * k && work.len() >= m * k);
    // Householder vectors are stored column-wise in `work` (column j uses rows j..m).
    let v = &mut work[..m * k];
    v.fill(0.0);
    let mut on_stack = [0.0f64; 2 * STACK_REFLECTIONS];
    let mut on_heap;
    let scratch: &mut [f64] = if k <= STACK_REFLECTIONS {
        &mut on_stack[..2 * k]
    } else {
        on_heap = vec![0.0; 2 * k];
        &mut on_heap
    };
    let (betas, sums) = scratch.split_at_mut(k);
    for j in 0..k {
        let mut norm2 = 0.0;
        for i in j..m {
            norm2 += a[i * k + j] * a[i * k + j];
        }
        let norm = norm2.sqrt();
        let x0 = a[j * k + j];
        if norm == 0.0 {
            betas[j] = 0.0; // identity reflection: the column is already zero below and at j
            continue;
        }
        let alpha = if x0 >= 0.0 { -norm } else { norm };
        // v = x - alpha e_j, beta = 2 / (v^T v)
        let mut vtv = 0.0;
        for i in j..m {
            let vi = if i == j { x0 - alpha } else { a[i * k + j] };
            v[i * k + j] = vi;
            vtv += vi * vi;
        }
        let beta = if vtv > 0.0 { 2.0 / vtv } else { 0.0 };
        betas[j] = beta;
        // Apply H_j = I - beta v v^T to columns j..k of a.
        reflect(a, v, m, k, j, beta, &mut sums[j..]);
    }
    // R = upper triangle of the reduced a.
    for i in 0..k {
        for c in 0..k {
            r[i * k + c] = if c >= i { a[i * k + c] } else { 0.0 };
        }
    }
    // Q = H_0 H_1 ... H_{k-1} [I_k; 0], accumulated backwards into a.
    for i in 0..m {
        for c in 0..k {
            a[i * k + c] = if i == c { 1.0 } else { 0.0 };
        }
    }
    for j in (0..k).rev() {
        let beta = betas[j];
        if beta != 0.0 {
            reflect(a, v, m, k, j, beta, &mut sums[j..]);
        }
    }
}

/// `a[j.., j..] -= beta v (v^T a[j.., j..])` for the `j`-th Householder vector `v[j.., j]`
/// (`a`, `v`: `m x k` row-major): per column `c >= j`, `s_c = beta * sum_i v_i a_ic` over the
/// rows `i = j..m` in ascending order, then `a_ic -= s_c v_i`. `sums`: `k - j` scratch values.
fn reflect(a: &mut [f64], v: &[f64], m: usize, k: usize, j: usize, beta: f64, sums: &mut [f64]) {
    sums.fill(0.0);
    for i in j..m {
        let vi = v[i * k + j];
        for (s, &x) in sums.iter_mut().zip(&a[i * k + j..(i + 1) * k]) {
            *s += vi * x;
        }
    }
    for s in sums.iter_mut() {
        *s *= beta;
    }
    for i in j..m {
        let vi = v[i * k + j];
        for (x, &s) in a[i * k + j..(i + 1) * k].iter_mut().zip(sums.iter()) {
            *x -= s * vi;
        }
    }
}

/// The groups of a grouped QR: group `g` is the `m_g x k` matrix of the rows of the input's
/// block rows `members[offsets[g]..offsets[g + 1]]` (`bs` rows each, in that order); row block
/// `i` of its `Q` goes to block `slots[offsets[g] + i]` (in value order) of the output, a
/// [`Bsr`] of `bs x k` blocks with one block per member (the tentative prolongator: one block in
/// each aggregated vertex's row). Invariants (checked by [`GroupedQrPlan::new`]): offsets ascend
/// from 0 to the members, every group has at least `k` rows, the slots are a permutation of the
/// output's blocks.
#[derive(Debug)]
pub struct GroupedQrPlan {
    bs: usize,
    k: usize,
    offsets: Vec<usize>,
    members: Vec<u32>,
    slots: Vec<u32>,
    /// For each output block row, its position in group-major order (`slots`' inverse).
    position: Vec<u32>,
    /// The plan's arrays on a GPU, uploaded at the first device factorisation.
    device: OnceLock<Arc<DeviceGroupedQr>>,
}

/// Rows of the map a task of [`GroupedQrPlan::from_assignment`] takes at least.
const MIN_ROWS_PER_TASK: usize = 1 << 15;
/// Tasks of [`GroupedQrPlan::from_assignment`] at most (each counts its rows by group: a
/// count per group and task).
const MAX_TASKS: usize = 64;

/// Errors unless `offsets` ascend from 0 to `n_members` and every group has at least `k` rows
/// (`bs` a member), with `bs` and `k` nonzero.
fn check_groups(
    offsets: &[usize],
    n_members: usize,
    bs: usize,
    k: usize,
) -> Result<(), LinalgError> {
    let bad = |reason: String| {
        Err(LinalgError::InvalidPlan {
            what: "grouped QR",
            reason,
        })
    };
    if bs == 0 || k == 0 {
        return bad(format!("block size {bs}, {k} columns"));
    }
    if offsets.first() != Some(&0) || offsets.last() != Some(&n_members) {
        return bad(format!(
            "offsets must run from 0 to the {n_members} members"
        ));
    }
    for (g, w) in offsets.windows(2).enumerate() {
        if w[1] < w[0] || (w[1] - w[0]) * bs < k {
            return bad(format!(
                "group {g} has {} rows for {k} columns",
                w[1].saturating_sub(w[0]) * bs
            ));
        }
    }
    Ok(())
}

impl GroupedQrPlan {
    /// The plan of groups `offsets`/`members` (see the type) with output block rows `slots`, for
    /// `bs` rows per block row and `k` columns.
    pub fn new(
        offsets: Vec<usize>,
        members: Vec<u32>,
        slots: Vec<u32>,
        bs: usize,
        k: usize,
    ) -> Result<Self, LinalgError> {
        check_groups(&offsets, members.len(), bs, k)?;
        let bad = |reason: String| {
            Err(LinalgError::InvalidPlan {
                what: "grouped QR",
                reason,
            })
        };
        if slots.len() != members.len() {
            return bad(format!(
                "{} slots for {} members",
                slots.len(),
                members.len()
            ));
        }
        let mut position = vec![u32::MAX; slots.len()];
        for (i, &s) in slots.iter().enumerate() {
            match position.get_mut(s as usize) {
                Some(p) if *p == u32::MAX => *p = i as u32,
                _ => return bad(format!("slot {s} is out of range or taken twice")),
            }
        }
        Ok(Self {
            bs,
            k,
            offsets,
            members,
            slots,
            position,
            device: OnceLock::new(),
        })
    }

    /// The plan of the row -> group map `assignment` ([`NO_GROUP`]: the row is in none; groups
    /// `0..n_groups`, each of at least `k` rows counting `bs` per row) and the pattern of its
    /// `Q`: `assignment.len()` block rows, `n_groups` block columns, one block in each grouped
    /// row, in its group's column. Group `g` holds its rows ascending; row `i`'s block of `Q`
    /// is its pattern's slot (the grouped rows before it). On a GPU (`device`) both are also
    /// built there from the map, whose upload (4 bytes a row) is all that goes up: the
    /// pattern's device mirror and the plan's device arrays are set, so neither is uploaded
    /// at a later use. Their entries are the host's (a counting sort that keeps the rows'
    /// order). The host arrays are made on every device: [`Bsr`] keeps its pattern on the
    /// host (its symbolic products, reports and renewal checks read it there), and so does the
    /// plan (the host factorisation and the input bounds).
    pub fn from_assignment(
        assignment: &[u32],
        n_groups: usize,
        bs: usize,
        k: usize,
        device: &Device,
    ) -> Result<(Arc<BlockPattern>, Self), LinalgError> {
        let n = assignment.len();
        // the map in chunks, a few a thread (the arrays do not depend on their number)
        let tasks = (2 * rayon::current_num_threads())
            .min(MAX_TASKS)
            .min(n.div_ceil(MIN_ROWS_PER_TASK))
            .max(1);
        let chunk = n.div_ceil(tasks).max(1);
        // one block in each grouped row (its group's column), none elsewhere: each chunk's
        // grouped rows counted, then its rows' offsets and columns filled
        let grouped: Vec<usize> = assignment
            .par_chunks(chunk)
            .map(|rows| rows.iter().filter(|&&g| g != NO_GROUP).count())
            .collect();
        let starts = crate::exclusive_sums(&grouped);
        let nnz = starts[grouped.len()];
        let mut row_ptr = vec![0usize; n + 1];
        let mut cols = vec![0u32; nnz];
        let mut col_parts = Vec::with_capacity(grouped.len());
        let mut rest = &mut cols[..];
        for &len in &grouped {
            let (part, tail) = rest.split_at_mut(len);
            col_parts.push(part);
            rest = tail;
        }
        row_ptr[1..]
            .par_chunks_mut(chunk)
            .zip(assignment.par_chunks(chunk))
            .zip(col_parts.into_par_iter().zip(starts.par_iter()))
            .for_each(|((ptr, rows), (part, &start))| {
                let mut at = 0;
                for (p, &g) in ptr.iter_mut().zip(rows) {
                    if g != NO_GROUP {
                        part[at] = g;
                        at += 1;
                    }
                    *p = start + at;
                }
            });
        // validated: every group below `n_groups`, which fits a u32
        let pattern = Arc::new(BlockPattern::new(n, n_groups, row_ptr, cols)?);
        // a counting sort by group that keeps the rows' order: each chunk's rows of a group go
        // after those of the chunks before it
        let counts: Vec<Vec<usize>> = assignment
            .par_chunks(chunk)
            .map(|rows| {
                let mut count = vec![0usize; n_groups];
                for &g in rows.iter().filter(|&&g| g != NO_GROUP) {
                    count[g as usize] += 1;
                }
                count
            })
            .collect();
        let mut offsets = vec![0usize; n_groups + 1];
        let mut firsts = vec![vec![0usize; n_groups]; counts.len()];
        for g in 0..n_groups {
            let mut at = offsets[g];
            for (first, count) in firsts.iter_mut().zip(&counts) {
                first[g] = at;
                at += count[g];
            }
            offsets[g + 1] = at;
        }
        drop(counts);
        // each member's row and each slot's place in group order (written once each)
        let members: Vec<AtomicU32> = (0..nnz)
            .into_par_iter()
            .map(|_| AtomicU32::new(0))
            .collect();
        let position: Vec<AtomicU32> = (0..nnz)
            .into_par_iter()
            .map(|_| AtomicU32::new(0))
            .collect();
        let slot_of = pattern.row_ptr();
        assignment
            .par_chunks(chunk)
            .zip(firsts.into_par_iter())
            .enumerate()
            .for_each(|(c, (rows, mut next))| {
                for (i, &g) in rows.iter().enumerate() {
                    if g != NO_GROUP {
                        let row = c * chunk + i;
                        let at = &mut next[g as usize];
                        members[*at].store(row as u32, Ordering::Relaxed);
                        position[slot_of[row]].store(*at as u32, Ordering::Relaxed);
                        *at += 1;
                    }
                }
            });
        let members: Vec<u32> = members.into_par_iter().map(AtomicU32::into_inner).collect();
        let position: Vec<u32> = position
            .into_par_iter()
            .map(AtomicU32::into_inner)
            .collect();
        let slots: Vec<u32> = members
            .par_iter()
            .map(|&row| slot_of[row as usize] as u32)
            .collect();
        check_groups(&offsets, members.len(), bs, k)?;
        let plan = Self {
            bs,
            k,
            offsets,
            members,
            slots,
            position,
            device: OnceLock::new(),
        };
        if let Device::Cuda(ctx) = device {
            if n > 0 {
                let (dp, dq) = DeviceGroupedQr::from_assignment(ctx, assignment, n_groups, bs, k)?;
                pattern.device_mirror().get_or_upload(ctx, || Ok(dp))?;
                let _ = plan.device.set(Arc::new(dq));
            }
        }
        Ok((pattern, plan))
    }

    /// Number of groups (the rows of `R` are `k` per group).
    pub fn n_groups(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Blocks of the output `Q` (one per member).
    pub fn n_out_blocks(&self) -> usize {
        self.slots.len()
    }

    /// `Q` and `R` of every group of `b` (the input: `n x k` row-major, `bs` rows per block
    /// row, as many block rows as the largest member needs) where `q` lives: `q`'s values are
    /// overwritten (`q`: `n_out_blocks` blocks of `bs x k`) and the
    /// `R` factors are returned, group after group (`k x k` row-major each, on the host). `b`
    /// is host data; on a GPU it is uploaded once per call. Host and device give the same bits.
    pub fn factor(&self, b: &[f64], q: &mut Bsr) -> Result<Vec<f64>, LinalgError> {
        let (bs, k) = (self.bs, self.k);
        let slab = bs * k;
        if (q.block_rows(), q.block_cols()) != (bs, k) || q.pattern().nnz() != self.n_out_blocks() {
            return Err(LinalgError::PatternMismatch {
                what: "GroupedQrPlan::factor: Q (one bs x k block per member)",
            });
        }
        if let Some(&worst) = self.members.iter().max() {
            let need = (worst as usize + 1) * slab;
            if b.len() < need {
                return Err(LinalgError::DimensionMismatch {
                    what: "GroupedQrPlan::factor: input rows",
                    expected: need,
                    found: b.len(),
                });
            }
        }
        let precision = q.precision().name();
        match q.storage_mut() {
            Placed::Host(Double(values)) => Ok(self.factor_host(b, values)),
            Placed::Cuda(ctx, Double(m)) => {
                let ctx = ctx.clone();
                let plan = self.device_plan(&ctx)?;
                plan.factor(&ctx, b, m.values_mut())
            }
            _ => Err(LinalgError::PrecisionUnsupported {
                what: "GroupedQrPlan::factor (Q in fp64)",
                precision,
            }),
        }
    }

    /// [`Self::factor`] with the input a [`Vector`] and `R` returned where `q` lives (`k x k`
    /// per group, group after group, in one vector): on a GPU with `b` there, no transfer and
    /// no wait (the plan's arrays go up at its first device factorisation and stay); a host `b`
    /// is uploaded, a device `b` for a host `q` downloaded. The same bits as [`Self::factor`].
    pub fn factor_vector(&self, b: &Vector, q: &mut Bsr) -> Result<Vector, LinalgError> {
        let (bs, k) = (self.bs, self.k);
        let q_shape_ok =
            (q.block_rows(), q.block_cols()) == (bs, k) && q.pattern().nnz() == self.n_out_blocks();
        let (ctx, m) = match q.storage_mut() {
            Placed::Cuda(ctx, Double(m)) => (ctx.clone(), m),
            _ => {
                let r = match b.storage() {
                    Placed::Host(b) => self.factor(b, q)?,
                    Placed::Cuda(..) => self.factor(&b.to_host_vec()?, q)?,
                };
                return Ok(Vector::from_vec(r));
            }
        };
        if !q_shape_ok {
            return Err(LinalgError::PatternMismatch {
                what: "GroupedQrPlan::factor_vector: Q (one bs x k block per member)",
            });
        }
        if let Some(&worst) = self.members.iter().max() {
            let need = (worst as usize + 1) * bs * k;
            if b.len() < need {
                return Err(LinalgError::DimensionMismatch {
                    what: "GroupedQrPlan::factor_vector: input rows",
                    expected: need,
                    found: b.len(),
                });
            }
        }
        let uploaded;
        let b_device = match b.storage() {
            Placed::Cuda(at, data) if at.ordinal() == ctx.ordinal() => data,
            _ => {
                uploaded = ctx.upload(&b.to_host_vec()?)?;
                &uploaded
            }
        };
        let plan = self.device_plan(&ctx)?;
        let r_len = self.n_groups() * k * k;
        let mut r = ctx.zeros::<f64>(r_len.max(1))?;
        plan.factor_into(&ctx, b_device, m.values_mut(), &mut r)?;
        if r_len == 0 {
            return Ok(Vector::from_vec(Vec::new())); // no group: nothing to place anywhere
        }
        Ok(Vector::from_device_buffer(ctx, r))
    }

    fn device_plan(&self, ctx: &Arc<CudaContext>) -> Result<Arc<DeviceGroupedQr>, LinalgError> {
        if let Some(p) = self.device.get() {
            return Ok(p.clone());
        }
        let offsets: Vec<u32> = self.offsets.iter().map(|&o| o as u32).collect();
        let plan = Arc::new(DeviceGroupedQr::upload(
            ctx,
            &offsets,
            &self.members,
            &self.slots,
            self.bs,
            self.k,
        )?);
        Ok(self.device.get_or_init(|| plan).clone())
    }

    /// The host factorisation: groups in parallel into group-major scratch, then `Q` scattered
    /// to the output rows.
    fn factor_host(&self, b: &[f64], values: &mut [f64]) -> Vec<f64> {
        let slab = self.bs * self.k;
        let (q_buf, r_buf) = thin_qr_of_groups(&self.offsets, self.bs, self.k, |at| {
            let v = self.members[at] as usize;
            &b[v * slab..(v + 1) * slab]
        });
        values
            .par_chunks_mut(slab)
            .zip(self.position.par_iter())
            .for_each(|(dst, &at)| {
                let s = at as usize * slab;
                dst.copy_from_slice(&q_buf[s..s + slab]);
            });
        r_buf
    }
}

/// Groups factored by one task of [`thin_qr_of_groups`].
const GROUPS_PER_TASK: usize = 64;

/// [`thin_qr`] of every group of stacked rows, in parallel on the host: group `g` stacks the
/// `bs x k` row blocks `row(at)` for `at` in `offsets[g]..offsets[g + 1]` (in that order; each
/// group at least `k` rows). Returns `Q` (`bs x k` per member, group after group) and `R`
/// (`k x k` per group).
pub fn thin_qr_of_groups<'a>(
    offsets: &[usize],
    bs: usize,
    k: usize,
    row: impl Fn(usize) -> &'a [f64] + Sync,
) -> (Vec<f64>, Vec<f64>) {
    let slab = bs * k;
    let n_groups = offsets.len() - 1;
    let mut q = vec![0.0; offsets[n_groups] * slab];
    let mut r = vec![0.0; n_groups * k * k];
    split_rows(offsets, slab, GROUPS_PER_TASK, &mut q)
        .into_par_iter()
        .zip(r.par_chunks_mut((GROUPS_PER_TASK * k * k).max(1)))
        .for_each_init(Vec::new, |work, ((groups, q), r)| {
            let first = offsets[groups.start];
            for (j, g) in groups.enumerate() {
                let q = &mut q[(offsets[g] - first) * slab..(offsets[g + 1] - first) * slab];
                for (block, at) in q.chunks_exact_mut(slab).zip(offsets[g]..offsets[g + 1]) {
                    block.copy_from_slice(row(at));
                }
                let m = q.len() / k;
                work.resize(m * k, 0.0);
                thin_qr(q, m, k, &mut r[j * k * k..(j + 1) * k * k], work);
            }
        });
    (q, r)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// `n` values in `[-0.5, 0.5)` (xorshift).
    fn rand_vec(seed: u64, n: usize) -> Vec<f64> {
        let mut s = seed.max(1);
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
            })
            .collect()
    }

    fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for p in 0..k {
                for j in 0..n {
                    c[i * n + j] += a[i * k + p] * b[p * n + j];
                }
            }
        }
        c
    }

    /// `n` block rows of one block each, in columns `0, 1, .., n_cols - 1, 0, ..`.
    pub(crate) fn one_block_per_row(n_cols: usize, n: usize) -> Arc<crate::BlockPattern> {
        let cols = (0..n as u32).map(|i| i % n_cols as u32).collect();
        Arc::new(crate::BlockPattern::new(n, n_cols, (0..=n).collect(), cols).unwrap())
    }

    /// Groups of 2..=5 block rows over `n` input block rows (members shuffled across groups),
    /// output slots reversed: the plan, its input and the expected `Q` (per group by
    /// [`thin_qr`]) and `R`.
    pub(crate) fn random_groups(
        bs: usize,
        k: usize,
        seed: u64,
    ) -> (GroupedQrPlan, Vec<f64>, Vec<f64>, Vec<f64>) {
        let n = 41;
        let slab = bs * k;
        let b = rand_vec(seed, n * slab);
        // a group of 2..=5 members, taking every third vertex first, then the rest
        let order: Vec<u32> = (0..n as u32)
            .filter(|v| v % 3 == 0)
            .chain((0..n as u32).filter(|v| v % 3 != 0))
            .collect();
        let min = k.div_ceil(bs).max(2);
        let mut offsets = vec![0];
        while *offsets.last().unwrap() < n {
            let at = *offsets.last().unwrap();
            let size = (min + (at * 7 + 3) % 4).min(n - at);
            if n - at - size < min && n - at - size > 0 {
                offsets.push(n);
            } else {
                offsets.push(at + size);
            }
        }
        let slots: Vec<u32> = (0..n as u32).rev().collect();
        let mut q_expected = vec![0.0; n * slab];
        let mut r_expected = Vec::new();
        for w in offsets.windows(2) {
            let members = &order[w[0]..w[1]];
            let mut a: Vec<f64> = members
                .iter()
                .flat_map(|&v| b[v as usize * slab..(v as usize + 1) * slab].to_vec())
                .collect();
            let m = members.len() * bs;
            let mut r = vec![0.0; k * k];
            thin_qr(&mut a, m, k, &mut r, &mut vec![0.0; m * k]);
            for (i, &s) in slots[w[0]..w[1]].iter().enumerate() {
                q_expected[s as usize * slab..(s as usize + 1) * slab]
                    .copy_from_slice(&a[i * slab..(i + 1) * slab]);
            }
            r_expected.extend(r);
        }
        let plan = GroupedQrPlan::new(offsets, order, slots, bs, k).unwrap();
        (plan, b, q_expected, r_expected)
    }

    #[test]
    fn grouped_qr_is_each_groups_thin_qr_in_its_slots() {
        for (bs, k) in [(3, 6), (6, 6), (1, 1), (2, 3)] {
            let (plan, b, q_expected, r_expected) = random_groups(bs, k, 5);
            let pattern = one_block_per_row(4, plan.n_out_blocks());
            let mut q = Bsr::zeros(pattern, bs, k);
            let r = plan.factor(&b, &mut q).unwrap();
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&r), bits(&r_expected), "R, bs {bs} k {k}");
            assert_eq!(
                bits(&q.to_host_vec().unwrap()),
                bits(&q_expected),
                "Q, bs {bs} k {k}"
            );
        }
    }

    /// A map of `n` rows into groups of 3 or 4 rows, rows of a group spread over the map, every
    /// seventh row in no group: the map and the number of groups.
    fn spread_assignment(n: usize) -> (Vec<u32>, usize) {
        let grouped: Vec<usize> = (0..n).filter(|r| r % 7 != 3).collect();
        let n_groups = grouped.len() / 3;
        let mut assignment = vec![NO_GROUP; n];
        for (i, &r) in grouped.iter().enumerate() {
            // every group once per round of n_groups rows, in a scrambled order (0, last, 1,
            // last - 1, ..): at least 3 rows each
            let t = i % n_groups;
            let g = if t.is_multiple_of(2) {
                t / 2
            } else {
                n_groups - 1 - t / 2
            };
            assignment[r] = g as u32;
        }
        (assignment, n_groups)
    }

    #[test]
    fn the_plan_of_an_assignment_lists_each_groups_rows_ascending() {
        // rows 0..6: groups [1, -, 0, 1, 0, 1]
        let assignment = [1, NO_GROUP, 0, 1, 0, 1];
        let (pattern, plan) =
            GroupedQrPlan::from_assignment(&assignment, 2, 3, 6, &Device::Host).unwrap();
        assert_eq!(pattern.row_ptr(), &[0, 1, 1, 2, 3, 4, 5]);
        assert_eq!(pattern.col_idx(), &[1, 0, 1, 0, 1]);
        assert_eq!(plan.offsets, vec![0, 2, 5]);
        assert_eq!(plan.members, vec![2, 4, 0, 3, 5]);
        assert_eq!(plan.slots, vec![1, 3, 0, 2, 4]);
        // a group out of range, a group too small for k
        assert!(GroupedQrPlan::from_assignment(&[0, 2], 2, 3, 3, &Device::Host).is_err());
        assert!(GroupedQrPlan::from_assignment(&[0, 0, 1], 2, 3, 6, &Device::Host).is_err());
        // Q of the plan is each group's thin QR, as for any plan
        let (assignment, n_groups) = spread_assignment(40);
        let (pattern, plan) =
            GroupedQrPlan::from_assignment(&assignment, n_groups, 3, 6, &Device::Host).unwrap();
        assert_eq!(plan.n_groups(), n_groups);
        for w in plan.offsets.windows(2) {
            assert!(plan.members[w[0]..w[1]].windows(2).all(|m| m[0] < m[1]));
        }
        let b = rand_vec(4, 40 * 18);
        let mut q = Bsr::zeros(pattern, 3, 6);
        let r = plan.factor(&b, &mut q).unwrap();
        assert_eq!(r.len(), n_groups * 36);
    }

    /// The map split over several tasks (groups spread over every task's rows) gives the arrays
    /// of one serial counting sort, whatever the number of threads.
    #[test]
    fn the_plan_of_a_map_split_over_tasks_is_the_serial_counting_sorts() {
        let (assignment, n_groups) = spread_assignment(5 * MIN_ROWS_PER_TASK + 123);
        let mut row_ptr = vec![0usize];
        let mut cols = Vec::new();
        for &g in &assignment {
            if g != NO_GROUP {
                cols.push(g);
            }
            row_ptr.push(cols.len());
        }
        let mut offsets = vec![0usize; n_groups + 1];
        for &g in &cols {
            offsets[g as usize + 1] += 1;
        }
        for g in 0..n_groups {
            offsets[g + 1] += offsets[g];
        }
        let (mut next, mut members, mut slots) = (offsets.clone(), Vec::new(), Vec::new());
        members.resize(cols.len(), 0u32);
        slots.resize(cols.len(), 0u32);
        for (row, &g) in assignment
            .iter()
            .enumerate()
            .filter(|(_, &g)| g != NO_GROUP)
        {
            let at = &mut next[g as usize];
            members[*at] = row as u32;
            slots[*at] = row_ptr[row] as u32;
            *at += 1;
        }
        let serial = GroupedQrPlan::new(offsets, members, slots, 3, 6).unwrap();
        for threads in [1, 3, 8] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let (pattern, plan) = pool.install(|| {
                GroupedQrPlan::from_assignment(&assignment, n_groups, 3, 6, &Device::Host).unwrap()
            });
            assert_eq!(pattern.row_ptr(), &row_ptr[..], "{threads} threads");
            assert_eq!(pattern.col_idx(), &cols[..], "{threads} threads");
            assert_eq!(plan.offsets, serial.offsets, "{threads} threads");
            assert_eq!(plan.members, serial.members, "{threads} threads");
            assert_eq!(plan.slots, serial.slots, "{threads} threads");
            assert_eq!(plan.position, serial.position, "{threads} threads");
        }
    }

    /// On a GPU: the plan built there from the map is the host's entry for entry, the map is
    /// all that goes up, and `Q`, `R` are the host's bits with nothing more uploaded.
    #[test]
    fn the_device_plan_of_an_assignment_is_the_hosts_and_moves_only_the_map() {
        let name = "the_device_plan_of_an_assignment_is_the_hosts_and_moves_only_the_map";
        let ctx = match CudaContext::new(0) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("SKIP {name}: no GPU ({e})");
                return;
            }
        };
        let device = Device::Cuda(ctx.clone());
        for (n, bs, k) in [(40, 3, 6), (3001, 3, 6), (500, 6, 6), (77, 1, 1), (0, 3, 6)] {
            let (assignment, n_groups) = spread_assignment(n);
            let (host_pattern, host_plan) =
                GroupedQrPlan::from_assignment(&assignment, n_groups, bs, k, &Device::Host)
                    .unwrap();
            let before = device.transfers();
            let (pattern, plan) =
                GroupedQrPlan::from_assignment(&assignment, n_groups, bs, k, &device).unwrap();
            let moved = device.transfers();
            assert_eq!(
                moved.host_to_device - before.host_to_device,
                4 * n as u64,
                "n {n}: only the map goes up"
            );
            assert!(
                moved.device_to_host - before.device_to_host <= 32,
                "n {n}: only totals and the largest group's size come down"
            );
            assert_eq!(*pattern, *host_pattern, "n {n}: host pattern");
            assert_eq!(
                (&plan.offsets, &plan.members, &plan.slots),
                (&host_plan.offsets, &host_plan.members, &host_plan.slots),
                "n {n}: host plan"
            );
            if n == 0 {
                continue;
            }
            let unset = || {
                Err(LinalgError::InvalidPlan {
                    what: "test",
                    reason: "the device pattern was not built".into(),
                })
            };
            let dp = pattern.device_mirror().get_or_upload(&ctx, unset).unwrap();
            assert_eq!(
                dp.download(&ctx).unwrap(),
                *host_pattern,
                "n {n}: device pattern"
            );
            let dq = plan
                .device
                .get()
                .expect("device plan built")
                .download(&ctx)
                .unwrap();
            let offsets: Vec<u32> = host_plan.offsets.iter().map(|&o| o as u32).collect();
            assert_eq!(dq[0], offsets, "n {n}: device offsets");
            assert_eq!(dq[1], host_plan.members, "n {n}: device members");
            assert_eq!(dq[2], host_plan.slots, "n {n}: device slots");
            // the factorisation on the device plan: the host's bits, nothing uploaded but b
            let b = rand_vec(n as u64, n * bs * k);
            let mut q_host = Bsr::zeros(host_pattern.clone(), bs, k);
            let r_host = host_plan.factor(&b, &mut q_host).unwrap();
            let b_device = Vector::from_vec(b).to_device(&device).unwrap();
            let before = device.transfers();
            let mut q = Bsr::zeros_on(&device, pattern.clone(), bs, k).unwrap();
            let r = plan.factor_vector(&b_device, &mut q).unwrap();
            assert_eq!(device.transfers().host_to_device, before.host_to_device);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&r.to_host_vec().unwrap()), bits(&r_host), "n {n}: R");
            assert_eq!(
                bits(&q.to_host_vec().unwrap()),
                bits(&q_host.to_host_vec().unwrap()),
                "n {n}: Q"
            );
        }
    }

    #[test]
    fn a_plan_that_breaks_its_invariants_is_refused() {
        let plan = |offsets: Vec<usize>, slots: Vec<u32>| {
            GroupedQrPlan::new(offsets, vec![0, 1, 2, 3], slots, 3, 6)
        };
        assert!(plan(vec![0, 2, 4], vec![0, 1, 2, 3]).is_ok());
        // a group of one block row: 3 rows for 6 columns
        assert!(plan(vec![0, 1, 4], vec![0, 1, 2, 3]).is_err());
        // offsets not ending at the members
        assert!(plan(vec![0, 2, 3], vec![0, 1, 2, 3]).is_err());
        // a slot taken twice, a slot out of range
        assert!(plan(vec![0, 2, 4], vec![0, 1, 1, 3]).is_err());
        assert!(plan(vec![0, 2, 4], vec![0, 1, 2, 9]).is_err());
        // input too short for the members
        let p = plan(vec![0, 2, 4], vec![0, 1, 2, 3]).unwrap();
        let pattern = one_block_per_row(2, 4);
        let mut q = Bsr::zeros(pattern, 3, 6);
        assert!(p.factor(&[0.0; 10], &mut q).is_err());
    }

    /// [`thin_qr`] as first written: each reflection applied column after column (the order
    /// the device kernel's lanes follow).
    fn thin_qr_by_columns(a: &mut [f64], m: usize, k: usize, r: &mut [f64]) {
        let mut v = vec![0.0; m * k];
        let mut betas = vec![0.0; k];
        let apply = |a: &mut [f64], v: &[f64], j: usize, beta: f64| {
            for c in j..k {
                let mut s = 0.0;
                for i in j..m {
                    s += v[i * k + j] * a[i * k + c];
                }
                s *= beta;
                for i in j..m {
                    a[i * k + c] -= s * v[i * k + j];
                }
            }
        };
        for j in 0..k {
            let mut norm2 = 0.0;
            for i in j..m {
                norm2 += a[i * k + j] * a[i * k + j];
            }
            let norm = norm2.sqrt();
            let x0 = a[j * k + j];
            if norm == 0.0 {
                continue;
            }
            let alpha = if x0 >= 0.0 { -norm } else { norm };
            let mut vtv = 0.0;
            for i in j..m {
                let vi = if i == j { x0 - alpha } else { a[i * k + j] };
                v[i * k + j] = vi;
                vtv += vi * vi;
            }
            betas[j] = if vtv > 0.0 { 2.0 / vtv } else { 0.0 };
            apply(a, &v, j, betas[j]);
        }
        for i in 0..k {
            for c in 0..k {
                r[i * k + c] = if c >= i { a[i * k + c] } else { 0.0 };
            }
        }
        for i in 0..m {
            for c in 0..k {
                a[i * k + c] = if i == c { 1.0 } else { 0.0 };
            }
        }
        for j in (0..k).rev() {
            if betas[j] != 0.0 {
                apply(a, &v, j, betas[j]);
            }
        }
    }

    #[test]
    fn thin_qr_gives_the_bits_of_its_column_by_column_reflections() {
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for (seed, m, k) in [
            (1, 6, 6),
            (2, 81, 6),
            (3, 24, 6),
            (4, 9, 3),
            (5, 7, 1),
            (6, 70, 66),
        ] {
            let mut a = rand_vec(seed, m * k);
            if k > 2 {
                // a dependent column and a zero one: the reflections' zero cases
                for i in 0..m {
                    a[i * k + 1] = 2.0 * a[i * k];
                    a[i * k + 2] = 0.0;
                }
            }
            let (mut q, mut q_ref) = (a.clone(), a.clone());
            let (mut r, mut r_ref) = (vec![0.0; k * k], vec![0.0; k * k]);
            thin_qr(&mut q, m, k, &mut r, &mut vec![0.0; m * k]);
            thin_qr_by_columns(&mut q_ref, m, k, &mut r_ref);
            assert_eq!(bits(&q), bits(&q_ref), "Q of {m} x {k}");
            assert_eq!(bits(&r), bits(&r_ref), "R of {m} x {k}");
        }
    }

    #[test]
    fn thin_qr_reconstructs_and_is_orthonormal_even_if_rank_deficient() {
        let (m, k) = (9, 4);
        let mut a = rand_vec(7, m * k);
        for i in 0..m {
            a[i * k + 3] = a[i * k] - 2.0 * a[i * k + 1]; // dependent column
        }
        let mut q = a.clone();
        let mut r = vec![0.0; k * k];
        thin_qr(&mut q, m, k, &mut r, &mut vec![0.0; m * k]);
        let qr = matmul(&q, &r, m, k, k);
        for (x, y) in qr.iter().zip(&a) {
            assert!((x - y).abs() < 1e-12);
        }
        for c1 in 0..k {
            for c2 in 0..k {
                let d: f64 = (0..m).map(|i| q[i * k + c1] * q[i * k + c2]).sum();
                let e = if c1 == c2 { 1.0 } else { 0.0 };
                assert!((d - e).abs() < 1e-12, "Q^T Q ({c1},{c2}) = {d}");
            }
        }
        assert!(r[3 * k + 3].abs() < 1e-12);
    }
}
