//! The built-in verification suite of `hexfem verify`: problems with known solutions, solved
//! through the same mesh, element, assembly, constraint and linear-solver code as `hexfem run`.
//!
//! Cases (each in its own module):
//! - [`patch`]: a linear displacement on a distorted mesh is reproduced to round-off (Q1, Q2,
//!   each also with the projected formulation at Poisson's ratio 0.4999);
//! - [`manufactured`]: convergence rates of L2 and H1-seminorm errors for a smooth manufactured
//!   solution of linear elasticity on the unit cube (Q1, Q2);
//! - [`timoshenko`]: the Timoshenko-Goodier end-loaded cantilever as a thin Q2 slab.
//!
//! Every case returns a [`CaseResult`]: a list of [`Check`]s, each a measured number, what it is
//! compared with and whether it passed. [`run_suite`] runs all cases; a case that fails to run
//! (a solver breakdown, say) is recorded as a failed case rather than aborting the suite. The
//! [`VerifyReport`] prints as the table of `hexfem verify`; the command exits non-zero unless
//! [`VerifyReport::passed`].

pub mod manufactured;
pub mod patch;
mod solve;
pub mod timoshenko;

use std::fmt;
use std::time::Instant;

use fem::Formulation;
use mesh::CellKind;
use serde::Serialize;

use crate::Result;

/// How a measured value is judged.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Criterion {
    /// Passes when `measured <= tolerance` (errors expected to vanish).
    AtMost { tolerance: f64 },
    /// Passes when `|measured - expected| <= tolerance`.
    Near { expected: f64, tolerance: f64 },
    /// Shown for context, never fails (for instance the rates of coarse mesh pairs).
    Info,
}

impl Criterion {
    /// Whether `measured` satisfies the criterion (NaN never does, except for `Info`).
    pub fn accepts(&self, measured: f64) -> bool {
        match *self {
            Criterion::AtMost { tolerance } => measured <= tolerance,
            Criterion::Near {
                expected,
                tolerance,
            } => (measured - expected).abs() <= tolerance,
            Criterion::Info => true,
        }
    }
}

/// One measured quantity of a case.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Check {
    pub quantity: String,
    pub measured: f64,
    pub criterion: Criterion,
    pub passed: bool,
}

impl Check {
    pub fn new(quantity: impl Into<String>, measured: f64, criterion: Criterion) -> Self {
        Check {
            quantity: quantity.into(),
            measured,
            passed: criterion.accepts(measured),
            criterion,
        }
    }
}

/// The outcome of one case.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CaseResult {
    pub case: String,
    pub checks: Vec<Check>,
    /// Why the case could not run to the end (then it fails whatever its checks say).
    pub error: Option<String>,
    pub seconds: f64,
}

impl CaseResult {
    /// True when the case ran and every check passed.
    pub fn passed(&self) -> bool {
        self.error.is_none() && self.checks.iter().all(|c| c.passed)
    }

    /// The check named `quantity`, if any.
    pub fn check(&self, quantity: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.quantity == quantity)
    }
}

/// The outcome of the whole suite, in case order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VerifyReport {
    pub cases: Vec<CaseResult>,
}

impl VerifyReport {
    /// True when every case passed.
    pub fn passed(&self) -> bool {
        self.cases.iter().all(CaseResult::passed)
    }

    /// Number of failed checks plus cases that did not run to the end.
    pub fn n_failures(&self) -> usize {
        self.cases
            .iter()
            .map(|c| c.checks.iter().filter(|k| !k.passed).count() + usize::from(c.error.is_some()))
            .sum()
    }
}

/// A named case of the suite.
pub struct Case {
    pub name: &'static str,
    run: fn() -> Result<CaseResult>,
}

impl Case {
    /// Runs the case, turning an error into a failed [`CaseResult`] and timing it.
    pub fn run(&self) -> CaseResult {
        let start = Instant::now();
        let mut result = (self.run)().unwrap_or_else(|e| CaseResult {
            case: self.name.to_owned(),
            checks: Vec::new(),
            error: Some(format!("{e:#}")),
            seconds: 0.0,
        });
        result.seconds = start.elapsed().as_secs_f64();
        result
    }
}

/// The cases of `hexfem verify`, in the order they run.
pub fn cases() -> Vec<Case> {
    vec![
        Case {
            name: patch::NAME_Q1,
            run: || patch::run(CellKind::Hex8, Formulation::Displacement),
        },
        Case {
            name: patch::NAME_Q2,
            run: || patch::run(CellKind::Hex27, Formulation::Displacement),
        },
        Case {
            name: patch::NAME_Q1_PROJECTED,
            run: || patch::run(CellKind::Hex8, Formulation::Projected),
        },
        Case {
            name: patch::NAME_Q2_PROJECTED,
            run: || patch::run(CellKind::Hex27, Formulation::Projected),
        },
        Case {
            name: manufactured::NAME_Q1,
            run: || manufactured::run(CellKind::Hex8, &manufactured::CELLS_Q1),
        },
        Case {
            name: manufactured::NAME_Q2,
            run: || manufactured::run(CellKind::Hex27, &manufactured::CELLS_Q2),
        },
        Case {
            name: timoshenko::NAME,
            run: timoshenko::run,
        },
    ]
}

/// Runs every case; `on_case` sees each result as soon as it is known (for progress output).
pub fn run_suite(mut on_case: impl FnMut(&CaseResult)) -> VerifyReport {
    let cases = cases()
        .iter()
        .map(|case| {
            let result = case.run();
            on_case(&result);
            result
        })
        .collect();
    VerifyReport { cases }
}

/// The table of `hexfem verify`: one row per check, a summary line last.
impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header = [
            "case",
            "quantity",
            "measured",
            "expected",
            "tolerance",
            "status",
        ];
        let mut rows: Vec<[String; 6]> = Vec::new();
        for case in &self.cases {
            for check in &case.checks {
                let (expected, tolerance) = match check.criterion {
                    Criterion::AtMost { tolerance } => {
                        ("0".to_owned(), format!("<= {tolerance:.1e}"))
                    }
                    Criterion::Near {
                        expected,
                        tolerance,
                    } => (
                        format_number(expected),
                        format!("+- {}", format_number(tolerance)),
                    ),
                    Criterion::Info => ("-".to_owned(), "-".to_owned()),
                };
                let status = match (check.criterion, check.passed) {
                    (Criterion::Info, _) => "info",
                    (_, true) => "PASS",
                    (_, false) => "FAIL",
                };
                rows.push([
                    case.case.clone(),
                    check.quantity.clone(),
                    format_number(check.measured),
                    expected,
                    tolerance,
                    status.to_owned(),
                ]);
            }
            if let Some(error) = &case.error {
                rows.push([
                    case.case.clone(),
                    format!("error: {error}"),
                    String::new(),
                    String::new(),
                    String::new(),
                    "FAIL".to_owned(),
                ]);
            }
        }
        let mut widths = header.map(str::len);
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.len());
            }
        }
        let line = |f: &mut fmt::Formatter<'_>, cells: [&str; 6]| -> fmt::Result {
            let [a, b, c, d, e, g] = cells;
            let [wa, wb, wc, wd, we, _] = widths;
            writeln!(f, "{a:<wa$}  {b:<wb$}  {c:>wc$}  {d:>wd$}  {e:<we$}  {g}")
        };
        line(f, header)?;
        for row in &rows {
            line(f, [&row[0], &row[1], &row[2], &row[3], &row[4], &row[5]])?;
        }
        let seconds: f64 = self.cases.iter().map(|c| c.seconds).sum();
        let failures = self.n_failures();
        let verdict = if failures == 0 {
            "all passed".to_owned()
        } else {
            format!("{failures} FAILED")
        };
        writeln!(
            f,
            "{} cases, {} checks, {verdict} ({seconds:.1} s)",
            self.cases.len(),
            rows.len()
        )
    }
}

/// Scientific notation for small and large magnitudes, fixed otherwise.
fn format_number(v: f64) -> String {
    if v == 0.0 || (1e-2..1e4).contains(&v.abs()) {
        format!("{v:.4}")
    } else {
        format!("{v:.4e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn criteria_judge_and_the_table_flags_failures() {
        assert!(Criterion::AtMost { tolerance: 1e-10 }.accepts(1e-12));
        assert!(!Criterion::AtMost { tolerance: 1e-10 }.accepts(f64::NAN));
        assert!(Criterion::Near {
            expected: 2.0,
            tolerance: 0.25
        }
        .accepts(1.8));
        assert!(!Criterion::Near {
            expected: 2.0,
            tolerance: 0.25
        }
        .accepts(1.7));
        let report = VerifyReport {
            cases: vec![CaseResult {
                case: "demo".into(),
                checks: vec![
                    Check::new(
                        "rate",
                        1.7,
                        Criterion::Near {
                            expected: 2.0,
                            tolerance: 0.25,
                        },
                    ),
                    Check::new("error", 1e-12, Criterion::AtMost { tolerance: 1e-10 }),
                ],
                error: None,
                seconds: 0.0,
            }],
        };
        assert!(!report.passed());
        assert_eq!(report.n_failures(), 1);
        let table = report.to_string();
        assert!(table.lines().nth(1).unwrap().ends_with("FAIL"), "{table}");
        assert!(table.lines().nth(2).unwrap().ends_with("PASS"), "{table}");
        assert!(table.contains("1 FAILED"), "{table}");
    }
}
