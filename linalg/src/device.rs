//! Where values live: the [`Device`] of a vector or matrix, and the storage enum behind it.
//!
//! Every [`crate::Vector`], [`crate::Bsr`] and [`crate::BlockDiagonal`] keeps its values in a
//! [`Storage`] and reports its [`Device`]; numeric operations match on the storage of their
//! operands (candle's pattern) and run the kernel of that backend ([`crate::backend`]). Operands
//! of one call must live on one device ([`crate::LinalgError::DeviceMismatch`]); nothing moves
//! between devices except through the explicit calls named `host`, `host_mut`, `to_host_vec` and
//! the host constructors. Symbolic data (patterns, plans) is host-side and immutable.

use std::fmt;

use crate::LinalgError;

/// The memory a vector's or matrix's values live in. Only `Host` exists today; the CUDA variant
/// (a context on one GPU) arrives with the GPU backend.
#[derive(Clone, Debug, Default)]
pub enum Device {
    /// Main memory; kernels run on the CPU (rayon).
    #[default]
    Host,
}

impl Device {
    /// True for [`Device::Host`].
    pub fn is_host(&self) -> bool {
        matches!(self, Device::Host)
    }

    /// A short name for messages (`host`).
    pub fn name(&self) -> String {
        match self {
            Device::Host => "host".to_owned(),
        }
    }

    /// True if both name the same memory (the same GPU for device variants).
    pub fn same_as(&self, other: &Device) -> bool {
        match (self, other) {
            (Device::Host, Device::Host) => true,
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// Errors unless `found` is the same device as `expected`.
pub(crate) fn check_same_device(
    what: &'static str,
    expected: &Device,
    found: &Device,
) -> Result<(), LinalgError> {
    if expected.same_as(found) {
        Ok(())
    } else {
        Err(LinalgError::DeviceMismatch {
            what,
            expected: expected.name(),
            found: found.name(),
        })
    }
}

/// The values of a vector, matrix or block diagonal, on their device.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Storage {
    Host(Vec<f64>),
}

impl Storage {
    /// The device the values live on.
    pub(crate) fn device(&self) -> Device {
        match self {
            Storage::Host(_) => Device::Host,
        }
    }

    /// Number of values.
    pub(crate) fn len(&self) -> usize {
        match self {
            Storage::Host(v) => v.len(),
        }
    }

    /// The values in host memory; `NotOnHost` for values elsewhere.
    pub(crate) fn host(&self) -> Result<&[f64], LinalgError> {
        match self {
            Storage::Host(v) => Ok(v),
        }
    }

    /// The values in host memory, mutably; `NotOnHost` for values elsewhere.
    pub(crate) fn host_mut(&mut self) -> Result<&mut [f64], LinalgError> {
        match self {
            Storage::Host(v) => Ok(v),
        }
    }

    /// A host copy of the values (a download for device storage).
    pub(crate) fn to_host_vec(&self) -> Result<Vec<f64>, LinalgError> {
        match self {
            Storage::Host(v) => Ok(v.clone()),
        }
    }
}
