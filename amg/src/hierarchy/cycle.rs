//! The symmetric V-cycle of the serial hierarchy (the one [`crate::vcycle::v_cycle`] over its
//! levels, with the fused restriction and prolongation kernels) and its workspace.
//!
//! A cycle's vectors (per level below the finest its right-hand side and iterate, per level the
//! smoother's scratch) live in a [`CycleWorkspace`] sized by [`Hierarchy::workspace`]: a cycle
//! allocates nothing. The hierarchy keeps one for [`Preconditioner::apply`]; callers that run
//! cycles concurrently give each its own ([`VCycle::apply_in`]).

use super::{Hierarchy, Level};
use crate::smoother::{Smoother, SmootherWork};
use crate::vcycle::{CycleLevels, LevelWork};
use crate::{AmgError, Preconditioner};
use linalg::{prolong_add, restrict, Bsr, Device, Vector};
use std::sync::TryLockError;

/// The vectors of one V-cycle on a given hierarchy ([`Hierarchy::workspace`]); every hierarchy
/// cycles in one: a distributed one holds its own, empty (`Default`) until its first cycle.
#[derive(Debug, Default)]
pub struct CycleWorkspace {
    pub(crate) levels: Vec<LevelWork>,
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
        crate::vcycle::v_cycle(&VCycle::new(self, fine), 0, r, z, &mut first.sw, rest)
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
}

/// The serial levels: level 0's operator is the caller's where the hierarchy holds none; the
/// transfers are the fused kernels (the restriction through the Galerkin plan's `P^T` map).
impl CycleLevels for VCycle<'_> {
    type Operator = Bsr;

    fn operator(&self, l: usize) -> &Bsr {
        self.hierarchy.levels[l].a.as_ref().unwrap_or(self.fine)
    }

    fn smoother(&self, l: usize) -> Option<&Smoother> {
        let h = self.hierarchy;
        h.levels[l]
            .smoother
            .as_ref()
            .filter(|_| l < h.transfers.len())
    }

    fn restrict(&self, l: usize, r: &Vector, rc: &mut Vector) -> Result<(), AmgError> {
        let tr = &self.hierarchy.transfers[l];
        Ok(restrict(&tr.galerkin, &tr.p, r, rc)?)
    }

    fn prolong_add(&self, l: usize, xc: &Vector, x: &mut Vector) -> Result<(), AmgError> {
        Ok(prolong_add(&self.hierarchy.transfers[l].p, xc, x)?)
    }

    fn coarse_solve(&self, _l: usize, b: &Vector, x: &mut Vector) -> Result<(), AmgError> {
        Ok(self.hierarchy.coarse.solve(b, x)?)
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
