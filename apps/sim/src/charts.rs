//! What `hexfem plot` draws, as data: the default charts of a run (its summary and probes'
//! table) and of a campaign (its results table), each a titled set of series that any front end
//! renders (the command line as PNG and SVG).

use std::collections::BTreeMap;
use std::path::Path;

use crate::campaign::{CaseRow, CaseStatus};
use crate::error::fail;
use crate::error::Context;
use crate::Result;

/// A line of a chart.
#[derive(Clone, Debug)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// A chart: titled axes and lines.
#[derive(Clone, Debug)]
pub struct Chart {
    /// The file name of its pictures, without extension (`<run>.residuals`, `campaign_<y>`).
    pub name: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Logarithmic y axis (non-positive values are left out).
    pub log_y: bool,
    /// Join the points of a series by lines (else points only).
    pub lines: bool,
    pub series: Vec<Series>,
}

/// The default charts of a run (its `<name>.summary.json` and, beside it, `<name>.probes.csv`):
/// the Newton residual history, named `<name>.residuals`, and the probes against the load
/// factor, `<name>.probe_<probe>[_u|_f|_m]` (displacement, reaction force, reaction moment: one
/// chart each). None for residuals that are all zero.
pub fn run_charts(summary_path: &Path) -> Result<Vec<Chart>> {
    let summary = io::Summary::read(summary_path)
        .with_context(|| format!("reading {}", summary_path.display()))?;
    let name = summary_path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".summary.json"))
        .with_context(|| format!("{}: not a <name>.summary.json file", summary_path.display()))?
        .to_owned();
    let steps = summary.steps.unwrap_or_default();
    let mut charts = Vec::new();
    let mut iteration = 0.0;
    let series = steps
        .iter()
        .map(|s| {
            let points = s
                .residual_norms
                .iter()
                .enumerate()
                .map(|(k, &r)| (iteration + k as f64, r))
                .collect();
            iteration += s.residual_norms.len() as f64 - 1.0;
            Series {
                label: format!("step {} (load {:.3})", s.step, s.load_factor),
                points,
            }
        })
        .collect::<Vec<_>>();
    // a run whose residuals are all zero (nothing loaded) has no residual chart on a log scale
    let drawable = series
        .iter()
        .flat_map(|s| &s.points)
        .any(|p| p.1 > 0.0 && p.1.is_finite());
    if drawable {
        let mut series = series;
        if series.len() > 12 {
            // a long run: one line, steps not named
            let points = series.iter().flat_map(|s| s.points.clone()).collect();
            series = vec![Series {
                label: String::new(),
                points,
            }];
        }
        charts.push(Chart {
            name: format!("{name}.residuals"),
            title: format!("{name}: Newton residual"),
            x_label: "Newton iteration (all steps)".into(),
            y_label: "free residual norm".into(),
            log_y: true,
            lines: true,
            series,
        });
    }
    let csv = summary_path.with_file_name(format!("{name}.probes.csv"));
    if csv.is_file() {
        let table = io::ProbeTable::read(&csv)?;
        let load = table.column("load_factor").unwrap_or_default();
        // one chart per probe and kind of quantity: displacement (u*), force (f*), moment (m*),
        // each field a probe reads (`<probe>.<field>[.<component>]`)
        let mut groups: BTreeMap<(String, String), Vec<Series>> = BTreeMap::new();
        for (j, column) in table.columns.iter().enumerate().skip(2) {
            let (probe, part) = column.split_once('.').unwrap_or((column, ""));
            let (kind, part) = match part.split_once('.') {
                Some((field, component)) => (field.to_owned(), component),
                None if part.len() == 2 => match part.chars().next() {
                    Some('u') => ("displacement".to_owned(), part),
                    Some('f') => ("reaction force".to_owned(), part),
                    Some('m') => ("reaction moment".to_owned(), part),
                    _ => (part.to_owned(), part),
                },
                None => (part.to_owned(), part),
            };
            let points = load
                .iter()
                .zip(&table.rows)
                .map(|(&l, row)| (l, row[j]))
                .collect();
            groups
                .entry((probe.to_owned(), kind))
                .or_default()
                .push(Series {
                    label: if part.is_empty() {
                        column.clone()
                    } else {
                        part.to_owned()
                    },
                    points,
                });
        }
        for ((probe, kind), series) in groups {
            // leave out components that stay zero next to the others (a clamp's displacement)
            let size = |s: &Series| s.points.iter().fold(0.0f64, |m, p| m.max(p.1.abs()));
            let largest = series.iter().map(size).fold(0.0, f64::max);
            let series: Vec<Series> = series
                .into_iter()
                .filter(|s| size(s) > 1e-9 * largest)
                .collect();
            if series.is_empty() {
                continue;
            }
            let suffix = match kind.as_str() {
                "displacement" => "_u".to_owned(),
                "reaction force" => "_f".to_owned(),
                "reaction moment" => "_m".to_owned(),
                "" => String::new(),
                field => format!("_{field}"),
            };
            charts.push(Chart {
                name: format!("{name}.probe_{probe}{suffix}"),
                title: if kind.is_empty() {
                    format!("{name}: {probe}")
                } else {
                    format!("{name}: {kind} at {probe}")
                },
                x_label: "load factor".into(),
                y_label: if kind.is_empty() {
                    probe.clone()
                } else {
                    kind.clone()
                },
                log_y: false,
                lines: true,
                series,
            });
        }
    }
    Ok(charts)
}

/// A campaign chart's line: the other parameters' values (its order), its label, its points.
type Line<'a> = (Vec<&'a serde_json::Value>, String, Vec<(f64, f64)>);

/// The order of two parameter values: numbers by value (5 < 10 < 20), anything else by its
/// JSON text, numbers first.
fn compare_values(a: &serde_json::Value, b: &serde_json::Value) -> std::cmp::Ordering {
    match (numeric(a), numeric(b)) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.to_string().cmp(&b.to_string()),
    }
}

/// The numeric value of a table cell.
fn numeric(v: &serde_json::Value) -> Option<f64> {
    v.as_f64()
}

/// The outputs of a campaign row by name: `strain_energy`, `max_displacement`, `steps`,
/// `newton_iterations`, `linear_iterations`, `wall_s`, `probe.<column>`, `reaction.<set>.f?`.
fn outputs(row: &CaseRow) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    if let Some(v) = row.strain_energy {
        out.insert("strain_energy".into(), v);
    }
    if let Some(v) = row.max_displacement {
        out.insert("max_displacement".into(), v);
    }
    out.insert("newton_iterations".into(), row.newton_iterations as f64);
    out.insert("linear_iterations".into(), row.linear_iterations as f64);
    out.insert("wall_s".into(), row.wall_s);
    for (k, v) in &row.probes {
        out.insert(format!("probe.{k}"), *v);
    }
    for (set, f) in &row.reactions {
        for (c, v) in ["fx", "fy", "fz"].iter().zip(f) {
            out.insert(format!("reaction.{set}.{c}"), *v);
        }
    }
    out
}

/// The charts of a campaign directory: each of `ys` (default: strain energy, max |u| and every
/// probe that varies) against the parameter `x` (default: the first numeric parameter), one
/// line per combination of the other parameters where they form a grid (at most 8 lines of 2 or
/// more points), else one cloud of points, named `campaign_<y>`.
pub fn campaign_charts(dir: &Path, x: Option<&str>, ys: &[String]) -> Result<Vec<Chart>> {
    let jsonl = dir.join("results.jsonl");
    let rows: Vec<CaseRow> = std::fs::read_to_string(&jsonl)
        .with_context(|| {
            format!(
                "reading {} (is {} a campaign directory?)",
                jsonl.display(),
                dir.display()
            )
        })?
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .with_context(|| format!("reading {}", jsonl.display()))?;
    let rows: Vec<&CaseRow> = rows
        .iter()
        .filter(|r| r.status == CaseStatus::Completed)
        .collect();
    let Some(first) = rows.first() else {
        fail!("{}: no completed case to plot", dir.display());
    };
    // the campaign file's order of the parameters (the rows keep them sorted by name)
    let parameters: Vec<String> = std::fs::read_to_string(dir.join("campaign.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<crate::campaign::CampaignSummary>(&t).ok())
        .map(|s| s.parameters)
        .filter(|p| p.iter().all(|k| first.parameters.contains_key(k)))
        .unwrap_or_else(|| first.parameters.keys().cloned().collect());
    let x = match x {
        Some(x) => {
            if !first.parameters.contains_key(x) {
                fail!(
                    "--x {x}: no such parameter; the campaign's parameters: {}",
                    parameters
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            x.to_owned()
        }
        None => parameters
            .iter()
            .find(|p| numeric(&first.parameters[p.as_str()]).is_some())
            .map(|p| p.to_string())
            .context("no numeric parameter to plot against (give --x)")?,
    };
    let available = outputs(first);
    let ys: Vec<String> = if ys.is_empty() {
        // the outputs that vary over the cases: a constant column (or one that varies only by
        // round-off) makes a flat line
        let varies = |k: &str| {
            let values: Vec<f64> = rows
                .iter()
                .filter_map(|r| outputs(r).get(k).copied())
                .collect();
            let (lo, hi) = values
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                    (lo.min(v), hi.max(v))
                });
            let scale = lo.abs().max(hi.abs());
            hi - lo > 1e-9 * scale
        };
        available
            .keys()
            .filter(|k| {
                *k == "strain_energy" || *k == "max_displacement" || k.starts_with("probe.")
            })
            .filter(|k| varies(k))
            .cloned()
            .collect()
    } else {
        for y in ys {
            if !available.contains_key(y) {
                fail!(
                    "--y {y}: no such output; outputs: {}",
                    available.keys().cloned().collect::<Vec<_>>().join(", ")
                );
            }
        }
        ys.to_vec()
    };
    let mut charts = Vec::new();
    for y in &ys {
        // a line per combination of the other parameters, in the campaign file's order of the
        // parameters, ordered by their values (numbers as numbers: 5, 10, 20)
        let mut lines: Vec<Line> = Vec::new();
        for row in &rows {
            let (Some(xv), Some(&yv)) = (
                row.parameters.get(&x).and_then(numeric),
                outputs(row).get(y),
            ) else {
                continue;
            };
            let others: Vec<(&String, &serde_json::Value)> = parameters
                .iter()
                .filter(|k| **k != x)
                .filter_map(|k| row.parameters.get_key_value(k))
                .collect();
            let label = others
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ");
            match lines.iter_mut().find(|l| l.1 == label) {
                Some(line) => line.2.push((xv, yv)),
                None => lines.push((others.iter().map(|o| o.1).collect(), label, vec![(xv, yv)])),
            }
        }
        lines.sort_by(|a, b| {
            a.0.iter()
                .zip(&b.0)
                .map(|(p, q)| compare_values(p, q))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        // a line per combination of the other parameters where that makes lines (a grid);
        // otherwise (a Latin hypercube) one cloud of points
        let as_lines = lines.len() <= 8 && lines.iter().all(|l| l.2.len() >= 2);
        let series: Vec<Series> = if as_lines {
            lines
                .into_iter()
                .map(|(_, label, mut points)| {
                    points.sort_by(|a, b| a.0.total_cmp(&b.0));
                    Series { label, points }
                })
                .collect()
        } else {
            vec![Series {
                label: String::new(),
                points: lines.into_iter().flat_map(|l| l.2).collect(),
            }]
        };
        let file_name: String = y
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        charts.push(Chart {
            name: format!("campaign_{file_name}"),
            title: format!("{y} against {x}"),
            x_label: x.clone(),
            y_label: y.clone(),
            log_y: false,
            lines: as_lines,
            series,
        });
    }
    Ok(charts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Legends order numbers by value, not as text.
    #[test]
    fn parameter_values_order_numbers_by_value() {
        let mut values: Vec<serde_json::Value> = [20, 5, 10]
            .iter()
            .map(|v| serde_json::json!(v))
            .chain([serde_json::json!("b"), serde_json::json!("a")])
            .collect();
        values.sort_by(compare_values);
        assert_eq!(
            values,
            serde_json::json!([5, 10, 20, "a", "b"])
                .as_array()
                .unwrap()
                .clone()
        );
    }
}
