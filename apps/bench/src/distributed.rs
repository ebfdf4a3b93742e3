//! `hexfem bench distributed`: the distributed matrix path on `mpirun -np N` (or one rank):
//! each rank generates its box of a clamped Q1/Q2 cube (`mesh::BoxRankGrid`), assembles its
//! owned rows, splits them into diagonal and off-diagonal parts with the halo plan, then SpMV
//! and CG with point-block Jacobi. Per-rank and slowest-rank times, halo traffic per SpMV and load imbalance.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use assembly::{CellMaterials, ElasticityAssembler};
use comm::Comm;
use fem::{Load, Material, Moduli};
use linalg::dist::{DistBsr, DistPattern, RowPartition};
use linalg::{Bsr, Vector};
use mesh::{generate_box_part, BoxSpec, CellKind, Face};
use serde::Serialize;

use super::best_of;

/// Benchmark parameters.
#[derive(Clone, Debug)]
pub struct DistributedBench {
    /// Cells per side of the unit cube.
    pub cells: usize,
    /// 1 (Q1) or 2 (Q2).
    pub order: usize,
    /// Timed repetitions of assembly and SpMV (after one warm-up); the best is reported.
    pub repeats: usize,
    /// Also set up the distributed AMG hierarchy and solve with CG + AMG.
    pub amg: bool,
}

/// The distributed AMG part of a run (`--amg`).
#[derive(Clone, Debug, Serialize)]
pub struct AmgStats {
    /// Global unknowns per level, finest first (the last solved directly on every rank).
    pub levels: Vec<usize>,
    /// Slowest rank: hierarchy set-up and the CG + AMG solve.
    pub setup_s: f64,
    pub cg_s: f64,
    pub cg_iterations: usize,
    pub cg_converged: bool,
    /// A hot update (new operator values, prolongators kept): slowest rank's time, and the
    /// prolongator values all ranks sent for it (`P_oth` is reused: 0).
    pub hot_update_s: f64,
    pub hot_update_p_values: usize,
}

/// One rank's numbers.
#[derive(Clone, Debug, Serialize)]
pub struct RankStats {
    pub rank: usize,
    pub owned_nodes: usize,
    pub ghost_nodes: usize,
    pub local_cells: usize,
    /// Ranks this rank receives ghost values from.
    pub neighbours: usize,
    /// Values this rank sends per SpMV.
    pub halo_send_values: usize,
    /// Best residual + tangent assembly of the rank's part.
    pub assembly_s: f64,
    /// Splitting into diagonal / off-diagonal parts and building the halo plan (once).
    pub setup_s: f64,
    /// Best SpMV (halo exchange overlapped with the diagonal product).
    pub spmv_s: f64,
    /// The CG solve.
    pub cg_s: f64,
}

/// What `hexfem bench distributed --json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct DistributedBenchResult {
    pub ranks: usize,
    pub cells: usize,
    pub order: usize,
    pub unknowns: u64,
    pub cg_iterations: usize,
    pub cg_converged: bool,
    /// Slowest rank's times (what the run waits for).
    pub assembly_s: f64,
    pub setup_s: f64,
    pub spmv_s: f64,
    pub cg_s: f64,
    /// Values sent by all ranks per SpMV (8 bytes each).
    pub halo_values_per_spmv: usize,
    /// Slowest / mean rank: owned unknowns and SpMV time.
    pub owned_imbalance: f64,
    pub spmv_imbalance: f64,
    pub per_rank: Vec<RankStats>,
    /// With `--amg`.
    pub amg: Option<AmgStats>,
}

/// Runs the benchmark on the ranks of `comm` (collective).
pub fn run(comm: &Arc<dyn Comm>, bench: &DistributedBench) -> Result<DistributedBenchResult> {
    let kind = match bench.order {
        1 => CellKind::Hex8,
        2 => CellKind::Hex27,
        o => anyhow::bail!("--order {o}: use 1 (Q1) or 2 (Q2)"),
    };
    let spec = BoxSpec::new([bench.cells; 3], [0.0; 3], [1.0; 3], kind);
    let part = generate_box_part(&spec, comm.rank(), comm.size())?;
    let mesh = &part.mesh;
    let material = Material::linear(Moduli::from_young_poisson(1.0, 0.3)?);
    let mut assembler = ElasticityAssembler::new(
        mesh,
        CellMaterials::uniform(material, mesh.n_cells()),
        bench.order + 1,
    )
    .context("setting up the element loop")?;
    let n_local = 3 * mesh.n_nodes();
    let (u, mut r) = (Vector::zeros(n_local), Vector::zeros(n_local));
    let mut k = assembler.new_matrix();
    sync(comm)?;
    let assembly_s = best_of(bench.repeats, || {
        let t = Instant::now();
        assembler.residual_tangent(&u, Load::None, &mut r, &mut k)?;
        Ok(t.elapsed().as_secs_f64())
    })?;
    let mut clamped = vec![false; mesh.n_nodes()];
    for &n in &mesh.node_sets[Face::XMin.name()] {
        clamped[n] = true;
    }
    eliminate(&mut k, &clamped)?;

    sync(comm)?;
    let t = Instant::now();
    let n_owned = part.n_owned_nodes();
    let partition = RowPartition::new(comm.clone(), n_owned)?;
    let pattern = DistPattern::from_local(partition, k.pattern(), &part.node_globals, 3)?;
    let mut a = DistBsr::zeros(pattern.clone());
    a.set_from_local(&k)?;
    let setup_s = t.elapsed().as_secs_f64();

    let mut b = a.new_owned_vector();
    for (e, v) in b.host_mut()?.iter_mut().enumerate() {
        let node = e / 3;
        *v = if clamped[node] {
            0.0
        } else {
            linalg::hash::signed_unit(linalg::hash::splitmix64(
                3 * part.node_serial_ids[node] + (e % 3) as u64,
            ))
        };
    }
    let mut y = a.new_owned_vector();
    sync(comm)?;
    let spmv_s = best_of(bench.repeats, || {
        let t = Instant::now();
        a.apply(&b, &mut y)?;
        Ok(t.elapsed().as_secs_f64())
    })?;

    let pbj = amg::PointBlockJacobi::new(a.diag())?;
    let mut x = a.new_owned_vector();
    let params = amg::CgParams {
        rtol: 1e-8,
        max_iterations: 20_000,
        ..Default::default()
    };
    sync(comm)?;
    let t = Instant::now();
    let outcome = amg::cg_operator(&a, &b, &mut x, &pbj, &params)?;
    let cg_s = t.elapsed().as_secs_f64();

    let amg = if bench.amg {
        Some(run_amg(comm, &part, &k, &a, &b, owned_nns(&part))?)
    } else {
        None
    };

    let halo = pattern.halo();
    let mine = [
        n_owned as f64,
        part.n_ghost_nodes() as f64,
        mesh.n_cells() as f64,
        halo.receives().len() as f64,
        halo.send_volume() as f64,
        assembly_s,
        setup_s,
        spmv_s,
        cg_s,
    ];
    let all = comm.allgatherv_f64(&mine)?;
    let per_rank: Vec<RankStats> = all
        .iter()
        .enumerate()
        .map(|(rank, v)| RankStats {
            rank,
            owned_nodes: v[0] as usize,
            ghost_nodes: v[1] as usize,
            local_cells: v[2] as usize,
            neighbours: v[3] as usize,
            halo_send_values: v[4] as usize,
            assembly_s: v[5],
            setup_s: v[6],
            spmv_s: v[7],
            cg_s: v[8],
        })
        .collect();
    let max = |f: fn(&RankStats) -> f64| per_rank.iter().map(f).fold(0.0, f64::max);
    let mean =
        |f: fn(&RankStats) -> f64| per_rank.iter().map(f).sum::<f64>() / per_rank.len() as f64;
    let ratio = |f: fn(&RankStats) -> f64| {
        let m = mean(f);
        if m > 0.0 {
            max(f) / m
        } else {
            1.0
        }
    };
    Ok(DistributedBenchResult {
        ranks: comm.size(),
        cells: bench.cells,
        order: bench.order,
        unknowns: 3 * part.n_global_nodes(),
        cg_iterations: outcome.iterations,
        cg_converged: outcome.converged,
        assembly_s: max(|s| s.assembly_s),
        setup_s: max(|s| s.setup_s),
        spmv_s: max(|s| s.spmv_s),
        cg_s: max(|s| s.cg_s),
        halo_values_per_spmv: per_rank.iter().map(|s| s.halo_send_values).sum(),
        owned_imbalance: ratio(|s| s.owned_nodes as f64),
        spmv_imbalance: ratio(|s| s.spmv_s),
        per_rank,
        amg,
    })
}

/// The rigid-body modes of the owned nodes (about the origin: every rank computes the same
/// rows), `3 x 6` per node, row-major.
fn owned_nns(part: &mesh::MeshPart) -> Vec<f64> {
    let n = part.n_owned_nodes();
    let mut v = Vec::with_capacity(n * 18);
    for x in &part.mesh.coords[..n] {
        let rows = [
            [1.0, 0.0, 0.0, -x[1], 0.0, x[2]],
            [0.0, 1.0, 0.0, x[0], -x[2], 0.0],
            [0.0, 0.0, 1.0, 0.0, x[1], -x[0]],
        ];
        v.extend(rows.iter().flatten());
    }
    v
}

/// Distributed AMG set-up and CG + AMG on the same system.
fn run_amg(
    comm: &Arc<dyn Comm>,
    part: &mesh::MeshPart,
    k: &Bsr,
    a: &DistBsr,
    b: &Vector,
    nns: Vec<f64>,
) -> Result<AmgStats> {
    use amg::dist_cycle::DistHierarchy;
    let params = amg::AmgParams {
        coarse_eq_limit: 600,
        max_levels: 10,
        ..amg::AmgParams::default()
    };
    sync(comm)?;
    let t = Instant::now();
    let mut fine = DistBsr::zeros(a.pattern().clone());
    fine.set_from_local(k)?;
    let n_owned = part.n_owned_nodes();
    let mut h = DistHierarchy::new(fine, &part.node_serial_ids[..n_owned], nns, 6, &params)?;
    let setup_s = slowest(comm, t.elapsed().as_secs_f64())?;
    let mut x = a.new_owned_vector();
    let cg = amg::CgParams {
        rtol: 1e-8,
        ..Default::default()
    };
    sync(comm)?;
    let t = Instant::now();
    let outcome = amg::cg_operator(a, b, &mut x, &h, &cg)?;
    let cg_s = slowest(comm, t.elapsed().as_secs_f64())?;
    let mut hot = DistBsr::zeros(a.pattern().clone());
    hot.set_from_local(k)?;
    sync(comm)?;
    let t = Instant::now();
    let sent = h.update(hot)?.messages.prolongator_values;
    let hot_update_s = slowest(comm, t.elapsed().as_secs_f64())?;
    let mut total = [sent as f64];
    comm.allreduce_sum(&mut total)?;
    Ok(AmgStats {
        levels: h.level_unknowns(),
        setup_s,
        cg_s,
        cg_iterations: outcome.iterations,
        cg_converged: outcome.converged,
        hot_update_s,
        hot_update_p_values: total[0] as usize,
    })
}

/// The largest `t` over the ranks.
fn slowest(comm: &Arc<dyn Comm>, t: f64) -> Result<f64> {
    let mut v = [t];
    comm.allreduce_max(&mut v)?;
    Ok(v[0])
}

/// A collective that every rank passes before a timed phase starts.
fn sync(comm: &Arc<dyn Comm>) -> Result<()> {
    comm.allreduce_sum(&mut [0.0])?;
    Ok(())
}

/// Symmetric elimination of the clamped nodes on the local matrix: their rows and columns are
/// zero but for an identity diagonal block (the owned rows are those of the whole matrix).
fn eliminate(k: &mut Bsr, clamped: &[bool]) -> Result<()> {
    let pattern = k.pattern().clone();
    for i in 0..pattern.n_block_rows() {
        for (slot, &j) in (pattern.row_ptr()[i]..).zip(pattern.row(i)) {
            let j = j as usize;
            if clamped[i] || clamped[j] {
                let block = k.host_block_mut(slot)?;
                block.fill(0.0);
                if i == j {
                    block[0] = 1.0;
                    block[4] = 1.0;
                    block[8] = 1.0;
                }
            }
        }
    }
    Ok(())
}

impl fmt::Display for DistributedBenchResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "distributed Q{} cube, {}^3 cells, {} unknowns on {} ranks",
            self.order, self.cells, self.unknowns, self.ranks
        )?;
        writeln!(
            f,
            "  slowest rank: assembly {:.4} s, set-up {:.4} s, SpMV {:.6} s, CG+PBJ {:.3} s ({} iterations{})",
            self.assembly_s,
            self.setup_s,
            self.spmv_s,
            self.cg_s,
            self.cg_iterations,
            if self.cg_converged { "" } else { ", NOT converged" }
        )?;
        writeln!(
            f,
            "  halo: {} values ({:.1} KiB) per SpMV; imbalance max/mean: owned {:.3}, SpMV time {:.3}",
            self.halo_values_per_spmv,
            self.halo_values_per_spmv as f64 * 8.0 / 1024.0,
            self.owned_imbalance,
            self.spmv_imbalance
        )?;
        if let Some(amg) = &self.amg {
            writeln!(
                f,
                "  AMG: levels {:?} unknowns, set-up {:.3} s, CG+AMG {:.3} s ({} iterations{}), hot update {:.3} s sending {} P values",
                amg.levels,
                amg.setup_s,
                amg.cg_s,
                amg.cg_iterations,
                if amg.cg_converged {
                    ""
                } else {
                    ", NOT converged"
                },
                amg.hot_update_s,
                amg.hot_update_p_values
            )?;
        }
        writeln!(
            f,
            "  rank  owned  ghosts  cells  nbrs  sends  assembly_s     spmv_s      cg_s"
        )?;
        for s in &self.per_rank {
            writeln!(
                f,
                "  {:>4} {:>6} {:>7} {:>6} {:>5} {:>6} {:>11.4} {:>10.6} {:>9.3}",
                s.rank,
                s.owned_nodes,
                s.ghost_nodes,
                s.local_cells,
                s.neighbours,
                s.halo_send_values,
                s.assembly_s,
                s.spmv_s,
                s.cg_s
            )?;
        }
        Ok(())
    }
}
