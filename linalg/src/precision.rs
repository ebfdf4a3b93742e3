//! [`Precision`]: the stored form of a matrix's or block diagonal's values, and the [`Value`]
//! types the kernels read.
//!
//! Vectors are always fp64. A matrix or block diagonal stored in [`Precision::Single`] keeps its
//! values as `f32` (on the host and on a GPU): its kernels load `f32`, widen to `f64` and
//! accumulate in `f64`, so only the stored values are rounded (mixed-precision AMG keeps
//! prolongators, coarse operators and smoother inverses so, halving their bytes).

/// Stored precision of matrix values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Precision {
    /// fp64 values (default).
    #[default]
    Double,
    /// fp32 values, fp64 arithmetic.
    Single,
}

impl Precision {
    /// `double` or `single`.
    pub fn name(self) -> &'static str {
        match self {
            Precision::Double => "double",
            Precision::Single => "single",
        }
    }

    /// Bytes per stored value.
    pub fn bytes(self) -> usize {
        match self {
            Precision::Double => 8,
            Precision::Single => 4,
        }
    }
}

/// A stored value type, read widened to `f64`.
pub(crate) trait Value: Copy + Send + Sync + 'static {
    fn to_f64(self) -> f64;
    /// `values` in fp64: moved for `f64`, widened for `f32`.
    fn into_f64(values: Vec<Self>) -> Vec<f64>;
}

impl Value for f64 {
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }

    fn into_f64(values: Vec<Self>) -> Vec<f64> {
        values
    }
}

impl Value for f32 {
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }

    fn into_f64(values: Vec<Self>) -> Vec<f64> {
        widen(&values)
    }
}

/// `v` rounded to `f32`.
pub(crate) fn narrow(v: &[f64]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

/// `v` widened to `f64`.
pub(crate) fn widen(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}
