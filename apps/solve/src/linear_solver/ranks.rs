//! The operator of one rank of a distributed run: the rank's owned rows of the tangent as a
//! `linalg::dist::DistBsr`, preconditioned by the distributed smoothed-aggregation AMG
//! ([`RankHierarchy`]: `amg::dist_cycle::DistHierarchy`, the serial hierarchy's algorithm and
//! the configured `linear_solver.amg` options) or point-block Jacobi, and the correction's ghost
//! entries filled from their owners afterwards. Every call is collective.
//!
//! The distributed pattern is built at the first solve and kept (the tangent's pattern never
//! changes); the hierarchy is set up cold at the first solve, renewed after a new near-null
//! space (`DistHierarchy::set_near_null_space`, as the serial hierarchy: a cold set-up's
//! values), and updated as `amg.reuse` says for every other one (by default hot: new values,
//! the same prolongators).
//!
//! On a GPU (one per rank): the tangent is assembled on the host per rank and its owned rows
//! uploaded (values alone after the first solve), the hierarchy is set up and hot-updated on the
//! host and its levels uploaded (`amg::dist_cycle::DeviceDistHierarchy`: no prolongator bytes on
//! a hot update), and the Krylov method with the V-cycle or point-block Jacobi runs on the device
//! (halo exchanges staged through pinned host memory); the solution comes back to the host. The
//! same operations in the same order as on the host: the host's bits.
//!
//! Where the Newton loop runs on the rank's GPU too (a device tangent `k`, device vectors `b`
//! and `x`: `solve::newton_system::IterationSystem::device` over the rank's part), nothing of
//! the tangent crosses: its owned rows are gathered into the device operator on the GPU
//! (`DistBsr::set_from_local`, a plan uploaded once), the right-hand side's owned entries
//! copied there, and the correction written back with its ghosts filled through the device
//! halo. Only a cold set-up (and a renewal that recomputes the aggregates) downloads the owned
//! rows (the distributed set-up runs on the host); a renewal that keeps the aggregates runs its
//! numeric phases on the GPU (`DeviceDistHierarchy::renew_kept`).

use std::cell::Cell;
use std::sync::Arc;
use std::time::Instant;

use amg::dist_cycle::{DeviceDistHierarchy, DistHierarchy};
use amg::{CgParams, PointBlockJacobi, TransferReport};
use comm::Comm;
use linalg::dist::{DistBsr, DistPattern, RowPartition};
use linalg::{Bsr, Device, Vector};

use super::krylov::Krylov;
use super::preconditioner::{AmgState, Preconditioning};
use super::report::{DeviceSolveReport, LinearSolveReport, SetupKind};
use crate::error::{Error, Result};

/// The distributed hierarchy of a rank, and its levels on the rank's GPU where the solves run
/// there.
pub(crate) struct RankHierarchy {
    host: DistHierarchy,
    device: Option<DeviceDistHierarchy>,
}

/// One rank's rows of the distributed tangent (see the module documentation).
pub(crate) struct RankRows {
    comm: Arc<dyn Comm>,
    n_owned_nodes: usize,
    node_globals: Vec<u64>,
    owned_serial_ids: Vec<u64>,
    pattern: Option<Arc<DistPattern>>,
    /// Where the solves run (this rank's GPU, or the host).
    pub(crate) device: Device,
    /// The tangent's owned rows on the GPU (kept: later solves upload values only).
    device_operator: Option<DistBsr>,
}

impl RankRows {
    /// The rows of `part`'s tangents on the ranks of `comm`, solved on `device`.
    pub(crate) fn new(comm: Arc<dyn Comm>, part: &mesh::MeshPart, device: Device) -> Self {
        let n = part.n_owned_nodes();
        Self {
            comm,
            n_owned_nodes: n,
            node_globals: part.node_globals.clone(),
            owned_serial_ids: part.node_serial_ids[..n].to_vec(),
            pattern: None,
            device,
            device_operator: None,
        }
    }

    /// The number of ranks.
    pub(crate) fn ranks(&self) -> usize {
        self.comm.size()
    }

    /// Collective. The distributed pattern of the rank-local tangent `k`: built at the first
    /// call, checked against the part's ghosts (agreed), kept.
    fn pattern(&mut self, k: &Bsr) -> Result<Arc<DistPattern>> {
        if let Some(p) = &self.pattern {
            return Ok(p.clone());
        }
        let partition = RowPartition::new(self.comm.clone(), self.n_owned_nodes)?;
        let p = DistPattern::from_local(partition, k.pattern(), &self.node_globals, 3)
            .map_err(Error::DistributedPattern)?;
        // the halo fills every ghost node of the part (ascending global ids), whether an owned
        // row reaches it or not; agreed, so no rank goes on alone
        let part_ghosts = &self.node_globals[self.n_owned_nodes..];
        let check = if p.halo().ghosts() == part_ghosts {
            Ok(())
        } else {
            Err(format!(
                "the tangent's halo has {} ghost nodes, the mesh part {} (or in another order)",
                p.halo().ghosts().len(),
                part_ghosts.len()
            ))
        };
        linalg::comm::agree(&*self.comm, check).map_err(linalg::LinalgError::from)?;
        self.pattern = Some(p.clone());
        Ok(p)
    }

    /// Collective. Solves `k x = b` from `x = 0` on the owned rows of the rank-local tangent
    /// `k` (its owned rows complete, constraints eliminated) and right-hand side `b`;
    /// `x`'s ghost entries are filled from their owners.
    pub(crate) fn solve(
        &mut self,
        preconditioner: &mut Preconditioning<RankHierarchy>,
        krylov: Krylov,
        k: &Bsr,
        b: &Vector,
        x: &mut Vector,
        params: &CgParams,
    ) -> Result<LinearSolveReport> {
        let started = Instant::now();
        let pattern = self.pattern(k)?;
        let owned = 3 * self.n_owned_nodes;
        let on_gpu = !self.device.is_host();
        // Where the tangent was assembled: on this rank's GPU (the Newton loop runs there) or
        // on the host.
        let assembled_on_gpu = !k.device().is_host();
        if assembled_on_gpu && !on_gpu {
            return Err(Error::TangentOnDevice {
                device: k.device().name(),
            });
        }
        // The operator and right-hand side where the solve runs.
        let t0 = self.device.transfers();
        let mut host_a = None;
        let rhs = if assembled_on_gpu {
            // the owned rows gathered device to device (a plan uploaded once): no host transfer
            let d = match &mut self.device_operator {
                Some(d) => d,
                None => self
                    .device_operator
                    .insert(DistBsr::zeros(pattern.clone()).to_device(&self.device)?),
            };
            d.set_from_local(k)?;
            let mut rhs = d.owned_zeros()?;
            d.owned_from_local(b, &mut rhs)?;
            rhs
        } else {
            let mut a = DistBsr::zeros(pattern.clone());
            a.set_from_local(k)?;
            let mut rhs = a.new_owned_vector();
            rhs.host_mut()?.copy_from_slice(&b.host()?[..owned]);
            if on_gpu {
                match &mut self.device_operator {
                    Some(d) => d.upload_values_from(&a)?,
                    None => self.device_operator = Some(a.to_device(&self.device)?),
                }
            }
            host_a = Some(a);
            rhs.to_device(&self.device)?
        };
        let t1 = self.device.transfers();
        let setup = match preconditioner {
            Preconditioning::Jacobi => SetupKind::Jacobi,
            Preconditioning::Direct { .. } => {
                return Err(Error::DirectOnRanks {
                    ranks: self.ranks(),
                })
            }
            // on the CPUs the hierarchy takes the operator just filled as its finest level (no
            // second copy of the tangent) and the solve runs on it there
            Preconditioning::Amg(state) => {
                let fine = if on_gpu { None } else { host_a.take() };
                self.update_hierarchy(state, &pattern, k, owned, fine)?
            }
        };
        let hierarchy = match &*preconditioner {
            Preconditioning::Amg(state) => state.hierarchy.as_ref(),
            _ => None,
        };
        let finest = hierarchy.and_then(|h| h.host.level_operator(0));
        let run = match (on_gpu, &self.device_operator, &host_a, finest) {
            (true, Some(d), _, _) => d,
            (false, _, Some(a), _) => a,
            (false, _, None, Some(a)) => a,
            _ => return Err(Error::Missing("no operator where the solve runs")),
        };
        let pbj = match setup {
            SetupKind::Jacobi => Some(PointBlockJacobi::new(run.diag())?),
            _ => None,
        };
        self.device.synchronize()?;
        let setup_s = started.elapsed().as_secs_f64();
        let t2 = self.device.transfers();
        let pc: &dyn amg::Preconditioner = match (&pbj, hierarchy) {
            (Some(pbj), _) => pbj,
            (
                None,
                Some(RankHierarchy {
                    device: Some(d), ..
                }),
            ) if on_gpu => d,
            (None, Some(h)) => &h.host,
            _ => return Err(Error::Missing("no preconditioner was set up")),
        };
        let mut solution = run.owned_zeros()?;
        let outcome = krylov.solve(run, &rhs, &mut solution, pc, params)?;
        if !x.device().is_host() {
            // the correction stays on the GPU: owned entries copied, ghosts from their owners
            // (the halo's bytes counted with the solve's)
            run.local_from_owned(&solution, x)?;
        }
        let t3 = self.device.transfers();
        if x.device().is_host() {
            let xs = x.host_mut()?;
            xs[..owned].copy_from_slice(&solution.to_host_vec()?);
            pattern.halo().update(xs)?;
        }
        let solve_s = started.elapsed().as_secs_f64() - setup_s;
        let mut report = LinearSolveReport::of(outcome, setup, setup_s, solve_s, params.rtol);
        report.device = on_gpu.then(|| DeviceSolveReport {
            name: self.device.name(),
            upload_bytes: t1.host_to_device - t0.host_to_device,
            setup: TransferReport::between(t1, t2),
            solve: TransferReport::between(t2, t3),
            download_bytes: self.device.transfers().device_to_host - t3.device_to_host,
        });
        Ok(report)
    }

    /// Collective. The hierarchy for the tangent `k`: set up cold at the first call, renewed
    /// after new rigid-body modes, updated as `amg.reuse` says otherwise; its levels uploaded
    /// to the GPU when the solves run there, and hot updates run on the GPU
    /// (`DeviceDistHierarchy::update`; `reuse: none`: on the host, the levels refreshed).
    /// `filled`: the fine operator already filled from `k` on the host, taken as the finest
    /// level (else it is built here).
    fn update_hierarchy(
        &self,
        state: &mut AmgState<RankHierarchy>,
        pattern: &Arc<DistPattern>,
        k: &Bsr,
        owned: usize,
        filled: Option<DistBsr>,
    ) -> Result<SetupKind> {
        // A hot update with the levels on the GPU runs there (the new tangent is the device
        // operator already): the Galerkin products, smoothers and eigenvalue estimates on the
        // device, only the off-rank coarse blocks and scalars crossing. The host hierarchy
        // keeps its set-up (its values are not used again: `reuse: none` is the host path).
        if let (
            Some(RankHierarchy {
                device: Some(d), ..
            }),
            Some(a),
        ) = (&mut state.hierarchy, &self.device_operator)
        {
            if !state.near_null_changed
                && !self.device.is_host()
                && state.params.reuse != amg::params::Reuse::None
            {
                d.update(a)?;
                return Ok(SetupKind::AmgHot);
            }
        }
        // the fine operator on the host, made where a host step needs it: from the host
        // tangent, or downloaded from the GPU's owned rows (the distributed cold set-up runs on
        // the host; a kept renewal on the GPU needs none)
        let filled = Cell::new(filled);
        let fine = || -> Result<DistBsr> {
            if let Some(fine) = filled.take() {
                return Ok(fine);
            }
            if k.device().is_host() {
                let mut fine = DistBsr::zeros(pattern.clone());
                fine.set_from_local(k)?;
                return Ok(fine);
            }
            Ok(self
                .device_operator
                .as_ref()
                .ok_or(Error::Missing("the tangent's owned rows on the GPU"))?
                .to_device(&Device::Host)?)
        };
        let owned_rows = |near_null: &amg::NearNullSpace| -> Result<Vec<f64>> {
            let mut rows = match near_null.row_major() {
                Ok(host) => host[..owned * 6].to_vec(),
                Err(_) => near_null.values().to_host_vec()?, // made on a GPU: downloaded
            };
            rows.truncate(owned * 6);
            Ok(rows)
        };
        // a renewal that keeps the aggregates keeps every pattern: the levels on the GPU stay
        // and take the new values there (`DeviceDistHierarchy::renew_kept`: the numeric phases
        // on the GPU, the fine operator not downloaded); otherwise they leave the GPU first
        // and the renewed ones are uploaded afresh, as after a cold set-up
        let keep_device = state.params.renewal == amg::params::Renewal::KeepAggregates;
        let renewed_on_device = Cell::new(false);
        let (setup, h) = state.prepare(
            |h, near_null| {
                if let (true, Some(d), Some(a)) =
                    (keep_device, &mut h.device, &self.device_operator)
                {
                    renewed_on_device.set(true);
                    return Ok(d.renew_kept(&mut h.host, a, owned_rows(near_null)?)?);
                }
                if !keep_device {
                    h.device = None;
                }
                Ok(h.host
                    .set_near_null_space(fine()?, owned_rows(near_null)?)?)
            },
            |h| Ok(h.host.update(fine()?).map(drop)?),
            |near_null, params| {
                let nns = owned_rows(near_null)?;
                let host = DistHierarchy::new(fine()?, &self.owned_serial_ids, nns, 6, params)?;
                Ok(RankHierarchy { host, device: None })
            },
        )?;
        if !self.device.is_host() && !renewed_on_device.get() {
            match &mut h.device {
                Some(d) => {
                    d.refresh(&h.host)?;
                }
                None => h.device = Some(DeviceDistHierarchy::upload(&h.host, &self.device)?),
            }
        }
        Ok(setup)
    }
}
