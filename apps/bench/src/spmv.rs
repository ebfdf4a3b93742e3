//! `hexfem bench spmv`: one block SpMV `y = A x` for one block shape, on the CPU or a GPU, with
//! the bytes it must move and the bandwidth it achieves.
//!
//! Operators (random values, deterministic): square blocks `b x b` on the 27-point node stencil
//! of an `m^3` grid (the fine operator's structure for 3x3, a coarse level's for 6x6);
//! `r x c` blocks with `r < c` shaped like a prolongator (rows: the `m^3` nodes, columns: the
//! aggregates of 3x3x3 nodes, each node coupled to its own aggregate and to those of its `+x`,
//! `+y`, `+z` neighbours); `r > c` like a restriction (rows: aggregates, each coupled to its 27
//! nodes and those of the `+x`, `+y`, `+z` neighbour aggregates' faces, columns: nodes).

use std::sync::Arc;
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use linalg::hash::SplitMix64;
use linalg::{BlockPattern, Bsr, Device, Vector};
use serde::Serialize;

use super::best_of;
use super::gamg::BenchDevice;

/// Timed SpMVs after a warm-up: the best (CPU wall time) or the median (GPU device events).
pub const REPEATS: usize = 20;

/// Benchmark parameters.
#[derive(Clone, Debug)]
pub struct SpmvBench {
    /// Nodes per side.
    pub m: usize,
    pub block_rows: usize,
    pub block_cols: usize,
    pub device: BenchDevice,
}

/// What `hexfem bench spmv --json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct SpmvBenchResult {
    pub nodes_per_side: usize,
    pub block_rows: usize,
    pub block_cols: usize,
    pub rows: usize,
    pub cols: usize,
    pub blocks: usize,
    /// `host` or the GPU's name.
    pub device: String,
    pub threads: usize,
    pub time_ms: f64,
    /// Values, `u32` column indices and row offsets, `x` and `y` once each.
    pub bytes: f64,
    pub gbs: f64,
    /// GPU only: a 1 GiB device-to-device copy (read + written), and `gbs` over it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copy_gbs: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub of_copy: Option<f64>,
}

/// Node index of `(i, j, k)` on an `n^3` grid.
fn node(n: usize, i: usize, j: usize, k: usize) -> usize {
    (k * n + j) * n + i
}

/// Row-by-row pattern from a closure listing each row's columns (sorted and deduplicated here).
fn pattern(
    rows: usize,
    cols: usize,
    mut row: impl FnMut(usize, &mut Vec<u32>),
) -> Result<BlockPattern> {
    let mut row_ptr = Vec::with_capacity(rows + 1);
    row_ptr.push(0);
    let (mut col_idx, mut buf) = (Vec::new(), Vec::new());
    for r in 0..rows {
        buf.clear();
        row(r, &mut buf);
        buf.sort_unstable();
        buf.dedup();
        col_idx.extend_from_slice(&buf);
        row_ptr.push(col_idx.len());
    }
    Ok(BlockPattern::new(rows, cols, row_ptr, col_idx)?)
}

/// The benchmark's operator pattern (see the module's note).
fn operator_pattern(m: usize, br: usize, bc: usize) -> Result<BlockPattern> {
    let a = m.div_ceil(3); // aggregates per side
    let coords = |n: usize, x: usize| (x % n, (x / n) % n, x / (n * n));
    if br == bc {
        return pattern(m * m * m, m * m * m, |r, out| {
            let (i, j, k) = coords(m, r);
            for dk in k.saturating_sub(1)..(k + 2).min(m) {
                for dj in j.saturating_sub(1)..(j + 2).min(m) {
                    for di in i.saturating_sub(1)..(i + 2).min(m) {
                        out.push(node(m, di, dj, dk) as u32);
                    }
                }
            }
        });
    }
    // node -> its aggregate and those of its +x, +y, +z neighbours
    let aggregates_of = |r: usize, out: &mut Vec<u32>| {
        let (i, j, k) = coords(m, r);
        for (di, dj, dk) in [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)] {
            let (x, y, z) = (i + di, j + dj, k + dk);
            if x < m && y < m && z < m {
                out.push(node(a, x / 3, y / 3, z / 3) as u32);
            }
        }
    };
    if br < bc {
        pattern(m * m * m, a * a * a, aggregates_of)
    } else {
        // the transpose of the prolongator's pattern
        let mut rows: Vec<Vec<u32>> = vec![Vec::new(); a * a * a];
        let mut buf = Vec::new();
        for r in 0..m * m * m {
            buf.clear();
            aggregates_of(r, &mut buf);
            for &c in &buf {
                rows[c as usize].push(r as u32);
            }
        }
        pattern(a * a * a, m * m * m, |r, out| {
            out.extend_from_slice(&rows[r])
        })
    }
}

/// Runs the benchmark.
pub fn run(bench: &SpmvBench) -> Result<SpmvBenchResult> {
    ensure!(bench.m >= 2, "--m must be at least 2");
    ensure!(
        (1..=32).contains(&bench.block_rows) && (1..=32).contains(&bench.block_cols),
        "--block RxC needs 1 <= R, C <= 32"
    );
    let (br, bc) = (bench.block_rows, bench.block_cols);
    let p = Arc::new(operator_pattern(bench.m, br, bc)?);
    let mut rng = SplitMix64(0x5B3D);
    let values = (0..p.nnz() * br * bc)
        .map(|_| rng.next_signed_unit())
        .collect();
    let a = Bsr::from_parts(p.clone(), br, bc, values)?;
    let x: Vec<f64> = (0..a.n_cols()).map(|_| rng.next_signed_unit()).collect();
    let device = match bench.device {
        BenchDevice::Cpu => Device::Host,
        BenchDevice::Cuda => Device::cuda(0).context("--device cuda")?,
    };
    let a = a.to_device(&device)?;
    let x = Vector::from_vec(x).to_device(&device)?;
    let mut y = Vector::zeros_on(&device, a.n_rows())?;
    let bytes = (p.nnz() * br * bc * 8
        + p.nnz() * 4
        + (p.n_block_rows() + 1) * 4
        + a.n_cols() * 8
        + a.n_rows() * 8) as f64;
    let (time_ms, copy_gbs) = match device.cuda_context() {
        None => (
            1e3 * best_of(REPEATS, || {
                let start = Instant::now();
                a.spmv(&x, &mut y)?;
                Ok(start.elapsed().as_secs_f64())
            })?,
            None,
        ),
        Some(ctx) => (
            super::gamg::event_median(ctx, REPEATS, || Ok(a.spmv(&x, &mut y)?))?,
            Some(super::gamg::copy_gbs(ctx)?),
        ),
    };
    let gbs = bytes / (time_ms * 1e-3) / 1e9;
    Ok(SpmvBenchResult {
        nodes_per_side: bench.m,
        block_rows: br,
        block_cols: bc,
        rows: a.n_rows(),
        cols: a.n_cols(),
        blocks: p.nnz(),
        device: device.name(),
        threads: rayon::current_num_threads(),
        time_ms,
        bytes,
        gbs,
        of_copy: copy_gbs.map(|c| gbs / c),
        copy_gbs,
    })
}

impl std::fmt::Display for SpmvBenchResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "spmv benchmark: {}x{} blocks, {} x {} ({} blocks, from {}^3 nodes) on {}",
            self.block_rows,
            self.block_cols,
            self.rows,
            self.cols,
            self.blocks,
            self.nodes_per_side,
            self.device
        )?;
        write!(
            f,
            "  {:.4} ms, {:.1} MB, {:.0} GB/s",
            self.time_ms,
            self.bytes / 1e6,
            self.gbs
        )?;
        if let (Some(c), Some(o)) = (self.copy_gbs, self.of_copy) {
            write!(f, " ({:.1} % of the {c:.0} GB/s copy bandwidth)", 100.0 * o)?;
        }
        writeln!(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every shape builds its pattern, runs on the CPU and counts its bytes; the stencil has 27
    /// blocks in an interior row.
    #[test]
    fn shapes_build_and_run_on_the_cpu() {
        for (br, bc) in [(3, 3), (6, 6), (3, 6), (6, 3), (1, 1)] {
            let r = run(&SpmvBench {
                m: 7,
                block_rows: br,
                block_cols: bc,
                device: BenchDevice::Cpu,
            })
            .unwrap();
            assert!(r.time_ms > 0.0 && r.gbs > 0.0, "{br}x{bc}");
            assert_eq!(r.rows % br, 0);
            assert!(r.copy_gbs.is_none());
        }
        let p = operator_pattern(5, 3, 3).unwrap();
        assert_eq!(p.row(node(5, 2, 2, 2)).len(), 27);
        assert!(run(&SpmvBench {
            m: 5,
            block_rows: 0,
            block_cols: 3,
            device: BenchDevice::Cpu
        })
        .is_err());
    }
}
