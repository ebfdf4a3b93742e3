//! Direct solver against dense references, and the ordering against the natural one.

use std::sync::Arc;

use super::{DirectSolver, DirectSymbolic};
use crate::hash::SplitMix64;
use crate::{BlockPattern, Bsr, LinalgError, Vector};

/// Reproducible pseudo-random numbers (SplitMix64).
struct Rng(SplitMix64);

impl Rng {
    /// Uniform in [-1, 1).
    fn uniform(&mut self) -> f64 {
        self.0.next_signed_unit()
    }
    fn below(&mut self, n: usize) -> usize {
        (self.0.next_u64() % n as u64) as usize
    }
}

/// Dense solve with partial pivoting (row-major `a`, `n x n`).
fn dense_solve(mut a: Vec<f64>, mut b: Vec<f64>) -> Vec<f64> {
    let n = b.len();
    for k in 0..n {
        let p = (k..n)
            .max_by(|&i, &j| a[i * n + k].abs().total_cmp(&a[j * n + k].abs()))
            .unwrap();
        for c in 0..n {
            a.swap(k * n + c, p * n + c);
        }
        b.swap(k, p);
        for i in k + 1..n {
            let f = a[i * n + k] / a[k * n + k];
            for c in k..n {
                a[i * n + c] -= f * a[k * n + c];
            }
            b[i] -= f * b[k];
        }
    }
    for k in (0..n).rev() {
        let s: f64 = (k + 1..n).map(|c| a[k * n + c] * b[c]).sum();
        b[k] = (b[k] - s) / a[k * n + k];
    }
    b
}

/// Dense symmetric matrix with a random sparse block structure (`nb` blocks of size `bs`),
/// random symmetric blocks, and a diagonal shifted by `shift(block row)` times the absolute
/// row sum: positive shifts give SPD rows, negative ones negative definite rows.
fn random_symmetric(nb: usize, bs: usize, rng: &mut Rng, sign: impl Fn(usize) -> f64) -> Vec<f64> {
    let n = nb * bs;
    let mut a = vec![0.0; n * n];
    let mut couple = |i: usize, j: usize, rng: &mut Rng| {
        for r in 0..bs {
            for c in 0..bs {
                let v = rng.uniform();
                let (gr, gc) = (i * bs + r, j * bs + c);
                if i != j || r <= c {
                    a[gr * n + gc] = v;
                    a[gc * n + gr] = v;
                }
            }
        }
    };
    for i in 0..nb {
        couple(i, i, rng);
        for _ in 0..3 {
            let j = rng.below(nb);
            if j != i {
                couple(i, j, rng);
            }
        }
    }
    for r in 0..n {
        let row_sum: f64 = (0..n).map(|c| a[r * n + c].abs()).sum();
        a[r * n + r] = sign(r / bs) * (row_sum + 0.5);
    }
    a
}

fn solve_and_compare(a_dense: &[f64], n: usize, bs: usize, rng: &mut Rng) -> DirectSolver {
    let a = Bsr::from_dense(a_dense, n, n, bs, bs).unwrap();
    let sym = Arc::new(DirectSymbolic::new(a.pattern()).unwrap());
    let solver = DirectSolver::factor(&sym, &a).unwrap();
    let b: Vec<f64> = (0..n).map(|_| rng.uniform()).collect();
    let expect = dense_solve(a_dense.to_vec(), b.clone());
    let mut x = Vector::zeros(n);
    solver.solve(&Vector::from_vec(b), &mut x).unwrap();
    let scale = expect.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for (i, (xi, ei)) in x.host().unwrap().iter().zip(&expect).enumerate() {
        assert!(
            (xi - ei).abs() <= 1e-11 * scale,
            "bs {bs} row {i}: {xi} vs {ei}"
        );
    }
    solver
}

#[test]
fn random_spd_block_matrices_match_dense_solves() {
    let mut rng = Rng(SplitMix64(7));
    for bs in [1, 3, 6] {
        for nb in [1, 2, 17, 40] {
            let a = random_symmetric(nb, bs, &mut rng, |_| 1.0);
            let solver = solve_and_compare(&a, nb * bs, bs, &mut rng);
            assert_eq!(solver.negative_pivots(), 0);
        }
    }
}

#[test]
fn quasi_definite_matrices_match_dense_solves() {
    // [[K, B^T], [B, -C]]: the last third of the block rows negative definite; the RCM order
    // interleaves them, which quasi-definiteness allows.
    let mut rng = Rng(SplitMix64(11));
    for bs in [1, 3] {
        let nb = 30;
        let a = random_symmetric(nb, bs, &mut rng, |i| if i >= 20 { -1.0 } else { 1.0 });
        let solver = solve_and_compare(&a, nb * bs, bs, &mut rng);
        assert_eq!(solver.negative_pivots(), 10 * bs);
    }
}

/// Block pattern and values of `L (x) M` on an `nx x ny x nz` grid, `L` the 7-point Laplacian
/// with unit Dirichlet shift and `M` a fixed SPD 3x3 matrix: SPD with 3x3 blocks.
fn laplacian_like(dims: [usize; 3], order: &[usize]) -> Bsr {
    let [nx, ny, nz] = dims;
    let n = nx * ny * nz;
    let m = [4.0, 1.0, 0.5, 1.0, 3.0, -0.5, 0.5, -0.5, 2.0];
    // `order[k]` is the block row of grid point k (a shuffle, or the identity).
    let mut rows: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                let g = i + nx * (j + ny * k);
                rows[order[g]].push((order[g], 7.0));
                let mut link = |h: usize| rows[order[g]].push((order[h], -1.0));
                if i > 0 {
                    link(g - 1);
                }
                if i + 1 < nx {
                    link(g + 1);
                }
                if j > 0 {
                    link(g - nx);
                }
                if j + 1 < ny {
                    link(g + nx);
                }
                if k > 0 {
                    link(g - nx * ny);
                }
                if k + 1 < nz {
                    link(g + nx * ny);
                }
            }
        }
    }
    let mut row_ptr = vec![0];
    let mut col_idx = Vec::new();
    let mut values = Vec::new();
    for row in &mut rows {
        row.sort_by_key(|&(c, _)| c);
        for &(c, w) in row.iter() {
            col_idx.push(c as u32);
            values.extend(m.iter().map(|v| w * v));
        }
        row_ptr.push(col_idx.len());
    }
    let pattern = Arc::new(BlockPattern::new(n, n, row_ptr, col_idx).unwrap());
    Bsr::from_parts(pattern, 3, 3, values).unwrap()
}

fn shuffled(n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        p.swap(i, rng.below(i + 1));
    }
    p
}

#[test]
fn laplacian_like_block_matrix_is_solved_exactly() {
    let mut rng = Rng(SplitMix64(3));
    let dims = [6, 5, 4];
    let order = shuffled(120, &mut rng);
    let a = laplacian_like(dims, &order);
    let sym = Arc::new(DirectSymbolic::new(a.pattern()).unwrap());
    let solver = DirectSolver::factor(&sym, &a).unwrap();
    let x_star = Vector::from_vec((0..a.n_rows()).map(|_| rng.uniform()).collect());
    let mut b = Vector::zeros(a.n_rows());
    a.spmv(&x_star, &mut b).unwrap();
    let mut x = Vector::zeros(a.n_rows());
    solver.solve(&b, &mut x).unwrap();
    let err = x
        .host()
        .unwrap()
        .iter()
        .zip(x_star.host().unwrap())
        .fold(0.0f64, |m, (u, v)| m.max((u - v).abs()));
    assert!(err < 1e-12, "max error {err}");
    // Refactoring new values on the same plan.
    let mut a2 = a.clone();
    a2.scale(2.0).unwrap();
    let solver2 = DirectSolver::factor(&sym, &a2).unwrap();
    let mut x2 = Vector::zeros(a.n_rows());
    solver2.solve(&b, &mut x2).unwrap();
    for (u, v) in x2.host().unwrap().iter().zip(x_star.host().unwrap()) {
        assert!((2.0 * u - v).abs() < 1e-12);
    }
}

#[test]
fn rcm_shrinks_the_envelope_of_a_shuffled_grid() {
    let mut rng = Rng(SplitMix64(5));
    let dims = [10, 10, 10];
    let n = 1000;
    let identity: Vec<usize> = (0..n).collect();
    let natural = laplacian_like(dims, &identity);
    let shuffle = laplacian_like(dims, &shuffled(n, &mut rng));
    let env = |a: &Bsr, rcm: bool| {
        let s = if rcm {
            DirectSymbolic::reverse_cuthill_mckee(a.pattern()).unwrap()
        } else {
            DirectSymbolic::with_ordering(a.pattern(), identity.clone()).unwrap()
        };
        s.envelope_size(1)
    };
    let (lex, shuffled_env, rcm_env) = (
        env(&natural, false),
        env(&shuffle, false),
        env(&shuffle, true),
    );
    // Lexicographic: each row reaches back one xy-plane (100 points); RCM does at least as well.
    eprintln!("envelope: lexicographic {lex}, shuffled {shuffled_env}, shuffled + RCM {rcm_env}");
    assert!(shuffled_env > 3 * lex, "{shuffled_env} vs {lex}");
    assert!(
        10 * rcm_env < 8 * lex,
        "rcm {rcm_env} vs lexicographic {lex}"
    );
    let sym = DirectSymbolic::new(shuffle.pattern()).unwrap();
    assert_eq!(sym.envelope_size(1), rcm_env);
    assert!(sym.block_bandwidth() < 150, "{}", sym.block_bandwidth());
    // On the unshuffled 7-point grid RCM also beats the natural order, so `new` picks it.
    let sym = DirectSymbolic::new(natural.pattern()).unwrap();
    assert!(sym.envelope_size(1) < lex);
}

#[test]
fn zero_pivots_and_bad_inputs_are_errors() {
    // diag(2, 0, 3): the pivot of row 1 vanishes in any ordering.
    let a = Bsr::from_dense(
        &[2.0, 0.0, 0.0, 0.0, 1e-300, 0.0, 0.0, 0.0, 3.0],
        3,
        3,
        1,
        1,
    )
    .unwrap();
    let mut values = a.host().unwrap().to_vec();
    values[1] = 0.0;
    let a = Bsr::from_parts(Arc::clone(a.pattern()), 1, 1, values).unwrap();
    let sym = Arc::new(DirectSymbolic::new(a.pattern()).unwrap());
    let err = DirectSolver::factor(&sym, &a).unwrap_err();
    assert_eq!(
        err,
        LinalgError::ZeroPivot {
            row: 1,
            pivot: 0.0,
            diagonal: 0.0
        }
    );
    // Singular by cancellation: [[1, 1], [1, 1]].
    let a = Bsr::from_dense(&[1.0, 1.0, 1.0, 1.0], 2, 2, 1, 1).unwrap();
    let sym = Arc::new(DirectSymbolic::new(a.pattern()).unwrap());
    let err = DirectSolver::factor(&sym, &a).unwrap_err();
    assert!(err.to_string().starts_with("zero pivot"), "{err}");

    // Wrong pattern, wrong vector length, bad permutation, non-square pattern.
    let b = Bsr::from_dense(&[1.0, 0.0, 0.0, 1.0], 2, 2, 1, 1).unwrap();
    assert!(DirectSolver::factor(&sym, &b).is_err());
    let spd = Bsr::from_dense(&[2.0, 1.0, 1.0, 2.0], 2, 2, 1, 1).unwrap();
    let solver = DirectSolver::factor(&sym, &spd).unwrap();
    let err = solver
        .solve(&Vector::zeros(3), &mut Vector::zeros(2))
        .unwrap_err();
    assert!(err.to_string().contains("length 3, expected 2"), "{err}");
    let err = DirectSymbolic::with_ordering(spd.pattern(), vec![1, 1]).unwrap_err();
    assert!(matches!(
        err,
        LinalgError::InvalidPermutation {
            position: 1,
            value: 1,
            ..
        }
    ));
    let rect = BlockPattern::new(1, 2, vec![0, 2], vec![0, 1]).unwrap();
    assert!(DirectSymbolic::new(&rect).is_err());
}

#[test]
fn upper_triangle_only_storage_is_read_transposed() {
    // A pattern holding only the upper triangle of an SPD matrix: missing mirrors are read
    // transposed, so the result equals the full-storage solve.
    let full = [4.0, 1.0, 0.0, 1.0, 5.0, 2.0, 0.0, 2.0, 6.0];
    let pattern = Arc::new(BlockPattern::new(3, 3, vec![0, 2, 4, 5], vec![0, 1, 1, 2, 2]).unwrap());
    let upper = Bsr::from_parts(pattern, 1, 1, vec![4.0, 1.0, 5.0, 2.0, 6.0]).unwrap();
    let sym = Arc::new(DirectSymbolic::new(upper.pattern()).unwrap());
    let solver = DirectSolver::factor(&sym, &upper).unwrap();
    let b = vec![1.0, -2.0, 3.0];
    let mut x = Vector::zeros(3);
    solver.solve(&Vector::from_vec(b.clone()), &mut x).unwrap();
    let expect = dense_solve(full.to_vec(), b);
    for (u, v) in x.host().unwrap().iter().zip(&expect) {
        assert!((u - v).abs() < 1e-14);
    }
}

/// `L (x) M` for the 27-point (Q1 node-to-node) graph Laplacian of an `n^3` node grid plus a unit
/// shift, `M` SPD 3x3: the sparsity and block size of a Q1 elasticity tangent.
fn elasticity_like(n: usize) -> Bsr {
    let m = [4.0, 1.0, 0.5, 1.0, 3.0, -0.5, 0.5, -0.5, 2.0];
    let idx = |i: usize, j: usize, k: usize| i + n * (j + n * k);
    let mut row_ptr = vec![0];
    let mut col_idx = Vec::new();
    let mut values = Vec::new();
    for k in 0..n {
        for j in 0..n {
            for i in 0..n {
                let range = |c: usize| c.saturating_sub(1)..(c + 2).min(n);
                let mut degree = 0.0;
                let row_start = values.len();
                for kk in range(k) {
                    for jj in range(j) {
                        for ii in range(i) {
                            let c = idx(ii, jj, kk);
                            let w = if c == idx(i, j, k) { 0.0 } else { -1.0 };
                            degree -= w;
                            col_idx.push(c as u32);
                            values.extend(m.iter().map(|v| w * v));
                        }
                    }
                }
                let diag = row_start
                    + 9 * (col_idx[row_ptr[row_ptr.len() - 1]..]
                        .iter()
                        .position(|&c| c as usize == idx(i, j, k))
                        .unwrap());
                for (t, v) in m.iter().enumerate() {
                    values[diag + t] = (degree + 1.0) * v;
                }
                row_ptr.push(col_idx.len());
            }
        }
    }
    let pattern = Arc::new(BlockPattern::new(n * n * n, n * n * n, row_ptr, col_idx).unwrap());
    Bsr::from_parts(pattern, 3, 3, values).unwrap()
}

#[test]
fn elasticity_like_solve_small() {
    let a = elasticity_like(5);
    let sym = Arc::new(DirectSymbolic::new(a.pattern()).unwrap());
    let solver = DirectSolver::factor(&sym, &a).unwrap();
    let b: Vec<f64> = (0..a.n_rows()).map(|i| (i as f64).sin()).collect();
    let expect = dense_solve(a.to_dense().unwrap(), b.clone());
    let mut x = Vector::zeros(a.n_rows());
    solver.solve(&Vector::from_vec(b), &mut x).unwrap();
    for (u, v) in x.host().unwrap().iter().zip(&expect) {
        assert!((u - v).abs() < 1e-12 * (1.0 + v.abs()));
    }
}

#[test]
fn factor_is_independent_of_the_thread_count() {
    let a = elasticity_like(6);
    let sym = Arc::new(DirectSymbolic::new(a.pattern()).unwrap());
    let b = Vector::from_vec((0..a.n_rows()).map(|i| (0.3 * i as f64).sin()).collect());
    let solve_with = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let solver = DirectSolver::factor(&sym, &a).unwrap();
            let mut x = Vector::zeros(a.n_rows());
            solver.solve(&b, &mut x).unwrap();
            x.to_host_vec().unwrap()
        })
    };
    assert_eq!(solve_with(1), solve_with(4));
}
