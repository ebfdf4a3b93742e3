//! Exact, order-independent summation of `f64` terms: a small superaccumulator.
//!
//! [`ExactSum`] holds the exact sum of the terms added so far as a fixed-point integer spread
//! over 32-bit bins (one bin per 32 binary exponents, `i64` bins with room for carries), so
//! adding is integer arithmetic without rounding and the sum does not depend on the order of the
//! terms, on how they were split into partial sums, or on how many ranks or threads held them.
//! [`ExactSum::value`] rounds once, to the nearest `f64` (ties to even; a subnormal result can
//! be rounded twice). This is what makes dot products, norms and energy sums the same bits on
//! one rank and on any number of ranks ([`crate::ops::dot`], [`ExactSum::allreduce`]).
//!
//! Non-finite terms are summed apart in plain floating point and returned as they are (an
//! infinity or a NaN reads as the naive sum would).
//!
//! Cost: one add is a bit split, a shift and three integer adds (about 5x a fused multiply-add
//! on the host); a sum travels between ranks as [`WORDS`] `u64` words.

use comm::{Comm, CommError};

/// Bits of one bin.
const BIN_BITS: u32 = 32;
/// Bins: positions `0..2099` of the finite doubles' bits (`2^-1074 .. 2^1024`), three bins of
/// head room for carries and the sign.
const N_BINS: usize = 68;
/// Adds between two carry propagations (each add moves a bin by less than `2^33`; `i64` bins
/// then stay below `2^63`). Tests propagate often, so that their sums go through it.
#[cfg(not(test))]
const CARRY_EVERY: u32 = 1 << 29;
#[cfg(test)]
const CARRY_EVERY: u32 = 1 << 7;
/// Words of [`ExactSum::to_words`]: the bins and the non-finite part.
pub const WORDS: usize = N_BINS + 1;

/// The exact sum of `f64` terms (see the module documentation).
#[derive(Clone, Debug)]
pub struct ExactSum {
    bins: [i64; N_BINS],
    pending: u32,
    /// Plain sum of the non-finite terms (`0` while there are none).
    special: f64,
}

impl Default for ExactSum {
    fn default() -> Self {
        Self::new()
    }
}

impl ExactSum {
    /// Zero.
    pub fn new() -> Self {
        Self {
            bins: [0; N_BINS],
            pending: 0,
            special: 0.0,
        }
    }

    /// The exact sum of `terms`.
    pub fn of(terms: impl IntoIterator<Item = f64>) -> Self {
        let mut s = Self::new();
        for t in terms {
            s.add(t);
        }
        s
    }

    /// Adds `x` exactly.
    #[inline]
    pub fn add(&mut self, x: f64) {
        let bits = x.to_bits();
        let exponent = ((bits >> 52) & 0x7ff) as u32;
        if exponent == 0x7ff {
            self.special += x;
            return;
        }
        // x = m 2^(position - 1074); subnormals (exponent 0) have no hidden bit
        let normal = u64::from(exponent != 0);
        let m = (bits & ((1u64 << 52) - 1)) | (normal << 52);
        let position = exponent - normal as u32;
        let shift = position % BIN_BITS;
        // the low 32 and high 21 bits of m, shifted: at most 63 and 52 bits
        let low = (m & 0xffff_ffff) << shift;
        let high = (m >> 32) << shift;
        let words = [
            (low & 0xffff_ffff) as i64,
            ((low >> 32) + (high & 0xffff_ffff)) as i64,
            (high >> 32) as i64,
        ];
        // two's complement negation of the words for a negative x, without a branch
        let sign = (bits as i64) >> 63;
        let bin = (position / BIN_BITS) as usize;
        let b = &mut self.bins[bin..bin + 3];
        for (b, w) in b.iter_mut().zip(words) {
            *b += (w ^ sign) - sign;
        }
        self.pending += 1;
        if self.pending >= CARRY_EVERY {
            self.normalize();
        }
    }

    /// Adds another exact sum (exactly).
    pub fn merge(&mut self, other: &ExactSum) {
        self.normalize();
        let mut o = other.clone();
        o.normalize();
        for (b, w) in self.bins.iter_mut().zip(o.bins) {
            *b += w;
        }
        self.special += other.special;
        self.normalize();
    }

    /// Propagates carries: every bin but the top one in `[0, 2^32)`, the top one signed (the
    /// canonical form: one representation per value).
    fn normalize(&mut self) {
        for i in 0..N_BINS - 1 {
            let carry = self.bins[i] >> BIN_BITS;
            self.bins[i] -= carry << BIN_BITS;
            self.bins[i + 1] += carry;
        }
        self.pending = 0;
    }

    /// The sum rounded once to the nearest `f64` (`+0.0` for an exact zero); the non-finite
    /// terms' sum if there were any.
    pub fn value(&self) -> f64 {
        if self.special != 0.0 || self.special.is_nan() {
            return self.special;
        }
        let mut s = self.clone();
        s.normalize();
        let negative = s.bins[N_BINS - 1] < 0;
        if negative {
            for b in &mut s.bins {
                *b = -*b;
            }
            s.normalize();
        }
        let Some(top) = s.bins.iter().rposition(|&b| b != 0) else {
            return 0.0;
        };
        // The top three bins (at least 65 significant bits) and a sticky bit for the rest:
        // converting them rounds as the whole would.
        let mut head: u128 = 0;
        for t in 0..3 {
            head <<= BIN_BITS;
            if top >= t {
                head |= s.bins[top - t] as u128;
            }
        }
        if top >= 3 && s.bins[..top - 2].iter().any(|&b| b != 0) {
            head |= 1;
        }
        let exponent = BIN_BITS as i32 * (top as i32 - 2) - 1074;
        let magnitude = scale_by_power_of_two(head as f64, exponent);
        if negative {
            -magnitude
        } else {
            magnitude
        }
    }

    /// The canonical words of the sum (for messages): [`WORDS`] of them.
    pub fn to_words(&self) -> Vec<u64> {
        let mut s = self.clone();
        s.normalize();
        let mut words: Vec<u64> = s.bins.iter().map(|&b| b as u64).collect();
        words.push(self.special.to_bits());
        words
    }

    /// The sum of [`ExactSum::to_words`]'s `words`; `None` unless there are [`WORDS`] of them.
    pub fn from_words(words: &[u64]) -> Option<Self> {
        if words.len() != WORDS {
            return None;
        }
        let mut s = Self::new();
        for (b, &w) in s.bins.iter_mut().zip(words) {
            *b = w as i64;
        }
        s.special = f64::from_bits(words[N_BINS]);
        Some(s)
    }

    /// The sum held by the device accumulator of `linalg/cuda/vector.cu` (`exact_bins`): its
    /// bins (unnormalised two's complement words), then the flags of the non-finite terms met
    /// (`1`: +inf, `2`: -inf, `4`: NaN), read as the plain sum of those terms would be. `None`
    /// unless there are [`WORDS`] words.
    pub fn from_device_words(words: &[u64]) -> Option<Self> {
        if words.len() != WORDS {
            return None;
        }
        let mut s = Self::new();
        for (b, &w) in s.bins.iter_mut().zip(words) {
            *b = w as i64;
        }
        let flags = words[N_BINS];
        s.special = if flags & 4 != 0 || flags & 3 == 3 {
            f64::NAN
        } else if flags & 1 != 0 {
            f64::INFINITY
        } else if flags & 2 != 0 {
            f64::NEG_INFINITY
        } else {
            0.0
        };
        Some(s)
    }

    /// Collective: every rank's `sums` added exactly, in place on every rank (the same bits as
    /// the sums of all terms on one rank). One all-gather of [`WORDS`] words per sum.
    pub fn allreduce(comm: &dyn Comm, sums: &mut [ExactSum]) -> Result<(), CommError> {
        if comm.size() == 1 {
            return Ok(());
        }
        let mine: Vec<u64> = sums.iter().flat_map(ExactSum::to_words).collect();
        let all = comm.allgatherv_u64(&mine)?;
        for (i, s) in sums.iter_mut().enumerate() {
            let mut total = ExactSum::new();
            for (rank, words) in all.iter().enumerate() {
                let part = words
                    .get(i * WORDS..(i + 1) * WORDS)
                    .and_then(ExactSum::from_words)
                    .ok_or_else(|| CommError::Mismatch {
                        operation: "ExactSum::allreduce",
                        message: format!(
                            "rank {rank} sent {} words for {} sums",
                            words.len(),
                            sums_len(&mine)
                        ),
                    })?;
                total.merge(&part);
            }
            *s = total;
        }
        Ok(())
    }
}

fn sums_len(words: &[u64]) -> usize {
    words.len() / WORDS
}

/// `x 2^k`, exact unless the result is subnormal or overflows.
fn scale_by_power_of_two(mut x: f64, mut k: i32) -> f64 {
    let power = |k: i32| f64::from_bits(((k + 1023) as u64) << 52);
    while k > 1000 {
        x *= power(1000);
        k -= 1000;
    }
    while k < -1000 {
        x *= power(-1000);
        k += 1000;
    }
    x * power(k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::SplitMix64;

    /// Terms of widely spread magnitudes and both signs, with heavy cancellation.
    fn terms(n: usize, seed: u64) -> Vec<f64> {
        let mut g = SplitMix64(seed);
        (0..n)
            .map(|i| {
                let scale = 2f64.powi((g.next_u64() % 120) as i32 - 60);
                let t = g.next_signed_unit() * scale;
                if i % 7 == 0 {
                    -t * 1e10
                } else {
                    t
                }
            })
            .collect()
    }

    #[test]
    fn the_sum_is_the_same_bits_for_every_order_and_split() {
        let t = terms(5000, 7);
        let reference = ExactSum::of(t.iter().copied()).value();
        let mut g = SplitMix64(11);
        for _ in 0..20 {
            // a random permutation, cut into random partial sums merged in random order
            let mut p = t.clone();
            for i in (1..p.len()).rev() {
                p.swap(i, (g.next_u64() % (i as u64 + 1)) as usize);
            }
            let mut parts: Vec<ExactSum> = Vec::new();
            let mut at = 0;
            while at < p.len() {
                let len = 1 + (g.next_u64() % 700) as usize;
                let end = (at + len).min(p.len());
                parts.push(ExactSum::of(p[at..end].iter().copied()));
                at = end;
            }
            parts.reverse();
            let mut total = ExactSum::new();
            for s in &parts {
                let words = s.to_words();
                total.merge(&ExactSum::from_words(&words).unwrap());
            }
            assert_eq!(total.value().to_bits(), reference.to_bits());
        }
    }

    #[test]
    fn the_sum_is_the_correctly_rounded_exact_sum() {
        // exact in f64
        assert_eq!(ExactSum::of([1.0, 2.0, -0.5]).value(), 2.5);
        // catastrophic cancellation: naive summation gives 0
        assert_eq!(ExactSum::of([1e100, 1.0, -1e100]).value(), 1.0);
        assert_eq!(ExactSum::of([1.0, 1e-30, -1.0]).value(), 1e-30);
        // 1 + 2^-53 + 2^-106: above the tie, so rounds up (naive: 1)
        let x = ExactSum::of([1.0, 2f64.powi(-53), 2f64.powi(-106)]).value();
        assert_eq!(x, 1.0 + f64::EPSILON);
        // an exact tie rounds to even
        assert_eq!(ExactSum::of([1.0, 2f64.powi(-53)]).value(), 1.0);
        assert_eq!(
            ExactSum::of([1.0 + f64::EPSILON, 2f64.powi(-53)]).value(),
            1.0 + 2.0 * f64::EPSILON
        );
        // negative values, the extremes of the range
        assert_eq!(ExactSum::of([-3.0, 0.25]).value(), -2.75);
        assert_eq!(
            ExactSum::of([f64::MAX, -f64::MAX / 2.0]).value(),
            f64::MAX / 2.0
        );
        let tiny = f64::from_bits(1);
        assert_eq!(ExactSum::of([tiny, tiny, tiny]).value(), 3.0 * tiny);
        assert_eq!(ExactSum::of([f64::MAX, f64::MAX]).value(), f64::INFINITY);
        assert_eq!(ExactSum::new().value().to_bits(), 0.0f64.to_bits());
        assert_eq!(
            ExactSum::of([2.0, -2.0]).value().to_bits(),
            0.0f64.to_bits()
        );
        // against a long-accumulator reference: pairs that cancel leave the odd ones out
        let t = terms(3000, 3);
        let mut with_negations = t.clone();
        with_negations.extend(t.iter().skip(1).map(|v| -v));
        assert_eq!(ExactSum::of(with_negations).value(), t[0]);
    }

    #[test]
    fn device_words_read_as_the_sum_and_flags_as_the_non_finite_terms() {
        let t = terms(1000, 11);
        let s = ExactSum::of(t.iter().copied());
        // the device's bins are unnormalised: split one carry back down
        let mut words = s.to_words();
        words[3] = words[3].wrapping_add(1 << BIN_BITS);
        words[4] = words[4].wrapping_sub(1);
        words[N_BINS] = 0;
        let d = ExactSum::from_device_words(&words).unwrap();
        assert_eq!(d.value().to_bits(), s.value().to_bits());
        for (flags, expected) in [
            (1, f64::INFINITY),
            (2, f64::NEG_INFINITY),
            (3, f64::NAN),
            (4, f64::NAN),
        ] {
            words[N_BINS] = flags;
            let v = ExactSum::from_device_words(&words).unwrap().value();
            assert!(v.to_bits() == expected.to_bits() || (v.is_nan() && expected.is_nan()));
        }
        assert!(ExactSum::from_device_words(&words[1..]).is_none());
    }

    #[test]
    fn non_finite_terms_read_as_the_naive_sum() {
        assert_eq!(ExactSum::of([1.0, f64::INFINITY]).value(), f64::INFINITY);
        assert!(ExactSum::of([f64::INFINITY, f64::NEG_INFINITY])
            .value()
            .is_nan());
        assert!(ExactSum::of([f64::NAN, 2.0]).value().is_nan());
        assert!(ExactSum::from_words(&[0; 3]).is_none());
    }

    #[test]
    fn carries_propagate_through_many_large_terms() {
        let mut s = ExactSum::new();
        for _ in 0..3_000_000 {
            s.add(f64::MAX / 4.0);
            s.add(-f64::MAX / 4.0);
            s.add(0.5);
        }
        assert_eq!(s.value(), 1_500_000.0);
    }
}
