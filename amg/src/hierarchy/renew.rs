//! Renewal for a new near-null space (Newton's rigid-body modes of the deformed configuration at
//! each load step): the values of a cold set-up, without its symbolic phase where it would build
//! the same plans again.
//!
//! The aggregates are recomputed, not assumed: they depend on which blocks the strength graph
//! keeps (`strength_threshold` compares the values; even at 0 a block that is exactly zero is no
//! edge and a row without kept couplings is isolated), while the joins count edges and read no
//! value, so at the default threshold the next load step's tangent gives the same aggregates on
//! every level (`P`'s, and so `P^T A P`'s, patterns follow from them). A transfer keeps its plans
//! only where the aggregates and the level operator's pattern came out as before, so the result
//! is a cold set-up's whatever the inputs.
//!
//! With `renewal: keep_aggregates` ([`crate::Renewal::KeepAggregates`]) each level keeps its
//! aggregates instead: no strength graph (on a GPU: no download of the operator), no
//! aggregation, every plan kept; the values are those of a cold set-up whose aggregation had
//! given the kept aggregates. On ranks the same holds: every level keeps its tentative
//! prolongator's exchange, smoothing and Galerkin plans (`crate::dist_cycle`).

use super::Hierarchy;
use crate::report::{RenewalReport, TransferReport};
use crate::{AmgError, NearNullSpace};
use linalg::Bsr;
use std::borrow::Cow;
use std::time::Instant;

impl Hierarchy {
    /// Rebuilds the hierarchy for the operator `a` (the pattern and block size of the last set-up
    /// or update, on its device) and the near-null space `near_null`: every level's operator,
    /// prolongator, smoother and the coarsest inverse equal those of a cold set-up with the same
    /// inputs and parameters, bit for bit; what it saves is the symbolic phase of every transfer
    /// whose aggregates did not change (see the module doc). Prolongators get fresh versions.
    /// Call it in place of dropping the hierarchy and setting up again; an owning hierarchy
    /// copies `a`. On error the hierarchy must be rebuilt by a setup.
    pub fn set_near_null_space(
        &mut self,
        a: &Bsr,
        near_null: &NearNullSpace,
    ) -> Result<RenewalReport, AmgError> {
        let t_total = Instant::now();
        self.check_shape(a)?;
        let device = self.state.device.clone();
        let before = device.transfers();
        // each level's smoother diagonal goes with its transfer: its storage is reused
        let diagonals = self
            .levels
            .iter_mut()
            .map(|l| l.smoother.take().map(|s| s.pbj));
        let previous = std::mem::take(&mut self.transfers)
            .into_iter()
            .zip(diagonals)
            .map(|(t, d)| Some(t.into_symbolic(d)))
            .collect();
        // the old operators, prolongators and smoothers go before the new ones are built
        self.levels.clear();
        let params = self.params.clone();
        let owns = self.state.owns_fine;
        *self = Self::setup_impl(
            a,
            Cow::Borrowed(near_null),
            &params,
            self.next_version,
            previous,
        )?;
        if owns {
            let t = Instant::now();
            self.own_fine(a.clone());
            self.state.report.setup.copy_operator_s = t.elapsed().as_secs_f64();
        }
        let mut timings = self.state.report.setup.clone();
        timings.total_s = t_total.elapsed().as_secs_f64();
        let plans_reused = self.state.report.plans_reused;
        Ok(RenewalReport {
            plans_reused,
            plans_built: self.transfers.len() - plans_reused,
            timings,
            transfers: TransferReport::between(before, device.transfers()),
        })
    }
}
