//! `<name>.probes.csv`: one row per written step (step 0 included), the probes of the run as
//! columns, so that a load-displacement curve is one file.
//!
//! Columns: `step,load_factor`, then the probe columns in the order the run defines them.
//! Numbers are written in their shortest round-trip form (reading a value back gives the same
//! `f64`), non-finite ones as `nan`, `inf`, `-inf`. Each row is appended with one write, so a
//! killed run leaves complete rows (a last partial row, without its newline, is no row).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::OutputError;

/// The probe table of a run. Calling order: [`ProbeLog::create`], then [`ProbeLog::append`]
/// per step in increasing step order.
#[derive(Debug)]
pub struct ProbeLog {
    path: PathBuf,
    file: fs::File,
    columns: usize,
}

impl ProbeLog {
    /// Writes `<dir>/<name>.probes.csv` with its header (replacing a file of that name).
    /// Column names must not contain commas, quotes or line breaks.
    pub fn create(dir: &Path, name: &str, columns: &[String]) -> Result<Self, OutputError> {
        if let Some(bad) = columns
            .iter()
            .find(|c| c.is_empty() || c.contains([',', '"', '\n', '\r']))
        {
            return Err(OutputError::InvalidData(format!(
                "probe column `{bad}` cannot be a CSV header"
            )));
        }
        let path = dir.join(format!("{name}.probes.csv"));
        let io = |source| OutputError::Io {
            path: path.clone(),
            source,
        };
        let mut file = fs::File::create(&path).map_err(io)?;
        let mut header = String::from("step,load_factor");
        for c in columns {
            header.push(',');
            header.push_str(c);
        }
        header.push('\n');
        file.write_all(header.as_bytes()).map_err(io)?;
        Ok(ProbeLog {
            path,
            file,
            columns: columns.len(),
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends the row of `step`; `values` holds one number per column.
    pub fn append(
        &mut self,
        step: usize,
        load_factor: f64,
        values: &[f64],
    ) -> Result<(), OutputError> {
        if values.len() != self.columns {
            return Err(OutputError::InvalidData(format!(
                "{} probe values for {} columns",
                values.len(),
                self.columns
            )));
        }
        let mut row = format!("{step},{}", number(load_factor));
        for &v in values {
            row.push(',');
            row.push_str(&number(v));
        }
        row.push('\n');
        self.file
            .write_all(row.as_bytes())
            .map_err(|source| OutputError::Io {
                path: self.path.clone(),
                source,
            })
    }
}

/// `v` in the shortest form that reads back as the same `f64` (`1.0`, `-0.3859381064682070`,
/// `4.1975465007080983e-14`); `nan`, `inf`, `-inf` for non-finite values.
pub(crate) fn number(v: f64) -> String {
    if v.is_finite() {
        serde_json::Number::from_f64(v).map_or_else(|| v.to_string(), |n| n.to_string())
    } else if v.is_nan() {
        "nan".into()
    } else if v > 0.0 {
        "inf".into()
    } else {
        "-inf".into()
    }
}

/// A probe table read back: the header's column names (`step`, `load_factor` first) and the
/// complete rows.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeTable {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<f64>>,
}

impl ProbeTable {
    /// Reads a `.probes.csv` file; a last row without its newline (a killed writer) is dropped.
    pub fn read(path: &Path) -> Result<ProbeTable, OutputError> {
        let text = fs::read_to_string(path).map_err(|source| OutputError::Io {
            path: path.to_owned(),
            source,
        })?;
        let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
        let mut lines = complete.lines();
        let columns: Vec<String> = lines
            .next()
            .ok_or_else(|| OutputError::InvalidData(format!("{}: no header", path.display())))?
            .split(',')
            .map(str::to_owned)
            .collect();
        let mut rows = Vec::new();
        for (i, line) in lines.enumerate() {
            let row = line
                .split(',')
                .map(str::parse::<f64>)
                .collect::<Result<Vec<f64>, _>>()
                .map_err(|e| {
                    OutputError::InvalidData(format!("{}: row {}: {e}", path.display(), i + 1))
                })?;
            if row.len() != columns.len() {
                return Err(OutputError::InvalidData(format!(
                    "{}: row {} has {} values for {} columns",
                    path.display(),
                    i + 1,
                    row.len(),
                    columns.len()
                )));
            }
            rows.push(row);
        }
        Ok(ProbeTable { columns, rows })
    }

    /// The values of column `name`, if there is one.
    pub fn column(&self, name: &str) -> Option<Vec<f64>> {
        let j = self.columns.iter().position(|c| c == name)?;
        Some(self.rows.iter().map(|r| r[j]).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_exactly_and_partial_rows_are_dropped() {
        let dir = std::env::temp_dir().join(format!("hexfem-io-probes-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let columns = vec!["tip.uz".to_owned(), "strain_energy".to_owned()];
        let mut log = ProbeLog::create(&dir, "run", &columns).unwrap();
        let values = [
            [0.0, 0.0],
            [-0.38593810646820703, 4.1975465007080983e-14],
            [1e300, -2.5],
        ];
        for (i, v) in values.iter().enumerate() {
            log.append(i, i as f64 / 3.0, v).unwrap();
        }
        assert!(log.append(3, 1.0, &[1.0]).is_err());
        let path = log.path().to_owned();
        // a killed writer's partial row
        fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"3,1.0,0.5")
            .unwrap();
        let table = ProbeTable::read(&path).unwrap();
        assert_eq!(
            table.columns,
            ["step", "load_factor", "tip.uz", "strain_energy"]
        );
        assert_eq!(table.rows.len(), 3);
        for (i, v) in values.iter().enumerate() {
            assert_eq!(table.rows[i], [i as f64, i as f64 / 3.0, v[0], v[1]]);
        }
        assert_eq!(table.column("tip.uz").unwrap()[1], -0.38593810646820703);
        assert!(ProbeLog::create(&dir, "bad", &["a,b".to_owned()]).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }
}
