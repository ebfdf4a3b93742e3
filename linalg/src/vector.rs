//! [`Vector`] and the BLAS-1 operations of [`ops`].

/// A dense vector of `f64` (host memory today; a device variant can sit behind the same API).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Vector {
    data: Vec<f64>,
}

impl Vector {
    /// A vector of `n` zeros.
    pub fn zeros(n: usize) -> Self {
        Self { data: vec![0.0; n] }
    }

    /// Takes ownership of `v`.
    pub fn from_vec(v: Vec<f64>) -> Self {
        Self { data: v }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True if the vector has no entries.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The entries.
    pub fn as_slice(&self) -> &[f64] {
        &self.data
    }

    /// The entries, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [f64] {
        &mut self.data
    }

    /// Gives back the storage.
    pub fn into_vec(self) -> Vec<f64> {
        self.data
    }

    /// Sets every entry to `a`.
    pub fn fill(&mut self, a: f64) {
        self.data.fill(a);
    }

    /// Copies `x` into `self`. Panics if the lengths differ.
    pub fn copy_from(&mut self, x: &Vector) {
        self.data.copy_from_slice(&x.data);
    }
}

impl From<Vec<f64>> for Vector {
    fn from(v: Vec<f64>) -> Self {
        Self::from_vec(v)
    }
}

/// BLAS-1 operations, parallel with rayon.
///
/// Reductions ([`dot`], [`norm2`]) sum fixed-size chunks (of [`REDUCTION_CHUNK`] entries) and then add
/// the partial sums in order, so their result is bit-identical for any thread count.
/// All operations panic if the vector lengths differ (a programming error, not an input error).
pub mod ops {
    use super::Vector;
    use rayon::prelude::*;

    /// Entries per partial sum of a reduction; fixed so results do not depend on the thread count.
    pub const REDUCTION_CHUNK: usize = 4096;
    /// Entries per task of the element-wise operations.
    const MAP_CHUNK: usize = 8192;

    fn check_len(x: &Vector, y: &Vector, op: &str) {
        assert_eq!(x.len(), y.len(), "ops::{op}: vector lengths differ");
    }

    /// Sums `x_i y_i` over one chunk with four interleaved accumulators (fixed order).
    fn dot_chunk(x: &[f64], y: &[f64]) -> f64 {
        let mut acc = [0.0f64; 4];
        let xc = x.chunks_exact(4);
        let yc = y.chunks_exact(4);
        let (xr, yr) = (xc.remainder(), yc.remainder());
        for (a, b) in xc.zip(yc) {
            for k in 0..4 {
                acc[k] += a[k] * b[k];
            }
        }
        let mut tail = 0.0;
        for (a, b) in xr.iter().zip(yr) {
            tail += a * b;
        }
        (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
    }

    /// `x . y`, deterministic for any thread count.
    pub fn dot(x: &Vector, y: &Vector) -> f64 {
        check_len(x, y, "dot");
        let (x, y) = (x.as_slice(), y.as_slice());
        if x.len() <= REDUCTION_CHUNK {
            return dot_chunk(x, y);
        }
        let partials: Vec<f64> = x
            .par_chunks(REDUCTION_CHUNK)
            .zip(y.par_chunks(REDUCTION_CHUNK))
            .map(|(a, b)| dot_chunk(a, b))
            .collect();
        partials.iter().sum()
    }

    /// Euclidean norm `sqrt(x . x)`, deterministic for any thread count.
    pub fn norm2(x: &Vector) -> f64 {
        dot(x, x).sqrt()
    }

    /// `y += a x`.
    pub fn axpy(a: f64, x: &Vector, y: &mut Vector) {
        check_len(x, y, "axpy");
        y.as_mut_slice()
            .par_chunks_mut(MAP_CHUNK)
            .zip(x.as_slice().par_chunks(MAP_CHUNK))
            .for_each(|(yc, xc)| yc.iter_mut().zip(xc).for_each(|(yi, xi)| *yi += a * xi));
    }

    /// `y = a x + b y`. With `b == 0` the old `y` is not read (NaNs in it do not propagate).
    pub fn axpby(a: f64, x: &Vector, b: f64, y: &mut Vector) {
        check_len(x, y, "axpby");
        let chunks = y
            .as_mut_slice()
            .par_chunks_mut(MAP_CHUNK)
            .zip(x.as_slice().par_chunks(MAP_CHUNK));
        if b == 0.0 {
            chunks.for_each(|(yc, xc)| yc.iter_mut().zip(xc).for_each(|(yi, xi)| *yi = a * xi));
        } else {
            chunks.for_each(|(yc, xc)| {
                yc.iter_mut()
                    .zip(xc)
                    .for_each(|(yi, xi)| *yi = a * xi + b * *yi)
            });
        }
    }

    /// `x = a x`.
    pub fn scale(a: f64, x: &mut Vector) {
        x.as_mut_slice()
            .par_chunks_mut(MAP_CHUNK)
            .for_each(|c| c.iter_mut().for_each(|v| *v *= a));
    }
}
