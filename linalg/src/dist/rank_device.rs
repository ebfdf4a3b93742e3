//! One GPU per rank: which device each MPI rank computes on ([`select_rank_devices`]).
//!
//! Rank `r` opens GPU `(node-local rank) mod (GPUs visible on its node)`, the node-local rank
//! coming from the communicator's shared-memory split ([`comm::Comm::node_local`]), never from
//! launcher variables. The outcome is agreed collectively: under [`RankDeviceRequest::Cuda`] a
//! rank without a usable GPU is every rank's error (naming that rank and why); under
//! [`RankDeviceRequest::Auto`] every rank falls back to the host together (never a mix of host
//! and GPU ranks, whose results would differ in the last bits).

use std::sync::Arc;

use comm::Comm;

use crate::backend::cuda::peer::{PeerChannel, PeerLists};
use crate::backend::cuda::{CudaContext, DeviceComm};
use crate::{Device, LinalgError};

/// What the run asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankDeviceRequest {
    /// A GPU on every rank, or an error on every rank.
    Cuda,
    /// A GPU on every rank if every rank has one, else the host on every rank.
    Auto,
}

/// The agreed outcome of [`select_rank_devices`] on this rank.
#[derive(Debug)]
pub struct RankDevices<D = Device> {
    /// This rank's device (the host after an `auto` fall-back).
    pub device: D,
    /// Every rank's device name, indexed by rank (the same on every rank).
    pub names: Vec<String>,
    /// Why `auto` fell back to the host (the lowest rank without a GPU and its reason).
    pub fallback: Option<String>,
}

/// The GPU ordinal of node-local rank `node_rank` among `visible` GPUs (`visible > 0`).
pub fn gpu_for(node_rank: usize, visible: usize) -> usize {
    node_rank % visible.max(1)
}

/// Collective (the node-local ranks are found). Starts the CUDA driver and the context of the
/// GPU [`select_rank_devices`] will open on a thread of its own
/// ([`crate::backend::cuda::warm_up_node_rank`]), so that the selection later finds them
/// ready: a run calls it before it builds its part of the mesh and problem. Nothing happens
/// where CUDA is unavailable (the selection reports it).
pub fn warm_up_rank_device(comm: &Arc<dyn Comm>) {
    let (node_rank, _) = comm.node_local();
    crate::backend::cuda::warm_up_node_rank(node_rank);
}

/// Collective. Opens this rank's GPU ([`gpu_for`] its node-local rank and the GPUs its driver
/// reports) and agrees on the outcome as the module doc says. Errors are
/// [`LinalgError::CudaUnavailable`] on every rank (under `cuda`) or a communication failure.
pub fn select_rank_devices(
    comm: &Arc<dyn Comm>,
    request: RankDeviceRequest,
) -> Result<RankDevices, LinalgError> {
    select_with(comm, request, Device::Host, |node_rank| {
        let count = crate::backend::cuda::device_count().map_err(|e| e.to_string())?;
        let ordinal = gpu_for(node_rank, count);
        let device = Device::cuda(ordinal).map_err(|e| e.to_string())?;
        let name = device.name();
        Ok((device, name))
    })
}

/// How halo exchanges between the ranks' GPUs travel ([`connect_rank_devices`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceExchange {
    /// Device to pinned host memory, MPI, back to the device (one host synchronisation each).
    Staged,
    /// NCCL, device to device on the stream (an error on every rank where NCCL is missing).
    Nccl,
    /// Halo exchanges and the Galerkin products' reductions written by each GPU straight into
    /// its neighbours' memory (CUDA IPC: every rank on one node, every pair of GPUs
    /// peer-capable; no NCCL communicator is made); an error on every rank where one cannot.
    Ipc,
    /// `ipc` where every rank can (one node, peer access, a trial exchange passed), else NCCL
    /// where every rank has it, else staged.
    Auto,
}

impl DeviceExchange {
    /// The names the command line and the summary use.
    pub fn name(self) -> &'static str {
        match self {
            DeviceExchange::Staged => "staged",
            DeviceExchange::Nccl => "nccl",
            DeviceExchange::Ipc => "ipc",
            DeviceExchange::Auto => "auto",
        }
    }
}

/// Collective, after [`select_rank_devices`]. Binds the ranks' GPUs to one another as `how`
/// says and returns what halo exchanges will use (`Staged`, `Nccl` or `Ipc`) and, where `auto`
/// fell back from `ipc` to NCCL or to staging, why. On the host, or on one rank, nothing to bind: `Staged`.
pub fn connect_rank_devices(
    comm: &Arc<dyn Comm>,
    device: &Device,
    how: DeviceExchange,
) -> Result<(DeviceExchange, Option<String>), LinalgError> {
    // peer writes need no NCCL communicator (whose start takes a third of a second): tried
    // first where asked for or allowed
    let mut no_peer_writes = None;
    if matches!(how, DeviceExchange::Ipc | DeviceExchange::Auto) && comm.size() > 1 {
        if let Some(ctx) = device.cuda_context() {
            match connect_peer_writes(comm, ctx) {
                Ok(()) => return Ok((DeviceExchange::Ipc, None)),
                Err(e) if how == DeviceExchange::Ipc => {
                    return Err(LinalgError::CudaUnavailable {
                        reason: format!("exchange ipc: {e}"),
                    })
                }
                Err(e) => no_peer_writes = Some(format!("no peer writes: {e}")),
            }
        }
    }
    let connected = connect_nccl(comm, device, how)?;
    if connected.0 != DeviceExchange::Nccl {
        return Ok(connected);
    }
    // NCCL for the halos too
    let ctx = device.cuda_context().expect("NCCL binds GPUs only");
    ctx.peers().expect("connected").set_peer_writes(false);
    Ok((DeviceExchange::Nccl, no_peer_writes))
}

/// Collective. Binds the ranks' GPUs by peer writes where every rank can (agreed: one node, a
/// GPU each, peer access both ways, a trial exchange between every pair; a context bound to
/// these ranks before keeps its communicator, with peer writes on); a context without peers
/// gets peer writes alone ([`DeviceComm::peer_writes_only`], no NCCL). The reason otherwise,
/// the same on every rank.
fn connect_peer_writes(comm: &Arc<dyn Comm>, ctx: &Arc<CudaContext>) -> Result<(), String> {
    let (rank, size) = (comm.rank(), comm.size());
    let bound = ctx.peers().cloned();
    let bindable = match &bound {
        Some(peers) if peers.rank_and_size() != (rank, size) => {
            Err("a GPU is already bound to the peers of another communicator".to_string())
        }
        _ => Ok(()),
    };
    comm::agree(
        &**comm,
        bindable.and_then(|()| peer_capable(comm, ctx.ordinal())),
    )
    .map_err(|e| e.to_string())?;
    comm::agree(&**comm, peer_trial(comm, ctx).map_err(|e| e.to_string()))
        .map_err(|e| e.to_string())?;
    match bound {
        Some(peers) => peers.set_peer_writes(true),
        None => {
            ctx.set_peers(DeviceComm::peer_writes_only(rank, size));
        }
    }
    Ok(())
}

/// Collective. One peer-write exchange between every pair of ranks (each sends its rank + 1
/// to every other), checked: the mappings and the flags work before any halo relies on them.
fn peer_trial(comm: &Arc<dyn Comm>, ctx: &Arc<CudaContext>) -> Result<(), LinalgError> {
    let me = comm.rank();
    let others: Vec<usize> = (0..comm.size()).filter(|&r| r != me).collect();
    let lists: Vec<(usize, std::ops::Range<usize>)> = others
        .iter()
        .enumerate()
        .map(|(k, &r)| (r, k..k + 1))
        .collect();
    let send_idx = vec![0u32; others.len()];
    let mut channel = PeerChannel::open(
        ctx,
        &**comm,
        &PeerLists {
            bs: 1,
            n_ghosts: others.len(),
            sends: &lists,
            send_idx: &send_idx,
            receives: &lists,
        },
    )?;
    let x = ctx.upload(&[me as f64 + 1.0])?;
    let (ghosts, _) = channel.forward(&x, || Ok(()))?;
    let got = ctx.download(ghosts)?;
    let want: Vec<f64> = others.iter().map(|&r| r as f64 + 1.0).collect();
    if got != want {
        return Err(LinalgError::Cuda {
            op: "peer-write trial".into(),
            message: format!("rank {me} received {got:?}, expected {want:?}"),
        });
    }
    Ok(())
}

/// Collective. Whether this rank's GPU `ordinal` can map every other rank's GPU memory: every
/// rank on this node, on a GPU of its own, peer access both ways.
fn peer_capable(comm: &Arc<dyn Comm>, ordinal: usize) -> Result<(), String> {
    let (_, node_size) = comm.node_local();
    let all = comm
        .allgatherv_bytes(&(ordinal as u64).to_le_bytes())
        .map_err(|e| e.to_string())?;
    if node_size != comm.size() {
        return Err(format!(
            "{} ranks, {node_size} of them on this node; peer writes need every rank on one \
             node (use --exchange nccl)",
            comm.size()
        ));
    }
    for (r, o) in all.iter().enumerate() {
        let bytes: [u8; 8] = o
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| format!("rank {r} sent {} bytes for its GPU ordinal, not 8", o.len()))?;
        let other = u64::from_le_bytes(bytes) as usize;
        if r == comm.rank() {
            continue;
        }
        if other == ordinal {
            return Err(format!(
                "rank {r} shares GPU {ordinal} with rank {}",
                comm.rank()
            ));
        }
        if !crate::backend::cuda::can_access_peer(ordinal, other).map_err(|e| e.to_string())? {
            return Err(format!(
                "GPU {ordinal} (rank {}) cannot access GPU {other} (rank {r}) as a peer",
                comm.rank()
            ));
        }
    }
    Ok(())
}

/// [`connect_rank_devices`] up to NCCL (`Ipc` connects NCCL first).
fn connect_nccl(
    comm: &Arc<dyn Comm>,
    device: &Device,
    how: DeviceExchange,
) -> Result<(DeviceExchange, Option<String>), LinalgError> {
    let Some(ctx) = device.cuda_context() else {
        return Ok((DeviceExchange::Staged, None));
    };
    if comm.size() == 1 || how == DeviceExchange::Staged {
        return Ok((DeviceExchange::Staged, None));
    }
    if let Some(peers) = ctx.peers() {
        if peers.has_nccl() && peers.rank_and_size() == (comm.rank(), comm.size()) {
            return Ok((DeviceExchange::Nccl, None));
        }
    }
    // NCCL refuses two ranks on one GPU: every rank learns whether some node has more ranks
    // than GPUs before any rank tries
    let (_, node_size) = comm.node_local();
    let gpus = crate::backend::cuda::device_count().unwrap_or(0);
    let own_gpu: Result<(), String> = if node_size > gpus {
        Err(format!(
            "{node_size} ranks share their node's {gpus} GPU(s); NCCL needs a GPU per rank"
        ))
    } else if ctx.peers().is_some() {
        // bound to peers of another communicator or to peer writes alone (the matching NCCL
        // ones returned above)
        Err(
            "a GPU is already bound to other peers (another communicator's or peer writes alone)"
                .into(),
        )
    } else {
        Ok(())
    };
    // every rank learns whether every rank joined (a failure on one is every rank's)
    let joined = comm::agree(&**comm, own_gpu).and_then(|()| {
        comm::agree(
            &**comm,
            crate::backend::cuda::DeviceComm::connect(ctx, &**comm),
        )
    });
    match joined {
        Ok(peers) => {
            // unbound on every rank (agreed above), so the binding takes
            ctx.set_peers(peers);
            Ok((DeviceExchange::Nccl, None))
        }
        Err(e) if how == DeviceExchange::Auto => Ok((DeviceExchange::Staged, Some(e.to_string()))),
        Err(e) => Err(LinalgError::CudaUnavailable {
            reason: format!("exchange {}: {e}", how.name()),
        }),
    }
}

/// [`select_rank_devices`] with the opening step given: `open(node_rank)` returns this rank's
/// device and its name, or why it has none; `host` is the fall-back device. Generic so that the
/// agreement is tested without GPUs.
pub fn select_with<D>(
    comm: &Arc<dyn Comm>,
    request: RankDeviceRequest,
    host: D,
    open: impl FnOnce(usize) -> Result<(D, String), String>,
) -> Result<RankDevices<D>, LinalgError> {
    let (node_rank, node_size) = comm.node_local();
    let opened = open(node_rank);
    let failure = match &opened {
        Ok(_) => Vec::new(),
        Err(why) => format!(
            "no usable GPU for node-local rank {node_rank} of {node_size}: {}",
            if why.is_empty() { "?" } else { why }
        )
        .into_bytes(),
    };
    let all = comm.allgatherv_bytes(&failure)?;
    let failed = all.iter().position(|m| !m.is_empty()).map(|r| {
        format!(
            "rank {r} of {}: {}",
            comm.size(),
            String::from_utf8_lossy(&all[r])
        )
    });
    let (device, name, fallback) = match (opened, failed) {
        (Ok((device, name)), None) => (device, name, None),
        (_, Some(why)) if request == RankDeviceRequest::Cuda => {
            return Err(LinalgError::CudaUnavailable {
                reason: format!("cuda on {} MPI ranks: {why}", comm.size()),
            })
        }
        (_, Some(why)) => (host, "host".to_string(), Some(why)),
        (Err(_), None) => unreachable!("a failing rank sends a message"),
    };
    let names = comm
        .allgatherv_bytes(name.as_bytes())?
        .into_iter()
        .map(|n| String::from_utf8_lossy(&n).into_owned())
        .collect();
    Ok(RankDevices {
        device,
        names,
        fallback,
    })
}

/// For multi-rank GPU tests, called first in the test function: outside `mpirun` without a
/// usable GPU, prints one `SKIP` line and returns true (the test then starts no `mpirun`).
pub fn skip_multi_rank_gpu_test(test: &str) -> bool {
    if comm::launched_by_mpi() {
        return false;
    }
    match crate::backend::cuda::unavailable_reason() {
        Some(why) => {
            eprintln!("SKIP {test}: no GPU ({why})");
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use comm::SelfComm;

    #[test]
    fn node_local_ranks_go_round_the_visible_gpus() {
        assert_eq!(
            (0..5).map(|r| gpu_for(r, 2)).collect::<Vec<_>>(),
            [0, 1, 0, 1, 0]
        );
        assert_eq!(gpu_for(3, 1), 0);
        assert_eq!(gpu_for(3, 0), 0);
    }

    #[test]
    fn one_rank_opens_its_gpu_or_errors_under_cuda_or_falls_back_under_auto() {
        let comm = SelfComm::shared();
        let ok = select_with(&comm, RankDeviceRequest::Cuda, 99, |r| {
            Ok((gpu_for(r, 4), "gpu".into()))
        })
        .unwrap();
        assert_eq!(
            (ok.device, ok.names, ok.fallback),
            (0, vec!["gpu".into()], None)
        );
        let e = select_with(&comm, RankDeviceRequest::Cuda, 99, |_| {
            Err::<(usize, String), _>("no driver".into())
        })
        .unwrap_err();
        assert!(matches!(e, LinalgError::CudaUnavailable { .. }));
        assert!(
            e.to_string()
                .contains("rank 0 of 1: no usable GPU for node-local rank 0 of 1: no driver"),
            "{e}"
        );
        let host = select_with(&comm, RankDeviceRequest::Auto, 99, |_| {
            Err::<(usize, String), _>("no driver".into())
        })
        .unwrap();
        assert_eq!(host.device, 99);
        assert_eq!(host.names, ["host"]);
        assert!(host.fallback.unwrap().contains("no driver"));
    }
}
