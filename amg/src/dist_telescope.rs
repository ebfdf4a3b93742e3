//! Small coarse levels gathered onto fewer ranks (PETSc GAMG's `process_eq_limit`): where a
//! coarse level has too few unknowns to keep every rank of the finer level busy, its coarse
//! vertices move onto the first ranks, evenly, and the ranks left without rows only take part
//! in the transfers to and from it (and in the collectives). On GPUs this removes the halo
//! exchanges of the small levels, where there is little work to hide them behind.
//!
//! The move keeps the global coarse numbering, the serial ids and the near-null rows of every
//! coarse vertex, so aggregates, prolongators and iteration counts stay the serial ones; only
//! the order of sums inside products changes with the owners (bit-identical for a fixed rank
//! count and limit).
//!
//! Calling order: [`crate::dist_tentative::dist_tentative_prolongator`] -> [`coarse_ranks`] ->
//! [`onto_first_ranks`] (where it says fewer ranks) -> prolongator smoothing and the Galerkin
//! product, which follow the moved columns.

use linalg::dist::{move_rows, RowPartition};
use linalg::Vector;

use crate::dist_tentative::DistTentative;
use crate::AmgError;

/// How many ranks hold a coarse level of `coarse_unknowns` when `active` ranks hold the finer
/// one: PETSc's `max(1, unknowns / limit)`, never more than `active`.
pub fn coarse_ranks(coarse_unknowns: usize, limit: usize, active: usize) -> usize {
    (coarse_unknowns / limit.max(1)).clamp(1, active.max(1))
}

/// Collective. `t` with its coarse vertices (the prolongator's columns, their serial ids and
/// near-null rows, `k x k` each) owned evenly by the first `ranks` ranks. The prolongator's
/// rows stay where they are.
pub fn onto_first_ranks(
    t: DistTentative,
    ranks: usize,
    k: usize,
) -> Result<DistTentative, AmgError> {
    let from = &t.coarse_partition;
    let comm = from.comm().clone();
    let to = RowPartition::even_on_first(comm.clone(), from.global_len(), ranks);
    let coarse_serial_ids = move_rows(from, &to, &t.coarse_serial_ids, 1, |s| {
        comm.alltoallv_u64(s)
    })?;
    let rows = t.coarse_nns.to_host_vec()?;
    let coarse_nns = Vector::from(move_rows(from, &to, &rows, k * k, |s| {
        comm.alltoallv_f64(s)
    })?);
    Ok(DistTentative {
        p: t.p.with_col_partition(to.clone())?,
        coarse_partition: to,
        coarse_serial_ids,
        coarse_nns,
    })
}

#[cfg(test)]
mod tests {
    use super::coarse_ranks;

    #[test]
    fn coarse_ranks_follow_petsc_rule_within_the_active_ranks() {
        assert_eq!(coarse_ranks(5640, 20_000, 2), 1);
        assert_eq!(coarse_ranks(77_268, 20_000, 2), 2);
        assert_eq!(coarse_ranks(77_268, 20_000, 4), 3);
        assert_eq!(coarse_ranks(0, 50, 4), 1);
        assert_eq!(coarse_ranks(1_000_000, 50, 4), 4);
        assert_eq!(coarse_ranks(120, 50, 1), 1);
    }
}
