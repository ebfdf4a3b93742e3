//! Campaign files: a base input and the parameters that vary over its cases.
//!
//! ```yaml
//! base: cantilever_q1.yaml             # required; relative to the campaign file
//! directory: results/cantilever_sweep  # default: results/<campaign file stem>
//! set: { newton.rtol: 1.0e-10 }        # optional: the same overrides for every case
//! share_solver: true                   # default true: cases on one mesh reuse the AMG set-up
//! grid:                                # exactly one of grid | cases | latin_hypercube
//!   materials.0.young_modulus: [1.0e4, 2.0e4, 4.0e4]
//!   mesh.box.cells: [[20, 2, 2], [40, 4, 4]]
//! # cases: [{ materials.0.young_modulus: 1.0e4, loading.steps: 2 }, ...]
//! # latin_hypercube: { samples: 20, seed: 7, ranges: { materials.0.young_modulus: [1.0e4, 4.0e4] } }
//! ```
//!
//! Parameters are key paths of the input (`--set` syntax: `a.b`, `a[0].b` or `a.0.b`). A grid
//! runs every combination (the first parameter varies slowest); `cases` lists them; a Latin
//! hypercube draws `samples` points over the ranges, one per stratum of every range, from the
//! seed (the same seed gives the same cases); a range whose ends are both integers draws
//! integers. A campaign has at most [`MAX_CASES`] cases (checked before the design is
//! expanded). Every error names the campaign file, line and column; a case whose values the
//! input rejects is reported at the value in the campaign file ([`Campaign::case_config`]).

use std::fs;
use std::path::{Path, PathBuf};

use super::error::{ConfigError, ErrorKind};
use super::tree::{Node, Origin, Value};
use super::{load_str, Config};

/// A parsed campaign file.
#[derive(Clone, Debug)]
pub struct Campaign {
    /// The campaign file.
    pub file: PathBuf,
    text: String,
    /// The base input (resolved against the campaign file's directory).
    pub base: PathBuf,
    /// Where the cases' directories and the results table go.
    pub directory: PathBuf,
    /// Whether cases on the same mesh with the same solver options share the linear solver's
    /// set-up (AMG aggregates and prolongators).
    pub share_solver: bool,
    /// `set` overrides of every case, as `key.path=value`.
    common: Vec<(String, Origin)>,
    /// The varied parameters' key paths, in the file's order.
    pub parameters: Vec<String>,
    /// The cases, in order.
    pub cases: Vec<CaseSpec>,
}

/// One case: a value for each parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct CaseSpec {
    /// 0-based position in the campaign.
    pub index: usize,
    /// One value per parameter, in [`Campaign::parameters`] order.
    pub values: Vec<ParameterValue>,
}

/// A parameter's value in a case.
#[derive(Clone, Debug, PartialEq)]
pub struct ParameterValue {
    /// The key path.
    pub path: String,
    /// The value as JSON text (also valid YAML): `2.0e4` is `20000.0`, `[20, 2, 2]`.
    pub json: String,
    /// Where the value was written (or, for a drawn value, its range).
    pub origin: Origin,
}

impl ParameterValue {
    /// The override that sets it: `key.path=value`.
    pub fn override_arg(&self) -> String {
        format!("{}={}", self.path, self.json)
    }
}

/// Keys of a campaign file.
pub(crate) const KEYS: [&str; 7] = [
    "base",
    "directory",
    "set",
    "share_solver",
    "grid",
    "cases",
    "latin_hypercube",
];

/// Keys of `latin_hypercube`.
pub(crate) const LATIN_HYPERCUBE_KEYS: [&str; 3] = ["samples", "seed", "ranges"];

/// The most cases a campaign may have (a grid's product, a Latin hypercube's samples, a list's
/// length): beyond, expanding the design alone would take gigabytes.
pub const MAX_CASES: usize = 1_000_000;

impl Campaign {
    /// Reads and checks the campaign file at `path`.
    pub fn load(path: &Path) -> Result<Campaign, ConfigError> {
        let text = fs::read_to_string(path).map_err(|e| ConfigError::io(path, e))?;
        Campaign::parse(&text, path)
    }

    /// Parses campaign `text` as if read from `file`.
    pub fn parse(text: &str, file: &Path) -> Result<Campaign, ConfigError> {
        let root = Node::parse(text).map_err(|e| ConfigError::syntax(file, text, &e))?;
        let p = Parser { file, text };
        let entries = p.map(&root, "")?;
        for e in entries {
            if !KEYS.contains(&e.key.as_str()) {
                return Err(p.error(
                    &e.key_origin,
                    &e.key,
                    format!("unknown key `{}`; valid keys: {}", e.key, KEYS.join(", ")),
                    ErrorKind::Schema,
                ));
            }
        }
        let get = |key: &str| entries.iter().find(|e| e.key == key).map(|e| &e.value);
        let dir = file.parent().unwrap_or(Path::new(""));
        let base = match get("base") {
            Some(node) => dir.join(p.string(node, "base")?),
            None => {
                return Err(p.error(
                    &root.origin,
                    "",
                    "missing key `base` (the base input file)".into(),
                    ErrorKind::Schema,
                ))
            }
        };
        if let Some(problem) = super::validate::not_a_file(&base) {
            let node = get("base").expect("checked above");
            return Err(p.error(&node.origin, "base", problem, ErrorKind::Invalid));
        }
        let directory = match get("directory") {
            Some(node) => PathBuf::from(p.string(node, "directory")?),
            None => Path::new("results").join(
                file.file_stem()
                    .map_or("campaign".into(), |s| s.to_string_lossy().into_owned()),
            ),
        };
        let share_solver = match get("share_solver") {
            Some(node) => match node.value {
                Value::Bool(b) => b,
                _ => {
                    return Err(p.error(
                        &node.origin,
                        "share_solver",
                        format!("expected true or false, found {}", node.value.kind()),
                        ErrorKind::Schema,
                    ))
                }
            },
            None => true,
        };
        let mut common = Vec::new();
        if let Some(node) = get("set") {
            for e in p.map(node, "set")? {
                common.push((
                    format!("{}={}", e.key, to_json(&e.value)),
                    e.value.origin.clone(),
                ));
            }
        }
        let designs: Vec<&str> = ["grid", "cases", "latin_hypercube"]
            .into_iter()
            .filter(|k| get(k).is_some())
            .collect();
        if designs.len() != 1 {
            return Err(p.error(
                &root.origin,
                "",
                format!(
                    "give exactly one of `grid`, `cases`, `latin_hypercube` (found {})",
                    if designs.is_empty() {
                        "none".to_owned()
                    } else {
                        designs.join(", ")
                    }
                ),
                ErrorKind::Schema,
            ));
        }
        let (parameters, rows) = match designs[0] {
            "grid" => p.grid(get("grid").expect("present"))?,
            "cases" => p.list(get("cases").expect("present"))?,
            _ => p.latin_hypercube(get("latin_hypercube").expect("present"))?,
        };
        let cases = rows
            .into_iter()
            .enumerate()
            .map(|(index, values)| CaseSpec { index, values })
            .collect();
        Ok(Campaign {
            file: file.to_owned(),
            text: text.to_owned(),
            base,
            directory,
            share_solver,
            common,
            parameters,
            cases,
        })
    }

    /// The configuration of `case`: the base input with the `set` overrides and the case's
    /// values applied, validated. An error caused by a campaign value is reported at that value
    /// in the campaign file (with the case's number); one in the base input at the base input.
    pub fn case_config(&self, case: &CaseSpec) -> Result<Config, ConfigError> {
        let base_text =
            fs::read_to_string(&self.base).map_err(|e| ConfigError::io(&self.base, e))?;
        let mut overrides: Vec<String> = self.common.iter().map(|(arg, _)| arg.clone()).collect();
        overrides.extend(case.values.iter().map(ParameterValue::override_arg));
        load_str(&base_text, &self.base, &overrides).map_err(|e| self.relocate(case, e))
    }

    /// `error` moved to the campaign file when it names one of the campaign's overrides.
    pub fn relocate(&self, case: &CaseSpec, error: ConfigError) -> ConfigError {
        let Some(Origin::Override(arg)) = error.origin() else {
            return error;
        };
        let origin = self
            .common
            .iter()
            .find(|(a, _)| a == arg)
            .map(|(_, o)| o.clone())
            .or_else(|| {
                case.values
                    .iter()
                    .find(|v| v.override_arg() == *arg)
                    .map(|v| v.origin.clone())
            });
        match origin {
            Some(origin) => ConfigError::new(
                error.kind(),
                &self.file,
                Some(&self.text),
                Some(origin),
                error.key_path().map(str::to_owned),
                format!("case {}: {}", case.index, error.message()),
            ),
            None => error,
        }
    }

    /// A short description of a case's values: `materials.0.young_modulus=20000.0 ...`.
    pub fn describe(&self, case: &CaseSpec) -> String {
        case.values
            .iter()
            .map(ParameterValue::override_arg)
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Reads the parts of a campaign file, with errors placed in it.
struct Parser<'a> {
    file: &'a Path,
    text: &'a str,
}

/// Cases as rows of parameter values, with the parameters' paths.
type Design = (Vec<String>, Vec<Vec<ParameterValue>>);

impl Parser<'_> {
    fn error(&self, origin: &Origin, path: &str, message: String, kind: ErrorKind) -> ConfigError {
        ConfigError::new(
            kind,
            self.file,
            Some(self.text),
            Some(origin.clone()),
            (!path.is_empty()).then(|| path.to_owned()),
            message,
        )
    }

    fn map<'n>(&self, node: &'n Node, path: &str) -> Result<&'n [super::tree::Entry], ConfigError> {
        match &node.value {
            Value::Map(entries) => Ok(entries),
            other => Err(self.error(
                &node.origin,
                path,
                format!("expected a mapping, found {}", other.kind()),
                ErrorKind::Schema,
            )),
        }
    }

    fn seq<'n>(&self, node: &'n Node, path: &str) -> Result<&'n [Node], ConfigError> {
        match &node.value {
            Value::Seq(items) => Ok(items),
            other => Err(self.error(
                &node.origin,
                path,
                format!("expected a sequence, found {}", other.kind()),
                ErrorKind::Schema,
            )),
        }
    }

    fn string(&self, node: &Node, path: &str) -> Result<String, ConfigError> {
        match &node.value {
            Value::Str(s) if !s.is_empty() => Ok(s.clone()),
            other => Err(self.error(
                &node.origin,
                path,
                format!("expected a file or directory name, found {}", other.kind()),
                ErrorKind::Schema,
            )),
        }
    }

    fn number(&self, node: &Node, path: &str) -> Result<f64, ConfigError> {
        match node.value {
            Value::Int(i) => Ok(i as f64),
            Value::UInt(u) => Ok(u as f64),
            Value::Float(x) => Ok(x),
            ref other => Err(self.error(
                &node.origin,
                path,
                format!("expected a number, found {}", other.kind()),
                ErrorKind::Schema,
            )),
        }
    }

    /// A parameter's key path: a valid `--set` path, not repeated.
    fn parameter(
        &self,
        entry: &super::tree::Entry,
        seen: &mut Vec<String>,
    ) -> Result<String, ConfigError> {
        let probe = format!("{}=0", entry.key);
        if let Err(e) = Node::parse("{}").expect("valid").apply_override(&probe) {
            if e.path.is_empty() {
                return Err(self.error(
                    &entry.key_origin,
                    "",
                    format!("`{}` is not a key path: {}", entry.key, e.message),
                    ErrorKind::Schema,
                ));
            }
        }
        if seen.contains(&entry.key) {
            return Err(self.error(
                &entry.key_origin,
                &entry.key,
                "parameter given twice".into(),
                ErrorKind::Schema,
            ));
        }
        seen.push(entry.key.clone());
        Ok(entry.key.clone())
    }

    fn grid(&self, node: &Node) -> Result<Design, ConfigError> {
        let entries = self.map(node, "grid")?;
        if entries.is_empty() {
            return Err(self.error(
                &node.origin,
                "grid",
                "no parameters".into(),
                ErrorKind::Invalid,
            ));
        }
        let mut names = Vec::new();
        let mut axes = Vec::new();
        for e in entries {
            let name = self.parameter(e, &mut names)?;
            let values = self.seq(&e.value, &format!("grid.{name}"))?;
            if values.is_empty() {
                return Err(self.error(
                    &e.value.origin,
                    &format!("grid.{name}"),
                    "no values".into(),
                    ErrorKind::Invalid,
                ));
            }
            axes.push((name, values));
        }
        let lengths = axes.iter().map(|(_, v)| v.len());
        let total = self.case_count(node, "grid", lengths)?;
        let rows = (0..total)
            .map(|mut k| {
                let mut row = Vec::with_capacity(axes.len());
                // the last parameter varies fastest
                let mut picks = vec![0; axes.len()];
                for (a, (_, values)) in axes.iter().enumerate().rev() {
                    picks[a] = k % values.len();
                    k /= values.len();
                }
                for ((name, values), &i) in axes.iter().zip(&picks) {
                    row.push(ParameterValue {
                        path: name.clone(),
                        json: to_json(&values[i]),
                        origin: values[i].origin.clone(),
                    });
                }
                row
            })
            .collect();
        Ok((names, rows))
    }

    /// The number of cases of a design whose parameters take `lengths` values each (their
    /// product): an error at `node` where it exceeds [`MAX_CASES`] (checked before anything is
    /// expanded).
    fn case_count(
        &self,
        node: &Node,
        path: &str,
        lengths: impl Iterator<Item = usize>,
    ) -> Result<usize, ConfigError> {
        let product = lengths
            .map(|n| n as u128)
            .try_fold(1u128, |total, n| total.checked_mul(n));
        match product {
            Some(total) if total <= MAX_CASES as u128 => Ok(total as usize),
            _ => Err(self.error(
                &node.origin,
                path,
                format!(
                    "{} cases; a campaign has at most {MAX_CASES}",
                    product.map_or(format!("more than {}", u128::MAX), |t| t.to_string()),
                ),
                ErrorKind::Invalid,
            )),
        }
    }

    fn list(&self, node: &Node) -> Result<Design, ConfigError> {
        let items = self.seq(node, "cases")?;
        if items.is_empty() {
            return Err(self.error(&node.origin, "cases", "no cases".into(), ErrorKind::Invalid));
        }
        self.case_count(node, "cases", std::iter::once(items.len()))?;
        let mut names: Vec<String> = Vec::new();
        let mut rows = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let path = format!("cases[{i}]");
            let entries = self.map(item, &path)?;
            let mut seen = Vec::new();
            let mut row = Vec::new();
            for e in entries {
                let name = self.parameter(e, &mut seen)?;
                row.push(ParameterValue {
                    path: name,
                    json: to_json(&e.value),
                    origin: e.value.origin.clone(),
                });
            }
            if i == 0 {
                names = seen;
            } else if seen.len() != names.len() || seen.iter().any(|s| !names.contains(s)) {
                return Err(self.error(
                    &item.origin,
                    &path,
                    format!(
                        "every case sets the same parameters ({}); this one sets {}",
                        names.join(", "),
                        seen.join(", ")
                    ),
                    ErrorKind::Invalid,
                ));
            }
            // the order of the first case
            row.sort_by_key(|v| names.iter().position(|n| *n == v.path));
            rows.push(row);
        }
        Ok((names, rows))
    }

    fn latin_hypercube(&self, node: &Node) -> Result<Design, ConfigError> {
        let entries = self.map(node, "latin_hypercube")?;
        for e in entries {
            if !LATIN_HYPERCUBE_KEYS.contains(&e.key.as_str()) {
                return Err(self.error(
                    &e.key_origin,
                    &format!("latin_hypercube.{}", e.key),
                    format!(
                        "unknown key; valid keys: {}",
                        LATIN_HYPERCUBE_KEYS.join(", ")
                    ),
                    ErrorKind::Schema,
                ));
            }
        }
        let get = |key: &str| entries.iter().find(|e| e.key == key).map(|e| &e.value);
        let missing = |key: &str| {
            self.error(
                &node.origin,
                "latin_hypercube",
                format!("missing key `{key}`"),
                ErrorKind::Schema,
            )
        };
        let count = |key: &str| -> Result<u64, ConfigError> {
            let n = get(key).ok_or_else(|| missing(key))?;
            match n.value {
                Value::UInt(v) => Ok(v),
                Value::Int(v) if v >= 0 => Ok(v as u64),
                ref other => Err(self.error(
                    &n.origin,
                    &format!("latin_hypercube.{key}"),
                    format!("expected a non-negative integer, found {}", other.kind()),
                    ErrorKind::Schema,
                )),
            }
        };
        let samples = count("samples")?;
        let seed = count("seed")?;
        let samples_node = get("samples").ok_or_else(|| missing("samples"))?;
        if samples == 0 {
            return Err(self.error(
                &samples_node.origin,
                "latin_hypercube.samples",
                "must be >= 1".into(),
                ErrorKind::Invalid,
            ));
        }
        let samples = self.case_count(
            samples_node,
            "latin_hypercube.samples",
            std::iter::once(usize::try_from(samples).unwrap_or(usize::MAX)),
        )?;
        let ranges_node = get("ranges").ok_or_else(|| missing("ranges"))?;
        let ranges = self.map(ranges_node, "latin_hypercube.ranges")?;
        if ranges.is_empty() {
            return Err(self.error(
                &ranges_node.origin,
                "latin_hypercube.ranges",
                "no parameters".into(),
                ErrorKind::Invalid,
            ));
        }
        let mut names = Vec::new();
        let mut rows = vec![Vec::new(); samples];
        for (d, e) in ranges.iter().enumerate() {
            let name = self.parameter(e, &mut names)?;
            let path = format!("latin_hypercube.ranges.{name}");
            let ends = self.seq(&e.value, &path)?;
            if ends.len() != 2 {
                return Err(self.error(
                    &e.value.origin,
                    &path,
                    format!("expected [low, high], found {} values", ends.len()),
                    ErrorKind::Invalid,
                ));
            }
            let (lo, hi) = (self.number(&ends[0], &path)?, self.number(&ends[1], &path)?);
            if lo >= hi {
                return Err(self.error(
                    &e.value.origin,
                    &path,
                    format!("low {lo} must be below high {hi}"),
                    ErrorKind::Invalid,
                ));
            }
            let integer = ends
                .iter()
                .all(|n| matches!(n.value, Value::Int(_) | Value::UInt(_)));
            let mut rng = SplitMix64(seed ^ (d as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            // one sample per stratum, strata shuffled (Fisher-Yates)
            let mut strata: Vec<usize> = (0..samples).collect();
            for i in (1..samples).rev() {
                strata.swap(i, (rng.next() % (i as u64 + 1)) as usize);
            }
            for (row, &stratum) in rows.iter_mut().zip(&strata) {
                let t = (stratum as f64 + rng.unit()) / samples as f64;
                let json = if integer {
                    // integers lo..=hi, each stratum a share of the hi - lo + 1 values
                    let v = (lo + (t * (hi - lo + 1.0)).floor()).min(hi);
                    format!("{}", v as i64)
                } else {
                    format!("{:?}", lo + t * (hi - lo))
                };
                row.push(ParameterValue {
                    path: name.clone(),
                    json,
                    origin: e.value.origin.clone(),
                });
            }
        }
        Ok((names, rows))
    }
}

/// SplitMix64 (Steele, Lea, Flood): a small, fixed generator, so a seed means the same cases
/// on every machine and version.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)` (53 random bits).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A YAML value as JSON text (valid YAML too): numbers in their shortest round-trip form.
fn to_json(node: &Node) -> String {
    match &node.value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(x) => format!("{x:?}"),
        Value::Str(s) => quote(s),
        Value::Seq(items) => format!(
            "[{}]",
            items.iter().map(to_json).collect::<Vec<_>>().join(", ")
        ),
        Value::Map(entries) => format!(
            "{{{}}}",
            entries
                .iter()
                .map(|e| format!("{}: {}", quote(&e.key), to_json(&e.value)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// `s` as a JSON string literal.
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Result<Campaign, ConfigError> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../inputs");
        Campaign::parse(
            &format!("base: cantilever_q1.yaml\n{body}"),
            &dir.join("study.yaml"),
        )
    }

    fn values(c: &Campaign, p: usize) -> Vec<String> {
        c.cases
            .iter()
            .map(|case| case.values[p].json.clone())
            .collect()
    }

    /// The same seed gives the same cases; another seed others; every range is cut into
    /// `samples` strata with exactly one sample in each; integer ranges draw integers.
    #[test]
    fn latin_hypercube_is_reproducible_and_stratified() {
        let body = |seed: u64| {
            format!("latin_hypercube:\n  samples: 10\n  seed: {seed}\n  ranges:\n    materials.0.young_modulus: [1.0e3, 2.0e3]\n    loading.steps: [1, 10]\n")
        };
        let a = parse(&body(7)).unwrap();
        let b = parse(&body(7)).unwrap();
        let c = parse(&body(8)).unwrap();
        assert_eq!(a.cases, b.cases);
        assert_ne!(values(&a, 0), values(&c, 0));
        assert_eq!(a.parameters, ["materials.0.young_modulus", "loading.steps"]);
        let mut strata: Vec<usize> = values(&a, 0)
            .iter()
            .map(|v| ((v.parse::<f64>().unwrap() - 1.0e3) / 1.0e3 * 10.0) as usize)
            .collect();
        strata.sort_unstable();
        assert_eq!(strata, (0..10).collect::<Vec<_>>());
        let mut steps: Vec<i64> = values(&a, 1).iter().map(|v| v.parse().unwrap()).collect();
        steps.sort_unstable();
        assert_eq!(
            steps,
            (1..=10).collect::<Vec<_>>(),
            "10 integers over 10 strata"
        );
        // the two columns are not drawn in the same order
        assert_ne!(
            (0..10)
                .map(|i| a.cases[i].values[1].json.clone())
                .collect::<Vec<_>>(),
            {
                let mut sorted = values(&a, 1);
                sorted.sort_by_key(|v| v.parse::<i64>().unwrap());
                sorted
            }
        );
        // values are valid input values
        let config = a.case_config(&a.cases[3]).unwrap();
        assert_eq!(config.loading.steps.to_string(), a.cases[3].values[1].json);
    }

    /// A grid of `lengths` values per parameter (one parameter per length).
    fn grid_of(lengths: &[usize]) -> String {
        let mut body = "grid:\n".to_owned();
        for (p, &n) in lengths.iter().enumerate() {
            let values: Vec<String> = (0..n).map(|v| v.to_string()).collect();
            body.push_str(&format!("  p{p}.v: [{}]\n", values.join(", ")));
        }
        body
    }

    /// A design of more than `MAX_CASES` cases is refused before it is expanded, at its line and
    /// column, with the count and the limit (main before issue 30: a 9-parameter grid of 10
    /// values ate 20 GB; 2^64 samples panicked with a capacity overflow).
    #[test]
    fn more_cases_than_the_limit_are_refused() {
        let e = parse(&grid_of(&[1001, 1000])).unwrap_err().to_string();
        assert!(
            e.contains("study.yaml:3:3") && e.contains("1001000 cases") && e.contains("1000000"),
            "{e}"
        );
        let e = parse(&grid_of(&[10; 9])).unwrap_err().to_string();
        assert!(
            e.contains("study.yaml:3:3") && e.contains("1000000000 cases"),
            "{e}"
        );
        let e = parse(&grid_of(&[10; 40])).unwrap_err().to_string();
        assert!(
            e.contains("study.yaml:3:3") && e.contains("more than"),
            "{e}"
        );
        let lhs = |samples: &str| {
            format!("latin_hypercube:\n  samples: {samples}\n  seed: 1\n  ranges: {{ loading.steps: [1, 9] }}\n")
        };
        for samples in ["1000001", "1000000000", "18446744073709551615"] {
            let e = parse(&lhs(samples)).unwrap_err().to_string();
            assert!(
                e.contains("study.yaml:3:12") && e.contains(samples) && e.contains("1000000"),
                "{e}"
            );
        }
    }

    /// A grid is the product, the last parameter fastest; a list keeps its cases; the values
    /// keep their origins; `set` applies to every case.
    #[test]
    fn grid_and_list_designs() {
        let g = parse("set: { newton.rtol: 1.0e-9 }\ngrid:\n  materials.0.young_modulus: [1.0, 2.0]\n  mesh.box.cells: [[2, 1, 1], [4, 1, 1], [8, 1, 1]]\n").unwrap();
        assert_eq!(g.cases.len(), 6);
        assert_eq!(values(&g, 0), ["1.0", "1.0", "1.0", "2.0", "2.0", "2.0"]);
        assert_eq!(values(&g, 1)[..3], ["[2, 1, 1]", "[4, 1, 1]", "[8, 1, 1]"]);
        assert_eq!(
            g.cases[4].values[1].origin,
            Origin::File {
                line: 5,
                column: 31
            }
        );
        let config = g.case_config(&g.cases[5]).unwrap();
        assert_eq!(config.newton.rtol, 1.0e-9);
        let l = parse("cases:\n  - { loading.steps: 2, newton.rtol: 1.0e-6 }\n  - { newton.rtol: 1.0e-7, loading.steps: 3 }\n").unwrap();
        assert_eq!(values(&l, 0), ["2", "3"]);
        assert_eq!(values(&l, 1), ["1e-6", "1e-7"]);
        let e =
            parse("cases:\n  - { loading.steps: 2 }\n  - { newton.rtol: 1.0e-7 }\n").unwrap_err();
        assert!(e.to_string().contains("study.yaml:4:5"), "{e}");
        let e = parse("grid: { a..b: [1] }\n").unwrap_err();
        assert!(e.to_string().contains("not a key path"), "{e}");
        let e = parse("share_solver: 3\ngrid: { loading.steps: [1] }\n").unwrap_err();
        assert!(e.to_string().contains("study.yaml:2:15"), "{e}");
        assert!(
            parse("grid: { loading.steps: [1] }\n")
                .unwrap()
                .share_solver
        );
    }
}
