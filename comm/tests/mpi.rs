//! The MPI communicator on 2 and 4 ranks (each test starts itself under `mpirun`).

use comm::launch::on_ranks;
use comm::{agree, exclusive_scan, CommError, Traffic};

#[test]
fn reductions_combine_ranks_in_rank_order_on_every_rank() {
    on_ranks(
        "reductions_combine_ranks_in_rank_order_on_every_rank",
        &[2, 4],
        |comm| {
            let (r, n) = (comm.rank(), comm.size());
            // Values whose sum depends on the order of addition.
            let mine = |r: usize| {
                [
                    1.0e16 * if r.is_multiple_of(2) { 1.0 } else { -1.0 },
                    0.1 * (r + 1) as f64,
                ]
            };
            let mut v = mine(r);
            comm.allreduce_sum(&mut v).unwrap();
            let mut expected = mine(0);
            for q in 1..n {
                let m = mine(q);
                expected[0] += m[0];
                expected[1] += m[1];
            }
            assert_eq!(v.map(f64::to_bits), expected.map(f64::to_bits));
            // Every rank holds the same bits.
            let all = comm.allgatherv_f64(&v).unwrap();
            assert!(all.iter().all(|w| w
                .iter()
                .map(|x| x.to_bits())
                .eq(v.iter().map(|x| x.to_bits()))));

            let mut m = [
                r as f64,
                -(r as f64),
                if r == n - 1 { f64::NAN } else { 0.0 },
            ];
            comm.allreduce_max(&mut m).unwrap();
            assert_eq!(m[0], (n - 1) as f64);
            assert_eq!(m[1], 0.0);
            assert!(m[2].is_nan());

            // A length that differs on one rank is the same error everywhere, not a hang.
            let mut bad = vec![1.0; if r == 1 { 2 } else { 1 }];
            assert!(matches!(
                comm.allreduce_sum(&mut bad),
                Err(CommError::Mismatch { .. })
            ));
        },
    );
}

#[test]
fn gathers_scans_and_all_to_all_move_every_ranks_data() {
    on_ranks(
        "gathers_scans_and_all_to_all_move_every_ranks_data",
        &[2, 4],
        |comm| {
            let (r, n) = (comm.rank(), comm.size());
            let local: Vec<u64> = (0..r as u64 + 1).map(|i| 100 * r as u64 + i).collect();
            let all = comm.allgatherv_u64(&local).unwrap();
            for (q, v) in all.iter().enumerate() {
                assert_eq!(
                    *v,
                    (0..q as u64 + 1)
                        .map(|i| 100 * q as u64 + i)
                        .collect::<Vec<_>>()
                );
            }
            assert_eq!(
                exclusive_scan(&**comm, r as u64 + 1).unwrap(),
                ((r * (r + 1) / 2) as u64, (n * (n + 1) / 2) as u64)
            );
            // Rank r sends q + 1 copies of 10 r + q to rank q.
            let send: Vec<Vec<u64>> = (0..n).map(|q| vec![(10 * r + q) as u64; q + 1]).collect();
            let got = comm.alltoallv_u64(&send).unwrap();
            for (q, v) in got.iter().enumerate() {
                assert_eq!(*v, vec![(10 * q + r) as u64; r + 1]);
            }
            let sendf: Vec<Vec<f64>> = (0..n).map(|q| vec![r as f64 + 0.5; q]).collect();
            let gotf = comm.alltoallv_f64(&sendf).unwrap();
            assert!(gotf
                .iter()
                .enumerate()
                .all(|(q, v)| *v == vec![q as f64 + 0.5; r]));
            assert_eq!(comm.alltoallv_f64_moving(sendf).unwrap(), gotf);
        },
    );
}

#[test]
fn exchange_delivers_neighbour_messages_around_the_overlapped_work() {
    on_ranks(
        "exchange_delivers_neighbour_messages_around_the_overlapped_work",
        &[2, 4],
        |comm| {
            let (r, n) = (comm.rank(), comm.size());
            let (next, prev) = ((r + 1) % n, (r + n - 1) % n);
            let to_next = vec![r as f64; 3];
            let to_prev = vec![-(r as f64); 2];
            let (mut from_prev, mut from_next) = (vec![0.0; 3], vec![0.0; 2]);
            let mut overlapped = 0;
            if n == 2 {
                // One neighbour on both sides: one message each way, of 3 + 2 entries.
                let send = [to_next.clone(), to_prev.clone()].concat();
                let mut recv = vec![0.0; 5];
                comm.exchange(&[(next, &send)], &mut [(prev, &mut recv)], &mut || {
                    overlapped += 1
                })
                .unwrap();
                from_prev.copy_from_slice(&recv[..3]);
                from_next.copy_from_slice(&recv[3..]);
            } else {
                comm.exchange(
                    &[(next, &to_next), (prev, &to_prev)],
                    &mut [(prev, &mut from_prev), (next, &mut from_next)],
                    &mut || overlapped += 1,
                )
                .unwrap();
            }
            assert_eq!(overlapped, 1);
            assert_eq!(from_prev, vec![prev as f64; 3]);
            assert_eq!(from_next, vec![-(next as f64); 2]);
            assert!(comm
                .exchange(&[(r, &to_next)], &mut [], &mut || ())
                .is_err());
        },
    );
}

#[test]
fn an_error_on_one_rank_becomes_the_same_error_on_every_rank() {
    on_ranks(
        "an_error_on_one_rank_becomes_the_same_error_on_every_rank",
        &[2, 4],
        |comm| {
            let (r, n) = (comm.rank(), comm.size());
            assert_eq!(agree(&**comm, Ok::<_, String>(r)).unwrap(), r);
            // The last rank (rank 1 of 2, rank 3 of 4) and, on 4 ranks, rank 2 fail: the lowest
            // failing rank's message wins everywhere.
            let local: Result<(), String> = if r == n - 1 || (n == 4 && r == 2) {
                Err(format!("bad element {} on this rank", 10 + r))
            } else {
                Ok(())
            };
            let e = agree(&**comm, local).unwrap_err();
            let first = if n == 4 { 2 } else { 1 };
            assert_eq!(
                e,
                CommError::Failed {
                    rank: first,
                    size: n,
                    message: format!("bad element {} on this rank", 10 + first)
                }
            );
            assert_eq!(
                e.to_string(),
                format!(
                    "rank {first} of {n}: bad element {} on this rank",
                    10 + first
                )
            );
        },
    );
}

/// The comm layer counts what each rank sends: an all-gather one message and the payload (and
/// the element count) to each other rank, an all-to-all what is addressed to other ranks, a
/// neighbour exchange one message per send; an exact `ExactSum` reduction of nothing new.
#[test]
fn traffic_counts_messages_and_bytes_per_operation() {
    on_ranks(
        "traffic_counts_messages_and_bytes_per_operation",
        &[2, 4],
        |comm| {
            let (r, n) = (comm.rank(), comm.size());
            let others = (n - 1) as u64;
            let count_bytes = 4 * others; // MPI's element counts (i32)
            let t0 = comm.traffic();
            comm.allgatherv_f64(&vec![1.0; r + 1]).unwrap();
            let d = comm.traffic().since(&t0);
            assert_eq!(d.messages, others);
            assert_eq!(d.bytes, 8 * (r as u64 + 1) * others + count_bytes);
            assert_eq!(d.collectives, 1);
            assert!(d.collective_s >= 0.0);

            let t0 = comm.traffic();
            let send: Vec<Vec<u64>> = (0..n).map(|q| vec![7; q + 1]).collect();
            comm.alltoallv_u64(&send).unwrap();
            let d = comm.traffic().since(&t0);
            let to_others: u64 = (0..n).filter(|&q| q != r).map(|q| 8 * (q as u64 + 1)).sum();
            assert_eq!((d.messages, d.bytes), (others, to_others + count_bytes));

            let t0 = comm.traffic();
            let right = (r + 1) % n;
            let left = (r + n - 1) % n;
            let out = [1.0, 2.0, 3.0];
            let mut back = [0.0; 3];
            comm.exchange(
                &[(right, &out[..])],
                &mut [(left, &mut back[..])],
                &mut || (),
            )
            .unwrap();
            let d = comm.traffic().since(&t0);
            assert_eq!(
                d,
                Traffic {
                    messages: 1,
                    bytes: 24,
                    collectives: 0,
                    collective_s: 0.0
                }
            );
        },
    );
}

#[test]
fn ranks_on_one_node_are_numbered_in_world_order_by_the_shared_memory_split() {
    on_ranks(
        "ranks_on_one_node_are_numbered_in_world_order_by_the_shared_memory_split",
        &[2],
        |comm| {
            // mpirun starts every rank of a test on this one machine.
            assert_eq!(comm.node_local(), (comm.rank(), comm.size()));
        },
    );
}

/// `split` makes groups of consecutive ranks that reduce among themselves and keep the world's
/// node-local place; `send_bytes` and `try_receive_bytes` carry messages of any length (empty
/// included) between any two ranks, from a named rank or from any.
#[test]
fn split_groups_reduce_apart_and_point_to_point_messages_arrive() {
    on_ranks(
        "split_groups_reduce_apart_and_point_to_point_messages_arrive",
        &[2, 3, 4],
        |world| {
            let (rank, size) = (world.rank(), world.size());
            let group = world.split(rank / 2, rank).unwrap();
            assert_eq!(group.rank(), rank % 2);
            assert_eq!(group.size(), (size - rank / 2 * 2).min(2));
            assert_eq!(group.node_local(), world.node_local());
            let mut v = [rank as f64];
            group.allreduce_sum(&mut v).unwrap();
            let first = rank / 2 * 2;
            let expected: usize = (first..(first + 2).min(size)).sum();
            assert_eq!(v[0], expected as f64);
            // every rank but 0 sends its rank's bytes (rank 1 an empty message); rank 0 answers
            if rank == 0 {
                let mut seen = Vec::new();
                while seen.len() < size - 1 {
                    if let Some((from, bytes)) = world.try_receive_bytes(None, 5).unwrap() {
                        assert_eq!(bytes, vec![from as u8; from - 1]);
                        world.send_bytes(from, 6, &[from as u8 * 10]).unwrap();
                        seen.push(from);
                    }
                }
                seen.sort_unstable();
                assert_eq!(seen, (1..size).collect::<Vec<_>>());
            } else {
                world.send_bytes(0, 5, &vec![rank as u8; rank - 1]).unwrap();
                assert_eq!(world.receive_bytes(0, 6).unwrap(), vec![rank as u8 * 10]);
            }
        },
    );
}

/// A concurrent communicator's calls go on while another thread's calls on the run's
/// communicator wait: rank 0's second thread receives while rank 0's first thread has not yet
/// joined a reduction that the other ranks' first threads wait in (one lock for both
/// communicators would deadlock here), and both threads' results are right.
#[test]
fn a_concurrent_communicator_calls_while_the_run_communicator_waits() {
    on_ranks(
        "a_concurrent_communicator_calls_while_the_run_communicator_waits",
        &[2, 3],
        |comm| {
            let Some(side) = comm.concurrent().unwrap() else {
                eprintln!("skipped: the MPI library does not provide MPI_THREAD_MULTIPLE");
                return;
            };
            let (r, n) = (comm.rank(), comm.size());
            assert_eq!((side.rank(), side.size()), (r, n));
            let pause = std::time::Duration::from_millis(50);
            std::thread::scope(|s| {
                let other = s.spawn(|| {
                    for round in 0..20 {
                        if r == 0 {
                            let mut bufs = vec![vec![0.0; 4]; n - 1];
                            let mut recvs: Vec<(usize, &mut [f64])> = bufs
                                .iter_mut()
                                .enumerate()
                                .map(|(i, b)| (i + 1, b.as_mut_slice()))
                                .collect();
                            side.exchange(&[], &mut recvs, &mut || ()).unwrap();
                            for (i, b) in bufs.iter().enumerate() {
                                assert_eq!(b, &[((i + 1) * 100 + round) as f64; 4]);
                            }
                        } else {
                            if round == 0 {
                                // the first threads are in the reduction by now
                                std::thread::sleep(pause / 5);
                            }
                            let mine = [(r * 100 + round) as f64; 4];
                            side.exchange(&[(0, &mine)], &mut [], &mut || ()).unwrap();
                        }
                    }
                    side.allgatherv_u64(&[r as u64]).unwrap()
                });
                if r == 0 {
                    std::thread::sleep(pause);
                }
                let mut v = [1.0];
                comm.allreduce_sum(&mut v).unwrap();
                assert_eq!(v[0], n as f64);
                let all = other.join().unwrap();
                assert_eq!(all, (0..n as u64).map(|q| vec![q]).collect::<Vec<_>>());
            });
        },
    );
}
