//! XDMF 3 description of the HDF5 results: a temporal collection with one uniform grid per
//! written step, every array referenced by its HDF5 path.

use std::fmt::Write;

use super::data::{AttributeType, Center};

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
}

/// A field written at a step.
#[derive(Clone, Debug)]
pub(crate) struct FieldEntry {
    pub name: &'static str,
    pub center: Center,
    pub kind: AttributeType,
}

/// A step written to the HDF5 file.
#[derive(Clone, Debug)]
pub(crate) struct StepEntry {
    pub step: usize,
    pub load_factor: f64,
    pub fields: Vec<FieldEntry>,
}

/// The XDMF document for `steps` (possibly none: an empty collection).
pub(crate) fn render(mesh: &MeshLayout, steps: &[StepEntry]) -> String {
    let h5 = escape(&mesh.h5_name);
    let topology = match mesh.nodes_per_cell {
        27 => "Hexahedron_27",
        _ => "Hexahedron",
    };
    let mut x = String::new();
    // `write!` to a String cannot fail.
    let _ = writeln!(x, "<?xml version=\"1.0\" encoding=\"utf-8\"?>");
    let _ = writeln!(x, "<Xdmf Version=\"3.0\">");
    let _ = writeln!(x, "  <Domain>");
    let _ = writeln!(
        x,
        "    <Grid Name=\"results\" GridType=\"Collection\" CollectionType=\"Temporal\">"
    );
    for s in steps {
        let group = step_group(s.step);
        let _ = writeln!(
            x,
            "      <Grid Name=\"step_{:06}\" GridType=\"Uniform\">",
            s.step
        );
        // `{:?}` prints the shortest representation that reads back to the same f64.
        let _ = writeln!(x, "        <Time Value=\"{:?}\"/>", s.load_factor);
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
            data_item(&mut x, &h5, &path, rows, f.kind.components(), "Float");
            let _ = writeln!(x, "        </Attribute>");
        }
        let _ = writeln!(x, "      </Grid>");
    }
    let _ = writeln!(x, "    </Grid>");
    let _ = writeln!(x, "  </Domain>");
    let _ = writeln!(x, "</Xdmf>");
    x
}

/// A `DataItem` referencing an 8-byte dataset of shape `rows x columns` (`rows` when 1 column).
fn data_item(x: &mut String, h5: &str, path: &str, rows: usize, columns: usize, number: &str) {
    let dims = if columns == 1 {
        rows.to_string()
    } else {
        format!("{rows} {columns}")
    };
    let _ = writeln!(
        x,
        "          <DataItem Dimensions=\"{dims}\" NumberType=\"{number}\" Precision=\"8\" \
         Format=\"HDF\">{h5}:{path}</DataItem>"
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

    #[test]
    fn renders_topology_time_and_attributes() {
        let mesh = MeshLayout {
            h5_name: "a&b.h5".into(),
            n_nodes: 64,
            n_cells: 1,
            nodes_per_cell: 27,
        };
        let steps = [StepEntry {
            step: 3,
            load_factor: 0.1,
            fields: vec![
                FieldEntry {
                    name: "cauchy_stress",
                    center: Center::Cell,
                    kind: AttributeType::Tensor6,
                },
                FieldEntry {
                    name: "jacobian",
                    center: Center::Cell,
                    kind: AttributeType::Scalar,
                },
            ],
        }];
        let x = render(&mesh, &steps);
        assert!(x.contains("<Time Value=\"0.1\"/>"));
        assert!(x.contains("TopologyType=\"Hexahedron_27\" NumberOfElements=\"1\""));
        assert!(x.contains("Dimensions=\"1 27\" NumberType=\"Int\""));
        assert!(x.contains(">a&amp;b.h5:/steps/000003/cauchy_stress</DataItem>"));
        assert!(x.contains("AttributeType=\"Tensor6\" Center=\"Cell\""));
        assert!(x.contains("Dimensions=\"1\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">a&amp;b.h5:/steps/000003/jacobian"));
        let empty = render(&mesh, &[]);
        assert!(empty.contains("CollectionType=\"Temporal\">\n    </Grid>"));
    }
}
