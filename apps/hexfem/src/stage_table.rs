//! The text of a run's stage table (the summary's `stages`), as `hexfem run -v` prints it at
//! the end, in the manner of PETSc's `-log_view`: one row per stage with its count and
//! seconds (under MPI each stage's minimum, maximum and mean over the ranks and their ratio),
//! its share of the wall time, and `other`, the time no stage holds.

use std::sync::OnceLock;
use std::time::Instant;

use io::StageTable;

static PROCESS_STARTED: OnceLock<Instant> = OnceLock::new();

/// Marks now as the process's start (the first thing `main` does; later calls change nothing).
pub fn mark_process_start() {
    PROCESS_STARTED.get_or_init(Instant::now);
}

/// The instant [`mark_process_start`] marked, if it was called.
pub fn process_started() -> Option<Instant> {
    PROCESS_STARTED.get().copied()
}

/// The table as text, one stage a line, `other` last, then the share the named stages cover.
pub fn render(table: &StageTable) -> String {
    let wall = table.wall.mean_s;
    let share = |s: f64| {
        if wall > 0.0 {
            100.0 * s / wall
        } else {
            0.0
        }
    };
    let width = table
        .stages
        .iter()
        .chain(&table.overlapped)
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0)
        .max("stage".len());
    let ranks = table.ranks;
    let mut text = if ranks > 1 {
        format!(
            "where the time went ({ranks} ranks; wall {:.3} s max, {:.3} s min, from each process's start):\n  {:<width$} {:>7} {:>9} {:>9} {:>9} {:>6} {:>8}\n",
            table.wall.max_s, table.wall.min_s, "stage", "count", "min s", "max s", "mean s", "%", "max/min"
        )
    } else {
        format!(
            "where the time went (wall {wall:.3} s from the process's start):\n  {:<width$} {:>7} {:>9} {:>6}\n",
            "stage", "count", "s", "%"
        )
    };
    for r in &table.stages {
        let count = if r.name == StageTable::OTHER {
            "-".to_string()
        } else {
            r.count.to_string()
        };
        if ranks > 1 {
            let ratio = if r.min_s > 0.0 {
                format!("{:.2}", r.max_s / r.min_s)
            } else {
                "-".to_string()
            };
            text.push_str(&format!(
                "  {:<width$} {count:>7} {:>9.3} {:>9.3} {:>9.3} {:>6.1} {ratio:>8}\n",
                r.name,
                r.min_s,
                r.max_s,
                r.mean_s,
                share(r.mean_s)
            ));
        } else {
            text.push_str(&format!(
                "  {:<width$} {count:>7} {:>9.3} {:>6.1}\n",
                r.name,
                r.mean_s,
                share(r.mean_s)
            ));
        }
    }
    text.push_str(&format!(
        "  the stages hold {:.1} % of the wall time\n",
        100.0 * table.coverage()
    ));
    if !table.overlapped.is_empty() {
        text.push_str("  on threads of their own, overlapping the stages (not in the sum):\n");
    }
    for r in &table.overlapped {
        text.push_str(&format!(
            "  {:<width$} {:>7} {:>9.3} {:>6.1}\n",
            r.name,
            r.count,
            r.mean_s,
            share(r.mean_s)
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use io::StageRow;

    fn row(name: &str, count: u64, min_s: f64, max_s: f64, mean_s: f64) -> StageRow {
        StageRow {
            name: name.into(),
            count,
            min_s,
            max_s,
            mean_s,
        }
    }

    /// One process: count, seconds and share per stage, `other` without a count, and the
    /// coverage of the named stages.
    #[test]
    fn one_process_renders_seconds_and_shares() {
        let table = StageTable {
            ranks: 1,
            wall: row("wall", 1, 2.0, 2.0, 2.0),
            stages: vec![
                row("mesh", 1, 0.5, 0.5, 0.5),
                row("AMG set-up cold", 4, 1.25, 1.25, 1.25),
                row("other", 1, 0.25, 0.25, 0.25),
            ],
            overlapped: Vec::new(),
        };
        let text = render(&table);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "where the time went (wall 2.000 s from the process's start):",
                "  stage             count         s      %",
                "  mesh                  1     0.500   25.0",
                "  AMG set-up cold       4     1.250   62.5",
                "  other                 -     0.250   12.5",
                "  the stages hold 87.5 % of the wall time",
            ]
        );
    }

    /// The output writer's seconds follow the coverage, outside the stages' sum.
    #[test]
    fn overlapped_work_follows_the_table_outside_its_sum() {
        let table = StageTable {
            ranks: 1,
            wall: row("wall", 1, 2.0, 2.0, 2.0),
            stages: vec![
                row("output", 5, 0.5, 0.5, 0.5),
                row("other", 1, 1.5, 1.5, 1.5),
            ],
            overlapped: vec![row("output writer (background)", 5, 1.0, 1.0, 1.0)],
        };
        let text = render(&table);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[4..],
            [
                "  the stages hold 25.0 % of the wall time",
                "  on threads of their own, overlapping the stages (not in the sum):",
                "  output writer (background)       5     1.000   50.0",
            ]
        );
    }

    /// Ranks: minimum, maximum, mean and their ratio (none where a rank spent no time).
    #[test]
    fn ranks_render_minimum_maximum_mean_and_ratio() {
        let table = StageTable {
            ranks: 2,
            wall: row("wall", 1, 3.0, 4.0, 3.5),
            stages: vec![
                row("solve", 9, 1.0, 2.0, 1.5),
                row("output", 3, 0.0, 1.0, 0.5),
                row("other", 1, 1.0, 2.0, 1.5),
            ],
            overlapped: Vec::new(),
        };
        let text = render(&table);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "where the time went (2 ranks; wall 4.000 s max, 3.000 s min, from each process's start):",
                "  stage    count     min s     max s    mean s      %  max/min",
                "  solve        9     1.000     2.000     1.500   42.9     2.00",
                "  output       3     0.000     1.000     0.500   14.3        -",
                "  other        -     1.000     2.000     1.500   42.9     2.00",
                "  the stages hold 57.1 % of the wall time",
            ]
        );
    }
}
