//! The linear solver of one rank of a distributed run: the rank's owned rows of the tangent as a
//! `linalg::dist::DistBsr`, CG with the distributed smoothed-aggregation AMG
//! (`amg::dist_cycle::DistHierarchy`, Jacobi-smoothed V-cycle) or point-block Jacobi, and the
//! correction's ghost entries filled from their owners afterwards.
//!
//! Calling order: [`DistSolver::new`] once per run; [`DistSolver::solve_to`] per Newton
//! iteration (collective on every rank). The distributed pattern is built at the first solve
//! and kept (the tangent's pattern never changes); the hierarchy is set up cold at the first
//! solve after [`DistSolver::set_near_null_space`] and hot-updated (new values, the same
//! prolongators) for every later one.

use std::sync::Arc;
use std::time::Instant;

use amg::dist_cycle::{DistHierarchy, DistHierarchyParams};
use amg::{CgParams, NearNullSpace, PointBlockJacobi};
use anyhow::{bail, Context, Result};
use comm::Comm;
use linalg::dist::{DistBsr, DistPattern, RowPartition};
use linalg::{Bsr, Layout, Vector};

use crate::linear_solver::{LinearSolveReport, SetupKind};

/// The options of the distributed V-cycle (those of `hexfem bench distributed --amg`).
const DIST_AMG: DistHierarchyParams = DistHierarchyParams {
    omega_p: 0.6,
    omega: 0.5,
    sweeps: 2,
    coarse_limit: 600,
    max_levels: 10,
};

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
    comm: Arc<dyn Comm>,
    n_owned_nodes: usize,
    node_globals: Vec<u64>,
    owned_serial_ids: Vec<u64>,
    /// The rigid-body modes of the part's nodes (owned, then ghosts), `3 n x 6` row-major.
    near_null: NearNullSpace,
    pattern: Option<Arc<DistPattern>>,
    hierarchy: Option<DistHierarchy>,
}

impl DistSolver {
    /// A solver for the tangents of `part` on the ranks of `comm`.
    pub fn new(
        params: CgParams,
        method: DistMethod,
        comm: Arc<dyn Comm>,
        part: &mesh::MeshPart,
        near_null: NearNullSpace,
    ) -> Self {
        let n = part.n_owned_nodes();
        Self {
            params,
            method,
            comm,
            n_owned_nodes: n,
            node_globals: part.node_globals.clone(),
            owned_serial_ids: part.node_serial_ids[..n].to_vec(),
            near_null,
            pattern: None,
            hierarchy: None,
        }
    }

    /// New rigid-body modes (all local nodes); the next solve sets the hierarchy up afresh.
    pub fn set_near_null_space(&mut self, modes: NearNullSpace) {
        self.near_null = modes;
        self.hierarchy = None;
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
                let n_ghosts = self.node_globals.len() - self.n_owned_nodes;
                if p.halo().ghosts().len() != n_ghosts {
                    bail!(
                        "the tangent's owned rows reach {} ghost nodes, the mesh part has {n_ghosts}",
                        p.halo().ghosts().len()
                    );
                }
                self.pattern = Some(p.clone());
                p
            }
        };
        let mut a = DistBsr::zeros(pattern.clone());
        a.set_from_local(k)?;
        let owned = 3 * self.n_owned_nodes;
        let mut rhs = a.new_owned_vector();
        rhs.host_mut()?.copy_from_slice(&b.host()?[..owned]);
        let mut solution = a.new_owned_vector();
        let params = CgParams {
            rtol: rtol.unwrap_or(self.params.rtol),
            ..self.params
        };
        let (setup, outcome, setup_s) = match self.method {
            DistMethod::Jacobi => {
                let pbj = PointBlockJacobi::new(a.diag())?;
                let setup_s = started.elapsed().as_secs_f64();
                let outcome =
                    amg::cg_operator(&a, &rhs, &mut solution, &pbj, &params).context("CG")?;
                (SetupKind::Jacobi, outcome, setup_s)
            }
            DistMethod::Amg => {
                let mut fine = DistBsr::zeros(pattern.clone());
                fine.set_from_local(k)?;
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
                            &DIST_AMG,
                        )?);
                        SetupKind::AmgCold
                    }
                };
                let setup_s = started.elapsed().as_secs_f64();
                let h = self.hierarchy.as_ref().expect("set up above");
                let outcome =
                    amg::cg_operator(&a, &rhs, &mut solution, h, &params).context("CG")?;
                (setup, outcome, setup_s)
            }
        };
        let xs = x.host_mut()?;
        xs[..owned].copy_from_slice(solution.host()?);
        pattern.halo().update(xs)?;
        Ok(LinearSolveReport {
            iterations: outcome.iterations,
            setup_s,
            solve_s: started.elapsed().as_secs_f64() - setup_s,
            converged: outcome.converged,
            setup,
            hierarchy: None,
            device: None,
            rtol: params.rtol,
            fallback: None,
        })
    }
}

/// The rigid-body modes at the part's (deformed) node positions `coords`, rotations about the
/// centroid of all ranks' owned nodes (the same modes on every rank, as the serial run's up to
/// the rounding of the centroid). `layout`: the part's vector layout (owned nodes first).
/// Collective.
pub fn distributed_modes(layout: &Layout, coords: &[[f64; 3]]) -> Result<NearNullSpace> {
    let n_owned = layout.owned() / 3;
    let mut sums = [0.0; 4];
    for x in &coords[..n_owned] {
        for d in 0..3 {
            sums[d] += x[d];
        }
    }
    sums[3] = n_owned as f64;
    layout.comm().allreduce_sum(&mut sums)?;
    let c = [sums[0] / sums[3], sums[1] / sums[3], sums[2] / sums[3]];
    let shifted: Vec<[f64; 3]> = coords
        .iter()
        .map(|x| [x[0] - c[0], x[1] - c[1], x[2] - c[2]])
        .collect();
    // about the origin: the shifted coordinates' centroid is not recomputed
    let mut modes = Vec::with_capacity(coords.len() * 18);
    for [x, y, z] in shifted {
        let rows: [[f64; 6]; 3] = [
            [1.0, 0.0, 0.0, -y, 0.0, z],
            [0.0, 1.0, 0.0, x, -z, 0.0],
            [0.0, 0.0, 1.0, 0.0, y, -x],
        ];
        modes.extend(rows.iter().flatten());
    }
    Ok(NearNullSpace::from_row_major(
        3 * coords.len(),
        assembly::RIGID_BODY_MODES_3D,
        modes,
    )?)
}
