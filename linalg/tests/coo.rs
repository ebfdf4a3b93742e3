//! COO assembly plans against dense accumulation.

mod common;

use common::{assert_close, with_threads, Rng};
use std::num::NonZeroUsize;

use linalg::{Bsr, CooPlan, LinalgError};

/// Random contributions with duplicates, in random order, leaving some rows empty.
fn contributions(rng: &mut Rng, nbr: usize, nbc: usize, n: usize) -> (Vec<u32>, Vec<u32>) {
    let mut rows = Vec::with_capacity(n);
    let mut cols = Vec::with_capacity(n);
    for _ in 0..n {
        // Odd rows stay empty; few distinct columns force duplicates.
        rows.push((2 * rng.below(nbr.div_ceil(2))) as u32);
        cols.push(rng.below(nbc.min(5)) as u32 * (nbc as u32 / 5).max(1));
    }
    (rows, cols)
}

fn dense_accumulate(
    rows: &[u32],
    cols: &[u32],
    values: &[f64],
    nbr: usize,
    nbc: usize,
    br: usize,
    bc: usize,
) -> Vec<f64> {
    let n_cols = nbc * bc;
    let mut d = vec![0.0; nbr * br * n_cols];
    for (c, (&i, &j)) in rows.iter().zip(cols).enumerate() {
        for r in 0..br {
            for s in 0..bc {
                d[(i as usize * br + r) * n_cols + j as usize * bc + s] +=
                    values[c * br * bc + r * bc + s];
            }
        }
    }
    d
}

#[test]
fn assemble_matches_dense_accumulation() {
    let mut rng = Rng::new(20);
    for (br, bc) in [(3, 3), (1, 1), (3, 6), (2, 5), (6, 6)] {
        let (nbr, nbc) = (31, 17);
        let (rows, cols) = contributions(&mut rng, nbr, nbc, 600);
        let plan = CooPlan::new(nbr, nbc, &rows, &cols).unwrap();
        assert_eq!(plan.n_contributions(), 600);
        assert!(plan.pattern().row(1).is_empty());
        // Pattern = sorted unique blocks of each row.
        for i in 0..nbr {
            let mut expect: Vec<u32> = rows
                .iter()
                .zip(&cols)
                .filter(|(r, _)| **r as usize == i)
                .map(|(_, c)| *c)
                .collect();
            expect.sort_unstable();
            expect.dedup();
            assert_eq!(plan.pattern().row(i), expect.as_slice());
        }
        let values = rng.vec(600 * br * bc);
        let mut a = Bsr::zeros(plan.pattern().clone(), br, bc);
        a.host_mut().unwrap().fill(f64::NAN); // assemble overwrites
        plan.assemble(&values, &mut a).unwrap();
        assert_close(
            &a.to_dense().unwrap(),
            &dense_accumulate(&rows, &cols, &values, nbr, nbc, br, bc),
            1e-14,
        );
    }
}

/// The segment lengths the plan tests try: single contributions, a few, many, one segment, more.
fn segment_lengths(n: usize) -> Vec<NonZeroUsize> {
    [1, 7, 64, n, n + 5]
        .into_iter()
        .filter_map(NonZeroUsize::new)
        .collect()
}

/// Every contribution lies in exactly one run, in its own segment, at the slot of its block;
/// a slot's first contribution opens it and later segments continue it; runs ascend in segment,
/// then slot, and contributions within a run.
#[test]
fn runs_cover_each_contribution_once_in_order() {
    let mut rng = Rng::new(21);
    let (rows, cols) = contributions(&mut rng, 50, 50, 5000);
    for len in segment_lengths(rows.len()) {
        let plan = CooPlan::with_segments(50, 50, &rows, &cols, len).unwrap();
        let pattern = plan.pattern();
        let slot_of = |c: usize| {
            let (i, j) = (rows[c] as usize, cols[c]);
            let row = &pattern.col_idx()[pattern.row_ptr()[i]..pattern.row_ptr()[i + 1]];
            pattern.row_ptr()[i] + row.binary_search(&j).unwrap()
        };
        let first_of_slot: Vec<usize> = (0..pattern.nnz())
            .map(|k| (0..rows.len()).find(|&c| slot_of(c) == k).unwrap())
            .collect();
        let mut seen = vec![false; rows.len()];
        let mut previous: Option<(usize, usize)> = None;
        for run in plan.runs() {
            assert!(!run.contributions.is_empty());
            assert!(run.contributions.windows(2).all(|w| w[0] < w[1]));
            let start = plan.segment_range(run.segment).start;
            for &local in run.contributions {
                let c = start + local as usize;
                assert!(plan.segment_range(run.segment).contains(&c));
                assert_eq!(slot_of(c), run.slot, "contribution {c}");
                assert!(!seen[c], "contribution {c} twice");
                seen[c] = true;
            }
            let opener = first_of_slot[run.slot];
            assert_eq!(run.opens, plan.segment_range(run.segment).contains(&opener));
            assert!(
                run.opens || opener < start,
                "a continuing run follows its opening one"
            );
            let key = (run.segment, run.slot);
            if let Some(p) = previous {
                assert!(p < key, "runs out of order: {p:?} then {key:?}");
            }
            previous = Some(key);
        }
        assert!(seen.iter().all(|&s| s));
        let openers = plan.runs().filter(|r| r.opens).count();
        assert_eq!(openers, pattern.nnz());
        assert_eq!(
            plan.n_segments(),
            rows.len().div_ceil(len.get().min(rows.len()))
        );
    }
}

/// Segment-by-segment sums are bit-identical to the dense reference accumulated in contribution
/// order (the same additions, `0.0 + c1 + c2 + ...`), whatever the segment length.
#[test]
fn segment_sums_are_bit_identical_to_ordered_accumulation() {
    let mut rng = Rng::new(23);
    let (nbr, nbc, n) = (31, 17, 2000);
    for (br, bc) in [(3, 3), (1, 3), (2, 5)] {
        let (rows, cols) = contributions(&mut rng, nbr, nbc, n);
        // Values of mixed magnitudes, so that a different order of additions shows in the bits.
        let values: Vec<f64> = rng
            .vec(n * br * bc)
            .iter()
            .enumerate()
            .map(|(k, v)| v * 10f64.powi((k % 7) as i32 - 3))
            .collect();
        let expect = dense_accumulate(&rows, &cols, &values, nbr, nbc, br, bc);
        let block_len = br * bc;
        for len in segment_lengths(n) {
            let plan = CooPlan::with_segments(nbr, nbc, &rows, &cols, len).unwrap();
            let mut a = Bsr::zeros(plan.pattern().clone(), br, bc);
            a.host_mut().unwrap().fill(f64::NAN); // the first run of every slot overwrites it
            let mut sum = plan.begin(&mut a).unwrap();
            while let Some(range) = sum.next_segment() {
                sum.add_segment(&values[range.start * block_len..range.end * block_len])
                    .unwrap();
            }
            sum.finish().unwrap();
            let got = a.to_dense().unwrap();
            assert!(
                got.iter()
                    .zip(&expect)
                    .all(|(x, y)| x.to_bits() == y.to_bits()),
                "{br}x{bc} blocks, segments of {len}"
            );
            // The whole-buffer call runs the same segments.
            let mut b = Bsr::zeros(plan.pattern().clone(), br, bc);
            plan.assemble(&values, &mut b).unwrap();
            assert_eq!(a.host().unwrap(), b.host().unwrap());
        }
    }
}

#[test]
fn plan_and_assembly_are_identical_across_thread_counts() {
    let mut rng = Rng::new(22);
    let n = 300_000;
    let rows: Vec<u32> = (0..n).map(|_| rng.below(5000) as u32).collect();
    let cols: Vec<u32> = (0..n).map(|_| rng.below(4000) as u32).collect();
    let values = rng.vec(n * 9);
    for len in [n, 10_007] {
        let len = NonZeroUsize::new(len).unwrap();
        let run = |t| {
            with_threads(t, || {
                let plan = CooPlan::with_segments(5000, 4000, &rows, &cols, len).unwrap();
                let mut a = Bsr::zeros(plan.pattern().clone(), 3, 3);
                plan.assemble(&values, &mut a).unwrap();
                (plan, a)
            })
        };
        let (plan1, a1) = run(1);
        let (plan4, a4) = run(4);
        assert_eq!(plan1, plan4);
        assert_eq!(a1.pattern(), a4.pattern());
        assert!(a1
            .host()
            .unwrap()
            .iter()
            .zip(a4.host().unwrap())
            .all(|(x, y)| x.to_bits() == y.to_bits()));
    }
}

/// The row sort over many rows with few contributions each (a nodal vector's plan: its chunks
/// are limited by the contributions a row, its offsets laid out by blocks of rows): the pattern
/// and slot order are a plain sort's by (row, column, index), for any thread count.
#[test]
fn a_plan_of_many_short_rows_is_a_plain_sorts_for_any_thread_count() {
    let mut rng = Rng::new(23);
    let (n_rows, n_cols, n) = (70_000, 3, 300_000);
    // a quarter of the rows empty, the others 0..10 contributions
    let rows: Vec<u32> = (0..n)
        .map(|_| (rng.below(n_rows * 3 / 4) * 4 / 3) as u32)
        .collect();
    let cols: Vec<u32> = (0..n).map(|_| rng.below(n_cols) as u32).collect();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by_key(|&c| (rows[c as usize], cols[c as usize], c));
    let mut slot_ptr = vec![0u32];
    let mut row_nnz = vec![0usize; n_rows];
    for (k, &c) in order.iter().enumerate() {
        let key = |c: u32| (rows[c as usize], cols[c as usize]);
        if k > 0 && key(order[k - 1]) != key(c) {
            slot_ptr.push(k as u32);
        }
        if k == 0 || key(order[k - 1]) != key(c) {
            row_nnz[rows[c as usize] as usize] += 1;
        }
    }
    slot_ptr.push(n as u32);
    let segment = NonZeroUsize::new(n).unwrap();
    for threads in [1, 3, 8] {
        let plan = with_threads(threads, || {
            CooPlan::with_segments(n_rows, n_cols, &rows, &cols, segment).unwrap()
        });
        let pattern = plan.pattern();
        assert!(
            (0..n_rows).all(|r| pattern.row_ptr()[r + 1] - pattern.row_ptr()[r] == row_nnz[r]),
            "{threads} threads: row lengths"
        );
        let got = plan.slot_order();
        assert_eq!(got.slot_ptr, slot_ptr, "{threads} threads: slots");
        assert_eq!(got.contributions, order, "{threads} threads: slot order");
    }
}

/// A coordinate function gives the same plan as coordinate arrays, and its bad contributions are
/// reported at their index.
#[test]
fn from_fn_matches_coordinate_arrays() {
    let mut rng = Rng::new(24);
    let (rows, cols) = contributions(&mut rng, 40, 30, 3000);
    let len = NonZeroUsize::new(100).unwrap();
    let from_arrays = CooPlan::with_segments(40, 30, &rows, &cols, len).unwrap();
    let from_fn = CooPlan::from_fn(40, 30, rows.len(), len, |c| {
        (rows[c] as usize, cols[c] as usize)
    })
    .unwrap();
    assert_eq!(from_arrays, from_fn);
    let bad = CooPlan::from_fn(40, 30, 3000, len, |c| {
        (c % 40, if c >= 1234 { 30 } else { 0 })
    });
    assert_eq!(
        bad.unwrap_err(),
        LinalgError::ContributionOutOfRange {
            index: 1234,
            row: 1234 % 40,
            col: 30,
            n_block_rows: 40,
            n_block_cols: 30
        }
    );
}

/// A vector's plan (one block column) is the plan of the same blocks in a wider matrix: the
/// same pattern rows, slot order and runs (its grouping takes a shortcut), rows left empty.
#[test]
fn one_column_plans_equal_the_general_grouping() {
    let mut rng = Rng::new(31);
    let (rows, _) = contributions(&mut rng, 50, 1, 4000);
    // rows 45.. and every seventh row empty
    let rows: Vec<u32> = rows
        .into_iter()
        .map(|r| match r {
            45.. => r - 40,
            r if r % 7 == 3 => r - 1,
            r => r,
        })
        .collect();
    for segment_len in [1, 13, 4000] {
        let len = NonZeroUsize::new(segment_len).unwrap();
        let one = CooPlan::from_fn(50, 1, rows.len(), len, |c| (rows[c] as usize, 0)).unwrap();
        let wide = CooPlan::from_fn(50, 3, rows.len(), len, |c| (rows[c] as usize, 0)).unwrap();
        let (p1, p3) = (one.pattern(), wide.pattern());
        assert_eq!((p1.row_ptr(), p1.col_idx()), (p3.row_ptr(), p3.col_idx()));
        assert_eq!(p1.n_block_cols(), 1);
        assert_eq!(p1.row_ptr()[45], p1.row_ptr()[50]);
        assert_eq!(p1.row_ptr()[3], p1.row_ptr()[4]);
        let (g1, g3) = (one.slot_order(), wide.slot_order());
        assert_eq!(
            (g1.slot_ptr, g1.contributions),
            (g3.slot_ptr, g3.contributions)
        );
        assert_eq!(
            one.runs().collect::<Vec<_>>(),
            wide.runs().collect::<Vec<_>>()
        );
    }
}

/// The plan's arrays: as built, one `u32` per contribution and one per slot boundary (the
/// grouping); once the runs exist, one `u32` per contribution, two per run and a bit, one
/// `usize` per segment boundary (the grouping dropped).
#[test]
fn heap_bytes_counts_the_plan_arrays() {
    let mut rng = Rng::new(25);
    let (rows, cols) = contributions(&mut rng, 30, 30, 1000);
    let plan =
        CooPlan::with_segments(30, 30, &rows, &cols, NonZeroUsize::new(64).unwrap()).unwrap();
    assert_eq!(plan.heap_bytes(), 4 * 1000 + 4 * (plan.pattern().nnz() + 1));
    let n_runs = plan.runs().count();
    assert_eq!(
        plan.heap_bytes(),
        4 * 1000
            + 4 * n_runs
            + 4 * (n_runs + 1)
            + 8 * n_runs.div_ceil(64)
            + 8 * (plan.n_segments() + 1)
    );
}

/// Segment sums must be added in order, with the right lengths, and all of them.
#[test]
fn segment_sum_errors_are_reported() {
    let rows = [0u32, 1, 1, 0, 1];
    let cols = [0u32, 1, 0, 0, 1];
    let plan = CooPlan::with_segments(2, 2, &rows, &cols, NonZeroUsize::new(2).unwrap()).unwrap();
    assert_eq!(plan.n_segments(), 3);
    assert_eq!(plan.segment_range(2), 4..5);
    let mut a = Bsr::zeros(plan.pattern().clone(), 1, 1);
    let mut sum = plan.begin(&mut a).unwrap();
    assert_eq!(sum.next_segment(), Some(0..2));
    assert_eq!(
        sum.add_segment(&[1.0]),
        Err(LinalgError::LengthMismatch {
            what: "CooSum segment values",
            expected: 2,
            found: 1
        })
    );
    sum.add_segment(&[1.0, 2.0]).unwrap();
    sum.add_segment(&[4.0, 8.0]).unwrap();
    let mut slots = [0.0; 3];
    let early = plan.begin_host(1, &mut slots).unwrap();
    assert_eq!(
        early.finish(),
        Err(LinalgError::DimensionMismatch {
            what: "CooSum segments added",
            expected: 3,
            found: 0
        })
    );
    sum.add_segment(&[16.0]).unwrap();
    assert_eq!(sum.next_segment(), None);
    assert_eq!(
        sum.add_segment(&[]),
        Err(LinalgError::DimensionMismatch {
            what: "CooSum segments added",
            expected: 3,
            found: 4
        })
    );
    sum.finish().unwrap();
    assert_eq!(a.to_dense().unwrap(), vec![1.0 + 8.0, 0.0, 4.0, 2.0 + 16.0]);
    let mut other = Bsr::from_dense(&[1.0, 1.0, 1.0, 1.0], 2, 2, 1, 1).unwrap();
    assert_eq!(
        plan.begin(&mut other).err(),
        Some(LinalgError::PatternMismatch {
            what: "CooPlan::begin"
        })
    );
}

#[test]
fn assemble_host_builds_vectors() {
    // Vector assembly: one block column, 3 values per contribution.
    let rows = [2u32, 0, 2, 2];
    let cols = [0u32; 4];
    let plan = CooPlan::new(4, 1, &rows, &cols).unwrap();
    let values: Vec<f64> = (0..12).map(f64::from).collect();
    let mut out = vec![0.0; plan.pattern().nnz() * 3];
    plan.assemble_host(&values, 3, &mut out).unwrap();
    assert_eq!(
        out,
        vec![
            3.0,
            4.0,
            5.0,
            0.0 + 6.0 + 9.0,
            1.0 + 7.0 + 10.0,
            2.0 + 8.0 + 11.0
        ]
    );
}

#[test]
fn errors_are_reported() {
    assert_eq!(
        CooPlan::new(2, 2, &[0, 1], &[0]).unwrap_err(),
        LinalgError::LengthMismatch {
            what: "CooPlan cols",
            expected: 2,
            found: 1
        }
    );
    assert_eq!(
        CooPlan::new(2, 2, &[0, 1, 1], &[0, 0, 2]).unwrap_err(),
        LinalgError::ContributionOutOfRange {
            index: 2,
            row: 1,
            col: 2,
            n_block_rows: 2,
            n_block_cols: 2
        }
    );
    let plan = CooPlan::new(2, 2, &[0, 1], &[0, 1]).unwrap();
    let mut wrong = Bsr::from_dense(&[1.0, 1.0, 0.0, 1.0], 2, 2, 1, 1).unwrap();
    assert_eq!(
        plan.assemble(&[1.0, 2.0], &mut wrong),
        Err(LinalgError::PatternMismatch {
            what: "CooPlan::assemble"
        })
    );
    let mut a = Bsr::zeros(plan.pattern().clone(), 1, 1);
    assert_eq!(
        plan.assemble(&[1.0], &mut a),
        Err(LinalgError::LengthMismatch {
            what: "CooPlan values",
            expected: 2,
            found: 1
        })
    );
    let mut out = [0.0; 3];
    assert_eq!(
        plan.assemble_host(&[1.0, 2.0], 1, &mut out),
        Err(LinalgError::LengthMismatch {
            what: "CooPlan output",
            expected: 2,
            found: 3
        })
    );
    // An equal (not shared) pattern is accepted.
    let mut b = Bsr::from_dense(&[1.0, 0.0, 0.0, 1.0], 2, 2, 1, 1).unwrap();
    plan.assemble(&[5.0, 6.0], &mut b).unwrap();
    assert_eq!(b.to_dense().unwrap(), vec![5.0, 0.0, 0.0, 6.0]);
    // No contributions: empty pattern.
    let empty = CooPlan::new(3, 3, &[], &[]).unwrap();
    assert_eq!(empty.pattern().nnz(), 0);
}

/// `slot_order` is each slot's contributions, ascending, as the serial regrouping of the runs
/// gives them (what the device sums read), for one and many segments and any thread count.
#[test]
fn slot_order_is_each_slots_contributions_ascending() {
    let mut rng = Rng::new(17);
    let (nbr, nbc, n) = (40, 33, 5000);
    let (rows, cols) = contributions(&mut rng, nbr, nbc, n);
    for segment_len in [1, 7, 64, 1000, n] {
        let segment = NonZeroUsize::new(segment_len).unwrap();
        let plan = CooPlan::with_segments(nbr, nbc, &rows, &cols, segment).unwrap();
        // as the construction grouped them, before any runs exist
        let grouped = plan.slot_order();
        // the serial regrouping of the runs, segment after segment
        let nnz = plan.pattern().nnz();
        let mut slot_ptr = vec![0u32; nnz + 1];
        for run in plan.runs() {
            slot_ptr[run.slot + 1] += run.contributions.len() as u32;
        }
        for s in 0..nnz {
            slot_ptr[s + 1] += slot_ptr[s];
        }
        let mut next = slot_ptr[..nnz].to_vec();
        let mut expected = vec![0u32; n];
        for run in plan.runs() {
            let base = (run.segment * plan.segment_len()) as u32;
            for &c in run.contributions {
                expected[next[run.slot] as usize] = base + c;
                next[run.slot] += 1;
            }
        }
        assert_eq!(grouped.slot_ptr, slot_ptr, "segments of {segment_len}");
        assert_eq!(grouped.contributions, expected, "segments of {segment_len}");
        // regrouped from the runs (the grouping is dropped once they exist)
        for threads in [1, 4] {
            let order = with_threads(threads, || plan.slot_order());
            assert_eq!(order.slot_ptr, slot_ptr, "segments of {segment_len}");
            assert_eq!(order.contributions, expected, "segments of {segment_len}");
        }
        // and each contribution sits in the slot of its block
        let (rp, ci) = (plan.pattern().row_ptr(), plan.pattern().col_idx());
        for s in 0..nnz {
            let row = rp.partition_point(|&p| p <= s) - 1;
            for &c in &expected[slot_ptr[s] as usize..slot_ptr[s + 1] as usize] {
                assert_eq!((rows[c as usize] as usize, cols[c as usize]), (row, ci[s]));
            }
        }
    }
}

/// Cells of `npc` distinct nodes drawn at random from `n_nodes` (the last nodes in no cell), in
/// random order.
fn random_cells(rng: &mut Rng, n_cells: usize, npc: usize, n_nodes: usize) -> Vec<usize> {
    let mut cells = Vec::with_capacity(n_cells * npc);
    for _ in 0..n_cells {
        let first = cells.len();
        while cells.len() < first + npc {
            let node = rng.below(n_nodes - 3);
            if !cells[first..].contains(&node) {
                cells.push(node);
            }
        }
    }
    cells
}

/// The element-block plan grouped from the cells around each node is the plan `from_fn` builds
/// for the same blocks (pattern, grouping, runs), for any thread count, whether or not the nodes'
/// plan was summed (its grouping dropped), and it sums to the same bits.
#[test]
fn cell_block_plans_equal_from_fn_plans() {
    let mut rng = Rng::new(26);
    for (npc, n_cells, n_nodes) in [(8, 700, 900), (27, 90, 600), (2, 2000, 300), (1, 50, 60)] {
        let cells = random_cells(&mut rng, n_cells, npc, n_nodes);
        let per_cell = npc * npc;
        let n = n_cells * per_cell;
        let values = rng.vec(n * 9);
        for cells_per_segment in [1, 7, n_cells] {
            let len = NonZeroUsize::new(cells_per_segment * per_cell).unwrap();
            let node_len = NonZeroUsize::new(cells_per_segment * npc).unwrap();
            let expected = CooPlan::from_fn(n_nodes, n_nodes, n, len, |c| {
                let (e, ab) = (c / per_cell, c % per_cell);
                (cells[e * npc + ab / npc], cells[e * npc + ab % npc])
            })
            .unwrap();
            let mut wanted = Bsr::zeros(expected.pattern().clone(), 3, 3);
            expected.assemble(&values, &mut wanted).unwrap();
            for threads in [1, 3] {
                for summed in [false, true] {
                    let plan = with_threads(threads, || {
                        let nodes =
                            CooPlan::from_fn(n_nodes, 1, cells.len(), node_len, |k| (cells[k], 0))
                                .unwrap();
                        if summed {
                            let mut out = vec![0.0; nodes.pattern().nnz()];
                            nodes
                                .assemble_host(&vec![1.0; cells.len()], 1, &mut out)
                                .unwrap();
                        }
                        CooPlan::of_cell_blocks(&nodes, &cells, npc, len).unwrap()
                    });
                    assert_eq!(plan, expected, "npc {npc}, {threads} threads");
                    assert!(plan.runs().eq(expected.runs()));
                    let mut got = Bsr::zeros(plan.pattern().clone(), 3, 3);
                    plan.assemble(&values, &mut got).unwrap();
                    assert!(got
                        .host()
                        .unwrap()
                        .iter()
                        .zip(wanted.host().unwrap())
                        .all(|(x, y)| x.to_bits() == y.to_bits()));
                }
            }
        }
    }
}

/// A node id past the nodes' plan and a nodes' plan of other cells are refused.
#[test]
fn cell_block_plan_errors_are_reported() {
    let cells = [0, 1, 2, 3, 2, 1];
    let len = NonZeroUsize::new(9).unwrap();
    let nodes = CooPlan::from_fn(4, 1, 6, len, |k| (cells[k], 0)).unwrap();
    let too_few = CooPlan::of_cell_blocks(&nodes, &cells[..3], 3, len);
    assert!(matches!(too_few, Err(LinalgError::LengthMismatch { .. })));
    let outside = CooPlan::of_cell_blocks(&nodes, &[0, 1, 2, 3, 4, 1], 3, len);
    assert_eq!(
        outside.unwrap_err(),
        LinalgError::ContributionOutOfRange {
            index: 4,
            row: 4,
            col: 0,
            n_block_rows: 4,
            n_block_cols: 1
        }
    );
}
