//! Run-time compilation of the `.cu` kernel sources (kept as files under `linalg/cuda/`) by NVRTC,
//! specialised per block shape by injected `#define`s, cached per process and on disk across
//! processes ([`super::kernel_cache`]).
//!
//! A source is compiled straight to a cubin for the device's `sm_XY` (no PTX JIT at load). The
//! cache key is (source, defines, architecture, options): each shape compiles once per process,
//! whatever the number of contexts. A compile error returns the NVRTC log.

use std::collections::HashMap;
use std::ffi::{c_char, CStr, CString};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::nvrtc::sys;

use super::kernel_cache;
use crate::LinalgError;

/// Definitions shared by every kernel source (prepended before the defines).
const PRELUDE: &str = include_str!("../../../cuda/prelude.cuh");

/// One `.cu` file: its name (for errors and the cache key), its text, and whether floating
/// multiply-adds may be contracted into FMAs (`--fmad`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct KernelSource {
    pub name: &'static str,
    pub text: &'static str,
    pub fmad: bool,
}

impl KernelSource {
    /// Cache key of this source compiled with `defines` for `arch`.
    pub(crate) fn key(&self, defines: &[(&str, i64)], arch: &str) -> String {
        let mut k = format!("{}|{arch}|fmad={}", self.name, self.fmad);
        for (n, v) in defines {
            k.push_str(&format!("|{n}={v}"));
        }
        k
    }

    /// The on-disk cache key: the in-process `key` plus what makes a cubin from another process
    /// valid here (the text compiled, NVRTC's and the driver's versions).
    fn disk_key(&self, key: &str) -> String {
        let text = format!("{PRELUDE}\n{}", self.text);
        format!(
            "{key}|text={:016x}:{}|nvrtc={}|driver={}",
            kernel_cache::fnv1a64(text.as_bytes()),
            text.len(),
            version(),
            driver_version()
        )
    }

    /// The NVRTC options for `arch` and `defines`.
    fn options(&self, defines: &[(&str, i64)], arch: &str) -> Vec<String> {
        let mut o = vec![
            format!("--gpu-architecture={arch}"),
            "--std=c++17".to_string(),
            format!("--fmad={}", self.fmad),
        ];
        o.extend(defines.iter().map(|(n, v)| format!("-D{n}={v}")));
        o
    }
}

/// Whether NVRTC loads here, asked once per process: where it does, the library stays loaded
/// from then on (cudarc's own handle), so that neither a later check nor the first call into
/// it opens the library again (a `dlopen` of several milliseconds each time; cudarc's presence
/// check closes what it opened).
pub(crate) fn library_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    *PRESENT.get_or_init(|| {
        // SAFETY: only opens the library to see whether it exists.
        let present = unsafe { sys::is_culib_present() };
        if present {
            // SAFETY: the library is present (checked above), so cudarc's loader finds it
            // instead of panicking; the handle lives in cudarc's static for the process.
            let _kept = unsafe { sys::culib() };
        }
        present
    })
}

/// Loads NVRTC and asks its version ([`library_present`], [`version`]) ahead of the
/// first compilation: the start-up's warm-up thread takes the library's loading off the
/// path to the first kernel. Nothing happens without NVRTC.
pub(crate) fn warm_up() {
    if library_present() {
        version();
    }
}

/// NVRTC's version as `major.minor` (`?` if it cannot say), asked once per process; called
/// only once NVRTC is known to be present ([`library_present`]).
pub(crate) fn version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: two valid out-pointers; NVRTC is present (the callers check first).
        match unsafe { sys::nvrtcVersion(&mut major, &mut minor) } {
            sys::nvrtcResult::NVRTC_SUCCESS => format!("{major}.{minor}"),
            _ => "?".into(),
        }
    })
}

/// The CUDA driver's version number (`none` without a driver library: a source compiled
/// without a device, [`crate::gpu::KernelModule::compile_only`]; `?` if it cannot say).
fn driver_version() -> String {
    // SAFETY: only asks whether the library loads (cudarc panics on a call into a missing one).
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return "none".into();
    }
    let mut version = 0;
    // SAFETY: a valid out-pointer; the driver is loaded by the context that asks for a kernel.
    match unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut version) } {
        cudarc::driver::sys::CUresult::CUDA_SUCCESS => version.to_string(),
        _ => "?".into(),
    }
}

type Cache = Mutex<HashMap<String, Arc<[u8]>>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The cubin of `source` with `defines` for `arch` (`"sm_90"`), compiled at first request.
/// Errors if NVRTC is missing ([`LinalgError::CudaUnavailable`]) or rejects the source
/// ([`LinalgError::CudaCompile`] with the log).
pub(crate) fn compile(
    source: &KernelSource,
    defines: &[(&str, i64)],
    arch: &str,
) -> Result<Arc<[u8]>, LinalgError> {
    let key = source.key(defines, arch);
    if let Some(c) = cache().lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok(c.clone());
    }
    if !library_present() {
        return Err(LinalgError::CudaUnavailable {
            reason: "the NVRTC library (libnvrtc.so) was not found".into(),
        });
    }
    let options = source.options(defines, arch);
    let disk = kernel_cache::process_cache();
    let disk_key = disk.map(|_| source.disk_key(&key));
    let cached = disk.zip(disk_key.as_deref()).and_then(|(d, k)| d.load(k));
    let cubin: Arc<[u8]> = match cached {
        Some(cubin) => cubin.into(),
        None => {
            let cubin = compile_uncached(source, &options)?;
            if let (Some(d), Some(k)) = (disk, disk_key.as_deref()) {
                d.store(k, &cubin);
            }
            cubin.into()
        }
    };
    cache()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key, cubin.clone());
    Ok(cubin)
}

/// Compiles `source` to a cubin and also returns NVRTC's log (resource usage with `-Xptxas -v`);
/// for reports and tests, uncached.
#[cfg_attr(not(feature = "kernel-bench"), allow(dead_code))] // examples/cuda_bench.rs
pub fn compile_with_log(
    source_name: &str,
    defines: &[(&str, i64)],
    arch: &str,
    extra: &[&str],
) -> Result<(usize, String), LinalgError> {
    let source = super::kernels::source(source_name).ok_or_else(|| LinalgError::CudaCompile {
        kernel: source_name.to_string(),
        options: String::new(),
        log: format!(
            "no such kernel source; the sources are {:?}",
            super::kernels::SOURCE_NAMES
        ),
    })?;
    if !library_present() {
        return Err(LinalgError::CudaUnavailable {
            reason: "the NVRTC library (libnvrtc.so) was not found".into(),
        });
    }
    let mut options = source.options(defines, arch);
    options.extend(extra.iter().map(|s| s.to_string()));
    let program = Program::new(&source)?;
    program.compile(&source, &options)?;
    Ok((program.cubin()?.len(), program.log()))
}

fn compile_uncached(source: &KernelSource, options: &[String]) -> Result<Vec<u8>, LinalgError> {
    let program = Program::new(source)?;
    program.compile(source, options)?;
    program.cubin()
}

/// An NVRTC program, destroyed on drop.
struct Program(sys::nvrtcProgram);

fn nvrtc_err(op: &str, r: sys::nvrtcResult) -> LinalgError {
    LinalgError::Cuda {
        op: op.to_string(),
        message: format!("{r:?}"),
    }
}

impl Program {
    fn new(source: &KernelSource) -> Result<Self, LinalgError> {
        let text = format!("{PRELUDE}\n#line 1 \"{}\"\n{}", source.name, source.text);
        let text = CString::new(text).map_err(|_| LinalgError::CudaCompile {
            kernel: source.name.to_string(),
            options: String::new(),
            log: "source holds a NUL byte".into(),
        })?;
        let name = CString::new(source.name).unwrap_or_default();
        let mut prog: sys::nvrtcProgram = std::ptr::null_mut();
        // SAFETY: valid C strings that outlive the call; no headers.
        let r = unsafe {
            sys::nvrtcCreateProgram(
                &mut prog,
                text.as_ptr(),
                name.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        if r != sys::nvrtcResult::NVRTC_SUCCESS {
            return Err(nvrtc_err("nvrtcCreateProgram", r));
        }
        Ok(Self(prog))
    }

    fn compile(&self, source: &KernelSource, options: &[String]) -> Result<(), LinalgError> {
        let c_opts: Vec<CString> = options
            .iter()
            .map(|o| CString::new(o.as_str()).unwrap_or_default())
            .collect();
        let ptrs: Vec<*const c_char> = c_opts.iter().map(|o| o.as_ptr()).collect();
        // SAFETY: `ptrs` points into `c_opts`, alive for the call.
        let r = unsafe { sys::nvrtcCompileProgram(self.0, ptrs.len() as i32, ptrs.as_ptr()) };
        if r != sys::nvrtcResult::NVRTC_SUCCESS {
            return Err(LinalgError::CudaCompile {
                kernel: source.name.to_string(),
                options: options.join(" "),
                log: self.log(),
            });
        }
        Ok(())
    }

    fn log(&self) -> String {
        let mut size = 0usize;
        // SAFETY: valid program; the buffer has the size NVRTC reports.
        unsafe {
            if sys::nvrtcGetProgramLogSize(self.0, &mut size) != sys::nvrtcResult::NVRTC_SUCCESS {
                return "(no log)".into();
            }
            let mut buf = vec![0 as c_char; size.max(1)];
            if sys::nvrtcGetProgramLog(self.0, buf.as_mut_ptr()) != sys::nvrtcResult::NVRTC_SUCCESS
            {
                return "(no log)".into();
            }
            CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned()
        }
    }

    fn cubin(&self) -> Result<Vec<u8>, LinalgError> {
        let mut size = 0usize;
        // SAFETY: valid compiled program; the buffer has the size NVRTC reports.
        unsafe {
            let r = sys::nvrtcGetCUBINSize(self.0, &mut size);
            if r != sys::nvrtcResult::NVRTC_SUCCESS {
                return Err(nvrtc_err("nvrtcGetCUBINSize", r));
            }
            let mut buf = vec![0u8; size];
            let r = sys::nvrtcGetCUBIN(self.0, buf.as_mut_ptr().cast());
            if r != sys::nvrtcResult::NVRTC_SUCCESS {
                return Err(nvrtc_err("nvrtcGetCUBIN", r));
            }
            Ok(buf)
        }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the program was created by nvrtcCreateProgram and is destroyed once.
        unsafe {
            sys::nvrtcDestroyProgram(&mut self.0);
        }
    }
}
