//! Mesh files of any supported format, recognised from their content: [`read_mesh`].
//!
//! Recognised: gzip data and text starting with `$` (Gmsh MSH, read by [`crate::gmsh`]), the
//! netCDF classic magic `CDF\x01`, `CDF\x02`, `CDF\x05` and HDF5 files (Exodus II, classic or
//! netCDF-4, [`crate::exodus`], which names an HDF5 file that is no Exodus mesh: MED, CGNS,
//! hexfem's own output), text whose first line starts with `*` (Abaqus input,
//! [`crate::abaqus`]). Named and refused with a way to convert them: VTK
//! (XML and legacy), XDMF, Gmsh geometry scripts, Nastran, Ansys, Medit, STL. Anything else
//! with the extension `.msh` goes to the Gmsh reader (whose messages then locate the problem);
//! the rest is refused as unrecognised. Every refusal lists the formats hexfem reads.

use std::path::Path;

use crate::error::MeshError;
use crate::hex_mesh::HexMesh;

/// The formats this crate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeshFormat {
    /// Gmsh MSH 4.1 or 2.2 (ASCII, binary, gzip).
    Gmsh,
    /// Exodus II on netCDF classic, 64-bit offset, 64-bit data or netCDF-4 (HDF5).
    Exodus,
    /// Abaqus input.
    Abaqus,
}

impl MeshFormat {
    pub fn name(self) -> &'static str {
        match self {
            MeshFormat::Gmsh => "Gmsh MSH",
            MeshFormat::Exodus => "Exodus II",
            MeshFormat::Abaqus => "Abaqus input",
        }
    }
}

/// The formats hexfem reads, for messages.
pub const READABLE_FORMATS: &str = "hexfem reads Gmsh MSH 4.1 and 2.2 (.msh, ASCII or binary, \
     gzip too), Exodus II in the netCDF classic, 64-bit offset, 64-bit data or netCDF-4 formats (.exo, .e) and Abaqus \
     input (.inp), with hexahedra of 8 or 27 nodes";

const HDF5_MAGIC: &[u8] = b"\x89HDF\r\n\x1a\n";

/// Whether `bytes` are an HDF5 file: the signature at 0 or after a user block of 512, 1024,
/// 2048, ... bytes.
pub(crate) fn is_hdf5(bytes: &[u8]) -> bool {
    std::iter::once(0)
        .chain((9..20).map(|k| 1usize << k))
        .take_while(|&at| at < bytes.len())
        .any(|at| bytes[at..].starts_with(HDF5_MAGIC))
}

/// The format of a file with these bytes, or the error naming the format it is in (`name`:
/// the file, for messages; its extension decides only for content no format claims).
pub fn detect_format(bytes: &[u8], name: &str) -> Result<MeshFormat, MeshError> {
    let refuse = |message: String| MeshError::Format {
        source_name: name.to_owned(),
        message: format!("{message}; {READABLE_FORMATS}"),
    };
    if bytes.starts_with(&[0x1f, 0x8b]) {
        return Ok(MeshFormat::Gmsh);
    }
    if matches!(bytes, [b'C', b'D', b'F', 1 | 2 | 5, ..]) {
        return Ok(MeshFormat::Exodus);
    }
    // HDF5: netCDF-4 Exodus II, or another HDF5 format the Exodus reader then names
    if is_hdf5(bytes) {
        return Ok(MeshFormat::Exodus);
    }
    let head = &bytes[..bytes.len().min(4096)];
    let text = String::from_utf8_lossy(head);
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let lower = text.to_ascii_lowercase();
    if first.starts_with('$') {
        return Ok(MeshFormat::Gmsh);
    }
    if first.starts_with('*') {
        return Ok(MeshFormat::Abaqus);
    }
    let convert = |what: &str, ext: &str| {
        refuse(format!(
            "{what}: convert it with `meshio convert IN.{ext} OUT.msh` (meshio keeps cell \
             blocks but no face sets; define those as Gmsh physical groups), or export Gmsh, \
             Exodus II or Abaqus input from the tool that made it"
        ))
    };
    if lower.contains("<vtkfile") {
        return Err(convert("a VTK XML file (VTU)", "vtu"));
    }
    if first.starts_with("# vtk DataFile") {
        return Err(convert("a legacy VTK file", "vtk"));
    }
    if lower.contains("<xdmf") {
        return Err(convert("an XDMF file", "xdmf"));
    }
    if first.starts_with("MeshVersionFormatted") {
        return Err(convert("a Medit mesh", "mesh"));
    }
    if lower.contains("begin bulk") || first.starts_with("GRID") || first.starts_with("SOL ") {
        return Err(convert("a Nastran bulk data file", "bdf"));
    }
    if lower.contains("nblock") || first.starts_with("/PREP7") {
        return Err(convert("an Ansys archive (CDB)", "cdb"));
    }
    if first.starts_with("solid") && lower.contains("facet") {
        return Err(refuse(
            "an STL surface: mesh its volume with hexahedra first (Gmsh, Cubit)".into(),
        ));
    }
    let geo_words = ["setfactory", "point(", "merge ", "mesh.", "// gmsh"];
    if geo_words.iter().any(|w| lower.contains(w)) && !first.starts_with('$') {
        return Err(refuse(
            "a Gmsh geometry script (.geo), not a mesh: mesh it with `gmsh IN.geo -3 -format \
             msh41 -o OUT.msh`"
                .into(),
        ));
    }
    if Path::new(name)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("msh"))
    {
        return Ok(MeshFormat::Gmsh);
    }
    Err(refuse(format!(
        "the format is not recognised (starts with {:?})",
        first.chars().take(40).collect::<String>()
    )))
}

/// Reads the mesh file at `path` in whichever supported format its content is.
pub fn read_mesh(path: impl AsRef<Path>) -> Result<HexMesh, MeshError> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|error| MeshError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    let name = path.display().to_string();
    match detect_format(&bytes, &name)? {
        // The Gmsh reader reads the file again (it inflates gzip data itself).
        MeshFormat::Gmsh => crate::gmsh::read_gmsh(path),
        MeshFormat::Exodus => crate::exodus::read_exodus_file(&bytes, path),
        MeshFormat::Abaqus => crate::abaqus::parse_abaqus_bytes(&bytes, &name),
    }
}
