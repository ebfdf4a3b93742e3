//! The symmetric V-cycle of the serial hierarchy (the one [`crate::vcycle::v_cycle`] over its
//! levels, with the fused restriction and prolongation kernels) and its workspace.
//!
//! A cycle's vectors (per level below the finest its right-hand side and iterate, per level the
//! smoother's scratch) live in a [`CycleWorkspace`] sized by [`Hierarchy::workspace`]: a cycle
//! allocates nothing. The hierarchy keeps one for [`Preconditioner::apply`]; callers that run
//! cycles concurrently give each its own ([`VCycle::apply_in`]).

use super::{Hierarchy, Level};
use crate::level_matrix::LevelMatrix;
use crate::smoother::{Smoother, SmootherWork};
use crate::vcycle::{CycleLevels, LevelWork};
use crate::{AmgError, Preconditioner};
use linalg::{Bsr, Device, Vector};
use std::sync::TryLockError;

/// The vectors of one V-cycle on a given hierarchy ([`Hierarchy::workspace`]); every hierarchy
/// cycles in one.
#[derive(Debug, Default)]
pub struct CycleWorkspace {
    pub(crate) levels: Vec<LevelWork>,
}

/// The V-cycle of a hierarchy on the caller's fine operator (see [`Hierarchy::with_operator`]).
#[derive(Debug)]
pub struct VCycle<'a, M: LevelMatrix = Bsr> {
    hierarchy: &'a Hierarchy<M>,
    fine: &'a M,
}

impl<M: LevelMatrix> Clone for VCycle<'_, M> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M: LevelMatrix> Copy for VCycle<'_, M> {}

impl<'a, M: LevelMatrix> VCycle<'a, M> {
    pub(super) fn new(hierarchy: &'a Hierarchy<M>, fine: &'a M) -> Self {
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
        let n_fine = self.state.fine_pattern.n_block_rows() * self.state.fine_bs;
        let levels = self
            .levels
            .iter()
            .enumerate()
            .map(|(l, lev)| match &lev.a {
                Some(a) => a.level_work(l == 0),
                None => serial_level_work(&self.state.device, n_fine, l == 0),
            })
            .collect::<Result<_, AmgError>>()?;
        Ok(CycleWorkspace { levels })
    }
}

/// The V-cycle vectors of a serial level of `n` unknowns on `device` (on the finest no
/// right-hand side and iterate of its own).
pub(crate) fn serial_level_work(
    device: &Device,
    n: usize,
    finest: bool,
) -> Result<LevelWork, AmgError> {
    let m = if finest { 0 } else { n };
    Ok(LevelWork {
        b: Vector::zeros_on(device, m)?,
        x: Vector::zeros_on(device, m)?,
        sw: SmootherWork::new_on(device, n)?,
    })
}

impl<M: LevelMatrix> Hierarchy<M> {
    /// The workspace of one V-cycle on `levels` ([`LevelMatrix::level_work`]), `fine` on level
    /// 0 where the level holds no operator.
    pub(crate) fn new_workspace(levels: &[Level<M>], fine: &M) -> Result<CycleWorkspace, AmgError> {
        let levels = levels
            .iter()
            .enumerate()
            .map(|(l, lev)| lev.a.as_ref().unwrap_or(fine).level_work(l == 0))
            .collect::<Result<_, AmgError>>()?;
        Ok(CycleWorkspace { levels })
    }

    /// One V-cycle from a zero initial guess on the fine operator `fine` (used on level 0 when the
    /// hierarchy holds none), in `ws`.
    fn v_cycle(
        &self,
        fine: &M,
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
    fn v_cycle_own(&self, fine: &M, r: &Vector, z: &mut Vector) -> Result<(), AmgError> {
        let mut guard = match self.work.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => return Err(AmgError::WorkspaceBusy),
        };
        self.v_cycle(fine, r, z, &mut guard)
    }
}

/// The levels of any hierarchy: level 0's operator is the caller's where the hierarchy holds
/// none; the transfers and the coarsest solve are `M`'s (serial: the fused kernels, the
/// restriction through the Galerkin plan's `P^T` map; on ranks `P^T` through its transposed
/// parts and `P` through the halo).
impl<M: LevelMatrix> CycleLevels for VCycle<'_, M> {
    type Operator = M;

    fn operator(&self, l: usize) -> &M {
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
        M::restrict(&self.hierarchy.transfers[l], r, rc)
    }

    fn prolong_add(&self, l: usize, xc: &Vector, x: &mut Vector) -> Result<(), AmgError> {
        M::prolong_add(&self.hierarchy.transfers[l], xc, x)
    }

    fn coarse_solve(&self, l: usize, b: &Vector, x: &mut Vector) -> Result<(), AmgError> {
        self.operator(l).coarse_solve(&self.hierarchy.coarse, b, x)
    }
}

impl<M: LevelMatrix> Preconditioner for Hierarchy<M> {
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

impl<M: LevelMatrix> Preconditioner for VCycle<'_, M> {
    /// One V(d, d) cycle from a zero initial guess on the bound fine operator, in the hierarchy's
    /// own workspace (see [`VCycle::apply_in`] for concurrent cycles).
    fn apply(&self, r: &Vector, z: &mut Vector) -> Result<(), AmgError> {
        self.hierarchy.v_cycle_own(self.fine, r, z)
    }
}
