//! What the renewal tests (host and device) share: a second near-null space and operator for
//! the next "load step", and the check that a renewed hierarchy is a cold set-up's, bit for bit.

use amg::{Hierarchy, NearNullSpace, Preconditioner};
use linalg::{Bsr, Precision, Vector};

/// The modes of the next load step: `B R + eps N` with `R` a fixed well-conditioned mix of the
/// columns and `N` pseudo-random (as the rigid-body modes of a deformed configuration differ
/// from the reference ones by a rotation and a perturbation).
pub fn next_modes(b: &NearNullSpace, seed: u64) -> NearNullSpace {
    let (n, k) = (b.n_rows(), b.n_vectors());
    let noise = pseudo_random(n * k, seed);
    let old = b.row_major().unwrap();
    let mut values = vec![0.0; n * k];
    for i in 0..n {
        for j in 0..k {
            let mut v = old[i * k + j];
            for c in 0..k {
                if c != j {
                    v += 0.1 * ((c + 2 * j) % 3) as f64 * old[i * k + c];
                }
            }
            values[i * k + j] = v + 1e-2 * noise[i * k + j];
        }
    }
    NearNullSpace::from_row_major(n, k, values).unwrap()
}

/// A tangent of new values on the same pattern: every diagonal block plus `s` times the
/// identity (edge weights change, and with them, in general, the aggregates).
pub fn shifted(a: &Bsr, s: f64) -> Bsr {
    let mut a = a.clone();
    let bs = a.block_rows();
    for k in a.pattern().diagonal_positions().unwrap() {
        let blk = a.host_block_mut(k).unwrap();
        for c in 0..bs {
            blk[(bs + 1) * c] += s;
        }
    }
    a
}

/// `a` with the couplings among its first `n` block rows weakened a hundredfold (the blocks
/// `(i, j)`, `i != j`, both below `n`): where a positive `strength_threshold` dropped none of
/// them, it now drops them, so the strength graph, and with it the aggregates, change.
pub fn weakened(a: &Bsr, n: usize) -> Bsr {
    let mut a = a.clone();
    let (row_ptr, cols) = (
        a.pattern().row_ptr().to_vec(),
        a.pattern().col_idx().to_vec(),
    );
    for i in 0..n.min(row_ptr.len() - 1) {
        for (k, &j) in cols
            .iter()
            .enumerate()
            .take(row_ptr[i + 1])
            .skip(row_ptr[i])
        {
            if j as usize != i && (j as usize) < n {
                for x in a.host_block_mut(k).unwrap().iter_mut() {
                    *x *= 0.01;
                }
            }
        }
    }
    a
}

/// A tangent of new values whose strength graph is the old one bit for bit (twice `a`: the
/// block norms double exactly), so that the finest aggregates cannot change.
pub fn doubled(a: &Bsr) -> Bsr {
    let mut a = a.clone();
    a.scale(2.0).unwrap();
    a
}

/// `n` values in `[-0.5, 0.5)` (xorshift).
pub fn pseudo_random(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.max(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        })
        .collect()
}

/// The values of `m` as fp64 bits (fp32 values widened, which is exact), wherever `m` lives.
fn bits(m: &Bsr) -> Vec<u64> {
    let wide = m.to_precision(Precision::Double).unwrap();
    wide.to_host_vec()
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect()
}

/// Asserts that `renewed` equals `cold` bit for bit: levels, aggregates, every level's operator
/// (`fine` where the hierarchies hold none), prolongator, smoother (eigenvalue estimate and
/// diagonal inverses) and the output of one V-cycle on `fine` for a pseudo-random residual.
pub fn assert_same_hierarchy(renewed: &Hierarchy, cold: &Hierarchy, fine: &Bsr, what: &str) {
    assert_eq!(renewed.n_levels(), cold.n_levels(), "{what}: levels");
    for l in 0..cold.n_levels() {
        match (renewed.operator(l), cold.operator(l)) {
            (Some(x), Some(y)) => {
                assert_eq!(x.pattern(), y.pattern(), "{what}: pattern of A_{l}");
                assert_eq!(x.precision(), y.precision(), "{what}: precision of A_{l}");
                assert!(bits(x) == bits(y), "{what}: A_{l} differs");
            }
            (None, None) => {}
            _ => panic!("{what}: A_{l} held by one hierarchy only"),
        }
        if let (Some(x), Some(y)) = (renewed.prolongator(l), cold.prolongator(l)) {
            assert_eq!(x.pattern(), y.pattern(), "{what}: pattern of P_{l}");
            assert_eq!(x.precision(), y.precision(), "{what}: precision of P_{l}");
            assert!(bits(x) == bits(y), "{what}: P_{l} differs");
        }
        assert_eq!(
            renewed.aggregates(l),
            cold.aggregates(l),
            "{what}: aggregates {l}"
        );
        match (renewed.smoother(l), cold.smoother(l)) {
            (Some(x), Some(y)) => {
                assert_eq!(x.emax.to_bits(), y.emax.to_bits(), "{what}: emax of {l}");
                let inv = |s: &amg::smoother::Smoother| {
                    let d = s.pbj.inverse().to_precision(Precision::Double).unwrap();
                    let v = d.to_host_vec().unwrap();
                    v.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
                };
                assert!(inv(x) == inv(y), "{what}: D^-1 of level {l} differs");
            }
            (None, None) => {}
            _ => panic!("{what}: smoother of level {l} in one hierarchy only"),
        }
    }
    let device = fine.device();
    let r = Vector::from_vec(pseudo_random(fine.n_rows(), 7))
        .to_device(&device)
        .unwrap();
    let cycle = |h: &Hierarchy| {
        let mut z = Vector::zeros_on(&device, r.len()).unwrap();
        h.with_operator(fine).unwrap().apply(&r, &mut z).unwrap();
        z.to_host_vec()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect::<Vec<_>>()
    };
    assert!(
        cycle(renewed) == cycle(cold),
        "{what}: V-cycle outputs differ"
    );
}
