//! A reader of the netCDF classic formats: CDF-1 (classic), CDF-2 (64-bit offset) and CDF-5
//! (64-bit data), as the netCDF User's Guide, "File format specification", defines them.
//!
//! The header (dimensions, global attributes, variables with their attributes, types and
//! offsets) is parsed once; the values of a fixed-size (non-record) variable are read on request.
//! All numbers are big-endian. Counts in the file are untrusted: a header whose counts exceed
//! what its remaining bytes could hold, or a variable extending past the end of the file, is an
//! error naming the header byte or the variable, never an allocation failure or a panic.

/// The data types of the classic formats (CDF-5 adds the unsigned and 64-bit ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NcType {
    Byte,
    Char,
    Short,
    Int,
    Float,
    Double,
    UByte,
    UShort,
    UInt,
    Int64,
    UInt64,
}

impl NcType {
    fn from_code(code: u32) -> Option<Self> {
        Some(match code {
            1 => NcType::Byte,
            2 => NcType::Char,
            3 => NcType::Short,
            4 => NcType::Int,
            5 => NcType::Float,
            6 => NcType::Double,
            7 => NcType::UByte,
            8 => NcType::UShort,
            9 => NcType::UInt,
            10 => NcType::Int64,
            11 => NcType::UInt64,
            _ => return None,
        })
    }

    fn size(self) -> u64 {
        match self {
            NcType::Byte | NcType::Char | NcType::UByte => 1,
            NcType::Short | NcType::UShort => 2,
            NcType::Int | NcType::Float | NcType::UInt => 4,
            NcType::Double | NcType::Int64 | NcType::UInt64 => 8,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            NcType::Byte => "byte",
            NcType::Char => "char",
            NcType::Short => "short",
            NcType::Int => "int",
            NcType::Float => "float",
            NcType::Double => "double",
            NcType::UByte => "ubyte",
            NcType::UShort => "ushort",
            NcType::UInt => "uint",
            NcType::Int64 => "int64",
            NcType::UInt64 => "uint64",
        }
    }
}

/// An error of the netCDF layer: where (a header byte or a variable) and what.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NcError {
    /// `"header byte 123"` or `"variable 'coordx'"`.
    pub place: String,
    pub message: String,
}

#[derive(Debug, Clone)]
pub(crate) struct Dim {
    pub name: String,
    /// 0 for the record (unlimited) dimension.
    pub len: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct Attribute {
    pub name: String,
    pub nc_type: NcType,
    /// The raw big-endian values.
    pub bytes: Vec<u8>,
}

impl Attribute {
    /// The value of a character attribute, up to its first NUL.
    pub fn text(&self) -> Option<String> {
        (self.nc_type == NcType::Char).then(|| text_of(&self.bytes))
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Variable {
    pub name: String,
    /// Indices into [`NcFile::dims`].
    pub dims: Vec<usize>,
    pub attributes: Vec<Attribute>,
    pub nc_type: NcType,
    /// Byte offset of the data.
    pub begin: u64,
}

impl Variable {
    pub fn attribute(&self, name: &str) -> Option<&Attribute> {
        self.attributes.iter().find(|a| a.name == name)
    }
}

/// A parsed netCDF classic file.
#[derive(Debug)]
pub(crate) struct NcFile<'a> {
    bytes: &'a [u8],
    pub dims: Vec<Dim>,
    pub variables: Vec<Variable>,
}

const NC_DIMENSION: u32 = 0x0A;
const NC_VARIABLE: u32 = 0x0B;
const NC_ATTRIBUTE: u32 = 0x0C;

/// Cursor over the header.
struct Header<'a> {
    bytes: &'a [u8],
    pos: usize,
    version: u8,
}

impl<'a> Header<'a> {
    fn error(&self, message: impl Into<String>) -> NcError {
        NcError {
            place: format!("header byte {}", self.pos),
            message: message.into(),
        }
    }

    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8], NcError> {
        let left = (self.bytes.len() - self.pos) as u64;
        if n > left {
            return Err(self.error(format!(
                "{what}: {n} bytes announced, only {left} left in the file (truncated?)"
            )));
        }
        let start = self.pos;
        self.pos += n as usize;
        Ok(&self.bytes[start..self.pos])
    }

    fn u32(&mut self, what: &str) -> Result<u32, NcError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &str) -> Result<u64, NcError> {
        let b = self.take(8, what)?;
        let mut a = [0; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }

    /// A count (`NON_NEG`): 32 bits, 64 bits in CDF-5.
    fn count(&mut self, what: &str) -> Result<u64, NcError> {
        if self.version == 5 {
            self.u64(what)
        } else {
            Ok(u64::from(self.u32(what)?))
        }
    }

    /// A count of items of at least `min_bytes` each, checked against the bytes left.
    fn count_of(&mut self, what: &str, min_bytes: u64) -> Result<usize, NcError> {
        let n = self.count(what)?;
        let left = (self.bytes.len() - self.pos) as u64;
        if n.saturating_mul(min_bytes) > left {
            return Err(self.error(format!(
                "{what} is {n}, more than the {left} bytes left could hold (corrupt or truncated \
                 file)"
            )));
        }
        Ok(n as usize)
    }

    fn padded(&mut self, n: u64, what: &str) -> Result<&'a [u8], NcError> {
        let data = self.take(n, what)?;
        let pad = (4 - n % 4) % 4;
        self.take(pad, what)?;
        Ok(data)
    }

    fn name(&mut self, what: &str) -> Result<String, NcError> {
        let n = self.count(what)?;
        let bytes = self.padded(n, what)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| self.error(format!("{what} is not UTF-8")))
    }

    /// `ABSENT` or `tag nelems [items]`: the number of items, 0 when absent.
    fn list_header(&mut self, tag: u32, what: &str, min_bytes: u64) -> Result<usize, NcError> {
        let at = self.pos;
        let found = self.u32(what)?;
        if found == 0 {
            let n = self.count(what)?;
            if n != 0 {
                self.pos = at;
                return Err(self.error(format!("{what}: absent list with {n} elements")));
            }
            return Ok(0);
        }
        if found != tag {
            self.pos = at;
            return Err(self.error(format!(
                "{what}: expected tag {tag:#x}, found {found:#x} (corrupt header)"
            )));
        }
        self.count_of(what, min_bytes)
    }

    fn nc_type(&mut self, what: &str) -> Result<NcType, NcError> {
        let at = self.pos;
        let code = self.u32(what)?;
        match NcType::from_code(code) {
            Some(t) if self.version == 5 || code <= 6 => Ok(t),
            _ => {
                self.pos = at;
                Err(self.error(format!("{what}: unknown data type {code}")))
            }
        }
    }

    fn attributes(&mut self, what: &str) -> Result<Vec<Attribute>, NcError> {
        let n = self.list_header(NC_ATTRIBUTE, what, 12)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let name = self.name("attribute name")?;
            let nc_type = self.nc_type(&format!("type of attribute '{name}'"))?;
            let count = self.count(&format!("length of attribute '{name}'"))?;
            let len = count.checked_mul(nc_type.size()).ok_or_else(|| {
                self.error(format!(
                    "attribute '{name}' has an impossible length {count}"
                ))
            })?;
            let bytes = self.padded(len, &format!("values of attribute '{name}'"))?;
            out.push(Attribute {
                name,
                nc_type,
                bytes: bytes.to_vec(),
            });
        }
        Ok(out)
    }
}

fn text_of(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end])
        .trim_end()
        .to_string()
}

impl<'a> NcFile<'a> {
    /// Parses the header of `bytes` (which start with `CDF\x01`, `CDF\x02` or `CDF\x05`).
    pub fn parse(bytes: &'a [u8]) -> Result<Self, NcError> {
        let version = match bytes {
            [b'C', b'D', b'F', v @ (1 | 2 | 5), ..] => *v,
            _ => {
                return Err(NcError {
                    place: "header byte 0".into(),
                    message: "not a netCDF classic file (magic CDF\\x01, \\x02 or \\x05)".into(),
                })
            }
        };
        let mut h = Header {
            bytes,
            pos: 4,
            version,
        };
        // numrecs (may be 0xFFFFFFFF while streaming); record variables are not read.
        h.count("number of records")?;
        let n_dims = h.list_header(NC_DIMENSION, "dimension list", 8)?;
        let mut dims = Vec::with_capacity(n_dims);
        for _ in 0..n_dims {
            let name = h.name("dimension name")?;
            let len = h.count(&format!("length of dimension '{name}'"))?;
            dims.push(Dim { name, len });
        }
        // Global attributes (title, versions, word sizes) do not shape the mesh.
        h.attributes("global attribute list")?;
        let n_vars = h.list_header(NC_VARIABLE, "variable list", 24)?;
        let mut variables = Vec::with_capacity(n_vars);
        for _ in 0..n_vars {
            let name = h.name("variable name")?;
            let rank = h.count_of(&format!("rank of variable '{name}'"), 4)?;
            let mut var_dims = Vec::with_capacity(rank);
            for _ in 0..rank {
                let id = h.count(&format!("dimension id of variable '{name}'"))?;
                if id >= dims.len() as u64 {
                    return Err(h.error(format!(
                        "variable '{name}' names dimension {id}, but the file has {}",
                        dims.len()
                    )));
                }
                var_dims.push(id as usize);
            }
            let attributes = h.attributes(&format!("attributes of variable '{name}'"))?;
            let nc_type = h.nc_type(&format!("type of variable '{name}'"))?;
            h.count(&format!("size of variable '{name}'"))?;
            let begin = if version == 1 {
                u64::from(h.u32(&format!("offset of variable '{name}'"))?)
            } else {
                h.u64(&format!("offset of variable '{name}'"))?
            };
            variables.push(Variable {
                name,
                dims: var_dims,
                attributes,
                nc_type,
                begin,
            });
        }
        Ok(NcFile {
            bytes,
            dims,
            variables,
        })
    }

    /// The length of dimension `name`, if the file has it.
    pub fn dim(&self, name: &str) -> Option<u64> {
        self.dims.iter().find(|d| d.name == name).map(|d| d.len)
    }

    pub fn variable(&self, name: &str) -> Option<&Variable> {
        self.variables.iter().find(|v| v.name == name)
    }

    /// The dimension lengths of `var`.
    pub fn shape(&self, var: &Variable) -> Vec<u64> {
        var.dims.iter().map(|&d| self.dims[d].len).collect()
    }

    fn var_error(var: &Variable, message: impl Into<String>) -> NcError {
        NcError {
            place: format!("variable '{}'", var.name),
            message: message.into(),
        }
    }

    /// The raw bytes of the fixed-size variable `var`, checked to lie inside the file.
    fn data(&self, var: &Variable) -> Result<(&'a [u8], usize), NcError> {
        if var.dims.first().is_some_and(|&d| self.dims[d].len == 0) {
            return Err(Self::var_error(
                var,
                "is a record variable (along the unlimited dimension); a mesh variable has a \
                 fixed size",
            ));
        }
        let count = self
            .shape(var)
            .iter()
            .try_fold(1u64, |acc, &n| acc.checked_mul(n))
            .ok_or_else(|| Self::var_error(var, "has an impossible number of values"))?;
        let len = count
            .checked_mul(var.nc_type.size())
            .ok_or_else(|| Self::var_error(var, "has an impossible size"))?;
        let end = var.begin.checked_add(len);
        match end {
            Some(end) if end <= self.bytes.len() as u64 => Ok((
                &self.bytes[var.begin as usize..end as usize],
                count as usize,
            )),
            _ => Err(Self::var_error(
                var,
                format!(
                    "{count} values of {} bytes at byte {} extend past the end of the file \
                     ({} bytes): truncated file?",
                    var.nc_type.size(),
                    var.begin,
                    self.bytes.len()
                ),
            )),
        }
    }

    /// The values of a numeric variable as `f64` (integers converted exactly up to 2^53).
    pub fn read_f64(&self, var: &Variable) -> Result<Vec<f64>, NcError> {
        let (data, count) = self.data(var)?;
        let size = var.nc_type.size() as usize;
        let mut out = Vec::with_capacity(count);
        for chunk in data.chunks_exact(size) {
            let mut a = [0u8; 8];
            a[..size].copy_from_slice(chunk);
            out.push(match var.nc_type {
                NcType::Float => f64::from(f32::from_be_bytes([a[0], a[1], a[2], a[3]])),
                NcType::Double => f64::from_be_bytes(a),
                NcType::Char => {
                    return Err(Self::var_error(var, "holds characters, not numbers"));
                }
                _ => integer(var.nc_type, chunk) as f64,
            });
        }
        Ok(out)
    }

    /// The values of an integer variable.
    pub fn read_i64(&self, var: &Variable) -> Result<Vec<i64>, NcError> {
        if matches!(var.nc_type, NcType::Float | NcType::Double | NcType::Char) {
            return Err(Self::var_error(
                var,
                format!("has type {}; integers were expected", var.nc_type.name()),
            ));
        }
        let (data, count) = self.data(var)?;
        let size = var.nc_type.size() as usize;
        let mut out = Vec::with_capacity(count);
        for chunk in data.chunks_exact(size) {
            out.push(integer(var.nc_type, chunk));
        }
        Ok(out)
    }

    /// The rows of a 2-d character variable (`[n, len]`), each up to its first NUL.
    pub fn read_strings(&self, var: &Variable) -> Result<Vec<String>, NcError> {
        if var.nc_type != NcType::Char || var.dims.len() != 2 {
            return Err(Self::var_error(
                var,
                "is not a 2-d character variable (a list of names)",
            ));
        }
        let (data, _) = self.data(var)?;
        let width = self.dims[var.dims[1]].len as usize;
        if width == 0 {
            return Ok(Vec::new());
        }
        Ok(data.chunks_exact(width).map(text_of).collect())
    }
}

/// A big-endian integer of type `t` (not float, double or char) from its bytes.
fn integer(t: NcType, b: &[u8]) -> i64 {
    match t {
        NcType::Byte => i64::from(b[0] as i8),
        NcType::UByte => i64::from(b[0]),
        NcType::Short => i64::from(i16::from_be_bytes([b[0], b[1]])),
        NcType::UShort => i64::from(u16::from_be_bytes([b[0], b[1]])),
        NcType::Int => i64::from(i32::from_be_bytes([b[0], b[1], b[2], b[3]])),
        NcType::UInt => i64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])),
        _ => {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[..8]);
            // uint64 beyond i64::MAX cannot be a count or index of a mesh: saturate, the caller
            // range-checks.
            match t {
                NcType::UInt64 => i64::try_from(u64::from_be_bytes(a)).unwrap_or(i64::MAX),
                _ => i64::from_be_bytes(a),
            }
        }
    }
}
