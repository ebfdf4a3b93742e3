//! Where a campaign's cases run: the GPU of each worker (`--jobs`) or rank (under MPI), the
//! host's name for the table. Pure functions of what was found, so that the placement is tested
//! without a GPU.

use crate::error::fail;
use crate::Result;

/// The GPU of worker `slot` (a `--jobs` worker's index, or a rank's node-local rank under MPI)
/// among `visible` GPUs: `gpus[slot % len]` when a list is given (`--gpus`), else round robin
/// over the visible GPUs; `None` where there is no GPU (the case runs on the CPU).
pub fn gpu_of_slot(slot: usize, visible: usize, gpus: Option<&[usize]>) -> Option<usize> {
    match gpus {
        Some(list) if !list.is_empty() => Some(list[slot % list.len()]),
        _ if visible > 0 => Some(slot % visible),
        _ => None,
    }
}

/// Checks a `--gpus` list against the GPUs found: every entry names one of them, none twice.
pub fn check_gpu_list(gpus: &[usize], visible: usize) -> Result<()> {
    if gpus.is_empty() {
        fail!("--gpus: an empty list (name GPUs by ordinal, e.g. --gpus 0,1)");
    }
    if let Some(bad) = gpus.iter().find(|&&g| g >= visible) {
        if visible == 0 {
            fail!("--gpus: GPU {bad} named, and no GPU is usable here");
        }
        fail!(
            "--gpus: GPU {bad} named, and this machine has {visible} (valid: 0..={})",
            visible - 1
        );
    }
    for (i, g) in gpus.iter().enumerate() {
        if gpus[..i].contains(g) {
            fail!("--gpus: GPU {g} is named twice (each GPU takes its share of the workers once)");
        }
    }
    Ok(())
}

/// The GPUs a campaign of `config`s places its workers on: none when every case runs on the
/// CPU (`device: cpu`), else the usable GPUs (none where the driver finds none: `auto` then
/// runs on the CPU, `cuda` fails in each case with the run's own error).
pub fn visible_gpus(configs: &[&config::Config]) -> usize {
    if configs
        .iter()
        .all(|c| c.device == config::ComputeDevice::Cpu)
    {
        return 0;
    }
    linalg::gpu::device_count().unwrap_or(0)
}

/// The GPU a case of `config` runs on when its worker was given `gpu`: none on the CPU.
pub fn gpu_of_case(config: &config::Config, gpu: Option<usize>) -> Option<usize> {
    (config.device != config::ComputeDevice::Cpu)
        .then_some(gpu)
        .flatten()
}

/// This machine's name (`/proc/sys/kernel/hostname`, else `$HOSTNAME`), or `localhost`.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "localhost".to_owned())
}

/// Threads for each of `workers` workers of `threads` (at least one each).
pub fn threads_per_worker(threads: usize, workers: usize) -> usize {
    (threads / workers.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Round robin over the visible GPUs: 5 workers on 2 GPUs share them 3 : 2, on 4 GPUs the
    /// first takes two; with a list, the list's GPUs in its order; no GPU, no placement.
    #[test]
    fn workers_go_round_robin_over_the_gpus_or_the_list() {
        let on = |visible, gpus: Option<&[usize]>| {
            (0..5)
                .map(|w| gpu_of_slot(w, visible, gpus))
                .collect::<Vec<_>>()
        };
        assert_eq!(on(2, None), [Some(0), Some(1), Some(0), Some(1), Some(0)]);
        assert_eq!(on(4, None), [Some(0), Some(1), Some(2), Some(3), Some(0)]);
        assert_eq!(on(1, None), [Some(0); 5]);
        assert_eq!(on(0, None), [None; 5]);
        assert_eq!(
            on(8, Some(&[3, 1])),
            [Some(3), Some(1), Some(3), Some(1), Some(3)]
        );
        // the node-local ranks of a node take the GPUs as `hexfem run` under mpirun does
        for rank in 0..8 {
            assert_eq!(
                gpu_of_slot(rank, 3, None),
                Some(linalg::dist::gpu_for(rank, 3))
            );
        }
    }

    #[test]
    fn gpu_lists_name_gpus_that_exist_once() {
        assert!(check_gpu_list(&[0, 1], 2).is_ok());
        assert!(check_gpu_list(&[1], 2).is_ok());
        let e = check_gpu_list(&[0, 2], 2).unwrap_err().to_string();
        assert!(e.contains("GPU 2") && e.contains("valid: 0..=1"), "{e}");
        let e = check_gpu_list(&[0], 0).unwrap_err().to_string();
        assert!(e.contains("no GPU"), "{e}");
        let e = check_gpu_list(&[1, 1], 2).unwrap_err().to_string();
        assert!(e.contains("twice"), "{e}");
        assert!(check_gpu_list(&[], 2).is_err());
    }

    #[test]
    fn threads_are_shared_and_never_zero() {
        assert_eq!(threads_per_worker(16, 4), 4);
        assert_eq!(threads_per_worker(2, 4), 1);
        assert_eq!(threads_per_worker(7, 0), 7);
        assert!(!host_name().is_empty());
    }

    /// A worker's GPU is its thread's (what `device: auto` and `cuda` open there), restored
    /// after the case; other threads keep theirs.
    #[test]
    fn a_workers_gpu_is_its_threads_for_the_case() {
        assert_eq!(linalg::Device::thread_gpu(), 0);
        let inside = linalg::Device::with_thread_gpu(3, || {
            let other = std::thread::spawn(linalg::Device::thread_gpu)
                .join()
                .unwrap();
            (linalg::Device::thread_gpu(), other)
        });
        assert_eq!(inside, (3, 0));
        assert_eq!(linalg::Device::thread_gpu(), 0);
    }
}
