//! Prolongator smoothing on several ranks: `P = P0 - omega D^{-1} A P0` for a rank's owned
//! rows, through the serial kernels (`linalg::spgemm`, `linalg::smooth_prolongator_in_place`)
//! on local matrices numbered by serial ids, so the sums run in the serial order and the result
//! is the serial one, bit for bit, for the same `omega`.
//!
//! The rows of `P0` that the owned rows of `A` reach on other ranks (`P_oth`) come through a
//! [`RowGatherPlan`]; the local `A` has the owned rows with every column (owned and ghost
//! vertices) ordered by serial id, the local `P0` the rows of those vertices with the coarse
//! columns ordered by serial coarse id.

use std::collections::BTreeMap;

use linalg::dist::{DistBsr, DistPattern, RowGatherPlan};
use linalg::gpu::{gather_blocks_two, CudaContext, DeviceBuffer, TwoSources};
use linalg::{row_offsets, BlockPattern, Bsr, SmoothingMap, SpgemmPlan};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::dist_galerkin::{ALocal, GalerkinProductPlan};
use crate::dist_tentative::DistTentative;
use crate::{AmgError, PointBlockJacobi};

/// A rank's local view of `P` numbered by serial ids, for products with `A`: the rows of `P`
/// of every local vertex of `A` (owned and ghost; `P_oth` gathered by `plan`) in serial order,
/// `P`'s owned rows, the coarse columns (global ids) ordered by serial coarse id, and each
/// local vertex's serial position (the column order of the local `A`, [`a_local`]). Its
/// values live where the `P` they were gathered from lives (on a GPU gathered there, `P_oth`
/// GPU to GPU: [`DeviceViewFill`]).
#[derive(Debug)]
struct PView {
    plan: RowGatherPlan,
    p_oth: Bsr,
    p_ext: Bsr,
    p_owned: Bsr,
    coarse_globals: Vec<u64>,
    position: Vec<u32>,
    /// `P`'s column partition (the coarse vertices).
    p_owned_partition: linalg::dist::RowPartition,
    /// The pattern of the `P` the view was made of (a new `P` on it needs only new values:
    /// [`PView::refresh_values`]).
    p_pattern: Arc<DistPattern>,
    /// Where each block of `p_ext` comes from: `(0, slot)` of `P.diag`, `(1, slot)` of
    /// `P.offd`, `(2, slot)` of `P_oth`. `P_owned`'s rows are `P_ext`'s at the owned vertices'
    /// serial positions.
    ext_sources: Vec<(u8, u32)>,
    /// The fills' index lists on the view's GPU (made by its first fill there).
    device_fill: Option<DeviceViewFill>,
}

/// `m`'s blocks copied from `parts` (`P.diag`, `P.offd`, `P_oth` values) as `sources` says.
fn fill_from_sources(
    m: &mut Bsr,
    sources: &[(u8, u32)],
    parts: [&[f64]; 3],
) -> Result<(), AmgError> {
    let bl = m.block_len();
    m.host_mut()?
        .par_chunks_mut(bl.max(1))
        .zip(sources.par_iter())
        .for_each(|(v, &(part, s))| {
            let s = s as usize;
            v.copy_from_slice(&parts[part as usize][s * bl..(s + 1) * bl]);
        });
    Ok(())
}

/// A [`PView`]'s fills on a GPU, two block gathers: `P_owned`'s blocks from `P`'s `diag`
/// (`owned_from_p[i] < diag nnz`) and `offd` (`diag nnz +` slot), then `P_ext`'s from
/// `P_owned` (`ext_from[i] < P_owned nnz`) and `P_oth` (`P_owned nnz +` slot).
#[derive(Debug)]
struct DeviceViewFill {
    owned_from_p: DeviceBuffer<u32>,
    ext_from: DeviceBuffer<u32>,
}

impl DeviceViewFill {
    /// The index lists of `view` (for a `P` whose `diag` and `offd` hold `n_diag` and
    /// `n_offd` blocks) on `ctx`'s GPU; an error where an index would pass `u32`.
    fn new(
        view: &PView,
        (n_diag, n_offd): (usize, usize),
        ctx: &CudaContext,
    ) -> Result<Self, AmgError> {
        let ext_ptr = view.p_ext.pattern().row_ptr();
        let owned_ptr = view.p_owned.pattern().row_ptr();
        let n_owned_nnz = view.p_owned.pattern().nnz();
        for (what, n) in [
            (
                "device view of P: blocks of P's diag and offd",
                n_diag + n_offd,
            ),
            (
                "device view of P: blocks of P_owned and P_oth",
                n_owned_nnz + view.p_oth.pattern().nnz(),
            ),
        ] {
            if n > u32::MAX as usize {
                return Err(AmgError::DimensionMismatch {
                    what,
                    expected: u32::MAX as usize,
                    found: n,
                });
            }
        }
        // each `P_ext` row: the owned vertex at its serial position, or none (a ghost row)
        let n_owned = owned_ptr.len() - 1;
        let owned_at: Vec<u32> = linalg::inverse_permutation(&view.position)
            .into_par_iter()
            .map(|v| if (v as usize) < n_owned { v } else { u32::MAX })
            .collect();
        let mut ext_from = vec![0u32; view.ext_sources.len()];
        linalg::fill_rows(ext_ptr, &mut ext_from, |r, row| match owned_at[r] {
            u32::MAX => {
                let sources = &view.ext_sources[ext_ptr[r]..ext_ptr[r + 1]];
                for (e, &(_, s)) in row.iter_mut().zip(sources) {
                    *e = n_owned_nnz as u32 + s;
                }
            }
            v => {
                let first = owned_ptr[v as usize] as u32;
                for (j, e) in row.iter_mut().enumerate() {
                    *e = first + j as u32;
                }
            }
        });
        let mut owned_from_p = vec![0u32; n_owned_nnz];
        linalg::fill_rows(owned_ptr, &mut owned_from_p, |v, row| {
            let r = view.position[v] as usize;
            let sources = &view.ext_sources[ext_ptr[r]..ext_ptr[r + 1]];
            for (o, &(part, s)) in row.iter_mut().zip(sources) {
                *o = if part == 0 { s } else { n_diag as u32 + s };
            }
        });
        Ok(Self {
            owned_from_p: ctx.upload(&owned_from_p)?,
            ext_from: ctx.upload(&ext_from)?,
        })
    }
}

impl PView {
    /// Collective. New values of `p` (on the pattern the view was made of, on every rank):
    /// `P_oth` gathered again and `P_ext`, `P_owned` refilled; the structure stays. Returns
    /// the `P` values this rank sent.
    fn refresh_values(&mut self, p: &DistBsr) -> Result<usize, AmgError> {
        if !Arc::ptr_eq(p.pattern(), &self.p_pattern) {
            return Err(AmgError::InvalidParameter {
                name: "distributed prolongator view",
                value: "a new P".into(),
                reason: "must be on the pattern the view was made of (an internal error)",
            });
        }
        let device = p.device();
        if !device.same_as(&self.p_ext.device()) {
            // the view follows `P` (its values, gathered already, kept)
            self.p_oth = self.p_oth.to_device(&device)?;
            self.p_ext = self.p_ext.to_device(&device)?;
            self.p_owned = self.p_owned.to_device(&device)?;
            self.device_fill = None;
        }
        let sent = self.plan.update(p, &mut self.p_oth)?;
        self.fill_values(p)?;
        Ok(sent)
    }

    /// `P_ext` and `P_owned` filled from `p`'s parts and `P_oth` where they live (local).
    fn fill_values(&mut self, p: &DistBsr) -> Result<(), AmgError> {
        if let Some(ctx) = self.p_ext.device().cuda_context().cloned() {
            let n_diag = p.diag().pattern().nnz();
            if self.device_fill.is_none() {
                let n_offd = p.offd().pattern().nnz();
                self.device_fill = Some(DeviceViewFill::new(self, (n_diag, n_offd), &ctx)?);
            }
            let fill = self.device_fill.as_ref().expect("made above");
            let bl = self.p_ext.block_len();
            gather_blocks_two(
                &ctx,
                bl,
                &fill.owned_from_p,
                TwoSources {
                    n0: n_diag,
                    a: p.diag().device_bsr()?.values(),
                    b: p.offd().device_bsr()?.values(),
                },
                self.p_owned.device_bsr_mut()?.values_mut(),
            )?;
            gather_blocks_two(
                &ctx,
                bl,
                &fill.ext_from,
                TwoSources {
                    n0: self.p_owned.pattern().nnz(),
                    a: self.p_owned.device_bsr()?.values(),
                    b: self.p_oth.device_bsr()?.values(),
                },
                self.p_ext.device_bsr_mut()?.values_mut(),
            )?;
            return Ok(());
        }
        let parts = [p.diag().host()?, p.offd().host()?, self.p_oth.host()?];
        fill_from_sources(&mut self.p_ext, &self.ext_sources, parts)?;
        // P_owned: each owned row the P_ext row at the vertex's serial position
        let bl = self.p_ext.block_len();
        let ext_ptr = self.p_ext.pattern().row_ptr();
        let owned_ptr = self.p_owned.pattern().row_ptr().to_vec();
        let position = &self.position;
        let ext_values = self.p_ext.host()?;
        let out = self.p_owned.host_mut()?;
        linalg::split_rows(&owned_ptr, bl, ROWS_PER_TASK, out)
            .into_par_iter()
            .for_each(|(rows, values)| {
                let mut at = 0;
                for v in rows {
                    let r = position[v] as usize;
                    let (start, end) = (ext_ptr[r], ext_ptr[r + 1]);
                    let len = (end - start) * bl;
                    values[at..at + len].copy_from_slice(&ext_values[start * bl..end * bl]);
                    at += len;
                }
            });
        Ok(())
    }
}

/// Collective: gathers `P_oth` and builds the [`PView`] of `p` for `a` (`coarse_serial_ids` of
/// `p`'s owned coarse columns; `serial_ids` of `a`'s local vertices, owned then ghosts).
fn p_view(
    a: &DistBsr,
    serial_ids: &[u64],
    p: &DistBsr,
    coarse_serial_ids: &[u64],
) -> Result<PView, AmgError> {
    let pp = p.pattern();
    let coarse_partition = pp.col_partition();
    let comm = coarse_partition.comm().clone();
    let size = comm.size();
    let ap = a.pattern();
    let (bs, k) = (pp.block_rows(), pp.block_cols());
    let n = ap.partition().n_owned();
    let ghosts = ap.halo().ghosts();
    let n_local = n + ghosts.len();
    if serial_ids.len() != n_local {
        return Err(AmgError::DimensionMismatch {
            what: "distributed AMG: serial ids of A's owned and ghost vertices",
            expected: n_local,
            found: serial_ids.len(),
        });
    }
    // P_oth: P's rows of A's ghost vertices (where P lives).
    let plan = RowGatherPlan::new(ap.halo(), p)?;
    let mut p_oth = plan.new_matrix_on(&p.device())?;
    plan.update(p, &mut p_oth)?;

    // A local row's blocks: (0, slot) of `P.diag`, (1, slot) of `P.offd` (owned rows), (2,
    // slot) of `P_oth` (ghost rows), each with its coarse global column.
    let first_c = coarse_partition.owned_range().start;
    let p_ghosts = pp.halo().ghosts();
    let (pd, po, oth) = (
        p.diag().pattern(),
        p.offd().pattern(),
        p_oth.pattern().clone(),
    );
    let oth_globals = plan.col_globals();
    let n_coarse = coarse_partition.global_len() as usize;
    let beyond = |c: u64| AmgError::DimensionMismatch {
        what: "distributed AMG: coarse column beyond the coarse vertices",
        expected: n_coarse,
        found: c as usize,
    };

    // The coarse columns of the local rows (every block of `P.diag`, `P.offd` and `P_oth`),
    // ascending, and the serial coarse ids of those from their owners. The columns are marked
    // in parallel; the first one beyond the coarse vertices (in the order `P.diag`, `P.offd`,
    // `P_oth`) is the error.
    let used: Vec<AtomicBool> = (0..n_coarse).map(|_| AtomicBool::new(false)).collect();
    let mark = |c: u64| match used.get(c as usize) {
        Some(u) => {
            if !u.load(Ordering::Relaxed) {
                u.store(true, Ordering::Relaxed);
            }
            true
        }
        None => false,
    };
    let diag_cols = pd.col_idx().par_iter().map(|&c| first_c + u64::from(c));
    let offd_cols = po.col_idx().par_iter().map(|&c| p_ghosts[c as usize]);
    let oth_cols = oth.col_idx().par_iter().map(|&c| oth_globals[c as usize]);
    let all_marked = diag_cols
        .chain(offd_cols)
        .chain(oth_cols)
        .with_min_len(4096)
        .map(mark)
        .all(|ok| ok);
    if !all_marked {
        let columns = pd
            .col_idx()
            .iter()
            .map(|&c| first_c + u64::from(c))
            .chain(po.col_idx().iter().map(|&c| p_ghosts[c as usize]))
            .chain(oth.col_idx().iter().map(|&c| oth_globals[c as usize]));
        for c in columns {
            if c as usize >= n_coarse {
                return Err(beyond(c));
            }
        }
    }
    let needed: Vec<u64> = (0..n_coarse as u64)
        .filter(|&c| used[c as usize].load(Ordering::Relaxed))
        .collect();
    drop(used);
    let mut ask = vec![Vec::new(); size];
    let mut owners = Vec::with_capacity(needed.len());
    for &c in &needed {
        let owner = coarse_partition.owner(c).ok_or_else(|| beyond(c))?;
        ask[owner].push(c);
        owners.push(owner);
    }
    let asked = comm.alltoallv_u64(&ask)?;
    let replies: Vec<Vec<u64>> = asked
        .iter()
        .map(|q| {
            q.iter()
                .map(|&c| coarse_serial_ids[(c - first_c) as usize])
                .collect()
        })
        .collect();
    let answers = comm.alltoallv_u64(&replies)?;
    // the answers in the order of `needed` (each owner's in the order it was asked)
    let mut next = vec![0usize; size];
    let mut by_serial: Vec<(u64, u32)> = Vec::with_capacity(needed.len());
    for (i, &owner) in owners.iter().enumerate() {
        let serial = *answers[owner]
            .get(next[owner])
            .ok_or(AmgError::DimensionMismatch {
                what: "distributed AMG: serial ids of coarse columns from their owner",
                expected: ask[owner].len(),
                found: answers[owner].len(),
            })?;
        next[owner] += 1;
        by_serial.push((serial, i as u32));
    }
    by_serial.par_sort_unstable();
    // the local column of each coarse global column used here: its place in serial order
    let mut local_col = vec![u32::MAX; n_coarse];
    for (local, &(_, i)) in by_serial.iter().enumerate() {
        local_col[needed[i as usize] as usize] = local as u32;
    }
    let n_cols = by_serial.len();

    // Local vertices by serial id: the column order of the local A and row order of P_ext.
    // (the stable sort, which merges runs: the owned vertices and the ghosts each come mostly
    // in serial order; the ids are distinct, so it is the unstable sort's order)
    let mut order: Vec<u32> = (0..n_local as u32).collect();
    order.par_sort_by_key(|&v| serial_ids[v as usize]);
    let position = linalg::inverse_permutation(&order);

    // P_ext: the rows of every local vertex in serial order (columns in local order), and
    // its blocks' sources.
    let row_len = |v: usize| {
        if v < n {
            pd.row(v).len() + po.row(v).len()
        } else {
            oth.row(v - n).len()
        }
    };
    let ext_ptr = row_offsets(n_local, |i| row_len(order[i] as usize));
    let n_ext = ext_ptr[n_local];
    let (mut ext_col, mut ext_sources) = (vec![0u32; n_ext], vec![(0u8, 0u32); n_ext]);
    // (groups of rows in parallel, each row sorted in a buffer of its task: the columns and
    // the sources written straight into their arrays)
    let tasks: Vec<_> = linalg::split_rows(&ext_ptr, 1, ROWS_PER_TASK, &mut ext_col)
        .into_iter()
        .zip(linalg::split_rows(
            &ext_ptr,
            1,
            ROWS_PER_TASK,
            &mut ext_sources,
        ))
        .collect();
    tasks
        .into_par_iter()
        .for_each(|((rows, cols), (_, sources))| {
            let first = ext_ptr[rows.start];
            let mut row: Vec<(u32, u8, u32)> = Vec::new();
            for i in rows {
                let v = order[i] as usize;
                row.clear();
                let mut put = |c: u64, part: u8, s: usize| {
                    row.push((local_col[c as usize], part, s as u32));
                };
                if v < n {
                    for s in pd.row_ptr()[v]..pd.row_ptr()[v + 1] {
                        put(first_c + u64::from(pd.col_idx()[s]), 0, s);
                    }
                    for s in po.row_ptr()[v]..po.row_ptr()[v + 1] {
                        put(p_ghosts[po.col_idx()[s] as usize], 1, s);
                    }
                } else {
                    let j = v - n;
                    for s in oth.row_ptr()[j]..oth.row_ptr()[j + 1] {
                        put(oth_globals[oth.col_idx()[s] as usize], 2, s);
                    }
                }
                // a coarse column appears once in a row
                row.sort_unstable_by_key(|&(c, _, _)| c);
                let at = ext_ptr[i] - first;
                for (j, &(c, part, s)) in row.iter().enumerate() {
                    cols[at + j] = c;
                    sources[at + j] = (part, s);
                }
            }
        });

    // P_owned: the owned rows, each the P_ext row at the vertex's serial position (the same
    // blocks and columns)
    let ext_row = |v: usize| {
        let r = position[v] as usize;
        ext_ptr[r]..ext_ptr[r + 1]
    };
    let owned_ptr = row_offsets(n, |v| ext_row(v).len());
    let mut owned_col = vec![0u32; owned_ptr[n]];
    linalg::fill_rows(&owned_ptr, &mut owned_col, |v, row| {
        row.copy_from_slice(&ext_col[ext_row(v)]);
    });
    let ext_pattern = BlockPattern::new(n_local, n_cols, ext_ptr, ext_col)?;
    let owned_pattern = BlockPattern::new(n, n_cols, owned_ptr, owned_col)?;
    let device = p.device();
    let coarse_globals = by_serial.iter().map(|&(_, i)| needed[i as usize]).collect();
    let mut view = PView {
        plan,
        p_oth,
        p_ext: Bsr::zeros_on(&device, ext_pattern.into(), bs, k)?,
        p_owned: Bsr::zeros_on(&device, owned_pattern.into(), bs, k)?,
        coarse_globals,
        position,
        p_owned_partition: coarse_partition.clone(),
        p_pattern: p.pattern().clone(),
        ext_sources,
        device_fill: None,
    };
    view.fill_values(p)?;
    Ok(view)
}

/// Rows per parallel task of the views' row copies.
const ROWS_PER_TASK: usize = 256;

/// The owned rows of `a` as a local matrix whose columns are the local vertices at their serial
/// `position` (local: no messages).
fn a_local(a: &DistBsr, position: &[u32]) -> Result<Bsr, AmgError> {
    let (pattern, gather) = crate::dist_galerkin::a_local_symbolic(a, position)?;
    let bsa = a.diag().block_rows();
    let mut local = Bsr::zeros_on(&linalg::Device::Host, pattern, bsa, bsa)?;
    crate::dist_galerkin::gather_a_local(&gather, a.diag().pattern().nnz(), a, &mut local)?;
    Ok(local)
}

/// Collective. The smoothed prolongator's owned rows (a rectangular [`DistBsr`] on `t`'s
/// partitions). `serial_ids` are the serial ids of `a`'s local vertices (owned, then ghosts:
/// its strength graph's), `t` the tentative prolongator, `pbj` the point-block Jacobi of `a`'s
/// diagonal part (`D^{-1}`).
pub fn dist_smooth_prolongator(
    a: &DistBsr,
    serial_ids: &[u64],
    t: &DistTentative,
    pbj: &PointBlockJacobi,
    omega: f64,
) -> Result<DistBsr, AmgError> {
    SmoothingPlan::new(a, serial_ids, t)?.numeric(a, t, pbj, omega)
}

/// The symbolic prolongator smoothing `P = P0 - omega D^{-1} A P0` of one level: the view of
/// `P0` (with its `P_oth` gather), the local `A`'s gather, the product's plan and `P`'s
/// pattern, for one pattern of `A` and of `P0`; [`SmoothingPlan::numeric`] makes `P` for new
/// values of both (a renewal that keeps the aggregates) without messages other than `P0`'s
/// ghost rows. Keeps no values of `A`.
#[derive(Debug)]
pub struct SmoothingPlan {
    view: PView,
    a_local: ALocal,
    product: SpgemmPlan,
    /// The smoothing's pattern pair: the product `A P0` and `P0`'s owned rows (checked once;
    /// on a GPU its slot maps made there once).
    smoothing_map: Arc<SmoothingMap>,
    /// `P`'s pattern, made of the product `A P0`'s (entry `e` of `P`'s pattern is slot `e` of
    /// the product): its slot entries are the slot map of `P`'s values (slot `s` of `P.diag`,
    /// `s < diag nnz`, or of `P.offd`, `diag nnz + s`, takes the product's block
    /// `slot_entries()[s]`, smoothed).
    p_pattern: Arc<DistPattern>,
    /// That slot map on a GPU (its ordinal), made there by the first device smoothing and
    /// kept with the plan: a device smoothing made anew (each `recompute` renewal's) uploads
    /// none.
    device_p_slots: Mutex<Option<(usize, Arc<DevicePSlots>)>>,
}

/// [`SmoothingPlan`]'s slot map of `P`'s values on a GPU, split at `P.diag`'s slots:
/// `diag[s]` (`offd[s]`) is the block of the product `A P0` that slot `s` of `P.diag`
/// (`P.offd`) takes.
#[derive(Debug)]
pub(crate) struct DevicePSlots {
    pub(crate) diag: DeviceBuffer<u32>,
    pub(crate) offd: DeviceBuffer<u32>,
}

impl SmoothingPlan {
    /// Collective: the plan for `a` (`serial_ids`: of its local vertices, owned then ghosts) and
    /// the tentative prolongator `t` (its pattern and coarse vertices; its values are gathered).
    pub fn new(a: &DistBsr, serial_ids: &[u64], t: &DistTentative) -> Result<Self, AmgError> {
        let view = p_view(a, serial_ids, &t.p, &t.coarse_serial_ids)?;
        let a_local = ALocal::new(a, &view.position)?;

        let product = crate::dist_galerkin::symbolic_product(
            &a.device(),
            &a_local.pattern,
            view.p_ext.pattern(),
        )?;
        let wp = product.pattern();

        let cols: Vec<u64> = wp
            .col_idx()
            .par_iter()
            .map(|&c| view.coarse_globals[c as usize])
            .collect();
        let pp = t.p.pattern();
        let p_pattern = DistPattern::new_rect(
            a.pattern().partition().clone(),
            t.coarse_partition.clone(),
            pp.block_rows(),
            pp.block_cols(),
            wp.row_ptr(),
            &cols,
        )?;
        let smoothing_map = Arc::new(SmoothingMap::new(wp, view.p_owned.pattern())?);
        Ok(Self {
            view,
            a_local,
            product,
            smoothing_map,
            p_pattern,
            device_p_slots: Mutex::new(None),
        })
    }

    /// Collective. New values of the tentative prolongator `p0` (the plan's pattern): `P0`'s
    /// ghost rows gathered and its local view ([`Self::p0_view`]) refilled.
    pub(crate) fn refresh_p0(&mut self, p0: &DistBsr) -> Result<(), AmgError> {
        self.view.refresh_values(p0).map(drop)
    }

    /// `P0`'s local view: `P_ext` (the rows of every local vertex, the right operand of
    /// `A P0`) and `P_owned` (the owned rows), as the last numeric phase or
    /// [`Self::refresh_p0`] left them.
    pub(crate) fn p0_view(&self) -> (&Bsr, &Bsr) {
        (&self.view.p_ext, &self.view.p_owned)
    }

    /// The local `A` (symbolic) of the plan, for the level's Galerkin plan
    /// ([`GalerkinPlan::share_a_local`]).
    pub(crate) fn a_local(&self) -> &ALocal {
        &self.a_local
    }

    /// The symbolic product `A_local P_ext`.
    pub(crate) fn product(&self) -> &SpgemmPlan {
        &self.product
    }

    /// The smoothing's patterns: the product `A P0` and `P0`'s owned rows.
    pub(crate) fn smoothing_map(&self) -> &Arc<SmoothingMap> {
        &self.smoothing_map
    }

    /// `P`'s pattern (the same `Arc` for every numeric phase).
    pub(crate) fn p_pattern(&self) -> &Arc<DistPattern> {
        &self.p_pattern
    }

    /// The slot map from the smoothed product to `P`'s `diag` and `offd` on `ctx`'s GPU (see
    /// the field): uploaded at the first call there, then kept.
    pub(crate) fn device_p_slots(&self, ctx: &CudaContext) -> Result<Arc<DevicePSlots>, AmgError> {
        let mut held = self
            .device_p_slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((ordinal, slots)) = held.as_ref() {
            if *ordinal == ctx.ordinal() {
                return Ok(slots.clone());
            }
        }
        let slot_entries = self.p_pattern.slot_entries();
        let (diag, offd) = slot_entries.split_at(self.p_pattern.diag().nnz());
        let slots = Arc::new(DevicePSlots {
            diag: ctx.upload(diag)?,
            offd: ctx.upload(offd)?,
        });
        *held = Some((ctx.ordinal(), slots.clone()));
        Ok(slots)
    }

    /// Collective. `P` for the values of `a` (the plan's pattern) and of `t.p` (the plan's
    /// `P0` pattern), `pbj` (`D^{-1}` of `a`'s diagonal part) and `omega`, on the plan's `P`
    /// pattern (the same `Arc` for every call): the serial kernels' bits (see the module doc).
    pub fn numeric(
        &mut self,
        a: &DistBsr,
        t: &DistTentative,
        pbj: &PointBlockJacobi,
        omega: f64,
    ) -> Result<DistBsr, AmgError> {
        self.view.refresh_values(&t.p)?;
        let bsa = a.diag().block_rows();
        let mut a_local = Bsr::zeros(self.a_local.pattern.clone(), bsa, bsa);
        let n_diag = a.diag().pattern().nnz();
        let gather = self.a_local.host_gather()?;
        crate::dist_galerkin::gather_a_local(gather, n_diag, a, &mut a_local)?;
        let k = self.view.p_ext.block_cols();
        let mut w = Bsr::zeros(self.product.pattern().clone(), bsa, k);
        linalg::spgemm_numeric(&self.product, &a_local, &self.view.p_ext, &mut w)?;
        drop(a_local);
        let map = &self.smoothing_map;
        linalg::smooth_prolongator_mapped(map, &mut w, omega, pbj.inverse(), &self.view.p_owned)?;
        Ok(DistBsr::from_values(self.p_pattern.clone(), w.host()?)?)
    }
}

/// Collective. The Galerkin product `A_c = P^T A P` as a square [`DistBsr`] on the coarse
/// partition (`p`'s columns; `coarse_serial_ids` of its owned coarse vertices), through a
/// one-off [`GalerkinPlan`].
pub fn dist_galerkin(
    a: &DistBsr,
    serial_ids: &[u64],
    p: &DistBsr,
    coarse_serial_ids: &[u64],
) -> Result<DistBsr, AmgError> {
    let mut plan = GalerkinPlan::new(a, serial_ids, p, coarse_serial_ids)?;
    Ok(plan.product(a, p)?.0)
}

/// The Galerkin product `P^T A P` for a fixed `P` and changing values of `A` (Newton's hot
/// updates): `P`'s local view (with `P_oth`, gathered once) is kept with the symbolic product
/// ([`GalerkinProductPlan`]: the local `A`'s gather, the two products' plans, the reduction's
/// send lists and sums), so a product whose `P` has the version last gathered sends no `P`
/// values (counted by [`GalerkinPlan::product`]) and runs numeric phases only.
#[derive(Debug)]
pub struct GalerkinPlan {
    view: PView,
    coarse_serial_ids: Vec<u64>,
    /// The serial ids of `A`'s local vertices (owned, then ghosts): all a new view needs of
    /// its strength graph.
    serial_ids: Vec<u64>,
    /// The symbolic product for the current view, made by the first product after the view.
    planned: Option<GalerkinProductPlan>,
    /// The local `A` of the last symbolic product (or of the level's smoothing plan): reused
    /// by the next one where `A`'s pattern and the view's column order are the same.
    a_local: Option<ALocal>,
    /// Bytes of partial coarse blocks the last product sent to other ranks.
    last_sent_bytes: u64,
}

impl GalerkinPlan {
    /// Collective: `P`'s view for `a`'s local vertices (`serial_ids`: theirs, owned then ghosts;
    /// `coarse_serial_ids` of `p`'s owned coarse vertices).
    pub fn new(
        a: &DistBsr,
        serial_ids: &[u64],
        p: &DistBsr,
        coarse_serial_ids: &[u64],
    ) -> Result<Self, AmgError> {
        Ok(Self {
            view: p_view(a, serial_ids, p, coarse_serial_ids)?,
            coarse_serial_ids: coarse_serial_ids.to_vec(),
            serial_ids: serial_ids.to_vec(),
            planned: None,
            a_local: None,
            last_sent_bytes: 0,
        })
    }

    /// Offers the level's local `A` (made by its smoothing plan, [`SmoothingPlan::a_local`])
    /// to the symbolic products: used where it fits `A` and `P`'s view (the same bits as one
    /// made anew).
    pub(crate) fn share_a_local(&mut self, a_local: &ALocal) {
        self.a_local = Some(a_local.clone());
    }

    /// Collective: refreshes `P_oth` from `p` and agrees, in one reduction, whether some rank's
    /// `p` changed since the last gather (then the view again, structure and values) and
    /// whether the symbolic product must be made (a new view, or `a` not on the plan's
    /// pattern on some rank), which it then makes if `symbolic`. Returns the `P` values this
    /// rank sent.
    fn refresh(&mut self, a: &DistBsr, p: &DistBsr, symbolic: bool) -> Result<usize, AmgError> {
        let sent = self.view.plan.update(p, &mut self.view.p_oth)?;
        let fits = self.planned.as_ref().is_some_and(|pl| pl.fits(a));
        let comm = p.pattern().col_partition().comm().clone();
        let mut flags = [sent as f64, f64::from(u8::from(!fits))];
        comm.allreduce_max(&mut flags)
            .map_err(linalg::LinalgError::from)?;
        if flags[0] > 0.0 {
            self.view = p_view(a, &self.serial_ids, p, &self.coarse_serial_ids)?;
            self.planned = None;
        }
        if symbolic && (flags[0] > 0.0 || flags[1] > 0.0) {
            let v = &self.view;
            let a_local = ALocal::reuse_or_new(self.a_local.as_ref(), a, &v.position)?;
            self.a_local = Some(a_local.clone());

            self.planned = Some(GalerkinProductPlan::new(
                a,
                a_local,
                &v.p_ext,
                &v.p_owned,
                &v.coarse_globals,
                &v.p_owned_partition,
            )?);
        }
        Ok(sent)
    }

    /// Collective. `P^T A P` for new values of `p` on the pattern of the `P` of the last
    /// product (a renewal that keeps the aggregates: `P0`'s and so `P`'s pattern stay) and of
    /// `a` on the plan's: `P_oth` and the view's values gathered again, `P_owned^T` refilled,
    /// every symbolic product and the coarse pattern (`Arc`) kept; the bits of
    /// [`GalerkinPlan::product`] with the same inputs. Where some rank's `p` or `a` is on
    /// another pattern, or no product was made yet, it is [`GalerkinPlan::product`].
    pub fn renew(&mut self, a: &DistBsr, p: &DistBsr) -> Result<DistBsr, AmgError> {
        let fits = std::sync::Arc::ptr_eq(p.pattern(), &self.view.p_pattern)
            && self.planned.as_ref().is_some_and(|pl| pl.fits(a));
        let comm = p.pattern().col_partition().comm().clone();
        let mut misfit = [f64::from(u8::from(!fits))];
        comm.allreduce_max(&mut misfit)
            .map_err(linalg::LinalgError::from)?;
        if misfit[0] > 0.0 {
            return Ok(self.product(a, p)?.0);
        }
        self.view.refresh_values(p)?;
        let plan = self.planned.as_mut().ok_or(AmgError::InvalidParameter {
            name: "distributed Galerkin plan",
            value: "missing".into(),
            reason: "must be made before a renewal (an internal error)",
        })?;
        plan.refresh_transpose(&self.view.p_owned)?;
        let (ac, bytes) = plan.numeric(a, &self.view.p_ext)?;
        self.last_sent_bytes = bytes;
        Ok(ac)
    }

    /// Collective. For new values of `p` on the pattern of the `P` of the last product (a
    /// renewal that keeps the aggregates): `P_oth` and the view's values gathered again and
    /// `P_owned^T` refilled, as [`GalerkinPlan::renew`] does before its numeric phase; returns
    /// the symbolic product and `P_ext` for a device copy (the kept renewal of a level on a
    /// GPU, `dist_cycle::device_renewal`). An error where `p` is on
    /// another pattern or no product was made yet.
    pub(crate) fn refresh_for(
        &mut self,
        p: &DistBsr,
    ) -> Result<(&GalerkinProductPlan, &Bsr), AmgError> {
        if !std::sync::Arc::ptr_eq(p.pattern(), &self.view.p_pattern) || self.planned.is_none() {
            return Err(AmgError::InvalidParameter {
                name: "distributed Galerkin plan",
                value: "another prolongator pattern".into(),
                reason: "must be the kept plan's (an internal error)",
            });
        }
        self.view.refresh_values(p)?;
        let plan = self.planned.as_mut().ok_or(AmgError::MissingFineOperator)?;
        plan.refresh_transpose(&self.view.p_owned)?;
        Ok((plan, &self.view.p_ext))
    }

    /// Collective. The symbolic product for `a` (the pattern the plan is made for) and `p`
    /// (refreshed as [`GalerkinPlan::product`] refreshes it) without a host numeric phase, and
    /// `P_ext`: a cold coarsening of a level on a GPU, whose product runs there
    /// (`dist_cycle::device`).
    pub(crate) fn plan_for(
        &mut self,
        a: &DistBsr,
        p: &DistBsr,
    ) -> Result<(&GalerkinProductPlan, &Bsr), AmgError> {
        self.refresh_planned(a, p)?;
        let plan = self.planned.as_ref().ok_or(AmgError::MissingFineOperator)?;
        Ok((plan, &self.view.p_ext))
    }

    /// Drops the host product's value buffers (see
    /// [`crate::dist_galerkin::GalerkinProductPlan::release_values`]); the plan stays.
    pub fn release_values(&mut self) {
        if let Some(plan) = &mut self.planned {
            plan.release_values();
        }
    }

    /// Collective. `P^T A P` for the current values of `a` (the pattern the plan was built
    /// for) and `p`, and the `P` values this rank sent for it: 0 unless some rank's `p` changed
    /// since the last product (then `P_oth`, the view and the symbolic product are made
    /// again). Each rank multiplies its owned fine rows (`P_owned^T (A P)_owned`, serial
    /// kernels) and sends every partial coarse block to its owner in one all-to-all of values;
    /// owners add the partials in rank order, so the result is bit-identical for a fixed rank
    /// count (and equal to the serial product to rounding), and equal to
    /// [`GalerkinPlan::product_reference`]'s bits. The result's pattern is the same `Arc` for
    /// every product of one symbolic product.
    pub fn product(&mut self, a: &DistBsr, p: &DistBsr) -> Result<(DistBsr, usize), AmgError> {
        let sent = self.refresh_planned(a, p)?;
        let plan = self.planned.as_mut().expect("made by refresh_planned");
        let (ac, bytes) = plan.numeric(a, &self.view.p_ext)?;
        self.last_sent_bytes = bytes;
        Ok((ac, sent))
    }

    /// Collective. [`GalerkinPlan::product`] into `ac`, the coarse operator of the previous
    /// product: its values overwritten in place where the symbolic product is still the one
    /// `ac` came from (a hot update: no allocation), else replaced by a new operator. The same
    /// bits either way; returns the `P` values this rank sent.
    pub fn product_into(
        &mut self,
        a: &DistBsr,
        p: &DistBsr,
        ac: &mut DistBsr,
    ) -> Result<usize, AmgError> {
        let sent = self.refresh_planned(a, p)?;
        let plan = self.planned.as_mut().expect("made by refresh_planned");
        let bytes = if std::sync::Arc::ptr_eq(ac.pattern(), plan.coarse_pattern())
            && ac.device().is_host()
        {
            plan.numeric_into(a, &self.view.p_ext, ac)?
        } else {
            let (fresh, bytes) = plan.numeric(a, &self.view.p_ext)?;
            *ac = fresh;
            bytes
        };
        self.last_sent_bytes = bytes;
        Ok(sent)
    }

    /// Collective. The refresh of a product (see [`GalerkinPlan::product`]) with its symbolic
    /// product made; the `P` values this rank sent.
    fn refresh_planned(&mut self, a: &DistBsr, p: &DistBsr) -> Result<usize, AmgError> {
        let sent = self.refresh(a, p, true)?;
        if self.planned.is_none() {
            return Err(AmgError::InvalidParameter {
                name: "distributed Galerkin plan",
                value: "missing".into(),
                reason: "must be made by the refresh before a product (an internal error)",
            });
        }
        Ok(sent)
    }

    /// Collective. [`GalerkinPlan::product`] without the symbolic split (the one-off path:
    /// symbolic products, the local `A` sorted, `P_owned^T` and the reduction's indices made
    /// for this call): the reference the planned product is tested against.
    pub fn product_reference(
        &mut self,
        a: &DistBsr,
        p: &DistBsr,
    ) -> Result<(DistBsr, usize), AmgError> {
        let sent = self.refresh(a, p, false)?;
        let view = &self.view;
        let ap = linalg::spgemm(&a_local(a, &view.position)?, &view.p_ext)?;
        let pt = linalg::transpose(&view.p_owned)?;
        let partial = linalg::spgemm(&pt, &ap)?;
        Ok((reduce_partial(&partial, &view.coarse_globals, p)?, sent))
    }

    /// The symbolic product of the last [`GalerkinPlan::product`] and `P_ext` (its right
    /// operand's values), for a device copy; `None` before the first product.
    pub fn current(&self) -> Option<(&GalerkinProductPlan, &Bsr)> {
        self.planned.as_ref().map(|p| (p, &self.view.p_ext))
    }

    /// Bytes of partial coarse blocks the last [`GalerkinPlan::product`] sent to other ranks.
    pub fn last_sent_bytes(&self) -> u64 {
        self.last_sent_bytes
    }
}

/// Sends every partial coarse row to its owner (one all-to-all) and adds the partials in rank
/// order: the owned coarse rows of `P^T A P` as a square [`DistBsr`].
fn reduce_partial(partial: &Bsr, coarse_globals: &[u64], p: &DistBsr) -> Result<DistBsr, AmgError> {
    let pp = p.pattern();
    let coarse = pp.col_partition();
    let comm = coarse.comm().clone();
    let k = pp.block_cols();
    let kk = k * k;
    // [row, n, (column, block)*n] per partial row, to the row's owner.
    let mut send = vec![Vec::new(); comm.size()];
    let cp = partial.pattern();
    let values = partial.host()?;
    for r in 0..cp.n_block_rows() {
        let row = coarse_globals[r];
        let owner = coarse.owner(row).expect("a coarse column of P");
        let msg = &mut send[owner];
        msg.extend([row as f64, cp.row(r).len() as f64]);
        for s in cp.row_ptr()[r]..cp.row_ptr()[r + 1] {
            msg.push(coarse_globals[cp.col_idx()[s] as usize] as f64);
            msg.extend_from_slice(&values[s * kk..(s + 1) * kk]);
        }
    }
    let received = comm.alltoallv_f64(&send)?;
    let mut sums: BTreeMap<(u64, u64), Vec<f64>> = BTreeMap::new();
    for msg in &received {
        let mut at = 0;
        while at < msg.len() {
            let (row, m) = (msg[at] as u64, msg[at + 1] as usize);
            at += 2;
            for _ in 0..m {
                let col = msg[at] as u64;
                let block = &msg[at + 1..at + 1 + kk];
                match sums.get_mut(&(row, col)) {
                    Some(acc) => acc.iter_mut().zip(block).for_each(|(x, y)| *x += y),
                    None => {
                        sums.insert((row, col), block.to_vec());
                    }
                }
                at += 1 + kk;
            }
        }
    }
    let keys: Vec<(u64, u64)> = sums.keys().copied().collect();
    let pattern = crate::dist_galerkin::coarse_pattern(coarse, k, &keys)?;
    let vals: Vec<f64> = sums.into_values().flatten().collect();
    Ok(DistBsr::from_values(pattern, &vals)?)
}
