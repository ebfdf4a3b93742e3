//! The distributed V-cycle on one GPU per rank: [`DeviceDistHierarchy`], the levels of a
//! [`DistHierarchy`] uploaded (operators, prolongators and their transposes as device
//! [`DistBsr`] parts, point-block Jacobi inverted on the device), and the restriction's device
//! path ([`transpose_apply`]).
//!
//! The cold set-up stays on the host [`DistHierarchy`]; a renewal that keeps the aggregates
//! runs its numeric phases on the device ([`DeviceDistHierarchy::renew_kept`],
//! [`super::device_renewal`]). A hot update runs either on the device
//! ([`DeviceDistHierarchy::update`]: the new fine operator's values copied on the device, the
//! Galerkin products through [`device_update::DeviceGalerkin`], the point-block Jacobi
//! inverses and eigenvalue estimates on the device, the coarsest operator inverted on its
//! owner's GPU or, where several ranks hold it, downloaded for its dense factor: the host
//! update's bits, with scalars and the off-rank coarse blocks crossing) or on the host ([`DistHierarchy::update`], then
//! [`DeviceDistHierarchy::refresh`] uploads what changed: the operators' values, and a
//! prolongator only when its version changed). The V-cycle is the
//! host's (the one [`crate::vcycle::v_cycle`]) on device vectors: halo exchanges GPU to GPU through NCCL where
//! the ranks are connected (`linalg::dist::connect_rank_devices`), else staged through pinned
//! host memory. The coarsest level (at most `coarse_eq_limit` unknowns) is solved on its
//! owner's GPU where one rank holds it (`process_eq_limit` gathered it there:
//! [`super::device_coarse`], no host round trip), else redundantly on every rank's host (a
//! download of the owned right-hand side, an all-gather, a dense solve and an upload of the
//! owned solution). Every operation is the host's in the host's order, so the cycle's results
//! are the host cycle's bits.

use linalg::dist::DistBsr;
use linalg::gpu;
use linalg::{Device, Vector};

use super::device_coarse::CoarsestOnOwner;
use super::device_renewal::DeviceSmoothing;
use super::device_update::DeviceGalerkin;
use super::{CoarseSolve, DistHierarchy, DistTranspose};
use crate::hierarchy::build_smoother;
use crate::level_matrix::refresh_smoother;
use crate::params::{AmgParams, Reuse};
use crate::report::{MessageReport, SetupTimings, TransferReport, UpdateReport};
use crate::smoother::{Smoother, SmootherWork};
use crate::vcycle::{CycleLevels, LevelWork};
use crate::{AmgError, CycleWorkspace, PointBlockJacobi, Preconditioner};
use std::time::Instant;

/// `y = P^T x` for a GPU prolongator (see [`DistTranspose::apply`]): the transposed parts'
/// products on the device, then the ghost rows' contributions sent to their owners, which add
/// them rank after rank.
pub(super) fn transpose_apply(
    t: &DistTranspose,
    p: &DistBsr,
    x: &Vector,
    y: &mut Vector,
) -> Result<(), AmgError> {
    let device = t.diag_t.device();
    let ctx = device.cuda_context().expect("a device transpose");
    let xb = x.device_buffer()?;
    // the ghost rows' contributions first, so that the owned rows' product runs while they
    // travel (into the transpose's own scratch, made at the first call)
    let mut scratch = t.ghost.lock().unwrap_or_else(|p| p.into_inner());
    if scratch
        .as_ref()
        .is_none_or(|g| g.len() != t.offd_t.n_rows())
    {
        *scratch = Some(Vector::zeros_on(&device, t.offd_t.n_rows())?);
    }
    let ghost = scratch.as_mut().expect("made above");
    gpu::spmv(
        ctx,
        t.offd_t.device_bsr()?,
        1.0,
        xb,
        0.0,
        ghost.device_buffer_mut()?,
    )?;
    let mut halo = p.device_halo().ok_or(AmgError::InvalidParameter {
        name: "prolongator",
        value: p.device().name(),
        reason: "must be on the transpose's GPU",
    })?;
    let diag_t = t.diag_t.device_bsr()?;
    halo.add_ghost_contributions(ghost.device_buffer()?, y.device_buffer_mut()?, |y| {
        gpu::spmv(ctx, diag_t, 1.0, xb, 0.0, y)
    })?;
    Ok(())
}

/// One uploaded level; above the coarsest, the Galerkin product's device plan and the
/// eigenvalue estimate's start vector (hashed at the serial indices, uploaded once).
#[derive(Debug)]
pub(super) struct DeviceLevel {
    pub(super) a: DistBsr,
    pub(super) smoother: Option<Smoother>,
    pub(super) p: Option<(DistBsr, DistTranspose)>,
    pub(super) galerkin: Option<DeviceGalerkin>,
    pub(super) start: Option<Vector>,
    /// The kept prolongator smoothing's device plan (made by the first device kept renewal).
    pub(super) smoothing: Option<DeviceSmoothing>,
}

impl DeviceLevel {
    /// The smoother of level `l` refreshed from its operator's values in place (the inverses'
    /// diagonal slots stay on the device; the eigenvalue estimate from the level's start
    /// vector), as a hot update and a kept renewal both need it.
    pub(super) fn refresh_smoother(
        &mut self,
        l: usize,
        params: &AmgParams,
    ) -> Result<(), AmgError> {
        let (a_l, start, steps) = (&self.a, &self.start, params.eig_steps);
        self.smoother = Some(refresh_smoother(
            self.smoother.take(),
            l,
            params,
            |pbj| pbj.update(a_l.diag()),
            |pbj| {
                let start = start
                    .as_ref()
                    .ok_or(AmgError::EigenEstimateFailed { level: l })?;
                let mut r = start.zeros_like()?;
                r.copy_from(start)?;
                let (mut p, mut w) = (r.zeros_like()?, r.zeros_like()?);
                crate::eig::estimate_emax_from(a_l, pbj, steps, [&mut r, &mut p, &mut w])
            },
        )?);
        Ok(())
    }
}

impl CycleLevel for DeviceLevel {
    fn operator(&self) -> &DistBsr {
        &self.a
    }
    fn smoother(&self) -> Option<&Smoother> {
        self.smoother.as_ref()
    }
    fn transfer(&self) -> Option<(&DistBsr, &DistTranspose)> {
        self.p.as_ref().map(|(p, pt)| (p, pt))
    }
}

/// A [`DistHierarchy`]'s levels on this rank's GPU (see the module doc); a [`Preconditioner`]
/// for device vectors of the fine operator's owned layout.
#[derive(Debug)]
pub struct DeviceDistHierarchy {
    pub(super) device: Device,
    pub(super) levels: Vec<DeviceLevel>,
    pub(super) coarse: Coarsest,
    pub(super) params: AmgParams,
    /// Serial ids of the coarsest level's owned block rows (for its dense factor).
    pub(super) coarse_serial_ids: Vec<u64>,
    /// The V-cycle's vectors on the device (made at the first cycle).
    work: std::sync::Mutex<crate::CycleWorkspace>,
}

/// Where the coarsest level is solved: redundantly on every rank's host where several ranks
/// hold it, else on its owner's GPU ([`CoarsestOnOwner`]; the other ranks have no rows of it
/// and skip it).
#[derive(Debug)]
pub(super) enum Coarsest {
    Redundant(CoarseSolve),
    OnOwner(Box<CoarsestOnOwner>),
    Elsewhere,
}

impl Coarsest {
    /// The coarsest level's solver for the device operator `a` (`host`: the host hierarchy's
    /// redundant solve, its serial order); factored.
    fn new(a: &DistBsr, host: &CoarseSolve) -> Result<Self, AmgError> {
        let partition = a.pattern().partition();
        Ok(if partition.active_ranks() > 1 {
            Coarsest::Redundant(host.clone())
        } else if partition.n_owned() == 0 {
            Coarsest::Elsewhere
        } else {
            let mut owner = CoarsestOnOwner::new(a, &host.serial_of_global)?;
            owner.factor(a)?;
            Coarsest::OnOwner(Box::new(owner))
        })
    }

    /// After new values of the coarsest operator `a` (on the device): the factor anew
    /// (collective where redundant: the operator gathered on every rank's host; `serial_ids`
    /// of the owned block rows).
    pub(super) fn refactor(&mut self, a: &DistBsr, serial_ids: &[u64]) -> Result<(), AmgError> {
        match self {
            Coarsest::Redundant(solve) => {
                let coarsest = a.to_device(&Device::Host)?;
                *solve = super::gather_factor(&coarsest, serial_ids)?;
            }
            Coarsest::OnOwner(owner) => owner.factor(a)?,
            Coarsest::Elsewhere => {}
        }
        Ok(())
    }

    /// `x = A^{-1} b` on the coarsest level `a`.
    fn solve(&self, a: &DistBsr, b: &Vector, x: &mut Vector) -> Result<(), AmgError> {
        match self {
            Coarsest::Redundant(solve) => solve.solve(a, b, x),
            Coarsest::OnOwner(owner) => owner.solve(b, x),
            Coarsest::Elsewhere => Ok(()),
        }
    }
}

/// Bytes [`DeviceDistHierarchy::refresh`] uploaded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RefreshBytes {
    /// Operators' values (every level).
    pub operators: u64,
    /// Prolongators and their transposes (zero when no `P` changed).
    pub prolongators: u64,
}

impl DeviceDistHierarchy {
    /// Uploads every level of `host` to `device` (a GPU; local: no messages).
    pub fn upload(host: &DistHierarchy, device: &Device) -> Result<Self, AmgError> {
        if device.is_host() {
            return Err(AmgError::InvalidParameter {
                name: "device",
                value: device.name(),
                reason: "must be a GPU (the host hierarchy runs on the host)",
            });
        }
        let mut levels = Vec::with_capacity(host.levels.len());
        for (l, lev) in host.levels.iter().enumerate() {
            let a = lev
                .a
                .as_ref()
                .ok_or(AmgError::MissingFineOperator)?
                .to_device(device)?;
            let smoother = device_smoother(lev.smoother.as_ref(), &a, host)?;
            let (p, galerkin, start) = match host.transfers.get(l) {
                Some(t) => {
                    let rows =
                        super::serial_rows(host.level_serial_ids(l)?, a.pattern().block_size());
                    (
                        Some((t.p.to_device(device)?, transpose_to(&t.pt, device)?)),
                        device_galerkin(&t.galerkin, device)?,
                        Some(start_vector(&a, &rows)?),
                    )
                }
                None => (None, None, None),
            };
            levels.push(DeviceLevel {
                a,
                smoother,
                p,
                galerkin,
                start,
                smoothing: None,
            });
        }
        let last = host.levels.len() - 1;
        let coarse = Coarsest::new(&levels.last().expect("a level").a, &host.coarse)?;
        Ok(Self {
            device: device.clone(),
            levels,
            work: Default::default(),
            coarse,
            params: host.params.clone(),
            coarse_serial_ids: host.level_serial_ids(last)?.to_vec(),
        })
    }

    /// Collective. New values of the fine operator (`a`: a device matrix on this hierarchy's
    /// GPU, the fine level's pattern), handled on the device as `params.reuse` says:
    /// `interpolation` keeps the prolongators and recomputes, level after level, the
    /// point-block Jacobi inverse, the eigenvalue estimate (if `recompute_eigs`, from the start
    /// vector kept on the device) and the Galerkin product (device numerics; only the off-rank
    /// partial blocks cross: GPU to GPU through NCCL where the ranks are connected, else
    /// through pinned memory and one all-to-all), then inverts the coarsest operator on its
    /// owner's GPU where one rank holds it, else downloads it (small) for the redundant dense
    /// factor; `full` copies the fine values only. The report's transfers are the device's
    /// counters (off-rank coarse blocks, scalars of the eigenvalue estimates, the coarsest
    /// operator downloaded), its messages the partial coarse blocks sent and received (uploaded
    /// from pinned memory when staged; written by NCCL straight into device memory otherwise),
    /// its timings this rank's phases, each ended by a device synchronisation.
    /// The result is [`DistHierarchy::update`]'s, bit for bit. `reuse: none` needs the host
    /// set-up (an error here: use [`DistHierarchy::update`] and [`Self::refresh`]). The host
    /// hierarchy this was uploaded from is not changed (it keeps the old values).
    pub fn update(&mut self, a: &DistBsr) -> Result<UpdateReport, AmgError> {
        let at = self.device.transfers();
        let mut messages = MessageReport::default();
        match self.params.reuse {
            Reuse::None => {
                return Err(AmgError::InvalidParameter {
                    name: "reuse",
                    value: "none".into(),
                    reason: "needs the host set-up (DistHierarchy::update, then refresh)",
                })
            }
            Reuse::Full => {
                self.levels[0].a.copy_values_from(a)?;
                return Ok(self.report(at, messages, SetupTimings::default()));
            }
            Reuse::Interpolation => {}
        }
        let started = Instant::now();
        let mut timings = SetupTimings::default();
        // each phase's seconds up to its device work's end (one synchronisation per phase)
        let phase = |seconds: &mut f64, since: Instant| -> Result<Instant, AmgError> {
            self.device.synchronize()?;
            let now = Instant::now();
            *seconds += (now - since).as_secs_f64();
            Ok(now)
        };
        let mut t = started;
        self.levels[0].a.copy_values_from(a)?;
        t = phase(&mut timings.copy_operator_s, t)?;
        let n = self.levels.len();
        for l in 0..n - 1 {
            let (head, tail) = self.levels.split_at_mut(l + 1);
            let (level, next) = (&mut head[l], &mut tail[0]);
            level.refresh_smoother(l, &self.params)?;
            t = phase(&mut timings.smoother_setup_s, t)?;
            let galerkin = level.galerkin.as_mut().ok_or(AmgError::InvalidParameter {
                name: "device hierarchy",
                value: format!("level {l}"),
                reason: "has no device Galerkin plan",
            })?;
            messages.sent_bytes += galerkin.numeric(&level.a, &mut next.a)?;
            messages.received_bytes += galerkin.bytes_received();
            t = phase(&mut timings.galerkin_numeric_s, t)?;
        }
        self.coarse
            .refactor(&self.levels[n - 1].a, &self.coarse_serial_ids)?;
        phase(&mut timings.coarse_factor_s, t)?;
        timings.total_s = started.elapsed().as_secs_f64();
        Ok(self.report(at, messages, timings))
    }

    /// The report of an update that began at the device counters `at` (`timings`:
    /// `copy_operator_s` the fine values, `smoother_setup_s` point-block Jacobi inverses and
    /// eigenvalue estimates, `galerkin_numeric_s` the products with their reductions,
    /// `coarse_factor_s`).
    fn report(
        &self,
        at: linalg::Transfers,
        messages: MessageReport,
        timings: SetupTimings,
    ) -> UpdateReport {
        UpdateReport {
            reuse: self.params.reuse,
            p_versions: self
                .levels
                .iter()
                .filter_map(|l| l.p.as_ref().map(|(p, _)| p.version()))
                .collect(),
            transposes_rebuilt: 0,
            galerkin_plans_rebuilt: 0,
            timings,
            transfers: TransferReport::between(at, self.device.transfers()),
            messages,
        }
    }

    /// Number of levels.
    pub fn n_levels(&self) -> usize {
        self.levels.len()
    }

    /// The operator of level `level` (on the device).
    pub fn level_operator(&self, level: usize) -> Option<&DistBsr> {
        self.levels.get(level).map(|l| &l.a)
    }

    /// The estimates of `lambda_max(D^{-1} A)` of the levels above the coarsest.
    pub fn emax(&self) -> Vec<f64> {
        self.levels
            .iter()
            .filter_map(|l| l.smoother.as_ref().map(|s| s.emax))
            .collect()
    }

    /// The smoother of level `level` (above the coarsest).
    pub fn level_smoother(&self, level: usize) -> Option<&Smoother> {
        self.levels.get(level).and_then(|l| l.smoother.as_ref())
    }

    /// After `host` was updated ([`DistHierarchy::update`]): the new operators' values uploaded
    /// (values alone where the pattern is the uploaded one), the smoothers' inverses recomputed
    /// on the device with the host's eigenvalue estimates, the coarse factor copied; a
    /// prolongator (and its transpose) uploaded only if its version changed. Under `reuse:
    /// full` only the fine operator's values (the host keeps the rest too). Local.
    pub fn refresh(&mut self, host: &DistHierarchy) -> Result<RefreshBytes, AmgError> {
        if host.levels.len() != self.levels.len() {
            *self = Self::upload(host, &self.device)?;
            return Ok(RefreshBytes::default());
        }
        let mut bytes = RefreshBytes::default();
        if host.params.reuse == Reuse::Full {
            // Only the fine operator changed; the smoothers are the old operator's, as on the
            // host.
            let at = self.device.transfers().host_to_device;
            let fine = host.levels[0]
                .a
                .as_ref()
                .ok_or(AmgError::MissingFineOperator)?;
            self.levels[0].a.upload_values_from(fine)?;
            bytes.operators = self.device.transfers().host_to_device - at;
            return Ok(bytes);
        }
        for (l, (d, h)) in self.levels.iter_mut().zip(&host.levels).enumerate() {
            let at = self.device.transfers().host_to_device;
            let ha = h.a.as_ref().ok_or(AmgError::MissingFineOperator)?;
            if std::sync::Arc::ptr_eq(d.a.pattern(), ha.pattern()) {
                d.a.upload_values_from(ha)?;
            } else {
                d.a = ha.to_device(&self.device)?;
            }
            d.smoother = device_smoother(h.smoother.as_ref(), &d.a, host)?;
            bytes.operators += self.device.transfers().host_to_device - at;
            let host_transfer = host.transfers.get(l).map(|t| (&t.p, &t.pt, &t.galerkin));
            if let (Some((dp, dpt)), Some((hp, hpt, g))) = (&mut d.p, host_transfer) {
                let p_changed = dp.version() != hp.version();
                if p_changed {
                    let at = self.device.transfers().host_to_device;
                    // a renewal that kept the aggregates keeps `P`'s pattern: values alone
                    if std::sync::Arc::ptr_eq(dp.pattern(), hp.pattern()) {
                        dp.upload_values_from(hp)?;
                        upload_transpose_values(dpt, hpt)?;
                    } else {
                        *dp = hp.to_device(&self.device)?;
                        *dpt = transpose_to(hpt, &self.device)?;
                    }
                    bytes.prolongators += self.device.transfers().host_to_device - at;
                }
                match (&mut d.galerkin, g.current()) {
                    (Some(dg), Some((plan, p_ext)))
                        if std::sync::Arc::ptr_eq(dg.coarse_pattern(), plan.coarse_pattern()) =>
                    {
                        // the plan kept (the same patterns): `P`'s new values where they serve
                        if p_changed {
                            let at = self.device.transfers().host_to_device;
                            dg.upload_p_values(plan, p_ext)?;
                            bytes.prolongators += self.device.transfers().host_to_device - at;
                        }
                    }
                    _ => d.galerkin = device_galerkin(g, &self.device)?,
                }
            }
        }
        self.coarse = Coarsest::new(&self.levels.last().expect("a level").a, &host.coarse)?;
        Ok(bytes)
    }

    /// The GPU of the levels.
    pub fn device(&self) -> &Device {
        &self.device
    }
}

impl Preconditioner for DeviceDistHierarchy {
    fn apply(&self, r: &Vector, z: &mut Vector) -> Result<(), AmgError> {
        v_cycle_in(&self.levels, &self.work, r, z, &|a, b, x| {
            self.coarse.solve(a, b, x)
        })
    }
}

/// The host smoother's polynomial and eigenvalue estimate with `D^{-1}` inverted from the
/// device operator `a` (the host's inversion, bit for bit).
fn device_smoother(
    host: Option<&Smoother>,
    a: &DistBsr,
    h: &DistHierarchy,
) -> Result<Option<Smoother>, AmgError> {
    host.map(|s| {
        Ok(build_smoother(
            PointBlockJacobi::new(a.diag())?,
            s.emax,
            &h.params,
        ))
    })
    .transpose()
}

/// The device copy of a level's Galerkin plan (`None` before its first product).
fn device_galerkin(
    g: &crate::dist_prolongator::GalerkinPlan,
    device: &Device,
) -> Result<Option<DeviceGalerkin>, AmgError> {
    g.current()
        .map(|(plan, p_ext)| DeviceGalerkin::upload(plan, p_ext, device))
        .transpose()
}

/// The eigenvalue estimate's start vector of a level (hashed at the serial index of each owned
/// unknown, as [`super::dist_emax`]'s) on `a`'s device.
fn start_vector(a: &DistBsr, serial_rows: &[u64]) -> Result<Vector, AmgError> {
    let host: Vec<f64> = serial_rows
        .iter()
        .map(|&s| crate::eig::start_entry(s))
        .collect();
    let mut v = a.owned_zeros()?;
    v.copy_from_host(&host)?;
    Ok(v)
}

/// The values of the host transpose `host` into the device transpose `dev` of the same
/// patterns.
pub(super) fn upload_transpose_values(
    dev: &mut DistTranspose,
    host: &DistTranspose,
) -> Result<(), AmgError> {
    dev.diag_t.upload_values_from(&host.diag_t)?;
    dev.offd_t.upload_values_from(&host.offd_t)?;
    Ok(())
}

fn transpose_to(t: &DistTranspose, device: &Device) -> Result<DistTranspose, AmgError> {
    Ok(DistTranspose {
        diag_t: t.diag_t.to_device(device)?,
        offd_t: t.offd_t.to_device(device)?,
        ghost: std::sync::Mutex::new(None),
    })
}

/// One level of the device V-cycle: its operator, and above the coarsest its
/// smoother and prolongator with the prolongator's transpose.
trait CycleLevel {
    fn operator(&self) -> &DistBsr;
    fn smoother(&self) -> Option<&Smoother>;
    fn transfer(&self) -> Option<(&DistBsr, &DistTranspose)>;
}

/// The device hierarchy's V-cycle vectors are the serial [`CycleWorkspace`], held by the
/// hierarchy and made at its first cycle: with the operators' own product scratch
/// ([`DistBsr::add_scaled_product`]) a later cycle allocates nothing. [`CycleWorkspace::fit`]
/// makes it anew where a level's layout or device changed (a refresh with new patterns).
impl CycleWorkspace {
    /// Made anew unless its vectors already have the owned layouts of `levels` where they live.
    fn fit<L: CycleLevel>(&mut self, levels: &[L]) -> Result<(), AmgError> {
        let fits = self.levels.len() == levels.len()
            && self.levels.iter().zip(levels).all(|(w, l)| {
                let a = l.operator();
                let owned = a.pattern().owned_layout();
                w.sw.r.layout().matches(owned) && w.sw.r.device().same_as(&a.device())
            });
        if fits {
            return Ok(());
        }
        self.levels = levels
            .iter()
            .enumerate()
            .map(|(l, level)| {
                let a = level.operator();
                let (b, x) = if l == 0 {
                    (Vector::zeros(0), Vector::zeros(0))
                } else {
                    (a.owned_zeros()?, a.owned_zeros()?)
                };
                Ok(LevelWork {
                    b,
                    x,
                    sw: SmootherWork {
                        r: a.owned_zeros()?,
                        d: a.owned_zeros()?,
                    },
                })
            })
            .collect::<Result<_, AmgError>>()?;
        Ok(())
    }
}

/// One V-cycle from `x = 0` on the finest of `levels` in the hierarchy's `work` (made or
/// re-made to fit the levels first); an error, never a wait, if another thread holds it.
fn v_cycle_in<L: CycleLevel>(
    levels: &[L],
    work: &std::sync::Mutex<CycleWorkspace>,
    b: &Vector,
    x: &mut Vector,
    coarse: &dyn Fn(&DistBsr, &Vector, &mut Vector) -> Result<(), AmgError>,
) -> Result<(), AmgError> {
    let mut work = match work.try_lock() {
        Ok(g) => g,
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return Err(AmgError::WorkspaceBusy),
    };
    work.fit(levels)?;
    let (first, rest) = work
        .levels
        .split_first_mut()
        .expect("a hierarchy has a level");
    crate::vcycle::v_cycle(&DistCycle { levels, coarse }, 0, b, x, &mut first.sw, rest)
}

/// The device hierarchy's levels with its coarsest solve, as the one
/// V-cycle ([`crate::vcycle::v_cycle`]) sees them: the serial cycle's operations on the rank's
/// rows (`P^T` through [`DistTranspose`], `P` through the halo).
struct DistCycle<'a, L> {
    levels: &'a [L],
    coarse: &'a dyn Fn(&DistBsr, &Vector, &mut Vector) -> Result<(), AmgError>,
}

impl<L: CycleLevel> DistCycle<'_, L> {
    /// The prolongator of level `l` and its transpose (above the coarsest).
    fn transfer(&self, l: usize) -> Result<(&DistBsr, &DistTranspose), AmgError> {
        self.levels[l]
            .transfer()
            .ok_or(AmgError::DimensionMismatch {
                what: "distributed V-cycle transfers",
                expected: l + 1,
                found: l,
            })
    }
}

impl<L: CycleLevel> CycleLevels for DistCycle<'_, L> {
    type Operator = DistBsr;

    fn operator(&self, l: usize) -> &DistBsr {
        self.levels[l].operator()
    }

    fn smoother(&self, l: usize) -> Option<&Smoother> {
        let level = &self.levels[l];
        level.smoother().filter(|_| level.transfer().is_some())
    }

    fn restrict(&self, l: usize, r: &Vector, rc: &mut Vector) -> Result<(), AmgError> {
        let (p, pt) = self.transfer(l)?;
        pt.apply(p, r, rc)
    }

    fn prolong_add(&self, l: usize, xc: &Vector, x: &mut Vector) -> Result<(), AmgError> {
        // the product into P's scratch, then added (the bits of apply and axpy)
        let (p, _) = self.transfer(l)?;
        Ok(p.add_scaled_product(1.0, xc, x)?)
    }

    fn coarse_solve(&self, l: usize, b: &Vector, x: &mut Vector) -> Result<(), AmgError> {
        (self.coarse)(self.levels[l].operator(), b, x)
    }
}
