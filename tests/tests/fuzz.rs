//! A bounded fuzz run of the readers a user feeds: the shipped YAML inputs, Gmsh meshes and
//! campaign files, mutated (bytes flipped, lines dropped or repeated, numbers replaced by
//! extreme or non-finite ones, files cut short) with a fixed seed. Every mutant must be read to
//! a value or refused with an error message; none may panic.
//!
//! CI runs `FUZZ_CASES` mutants per file (about a second). Maintainers run longer with other
//! seeds: `HEXFEM_FUZZ_CASES=20000 HEXFEM_FUZZ_SEED=$RANDOM cargo test --release -p
//! hexfem-end-to-end --test fuzz` (the seed of a failure is in its message).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use hexfem_end_to_end::ScratchDir;

/// Mutants per corpus file in CI.
const FUZZ_CASES: usize = 300;

/// Numbers a careless or hostile user types.
const NUMBERS: [&str; 12] = [
    "0",
    "-1",
    "1e308",
    "-1e308",
    "1e-320",
    ".nan",
    ".inf",
    "18446744073709551615",
    "4294967296",
    "-0.0",
    "3.5",
    "1e6",
];

/// xorshift64*: small, fixed, reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One mutation of `text`.
fn mutate(text: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut out = text.to_vec();
    let rounds = 1 + rng.below(3);
    for _ in 0..rounds {
        if out.is_empty() {
            break;
        }
        match rng.below(5) {
            // flip a byte
            0 => {
                let i = rng.below(out.len());
                out[i] ^= 1 << rng.below(8);
            }
            // cut the file short
            1 => out.truncate(rng.below(out.len())),
            // drop or repeat a line
            2 | 3 => {
                let lines: Vec<&[u8]> = out.split(|&b| b == b'\n').collect();
                let k = rng.below(lines.len());
                let mut next = Vec::with_capacity(out.len() + 80);
                for (i, line) in lines.iter().enumerate() {
                    let times = if i != k {
                        1
                    } else if rng.below(2) == 0 {
                        0
                    } else {
                        2
                    };
                    for _ in 0..times {
                        next.extend_from_slice(line);
                        next.push(b'\n');
                    }
                }
                out = next;
            }
            // replace a number by one of `NUMBERS`
            _ => {
                let starts: Vec<usize> = (0..out.len())
                    .filter(|&i| {
                        out[i].is_ascii_digit() && (i == 0 || !out[i - 1].is_ascii_alphanumeric())
                    })
                    .collect();
                if starts.is_empty() {
                    continue;
                }
                let s = starts[rng.below(starts.len())];
                let e = (s..out.len())
                    .find(|&i| !(out[i].is_ascii_digit() || b".eE-+".contains(&out[i])))
                    .unwrap_or(out.len());
                let number = NUMBERS[rng.below(NUMBERS.len())].as_bytes();
                out.splice(s..e, number.iter().copied());
            }
        }
    }
    out
}

fn corpus(dir: &str, ext: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .{ext} files in {}", root.display());
    files
}

/// Runs `read` on `cases` mutants of each file of `files`; a panic fails the test naming the
/// seed, the file and the mutant (kept in the scratch directory).
fn fuzz(tag: &str, files: &[PathBuf], read: impl Fn(&Path)) {
    fuzz_texts(tag, files, |text| text.to_vec(), read)
}

/// [`fuzz`] of each file's text as `prepare` gives it.
fn fuzz_texts(
    tag: &str,
    files: &[PathBuf],
    prepare: impl Fn(&[u8]) -> Vec<u8>,
    read: impl Fn(&Path),
) {
    let seed: u64 = std::env::var("HEXFEM_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_0030);
    let cases: usize = std::env::var("HEXFEM_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(FUZZ_CASES);
    let dir = ScratchDir::new(&format!("fuzz-{tag}"));
    let mut rng = Rng(seed | 1);
    for file in files {
        let text = prepare(&std::fs::read(file).unwrap());
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        for case in 0..cases {
            let mutant = dir.join(format!("{case}-{name}"));
            std::fs::write(&mutant, mutate(&text, &mut rng)).unwrap();
            let outcome = catch_unwind(AssertUnwindSafe(|| read(&mutant)));
            assert!(
                outcome.is_ok(),
                "seed {seed}: mutant {case} of {} panicked (kept as {})",
                file.display(),
                mutant.display()
            );
            let _ = std::fs::remove_file(&mutant);
        }
    }
}

/// Input files: loaded, validated and converted to the problem's parameters (no mesh built:
/// a mutant may ask for a large one).
#[test]
fn mutated_inputs_are_read_or_refused_without_a_panic() {
    fuzz("yaml", &corpus("inputs", "yaml"), |path| {
        if let Ok(config) = config::load_with_overrides(path, &[]) {
            let _ = config.problem_params();
        }
    });
}

/// Gmsh meshes: read (a bounded size by construction: the mutants are no larger than the
/// shipped meshes, give or take a repeated line).
#[test]
fn mutated_gmsh_meshes_are_read_or_refused_without_a_panic() {
    fuzz("msh", &corpus("inputs/meshes", "msh"), |path| {
        let _ = solve::problem::read_mesh_file(path, 1.0);
    });
}

/// Campaign files: loaded and their cases expanded (bounded by the campaign's case limit).
#[test]
fn mutated_campaigns_are_read_or_refused_without_a_panic() {
    // the base input named by its absolute path, so that the mutant finds it from elsewhere
    let inputs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../inputs/campaigns");
    let absolute = |text: &[u8]| {
        let text = String::from_utf8_lossy(text);
        text.replace("base: ", &format!("base: {}/", inputs.display()))
            .into_bytes()
    };
    fuzz_texts(
        "campaign",
        &corpus("inputs/campaigns", "yaml"),
        absolute,
        |path| {
            let _ = config::campaign::Campaign::load(path);
        },
    );
}
