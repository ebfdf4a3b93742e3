//! Shared test helpers: a deterministic generator, random block matrices and dense references.
#![allow(dead_code)]

use std::sync::Arc;

use linalg::hash::SplitMix64;
use linalg::{BlockPattern, Bsr};

/// A deterministic generator: [`SplitMix64`], the crate's shared hash.
pub struct Rng(SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(SplitMix64(seed))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Uniform in `[-1, 1)`.
    pub fn unit(&mut self) -> f64 {
        self.0.next_signed_unit()
    }

    pub fn vec(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.unit()).collect()
    }
}

/// Random pattern where each block is present with probability `density` (plus, if `diagonal`, every
/// diagonal block of a square pattern).
pub fn random_pattern(
    rng: &mut Rng,
    nbr: usize,
    nbc: usize,
    density: f64,
    diagonal: bool,
) -> Arc<BlockPattern> {
    let mut row_ptr = vec![0];
    let mut col_idx = Vec::new();
    for i in 0..nbr {
        for j in 0..nbc {
            if (diagonal && i == j) || (rng.unit() + 1.0) * 0.5 < density {
                col_idx.push(j as u32);
            }
        }
        row_ptr.push(col_idx.len());
    }
    Arc::new(BlockPattern::new(nbr, nbc, row_ptr, col_idx).unwrap())
}

/// Random matrix on a random pattern.
pub fn random_bsr(
    rng: &mut Rng,
    nbr: usize,
    nbc: usize,
    br: usize,
    bc: usize,
    density: f64,
) -> Bsr {
    let p = random_pattern(rng, nbr, nbc, density, false);
    let values = rng.vec(p.nnz() * br * bc);
    Bsr::from_parts(p, br, bc, values).unwrap()
}

/// Row-major dense product `a (m x k) * b (k x n)`.
pub fn dense_mul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for l in 0..k {
            let a_il = a[i * k + l];
            for j in 0..n {
                c[i * n + j] += a_il * b[l * n + j];
            }
        }
    }
    c
}

/// Row-major dense transpose of an `m x n` matrix.
pub fn dense_transpose(a: &[f64], m: usize, n: usize) -> Vec<f64> {
    let mut t = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            t[j * m + i] = a[i * n + j];
        }
    }
    t
}

/// Asserts `|a - b| <= tol * (1 + |b|)` entry-wise.
pub fn assert_close(a: &[f64], b: &[f64], tol: f64) {
    assert_eq!(a.len(), b.len(), "length mismatch");
    for (k, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "entry {k}: {x} vs {y}"
        );
    }
}

/// Runs `f` in a rayon pool of `n` threads.
pub fn with_threads<T: Send>(n: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .unwrap()
        .install(f)
}
