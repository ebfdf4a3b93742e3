//! `hexfem bench writer`: the output writer's cost per field group for one state of every
//! output field of a neo-Hookean Q1 box ([`sim::writer_timings`]): each field the writer
//! derives, alone; the step's writes with every value ready; the writer's pipeline, its
//! derivations alone and whole (derive and write, the writes while the fields are derived).

use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::Serialize;

/// Benchmark parameters.
#[derive(Clone, Debug)]
pub struct WriterBench {
    /// Cells per side of the box.
    pub cells: usize,
    /// Timed runs of each group, after one warm-up run.
    pub repeats: usize,
    /// Where to write (a fresh folder in it, removed afterwards); default: the temp dir.
    pub dir: Option<PathBuf>,
}

/// What `hexfem bench writer --json` prints: the mesh, the files, and seconds per group
/// (each the best of `repeats` runs after one warm-up run).
#[derive(Clone, Debug, Serialize)]
pub struct WriterBenchResult {
    /// Cells per side of the box.
    pub cells_per_side: usize,
    pub repeats: usize,
    /// The folder written in (removed afterwards).
    pub dir: PathBuf,
    #[serde(flatten)]
    pub timings: sim::WriterTimings,
    /// Every group derived one after the other, then the step written (the writer without the
    /// pipeline): the sum of those groups.
    pub serial_s: f64,
}

/// Runs the benchmark.
pub fn run(bench: &WriterBench) -> Result<WriterBenchResult> {
    anyhow::ensure!(
        bench.cells >= 1 && bench.repeats >= 1,
        "--cells and --repeats must be at least 1"
    );
    let base = bench.dir.clone().unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("hexfem-bench-writer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let timings = sim::writer_timings(bench.cells, bench.repeats, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    let timings = timings?;
    Ok(WriterBenchResult {
        cells_per_side: bench.cells,
        repeats: bench.repeats,
        dir,
        serial_s: timings.serial_s(),
        timings,
    })
}

impl std::fmt::Display for WriterBenchResult {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let t = &self.timings;
        writeln!(
            f,
            "the writer, one state of every field: {}^3 cells ({} nodes, {} cells), {} threads, \
             {} a state, written in {}; best of {} after a warm-up",
            self.cells_per_side,
            t.nodes,
            t.cells,
            t.threads,
            size(t.state_bytes as u64),
            self.dir.display(),
            self.repeats
        )?;
        let rows = [
            ("nodal average", t.nodal_average_s),
            ("nodal von Mises", t.nodal_von_mises_s),
            ("strain", t.strain_s),
            ("green_lagrange_strain", t.green_lagrange_strain_s),
            ("logarithmic_strain", t.logarithmic_strain_s),
            ("principal stresses (cells)", t.principal_cells_s),
            ("principal stresses (nodes)", t.principal_nodes_s),
            ("writes of the step, values ready", t.step_writes_s),
            ("sum of the above (derived, then written)", self.serial_s),
            ("pipeline: derivations alone", t.pipeline_derivations_s),
            ("pipeline: derive and write", t.pipeline_s),
        ];
        writeln!(f, "  {:<42} {:>8}", "group", "s")?;
        for (name, s) in rows {
            writeln!(f, "  {name:<42} {s:>8.4}")?;
        }
        writeln!(f, "  file: h5 {} B", t.h5_bytes)
    }
}

/// `bytes` in MB (10^6), one decimal.
fn size(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2^3 box: the JSON holds the mesh, the files and every group's seconds (numbers, not
    /// checked), and the folder written in is gone.
    #[test]
    fn a_tiny_run_reports_every_group_in_json() {
        let base = std::env::temp_dir().join(format!("bench-writer-test-{}", std::process::id()));
        std::fs::create_dir_all(&base).unwrap();
        let result = run(&WriterBench {
            cells: 2,
            repeats: 1,
            dir: Some(base.clone()),
        })
        .unwrap();
        let json: serde_json::Value = serde_json::to_value(&result).unwrap();
        let object = json.as_object().unwrap();
        let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "cells",
                "cells_per_side",
                "dir",
                "green_lagrange_strain_s",
                "h5_bytes",
                "logarithmic_strain_s",
                "nodal_average_s",
                "nodal_von_mises_s",
                "nodes",
                "pipeline_derivations_s",
                "pipeline_s",
                "principal_cells_s",
                "principal_nodes_s",
                "repeats",
                "serial_s",
                "state_bytes",
                "step_writes_s",
                "strain_s",
                "threads",
            ]
        );
        for (key, value) in object {
            if key.ends_with("_s") {
                assert!(value.as_f64().is_some_and(|s| s >= 0.0), "{key}: {value}");
            }
        }
        // 3^3 nodes, 2^3 cells; 19 values a node and 42 a cell
        assert_eq!(
            (json["nodes"].as_u64(), json["cells"].as_u64()),
            (Some(27), Some(8))
        );
        assert_eq!(json["cells_per_side"].as_u64(), Some(2));
        assert_eq!(json["state_bytes"].as_u64(), Some(8 * (19 * 27 + 42 * 8)));
        assert!(json["h5_bytes"].as_u64().unwrap() > 4 * 8 * (19 * 27 + 42 * 8));
        assert!(!result.dir.exists(), "{} is left", result.dir.display());
        // the text names every group
        let text = result.to_string();
        for group in [
            "nodal average",
            "logarithmic_strain",
            "pipeline: derive and write",
        ] {
            assert!(text.contains(group), "{text}");
        }
        let _ = std::fs::remove_dir_all(&base);
    }
}
