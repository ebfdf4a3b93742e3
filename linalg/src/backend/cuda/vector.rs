//! Vector kernels of CG and the smoothers (`linalg/cuda/vector.cu`), bit-identical to
//! [`crate::ops`]: element-wise updates round as the host's, and the reductions ([`dot`],
//! [`dots`], [`sum`]) are exact sums rounded once, as [`crate::exact::ExactSum`] on the host: the
//! host's bits, on every run and for any launch shape.

use cudarc::driver::PushKernelArg;

use super::context::{check_len, driver_err};
use super::kernels::{grid_1d, grid_stride, VECTOR};
use super::{CudaContext, DeviceBuffer};
use crate::LinalgError;

/// `vector.cu` takes no compile-time constants.
const DEFINES: &[(&str, i64)] = &[];

/// Every entry of `y` set to `a`.
pub fn fill(ctx: &CudaContext, a: f64, y: &mut DeviceBuffer<f64>) -> Result<(), LinalgError> {
    let f = ctx.function(&VECTOR, DEFINES, "fill")?;
    let n = y.len() as u64;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n).arg(&a).arg(&mut *y);
    // SAFETY: arguments match `fill`.
    unsafe { l.launch(grid_stride(n)) }.map_err(driver_err("fill"))?;
    Ok(())
}

/// `y = a x + b y`; with `b == 0` the old `y` is not read.
pub fn axpby(
    ctx: &CudaContext,
    a: f64,
    x: &DeviceBuffer<f64>,
    b: f64,
    y: &mut DeviceBuffer<f64>,
) -> Result<(), LinalgError> {
    check_len("device axpby: x", y.len(), x.len())?;
    let f = ctx.function(&VECTOR, DEFINES, "axpby")?;
    let (n, read_y) = (y.len() as u64, (b != 0.0) as i32);
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n).arg(&a).arg(x).arg(&b).arg(&mut *y).arg(&read_y);
    // SAFETY: arguments match `axpby`; lengths checked.
    unsafe { l.launch(grid_stride(n)) }.map_err(driver_err("axpby"))?;
    Ok(())
}

/// `y += a x`.
pub fn axpy(
    ctx: &CudaContext,
    a: f64,
    x: &DeviceBuffer<f64>,
    y: &mut DeviceBuffer<f64>,
) -> Result<(), LinalgError> {
    check_len("device axpy: x", y.len(), x.len())?;
    let f = ctx.function(&VECTOR, DEFINES, "axpy")?;
    let n = y.len() as u64;
    let mut l = ctx.stream().launch_builder(&f);
    l.arg(&n).arg(&a).arg(x).arg(&mut *y);
    // SAFETY: arguments match `axpy`; lengths checked.
    unsafe { l.launch(grid_stride(n)) }.map_err(driver_err("axpy"))?;
    Ok(())
}

/// What [`sum`] adds: the entries or their magnitudes (`exact_bins`'s `term`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Term {
    /// `sum x_i`.
    Value = 1,
    /// `sum |x_i|`.
    Magnitude = 2,
}

/// `exact_bins`'s term for products `x_i y_i`.
const TERM_PRODUCT: i32 = 0;
/// Words of the device accumulator: `vector.cu`'s `EXACT_BINS` bins and the non-finite flags.
const EXACT_WORDS: usize = 69;
/// Threads per block of `exact_bins`.
const EXACT_THREADS: u32 = 256;
/// Terms per thread below which fewer blocks are launched.
const TERMS_PER_THREAD: u64 = 4;
/// Blocks of `exact_bins` at most (about eight per SM of a large GPU).
const MAX_BLOCKS: u64 = 1024;
/// Terms of one exact sum at most: each term adds less than `2^33` to a bin, so the bins'
/// running sums stay inside 63 bits.
const MAX_TERMS: u64 = 1 << 30;

/// The device accumulator of the exact sum of the terms selected by `term` (`x_i y_i` with
/// `y`, else `x_i` or `|x_i|`) over every entry of `x`: [`EXACT_WORDS`] words, left on the
/// device.
fn exact_words(
    ctx: &CudaContext,
    term: i32,
    x: &DeviceBuffer<f64>,
    y: &DeviceBuffer<f64>,
) -> Result<DeviceBuffer<u64>, LinalgError> {
    exact_words_prefix(ctx, term, x, y, x.len())
}

/// [`exact_words`] over the first `len` entries of `x` (and `y`) only: a rank's owned entries
/// of a vector with a ghost tail.
fn exact_words_prefix(
    ctx: &CudaContext,
    term: i32,
    x: &DeviceBuffer<f64>,
    y: &DeviceBuffer<f64>,
    len: usize,
) -> Result<DeviceBuffer<u64>, LinalgError> {
    let mut words = ctx.zeros::<u64>(EXACT_WORDS)?;
    add_exact_bins(ctx, term, x, y, len, &mut words.slice_mut().slice_mut(..))?;
    Ok(words)
}

/// Adds the terms selected by `term` over the first `len` entries of `x` (and `y`) into the
/// accumulator `words` ([`EXACT_WORDS`] words, zeroed before the first addition).
fn add_exact_bins(
    ctx: &CudaContext,
    term: i32,
    x: &DeviceBuffer<f64>,
    y: &DeviceBuffer<f64>,
    len: usize,
    words: &mut cudarc::driver::CudaViewMut<'_, u64>,
) -> Result<(), LinalgError> {
    let n = exact_terms(x, y, len)?;
    check_len("device exact sum: words", EXACT_WORDS, words.len())?;
    let bins = ctx.function(&VECTOR, DEFINES, "exact_bins")?;
    // no `done` counter: the words are left for exact_finish or a download
    let null: u64 = 0;
    let mut l = ctx.stream().launch_builder(&bins);
    l.arg(&n)
        .arg(x)
        .arg(y)
        .arg(&term)
        .arg(words)
        .arg(&null)
        .arg(&null);
    // SAFETY: arguments match `exact_bins` (grid-stride over `n` entries of `x` and, for
    // products, `y`, checked above); `words` holds EXACT_WORDS words, zeroed by the caller;
    // with a null `done` the kernel reads neither `done` nor `out`.
    unsafe { l.launch(exact_grid(n)) }.map_err(driver_err("exact_bins"))?;
    Ok(())
}

/// The number of terms of an exact sum over the first `len` entries of `x` and `y`, checked:
/// inside both, and few enough for the bins' head room ([`MAX_TERMS`]).
fn exact_terms(
    x: &DeviceBuffer<f64>,
    y: &DeviceBuffer<f64>,
    len: usize,
) -> Result<u64, LinalgError> {
    if len > x.len() || len > y.len() {
        return Err(LinalgError::IndexOutOfRange {
            what: "device exact sum: prefix",
            index: len,
            len: x.len().min(y.len()),
        });
    }
    let n = len as u64;
    if n >= MAX_TERMS {
        return Err(LinalgError::TooManyTerms {
            what: "device exact sum",
            found: n,
            max: MAX_TERMS - 1,
        });
    }
    Ok(n)
}

/// The grid of `exact_bins` over `n` terms.
fn exact_grid(n: u64) -> cudarc::driver::LaunchConfig {
    let blocks = n
        .div_ceil(EXACT_THREADS as u64 * TERMS_PER_THREAD)
        .clamp(1, MAX_BLOCKS);
    grid_1d(blocks * EXACT_THREADS as u64, EXACT_THREADS)
}

/// Sums rounded at once in one call: at most this many share the context's scratch.
const MAX_ROUNDED: usize = 8;

/// The context's scratch of rounded sums ([`rounded_sums`]): [`MAX_ROUNDED`] accumulators and
/// block counters, zero between calls (the last block of each sum zeroes its own), and the
/// rounded values. `clean` is false from the first launch until the download that waits for
/// them succeeded: a failure in between leaves them to be zeroed again.
#[derive(Debug)]
pub(crate) struct RoundedScratch {
    words: DeviceBuffer<u64>,
    done: DeviceBuffer<u32>,
    out: DeviceBuffer<f64>,
    clean: bool,
}

/// The exact sums of `terms` (each `(term, x, y, len)`: [`exact_words_prefix`]'s), each
/// rounded once on the device by the last block of its one `exact_bins` launch into the
/// context's zeroed scratch (no allocation, no memset, no second kernel), then downloaded
/// together: each sum's bits as [`dot`]'s two-kernel path.
fn rounded_sums(
    ctx: &CudaContext,
    terms: &[(i32, &DeviceBuffer<f64>, &DeviceBuffer<f64>, usize)],
) -> Result<Vec<f64>, LinalgError> {
    if terms.len() > MAX_ROUNDED {
        return terms
            .chunks(MAX_ROUNDED)
            .map(|c| rounded_sums(ctx, c))
            .collect::<Result<Vec<_>, _>>()
            .map(|v| v.concat());
    }
    let mut guard = ctx.rounded_scratch();
    let scratch = match guard.as_mut() {
        Some(s) if s.clean => s,
        _ => guard.insert(RoundedScratch {
            words: ctx.zeros(EXACT_WORDS * MAX_ROUNDED)?,
            done: ctx.zeros(MAX_ROUNDED)?,
            out: ctx.zeros(MAX_ROUNDED)?,
            clean: true,
        }),
    };
    let f = ctx.function(&VECTOR, DEFINES, "exact_bins")?;
    scratch.clean = false;
    for (k, &(term, x, y, len)) in terms.iter().enumerate() {
        let n = exact_terms(x, y, len)?;
        let mut words = scratch
            .words
            .slice_mut()
            .slice_mut(k * EXACT_WORDS..(k + 1) * EXACT_WORDS);
        let mut done = scratch.done.slice_mut().slice_mut(k..k + 1);
        let mut out = scratch.out.slice_mut().slice_mut(k..k + 1);
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&n)
            .arg(x)
            .arg(y)
            .arg(&term)
            .arg(&mut words)
            .arg(&mut done)
            .arg(&mut out);
        // SAFETY: arguments match `exact_bins` (`n` entries of `x` and `y`, checked above);
        // accumulator k and its counter are zero (the scratch is clean), and the last block
        // rounds into `out[k]` and zeroes them again.
        unsafe { l.launch(exact_grid(n)) }.map_err(driver_err("exact_bins"))?;
    }
    let values = ctx.download_prefix(&scratch.out, terms.len())?;
    scratch.clean = true;
    Ok(values)
}

/// The accumulators of the dot products `x_k . y_k` over the first `len_k` entries of each
/// pair `(x_k, y_k, len_k)`, [`EXACT_WORDS`] words each, one after another on the device.
fn dots_words(
    ctx: &CudaContext,
    pairs: &[(&DeviceBuffer<f64>, &DeviceBuffer<f64>, usize)],
) -> Result<DeviceBuffer<u64>, LinalgError> {
    let mut words = ctx.zeros::<u64>(EXACT_WORDS * pairs.len().max(1))?;
    for (k, &(x, y, len)) in pairs.iter().enumerate() {
        let mut part = words
            .slice_mut()
            .slice_mut(k * EXACT_WORDS..(k + 1) * EXACT_WORDS);
        add_exact_bins(ctx, TERM_PRODUCT, x, y, len, &mut part)?;
    }
    Ok(words)
}

/// The dot products `x_k . y_k` over the first `len_k` entries of each pair `(x_k, y_k,
/// len_k)`, each rounded once on the device ([`dot`]'s bits), with one download of the
/// values (8 bytes each): one wait for the device where separate calls wait once each.
pub fn dots(
    ctx: &CudaContext,
    pairs: &[(&DeviceBuffer<f64>, &DeviceBuffer<f64>, usize)],
) -> Result<Vec<f64>, LinalgError> {
    let terms: Vec<_> = pairs
        .iter()
        .map(|&(x, y, len)| (TERM_PRODUCT, x, y, len))
        .collect();
    rounded_sums(ctx, &terms)
}

/// The dot products `x_k . y_k` over the first `len_k` entries of each pair `(x_k, y_k,
/// len_k)`, unrounded (as [`dot_exact_prefix`]'s), with one download for all of them
/// ([`EXACT_WORDS`] words each): one wait for the device where separate calls wait once each.
pub fn dots_exact_prefix(
    ctx: &CudaContext,
    pairs: &[(&DeviceBuffer<f64>, &DeviceBuffer<f64>, usize)],
) -> Result<Vec<crate::exact::ExactSum>, LinalgError> {
    let words = ctx.download(&dots_words(ctx, pairs)?)?;
    words
        .chunks_exact(EXACT_WORDS)
        .take(pairs.len())
        .map(exact_from_words)
        .collect()
}

/// The exact sum of the terms selected by `term` (see [`exact_words`]), rounded once into
/// `out[0]` (two launches: `exact_bins`, `exact_finish`; nothing comes back).
fn exact_sum_into(
    ctx: &CudaContext,
    term: i32,
    x: &DeviceBuffer<f64>,
    y: &DeviceBuffer<f64>,
    out: &mut DeviceBuffer<f64>,
) -> Result<(), LinalgError> {
    check_len("device exact sum: out", 1, out.len())?;
    let words = exact_words(ctx, term, x, y)?;
    let finish = ctx.function(&VECTOR, DEFINES, "exact_finish")?;
    let mut l = ctx.stream().launch_builder(&finish);
    l.arg(&words).arg(&mut *out);
    // SAFETY: arguments match `exact_finish` (one thread).
    unsafe { l.launch(grid_1d(1, 32)) }.map_err(driver_err("exact_finish"))?;
    Ok(())
}

/// `x . y` unrounded: the exact sum of the rounded products as a host
/// [`crate::exact::ExactSum`] (its words downloaded, 552 bytes), for reductions over ranks
/// that round once after adding every rank's sum (the host's distributed dot).
pub fn dot_exact(
    ctx: &CudaContext,
    x: &DeviceBuffer<f64>,
    y: &DeviceBuffer<f64>,
) -> Result<crate::exact::ExactSum, LinalgError> {
    check_len("device dot: y", x.len(), y.len())?;
    let words = ctx.download(&exact_words(ctx, TERM_PRODUCT, x, y)?)?;
    crate::exact::ExactSum::from_device_words(&words).ok_or(LinalgError::LengthMismatch {
        what: "device exact sum: words",
        expected: EXACT_WORDS,
        found: words.len(),
    })
}

/// `x . y` over the first `len` entries unrounded (a rank's owned entries of vectors with a
/// ghost tail), as [`dot_exact`]: 552 bytes downloaded.
pub fn dot_exact_prefix(
    ctx: &CudaContext,
    x: &DeviceBuffer<f64>,
    y: &DeviceBuffer<f64>,
    len: usize,
) -> Result<crate::exact::ExactSum, LinalgError> {
    let words = ctx.download(&exact_words_prefix(ctx, TERM_PRODUCT, x, y, len)?)?;
    exact_from_words(&words)
}

/// `sum x_i` or `sum |x_i|` over the first `len` entries unrounded (for sums over ranks that
/// round once after adding every rank's): 552 bytes downloaded.
pub fn sum_exact_prefix(
    ctx: &CudaContext,
    x: &DeviceBuffer<f64>,
    term: Term,
    len: usize,
) -> Result<crate::exact::ExactSum, LinalgError> {
    let words = ctx.download(&exact_words_prefix(ctx, term as i32, x, x, len)?)?;
    exact_from_words(&words)
}

fn exact_from_words(words: &[u64]) -> Result<crate::exact::ExactSum, LinalgError> {
    crate::exact::ExactSum::from_device_words(words).ok_or(LinalgError::LengthMismatch {
        what: "device exact sum: words",
        expected: EXACT_WORDS,
        found: words.len(),
    })
}

/// `x . y` into `out[0]`, left on the device (no transfer); `out` must hold one value. The
/// exact sum of the rounded products, rounded once: bit-identical to [`crate::ops::dot`].
#[cfg_attr(not(feature = "kernel-bench"), allow(dead_code))] // examples/cuda_bench.rs
pub fn dot_into(
    ctx: &CudaContext,
    x: &DeviceBuffer<f64>,
    y: &DeviceBuffer<f64>,
    out: &mut DeviceBuffer<f64>,
) -> Result<(), LinalgError> {
    check_len("device dot: y", x.len(), y.len())?;
    exact_sum_into(ctx, TERM_PRODUCT, x, y, out)
}

/// `x . y` (one scalar, 8 bytes, downloaded), bit-identical to [`crate::ops::dot`].
pub fn dot(
    ctx: &CudaContext,
    x: &DeviceBuffer<f64>,
    y: &DeviceBuffer<f64>,
) -> Result<f64, LinalgError> {
    check_len("device dot: y", x.len(), y.len())?;
    Ok(rounded_sums(ctx, &[(TERM_PRODUCT, x, y, x.len())])?[0])
}

/// `sum x_i` or `sum |x_i|` (one scalar downloaded): the exact sum rounded once, the bits of
/// [`crate::exact::ExactSum::of`] over the same terms.
pub fn sum(ctx: &CudaContext, x: &DeviceBuffer<f64>, term: Term) -> Result<f64, LinalgError> {
    Ok(rounded_sums(ctx, &[(term as i32, x, x, x.len())])?[0])
}

/// Values of [`CgSlots`]'s array for `steps` steps: `vector.cu`'s layout `alpha | beta |
/// rz (steps + 1) | pq`.
const fn cg_slot_count(steps: usize) -> usize {
    4 * steps + 1
}

/// The scalars of a CG recurrence of at most `steps` steps on the device (`vector.cu`'s
/// `cg_*` kernels and layout) and the scratch of the exact dots that write them: every step's
/// dots round into their own slot, the coefficients (NaN for a step not recorded) stay there
/// until [`CgSlots::recorded`] downloads them (the one wait of the recurrence).
#[derive(Debug)]
pub(crate) struct CgSlots {
    steps: usize,
    slots: DeviceBuffer<f64>,
    /// One exact sum's accumulator and block counter, zero between sums (the last block of
    /// each `exact_bins` launch zeroes them): the dots run one after another on the stream.
    words: DeviceBuffer<u64>,
    done: DeviceBuffer<u32>,
}

/// Which dot of the recurrence a slot holds.
#[derive(Clone, Copy, Debug)]
pub(crate) enum CgDot {
    /// `r . z` before step `k` (`k == 0`: the start; `k + 1`: after step `k`).
    Rz(usize),
    /// `p . q` of step `k`.
    Pq(usize),
}

impl CgSlots {
    /// Slots for `steps` steps, every one NaN (every coefficient unrecorded), and a zeroed
    /// accumulator: stream-ordered allocations, a fill and memsets, no wait.
    pub(crate) fn new(ctx: &CudaContext, steps: usize) -> Result<Self, LinalgError> {
        let mut slots = ctx.uninit(cg_slot_count(steps))?;
        fill(ctx, f64::NAN, &mut slots)?;
        Ok(Self {
            steps,
            slots,
            words: ctx.zeros(EXACT_WORDS)?,
            done: ctx.zeros(1)?,
        })
    }

    /// The dot `x . y` over the first `len` entries into its slot (one `exact_bins` launch,
    /// rounded by its last block: [`dot`]'s bits; nothing comes back).
    pub(crate) fn dot(
        &mut self,
        ctx: &CudaContext,
        which: CgDot,
        x: &DeviceBuffer<f64>,
        y: &DeviceBuffer<f64>,
        len: usize,
    ) -> Result<(), LinalgError> {
        let slot = match which {
            CgDot::Rz(k) if k <= self.steps => 2 * self.steps + k,
            CgDot::Pq(k) if k < self.steps => 3 * self.steps + 1 + k,
            CgDot::Rz(k) | CgDot::Pq(k) => {
                return Err(LinalgError::IndexOutOfRange {
                    what: "CG coefficients: step",
                    index: k,
                    len: self.steps,
                })
            }
        };
        let n = exact_terms(x, y, len)?;
        let f = ctx.function(&VECTOR, DEFINES, "exact_bins")?;
        let mut out = self.slots.slice_mut().slice_mut(slot..slot + 1);
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&n)
            .arg(x)
            .arg(y)
            .arg(&TERM_PRODUCT)
            .arg(&mut self.words)
            .arg(&mut self.done)
            .arg(&mut out);
        // SAFETY: arguments match `exact_bins` (`n` entries of `x` and `y`, checked above);
        // the accumulator and its counter are zero (made so, and zeroed again by the last
        // block of every earlier launch on this stream), which rounds into `out[0]`.
        unsafe { l.launch(exact_grid(n)) }.map_err(driver_err("exact_bins"))?;
        Ok(())
    }

    /// Step `k`'s alpha and `r -= alpha q` where the step goes on (`cg_alpha_axpy`).
    pub(crate) fn alpha_axpy(
        &mut self,
        ctx: &CudaContext,
        k: usize,
        q: &DeviceBuffer<f64>,
        r: &mut DeviceBuffer<f64>,
    ) -> Result<(), LinalgError> {
        self.check_step(k)?;
        check_len("device CG alpha: q", r.len(), q.len())?;
        let f = ctx.function(&VECTOR, DEFINES, "cg_alpha_axpy")?;
        let (n, k, steps) = (r.len() as u64, k as u64, self.steps as u64);
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&n)
            .arg(&k)
            .arg(&steps)
            .arg(&mut self.slots)
            .arg(q)
            .arg(&mut *r);
        // SAFETY: arguments match `cg_alpha_axpy`; `k < steps`, the slots hold the layout of
        // `steps` steps; lengths checked.
        unsafe { l.launch(grid_stride(n)) }.map_err(driver_err("cg_alpha_axpy"))?;
        Ok(())
    }

    /// Step `k`'s beta and `p = z + beta p` where the step goes on (`cg_beta_axpby`); the
    /// recurrence stops where `r . z` falls to `ratio` times its previous value or below.
    pub(crate) fn beta_axpby(
        &mut self,
        ctx: &CudaContext,
        k: usize,
        ratio: f64,
        z: &DeviceBuffer<f64>,
        p: &mut DeviceBuffer<f64>,
    ) -> Result<(), LinalgError> {
        self.check_step(k)?;
        check_len("device CG beta: z", p.len(), z.len())?;
        let f = ctx.function(&VECTOR, DEFINES, "cg_beta_axpby")?;
        let (n, k, steps) = (p.len() as u64, k as u64, self.steps as u64);
        let mut l = ctx.stream().launch_builder(&f);
        l.arg(&n)
            .arg(&k)
            .arg(&steps)
            .arg(&ratio)
            .arg(&mut self.slots)
            .arg(z)
            .arg(&mut *p);
        // SAFETY: arguments match `cg_beta_axpby`; `k < steps`, the slots hold the layout of
        // `steps` steps; lengths checked.
        unsafe { l.launch(grid_stride(n)) }.map_err(driver_err("cg_beta_axpby"))?;
        Ok(())
    }

    /// The recorded alphas and betas, each up to its first unrecorded step (one download of
    /// `2 steps` values: the wait for every launch before).
    pub(crate) fn recorded(&self, ctx: &CudaContext) -> Result<(Vec<f64>, Vec<f64>), LinalgError> {
        let s = self.steps;
        if s == 0 {
            return Ok((Vec::new(), Vec::new()));
        }
        let v = ctx.download_prefix(&self.slots, 2 * s)?;
        let (alphas, betas) = v.split_at(s);
        let run = |c: &[f64]| c.iter().take_while(|x| !x.is_nan()).count();
        let m = run(alphas);
        let m_beta = run(betas).min(m);
        Ok((alphas[..m].to_vec(), betas[..m_beta].to_vec()))
    }

    fn check_step(&self, k: usize) -> Result<(), LinalgError> {
        if k >= self.steps {
            return Err(LinalgError::IndexOutOfRange {
                what: "CG coefficients: step",
                index: k,
                len: self.steps,
            });
        }
        Ok(())
    }
}
