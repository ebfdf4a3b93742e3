//! The operator of one rank of a distributed run: the rank's owned rows of the tangent as a
//! `linalg::dist::DistBsr`, preconditioned by the distributed smoothed-aggregation AMG
//! (`amg::dist_cycle::DistHierarchy`, the serial hierarchy's algorithm and the configured
//! `linear_solver.amg` options) or point-block Jacobi, and the correction's ghost entries
//! filled from their owners afterwards. Every call is collective.
//!
//! The distributed pattern is built at the first solve and kept (the tangent's pattern never
//! changes); the hierarchy is set up cold at the first solve, renewed after a new near-null
//! space (`DistHierarchy::set_near_null_space`, as the serial hierarchy: a cold set-up's
//! values), and updated as `amg.reuse` says for every other one (by default hot: new values,
//! the same prolongators).
//!
//! On a GPU (one per rank): the tangent is assembled on the host per rank and its owned rows
//! uploaded (values alone after the first solve), or assembled there (below); the hierarchy
//! takes the device operator as its fine one, so its levels live on the GPU (its cold set-up's
//! stages run on the host copy for now, their results placed on the device), its hot updates
//! run there, and the Krylov method with the V-cycle or point-block Jacobi runs on the device
//! (halo exchanges staged through pinned host memory, or GPU to GPU); the solution comes back
//! to the host. The same operations in the same order as on the host: the host's bits.
//!
//! Where the Newton loop runs on the rank's GPU too (a device tangent `k`, device vectors `b`
//! and `x`: `solve::newton_system::IterationSystem::device` over the rank's part), nothing of
//! the tangent crosses: its owned rows are gathered into the device operator on the GPU
//! (`DistBsr::set_from_local`, a plan uploaded once), the right-hand side's owned entries
//! copied there, and the correction written back with its ghosts filled through the device
//! halo. Only a cold set-up (and a renewal that recomputes the aggregates) downloads the owned
//! rows (the distributed set-up's stages run on the host); a renewal that keeps the aggregates
//! runs its numeric phases on the GPU (`DistHierarchy::set_near_null_space`).

use std::sync::Arc;
use std::time::Instant;

use amg::dist_cycle::DistHierarchy;
use amg::{CgParams, PointBlockJacobi, TransferReport};
use comm::Comm;
use linalg::dist::{DistBsr, DistPattern, RowPartition};
use linalg::{Bsr, Device, Vector};

use super::krylov::Krylov;
use super::preconditioner::{AmgState, Preconditioning};
use super::report::{DeviceSolveReport, LinearSolveReport, SetupKind};
use crate::error::{Error, Result};

/// One rank's rows of the distributed tangent (see the module documentation).
pub(crate) struct RankRows {
    comm: Arc<dyn Comm>,
    n_owned_nodes: usize,
    node_globals: Vec<u64>,
    owned_serial_ids: Vec<u64>,
    pattern: Option<Arc<DistPattern>>,
    /// Where the solves run (this rank's GPU, or the host).
    pub(crate) device: Device,
    /// The tangent's owned rows where no hierarchy holds them (point-block Jacobi; kept: later
    /// solves on a GPU fill values only).
    operator: Option<DistBsr>,
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
            operator: None,
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
        preconditioner: &mut Preconditioning<DistHierarchy>,
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
        // The operator where the solve runs: on the GPU the one kept from the last solve (the
        // hierarchy's fine operator, handed back, or this rank's), filled with new values.
        let t0 = self.device.transfers();
        let held = match &mut *preconditioner {
            Preconditioning::Amg(state) => state.hierarchy.as_mut().and_then(|h| h.take_operator()),
            _ => None,
        };
        let mut kept = held.or_else(|| self.operator.take());
        let mut device_matrix = || -> Result<DistBsr> {
            Ok(match kept.take().filter(|d| !d.device().is_host()) {
                Some(d) => d,
                None => DistBsr::zeros(pattern.clone()).to_device(&self.device)?,
            })
        };
        let (a, rhs) = if assembled_on_gpu {
            // the owned rows gathered device to device (a plan uploaded once): no host transfer
            let mut d = device_matrix()?;
            d.set_from_local(k)?;
            let mut rhs = d.owned_zeros()?;
            d.owned_from_local(b, &mut rhs)?;
            (d, rhs)
        } else {
            let mut a = DistBsr::zeros(pattern.clone());
            a.set_from_local(k)?;
            let mut rhs = a.new_owned_vector();
            rhs.host_mut()?.copy_from_slice(&b.host()?[..owned]);
            if on_gpu {
                let mut d = device_matrix()?;
                d.upload_values_from(&a)?;
                (d, rhs.to_device(&self.device)?)
            } else {
                (a, rhs)
            }
        };
        let t1 = self.device.transfers();
        // the hierarchy takes the operator as its finest level (no second copy of the
        // tangent) and the solve runs on it there; Jacobi keeps it here
        let (setup, pbj) = match preconditioner {
            Preconditioning::Jacobi => {
                let pbj = PointBlockJacobi::new(a.diag())?;
                self.operator = Some(a);
                (SetupKind::Jacobi, Some(pbj))
            }
            Preconditioning::Direct { .. } => {
                return Err(Error::DirectOnRanks {
                    ranks: self.ranks(),
                })
            }
            Preconditioning::Amg(state) => (self.update_hierarchy(state, a, owned)?, None),
        };
        let hierarchy = match &*preconditioner {
            Preconditioning::Amg(state) => state.hierarchy.as_ref(),
            _ => None,
        };
        let run = match (&pbj, hierarchy) {
            (Some(_), _) => self.operator.as_ref(),
            (None, Some(h)) => h.level_operator(0),
            _ => None,
        }
        .ok_or(Error::Missing("no operator where the solve runs"))?;
        self.device.synchronize()?;
        let setup_s = started.elapsed().as_secs_f64();
        let t2 = self.device.transfers();
        let pc: &dyn amg::Preconditioner = match (&pbj, hierarchy) {
            (Some(pbj), _) => pbj,
            (None, Some(h)) => h,
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

    /// Collective. The hierarchy for the fine operator `fine` (the tangent's owned rows where
    /// the solves run: the hierarchy's levels live there): set up cold at the first call,
    /// renewed after new rigid-body modes (with `renewal: keep_aggregates` on a GPU, the
    /// numeric phases there and the fine operator not downloaded), updated as `amg.reuse` says
    /// otherwise (on a GPU the hot update runs there).
    fn update_hierarchy(
        &self,
        state: &mut AmgState<DistHierarchy>,
        fine: DistBsr,
        owned: usize,
    ) -> Result<SetupKind> {
        // the owned nodes' rows where the modes were made (on a GPU: left there, for the
        // device renewal's tentative prolongator)
        let owned_rows = |near_null: &amg::NearNullSpace| -> Result<linalg::Vector> {
            Ok(near_null.values().prefix(owned * 6)?)
        };
        // each closure takes the operator; `prepare` calls one of them
        let fine = std::cell::Cell::new(Some(fine));
        let take = || fine.take().ok_or(Error::Missing("the fine operator"));
        let (setup, _) = state.prepare(
            |h, near_null| Ok(h.set_near_null_space(take()?, owned_rows(near_null)?)?),
            |h| Ok(h.update(take()?).map(drop)?),
            |near_null, params| {
                let nns = owned_rows(near_null)?;
                Ok(DistHierarchy::new(
                    take()?,
                    &self.owned_serial_ids,
                    nns,
                    6,
                    params,
                )?)
            },
        )?;
        Ok(setup)
    }
}
