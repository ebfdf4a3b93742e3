//! Host BLAS-1 kernels on slices of equal length (checked by the callers in [`crate::ops`]).

use rayon::prelude::*;

/// Entries per partial sum of a reduction; fixed so results do not depend on the thread count.
pub const REDUCTION_CHUNK: usize = 4096;
/// Entries per task of the element-wise operations.
const MAP_CHUNK: usize = 8192;

/// Interleaved accumulators of one partial sum of [`dot_in_chunks`].
const LANES: usize = 4;

/// Sums `x_i y_i` over one chunk with [`LANES`] interleaved accumulators (fixed order).
fn dot_chunk(x: &[f64], y: &[f64]) -> f64 {
    let mut acc = [0.0f64; LANES];
    let xc = x.chunks_exact(LANES);
    let yc = y.chunks_exact(LANES);
    let (xr, yr) = (xc.remainder(), yc.remainder());
    for (a, b) in xc.zip(yc) {
        for k in 0..LANES {
            acc[k] += a[k] * b[k];
        }
    }
    let mut tail = 0.0;
    for (a, b) in xr.iter().zip(yr) {
        tail += a * b;
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// `x . y` in floating point: partial sums of [`REDUCTION_CHUNK`] entries, added in chunk
/// order (the former dot; the exact one is [`dot_exact`]).
pub(crate) fn dot_in_chunks(x: &[f64], y: &[f64]) -> f64 {
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

/// The exact sum of the rounded products `x_i y_i` ([`crate::exact::ExactSum`]): the same
/// bits for any order of the terms, so for any thread count, rank count or numbering.
pub(crate) fn dot_exact(x: &[f64], y: &[f64]) -> crate::exact::ExactSum {
    let chunk = |a: &[f64], b: &[f64]| {
        let mut s = crate::exact::ExactSum::new();
        for (p, q) in a.iter().zip(b) {
            s.add(p * q);
        }
        s
    };
    if x.len() <= REDUCTION_CHUNK {
        return chunk(x, y);
    }
    x.par_chunks(REDUCTION_CHUNK)
        .zip(y.par_chunks(REDUCTION_CHUNK))
        .map(|(a, b)| chunk(a, b))
        .reduce(crate::exact::ExactSum::new, |mut s, t| {
            s.merge(&t);
            s
        })
}

/// `max |x_i|`, NaN if any entry is NaN (0 for an empty slice).
pub(crate) fn norm_inf(x: &[f64]) -> f64 {
    let chunk_max = |c: &[f64]| {
        c.iter().fold(0.0f64, |m, v| {
            if m.is_nan() || v.is_nan() {
                f64::NAN
            } else {
                m.max(v.abs())
            }
        })
    };
    x.par_chunks(REDUCTION_CHUNK).map(chunk_max).reduce(
        || 0.0,
        |a, b| {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.max(b)
            }
        },
    )
}

/// `y += a x`.
pub(crate) fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
    y.par_chunks_mut(MAP_CHUNK)
        .zip(x.par_chunks(MAP_CHUNK))
        .for_each(|(yc, xc)| yc.iter_mut().zip(xc).for_each(|(yi, xi)| *yi += a * xi));
}

/// `y = a x + b y`; with `b == 0` the old `y` is not read.
pub(crate) fn axpby(a: f64, x: &[f64], b: f64, y: &mut [f64]) {
    let chunks = y.par_chunks_mut(MAP_CHUNK).zip(x.par_chunks(MAP_CHUNK));
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
pub(crate) fn scale(a: f64, x: &mut [f64]) {
    x.par_chunks_mut(MAP_CHUNK)
        .for_each(|c| c.iter_mut().for_each(|v| *v *= a));
}

/// Entry `i` of `x` becomes `crate::hash::signed_unit(splitmix64(first + i ^ seed'))`.
pub(crate) fn fill_hashed(first: u64, seed: u64, x: &mut [f64]) {
    x.par_iter_mut().enumerate().for_each(|(i, xi)| {
        *xi = crate::hash::signed_unit(crate::hash::splitmix64(
            (first + i as u64) ^ seed.rotate_left(32),
        ))
    });
}
