//! `hexfem plot`: line charts as PNG and SVG (plotters, pure Rust; text drawn with the DejaVu
//! Sans Mono font shipped in `assets/`, so no system font library is needed).
//!
//! The charts themselves (which series, from a run's summary or a campaign's table) are data
//! of the simulation library ([`sim::charts`]); this module only draws them. `hexfem campaign`
//! writes its default set into `<directory>/plots/` when it ends.

use std::path::{Path, PathBuf};
use std::sync::Once;

use anyhow::{bail, Context, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
pub use sim::charts::{Chart, Series};

const FONT: &str = "hexfem-sans";
const WIDTH: u32 = 960;
const HEIGHT: u32 = 600;

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // the font is part of the binary; a failure here would be a corrupt build
        let _ = plotters::style::register_font(
            FONT,
            FontStyle::Normal,
            include_bytes!("../assets/DejaVuSansMono.ttf"),
        );
    });
}

/// Writes `chart` as `<base>.png` and `<base>.svg` (the extensions appended to `base`); returns
/// both paths.
pub fn draw(chart: &Chart, base: &Path) -> Result<Vec<PathBuf>> {
    register_font();
    let with = |extension: &str| {
        let mut path = base.as_os_str().to_owned();
        path.push(extension);
        PathBuf::from(path)
    };
    let (png, svg) = (with(".png"), with(".svg"));
    {
        let root = BitMapBackend::new(&png, (WIDTH, HEIGHT)).into_drawing_area();
        render(chart, &root).with_context(|| format!("drawing {}", png.display()))?;
        root.present()
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", png.display()))?;
    }
    {
        let root = SVGBackend::new(&svg, (WIDTH, HEIGHT)).into_drawing_area();
        render(chart, &root).with_context(|| format!("drawing {}", svg.display()))?;
        root.present()
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", svg.display()))?;
    }
    Ok(vec![png, svg])
}

/// Data beyond these bounds is drawn at them: a linear axis shows at most `±LINEAR_LIMIT`, a
/// log axis the decades `±LOG_DECADES` (plotters' tick loops run while the tick is below the
/// axis end: forever for an infinite end, and a subnormal end has lost its digits).
const LINEAR_LIMIT: f64 = 1e300;
const LOG_DECADES: f64 = 300.0;

/// The axis ends, widened for margins and the legend, stay within these (finite, normal
/// doubles); a log axis spans at most `AXIS_SPAN_DECADES`, its largest values kept (plotters
/// divides its ends: a wider span overflows, and the tick loop never ends).
const AXIS_LIMIT: f64 = 1e305;
const AXIS_DECADES: f64 = 305.0;
const AXIS_SPAN_DECADES: f64 = 300.0;

/// A value in axis coordinates (its base-10 logarithm on a log axis) within the data bounds;
/// `None` where it cannot be drawn (not finite, or not positive on a log axis).
fn to_axis(v: f64, log: bool) -> Option<f64> {
    if !v.is_finite() {
        None
    } else if log {
        (v > 0.0).then(|| v.log10().clamp(-LOG_DECADES, LOG_DECADES))
    } else {
        Some(v.clamp(-LINEAR_LIMIT, LINEAR_LIMIT))
    }
}

/// An axis range in axis coordinates as values, within the axis bounds.
fn from_axis((lo, hi): (f64, f64), log: bool) -> (f64, f64) {
    if log {
        let hi = hi.min(AXIS_DECADES);
        let lo = lo.max(-AXIS_DECADES).max(hi - AXIS_SPAN_DECADES);
        (10f64.powf(lo), 10f64.powf(hi))
    } else {
        (lo.max(-AXIS_LIMIT), hi.min(AXIS_LIMIT))
    }
}

/// The data range of the chart's points in axis coordinates, widened a little (and away from
/// zero width).
fn range(values: impl Iterator<Item = f64>, log: bool) -> Option<(f64, f64)> {
    let (lo, hi) = values
        .filter_map(|v| to_axis(v, log))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if lo > hi {
        return None;
    }
    Some(if log {
        // a factor of two either side
        (
            lo - std::f64::consts::LOG10_2,
            hi + std::f64::consts::LOG10_2,
        )
    } else if hi > lo {
        let pad = 0.05 * (hi - lo);
        (lo - pad, hi + pad)
    } else {
        let pad = if lo == 0.0 { 1.0 } else { 0.05 * lo.abs() };
        (lo - pad, hi + pad)
    })
}

fn render<DB: DrawingBackend>(chart: &Chart, root: &DrawingArea<DB, Shift>) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let fail = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow::anyhow!("{e:?}");
    root.fill(&WHITE).map_err(fail)?;
    let points = || chart.series.iter().flat_map(|s| s.points.iter());
    let Some(x) = range(points().map(|p| p.0), false) else {
        bail!("{}: nothing to plot", chart.title);
    };
    let Some(mut y) = range(points().map(|p| p.1), chart.log_y) else {
        bail!("{}: nothing to plot", chart.title);
    };
    // the legend goes into the corner with the fewest points, with room made above or below
    // the lines for it
    let legend = legend_corner(chart, x, y);
    let lines = chart.series.len() as f64;
    let room = 0.07 * lines + 0.05;
    let upper = matches!(
        legend,
        SeriesLabelPosition::UpperLeft | SeriesLabelPosition::UpperRight
    );
    if upper {
        y.1 += room * (y.1 - y.0);
    } else {
        y.0 -= room * (y.1 - y.0);
    }
    let (x, y) = (from_axis(x, false), from_axis(y, chart.log_y));
    let (x_span, y_span) = (x.1 - x.0, y.1 - y.0);
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(&chart.title, (FONT, 24))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(96);
    macro_rules! body {
        ($ctx:expr) => {{
            let mut ctx = $ctx;
            ctx.configure_mesh()
                .x_desc(chart.x_label.as_str())
                .y_desc(chart.y_label.as_str())
                .label_style((FONT, 17))
                .axis_desc_style((FONT, 18))
                .light_line_style(RGBColor(235, 235, 235))
                .x_label_formatter(&|v| short(*v, x_span))
                .y_label_formatter(&|v| short(*v, if chart.log_y { 0.0 } else { y_span }))
                .draw()
                .map_err(fail)?;
            for (i, s) in chart.series.iter().enumerate() {
                let color = Palette99::pick(i).to_rgba();
                let pts: Vec<(f64, f64)> = s
                    .points
                    .iter()
                    .copied()
                    .filter(|p| p.0.is_finite() && p.1.is_finite() && (!chart.log_y || p.1 > 0.0))
                    .map(|p| (p.0.max(x.0).min(x.1), p.1.max(y.0).min(y.1)))
                    .collect();
                let line = if chart.lines { pts.clone() } else { Vec::new() };
                ctx.draw_series(LineSeries::new(line, color.stroke_width(2)))
                    .map_err(fail)?
                    .label(s.label.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
                let radius = if chart.lines { 3 } else { 4 };
                ctx.draw_series(pts.iter().map(|&p| Circle::new(p, radius, color.filled())))
                    .map_err(fail)?;
            }
            if chart.series.len() > 1 || !chart.series[0].label.is_empty() {
                ctx.configure_series_labels()
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .label_font((FONT, 15))
                    .position(legend.clone())
                    .draw()
                    .map_err(fail)?;
            }
        }};
    }
    if chart.log_y {
        body!(builder
            .build_cartesian_2d(x.0..x.1, (y.0..y.1).log_scale())
            .map_err(fail)?);
    } else {
        body!(builder
            .build_cartesian_2d(x.0..x.1, y.0..y.1)
            .map_err(fail)?);
    }
    Ok(())
}

/// The corner of the plot area holding the fewest points (`x`, `y`: the ranges in axis
/// coordinates, see [`to_axis`]).
fn legend_corner(chart: &Chart, x: (f64, f64), y: (f64, f64)) -> SeriesLabelPosition {
    let mid_x = 0.5 * (x.0 + x.1);
    let mid_y = 0.5 * (y.0 + y.1);
    let mut count = [0usize; 4];
    for p in chart.series.iter().flat_map(|s| &s.points) {
        let (Some(px), Some(py)) = (to_axis(p.0, false), to_axis(p.1, chart.log_y)) else {
            continue;
        };
        let corner = usize::from(px < mid_x) + 2 * usize::from(py < mid_y);
        count[corner] += 1;
    }
    // upper right first, then upper left, lower right, lower left
    let best = (0..4).min_by_key(|&c| count[c]).unwrap_or(0);
    match best {
        0 => SeriesLabelPosition::UpperRight,
        1 => SeriesLabelPosition::UpperLeft,
        2 => SeriesLabelPosition::LowerRight,
        _ => SeriesLabelPosition::LowerLeft,
    }
}

/// A tick label: plain for moderate magnitudes, else scientific; `0` for values that are
/// round-off next to the axis's `span` (when known, else 0).
fn short(v: f64, span: f64) -> String {
    let a = v.abs();
    if v == 0.0 || a < 1e-9 * span {
        "0".into()
    } else if (1e-3..1e5).contains(&a) {
        let s = format!("{v:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        format!("{v:.2e}")
    }
}

/// The default plots of a run ([`sim::charts::run_charts`] of its summary) in `dir`, as
/// `<chart name>.{png,svg}`.
pub fn plot_run(summary_path: &Path, dir: &Path) -> Result<Vec<PathBuf>> {
    draw_all(&sim::charts::run_charts(summary_path)?, dir)
}

/// The plots of a campaign directory ([`sim::charts::campaign_charts`]) in `out` (created).
pub fn plot_campaign(
    dir: &Path,
    x: Option<&str>,
    ys: &[String],
    out: &Path,
) -> Result<Vec<PathBuf>> {
    let charts = sim::charts::campaign_charts(dir, x, ys)?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    draw_all(&charts, out)
}

/// Every chart of `charts` in `dir`; the paths written.
fn draw_all(charts: &[Chart], dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for chart in charts {
        files.extend(draw(chart, &dir.join(&chart.name))?);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn charts_are_written_as_png_and_svg() {
        let dir = std::env::temp_dir().join(format!("hexfem-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let chart = Chart {
            name: "chart".into(),
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            log_y: true,
            lines: true,
            series: vec![Series {
                label: "a".into(),
                points: vec![(0.0, 1.0), (1.0, 1e-3), (2.0, 0.0)],
            }],
        };
        let files = draw(&chart, &dir.join("chart")).unwrap();
        let png = std::fs::read(&files[0]).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        let svg = std::fs::read_to_string(&files[1]).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("<text"),
            "{}",
            &svg[..100.min(svg.len())]
        );
        let empty = Chart {
            series: vec![Series {
                label: String::new(),
                points: vec![],
            }],
            ..chart
        };
        assert!(draw(&empty, &dir.join("empty")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A summary of one step whose residual norms are `norms`, written as
    /// `<dir>/extreme.summary.json`.
    fn summary_with_residuals(dir: &Path, norms: &[f64]) -> PathBuf {
        let step = io::StepRecord {
            step: 1,
            load_factor: 1.0,
            cutbacks: 0,
            newton_iterations: norms.len() - 1,
            linear_iterations: vec![1; norms.len() - 1],
            residual_norms: norms.to_vec(),
            strain_energy: 1.0,
            max_displacement: 1.0,
            wall_s: 0.0,
            linear_solver: serde_json::Value::Null,
            converged_by: String::new(),
            failed_attempts: serde_json::Value::Null,
            reactions: serde_json::Value::Null,
            probes: BTreeMap::new(),
            output_transfer_bytes: None,
            warnings: Vec::new(),
        };
        let summary = io::Summary {
            run: io::RunInfo {
                program: "hexfem test".into(),
                input: dir.join("extreme.yaml"),
                started_unix_s: 0,
                threads: 1,
                config: serde_json::Value::Null,
                restart: None,
                formulations: Vec::new(),
            },
            mesh: io::MeshInfo {
                nodes: 8,
                cells: 1,
                nodes_per_cell: 8,
                dofs: 24,
                constrained_dofs: 12,
            },
            steps_completed: 1,
            steps_log: "extreme.steps.jsonl".into(),
            steps: Some(vec![step]),
            wall_s: 0.0,
            status: io::RunStatus::Completed,
            preconditioner: None,
            ranks: None,
            stages: None,
        };
        let path = dir.join("extreme.summary.json");
        std::fs::write(&path, serde_json::to_string(&summary).unwrap()).unwrap();
        path
    }

    /// `hexfem plot` of residuals spanning the whole range of doubles ends, in seconds (main
    /// before issue 30: an infinite axis end, and the tick loop never ended). On another thread,
    /// so that a hang fails the test instead of stalling the suite.
    #[test]
    fn residuals_spanning_every_double_are_plotted() {
        let ranges: [&[f64]; 4] = [
            &[1.0, 1e308],
            &[1e-320, 1.0],
            &[f64::MIN_POSITIVE / 4.0, f64::MAX],
            &[f64::MAX, 1e-300, 5e-324],
        ];
        for (i, norms) in ranges.into_iter().enumerate() {
            let dir = std::env::temp_dir().join(format!("hexfem-plot-{}-{i}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let summary = summary_with_residuals(&dir, norms);
            let (done, result) = std::sync::mpsc::channel();
            let out = dir.clone();
            std::thread::spawn(move || done.send(plot_run(&summary, &out).map(|f| f.len())));
            let drawn = result
                .recv_timeout(std::time::Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("residuals {norms:?}: no plot within a minute"));
            assert_eq!(drawn.unwrap(), 2, "residuals {norms:?}");
            if std::env::var_os("KEEP_PLOT").is_none() {
                std::fs::remove_dir_all(&dir).unwrap();
            }
        }
    }

    /// A linear axis over values near the largest double is drawn too.
    #[test]
    fn values_near_the_largest_double_are_plotted() {
        let dir = std::env::temp_dir().join(format!("hexfem-plot-linear-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let chart = Chart {
            name: "chart".into(),
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            log_y: false,
            lines: true,
            series: vec![Series {
                label: "a".into(),
                points: vec![(-f64::MAX, f64::MAX), (f64::MAX, -f64::MAX)],
            }],
        };
        let (done, result) = std::sync::mpsc::channel();
        let base = dir.join("chart");
        std::thread::spawn(move || done.send(draw(&chart, &base).map(|f| f.len())));
        let drawn = result
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("no plot within a minute");
        assert_eq!(drawn.unwrap(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(short(0.0, 1.0), "0");
        assert_eq!(short(0.25, 1.0), "0.25");
        assert_eq!(short(12.0, 1.0), "12");
        assert_eq!(short(1.5e-7, 0.0), "1.50e-7");
        assert_eq!(short(-2.78e-17, 0.7), "0");
    }
}
