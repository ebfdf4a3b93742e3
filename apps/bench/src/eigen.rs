//! `hexfem bench eigen`: the symmetric 3x3 eigen-solver of the output's principal values and
//! logarithmic strain ([`fem::sym3`]: cyclic Jacobi, and the log in closed form) against
//! nalgebra's `SymmetricEigen` (what those fields used before): the time per tensor and per
//! Gauss point, and the largest difference of the results (the output's now against nalgebra's),
//! over families of random and adversarial tensors.
//!
//! Times are this thread's CPU seconds (`/proc/thread-self/schedstat`, wall time where that is
//! unavailable), best of `repeats` after a warm-up: on a shared machine a thread that waits for a
//! core counts no time, so the figures are the code's, not the neighbours'.

use std::time::Instant;

use anyhow::Result;
use fem::{Material, StrainMeasure};
use nalgebra::{Matrix3, SymmetricEigen, Vector3};
use serde::Serialize;

/// Benchmark parameters.
#[derive(Clone, Debug)]
pub struct EigenBench {
    /// Tensors per family.
    pub tensors: usize,
    /// Timed runs per measurement (the best is reported).
    pub repeats: usize,
}

/// One family of tensors.
#[derive(Clone, Debug, Serialize)]
pub struct Family {
    pub name: String,
    pub tensors: usize,
    /// Nanoseconds per tensor: principal values by nalgebra (eigenvectors computed, as before)
    /// and by Jacobi without eigenvectors.
    pub values_ns_nalgebra: f64,
    pub values_ns_jacobi: f64,
    /// Nanoseconds per Gauss point: the logarithmic strain of a displacement gradient (with
    /// `B - I` and the `ln_1p`s), by nalgebra's eigenvectors (as before), by Jacobi's
    /// ([`fem::sym3::half_ln_1p_by_eigenvectors`]) and as the output computes it now
    /// ([`fem::sym3::half_ln_1p`]: closed form, Jacobi where the stretches lie far apart).
    pub log_ns_nalgebra: f64,
    pub log_ns_jacobi: f64,
    pub log_ns_now: f64,
    /// The largest difference of the principal values (sorted), relative to the tensor's
    /// largest principal magnitude.
    pub values_max_relative_difference: f64,
    /// The largest difference of a logarithmic strain's component, absolute and relative to
    /// the strain's largest component.
    pub log_max_abs_difference: f64,
    pub log_max_relative_difference: f64,
    /// The largest of each gradient family's strain components (its scale).
    pub log_scale: f64,
    /// Jacobi's sweeps with a rotation: mean and largest.
    pub mean_sweeps: f64,
    pub max_sweeps: usize,
}

/// What `hexfem bench eigen --json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct EigenBenchResult {
    pub tensors: usize,
    pub repeats: usize,
    /// `thread-cpu` or `wall`.
    pub clock: String,
    pub families: Vec<Family>,
    /// Nanoseconds per Q1 cell (8 Gauss points, the writer's `ElementKernel::cell_strain`
    /// over distorted cells with displacements of ~10 % strain): the Green-Lagrange strain
    /// (no eigen-decomposition) and the logarithmic strain as computed now; the old
    /// logarithmic strain cost 8 x (`log_ns_nalgebra - log_ns_now`) more (first family).
    pub cell_ns_green_lagrange: f64,
    pub cell_ns_logarithmic: f64,
}

/// Runs the benchmark.
pub fn run(bench: &EigenBench) -> Result<EigenBenchResult> {
    anyhow::ensure!(
        bench.tensors >= 1 && bench.repeats >= 1,
        "--tensors and --repeats must be at least 1"
    );
    let mut random = XorShift(0x9E37_79B9_7F4A_7C15);
    let families = FAMILIES
        .iter()
        .map(|&(name, make)| {
            let gradients: Vec<Matrix3<f64>> =
                (0..bench.tensors).map(|_| make(&mut random)).collect();
            family(name, &gradients, bench.repeats)
        })
        .collect::<Result<Vec<_>>>()?;
    let (cell_ns_green_lagrange, cell_ns_logarithmic) =
        cells(&mut random, bench.tensors / 8 + 1, bench.repeats)?;
    Ok(EigenBenchResult {
        cell_ns_green_lagrange,
        cell_ns_logarithmic,
        tensors: bench.tensors,
        repeats: bench.repeats,
        clock: if thread_cpu_seconds().is_some() {
            "thread-cpu"
        } else {
            "wall"
        }
        .into(),
        families,
    })
}

/// The families: each draws a displacement gradient `h`; the principal values are taken of
/// its symmetric part scaled as a stress (`1e6 (h + h^T)`), the logarithmic strain of `h`.
type Draw = fn(&mut XorShift) -> Matrix3<f64>;

const FAMILIES: [(&str, Draw); 8] = [
    (
        "random gradient, entries in [-0.3, 0.3], det F >= 0.5",
        |r| loop {
            let h = Matrix3::from_fn(|_, _| r.uniform(-0.3, 0.3));
            if (Matrix3::identity() + h).determinant() >= 0.5 {
                return h;
            }
        },
    ),
    ("random gradient, entries in [-0.05, 0.05]", |r| {
        Matrix3::from_fn(|_, _| r.uniform(-0.05, 0.05))
    }),
    ("stretches in [1/3, 3], rotated", |r| {
        let s = Vector3::from_fn(|_, _| 3f64.powf(r.uniform(-1.0, 1.0)));
        stretched(r, s)
    }),
    ("strain 1e-12, rotated frame", |r| {
        let e = Matrix3::from_fn(|_, _| r.uniform(-1e-12, 1e-12));
        e + e.transpose()
    }),
    ("rigid rotation", |r| rotation(r) - Matrix3::identity()),
    ("two equal stretches (1.2, 1.2, 0.9)", |r| {
        stretched(r, Vector3::new(1.2, 1.2, 0.9))
    }),
    (
        "nearly equal stretches (1.2, 1.2 + 1e-9, 1.2 - 1e-12)",
        |r| stretched(r, Vector3::new(1.2, 1.2 + 1e-9, 1.2 - 1e-12)),
    ),
    ("equal stretches 1 + 1e-6 (volumetric)", |r| {
        stretched(r, Vector3::repeat(1.0 + 1e-6))
    }),
];

/// A Q1 cell's eight coordinates or displacements.
type CellNodes = [[f64; 3]; 8];

/// Nanoseconds per cell of `cell_strain` for the Green-Lagrange and the logarithmic strain over
/// `count` distorted Q1 cells.
fn cells(random: &mut XorShift, count: usize, repeats: usize) -> Result<(f64, f64)> {
    let kernel = fem::ElementKernel::new(1, 2)?;
    let corners: Vec<(CellNodes, CellNodes)> = (0..count)
        .map(|_| {
            let x: [[f64; 3]; 8] = std::array::from_fn(|a| {
                std::array::from_fn(|i| ((a >> i) & 1) as f64 + random.uniform(-0.1, 0.1))
            });
            let u: [[f64; 3]; 8] =
                std::array::from_fn(|_| std::array::from_fn(|_| random.uniform(-0.05, 0.05)));
            (x, u)
        })
        .collect();
    let time = |measure: StrainMeasure| {
        per_item(repeats, count as f64, || {
            corners
                .iter()
                .map(|(x, u)| {
                    kernel
                        .cell_strain(x, u, &NEO, measure)
                        .map_or(f64::NAN, |e| e[1])
                })
                .sum()
        })
    };
    Ok((
        time(StrainMeasure::GreenLagrange)?,
        time(StrainMeasure::Logarithmic)?,
    ))
}

/// `h = R U - I` for `U = Q diag(s) Q^T` and random rotations `R`, `Q`.
fn stretched(r: &mut XorShift, s: Vector3<f64>) -> Matrix3<f64> {
    let q = rotation(r);
    let u = q * Matrix3::from_diagonal(&s) * q.transpose();
    rotation(r) * u - Matrix3::identity()
}

/// A random rotation (a unit quaternion's).
fn rotation(r: &mut XorShift) -> Matrix3<f64> {
    let q = nalgebra::Vector4::from_fn(|_, _| r.uniform(-1.0, 1.0)).normalize();
    let (w, x, y, z) = (q[0], q[1], q[2], q[3]);
    Matrix3::new(
        1.0 - 2.0 * (y * y + z * z),
        2.0 * (x * y - w * z),
        2.0 * (x * z + w * y),
        2.0 * (x * y + w * z),
        1.0 - 2.0 * (x * x + z * z),
        2.0 * (y * z - w * x),
        2.0 * (x * z - w * y),
        2.0 * (y * z + w * x),
        1.0 - 2.0 * (x * x + y * y),
    )
}

/// The material the strain is taken for (the logarithmic strain does not depend on it).
const NEO: Material = Material::NeoHookean {
    lambda: 1.0,
    mu: 1.0,
};

fn family(name: &str, gradients: &[Matrix3<f64>], repeats: usize) -> Result<Family> {
    let stresses: Vec<[f64; 9]> = gradients
        .iter()
        .map(|h| {
            let s = (h + h.transpose()) * 1e6;
            std::array::from_fn(|k| s[(k / 3, k % 3)])
        })
        .collect();
    let n = gradients.len() as f64;
    let values_ns_nalgebra = per_item(repeats, n, || {
        stresses.iter().map(|t| nalgebra_values(t)[0]).sum()
    });
    let values_ns_jacobi = per_item(repeats, n, || {
        stresses
            .iter()
            .map(|t| fem::principal_values_of(t)[0])
            .sum()
    });
    let log_ns_nalgebra = per_item(repeats, n, || {
        gradients.iter().map(|h| nalgebra_log(h)[(0, 1)]).sum()
    });
    let log_ns_jacobi = per_item(repeats, n, || {
        gradients
            .iter()
            .map(|h| fem::sym3::half_ln_1p_by_eigenvectors(&b_minus_i(h))[3])
            .sum()
    });
    let log_ns_now = per_item(repeats, n, || {
        gradients
            .iter()
            .map(|h| fem::strain::strain(StrainMeasure::Logarithmic, &NEO, h)[(0, 1)])
            .sum()
    });
    let mut values_max_relative_difference: f64 = 0.0;
    for t in &stresses {
        let (old, new) = (nalgebra_values(t), fem::principal_values_of(t));
        let scale = old.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
        let difference = old
            .iter()
            .zip(new)
            .fold(0.0_f64, |m, (a, b)| m.max((a - b).abs()));
        if scale > 0.0 {
            values_max_relative_difference = values_max_relative_difference.max(difference / scale);
        }
    }
    let (mut log_max_abs_difference, mut log_max_relative_difference, mut log_scale) =
        (0.0_f64, 0.0_f64, 0.0_f64);
    for h in gradients {
        let old = nalgebra_log(h);
        let new = fem::strain::strain(StrainMeasure::Logarithmic, &NEO, h);
        let difference = (old - new).amax();
        log_max_abs_difference = log_max_abs_difference.max(difference);
        log_scale = log_scale.max(old.amax());
        if old.amax() > 0.0 {
            log_max_relative_difference = log_max_relative_difference.max(difference / old.amax());
        }
    }
    let sweeps: Vec<usize> = gradients
        .iter()
        .map(|h| fem::sym3::sweeps(&b_minus_i(h)))
        .collect();
    Ok(Family {
        name: name.into(),
        tensors: gradients.len(),
        values_ns_nalgebra: values_ns_nalgebra?,
        values_ns_jacobi: values_ns_jacobi?,
        log_ns_nalgebra: log_ns_nalgebra?,
        log_ns_jacobi: log_ns_jacobi?,
        log_ns_now: log_ns_now?,
        values_max_relative_difference,
        log_max_abs_difference,
        log_max_relative_difference,
        log_scale,
        mean_sweeps: sweeps.iter().sum::<usize>() as f64 / n,
        max_sweeps: sweeps.iter().copied().max().unwrap_or(0),
    })
}

/// `B - I = h + h^T + h h^T` as `[xx, yy, zz, xy, yz, xz]`.
fn b_minus_i(h: &Matrix3<f64>) -> [f64; 6] {
    let a = h + h.transpose() + h * h.transpose();
    [
        a[(0, 0)],
        a[(1, 1)],
        a[(2, 2)],
        a[(0, 1)],
        a[(1, 2)],
        a[(0, 2)],
    ]
}

/// The principal values as they were computed before [`fem::sym3`]: nalgebra's
/// `SymmetricEigen` (with eigenvectors) of the symmetrised upper triangle, largest first.
fn nalgebra_values(t: &[f64; 9]) -> [f64; 3] {
    let t = Matrix3::from_row_slice(t);
    let symmetric = Matrix3::from_fn(|i, j| if i <= j { t[(i, j)] } else { t[(j, i)] });
    let values = SymmetricEigen::new(symmetric).eigenvalues;
    let mut v = [values[0], values[1], values[2]];
    v.sort_by(|a, b| b.total_cmp(a));
    v
}

/// The logarithmic strain as it was computed before [`fem::sym3`].
fn nalgebra_log(h: &Matrix3<f64>) -> Matrix3<f64> {
    let b_minus_i = h + h.transpose() + h * h.transpose();
    let eigen = SymmetricEigen::new(b_minus_i);
    let mut log = Matrix3::zeros();
    for k in 0..3 {
        let v = eigen.eigenvectors.column(k);
        log += v * v.transpose() * (0.5 * eigen.eigenvalues[k].ln_1p());
    }
    log
}

/// Nanoseconds per item of `run` over `items` items: the best of `repeats` after a warm-up
/// (the sum `run` returns is kept from the optimiser).
fn per_item(repeats: usize, items: f64, mut run: impl FnMut() -> f64) -> Result<f64> {
    let seconds = crate::best_of(repeats, || {
        let started = (thread_cpu_seconds(), Instant::now());
        std::hint::black_box(run());
        Ok(match (started.0, thread_cpu_seconds()) {
            (Some(a), Some(b)) => b - a,
            _ => started.1.elapsed().as_secs_f64(),
        })
    })?;
    Ok(seconds * 1e9 / items)
}

/// This thread's CPU seconds so far (Linux), `None` elsewhere.
fn thread_cpu_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanoseconds: f64 = text.split_whitespace().next()?.parse().ok()?;
    Some(nanoseconds * 1e-9)
}

/// A small deterministic generator (xorshift64).
struct XorShift(u64);

impl XorShift {
    fn uniform(&mut self, low: f64, high: f64) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let unit = (self.0 >> 11) as f64 / (1u64 << 53) as f64;
        low + (high - low) * unit
    }
}

impl std::fmt::Display for EigenBenchResult {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        writeln!(
            f,
            "symmetric 3x3 eigen-solver: nalgebra SymmetricEigen vs fem::sym3 (Jacobi), {} tensors \
             per family, best of {} ({} ns)",
            self.tensors, self.repeats, self.clock
        )?;
        writeln!(
            f,
            "  {:<56} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>6}",
            "family",
            "val nalg",
            "val jac",
            "log nalg",
            "log jac",
            "log now",
            "val rel",
            "log abs",
            "log rel",
            "sweeps"
        )?;
        for m in &self.families {
            writeln!(
                f,
                "  {:<56} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1e} {:>9.1e} {:>9.1e} {:>3.1}/{}",
                m.name,
                m.values_ns_nalgebra,
                m.values_ns_jacobi,
                m.log_ns_nalgebra,
                m.log_ns_jacobi,
                m.log_ns_now,
                m.values_max_relative_difference,
                m.log_max_abs_difference,
                m.log_max_relative_difference,
                m.mean_sweeps,
                m.max_sweeps
            )?;
        }
        writeln!(
            f,
            "  per Q1 cell (8 Gauss points, cell_strain): Green-Lagrange {:.0} ns, logarithmic {:.0} ns",
            self.cell_ns_green_lagrange, self.cell_ns_logarithmic
        )
    }
}
