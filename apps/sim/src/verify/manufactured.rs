//! Manufactured solution of small-strain linear elasticity on the unit cube:
//!
//! ```text
//! u = (e^{2x} sin 3y cos 4z,  e^{3y} sin 4z cos 2x,  e^{4z} sin 2x cos 3y) * 1e-8
//! ```
//!
//! imposed on the whole boundary, with the body force `f = -div sigma(u)`,
//! `sigma = lambda tr(eps) I + 2 mu eps`, so that `f = -(lambda + mu) grad div u - mu lap u`.
//! The second derivatives are written out by hand below (each component of `u` is a product of
//! an exponential and two trigonometric factors, so `lap u_i` is a multiple of `u_i`); the unit
//! tests check them against finite differences of the material's stress.
//!
//! The L2 and H1-seminorm errors relative to the norms of `u` are computed on meshes of `2^k`
//! cells per side; for Lagrange elements of order `p` they decay as `h^{p+1}` and `h^p`. The
//! observed rate between the two finest meshes must lie within [`RATE_TOLERANCE`] of that. The
//! factor 1e-8 keeps the problem in the small-strain regime; it is immaterial to the linear
//! problem as all errors and solver tolerances are relative.

use fem::{Load, Material, Moduli};
use mesh::{generate_box, BoxSpec, CellKind};

use super::solve::{boundary_nodes, cg_amg, prescribe, relative_errors, solve_linear_elastic};
use super::{CaseResult, Check, Criterion};
use crate::error::fail;
use crate::Result;

pub const NAME_Q1: &str = "manufactured Q1";
pub const NAME_Q2: &str = "manufactured Q2";

/// Cells per side of the Q1 meshes (the asymptotic regime is reached by 8 -> 16).
pub const CELLS_Q1: [usize; 3] = [4, 8, 16];
/// Cells per side of the Q2 meshes.
pub const CELLS_Q2: [usize; 3] = [2, 4, 8];
/// Accepted deviation of the observed rate from the theoretical one on the finest mesh pair.
pub const RATE_TOLERANCE: f64 = 0.25;
/// Young's modulus and Poisson's ratio of the material.
pub const YOUNG: f64 = 1.0;
pub const POISSON: f64 = 0.3;
/// Amplitude of the manufactured displacement.
pub const SCALE: f64 = 1e-8;
/// Relative residual reduction of the CG solves: well below the discretisation errors.
const CG_RTOL: f64 = 1e-12;

/// The manufactured displacement at `x`.
pub fn displacement(x: [f64; 3]) -> [f64; 3] {
    let t = Terms::at(x);
    [
        t.e2x * t.s3y * t.c4z,
        t.e3y * t.s4z * t.c2x,
        t.e4z * t.s2x * t.c3y,
    ]
    .map(|v| SCALE * v)
}

/// Its gradient, `g[i][j] = du_i/dx_j`.
pub fn gradient(x: [f64; 3]) -> [[f64; 3]; 3] {
    let t = Terms::at(x);
    let g = [
        [
            2.0 * t.e2x * t.s3y * t.c4z,
            3.0 * t.e2x * t.c3y * t.c4z,
            -4.0 * t.e2x * t.s3y * t.s4z,
        ],
        [
            -2.0 * t.e3y * t.s4z * t.s2x,
            3.0 * t.e3y * t.s4z * t.c2x,
            4.0 * t.e3y * t.c4z * t.c2x,
        ],
        [
            2.0 * t.e4z * t.c2x * t.c3y,
            -3.0 * t.e4z * t.s2x * t.s3y,
            4.0 * t.e4z * t.s2x * t.c3y,
        ],
    ];
    g.map(|row| row.map(|v| SCALE * v))
}

/// The body force `f = -div sigma(u) = -(lambda + mu) grad div u - mu lap u` for Lame moduli
/// `lambda`, `mu`.
pub fn body_force(x: [f64; 3], lambda: f64, mu: f64) -> [f64; 3] {
    let t = Terms::at(x);
    let u = [
        t.e2x * t.s3y * t.c4z,
        t.e3y * t.s4z * t.c2x,
        t.e4z * t.s2x * t.c3y,
    ];
    // lap u_1 = (4 - 9 - 16) u_1, lap u_2 = (-4 + 9 - 16) u_2, lap u_3 = (-4 - 9 + 16) u_3
    let lap = [-21.0 * u[0], -11.0 * u[1], 3.0 * u[2]];
    // div u = 2 e^{2x} s3y c4z + 3 e^{3y} s4z c2x + 4 e^{4z} s2x c3y
    let grad_div = [
        4.0 * t.e2x * t.s3y * t.c4z - 6.0 * t.e3y * t.s4z * t.s2x + 8.0 * t.e4z * t.c2x * t.c3y,
        6.0 * t.e2x * t.c3y * t.c4z + 9.0 * t.e3y * t.s4z * t.c2x - 12.0 * t.e4z * t.s2x * t.s3y,
        -8.0 * t.e2x * t.s3y * t.s4z + 12.0 * t.e3y * t.c4z * t.c2x + 16.0 * t.e4z * t.s2x * t.c3y,
    ];
    std::array::from_fn(|i| -SCALE * ((lambda + mu) * grad_div[i] + mu * lap[i]))
}

/// The factors of the manufactured field at one point.
struct Terms {
    e2x: f64,
    e3y: f64,
    e4z: f64,
    s2x: f64,
    c2x: f64,
    s3y: f64,
    c3y: f64,
    s4z: f64,
    c4z: f64,
}

impl Terms {
    fn at([x, y, z]: [f64; 3]) -> Self {
        let (s2x, c2x) = (2.0 * x).sin_cos();
        let (s3y, c3y) = (3.0 * y).sin_cos();
        let (s4z, c4z) = (4.0 * z).sin_cos();
        Terms {
            e2x: (2.0 * x).exp(),
            e3y: (3.0 * y).exp(),
            e4z: (4.0 * z).exp(),
            s2x,
            c2x,
            s3y,
            c3y,
            s4z,
            c4z,
        }
    }
}

/// Relative errors on one mesh.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeshErrors {
    pub cells: usize,
    /// `||u_h - u||_L2 / ||u||_L2`.
    pub l2: f64,
    /// `|u_h - u|_H1 / |u|_H1`.
    pub h1: f64,
    /// Iterations of the linear solve (CG with AMG).
    pub iterations: usize,
}

/// Solves on the unit cube with `n` cells per side for each `n` of `cells` (ascending).
pub fn study(kind: CellKind, cells: &[usize]) -> Result<Vec<MeshErrors>> {
    if !cells.windows(2).all(|w| w[0] < w[1]) {
        fail!("mesh sizes {cells:?} must ascend");
    }
    let moduli = Moduli::from_young_poisson(YOUNG, POISSON)?;
    let (lambda, mu) = (moduli.lambda(), moduli.mu());
    let force = move |x: [f64; 3]| body_force(x, lambda, mu);
    let exact = |x: [f64; 3]| (displacement(x), gradient(x));
    cells
        .iter()
        .map(|&n| {
            let mesh = generate_box(&BoxSpec::new([n; 3], [0.0; 3], [1.0; 3], kind))?;
            let boundary = boundary_nodes(&mesh)?;
            let prescribed = prescribe("boundary", &mesh, &boundary, |x| displacement(x).map(Some));
            let solver = cg_amg(CG_RTOL, 1000);
            let solution = solve_linear_elastic(
                &mesh,
                Material::linear(moduli),
                fem::Formulation::Displacement,
                prescribed,
                Load::Field(&force),
                None,
                &solver,
            )?;
            let (l2, h1) = relative_errors(&solution, &exact)?;
            Ok(MeshErrors {
                cells: n,
                l2,
                h1,
                iterations: solution.report.iterations,
            })
        })
        .collect()
}

/// Observed rates `log(e_coarse / e_fine) / log(h_coarse / h_fine)` of successive meshes, as
/// `(l2, h1)` pairs.
pub fn rates(errors: &[MeshErrors]) -> Vec<(f64, f64)> {
    errors
        .windows(2)
        .map(|w| {
            let ratio = (w[1].cells as f64 / w[0].cells as f64).ln();
            (
                (w[0].l2 / w[1].l2).ln() / ratio,
                (w[0].h1 / w[1].h1).ln() / ratio,
            )
        })
        .collect()
}

/// Runs the convergence study with cells of `kind` on meshes of `cells` per side (at least two)
/// and checks the rates of the finest pair.
pub fn run(kind: CellKind, cells: &[usize]) -> Result<CaseResult> {
    if cells.len() < 2 {
        fail!("a convergence study needs at least two meshes");
    }
    let name = match kind {
        CellKind::Hex8 => NAME_Q1,
        CellKind::Hex27 => NAME_Q2,
    };
    let p = kind.order() as f64;
    let errors = study(kind, cells)?;
    let rates = rates(&errors);
    let mut checks = Vec::new();
    for e in &errors {
        checks.push(Check::new(
            format!("L2 error (rel), n={}", e.cells),
            e.l2,
            Criterion::Info,
        ));
        checks.push(Check::new(
            format!("H1 error (rel), n={}", e.cells),
            e.h1,
            Criterion::Info,
        ));
    }
    for (i, (w, &(l2, h1))) in errors.windows(2).zip(&rates).enumerate() {
        let finest = i + 1 == rates.len();
        let judged = |expected: f64| {
            if finest {
                Criterion::Near {
                    expected,
                    tolerance: RATE_TOLERANCE,
                }
            } else {
                Criterion::Info
            }
        };
        let pair = format!("{}->{}", w[0].cells, w[1].cells);
        checks.push(Check::new(format!("L2 rate {pair}"), l2, judged(p + 1.0)));
        checks.push(Check::new(format!("H1 rate {pair}"), h1, judged(p)));
    }
    Ok(CaseResult {
        case: name.to_owned(),
        checks,
        error: None,
        seconds: 0.0,
    })
}
