//! XDMF 3 description of the HDF5 results: a temporal collection with one uniform grid per
//! written step, every array referenced by its HDF5 path.

use std::fmt::Write;
use std::fs;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::atomic::{write_at_position, write_atomic};
use super::data::{AttributeType, Center};
use super::faults::Faults;
use super::OutputError;

/// HDF5 group of step `step`: `/steps/000042`.
pub(crate) fn step_group(step: usize) -> String {
    format!("/steps/{step:06}")
}

/// What the XDMF needs to know of the mesh.
#[derive(Clone, Debug)]
pub(crate) struct MeshLayout {
    /// HDF5 file name, relative to the XDMF file's directory.
    pub h5_name: String,
    pub n_nodes: usize,
    pub n_cells: usize,
    pub nodes_per_cell: usize,
    /// Whether `/mesh/material` exists (a cell attribute of every step).
    pub has_material: bool,
    /// The sets shown as 0/1 attributes `set:<name>` of every step: node indicators
    /// (`/mesh/indicators/nodes/<name>`) and cell indicators (`.../cells/<name>`).
    pub node_indicators: Vec<String>,
    pub cell_indicators: Vec<String>,
}

/// A field written at a step.
#[derive(Clone, Debug)]
pub(crate) struct FieldEntry {
    pub name: &'static str,
    pub center: Center,
    pub kind: AttributeType,
    /// Bytes of a value: 8 (float64) or 4 (float32, `output.precision: single`).
    pub precision: usize,
}

/// A step written to the HDF5 file.
#[derive(Clone, Debug)]
pub(crate) struct StepEntry {
    pub step: usize,
    pub load_factor: f64,
    pub fields: Vec<FieldEntry>,
}

/// Opening of the XML processing instruction that holds the space reserved for the next steps.
const RESERVE_OPEN: &str = "<?hexfem-next-steps";
/// Its end.
const RESERVE_CLOSE: &str = "?>\n";
/// Size of a page: the commit write (blanking [`RESERVE_OPEN`]) never crosses a page boundary,
/// so a kill cannot split it.
const PAGE: u64 = 4096;

/// The document's head: everything before the first step grid.
fn head() -> String {
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<Xdmf Version=\"3.0\">\n  <Domain>\n    \
     <Grid Name=\"results\" GridType=\"Collection\" CollectionType=\"Temporal\">\n"
        .to_owned()
}

/// The document's tail, after the reserved space.
const TAIL: &str = "    </Grid>\n  </Domain>\n</Xdmf>\n";

/// Spaces that move `at` to the next page when `len` bytes written there would cross a page.
fn page_padding(at: u64, len: usize) -> usize {
    let offset = at % PAGE;
    if offset + len as u64 > PAGE {
        (PAGE - offset) as usize
    } else {
        0
    }
}

/// The XDMF file of a run, appended step by step at O(1) cost and valid XML at every moment.
///
/// The file ends with a processing instruction `<?hexfem-next-steps      ?>` inside the
/// collection, whose content is reserved space, then the closing tags. A step's grid is written
/// into that space followed by a new opening `<?hexfem-next-steps` (readers see only the content
/// of an instruction, so a kill during this write changes nothing they read); then the old
/// opening is overwritten with spaces (one write of 19 bytes within a page), which makes the grid
/// part of the collection. When the space runs out the file is rewritten with twice the room
/// (write to a temporary file, rename), so appending costs amortised O(1).
pub(crate) struct XmlLog {
    path: PathBuf,
    /// The closing tags after the reserved space.
    tail: &'static str,
    file: fs::File,
    /// Position of the live [`RESERVE_OPEN`].
    open_at: u64,
    /// Position of [`RESERVE_CLOSE`].
    close_at: u64,
    faults: Faults,
}

/// The XDMF file of a run.
pub(crate) type XdmfLog = XmlLog;

impl XmlLog {
    /// Writes the XDMF document with an empty collection (replacing `path` atomically).
    pub fn create(path: &Path, faults: &Faults) -> Result<Self, OutputError> {
        Self::create_with(path, &head(), TAIL, faults)
    }

    /// Writes the document `head` + reserved space + `tail` (replacing `path` atomically); the
    /// entries appended go between `head` and the reserved space.
    pub fn create_with(
        path: &Path,
        head: &str,
        tail: &'static str,
        faults: &Faults,
    ) -> Result<Self, OutputError> {
        let (open_at, close_at) = replace(path, head.as_bytes(), "", tail, faults)?;
        Ok(XmlLog {
            path: path.to_owned(),
            tail,
            file: open_rw(path)?,
            open_at,
            close_at,
            faults: faults.clone(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends the grid of `step`.
    pub fn append(&mut self, mesh: &MeshLayout, step: &StepEntry) -> Result<(), OutputError> {
        self.append_text(render_grid(mesh, step))
    }

    /// Appends `grid` (complete elements, ending with a newline) to the collection.
    pub fn append_text(&mut self, grid: String) -> Result<(), OutputError> {
        let write_at = self.open_at + RESERVE_OPEN.len() as u64 + 1;
        let grid_end = write_at + grid.len() as u64;
        let pad = page_padding(grid_end, RESERVE_OPEN.len());
        let new_open = grid_end + pad as u64;
        // Keep one space between the new opening and the closing `?>`.
        if new_open + RESERVE_OPEN.len() as u64 + 1 > self.close_at {
            let mut prefix = vec![0; self.open_at as usize];
            self.file
                .read_exact_at(&mut prefix, 0)
                .map_err(|source| self.io_error(source))?;
            return self.rewrite(&prefix, &grid);
        }
        let mut text = grid.into_bytes();
        text.resize(text.len() + pad, b' ');
        text.extend_from_slice(RESERVE_OPEN.as_bytes());
        write_at_position(&self.file, &self.faults, write_at, &text)
            .map_err(|source| self.io_error(source))?;
        let blank = [b' '; RESERVE_OPEN.len()];
        write_at_position(&self.file, &self.faults, self.open_at, &blank)
            .map_err(|source| self.io_error(source))?;
        self.open_at = new_open;
        Ok(())
    }

    /// Rewrites the file with `prefix`, `grid` and fresh reserved space.
    fn rewrite(&mut self, prefix: &[u8], grid: &str) -> Result<(), OutputError> {
        let (open_at, close_at) = replace(&self.path, prefix, grid, self.tail, &self.faults)?;
        self.file = open_rw(&self.path)?;
        self.open_at = open_at;
        self.close_at = close_at;
        Ok(())
    }

    fn io_error(&self, source: std::io::Error) -> OutputError {
        OutputError::Io {
            path: self.path.clone(),
            source,
        }
    }
}

/// Replaces `path` atomically with `prefix` (head and grids), `grid`, reserved space as large as
/// the rest together (at least a page) and the closing tags; returns the positions of the
/// reserve's opening and closing.
fn replace(
    path: &Path,
    prefix: &[u8],
    grid: &str,
    tail: &str,
    faults: &Faults,
) -> Result<(u64, u64), OutputError> {
    let mut text = Vec::with_capacity(2 * (prefix.len() + grid.len()) + PAGE as usize);
    text.extend_from_slice(prefix);
    text.extend_from_slice(grid.as_bytes());
    let pad = page_padding(text.len() as u64, RESERVE_OPEN.len());
    text.resize(text.len() + pad, b' ');
    let open_at = text.len() as u64;
    let room = text.len().max(PAGE as usize);
    text.extend_from_slice(RESERVE_OPEN.as_bytes());
    text.resize(text.len() + room, b' ');
    let close_at = text.len() as u64;
    text.extend_from_slice(RESERVE_CLOSE.as_bytes());
    text.extend_from_slice(tail.as_bytes());
    write_atomic(path, &text, faults)?;
    Ok((open_at, close_at))
}

/// Opens the file for reading and writing in place.
fn open_rw(path: &Path) -> Result<fs::File, OutputError> {
    fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|source| OutputError::Io {
            path: path.to_owned(),
            source,
        })
}

/// The `Grid` element of one step (indented for the collection), ending with a newline.
pub(crate) fn render_grid(mesh: &MeshLayout, s: &StepEntry) -> String {
    let h5 = escape(&mesh.h5_name);
    let topology = match mesh.nodes_per_cell {
        27 => "Hexahedron_27",
        _ => "Hexahedron",
    };
    let mut x = String::new();
    let group = step_group(s.step);
    let _ = writeln!(
        x,
        "      <Grid Name=\"step_{:06}\" GridType=\"Uniform\">",
        s.step
    );
    let _ = writeln!(x, "        <Time Value=\"{}\"/>", time_text(s.load_factor));
    let _ = writeln!(
        x,
        "        <Topology TopologyType=\"{topology}\" NumberOfElements=\"{}\">",
        mesh.n_cells
    );
    data_item(
        &mut x,
        &h5,
        "/mesh/connectivity",
        mesh.n_cells,
        mesh.nodes_per_cell,
        "Int",
    );
    let _ = writeln!(x, "        </Topology>");
    let _ = writeln!(x, "        <Geometry GeometryType=\"XYZ\">");
    data_item(&mut x, &h5, "/mesh/coordinates", mesh.n_nodes, 3, "Float");
    let _ = writeln!(x, "        </Geometry>");
    if mesh.has_material {
        let _ = writeln!(
            x,
            "        <Attribute Name=\"material\" AttributeType=\"Scalar\" Center=\"Cell\">"
        );
        data_item(&mut x, &h5, "/mesh/material", mesh.n_cells, 1, "Int");
        let _ = writeln!(x, "        </Attribute>");
    }
    for (names, center, kind, rows) in [
        (&mesh.node_indicators, "Node", "nodes", mesh.n_nodes),
        (&mesh.cell_indicators, "Cell", "cells", mesh.n_cells),
    ] {
        for name in names {
            let _ = writeln!(
                x,
                "        <Attribute Name=\"set:{}\" AttributeType=\"Scalar\" Center=\"{center}\">",
                escape(name)
            );
            let path = format!("/mesh/indicators/{kind}/{}", escape(name));
            data_item(&mut x, &h5, &path, rows, 1, "Int");
            let _ = writeln!(x, "        </Attribute>");
        }
    }
    for f in &s.fields {
        let (center, rows) = match f.center {
            Center::Node => ("Node", mesh.n_nodes),
            Center::Cell => ("Cell", mesh.n_cells),
        };
        let kind = match f.kind {
            AttributeType::Scalar => "Scalar",
            AttributeType::Vector => "Vector",
            AttributeType::Tensor => "Tensor",
            AttributeType::Tensor6 => "Tensor6",
        };
        let _ = writeln!(
            x,
            "        <Attribute Name=\"{}\" AttributeType=\"{kind}\" Center=\"{center}\">",
            f.name
        );
        let path = format!("{group}/{}", f.name);
        data_item_of(
            &mut x,
            &h5,
            &path,
            [rows, f.kind.components()],
            "Float",
            f.precision,
        );
        let _ = writeln!(x, "        </Attribute>");
    }
    let _ = writeln!(x, "      </Grid>");
    x
}

/// The XDMF document of one step alone, as one uniform grid with no time (what `meshio.read` and
/// `meshio convert` expect: a domain holding one grid of topology, geometry and attributes).
pub(crate) fn render_single(mesh: &MeshLayout, step: &StepEntry) -> String {
    let grid = render_grid(mesh, step);
    // No `<Time>`: meshio's single-grid reader rejects it; the grid's name carries it.
    let grid: String = grid
        .lines()
        .filter(|l| !l.trim_start().starts_with("<Time "))
        .map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or(l)))
        .collect();
    let grid = grid.replacen(
        &format!("Name=\"step_{:06}\"", step.step),
        &format!(
            "Name=\"step_{:06} (load factor {})\"",
            step.step,
            time_text(step.load_factor)
        ),
        1,
    );
    format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<Xdmf Version=\"3.0\">\n  <Domain>\n{grid}  \
         </Domain>\n</Xdmf>\n"
    )
}

/// The whole document for `steps` at once (what the log holds after appending them, less the
/// reserved space); used by tests.
#[cfg(test)]
pub(crate) fn render(mesh: &MeshLayout, steps: &[StepEntry]) -> String {
    let mut x = head();
    for s in steps {
        x.push_str(&render_grid(mesh, s));
    }
    x.push_str(TAIL);
    x
}

/// Relative distance within which a time value is float noise: a sum of increments such as
/// `0.1 + 0.2 = 0.30000000000000004` is written `0.3`.
const TIME_NOISE: f64 = 1e-12;

/// The most significant digits of a decimal that a time is snapped to: a value with no short
/// decimal near it (`1/3`) is written with every digit.
const TIME_DIGITS: usize = 10;

/// `t` as the shortest decimal of at most [`TIME_DIGITS`] digits within [`TIME_NOISE`] of it, or
/// else its shortest round-trip representation (`0.3`, `1.0`, `2.5e-7`, `0.3333333333333333`),
/// so that times summed from increments carry no float noise into the XDMF and `.pvd` files
/// (the HDF5 attributes keep every bit).
pub(crate) fn time_text(t: f64) -> String {
    if !t.is_finite() || t == 0.0 {
        return format!("{t:?}");
    }
    for digits in 1..=TIME_DIGITS {
        let rounded: f64 = match format!("{:.*e}", digits - 1, t).parse() {
            Ok(v) => v,
            Err(_) => break,
        };
        if (rounded - t).abs() <= TIME_NOISE * t.abs() {
            return format!("{rounded:?}");
        }
    }
    format!("{t:?}")
}

/// A `DataItem` referencing an 8-byte dataset of shape `rows x columns` (`rows` when 1 column).
fn data_item(x: &mut String, h5: &str, path: &str, rows: usize, columns: usize, number: &str) {
    data_item_of(x, h5, path, [rows, columns], number, 8);
}

/// A `DataItem` referencing a dataset of `[rows, columns]` (`rows` when 1 column) with values of
/// `precision` bytes.
fn data_item_of(
    x: &mut String,
    h5: &str,
    path: &str,
    [rows, columns]: [usize; 2],
    number: &str,
    precision: usize,
) {
    let dims = if columns == 1 {
        rows.to_string()
    } else {
        format!("{rows} {columns}")
    };
    let _ = writeln!(
        x,
        "          <DataItem Dimensions=\"{dims}\" NumberType=\"{number}\" \
         Precision=\"{precision}\" Format=\"HDF\">{h5}:{path}</DataItem>"
    );
}

/// Escapes the XML special characters.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sums of increments are written without their float noise; exact values as they are.
    #[test]
    fn times_carry_no_float_noise() {
        let mut t = 0.0;
        let mut written = Vec::new();
        for _ in 0..10 {
            t += 0.1;
            written.push(time_text(t));
        }
        assert_eq!(t, 0.9999999999999999);
        assert_eq!(
            written,
            ["0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1.0"]
        );
        assert_eq!(time_text(0.6000000000000001), "0.6");
        for exact in [
            0.0,
            1.0,
            0.125,
            2.5e-7,
            1.0 / 3.0,
            2.0 / 3.0,
            123456.789,
            -4.0,
        ] {
            let text = time_text(exact);
            let back: f64 = text.parse().unwrap();
            assert_eq!(back, exact, "{exact} -> {text}");
        }
        assert_eq!(time_text(1.0 / 3.0), "0.3333333333333333");
        assert_eq!(time_text(0.0), "0.0");
        assert_eq!(time_text(2.5e-7), "2.5e-7");
    }

    #[test]
    fn renders_topology_time_and_attributes() {
        let mesh = MeshLayout {
            h5_name: "a&b.h5".into(),
            n_nodes: 64,
            n_cells: 1,
            nodes_per_cell: 27,
            has_material: false,
            node_indicators: vec!["clamp".into()],
            cell_indicators: Vec::new(),
        };
        let steps = [StepEntry {
            step: 3,
            load_factor: 0.1,
            fields: vec![
                FieldEntry {
                    name: "cauchy_stress",
                    center: Center::Cell,
                    kind: AttributeType::Tensor6,
                    precision: 8,
                },
                FieldEntry {
                    name: "jacobian",
                    center: Center::Cell,
                    kind: AttributeType::Scalar,
                    precision: 8,
                },
            ],
        }];
        let x = render(&mesh, &steps);
        assert!(x.contains("<Time Value=\"0.1\"/>"));
        assert!(
            x.contains("<Attribute Name=\"set:clamp\" AttributeType=\"Scalar\" Center=\"Node\">")
        );
        assert!(x.contains("a&amp;b.h5:/mesh/indicators/nodes/clamp</DataItem>"));
        assert!(x.contains("TopologyType=\"Hexahedron_27\" NumberOfElements=\"1\""));
        assert!(x.contains("Dimensions=\"1 27\" NumberType=\"Int\""));
        assert!(x.contains(">a&amp;b.h5:/steps/000003/cauchy_stress</DataItem>"));
        assert!(x.contains("AttributeType=\"Tensor6\" Center=\"Cell\""));
        assert!(x.contains("Dimensions=\"1\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">a&amp;b.h5:/steps/000003/jacobian"));
        let empty = render(&mesh, &[]);
        let noisy = StepEntry {
            load_factor: 0.1 + 0.2,
            ..steps[0].clone()
        };
        assert!(render(&mesh, std::slice::from_ref(&noisy)).contains("<Time Value=\"0.3\"/>"));
        assert!(render_single(&mesh, &noisy).contains("(load factor 0.3)"));
        assert!(empty.contains("CollectionType=\"Temporal\">\n    </Grid>"));
    }
}
