//! Galerkin product `A_c = P^T A P`.
//!
//! [`ptap_symbolic`] (once per pair of patterns) builds the transpose plan of `P`, the pattern of
//! `A P`, the pattern of `A_c` and picks a numeric strategy; [`ptap_numeric`] (every Newton step,
//! new `A` values, same `P`) recomputes only values. Blocks: `A` is `b x b`, `P` is `b x c`, `A_c`
//! is `c x c`.
//!
//! Strategies:
//! - fused (module `fused`), when `P`'s rows have locality: one pass over the fine rows, each
//!   computing `W_i = A_i P` in a small buffer and adding `P_i^T W_i` into `A_c`, in coloured
//!   chunks that own their coarse rows. `A P` is never stored.
//! - two-pass otherwise: `W = A P` into a workspace held by the plan, then `A_c = P^T W`, reading
//!   `P^T`'s blocks straight from `P` (transposed on the fly) through the transpose plan's slot
//!   map.
//!
//! Both compute every block of `W` in the same order; they differ only in how the terms of a block
//! of `A_c` are grouped, and each is deterministic.

mod fused;
#[cfg(test)]
mod tests;

use std::sync::{Arc, Mutex, TryLockError};

use fused::{fused_numeric, FusedArgs, FusedPlan};

use crate::kernels::gemm::{dispatch_product, DynNn, DynTn, Nn, Tn};
use crate::spgemm::{
    check_dim, product_numeric, product_pattern, spgemm_symbolic_shared, LeftRows, SpgemmPlan,
};
use crate::transpose::{same_pattern, transpose_symbolic_shared, TransposePlan};
use crate::{BlockPattern, Bsr, LinalgError};

/// `dispatch_galerkin!((b, c), (m_ap, m_ptw) => body)` binds the block products of `A P` (`Nn`,
/// `b x b` times `b x c`) and of `P^T W` (`Tn`, `(b x c)^T` times `b x c`), fixed-size for the shapes
/// (b, c) = (3, 6), (6, 6), (3, 3), (1, 1), runtime-size otherwise, and evaluates `body`.
macro_rules! dispatch_galerkin {
    (($b:expr, $c:expr), ($m1:ident, $m2:ident) => $body:expr) => {
        match ($b, $c) {
            (3, 6) => {
                let ($m1, $m2) = (Nn::<3, 3, 6>, Tn::<6, 3, 6>);
                $body
            }
            (6, 6) => {
                let ($m1, $m2) = (Nn::<6, 6, 6>, Tn::<6, 6, 6>);
                $body
            }
            (3, 3) => {
                let ($m1, $m2) = (Nn::<3, 3, 3>, Tn::<3, 3, 3>);
                $body
            }
            (1, 1) => {
                let ($m1, $m2) = (Nn::<1, 1, 1>, Tn::<1, 1, 1>);
                $body
            }
            (b, c) => {
                let ($m1, $m2) = (DynNn { r: b, k: b, c }, DynTn { r: c, k: b, c });
                $body
            }
        }
    };
}

/// Plan of `P^T A P` for one pair of patterns.
///
/// Workspace (two-pass strategy only): the plan owns the values of `A P` (`nnz(AP) * b * c`
/// doubles), allocated by the first [`ptap_numeric`] call and reused by later ones, so the hot path
/// allocates nothing large. Numeric calls on one plan from several threads at once stay correct: a
/// call that finds the workspace busy uses a temporary one. The fused strategy needs no workspace.
#[derive(Debug)]
pub struct PtapPlan {
    pt: TransposePlan,
    ap: SpgemmPlan,
    pattern: Arc<BlockPattern>,
    strategy: Strategy,
}

/// How [`ptap_numeric`] computes the values.
#[derive(Debug)]
enum Strategy {
    Fused(FusedPlan),
    TwoPass { ap_values: Mutex<Vec<f64>> },
}

impl PtapPlan {
    /// Symbolic phase sharing the caller's patterns (numeric calls then recognise matrices on these
    /// very patterns by pointer, without comparing them).
    pub fn new(a: &Arc<BlockPattern>, p: &Arc<BlockPattern>) -> Result<Self, LinalgError> {
        Self::with_fused(a, p, FusedPlan::new)
    }

    /// [`PtapPlan::new`] with the fused strategy planned by `fused` (two-pass if it declines).
    fn with_fused(
        a: &Arc<BlockPattern>,
        p: &Arc<BlockPattern>,
        fused: impl FnOnce(&BlockPattern) -> Option<FusedPlan>,
    ) -> Result<Self, LinalgError> {
        check_dim("ptap: block cols of A", p.n_block_rows(), a.n_block_cols())?;
        check_dim("ptap: block rows of A", p.n_block_rows(), a.n_block_rows())?;
        let ap = spgemm_symbolic_shared(a.clone(), p.clone())?;
        let pt = transpose_symbolic_shared(p.clone());
        let pattern = Arc::new(product_pattern(pt.pattern(), ap.pattern()));
        let strategy = match fused(p) {
            Some(f) => Strategy::Fused(f),
            None => Strategy::TwoPass {
                ap_values: Mutex::new(Vec::new()),
            },
        };
        Ok(Self {
            pt,
            ap,
            pattern,
            strategy,
        })
    }

    /// `Some(number of colours)` if numeric calls use the fused strategy (one sequential phase per
    /// colour), `None` if they use the two-pass one.
    pub fn fused_colors(&self) -> Option<usize> {
        match &self.strategy {
            Strategy::Fused(f) => Some(f.n_colors()),
            Strategy::TwoPass { .. } => None,
        }
    }

    /// Pattern of `A_c = P^T A P`.
    pub fn pattern(&self) -> &Arc<BlockPattern> {
        &self.pattern
    }

    /// Pattern of the intermediate `A P`.
    pub fn ap_pattern(&self) -> &Arc<BlockPattern> {
        self.ap.pattern()
    }

    /// Pattern of `P^T`.
    pub fn pt_pattern(&self) -> &Arc<BlockPattern> {
        self.pt.pattern()
    }
}

/// Symbolic `P^T A P` (copies both patterns; see [`PtapPlan::new`] to share them). Errors if `A` is
/// not `n x n` blocks with `n` the block rows of `P`.
pub fn ptap_symbolic(a: &BlockPattern, p: &BlockPattern) -> Result<PtapPlan, LinalgError> {
    PtapPlan::new(&Arc::new(a.clone()), &Arc::new(p.clone()))
}

/// Recomputes `ac = P^T A P` on the plan's patterns. `A` must have `b x b` blocks with `b` the block
/// rows of `P`; `ac` must carry `plan.pattern()` and `c x c` blocks (`c` the block cols of `P`).
/// Deterministic: every block sums in a fixed order whatever the thread count.
pub fn ptap_numeric(plan: &PtapPlan, a: &Bsr, p: &Bsr, ac: &mut Bsr) -> Result<(), LinalgError> {
    for (ok, what) in [
        (same_pattern(a.pattern(), plan.ap.a()), "ptap_numeric: A"),
        (same_pattern(p.pattern(), plan.ap.b()), "ptap_numeric: P"),
        (
            same_pattern(ac.pattern(), &plan.pattern),
            "ptap_numeric: A_c",
        ),
    ] {
        if !ok {
            return Err(LinalgError::PatternMismatch { what });
        }
    }
    let (b, c) = (p.block_rows(), p.block_cols());
    check_dim("ptap_numeric: block rows of A", b, a.block_rows())?;
    check_dim("ptap_numeric: block cols of A", b, a.block_cols())?;
    check_dim("ptap_numeric: block rows of A_c", c, ac.block_rows())?;
    check_dim("ptap_numeric: block cols of A_c", c, ac.block_cols())?;

    match &plan.strategy {
        Strategy::Fused(fused) => {
            let args = FusedArgs {
                plan: fused,
                a: a.pattern(),
                a_values: a.values(),
                p: p.pattern(),
                p_values: p.values(),
                ap: plan.ap.pattern(),
                ac: &plan.pattern,
            };
            let out = ac.values_mut();
            dispatch_galerkin!((b, c), (m_ap, m_ptw) => fused_numeric(m_ap, m_ptw, &args, out));
        }
        Strategy::TwoPass { ap_values } => two_pass(plan, ap_values, a, p, ac),
    }
    Ok(())
}

/// `W = A P` into the plan's workspace (or a temporary one if it is busy), then `A_c = P^T W`.
fn two_pass(plan: &PtapPlan, workspace: &Mutex<Vec<f64>>, a: &Bsr, p: &Bsr, ac: &mut Bsr) {
    let (b, c) = (p.block_rows(), p.block_cols());
    let mut guard = match workspace.try_lock() {
        Ok(g) => Some(g),
        // The workspace is overwritten before it is read: a panic elsewhere cannot leave bad state.
        Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    };
    let mut temporary = Vec::new();
    let ap_values = match guard.as_deref_mut() {
        Some(v) => v,
        None => &mut temporary,
    };
    ap_values.resize(plan.ap.pattern().nnz() * b * c, 0.0);

    let a_rows = LeftRows {
        pattern: a.pattern(),
        slots: None,
    };
    dispatch_product!(Nn, DynNn, (b, b, c), m => {
        product_numeric(m, a_rows, a.values(), p.pattern(), p.values(), plan.ap.pattern(), ap_values)
    });
    let pt_rows = LeftRows {
        pattern: plan.pt.pattern(),
        slots: Some(plan.pt.source_slots()),
    };
    dispatch_product!(Tn, DynTn, (c, b, c), m => {
        product_numeric(m, pt_rows, p.values(), plan.ap.pattern(), ap_values, &plan.pattern, ac.values_mut())
    });
}

/// `P^T A P` as a new matrix.
pub fn ptap(a: &Bsr, p: &Bsr) -> Result<Bsr, LinalgError> {
    let plan = PtapPlan::new(a.pattern(), p.pattern())?;
    let mut ac = Bsr::zeros(plan.pattern.clone(), p.block_cols(), p.block_cols());
    ptap_numeric(&plan, a, p, &mut ac)?;
    Ok(ac)
}
