//! The one V-cycle of every hierarchy. The serial [`crate::Hierarchy`] (with its fused
//! kernels: the restriction through the Galerkin plan's transpose map, `prolong_add`) and the
//! distributed hierarchy on the host and on GPUs ([`crate::dist_cycle`]) run [`v_cycle`] over
//! their levels ([`CycleLevels`]): only a level's operator, its transfers and the coarsest solve
//! differ between them, never the order of the operations.

use crate::smoother::{Smoother, SmootherWork, SmoothingOperator};
use crate::AmgError;
use linalg::Vector;

/// The vectors of one level of a V-cycle, where the level lives: below the finest its
/// right-hand side and iterate (empty on the finest: the caller's are used), and the smoother's
/// scratch.
#[derive(Debug)]
pub struct LevelWork {
    pub(crate) b: Vector,
    pub(crate) x: Vector,
    pub(crate) sw: SmootherWork,
}

/// The levels of a hierarchy as its V-cycle sees them, finest (0) first.
pub(crate) trait CycleLevels {
    /// A level's operator: a `Bsr` on one process, a rank's rows of a `DistBsr` on several.
    type Operator: SmoothingOperator + ?Sized;
    /// The operator of level `l`.
    fn operator(&self, l: usize) -> &Self::Operator;
    /// The smoother of level `l`; `None` on the coarsest (solved by [`Self::coarse_solve`]).
    fn smoother(&self, l: usize) -> Option<&Smoother>;
    /// `rc = P_l^T r` (level `l` to `l + 1`; `l` above the coarsest).
    fn restrict(&self, l: usize, r: &Vector, rc: &mut Vector) -> Result<(), AmgError>;
    /// `x += P_l xc` (level `l + 1` to `l`).
    fn prolong_add(&self, l: usize, xc: &Vector, x: &mut Vector) -> Result<(), AmgError>;
    /// `x = A_l^{-1} b` on the coarsest level `l`.
    fn coarse_solve(&self, l: usize, b: &Vector, x: &mut Vector) -> Result<(), AmgError>;
}

/// One V(d, d) cycle on level `l` from `x = 0` (symmetric: the same smoother before and
/// after): `x` (overwritten) approximates `A_l^{-1} b`. `sw`: level `l`'s smoother scratch,
/// `rest`: the vectors of the levels below (one per level).
pub(crate) fn v_cycle<C: CycleLevels + ?Sized>(
    levels: &C,
    l: usize,
    b: &Vector,
    x: &mut Vector,
    sw: &mut SmootherWork,
    rest: &mut [LevelWork],
) -> Result<(), AmgError> {
    let Some(smoother) = levels.smoother(l) else {
        return levels.coarse_solve(l, b, x);
    };
    let Some((c, deeper)) = rest.split_first_mut() else {
        return Err(AmgError::DimensionMismatch {
            what: "V-cycle work levels",
            expected: l + 2,
            found: l + 1,
        });
    };
    let a = levels.operator(l);
    smoother.smooth(a, b, x, true, sw)?;
    sw.r.copy_from(b)?;
    a.subtract_product(x, &mut sw.r)?;
    levels.restrict(l, &sw.r, &mut c.b)?;
    v_cycle(levels, l + 1, &c.b, &mut c.x, &mut c.sw, deeper)?;
    levels.prolong_add(l, &c.x, x)?;
    smoother.smooth(a, b, x, false, sw)
}
