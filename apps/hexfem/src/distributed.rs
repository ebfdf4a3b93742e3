//! Commands on more than one MPI rank. Every fallible phase ends in a collective error
//! agreement ([`agreed`]): one rank's error becomes every rank's, so all ranks stop together
//! with the first failing rank's message and none waits in a collective.
//!
//! Today `check` runs distributed (each rank builds and checks only its part of the mesh);
//! the distributed solve (`run`) needs the distributed AMG and is refused on every rank.

use std::fmt::Write;
use std::path::Path;

use anyhow::Result;
use comm::{agree, Comm, CommError};

/// `result`, agreed on by every rank: an error on any rank is the same error everywhere (the
/// lowest failing rank's, with its whole chain of causes).
pub fn agreed<T>(comm: &dyn Comm, result: Result<T>) -> Result<T> {
    Ok(agree(comm, result.map_err(|e| format!("{e:#}")))?)
}

/// True for an error that came out of [`agreed`] (every rank holds the same one).
pub fn is_agreed(error: &anyhow::Error) -> bool {
    matches!(
        error.downcast_ref::<CommError>(),
        Some(CommError::Failed { .. })
    )
}

/// `hexfem check` on the ranks of `comm`: the configuration (every rank), the output files
/// (rank 0), then each rank's part of the mesh (generated or partitioned by METIS) and the
/// geometry of its cells. Returns the summary with the partition's load balance (to be printed
/// by rank 0).
pub fn check_on_ranks(
    comm: &dyn Comm,
    input: &Path,
    overrides: &[String],
    output_dir: Option<&Path>,
) -> Result<String> {
    let (rank, size) = (comm.rank(), comm.size());
    let config = agreed(
        comm,
        config::load_with_overrides(input, overrides).map_err(anyhow::Error::from),
    )?;
    let dir = crate::run::output_dir(&config, output_dir);
    let name = crate::run::output_name(&config, input);
    let output = if rank == 0 {
        crate::run::check_output(&config, output_dir, &dir, &name)
    } else {
        Ok(())
    };
    agreed(comm, output)?;
    let params = agreed(comm, config.problem_params().map_err(anyhow::Error::from))?;
    let part = agreed(
        comm,
        crate::locate::located(
            &config,
            solve::partition::build_mesh_part(&params.mesh, rank, size),
        ),
    )?;
    agreed(
        comm,
        crate::locate::located(
            &config,
            solve::partition::check_part_geometry(&part, &params),
        ),
    )?;

    let owned_cells = part.cell_owned.iter().filter(|&&o| o).count() as u64;
    let counts = comm.allgatherv_u64(&[
        part.n_owned_nodes() as u64,
        part.n_ghost_nodes() as u64,
        owned_cells,
        part.mesh.n_cells() as u64 - owned_cells,
    ])?;
    let mut s = String::new();
    writeln!(s, "{}: valid on {size} MPI ranks", input.display())?;
    writeln!(
        s,
        "  mesh       Q{} hexahedra: {} cells, {} nodes, {} unknowns",
        part.mesh.order(),
        part.n_global_cells,
        part.n_global_nodes(),
        3 * part.n_global_nodes()
    )?;
    writeln!(
        s,
        "  rank   owned nodes   ghost nodes   owned cells   ghost cells"
    )?;
    for (r, c) in counts.iter().enumerate() {
        writeln!(
            s,
            "  {r:>4}   {:>11}   {:>11}   {:>11}   {:>11}",
            c[0], c[1], c[2], c[3]
        )?;
    }
    let imbalance = |k: usize| {
        let max = counts.iter().map(|c| c[k]).max().unwrap_or(0) as f64;
        let mean = counts.iter().map(|c| c[k]).sum::<u64>() as f64 / size as f64;
        if mean > 0.0 {
            max / mean
        } else {
            1.0
        }
    };
    writeln!(
        s,
        "  balance    max/mean owned nodes {:.3}, owned cells {:.3}",
        imbalance(0),
        imbalance(2)
    )?;
    writeln!(
        s,
        "  output     {}",
        dir.join(format!("{name}.h5")).display()
    )?;
    Ok(s)
}
