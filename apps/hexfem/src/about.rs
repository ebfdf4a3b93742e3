//! `hexfem --version`: the version and commit (`-V` and `--version`), and with `--version` what
//! the binary was built with: CUDA (loaded at run time: whether a driver is found here), the MPI
//! library and HDF5.

/// `hexfem -V`: the version and the commit built (`unknown` outside a git checkout).
pub const SHORT_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("HEXFEM_GIT_COMMIT"),
    ")"
);

/// `hexfem --version`: [`SHORT_VERSION`] and one line each for CUDA, MPI and HDF5. Looks for
/// the CUDA driver, so it is computed only when asked for.
pub fn long_version() -> String {
    let cuda = match linalg::gpu::device_count() {
        Ok(n) => format!(
            "loaded at run time (driver API 13.0, NVRTC); driver found here, {n} GPU{}",
            if n == 1 { "" } else { "s" }
        ),
        Err(linalg::LinalgError::CudaUnavailable { reason }) => {
            format!("loaded at run time (driver API 13.0, NVRTC); not usable here: {reason}")
        }
        Err(e) => format!("loaded at run time (driver API 13.0, NVRTC); not usable here: {e}"),
    };
    let mpi = comm::mpi_library_version()
        .unwrap_or_else(|| "the linked MPI library gives no version".into());
    let (major, minor, release) = io::hdf5_version();
    format!(
        "{SHORT_VERSION}\n  cuda   {cuda}\n  mpi    {mpi} (used under mpirun)\n  hdf5   {major}.{minor}.{release}\n  threads {} (RAYON_NUM_THREADS sets them)",
        rayon::current_num_threads()
    )
}
