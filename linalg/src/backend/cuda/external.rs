//! Kernels of other crates: a caller-supplied `.cu` source compiled by the same NVRTC path and
//! cache as linalg's own kernels, and launched on the context's stream with typed arguments
//! (device buffers and scalars). This keeps every use of cudarc inside `linalg::backend::cuda`
//! while letting, say, the element kernels of `assembly` live next to the crate that owns them.
//! Other crates reach it through [`crate::gpu`].
//!
//! Calling order: build a [`KernelModule`] once (usually a `const` over `include_str!`), then
//! [`KernelModule::launch`] its functions as often as needed; the first launch per (source,
//! defines, architecture) compiles, later ones reuse the loaded module. The shared prelude of
//! linalg's kernels (`u32`, `u64`, `find_sorted`, ...) is prepended to the source, as for every
//! kernel here.

use cudarc::driver::{LaunchConfig, PushKernelArg};

use super::context::driver_err;
use super::nvrtc::KernelSource;
use super::{CudaContext, DeviceBuffer};
use crate::LinalgError;

/// A `.cu` source owned by another crate. `name` names it in errors and is its cache key, so it
/// must be unique in the process and must not be one of linalg's [`super::kernels::SOURCE_NAMES`]
/// (a crate prefix such as `"assembly/element.cu"` does that). `fmad` allows contracting
/// multiply-adds into FMAs (`false` rounds like the host's separate operations).
#[derive(Clone, Copy, Debug)]
pub struct KernelModule {
    pub name: &'static str,
    pub text: &'static str,
    pub fmad: bool,
}

/// One argument of an external kernel, in the order of the kernel's parameter list.
#[derive(Debug)]
pub enum KernelArg<'a> {
    /// `const double*`.
    F64s(&'a DeviceBuffer<f64>),
    /// `double*` the kernel writes.
    F64sMut(&'a mut DeviceBuffer<f64>),
    /// `const u32*`.
    U32s(&'a DeviceBuffer<u32>),
    /// `u32*` the kernel writes.
    U32sMut(&'a mut DeviceBuffer<u32>),
    /// `u32` by value.
    U32(u32),
    /// `u64` by value.
    U64(u64),
    /// `double` by value.
    F64(f64),
}

/// Grid and block sizes (one-dimensional) and the dynamic shared memory of a launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchShape {
    pub blocks: u32,
    pub threads: u32,
    pub shared_bytes: u32,
}

impl LaunchShape {
    /// One thread per item of `n`, in blocks of `threads`, no shared memory.
    pub fn one_thread_each(n: usize, threads: u32) -> Self {
        LaunchShape {
            blocks: n.div_ceil(threads as usize) as u32,
            threads,
            shared_bytes: 0,
        }
    }
}

impl KernelModule {
    /// Compiles the module with `defines` at first use (an NVRTC failure returns its log as
    /// [`LinalgError::CudaCompile`]) and queues `function` on the context's stream with `args`.
    /// Asynchronous: a failing kernel surfaces at the next synchronising call. Costs what a
    /// launch of linalg's own kernels costs: a cached function lookup, no copy, no wait.
    ///
    /// # Safety contract
    /// The caller's kernel must read and write only within the buffers it is given; `args` must
    /// match the kernel's parameter list in number, order and type (this cannot be checked
    /// here). A mismatch is undefined behaviour on the device, which is why the kernels that use
    /// this entry point each get a parity test against the host.
    pub fn launch(
        &self,
        ctx: &CudaContext,
        defines: &[(&'static str, i64)],
        function: &'static str,
        shape: LaunchShape,
        args: &mut [KernelArg<'_>],
    ) -> Result<(), LinalgError> {
        let f = ctx.function(&self.source(), defines, function)?;
        let mut l = ctx.stream().launch_builder(&f);
        for a in args.iter_mut() {
            match a {
                KernelArg::F64s(b) => l.arg(*b),
                KernelArg::F64sMut(b) => l.arg(&mut **b),
                KernelArg::U32s(b) => l.arg(*b),
                KernelArg::U32sMut(b) => l.arg(&mut **b),
                KernelArg::U32(v) => l.arg(&*v),
                KernelArg::U64(v) => l.arg(&*v),
                KernelArg::F64(v) => l.arg(&*v),
            };
        }
        let cfg = LaunchConfig {
            grid_dim: (shape.blocks.max(1), 1, 1),
            block_dim: (shape.threads, 1, 1),
            shared_mem_bytes: shape.shared_bytes,
        };
        // SAFETY: the argument list is the caller's contract (see above); the launch itself is
        // valid for any grid of at least one block.
        unsafe { l.launch(cfg) }.map_err(driver_err(function))?;
        Ok(())
    }

    /// Compiles the module with `defines` for `arch` (`"sm_90"`) without a device (NVRTC only;
    /// cached like every compile) and returns the cubin's size: lets tests check a source on
    /// machines without a GPU. A rejected source gives [`LinalgError::CudaCompile`] with NVRTC's
    /// log.
    pub fn compile_only(
        &self,
        defines: &[(&'static str, i64)],
        arch: &str,
    ) -> Result<usize, LinalgError> {
        Ok(super::nvrtc::compile(&self.source(), defines, arch)?.len())
    }

    fn source(&self) -> KernelSource {
        KernelSource {
            name: self.name,
            text: self.text,
            fmad: self.fmad,
        }
    }
}
