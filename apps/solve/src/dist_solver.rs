//! The linear solver of one rank of a distributed run: the rank's owned rows of the tangent as a
//! `linalg::dist::DistBsr`, CG with the distributed smoothed-aggregation AMG
//! (`amg::dist_cycle::DistHierarchy`: the serial hierarchy's algorithm and the configured
//! `linear_solver.amg` options) or point-block Jacobi, and the correction's ghost entries
//! filled from their owners afterwards.
//!
//! Calling order: [`DistSolver::new`] once per run; [`DistSolver::solve_to`] per Newton
//! iteration (collective on every rank). The distributed pattern is built at the first solve
//! and kept (the tangent's pattern never changes); the hierarchy is set up cold at the first
//! solve after [`DistSolver::set_near_null_space`] and updated as `amg.reuse` says for every
//! later one (by default hot: new values, the same prolongators).
//!
//! On a GPU ([`DistSolver::on_device`], one per rank): the tangent is assembled on the host per
//! rank and its owned rows uploaded (values alone after the first solve), the hierarchy is set up
//! and hot-updated on the host and its levels uploaded (`amg::dist_cycle::DeviceDistHierarchy`:
//! no prolongator bytes on a hot update), and CG with the V-cycle or point-block Jacobi runs on
//! the device (halo exchanges staged through pinned host memory); the solution comes back to
//! the host. The same operations in the same order as on the host: the host's bits.
//!
//! Where the Newton loop runs on the rank's GPU too (a device tangent `k`, device vectors `b`
//! and `x`: `solve::newton_system::IterationSystem::Device` over the rank's part), nothing of
//! the tangent crosses: its owned rows are gathered into the device operator on the GPU
//! (`DistBsr::set_from_local`, a plan uploaded once), the right-hand side's owned entries
//! copied there, and the correction written back with its ghosts filled through the device
//! halo. Only a cold set-up downloads the owned rows (the distributed set-up runs on the host).

use std::sync::Arc;
use std::time::Instant;

use amg::dist_cycle::{DeviceDistHierarchy, DistHierarchy};
use amg::{AmgParams, CgParams, NearNullSpace, PointBlockJacobi, TransferReport};
use anyhow::{bail, Context, Result};
use comm::Comm;
use linalg::dist::{DistBsr, DistPattern, RowPartition};
use linalg::{Bsr, Device, Layout, Vector};

use crate::linear_solver::{DeviceSolveReport, LinearSolveReport, SetupKind};

/// The preconditioner of a distributed solve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DistMethod {
    Amg,
    Jacobi,
}

/// One rank's share of the distributed linear solver (see the module documentation).
pub struct DistSolver {
    pub params: CgParams,
    pub method: DistMethod,
    /// The hierarchy's options (`linear_solver.amg`).
    pub amg: AmgParams,
    /// Whether the tangent is symmetric (CG), or not (a follower pressure: GMRES).
    pub symmetric: bool,
    comm: Arc<dyn Comm>,
    n_owned_nodes: usize,
    node_globals: Vec<u64>,
    owned_serial_ids: Vec<u64>,
    /// The rigid-body modes of the part's nodes (owned, then ghosts), `3 n x 6` row-major.
    near_null: NearNullSpace,
    pattern: Option<Arc<DistPattern>>,
    hierarchy: Option<DistHierarchy>,
    /// Where the solves run (this rank's GPU, or the host).
    device: Device,
    /// The tangent's owned rows on the GPU (kept: later solves upload values only).
    device_operator: Option<DistBsr>,
    /// The hierarchy's levels on the GPU.
    device_hierarchy: Option<DeviceDistHierarchy>,
}

impl DistSolver {
    /// A solver for the tangents of `part` on the ranks of `comm`; `amg`: the hierarchy's
    /// options (checked at the first set-up); `symmetric`: whether the tangents are (CG) or not
    /// (GMRES).
    pub fn new(
        params: CgParams,
        method: DistMethod,
        amg: AmgParams,
        symmetric: bool,
        comm: Arc<dyn Comm>,
        part: &mesh::MeshPart,
        near_null: NearNullSpace,
    ) -> Self {
        let n = part.n_owned_nodes();
        Self {
            params,
            method,
            amg,
            symmetric,
            comm,
            n_owned_nodes: n,
            node_globals: part.node_globals.clone(),
            owned_serial_ids: part.node_serial_ids[..n].to_vec(),
            near_null,
            pattern: None,
            hierarchy: None,
            device: Device::Host,
            device_operator: None,
            device_hierarchy: None,
        }
    }

    /// Solves on `device` (this rank's GPU; the host by default): CG, or GMRES for a follower
    /// pressure's tangent, with the V-cycle on the device. On a GPU an unset
    /// `process_eq_limit` takes the GPU ranks' default (`amg::AmgParams::on_gpu_ranks`).
    pub fn on_device(mut self, device: Device) -> Self {
        if !device.is_host() {
            self.amg = self.amg.on_gpu_ranks();
        }
        self.device = device;
        self
    }

    /// Where the solves run (this rank's GPU, or the host).
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// New rigid-body modes (all local nodes); the next solve sets the hierarchy up afresh.
    pub fn set_near_null_space(&mut self, modes: NearNullSpace) {
        self.near_null = modes;
        self.hierarchy = None;
        self.device_hierarchy = None;
    }

    /// Collective. Solves `k x = b` from `x = 0` on the owned rows of the rank-local tangent
    /// `k` (its owned rows complete, constraints eliminated) and right-hand side `b`, to `rtol`
    /// (`None`: the configured tolerance); `x`'s ghost entries are filled from their owners.
    pub fn solve_to(
        &mut self,
        k: &Bsr,
        b: &Vector,
        x: &mut Vector,
        rtol: Option<f64>,
    ) -> Result<LinearSolveReport> {
        let started = Instant::now();
        let pattern = match &self.pattern {
            Some(p) => p.clone(),
            None => {
                let partition = RowPartition::new(self.comm.clone(), self.n_owned_nodes)?;
                let p = DistPattern::from_local(partition, k.pattern(), &self.node_globals, 3)
                    .context("the distributed pattern of the tangent")?;
                // the halo fills every ghost node of the part (ascending global ids), whether
                // an owned row reaches it or not; agreed, so no rank goes on alone
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
                p
            }
        };
        let owned = 3 * self.n_owned_nodes;
        let params = CgParams {
            rtol: rtol.unwrap_or(self.params.rtol),
            ..self.params
        };
        let on_gpu = !self.device.is_host();
        // Where the tangent was assembled: on this rank's GPU (the Newton loop runs there) or
        // on the host.
        let assembled_on_gpu = !k.device().is_host();
        if assembled_on_gpu && !on_gpu {
            bail!(
                "the tangent lives on {}, the distributed solver on the host",
                k.device().name()
            );
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
        let setup = match self.method {
            DistMethod::Jacobi => SetupKind::Jacobi,
            // on the CPUs the hierarchy takes the operator just filled as its finest level (no
            // second copy of the tangent) and the solve runs on it there
            DistMethod::Amg => {
                let fine = if on_gpu { None } else { host_a.take() };
                self.update_hierarchy(&pattern, k, owned, fine)?
            }
        };
        let finest = self.hierarchy.as_ref().and_then(|h| h.level_operator(0));
        let run = match (on_gpu, &self.device_operator, &host_a, finest) {
            (true, Some(d), _, _) => d,
            (false, _, Some(a), _) => a,
            (false, _, None, Some(a)) => a,
            _ => bail!("no operator where the solve runs"),
        };
        let pbj = match self.method {
            DistMethod::Jacobi => Some(PointBlockJacobi::new(run.diag())?),
            DistMethod::Amg => None,
        };
        self.device.synchronize()?;
        let setup_s = started.elapsed().as_secs_f64();
        let t2 = self.device.transfers();
        let pc: &dyn amg::Preconditioner = match (&pbj, &self.device_hierarchy, &self.hierarchy) {
            (Some(pbj), _, _) => pbj,
            (None, Some(d), _) if on_gpu => d,
            (None, _, Some(h)) => h,
            _ => bail!("no preconditioner was set up"),
        };
        let mut solution = run.owned_zeros()?;
        let (iterations, converged, fallback) =
            self.krylov(run, &rhs, &mut solution, pc, &params)?;
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
        let device = on_gpu.then(|| DeviceSolveReport {
            name: self.device.name(),
            upload_bytes: t1.host_to_device - t0.host_to_device,
            setup: TransferReport::between(t1, t2),
            solve: TransferReport::between(t2, t3),
            download_bytes: self.device.transfers().device_to_host - t3.device_to_host,
        });
        Ok(LinearSolveReport {
            iterations,
            setup_s,
            solve_s: started.elapsed().as_secs_f64() - setup_s,
            converged,
            setup,
            hierarchy: None,
            device,
            rtol: params.rtol,
            fallback,
        })
    }

    /// Collective. The hierarchy for the tangent `k`: set up cold at the first call (and after
    /// new rigid-body modes), updated as `amg.reuse` says otherwise; its levels uploaded to the
    /// GPU when the solves run there, and hot updates run on the GPU
    /// (`DeviceDistHierarchy::update`; `reuse: none`: on the host, the levels refreshed).
    /// `filled`: the fine operator already filled from `k` on the host, taken as the finest
    /// level (else it is built here).
    fn update_hierarchy(
        &mut self,
        pattern: &Arc<DistPattern>,
        k: &Bsr,
        owned: usize,
        filled: Option<DistBsr>,
    ) -> Result<SetupKind> {
        // A hot update with the levels on the GPU runs there (the new tangent is the device
        // operator already): the Galerkin products, smoothers and eigenvalue estimates on the
        // device, only the off-rank coarse blocks and scalars crossing. The host hierarchy
        // keeps its set-up (its values are not used again: `reuse: none` is the host path).
        if let (Some(d), Some(a), Some(_)) = (
            &mut self.device_hierarchy,
            &self.device_operator,
            &self.hierarchy,
        ) {
            if !self.device.is_host() && self.amg.reuse != amg::params::Reuse::None {
                d.update(a)?;
                return Ok(SetupKind::AmgHot);
            }
        }
        // the fine operator on the host: from the host tangent, or downloaded from the GPU's
        // owned rows (the distributed cold set-up runs on the host)
        let fine = if let Some(fine) = filled {
            fine
        } else if k.device().is_host() {
            let mut fine = DistBsr::zeros(pattern.clone());
            fine.set_from_local(k)?;
            fine
        } else {
            self.device_operator
                .as_ref()
                .context("the tangent's owned rows on the GPU")?
                .to_device(&Device::Host)?
        };
        let setup = match &mut self.hierarchy {
            Some(h) => {
                h.update(fine)?;
                SetupKind::AmgHot
            }
            None => {
                let nns = self.near_null.row_major()[..owned * 6].to_vec();
                self.hierarchy = Some(DistHierarchy::new(
                    fine,
                    &self.owned_serial_ids,
                    nns,
                    6,
                    &self.amg,
                )?);
                SetupKind::AmgCold
            }
        };
        if !self.device.is_host() {
            let h = self.hierarchy.as_ref().expect("set up above");
            match &mut self.device_hierarchy {
                Some(d) => {
                    d.refresh(h)?;
                }
                None => self.device_hierarchy = Some(DeviceDistHierarchy::upload(h, &self.device)?),
            }
        }
        Ok(setup)
    }
}

impl DistSolver {
    /// Collective. The Krylov solve from `x = 0` on the owned rows: CG for a symmetric tangent,
    /// restarted GMRES (as the serial solver) otherwise; its iterations and whether it
    /// converged. A NaN in GMRES is an error.
    fn krylov(
        &self,
        a: &DistBsr,
        b: &Vector,
        x: &mut Vector,
        pc: &dyn amg::Preconditioner,
        params: &CgParams,
    ) -> Result<(usize, bool, Option<String>)> {
        if self.symmetric {
            let o = amg::cg_operator(a, b, x, pc, params).context("CG")?;
            // a breakdown (an indefinite tangent past a limit point, say): GMRES with the same
            // preconditioner, as the serial solver does
            let fallback = crate::linear_solver::gmres_after_breakdown(&o, x, |x| {
                let g =
                    amg::gmres_operator(a, b, x, pc, &crate::linear_solver::gmres_params(params))?;
                Ok(g)
            })?;
            return Ok(match fallback {
                Some(f) => (o.iterations + f.iterations, f.converged, Some(f.note)),
                None => (o.iterations, o.converged, None),
            });
        }
        let g = amg::gmres_operator(a, b, x, pc, &crate::linear_solver::gmres_params(params))
            .context("GMRES")?;
        if g.reason == amg::GmresStopReason::NonFinite {
            bail!("GMRES met a NaN or infinity after {} iterations; an element may be close to inversion: use more loading.steps", g.iterations);
        }
        Ok((g.iterations, g.converged, None))
    }
}

/// The rigid-body modes at the part's (deformed) node positions `coords`, rotations about the
/// centroid of all ranks' owned nodes: the serial run's modes bit for bit (the coordinates are
/// summed exactly, `assembly::coordinate_sums`). `layout`: the part's vector layout (owned
/// nodes first). Collective.
pub fn distributed_modes(layout: &Layout, coords: &[[f64; 3]]) -> Result<NearNullSpace> {
    let n_owned = layout.owned() / 3;
    let mut sums = assembly::coordinate_sums(&coords[..n_owned]);
    linalg::exact::ExactSum::allreduce(&**layout.comm(), &mut sums)?;
    let n = (layout.global_len() / 3).max(1) as f64;
    let centroid = sums.map(|s| s.value() / n);
    Ok(NearNullSpace::from_row_major(
        3 * coords.len(),
        assembly::RIGID_BODY_MODES_3D,
        assembly::rigid_body_modes_about(coords, centroid),
    )?)
}
