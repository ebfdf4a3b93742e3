//! Distributed block matrices on 1, 2 and 4 ranks: the SpMV of the owned rows equals the serial
//! SpMV, and bad input on one rank is an error on every rank.

use std::sync::Arc;

use linalg::comm::{launch::on_ranks, Comm, CommError, SelfComm};
use linalg::dist::{
    connect_rank_devices, gpu_for, select_rank_devices, select_with, skip_multi_rank_gpu_test,
    DeviceExchange, DistBsr, DistPattern, RankDeviceRequest, RowGatherPlan, RowPartition,
};
use linalg::hash::{signed_unit, splitmix64};
use linalg::{BlockPattern, Bsr, LinalgError, Vector};

const N: u64 = 41;
const BS: usize = 3;

/// Global block columns of block row `i` (a band with far couplings, so that every rank has
/// ghosts on both sides and some from non-adjacent ranks).
fn row_cols(i: u64) -> Vec<u64> {
    let mut c: Vec<u64> = [0i64, -1, 1, -7, 7, 19]
        .iter()
        .map(|d| i as i64 + d)
        .filter(|&j| (0..N as i64).contains(&j))
        .map(|j| j as u64)
        .collect();
    c.sort_unstable();
    c.dedup();
    c
}

fn block(i: u64, j: u64) -> Vec<f64> {
    (0..BS * BS)
        .map(|e| signed_unit(splitmix64(i * 1_000_003 + j * 101 + e as u64)))
        .collect()
}

fn x_global() -> Vec<f64> {
    (0..N as usize * BS)
        .map(|e| signed_unit(splitmix64(7 + e as u64)))
        .collect()
}

/// The whole matrix on one rank, and `A x`.
fn serial_product() -> Vec<f64> {
    let (mut row_ptr, mut cols, mut values) = (vec![0], Vec::new(), Vec::new());
    for i in 0..N {
        for j in row_cols(i) {
            cols.push(j as u32);
            values.extend(block(i, j));
        }
        row_ptr.push(cols.len());
    }
    let pattern = BlockPattern::new(N as usize, N as usize, row_ptr, cols).unwrap();
    let a = Bsr::from_parts(Arc::new(pattern), BS, BS, values).unwrap();
    let mut y = Vector::zeros(N as usize * BS);
    a.spmv(&Vector::from_vec(x_global()), &mut y).unwrap();
    y.to_host_vec().unwrap()
}

/// This rank's owned rows, entries of each row in descending column order (any order is
/// allowed), and the product with the distributed `x`.
fn distributed_product(comm: Arc<dyn Comm>) -> (Vec<f64>, std::ops::Range<u64>, DistBsr) {
    let partition = RowPartition::even(comm, N);
    let owned = partition.owned_range();
    let (mut row_ptr, mut cols, mut values) = (vec![0], Vec::new(), Vec::new());
    for i in owned.clone() {
        for j in row_cols(i).into_iter().rev() {
            cols.push(j);
            values.extend(block(i, j));
        }
        row_ptr.push(cols.len());
    }
    let pattern = DistPattern::new(partition, BS, &row_ptr, &cols).unwrap();
    let a = DistBsr::from_values(pattern, &values).unwrap();
    let mut x = a.new_vector();
    let xg = x_global();
    let first = owned.start as usize * BS;
    let n_owned = x.layout().owned();
    x.host_mut().unwrap()[..n_owned].copy_from_slice(&xg[first..first + n_owned]);
    let mut y = a.new_vector();
    a.spmv(&mut x, &mut y).unwrap();
    // The ghosts now hold the owners' entries.
    let ghosts = a.pattern().halo().ghosts();
    for (k, &g) in ghosts.iter().enumerate() {
        let got = &x.host().unwrap()[n_owned + k * BS..n_owned + (k + 1) * BS];
        assert_eq!(got, &xg[g as usize * BS..(g as usize + 1) * BS]);
    }
    (y.host().unwrap()[..n_owned].to_vec(), owned, a)
}

#[test]
fn one_rank_distributed_spmv_is_the_serial_spmv_exactly() {
    let serial = serial_product();
    let (y, owned, a) = distributed_product(SelfComm::shared());
    assert_eq!(owned, 0..N);
    assert_eq!(a.offd().pattern().nnz(), 0);
    assert_eq!(
        y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        serial.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
}

#[test]
fn distributed_spmv_equals_the_serial_spmv() {
    on_ranks("distributed_spmv_equals_the_serial_spmv", &[2, 4], |comm| {
        let serial = serial_product();
        let (y, owned, a) = distributed_product(comm.clone());
        let first = owned.start as usize * BS;
        let scale = serial.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (k, v) in y.iter().enumerate() {
            // Diagonal and off-diagonal parts are summed separately: equal to rounding.
            assert!(
                (v - serial[first + k]).abs() <= 1e-14 * scale,
                "entry {}: {v} vs {}",
                first + k,
                serial[first + k]
            );
        }
        assert!(
            a.offd().pattern().nnz() > 0,
            "every rank has ghost couplings"
        );
        // Bit-identical from call to call (fixed rank count).
        let (again, _, _) = distributed_product(comm.clone());
        assert_eq!(
            y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            again.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        // The halo plan sends exactly what the other ranks' ghosts ask for.
        let sent = a.pattern().halo().send_volume() as f64;
        let mut total = [sent, (a.pattern().halo().ghosts().len() * BS) as f64];
        comm.allreduce_sum(&mut total).unwrap();
        assert_eq!(total[0], total[1]);
    });
}

#[test]
fn a_bad_column_on_one_rank_is_the_same_error_on_every_rank() {
    on_ranks(
        "a_bad_column_on_one_rank_is_the_same_error_on_every_rank",
        &[2, 4],
        |comm| {
            let partition = RowPartition::even(comm.clone(), N);
            let last = comm.size() - 1;
            let owned = partition.owned_range();
            let (mut row_ptr, mut cols) = (vec![0], Vec::new());
            for i in owned.clone() {
                cols.extend(row_cols(i));
                if comm.rank() == last && i == owned.end - 1 {
                    cols.push(N + 5);
                }
                row_ptr.push(cols.len());
            }
            let e = DistPattern::new(partition, BS, &row_ptr, &cols).unwrap_err();
            let LinalgError::Comm(CommError::Failed { rank, message, .. }) = e else {
                panic!("expected an agreed error, got {e}")
            };
            assert_eq!(rank, last);
            assert!(message.contains(&format!("column {}", N + 5)), "{message}");
        },
    );
}

/// A column twice in a row is an agreed error naming it, whether the rows come in ascending
/// column order or not.
#[test]
fn a_column_twice_in_a_row_is_the_same_error_on_every_rank() {
    on_ranks(
        "a_column_twice_in_a_row_is_the_same_error_on_every_rank",
        &[2],
        |comm| {
            for descending in [false, true] {
                let partition = RowPartition::even(comm.clone(), N);
                let owned = partition.owned_range();
                let (mut row_ptr, mut cols) = (vec![0], Vec::new());
                for i in owned.clone() {
                    let mut row = row_cols(i);
                    if comm.rank() == 0 && i == owned.start {
                        row.insert(1, row[0]); // (ascending: the repeat beside its twin)
                    }
                    if descending {
                        row.reverse();
                    }
                    cols.extend(row);
                    row_ptr.push(cols.len());
                }
                let e = DistPattern::new(partition, BS, &row_ptr, &cols).unwrap_err();
                let LinalgError::Comm(CommError::Failed { rank, message, .. }) = e else {
                    panic!("expected an agreed error, got {e}")
                };
                assert_eq!(rank, 0);
                assert!(message.contains("twice"), "{message}");
            }
        },
    );
}

/// `DistPattern::from_local`: every non-owned local column is a ghost column, reached by an
/// owned row or not (a METIS part's ghost cell may hold no owned node), so the halo fills all
/// of the part's ghosts; a local column beyond the global columns is an agreed error.
#[test]
fn from_local_makes_every_local_non_owned_column_a_ghost() {
    on_ranks(
        "from_local_makes_every_local_non_owned_column_a_ghost",
        &[2],
        |comm| {
            // 4 global block rows, 2 per rank; each rank's local matrix: its 2 owned rows
            // (diagonal blocks only) and 2 ghost columns, the other rank's rows, unreached
            let rank = comm.rank() as u64;
            let other = 1 - rank;
            let globals = vec![2 * rank, 2 * rank + 1, 2 * other, 2 * other + 1];
            let local = BlockPattern::new(2, 4, vec![0, 1, 2], vec![0, 1]).unwrap();
            let partition = RowPartition::new(comm.clone(), 2).unwrap();
            let pattern = DistPattern::from_local(partition.clone(), &local, &globals, BS).unwrap();
            assert_eq!(pattern.halo().ghosts(), &globals[2..]);
            assert_eq!(pattern.offd().nnz(), 0);
            // the halo fills the unreached ghosts from their owners
            let mut x: Vec<f64> = (0..4 * BS).map(|e| e as f64).collect();
            for v in &mut x[..2 * BS] {
                *v += 100.0 * rank as f64;
            }
            for v in &mut x[2 * BS..] {
                *v = f64::NAN;
            }
            pattern.halo().update(&mut x).unwrap();
            let expected: Vec<f64> = (0..2 * BS)
                .map(|e| e as f64 + 100.0 * other as f64)
                .collect();
            assert_eq!(&x[2 * BS..], &expected[..]);
            // a column beyond the 4 global columns: every rank's error
            let mut bad = globals.clone();
            if rank == 1 {
                bad[3] = 9;
            }
            let e = DistPattern::from_local(partition, &local, &bad, BS).unwrap_err();
            let LinalgError::Comm(CommError::Failed {
                rank: failed,
                message,
                ..
            }) = e
            else {
                panic!("expected an agreed error, got {e}")
            };
            assert_eq!(failed, 1);
            assert!(message.contains("ghost column 9"), "{message}");
        },
    );
}

const M: u64 = 17;

/// Block columns of row `i` of a 41 x 17 matrix of 3 x 6 blocks (a prolongator's shape).
fn rect_cols(i: u64) -> Vec<u64> {
    let mut c = vec![i * M / N, (i * 7 + 3) % M, (i * M / N + M - 1) % M];
    c.sort_unstable();
    c.dedup();
    c
}

fn rect_block(i: u64, j: u64) -> Vec<f64> {
    (0..18)
        .map(|e| signed_unit(splitmix64(i * 7919 + j * 31 + e as u64 + 5)))
        .collect()
}

#[test]
fn rectangular_distributed_spmv_equals_the_serial_spmv() {
    on_ranks(
        "rectangular_distributed_spmv_equals_the_serial_spmv",
        &[1, 2, 4],
        |comm| {
            let xg: Vec<f64> = (0..6 * M)
                .map(|e| signed_unit(splitmix64(e + 77)))
                .collect();
            // Serial: the whole matrix.
            let (mut row_ptr, mut cols, mut values) = (vec![0], Vec::new(), Vec::new());
            for i in 0..N {
                for j in rect_cols(i) {
                    cols.push(j as u32);
                    values.extend(rect_block(i, j));
                }
                row_ptr.push(cols.len());
            }
            let pattern = BlockPattern::new(N as usize, M as usize, row_ptr, cols).unwrap();
            let a = Bsr::from_parts(Arc::new(pattern), 3, 6, values).unwrap();
            let mut ys = Vector::zeros(3 * N as usize);
            a.spmv(&Vector::from_vec(xg.clone()), &mut ys).unwrap();
            let ys = ys.to_host_vec().unwrap();

            let rows = RowPartition::even(comm.clone(), N);
            let columns = RowPartition::even(comm.clone(), M);
            let (owned_rows, owned_cols) = (rows.owned_range(), columns.owned_range());
            let (mut row_ptr, mut cols, mut values) = (vec![0], Vec::new(), Vec::new());
            for i in owned_rows.clone() {
                for j in rect_cols(i) {
                    cols.push(j);
                    values.extend(rect_block(i, j));
                }
                row_ptr.push(cols.len());
            }
            let pattern = DistPattern::new_rect(rows, columns, 3, 6, &row_ptr, &cols).unwrap();
            let a = DistBsr::from_values(pattern, &values).unwrap();
            let mut x = a.new_owned_vector();
            let first = 6 * owned_cols.start as usize;
            let n = x.len();
            x.host_mut().unwrap().copy_from_slice(&xg[first..first + n]);
            let mut y = a.new_row_vector();
            a.apply(&x, &mut y).unwrap();
            let first = 3 * owned_rows.start as usize;
            for (k, v) in y.host().unwrap().iter().enumerate() {
                assert!(
                    (v - ys[first + k]).abs() <= 1e-14 * 8.0,
                    "row entry {}",
                    first + k
                );
            }
            // A result of the operand's layout is refused: y must be a row vector.
            let mut wrong = a.new_owned_vector();
            assert!(a.apply(&x, &mut wrong).is_err());
        },
    );
}

/// The GPU of this rank (every rank of a test shares GPU 0 of its node when there is one).
fn rank_gpu(comm: &Arc<dyn Comm>) -> linalg::Device {
    select_rank_devices(comm, RankDeviceRequest::Cuda)
        .expect("the parent process saw a GPU")
        .device
}

/// The device tests' product: this rank's owned rows, the distributed matrix, its owned part
/// of the global operand and the host's `y = A x` (the reference).
fn device_test_product(comm: &Arc<dyn Comm>) -> (std::ops::Range<u64>, DistBsr, Vector, Vector) {
    let (_, owned, a) = distributed_product(comm.clone());
    let xg = x_global();
    let mut x = a.new_owned_vector();
    let first = owned.start as usize * BS;
    let n = x.len();
    x.host_mut().unwrap().copy_from_slice(&xg[first..first + n]);
    let mut y_host = a.new_row_vector();
    a.apply(&x, &mut y_host).unwrap();
    (owned, a, x, y_host)
}

/// The product's parts (`DistBsr::exchange_ghosts`, `DistBsr::apply_without_overlap`) and a
/// rank's unreduced dot (`Vector::owned_dot_exact`) on the host: the product without overlap is
/// `apply`'s bits, the ranks' dot accumulators added and rounded once are `ops::dot`'s bits.
fn check_product_parts(comm: &Arc<dyn Comm>) {
    let (_, a, x, y_apply) = device_test_product(comm);
    let mut y = a.new_row_vector();
    y.fill(f64::NAN).unwrap();
    a.apply_without_overlap(&x, &mut y).unwrap();
    let bits = |v: &Vector| {
        v.to_host_vec()
            .unwrap()
            .iter()
            .map(|x| x.to_bits())
            .collect::<Vec<_>>()
    };
    assert_eq!(bits(&y), bits(&y_apply), "rank {}", comm.rank());
    a.exchange_ghosts(&x).unwrap();
    let mut sums = [x.owned_dot_exact(&x).unwrap()];
    linalg::exact::ExactSum::allreduce(&**comm, &mut sums).unwrap();
    let dot = linalg::ops::dot(&x, &x).unwrap();
    assert_eq!(sums[0].value().to_bits(), dot.to_bits());
    // the operands of `apply`: an operand of the ghost layout is refused where there are ghosts
    let with_ghosts = a.new_vector();
    if with_ghosts.layout().ghosts() > 0 {
        assert!(matches!(
            a.apply_without_overlap(&with_ghosts, &mut y),
            Err(LinalgError::LayoutMismatch { .. })
        ));
        assert!(a.exchange_ghosts(&with_ghosts).is_err());
    }
}

#[test]
fn one_rank_product_parts_are_the_products_bits() {
    check_product_parts(&SelfComm::shared());
}

#[test]
fn product_parts_on_ranks_are_the_products_bits() {
    on_ranks(
        "product_parts_on_ranks_are_the_products_bits",
        &[2, 4],
        check_product_parts,
    );
}

/// On each rank's GPU: the product without overlap is the device `apply`'s bits (the host's),
/// the exchange alone runs, and a rank's unreduced dot is the host's accumulator.
#[test]
fn device_product_parts_are_the_products_bits() {
    let test = "device_product_parts_are_the_products_bits";
    if skip_multi_rank_gpu_test(test) {
        return;
    }
    on_ranks(test, &[2], |comm| {
        let device = rank_gpu(comm);
        let (_, a, x, y_host) = device_test_product(comm);
        let ad = a.to_device(&device).unwrap();
        let xd = x.to_device(&device).unwrap();
        let mut yd = a.new_row_vector().to_device(&device).unwrap();
        yd.fill(f64::NAN).unwrap();
        ad.apply_without_overlap(&xd, &mut yd).unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&yd.to_host_vec().unwrap()),
            bits(y_host.host().unwrap())
        );
        ad.exchange_ghosts(&xd).unwrap();
        device.synchronize().unwrap();
        let (on_device, on_host) = (
            xd.owned_dot_exact(&xd).unwrap(),
            x.owned_dot_exact(&x).unwrap(),
        );
        assert_eq!(on_device.value().to_bits(), on_host.value().to_bits());
        // mixed devices are an error
        assert!(ad.apply_without_overlap(&x, &mut yd).is_err());
    });
}

#[test]
fn device_distributed_spmv_is_the_host_distributed_spmv_bit_for_bit() {
    let test = "device_distributed_spmv_is_the_host_distributed_spmv_bit_for_bit";
    if skip_multi_rank_gpu_test(test) {
        return;
    }
    on_ranks(test, &[2], |comm| {
        let device = rank_gpu(comm);
        let (owned, a, x, mut y_host) = device_test_product(comm);

        let ad = a.to_device(&device).unwrap();
        assert_eq!(ad.version(), a.version());
        let xd = x.to_device(&device).unwrap();
        let mut yd = a.new_row_vector().to_device(&device).unwrap();
        let before = device.transfers();
        ad.apply(&xd, &mut yd).unwrap();
        let moved = device.transfers();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&yd.to_host_vec().unwrap()),
            bits(y_host.host().unwrap())
        );
        // Exactly the halo's bytes crossed the bus: the packed sends down, the ghosts up.
        let per = ad.device_halo().unwrap().bytes_per_exchange();
        assert!(per.sent > 0 && per.host_to_device > 0);
        assert_eq!(
            moved.device_to_host - before.device_to_host,
            per.device_to_host
        );
        assert_eq!(
            moved.host_to_device - before.host_to_device,
            per.host_to_device
        );
        assert_eq!(per.sent as usize, a.pattern().halo().send_volume() * 8);
        // Mixed devices are an error, not a silent download.
        assert!(ad.apply(&x, &mut yd).is_err());
        // New host values uploaded: the same product as the host matrix with them.
        let mut a2 = DistBsr::zeros(a.pattern().clone());
        let owned_rows: Vec<u64> = owned.clone().collect();
        let mut values = Vec::new();
        for &i in &owned_rows {
            for j in row_cols(i).into_iter().rev() {
                values.extend(block(i, j).iter().map(|v| 0.5 * v));
            }
        }
        a2.set_values(&values).unwrap();
        let mut ad2 = ad;
        ad2.upload_values_from(&a2).unwrap();
        assert_eq!(ad2.version(), a2.version());
        a2.apply(&x, &mut y_host).unwrap();
        ad2.apply(&xd, &mut yd).unwrap();
        assert_eq!(
            bits(&yd.to_host_vec().unwrap()),
            bits(y_host.host().unwrap())
        );
    });
}

/// The SpMV's exchange (ghosts from their owners) and the restriction's (ghost contributions
/// added by their owners) on the device: once staged through the host, once through NCCL.
/// Returns the SpMV's result, the restriction's result and the bytes that crossed the bus.
fn device_exchanges(a: &DistBsr, device: &linalg::Device, x: &Vector) -> (Vec<f64>, Vec<f64>, u64) {
    let ctx = device.cuda_context().unwrap();
    let ad = a.to_device(device).unwrap();
    let xd = x.to_device(device).unwrap();
    let mut yd = a.new_row_vector().to_device(device).unwrap();
    let ghosts = a.pattern().halo().ghosts().len() * 3;
    let rank = a.pattern().partition().comm().rank() as u64;
    let contributions: Vec<f64> = (0..ghosts as u64)
        .map(|i| signed_unit(splitmix64(1000 * rank + i)))
        .collect();
    let contributions = ctx.upload(&contributions).unwrap();
    let before = device.transfers();
    ad.apply(&xd, &mut yd).unwrap();
    let mut zd = x.to_device(device).unwrap();
    ad.device_halo()
        .unwrap()
        .add_ghost_contributions(&contributions, zd.device_buffer_mut().unwrap(), |_| Ok(()))
        .unwrap();
    ctx.synchronize().unwrap();
    let after = device.transfers();
    let moved =
        after.device_to_host - before.device_to_host + after.host_to_device - before.host_to_device;
    (yd.to_host_vec().unwrap(), zd.to_host_vec().unwrap(), moved)
}

#[test]
fn nccl_exchanges_are_the_staged_exchanges_bit_for_bit() {
    let test = "nccl_exchanges_are_the_staged_exchanges_bit_for_bit";
    if skip_multi_rank_gpu_test(test) {
        return;
    }
    on_ranks(test, &[2], |comm| {
        let device = rank_gpu(comm);
        let (_, a, x, y_host) = device_test_product(comm);
        let (y_staged, z_staged, staged_bytes) = device_exchanges(&a, &device, &x);
        match connect_rank_devices(comm, &device, DeviceExchange::Nccl) {
            Ok((DeviceExchange::Nccl, None)) => {}
            Ok(other) => panic!("NCCL asked for, {other:?} given"),
            Err(e) => {
                // one GPU shared by the ranks (NCCL refuses duplicate GPUs) or no NCCL library:
                // every rank learns it, none hangs
                eprintln!("SKIP {test}: {e}");
                return;
            }
        }
        let (y_nccl, z_nccl, nccl_bytes) = device_exchanges(&a, &device, &x);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&y_nccl), bits(y_host.host().unwrap()));
        assert_eq!(bits(&y_nccl), bits(&y_staged));
        assert_eq!(bits(&z_nccl), bits(&z_staged));
        assert!(z_nccl != x.host().unwrap(), "contributions were added");
        // device to device: only the vectors' own copies (x up, y and z down) crossed the bus
        let halo = a
            .to_device(&device)
            .unwrap()
            .device_halo()
            .unwrap()
            .bytes_per_exchange();
        assert_eq!((halo.device_to_host, halo.host_to_device), (0, 0));
        assert!(nccl_bytes < staged_bytes, "{nccl_bytes} vs {staged_bytes}");
        let peers = device.cuda_context().unwrap().peers().unwrap();
        assert!(peers.sent().1 > 0);
        eprintln!(
            "nccl exchanges: SpMV and restriction equal the staged bits; bus bytes {nccl_bytes} (staged {staged_bytes})"
        );
    });
}

/// Twelve SpMVs in a chain, each followed by a restriction's exchange into its result, queued
/// without a host wait between them: `x <- A x`, then the ghost contributions (fixed values)
/// added by their owners. Returns the last vector.
fn exchange_chain(a: &DistBsr, device: &linalg::Device, x: &Vector) -> Vec<f64> {
    let ctx = device.cuda_context().unwrap();
    let ad = a.to_device(device).unwrap();
    let mut xd = x.to_device(device).unwrap();
    let mut yd = a.new_row_vector().to_device(device).unwrap();
    let ghosts = a.pattern().halo().ghosts().len() * 3;
    let rank = a.pattern().partition().comm().rank() as u64;
    let contributions: Vec<f64> = (0..ghosts as u64)
        .map(|i| signed_unit(splitmix64(7000 * rank + i)))
        .collect();
    let contributions = ctx.upload(&contributions).unwrap();
    for _ in 0..12 {
        ad.apply(&xd, &mut yd).unwrap();
        ad.device_halo()
            .unwrap()
            .add_ghost_contributions(&contributions, yd.device_buffer_mut().unwrap(), |_| Ok(()))
            .unwrap();
        std::mem::swap(&mut xd, &mut yd);
    }
    xd.to_host_vec().unwrap()
}

#[test]
fn ipc_exchanges_are_the_staged_exchanges_bit_for_bit() {
    let test = "ipc_exchanges_are_the_staged_exchanges_bit_for_bit";
    if skip_multi_rank_gpu_test(test) {
        return;
    }
    on_ranks(test, &[2], |comm| {
        let device = rank_gpu(comm);
        let (_, a, x, y_host) = device_test_product(comm);
        let (y_staged, z_staged, staged_bytes) = device_exchanges(&a, &device, &x);
        let chain_staged = exchange_chain(&a, &device, &x);
        match connect_rank_devices(comm, &device, DeviceExchange::Ipc) {
            Ok((DeviceExchange::Ipc, None)) => {}
            Ok(other) => panic!("ipc asked for, {other:?} given"),
            Err(e) => {
                // one GPU shared by the ranks, no NCCL, or GPUs without peer access: every
                // rank learns it, none hangs
                eprintln!("SKIP {test}: {e}");
                return;
            }
        }
        let sent_before = device.cuda_context().unwrap().peers().unwrap().sent();
        let (y_ipc, z_ipc, ipc_bytes) = device_exchanges(&a, &device, &x);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&y_ipc), bits(y_host.host().unwrap()));
        assert_eq!(bits(&y_ipc), bits(&y_staged));
        assert_eq!(bits(&z_ipc), bits(&z_staged));
        assert!(z_ipc != x.host().unwrap(), "contributions were added");
        assert!(ipc_bytes < staged_bytes, "{ipc_bytes} vs {staged_bytes}");
        // the sends are counted: one forward and one reverse exchange, the plan's volume each
        let sent = device.cuda_context().unwrap().peers().unwrap().sent();
        let volume = (a.pattern().halo().send_volume() * 8) as u64;
        assert_eq!(
            sent.1 - sent_before.1,
            volume + (a.pattern().halo().ghosts().len() * 3 * 8) as u64
        );
        // exchanges queued back to back reuse the buffers only once the neighbour is done
        let chain_ipc = exchange_chain(&a, &device, &x);
        assert_eq!(bits(&chain_ipc), bits(&chain_staged));
        eprintln!(
            "ipc exchanges: SpMV, restriction and a chain of 24 exchanges equal the staged bits"
        );
    });
}

/// Other ranks' rows of a device matrix gathered by a `RowGatherPlan` into device rows (the
/// `P_oth` of a device Galerkin product): the host gather's bits, staged through the host and,
/// where the ranks' GPUs allow it, by peer writes, where nothing crosses the bus; an update of
/// an unchanged matrix moves nothing.
#[test]
fn device_row_gather_is_the_host_row_gather_bit_for_bit() {
    let test = "device_row_gather_is_the_host_row_gather_bit_for_bit";
    if skip_multi_rank_gpu_test(test) {
        return;
    }
    on_ranks(test, &[2], |comm| {
        let device = rank_gpu(comm);
        let (_, a, _, _) = device_test_product(comm);
        let halo = a.pattern().halo();
        let host_plan = RowGatherPlan::new(halo, &a).unwrap();
        let mut host_rows = host_plan.new_matrix();
        let host_sent = host_plan.update(&a, &mut host_rows).unwrap();
        assert!(host_sent > 0 && host_rows.pattern().nnz() > 0);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let ad = a.to_device(&device).unwrap();
        // (rows, values sent, values sent by a second update, bytes down the bus)
        let gather = || {
            let plan = RowGatherPlan::new(halo, &ad).unwrap();
            let mut rows = plan.new_matrix_on(&device).unwrap();
            let before = device.transfers();
            let sent = plan.update(&ad, &mut rows).unwrap();
            let again = plan.update(&ad, &mut rows).unwrap();
            device.cuda_context().unwrap().synchronize().unwrap();
            let down = device.transfers().device_to_host - before.device_to_host;
            (rows.to_host_vec().unwrap(), sent, again, down)
        };
        let (staged, sent, again, _) = gather();
        assert_eq!(bits(&staged), bits(host_rows.host().unwrap()));
        assert_eq!((sent, again), (host_sent, 0));
        // host rows of a device P (here on rank 0 only): an error on every rank, not a hang
        let plan = RowGatherPlan::new(halo, &ad).unwrap();
        let mut rows = if comm.rank() == 0 {
            plan.new_matrix()
        } else {
            plan.new_matrix_on(&device).unwrap()
        };
        assert!(plan.update(&ad, &mut rows).is_err());
        match connect_rank_devices(comm, &device, DeviceExchange::Ipc) {
            Ok((DeviceExchange::Ipc, None)) => {}
            Ok(other) => panic!("ipc asked for, {other:?} given"),
            Err(e) => {
                eprintln!("SKIP {test} (peer writes): {e}");
                return;
            }
        }
        let (written, sent, _, down) = gather();
        assert_eq!(bits(&written), bits(host_rows.host().unwrap()));
        assert_eq!((sent, down), (host_sent, 0));
        eprintln!("device row gather: staged and peer writes equal the host gather's bits");
    });
}

#[test]
fn a_rank_without_a_gpu_is_every_ranks_error_under_cuda_and_every_ranks_host_under_auto() {
    on_ranks(
        "a_rank_without_a_gpu_is_every_ranks_error_under_cuda_and_every_ranks_host_under_auto",
        &[2],
        |comm| {
            // Rank 1 has no GPU; rank 0 opens the GPU its node-local rank maps to (of 2).
            let open = |node_rank: usize| {
                if comm.rank() == 1 {
                    Err("the driver reports no device".to_string())
                } else {
                    Ok((
                        gpu_for(node_rank, 2),
                        format!("gpu {}", gpu_for(node_rank, 2)),
                    ))
                }
            };
            let e = select_with(comm, RankDeviceRequest::Cuda, usize::MAX, open).unwrap_err();
            assert!(matches!(e, LinalgError::CudaUnavailable { .. }));
            assert!(
                e.to_string()
                    .contains("rank 1 of 2: no usable GPU for node-local rank 1 of 2: the driver reports no device"),
                "{e}"
            );
            let auto = select_with(comm, RankDeviceRequest::Auto, usize::MAX, open).unwrap();
            assert_eq!(auto.device, usize::MAX, "every rank on the host");
            assert_eq!(auto.names, ["host", "host"]);
            assert!(auto.fallback.unwrap().starts_with("rank 1 of 2"));
            // Every rank with a GPU: each lists every rank's device, round the node's GPUs.
            let all = select_with(comm, RankDeviceRequest::Cuda, usize::MAX, |r| {
                Ok((gpu_for(r, 2), format!("gpu {}", gpu_for(r, 2))))
            })
            .unwrap();
            assert_eq!(all.device, comm.rank());
            assert_eq!(all.names, ["gpu 0", "gpu 1"]);
            // The real selection agrees too: GPUs everywhere or the host everywhere.
            let real = select_rank_devices(comm, RankDeviceRequest::Auto).unwrap();
            let on_host = real.names.iter().filter(|n| *n == "host").count();
            assert!(on_host == 0 || on_host == 2, "{:?}", real.names);
        },
    );
}

/// This rank's rows of the banded matrix as a rank-local matrix (`DistPattern::from_local`'s
/// input): the owned rows with their columns numbered locally (owned columns first, then the
/// ghost columns in ascending global order), and the local columns' global ids.
fn local_matrix(owned: std::ops::Range<u64>) -> (Bsr, Vec<u64>) {
    let mut ghosts: Vec<u64> = owned
        .clone()
        .flat_map(row_cols)
        .filter(|j| !owned.contains(j))
        .collect();
    ghosts.sort_unstable();
    ghosts.dedup();
    let n_owned = (owned.end - owned.start) as usize;
    let globals: Vec<u64> = owned.clone().chain(ghosts.iter().copied()).collect();
    let local = |j: u64| {
        if owned.contains(&j) {
            (j - owned.start) as u32
        } else {
            (n_owned + ghosts.binary_search(&j).unwrap()) as u32
        }
    };
    let (mut row_ptr, mut cols, mut values) = (vec![0], Vec::new(), Vec::new());
    for i in owned.clone() {
        let mut row: Vec<(u32, u64)> = row_cols(i).into_iter().map(|j| (local(j), j)).collect();
        row.sort_unstable();
        for (c, j) in row {
            cols.push(c);
            values.extend(block(i, j));
        }
        row_ptr.push(cols.len());
    }
    let pattern = BlockPattern::new(n_owned, globals.len(), row_ptr, cols).unwrap();
    (
        Bsr::from_parts(Arc::new(pattern), BS, BS, values).unwrap(),
        globals,
    )
}

/// On one GPU per rank: `DistBsr::set_from_local` of a rank-local matrix on the device (a
/// whole-block gather through the inverse of the pattern's entry slots, uploaded once) gives
/// the host's diagonal and off-diagonal values bit for bit and moves nothing between host and
/// GPU after its first call; `owned_from_local` and `local_from_owned` (ghosts from their
/// owners through the device halo) equal the host's.
#[test]
fn device_set_from_local_gathers_the_host_blocks_bit_for_bit() {
    let test = "device_set_from_local_gathers_the_host_blocks_bit_for_bit";
    if skip_multi_rank_gpu_test(test) {
        return;
    }
    on_ranks(test, &[1, 2], |comm| {
        let device = rank_gpu(comm);
        let partition = RowPartition::even(comm.clone(), N);
        let owned = partition.owned_range();
        let (local, globals) = local_matrix(owned.clone());
        let pattern = DistPattern::from_local(partition, local.pattern(), &globals, BS).unwrap();
        let mut a = DistBsr::zeros(pattern.clone());
        a.set_from_local(&local).unwrap();
        let local_dev = local.to_device(&device).unwrap();
        let mut ad = DistBsr::zeros(pattern.clone()).to_device(&device).unwrap();
        ad.set_from_local(&local_dev).unwrap();
        let before = device.transfers();
        let version = ad.version();
        ad.set_from_local(&local_dev).unwrap();
        let after = device.transfers();
        assert_ne!(ad.version(), version, "new values, a new version");
        assert_eq!(
            (after.host_to_device, after.device_to_host),
            (before.host_to_device, before.device_to_host),
            "a later gather moves nothing between host and GPU"
        );
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let back = ad.to_device(&linalg::Device::Host).unwrap();
        assert_eq!(
            bits(back.diag().host().unwrap()),
            bits(a.diag().host().unwrap())
        );
        assert_eq!(
            bits(back.offd().host().unwrap()),
            bits(a.offd().host().unwrap())
        );
        // a host local matrix into a device one is an error, not a silent upload
        assert!(ad.set_from_local(&local).is_err());
        // the products of both: the same bits
        let xg = x_global();
        let mut x = a.new_owned_vector();
        let first = owned.start as usize * BS;
        let n = x.len();
        x.host_mut().unwrap().copy_from_slice(&xg[first..first + n]);
        let mut y = a.new_row_vector();
        a.apply(&x, &mut y).unwrap();
        let xd = x.to_device(&device).unwrap();
        let mut yd = ad.row_zeros().unwrap();
        ad.apply(&xd, &mut yd).unwrap();
        assert_eq!(bits(&yd.to_host_vec().unwrap()), bits(y.host().unwrap()));
        // owned entries out of a local vector, and back with the ghosts from their owners
        let mut l = a.new_vector();
        a.local_from_owned(&x, &mut l).unwrap();
        let mut ld = a.new_vector().to_device(&device).unwrap();
        ad.local_from_owned(&xd, &mut ld).unwrap();
        assert_eq!(bits(&ld.to_host_vec().unwrap()), bits(l.host().unwrap()));
        let ghosts = &l.host().unwrap()[n..];
        for (g, &j) in pattern.halo().ghosts().iter().enumerate() {
            let j = j as usize;
            assert_eq!(&ghosts[g * BS..(g + 1) * BS], &xg[j * BS..(j + 1) * BS]);
        }
        let mut o = a.new_owned_vector();
        a.owned_from_local(&l, &mut o).unwrap();
        let mut od = ad.owned_zeros().unwrap();
        ad.owned_from_local(&ld, &mut od).unwrap();
        assert_eq!(bits(&od.to_host_vec().unwrap()), bits(x.host().unwrap()));
        assert_eq!(bits(o.host().unwrap()), bits(x.host().unwrap()));
        if comm.rank() == 0 {
            println!(
                "device set_from_local on {} ranks: {} + {} blocks gathered, the host's bits",
                comm.size(),
                a.diag().pattern().nnz(),
                a.offd().pattern().nnz()
            );
        }
    });
}

/// This rank's rows of a long band of `partition`'s block rows, each row's columns in a
/// scrambled order: `(row_ptr, columns)`.
fn scrambled_band(partition: &RowPartition) -> (Vec<usize>, Vec<u64>) {
    let n = partition.global_len() as i64;
    let (mut row_ptr, mut cols) = (vec![0], Vec::new());
    for i in partition.owned_range() {
        let mut row: Vec<u64> = [0i64, -1, 1, -40, 40, 333, -1000]
            .iter()
            .map(|d| i as i64 + d)
            .filter(|j| (0..n).contains(j))
            .map(|j| j as u64)
            .collect();
        let len = row.len();
        row.rotate_left(i as usize % len);
        cols.extend(row);
        row_ptr.push(cols.len());
    }
    (row_ptr, cols)
}

/// Every input entry of a pattern of many rows (filled in parallel groups) lands in a slot of
/// its own row holding its column, and `slot_entries` is the inverse of `entry_slots`.
fn check_entry_slots(comm: Arc<dyn Comm>) {
    let partition = RowPartition::even(comm, 5000);
    let (row_ptr, cols) = scrambled_band(&partition);
    let p = DistPattern::new(partition.clone(), 1, &row_ptr, &cols).unwrap();
    let (entry_slots, slot_entries) = (p.entry_slots(), p.slot_entries());
    assert_eq!(entry_slots.len(), cols.len());
    assert_eq!(slot_entries.len(), cols.len());
    let (d, o) = (p.diag(), p.offd());
    let first = partition.owned_range().start;
    let ghosts = p.halo().ghosts();
    for i in 0..row_ptr.len() - 1 {
        for k in row_ptr[i]..row_ptr[i + 1] {
            let s = entry_slots[k] as usize;
            assert_eq!(slot_entries[s] as usize, k, "slot {s}");
            let global = if s < d.nnz() {
                assert!((d.row_ptr()[i]..d.row_ptr()[i + 1]).contains(&s));
                first + u64::from(d.col_idx()[s])
            } else {
                let t = s - d.nnz();
                assert!((o.row_ptr()[i]..o.row_ptr()[i + 1]).contains(&t));
                ghosts[o.col_idx()[t] as usize]
            };
            assert_eq!(global, cols[k], "entry {k} of row {i}");
        }
    }
}

#[test]
fn entries_land_in_their_rows_slots_and_slot_entries_invert_entry_slots() {
    check_entry_slots(SelfComm::shared());
    on_ranks(
        "entries_land_in_their_rows_slots_and_slot_entries_invert_entry_slots",
        &[2, 4],
        |comm| check_entry_slots(comm.clone()),
    );
}
