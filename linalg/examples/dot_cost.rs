//! Cost of the host dot products: the exact, order-independent `ops::dot` (rounded products
//! summed by `linalg::exact::ExactSum`) against the former chunked floating-point sum
//! (`ops::dot_in_chunks`) and plain one-thread loops, per entry, on 2^20 entries with exponents
//! spread over 2^-60..2^60 and cancellation. Prints one JSON object.
//!
//! `cargo run --release -p hexfem-linalg --example dot_cost [-- ENTRIES [REPEATS]]`

use std::time::Instant;

use linalg::exact::ExactSum;
use linalg::hash::SplitMix64;
use linalg::{ops, Vector};

/// One way of computing the dot product.
type DotFn<'a> = &'a dyn Fn() -> Result<f64, linalg::LinalgError>;

fn terms(n: usize, seed: u64) -> Vec<f64> {
    let mut g = SplitMix64(seed);
    (0..n)
        .map(|i| {
            let scale = 2f64.powi((g.next_u64() % 120) as i32 - 60);
            let t = g.next_signed_unit() * scale;
            if i % 7 == 0 {
                -t * 1e10
            } else {
                t
            }
        })
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(Ok(1 << 20), |a| a.parse())?;
    let repeats: usize = args.next().map_or(Ok(20), |a| a.parse())?;
    if n == 0 || repeats == 0 {
        return Err("ENTRIES and REPEATS must be positive".into());
    }
    let (xs, ys) = (terms(n, 1), terms(n, 2));
    let (x, y) = (Vector::from_vec(xs.clone()), Vector::from_vec(ys.clone()));
    let plain =
        || -> Result<f64, linalg::LinalgError> { Ok(xs.iter().zip(&ys).map(|(a, b)| a * b).sum()) };
    let serial_exact = || -> Result<f64, linalg::LinalgError> {
        Ok(ExactSum::of(xs.iter().zip(&ys).map(|(a, b)| a * b)).value())
    };
    let chunked = || ops::dot_in_chunks(&x, &y);
    let exact = || ops::dot(&x, &y);
    let cases: [(&str, DotFn); 4] = [
        ("plain_one_thread", &plain),
        ("exact_one_thread", &serial_exact),
        ("chunked_rayon", &chunked),
        ("exact_rayon_ops_dot", &exact),
    ];
    let mut fields = Vec::new();
    let mut sink = 0.0;
    for (name, f) in cases {
        sink += f()?; // warm-up
        let t = Instant::now();
        for _ in 0..repeats {
            sink += f()?;
        }
        let ns = t.elapsed().as_secs_f64() * 1e9 / (repeats * n) as f64;
        fields.push(format!("\"{name}_ns_per_entry\": {ns:.3}"));
    }
    println!(
        "{{\"entries\": {n}, \"repeats\": {repeats}, \"threads\": {}, {}, \"checksum\": {sink:e}}}",
        rayon::current_num_threads(),
        fields.join(", ")
    );
    Ok(())
}
