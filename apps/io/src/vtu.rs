//! Optional VTK XML output: one `<name>_vtu/step_NNNNNN.vtu` per step (unstructured grid, data
//! inline as base64 binary) listed in the ParaView collection `<name>.pvd`.
//!
//! Each `.vtu` file is written whole and renamed into place; the collection is appended like the
//! XDMF file (reserved space in a processing instruction, one small commit write per step), so a
//! kill leaves a collection that lists only complete files.

use std::fmt::Write;
use std::fs;
use std::path::{Path, PathBuf};

use super::atomic::write_atomic;
use super::data::{Center, MeshData};
use super::faults::Faults;
use super::xdmf::XmlLog;
use super::{OutputError, StepData};

/// VTK cell types of the hexahedra.
const VTK_HEXAHEDRON: u8 = 12;
const VTK_TRIQUADRATIC_HEXAHEDRON: u8 = 29;

const PVD_HEAD: &str = "<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"0.1\" \
                        byte_order=\"LittleEndian\">\n  <Collection>\n";
const PVD_TAIL: &str = "  </Collection>\n</VTKFile>\n";

/// The VTU files and their collection.
pub(crate) struct VtuWriter {
    folder_name: String,
    folder: PathBuf,
    pvd: XmlLog,
    faults: Faults,
    coordinates: Vec<f64>,
    connectivity: Vec<i64>,
    nodes_per_cell: usize,
    material: Option<Vec<i64>>,
}

impl VtuWriter {
    /// Creates `<dir>/<name>_vtu/` and an empty `<dir>/<name>.pvd`, keeping a copy of the mesh.
    pub fn create(
        dir: &Path,
        name: &str,
        mesh: &MeshData,
        faults: &Faults,
    ) -> Result<Self, OutputError> {
        let folder_name = format!("{name}_vtu");
        let folder = dir.join(&folder_name);
        fs::create_dir_all(&folder).map_err(|source| OutputError::Io {
            path: folder.clone(),
            source,
        })?;
        let pvd =
            XmlLog::create_with(&dir.join(format!("{name}.pvd")), PVD_HEAD, PVD_TAIL, faults)?;
        Ok(VtuWriter {
            folder_name,
            folder,
            pvd,
            faults: faults.clone(),
            coordinates: mesh.coordinates.as_flattened().to_vec(),
            connectivity: mesh.connectivity.iter().map(|&i| i as i64).collect(),
            nodes_per_cell: mesh.nodes_per_cell,
            material: mesh.material.map(|m| m.iter().map(|&i| i as i64).collect()),
        })
    }

    /// The collection file.
    pub fn pvd_path(&self) -> &Path {
        self.pvd.path()
    }

    /// Writes the step's `.vtu` file, then lists it in the collection.
    pub fn write_step(&mut self, data: &StepData) -> Result<(), OutputError> {
        let file_name = format!("step_{:06}.vtu", data.step);
        let path = self.folder.join(&file_name);
        write_atomic(&path, self.render(data).as_bytes(), &self.faults)?;
        self.pvd.append_text(format!(
            "    <DataSet timestep=\"{}\" group=\"\" part=\"0\" file=\"{}/{}\"/>\n",
            super::xdmf::time_text(data.load_factor),
            escape_attr(&self.folder_name),
            file_name
        ))
    }

    fn render(&self, data: &StepData) -> String {
        let n_nodes = self.coordinates.len() / 3;
        let n_cells = self.connectivity.len() / self.nodes_per_cell;
        let mut x = String::new();
        let _ = writeln!(x, "<?xml version=\"1.0\"?>");
        let _ = writeln!(
            x,
            "<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\" \
             header_type=\"UInt64\">"
        );
        let _ = writeln!(x, "  <UnstructuredGrid>");
        let _ = writeln!(
            x,
            "    <Piece NumberOfPoints=\"{n_nodes}\" NumberOfCells=\"{n_cells}\">"
        );
        let fields = data.fields();
        for (center, tag) in [(Center::Node, "PointData"), (Center::Cell, "CellData")] {
            let _ = writeln!(x, "      <{tag}>");
            if center == Center::Cell {
                if let Some(material) = &self.material {
                    array(&mut x, "Int64", "material", 1, &i64_bytes(material));
                }
            }
            for f in fields.iter().filter(|f| f.center == center) {
                array(
                    &mut x,
                    "Float64",
                    f.name,
                    f.kind.components(),
                    &f64_bytes(f.values),
                );
            }
            let _ = writeln!(x, "      </{tag}>");
        }
        let _ = writeln!(x, "      <Points>");
        array(
            &mut x,
            "Float64",
            "coordinates",
            3,
            &f64_bytes(&self.coordinates),
        );
        let _ = writeln!(x, "      </Points>");
        let _ = writeln!(x, "      <Cells>");
        array(
            &mut x,
            "Int64",
            "connectivity",
            1,
            &i64_bytes(&self.connectivity),
        );
        let offsets: Vec<i64> = (1..=n_cells)
            .map(|c| (c * self.nodes_per_cell) as i64)
            .collect();
        array(&mut x, "Int64", "offsets", 1, &i64_bytes(&offsets));
        let cell_type = if self.nodes_per_cell == 27 {
            VTK_TRIQUADRATIC_HEXAHEDRON
        } else {
            VTK_HEXAHEDRON
        };
        array(&mut x, "UInt8", "types", 1, &vec![cell_type; n_cells]);
        let _ = writeln!(x, "      </Cells>");
        let _ = writeln!(x, "    </Piece>");
        let _ = writeln!(x, "  </UnstructuredGrid>");
        let _ = writeln!(x, "</VTKFile>");
        x
    }
}

/// A `DataArray` in VTK's inline binary form: base64 of a UInt64 byte count and the bytes.
fn array(x: &mut String, kind: &str, name: &str, components: usize, bytes: &[u8]) {
    let mut block = (bytes.len() as u64).to_le_bytes().to_vec();
    block.extend_from_slice(bytes);
    let _ = writeln!(
        x,
        "        <DataArray type=\"{kind}\" Name=\"{name}\" NumberOfComponents=\"{components}\" \
         format=\"binary\">{}</DataArray>",
        base64(&block)
    );
}

fn f64_bytes(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn i64_bytes(values: &[i64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> shift & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Escapes the XML special characters of an attribute value.
fn escape_attr(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard_vectors() {
        for (input, expected) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(input.as_bytes()), expected, "{input}");
        }
    }
}
