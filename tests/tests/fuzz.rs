//! A bounded fuzz run of the readers a user feeds: the shipped YAML inputs, Gmsh meshes and
//! campaign files, mutated (bytes flipped, lines dropped or repeated, numbers replaced by
//! extreme or non-finite ones, files cut short) with a fixed seed. Every mutant must be read to
//! a value or refused with an error message; none may panic. Restart files (a small run's
//! results, changed through the HDF5 library or byte by byte) must be refused naming the file
//! and the step, or continue to the unmutated file's result.
//!
//! CI runs `FUZZ_CASES` mutants per file (about a second) and `FUZZ_CASES / RESTART_SHARE`
//! restarts. Maintainers run longer with other seeds: `HEXFEM_FUZZ_CASES=20000
//! HEXFEM_FUZZ_SEED=$RANDOM cargo test --release -p hexfem-end-to-end --test fuzz` (the seed of
//! a failure is in its message).

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

/// One restart is run per this many mutants of a text file (a restart solves load steps).
const RESTART_SHARE: usize = 10;

/// The fuzz run's seed and mutants per file (`HEXFEM_FUZZ_SEED`, `HEXFEM_FUZZ_CASES`).
fn seed_and_cases() -> (u64, usize) {
    let seed: u64 = std::env::var("HEXFEM_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_0030);
    let cases: usize = std::env::var("HEXFEM_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(FUZZ_CASES);
    (seed, cases)
}

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
    let (seed, cases) = seed_and_cases();
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

/// The restarted run: the twisted column, small, in three steps, continued from step 2.
const RESTART_OVERRIDES: [&str; 2] = ["mesh.box.cells=[2, 2, 6]", "loading.steps=3"];
const RESTART_STEP: usize = 2;

/// A restart of `input` from `spec` into `dir`: the last step's displacement, or the error.
fn restart_from(input: &Path, dir: &Path, spec: Option<String>) -> Result<Vec<f64>, String> {
    let mut options = hexfem_end_to_end::run_options(input, dir).with_overrides(RESTART_OVERRIDES);
    if let Some(spec) = spec {
        options = options.with_restart(spec);
    }
    let outcome = hexfem_end_to_end::run(&options, &sim::Quiet).map_err(|e| format!("{e:#}"))?;
    let reader = io::ResultsReader::open(&outcome.h5).map_err(|e| e.to_string())?;
    let path = format!("/steps/{:06}/displacement", outcome.steps);
    Ok(reader.read_f64(&path).map_err(|e| e.to_string())?.1)
}

/// The state a restart reads from step `step` of `h5`: its attributes and displacement, bit
/// patterns (`None` where it cannot be read).
fn restart_state(h5: &Path, step: usize) -> Option<Vec<u64>> {
    let reader = io::ResultsReader::open(h5).ok()?;
    let mut state = Vec::new();
    for name in ["load_factor", "time", "next_increment"] {
        state.push(reader.step_attribute(step, name).ok()??.to_bits());
    }
    let (_, u) = reader
        .read_f64(&format!("/steps/{step:06}/displacement"))
        .ok()?;
    let (_, x) = reader.read_f64("/mesh/coordinates").ok()?;
    state.extend(u.iter().chain(&x).map(|v| v.to_bits()));
    Some(state)
}

/// Values a damaged attribute or displacement takes.
const DAMAGED: [f64; 10] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    -1.0,
    0.0,
    5.0,
    1e308,
    1e-320,
    2.0,
    0.5,
];

/// One mutation of the results file `h5` (changed in place) through the HDF5 library or its
/// bytes; what was done, for the failure message.
fn mutate_results(h5: &Path, rng: &mut Rng) -> String {
    let pick = |rng: &mut Rng| DAMAGED[rng.below(DAMAGED.len())];
    let kind = rng.below(7);
    if kind >= 5 {
        let mut bytes = std::fs::read(h5).unwrap();
        if kind == 5 {
            let at = rng.below(bytes.len());
            bytes.truncate(at);
            std::fs::write(h5, bytes).unwrap();
            return format!("cut short at byte {at}");
        }
        // a flipped bit; in the step's displacement only in a value's upper three bytes (a
        // change of at least 2^-12 of it: a file without checksums cannot show smaller ones)
        let raw = hdf5::File::open(h5)
            .ok()
            .and_then(|f| {
                f.dataset(&format!("steps/{RESTART_STEP:06}/displacement"))
                    .ok()
            })
            .and_then(|d| Some((d.offset()? as usize, d.storage_size() as usize)));
        let mut at = rng.below(bytes.len());
        if let Some((start, len)) = raw {
            if (start..start + len).contains(&at) && (at - start) % 8 < 5 {
                at += 5 - (at - start) % 8;
            }
        }
        let bit = rng.below(8);
        if at < bytes.len() {
            bytes[at] ^= 1 << bit;
        }
        std::fs::write(h5, bytes).unwrap();
        return format!("bit {bit} of byte {at} flipped");
    }
    let file = hdf5::File::open_rw(h5).unwrap();
    let step = file.group(&format!("steps/{RESTART_STEP:06}")).unwrap();
    let what = match kind {
        // an attribute of the step, or of the step before it, replaced
        0 => {
            let group = if rng.below(4) == 0 {
                file.group(&format!("steps/{:06}", RESTART_STEP - 1))
                    .unwrap()
            } else {
                step
            };
            let name = ["load_factor", "time", "next_increment"][rng.below(3)];
            let value = pick(rng);
            let attr = group.attr(name).unwrap();
            let old: f64 = attr.read_scalar().unwrap();
            let new = if value == 2.0 || value == 0.5 {
                old * value
            } else {
                value
            };
            attr.write_scalar(&new).unwrap();
            format!("{}.{name} = {new}", group.name())
        }
        // a displacement entry replaced, or a bit of it (sign, exponent, upper mantissa) flipped
        1 | 2 => {
            let dataset = step.dataset("displacement").unwrap();
            let mut u: Vec<f64> = dataset.read_raw().unwrap();
            let i = rng.below(u.len());
            let new = if kind == 1 {
                let value = pick(rng);
                if value == 2.0 || value == 0.5 {
                    u[i] * value
                } else {
                    value
                }
            } else {
                f64::from_bits(u[i].to_bits() ^ (1 << (40 + rng.below(24))))
            };
            u[i] = new;
            dataset.write_raw(&u).unwrap();
            format!("displacement[{i}] = {new:e}")
        }
        // something the restart reads removed
        3 => {
            let (group, name) = match rng.below(4) {
                0 => (step, "displacement"),
                1 => (step, "next_increment"),
                2 => (step, "time"),
                _ => (file.group("mesh").unwrap(), "coordinates"),
            };
            if group.attr(name).is_ok() {
                group.delete_attr(name).unwrap();
            } else {
                group.unlink(name).unwrap();
            }
            format!("{}/{name} removed", group.name())
        }
        // the displacement rewritten in another type or shape
        _ => {
            let u: Vec<f64> = step.dataset("displacement").unwrap().read_raw().unwrap();
            step.unlink("displacement").unwrap();
            let n = u.len() / 3;
            match rng.below(3) {
                0 => {
                    let f: Vec<f32> = u.iter().map(|&v| v as f32).collect();
                    let d = step.new_dataset::<f32>().shape([n, 3]);
                    d.create("displacement").unwrap().write_raw(&f).unwrap();
                    "displacement as float32".into()
                }
                1 => {
                    let d = step.new_dataset::<f64>().shape([3 * n]);
                    d.create("displacement").unwrap().write_raw(&u).unwrap();
                    "displacement flattened".into()
                }
                _ => {
                    let d = step.new_dataset::<f64>().shape([n - 1, 3]);
                    d.create("displacement")
                        .unwrap()
                        .write_raw(&u[..3 * n - 3])
                        .unwrap();
                    "displacement one node short".into()
                }
            }
        }
    };
    file.close().unwrap();
    what
}

/// Restart files: copies of a small run's results mutated (attributes, displacement values,
/// types and shapes changed, datasets removed, bits flipped, files cut short). `--restart` must
/// refuse each, naming the file and the step, or, where the state it continues from is intact
/// (the mutation hit something it does not use), give the unmutated file's result bit for bit.
/// A changed state that is accepted must be one the equilibrium check cannot resolve: the
/// result within 1e-6 of the unmutated one's largest displacement.
#[test]
fn mutated_restart_files_are_refused_by_name_or_give_the_unmutated_result() {
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("../inputs/twisting_column.yaml");
    let dir = ScratchDir::new("fuzz-restart");
    let out = dir.join("out");
    restart_from(&input, &dir, None).unwrap();
    let h5 = dir.join("twisting_column.h5");
    let spec = |file: &Path| format!("{}:{RESTART_STEP}", file.display());
    let expected = restart_from(&input, &out, Some(spec(&h5))).unwrap();
    let scale = expected.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let original = restart_state(&h5, RESTART_STEP).unwrap();
    let (seed, cases) = seed_and_cases();
    let mut rng = Rng(seed | 1);
    let (mut refused, mut intact, mut unresolved) = (0, 0, 0);
    for case in 0..cases.div_ceil(RESTART_SHARE) {
        let mutant = dir.join(format!("{case}.h5"));
        std::fs::copy(&h5, &mutant).unwrap();
        let what = mutate_results(&mutant, &mut rng);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            restart_from(&input, &out, Some(spec(&mutant)))
        }));
        let context = format!("seed {seed}: restart mutant {case} ({what})");
        match outcome {
            Err(_) => panic!("{context} panicked"),
            Ok(Err(e)) => {
                let file = mutant.display();
                assert!(
                    e.contains(&format!("--restart {file}:{RESTART_STEP}"))
                        || e.contains(&format!("--restart {file}: step {RESTART_STEP} ")),
                    "{context}: the error names neither the file nor the step: {e}"
                );
                refused += 1;
            }
            Ok(Ok(u)) if restart_state(&mutant, RESTART_STEP).as_ref() == Some(&original) => {
                let same = u.len() == expected.len()
                    && u.iter()
                        .zip(&expected)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{context}: an intact state gave another result");
                intact += 1;
            }
            Ok(Ok(u)) => {
                let off = u
                    .iter()
                    .zip(&expected)
                    .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                assert!(
                    u.len() == expected.len() && off <= 1e-6 * scale,
                    "{context}: a damaged state was accepted (result off by {off:e}, largest displacement {scale:e})"
                );
                unresolved += 1;
            }
        }
        let _ = std::fs::remove_file(&mutant);
    }
    eprintln!("restart mutants: {refused} refused, {intact} intact, {unresolved} below resolution");
}
