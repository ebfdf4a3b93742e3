//! [`CgCoefficients`]: the scalars of a preconditioned conjugate-gradient recurrence (the
//! Lanczos coefficients of its Krylov space), kept where the vectors live.
//!
//! A recurrence of at most `steps` steps, driven by its caller (who applies the operator and the
//! preconditioner between the updates):
//!
//! ```text
//! z = M^{-1} r;  start(r, z);  p = z
//! for each step while !stopped():
//!     q = A p;   alpha_update(p, q, r)   // p.q, alpha = r.z / p.q, r -= alpha q
//!     if stopped(): break
//!     z = M^{-1} r;  beta_update(r, z, p)   // r.z', beta = r.z' / r.z, p = z + beta p
//! coefficients()   // the alphas and betas recorded
//! ```
//!
//! A step stops the recurrence (records nothing more) where `r . z <= 0` before it, where
//! `p . q` is not positive and finite, or where `beta` is not positive and finite or `r . z`
//! fell to `stop_ratio` times its previous value or below.
//!
//! **Where the scalars live.** On the host ([`CgCoefficients::on_host`]), every dot is
//! [`crate::ops::dot`] (a wait for the device, a reduction over the ranks) and the conditions
//! are decided at once. On one GPU rank ([`CgCoefficients::with_vectors`] of a device vector)
//! they stay on the device: each dot rounds its exact sum into a slot of a small device array,
//! one-thread decisions inside the update kernels read the slots and record each step's
//! coefficient (NaN where the step stops the recurrence), and the updates after a stop do
//! nothing; no launch waits, and [`CgCoefficients::coefficients`] downloads the record once.
//! **Invariant:** both give the same coefficients, bit for bit, on the same vectors: the
//! device's dots are [`crate::ops::dot`]'s bits (the same exact sum, rounded once), the
//! divisions are IEEE divisions on both, the updates round as [`crate::ops::axpy`] and
//! [`crate::ops::axpby`] do, and the kernels (`linalg/cuda/vector.cu`, `cg_alpha_axpy`,
//! `cg_beta_axpby`) evaluate the host branch's conditions, in the same order, on the same bits.
//! On the device, [`CgCoefficients::stopped`] is always false: the caller's operator and
//! preconditioner still run after a stop (on vectors no recorded coefficient depends on any
//! more).

// `!(x > 0.0)` is true for NaN too, as the conditions mean
#![allow(clippy::neg_cmp_op_on_partial_ord)]

use std::sync::Arc;

use crate::backend::cuda::{self, vector::CgDot, vector::CgSlots, CudaContext};
use crate::device::{check_same_device, unsupported, Placed};
use crate::vector::ops::{self, check_pair};
use crate::{Device, LinalgError, Vector};

/// The scalars of a preconditioned CG recurrence of at most `steps` steps (see the module).
#[derive(Debug)]
pub struct CgCoefficients {
    steps: usize,
    stop_ratio: f64,
    /// Steps begun (`alpha_update` calls so far).
    taken: usize,
    store: Store,
}

#[derive(Debug)]
enum Store {
    Host {
        /// `r . z` of the current step.
        rz: f64,
        alphas: Vec<f64>,
        betas: Vec<f64>,
        stopped: bool,
    },
    Cuda {
        ctx: Arc<CudaContext>,
        slots: CgSlots,
    },
}

impl CgCoefficients {
    /// Scalars on the host, for vectors anywhere and any rank count.
    pub fn on_host(steps: usize, stop_ratio: f64) -> Self {
        Self {
            steps,
            stop_ratio,
            taken: 0,
            store: Store::Host {
                rz: 0.0,
                alphas: Vec::with_capacity(steps),
                betas: Vec::with_capacity(steps),
                stopped: false,
            },
        }
    }

    /// Scalars where `x` (any vector of the recurrence) lives when that is one GPU rank (no
    /// wait until [`Self::coefficients`]); on the host otherwise (host vectors, or ranks, whose
    /// dots reduce over the ranks on the host).
    pub fn with_vectors(x: &Vector, steps: usize, stop_ratio: f64) -> Result<Self, LinalgError> {
        match x.storage() {
            Placed::Cuda(ctx, _) if x.layout().comm().size() == 1 => Ok(Self {
                steps,
                stop_ratio,
                taken: 0,
                store: Store::Cuda {
                    ctx: ctx.clone(),
                    slots: CgSlots::new(ctx, steps)?,
                },
            }),
            _ => Ok(Self::on_host(steps, stop_ratio)),
        }
    }

    /// Where the scalars live.
    pub fn device(&self) -> Device {
        match &self.store {
            Store::Host { .. } => Device::Host,
            Store::Cuda { ctx, .. } => Device::Cuda(ctx.clone()),
        }
    }

    /// The steps the recurrence may take.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// True where the recurrence is known to have stopped: on the host, as soon as a condition
    /// fails; on the device never (the record says it, [`Self::coefficients`]).
    pub fn stopped(&self) -> bool {
        match &self.store {
            Store::Host { stopped, .. } => *stopped,
            Store::Cuda { .. } => false,
        }
    }

    /// The recurrence's start: `r . z` (`z = M^{-1} r`).
    pub fn start(&mut self, r: &Vector, z: &Vector) -> Result<(), LinalgError> {
        check_pair("CgCoefficients::start", r, z)?;
        match &mut self.store {
            Store::Host { rz, stopped, .. } => {
                *rz = ops::dot(r, z)?;
                *stopped = !(*rz > 0.0);
            }
            Store::Cuda { ctx, slots } => slots.dot(
                ctx,
                CgDot::Rz(0),
                buffer(ctx, r)?,
                buffer(ctx, z)?,
                owned(r),
            )?,
        }
        Ok(())
    }

    /// A step's first half: `p . q` (`q = A p`), `alpha = r.z / p.q` recorded and
    /// `r -= alpha q`, unless the step stops the recurrence. An error past `steps` steps.
    pub fn alpha_update(
        &mut self,
        p: &Vector,
        q: &Vector,
        r: &mut Vector,
    ) -> Result<(), LinalgError> {
        check_pair("CgCoefficients::alpha_update: q", p, q)?;
        check_pair("CgCoefficients::alpha_update: r", p, r)?;
        let k = self.taken;
        if k >= self.steps {
            return Err(LinalgError::IndexOutOfRange {
                what: "CgCoefficients::alpha_update: step",
                index: k,
                len: self.steps,
            });
        }
        self.taken += 1;
        match &mut self.store {
            Store::Host {
                rz,
                alphas,
                stopped,
                ..
            } => {
                if *stopped {
                    return Ok(());
                }
                let pq = ops::dot(p, q)?;
                if !(pq > 0.0) || !pq.is_finite() {
                    *stopped = true;
                    return Ok(());
                }
                let alpha = *rz / pq;
                alphas.push(alpha);
                ops::axpy(-alpha, q, r)?;
            }
            Store::Cuda { ctx, slots } => {
                slots.dot(
                    ctx,
                    CgDot::Pq(k),
                    buffer(ctx, p)?,
                    buffer(ctx, q)?,
                    owned(p),
                )?;
                slots.alpha_axpy(ctx, k, buffer(ctx, q)?, buffer_mut(ctx, r)?)?;
            }
        }
        Ok(())
    }

    /// The step's second half: `r . z` (`z = M^{-1} r`), `beta = r.z (new) / r.z (old)`
    /// recorded and `p = z + beta p`, unless the step stops the recurrence. Follows
    /// [`Self::alpha_update`] of the same step.
    pub fn beta_update(
        &mut self,
        r: &Vector,
        z: &Vector,
        p: &mut Vector,
    ) -> Result<(), LinalgError> {
        check_pair("CgCoefficients::beta_update: z", r, z)?;
        check_pair("CgCoefficients::beta_update: p", r, p)?;
        let Some(k) = self.taken.checked_sub(1) else {
            return Err(LinalgError::IndexOutOfRange {
                what: "CgCoefficients::beta_update before alpha_update: step",
                index: 0,
                len: 0,
            });
        };
        match &mut self.store {
            Store::Host {
                rz, betas, stopped, ..
            } => {
                if *stopped {
                    return Ok(());
                }
                let rz_new = ops::dot(r, z)?;
                let beta = rz_new / *rz;
                if !(beta > 0.0) || !beta.is_finite() || rz_new <= self.stop_ratio * *rz {
                    *stopped = true;
                    return Ok(());
                }
                betas.push(beta);
                *rz = rz_new;
                // the next step's condition on r . z (implied by beta > 0 here)
                *stopped = !(rz_new > 0.0);
                ops::axpby(1.0, z, beta, p)?;
            }
            Store::Cuda { ctx, slots } => {
                slots.dot(
                    ctx,
                    CgDot::Rz(k + 1),
                    buffer(ctx, r)?,
                    buffer(ctx, z)?,
                    owned(r),
                )?;
                slots.beta_axpby(
                    ctx,
                    k,
                    self.stop_ratio,
                    buffer(ctx, z)?,
                    buffer_mut(ctx, p)?,
                )?;
            }
        }
        Ok(())
    }

    /// The alphas and betas recorded (`m` alphas, and `m - 1` or `m` betas): on the device one
    /// download, the recurrence's only wait.
    pub fn coefficients(&self) -> Result<(Vec<f64>, Vec<f64>), LinalgError> {
        match &self.store {
            Store::Host { alphas, betas, .. } => Ok((alphas.clone(), betas.clone())),
            Store::Cuda { ctx, slots } => slots.recorded(ctx),
        }
    }
}

/// The owned entries of `x` (what a dot reduces).
fn owned(x: &Vector) -> usize {
    x.layout().owned()
}

/// Errors unless `x` is a vector of one rank on `ctx`.
fn check_one_rank_on(ctx: &Arc<CudaContext>, x: &Vector) -> Result<(), LinalgError> {
    check_same_device("CgCoefficients", &Device::Cuda(ctx.clone()), &x.device())?;
    if x.layout().comm().size() != 1 {
        return Err(LinalgError::LayoutMismatch {
            what: "CgCoefficients on a device: vectors of one rank",
        });
    }
    Ok(())
}

/// `x`'s device buffer, on `ctx`.
fn buffer<'a>(
    ctx: &Arc<CudaContext>,
    x: &'a Vector,
) -> Result<&'a cuda::DeviceBuffer<f64>, LinalgError> {
    check_one_rank_on(ctx, x)?;
    match x.storage() {
        Placed::Cuda(_, data) => Ok(data),
        Placed::Host(_) => Err(unsupported("CgCoefficients", &x.device())),
    }
}

/// `x`'s device buffer, mutably, on `ctx`.
fn buffer_mut<'a>(
    ctx: &Arc<CudaContext>,
    x: &'a mut Vector,
) -> Result<&'a mut cuda::DeviceBuffer<f64>, LinalgError> {
    check_one_rank_on(ctx, x)?;
    let device = x.device();
    match x.storage_mut() {
        Placed::Cuda(_, data) => Ok(data),
        Placed::Host(_) => Err(unsupported("CgCoefficients", &device)),
    }
}
