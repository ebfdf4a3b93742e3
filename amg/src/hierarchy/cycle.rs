//! The symmetric V-cycle and its workspace.
//!
//! A cycle's vectors (per level below the finest its right-hand side and iterate, per level the
//! smoother's scratch) live in a [`CycleWorkspace`] sized by [`Hierarchy::workspace`]: a cycle
//! allocates nothing. The hierarchy keeps one for [`Preconditioner::apply`]; callers that run
//! cycles concurrently give each its own ([`VCycle::apply_in`]).

use super::{Hierarchy, Level};
use crate::smoother::SmootherWork;
use crate::{AmgError, Preconditioner};
use linalg::{prolong_add, restrict, Bsr, Device, Vector};
use std::sync::TryLockError;

/// Vectors of one level of a V-cycle.
#[derive(Debug)]
pub(super) struct LevelWork {
    /// Right-hand side (empty on level 0: the caller's residual is used).
    pub b: Vector,
    /// Iterate (empty on level 0: the caller's output is used).
    pub x: Vector,
    pub sw: SmootherWork,
}

/// The vectors of one V-cycle on a given hierarchy ([`Hierarchy::workspace`]).
#[derive(Debug)]
pub struct CycleWorkspace {
    pub(super) levels: Vec<LevelWork>,
}

/// The V-cycle of a hierarchy on the caller's fine operator (see [`Hierarchy::with_operator`]).
#[derive(Debug, Clone, Copy)]
pub struct VCycle<'a> {
    hierarchy: &'a Hierarchy,
    fine: &'a Bsr,
}

impl<'a> VCycle<'a> {
    pub(super) fn new(hierarchy: &'a Hierarchy, fine: &'a Bsr) -> Self {
        Self { hierarchy, fine }
    }

    /// One V(d, d) cycle from a zero initial guess in the caller's workspace (made by
    /// [`Hierarchy::workspace`] on this hierarchy).
    pub fn apply_in(
        &self,
        r: &Vector,
        z: &mut Vector,
        ws: &mut CycleWorkspace,
    ) -> Result<(), AmgError> {
        self.hierarchy.v_cycle(self.fine, r, z, ws)
    }
}

impl Hierarchy {
    /// The workspace of one V-cycle on this hierarchy (the query that sizes it): for each level
    /// below the finest a right-hand side and an iterate, for every level the smoother's two
    /// scratch vectors.
    pub fn workspace(&self) -> Result<CycleWorkspace, AmgError> {
        let n_fine = self.fine_pattern.n_block_rows() * self.fine_bs;
        Self::new_workspace(&self.levels, n_fine, &self.device)
    }

    /// The workspace's vectors on `device` (where the hierarchy's operators live).
    pub(super) fn new_workspace(
        levels: &[Level],
        n_fine: usize,
        device: &Device,
    ) -> Result<CycleWorkspace, AmgError> {
        let levels = levels
            .iter()
            .enumerate()
            .map(|(l, lev)| {
                let n = lev.a.as_ref().map_or(n_fine, Bsr::n_rows);
                let m = if l == 0 { 0 } else { n };
                Ok(LevelWork {
                    b: Vector::zeros_on(device, m)?,
                    x: Vector::zeros_on(device, m)?,
                    sw: SmootherWork::new_on(device, n)?,
                })
            })
            .collect::<Result<_, AmgError>>()?;
        Ok(CycleWorkspace { levels })
    }

    /// One V-cycle from a zero initial guess on the fine operator `fine` (used on level 0 when the
    /// hierarchy holds none), in `ws`.
    fn v_cycle(
        &self,
        fine: &Bsr,
        r: &Vector,
        z: &mut Vector,
        ws: &mut CycleWorkspace,
    ) -> Result<(), AmgError> {
        if ws.levels.len() != self.levels.len() {
            return Err(AmgError::DimensionMismatch {
                what: "V-cycle workspace levels",
                expected: self.levels.len(),
                found: ws.levels.len(),
            });
        }
        let (first, rest) = ws
            .levels
            .split_first_mut()
            .expect("a hierarchy has at least one level");
        self.cycle(fine, 0, r, z, &mut first.sw, rest)
    }

    /// One V-cycle with the hierarchy's own workspace; an error (never a wait, never an
    /// allocation) if another thread holds it.
    fn v_cycle_own(&self, fine: &Bsr, r: &Vector, z: &mut Vector) -> Result<(), AmgError> {
        let mut guard = match self.work.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => return Err(AmgError::WorkspaceBusy),
        };
        self.v_cycle(fine, r, z, &mut guard)
    }

    /// One V-cycle on level `l`: `x` (overwritten) approximates `A_l^{-1} b`.
    fn cycle(
        &self,
        fine: &Bsr,
        l: usize,
        b: &Vector,
        x: &mut Vector,
        sw: &mut SmootherWork,
        rest: &mut [LevelWork],
    ) -> Result<(), AmgError> {
        let lev = &self.levels[l];
        let (Some(smoother), Some(tr)) = (lev.smoother.as_ref(), self.transfers.get(l)) else {
            return Ok(self.coarse.solve(b, x)?);
        };
        let a = lev.a.as_ref().unwrap_or(fine);
        smoother.smooth(a, b, x, true, sw)?;
        sw.r.copy_from(b)?;
        a.spmv_add(-1.0, x, 1.0, &mut sw.r)?;
        let Some((c, deeper)) = rest.split_first_mut() else {
            return Ok(()); // unreachable: every non-coarsest level has a work entry below it
        };
        restrict(&tr.galerkin, &tr.p, &sw.r, &mut c.b)?;
        self.cycle(fine, l + 1, &c.b, &mut c.x, &mut c.sw, deeper)?;
        prolong_add(&tr.p, &c.x, x)?;
        smoother.smooth(a, b, x, false, sw)
    }
}

impl Preconditioner for Hierarchy {
    /// One V(d, d) cycle from a zero initial guess (symmetric: the same smoother before and after),
    /// in the hierarchy's own workspace. Errors if the hierarchy holds no fine operator (blocked
    /// [`Hierarchy::setup_external`]: use [`Hierarchy::with_operator`]) or another thread is
    /// using the workspace.
    fn apply(&self, r: &Vector, z: &mut Vector) -> Result<(), AmgError> {
        let fine = self.levels[0]
            .a
            .as_ref()
            .ok_or(AmgError::MissingFineOperator)?;
        self.v_cycle_own(fine, r, z)
    }
}

impl Preconditioner for VCycle<'_> {
    /// One V(d, d) cycle from a zero initial guess on the bound fine operator, in the hierarchy's
    /// own workspace (see [`VCycle::apply_in`] for concurrent cycles).
    fn apply(&self, r: &Vector, z: &mut Vector) -> Result<(), AmgError> {
        self.hierarchy.v_cycle_own(self.fine, r, z)
    }
}
