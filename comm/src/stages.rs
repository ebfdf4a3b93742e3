//! Where the time goes, as PETSc's `-log_view` stages show it: [`Stages`] accumulates the
//! seconds and the number of times of named stages on one rank, and [`Stages::merge`] combines
//! every rank's into the minimum, maximum and mean over the ranks.
//!
//! Stages are flat (none nests in another): each second of a rank belongs to at most one
//! stage, so their sum is at most the rank's wall time, and what no stage holds is the caller's
//! "other" ([`Stages::with_rest`]).

use crate::{Comm, CommError};

/// One named stage of one rank: inclusive seconds over all its occurrences and how often it
/// occurred.
#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    pub name: String,
    pub seconds: f64,
    pub count: u64,
}

/// The stages of one rank, in the order each first occurred.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stages {
    stages: Vec<Stage>,
}

/// One stage over the ranks: its seconds' minimum, maximum and mean (a rank where it never
/// occurred counts 0 s), and its largest count.
#[derive(Debug, Clone, PartialEq)]
pub struct MergedStage {
    pub name: String,
    pub count: u64,
    pub min_s: f64,
    pub max_s: f64,
    pub mean_s: f64,
}

impl Stages {
    /// No stage yet.
    pub fn new() -> Self {
        Stages::default()
    }

    /// Adds one occurrence of `name` lasting `seconds`.
    pub fn add(&mut self, name: &str, seconds: f64) {
        self.add_counted(name, seconds, 1);
    }

    /// Adds `count` occurrences of `name` lasting `seconds` together.
    pub fn add_counted(&mut self, name: &str, seconds: f64, count: u64) {
        match self.stages.iter_mut().find(|s| s.name == name) {
            Some(stage) => {
                stage.seconds += seconds;
                stage.count += count;
            }
            None => self.stages.push(Stage {
                name: name.to_owned(),
                seconds,
                count,
            }),
        }
    }

    /// Runs `f` as one occurrence of `name`.
    pub fn time<T>(&mut self, name: &str, f: impl FnOnce() -> T) -> T {
        let started = std::time::Instant::now();
        let value = f();
        self.add(name, started.elapsed().as_secs_f64());
        value
    }

    /// The stages, in the order each first occurred.
    pub fn stages(&self) -> &[Stage] {
        &self.stages
    }

    /// The stage `name`, if it occurred.
    pub fn get(&self, name: &str) -> Option<&Stage> {
        self.stages.iter().find(|s| s.name == name)
    }

    /// The seconds of every stage together.
    pub fn total_s(&self) -> f64 {
        self.stages.iter().map(|s| s.seconds).sum()
    }

    /// These stages and `rest`: what no stage holds of `wall_s` seconds (once; negative where
    /// stages overlapped, which flat stages must not).
    pub fn with_rest(&self, rest: &str, wall_s: f64) -> Stages {
        let mut all = self.clone();
        all.add(rest, wall_s - self.total_s());
        all
    }

    /// Collective: every rank's stages merged, in the order of first occurrence over the ranks
    /// taken in rank order (the same table on every rank). Three all-gathers.
    pub fn merge(&self, comm: &dyn Comm) -> Result<Vec<MergedStage>, CommError> {
        let names: Vec<u8> = self
            .stages
            .iter()
            .flat_map(|s| s.name.bytes().filter(|&b| b != 0).chain([0]))
            .collect();
        let names = comm.allgatherv_bytes(&names)?;
        let seconds: Vec<f64> = self.stages.iter().map(|s| s.seconds).collect();
        let seconds = comm.allgatherv_f64(&seconds)?;
        let counts: Vec<u64> = self.stages.iter().map(|s| s.count).collect();
        let counts = comm.allgatherv_u64(&counts)?;
        let mut ranks: Vec<Vec<Stage>> = Vec::with_capacity(names.len());
        for (r, bytes) in names.iter().enumerate() {
            let mut list: Vec<&[u8]> = bytes.split(|&b| b == 0).collect();
            // the piece after the last separator is empty
            list.pop();
            let (s, c) = (&seconds[r], &counts[r]);
            if list.len() != s.len() || list.len() != c.len() {
                return Err(CommError::Mismatch {
                    operation: "Stages::merge",
                    message: format!(
                        "rank {r} sent {} stage names, {} times and {} counts",
                        list.len(),
                        s.len(),
                        c.len()
                    ),
                });
            }
            ranks.push(
                list.iter()
                    .zip(s.iter().zip(c))
                    .map(|(n, (&seconds, &count))| Stage {
                        name: String::from_utf8_lossy(n).into_owned(),
                        seconds,
                        count,
                    })
                    .collect(),
            );
        }
        Ok(merge_ranks(&ranks))
    }
}

/// The stages of every rank (indexed by rank) merged: the names in order of first occurrence
/// over the ranks in rank order; a rank without a stage counts 0 s for it.
pub fn merge_ranks(ranks: &[Vec<Stage>]) -> Vec<MergedStage> {
    let mut order: Vec<&str> = Vec::new();
    for stage in ranks.iter().flatten() {
        if !order.contains(&stage.name.as_str()) {
            order.push(&stage.name);
        }
    }
    let size = ranks.len().max(1) as f64;
    order
        .into_iter()
        .map(|name| {
            let each: Vec<(f64, u64)> = ranks
                .iter()
                .map(|rank| {
                    rank.iter()
                        .find(|s| s.name == name)
                        .map_or((0.0, 0), |s| (s.seconds, s.count))
                })
                .collect();
            let seconds = each.iter().map(|&(s, _)| s);
            MergedStage {
                name: name.to_owned(),
                count: each.iter().map(|&(_, c)| c).max().unwrap_or(0),
                min_s: seconds.clone().fold(f64::INFINITY, f64::min),
                max_s: seconds.clone().fold(f64::NEG_INFINITY, f64::max),
                mean_s: seconds.sum::<f64>() / size,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SelfComm;

    #[test]
    fn stages_add_up_in_the_order_they_first_occur() {
        let mut stages = Stages::new();
        stages.add("mesh", 0.5);
        stages.add("solve", 0.25);
        stages.add_counted("solve", 0.5, 3);
        assert_eq!(
            stages
                .stages()
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>(),
            ["mesh", "solve"]
        );
        assert_eq!(
            stages.get("solve").map(|s| (s.seconds, s.count)),
            Some((0.75, 4))
        );
        assert_eq!(stages.total_s(), 1.25);
        let ran = stages.time("output", || 7);
        assert_eq!(ran, 7);
        assert_eq!(stages.get("output").map(|s| s.count), Some(1));
        let all = Stages::new().with_rest("other", 2.0);
        assert_eq!(all.get("other").map(|s| s.seconds), Some(2.0));
        let rest = stages.with_rest("other", 10.0);
        assert!((rest.total_s() - 10.0).abs() < 1e-12);
    }

    /// One rank: the minimum, maximum and mean are its own seconds.
    #[test]
    fn one_rank_merges_into_its_own_figures() {
        let mut stages = Stages::new();
        stages.add("assembly", 1.5);
        stages.add("assembly", 0.5);
        stages.add("solve", 3.0);
        let merged = stages.merge(&SelfComm).unwrap();
        assert_eq!(
            merged,
            vec![
                MergedStage {
                    name: "assembly".into(),
                    count: 2,
                    min_s: 2.0,
                    max_s: 2.0,
                    mean_s: 2.0
                },
                MergedStage {
                    name: "solve".into(),
                    count: 1,
                    min_s: 3.0,
                    max_s: 3.0,
                    mean_s: 3.0
                },
            ]
        );
        assert!(Stages::new().merge(&SelfComm).unwrap().is_empty());
    }

    /// Two ranks: a stage one rank lacks counts 0 s there; the names keep rank 0's order, then
    /// those only later ranks have.
    #[test]
    fn ranks_merge_into_minimum_maximum_and_mean() {
        let stage = |name: &str, seconds, count| Stage {
            name: name.into(),
            seconds,
            count,
        };
        let ranks = vec![
            vec![stage("mesh", 1.0, 1), stage("output", 4.0, 3)],
            vec![stage("mesh", 3.0, 1), stage("halo", 2.0, 5)],
        ];
        let merged = merge_ranks(&ranks);
        let rows: Vec<(&str, u64, f64, f64, f64)> = merged
            .iter()
            .map(|m| (m.name.as_str(), m.count, m.min_s, m.max_s, m.mean_s))
            .collect();
        assert_eq!(
            rows,
            [
                ("mesh", 1, 1.0, 3.0, 2.0),
                ("output", 3, 0.0, 4.0, 2.0),
                ("halo", 5, 0.0, 2.0, 1.0),
            ]
        );
    }
}
