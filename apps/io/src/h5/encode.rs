//! Byte layouts of the HDF5 structures the writer uses (HDF5 file format specification,
//! version 0 superblock and version 1 object headers, which every HDF5 library since 1.0
//! reads): superblock, object header and its messages, local heap, symbol table node, group
//! B-tree node. Addresses and lengths are 8 bytes, little-endian; no structure has a checksum.

/// The undefined address.
pub const UNDEF: u64 = u64::MAX;
/// Group leaf node K: a symbol table node holds up to `2 K` links.
pub const LEAF_K: usize = 4;
/// Group internal node K: a group B-tree node has up to `2 K` children.
pub const NODE_K: usize = 16;
/// Bytes of the version 0 superblock (with its root symbol table entry).
pub const SUPERBLOCK_SIZE: usize = 96;
/// Bytes of a symbol table entry.
const ENTRY_SIZE: usize = 40;
/// Bytes of a symbol table node as readers load it (always allocated in full).
pub const SNOD_SIZE: usize = 8 + 2 * LEAF_K * ENTRY_SIZE;
/// Bytes of a group B-tree node as readers load it (always allocated in full).
pub const BTREE_SIZE: usize = 24 + 2 * NODE_K * 8 + (2 * NODE_K + 1) * 8;
/// Bytes of a local heap header.
pub const HEAP_HEADER_SIZE: usize = 32;
/// "No free block" in a local heap header (the HDF5 library's `H5HL_FREE_NULL`).
const HEAP_FREE_NULL: u64 = 1;

/// Rounds up to a multiple of 8 (the alignment of heap entries and version 1 messages).
pub fn align8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// A symbol table entry without cached addresses (cache type 0): readers follow the object
/// header.
fn put_entry(out: &mut Vec<u8>, name_offset: u64, object_header: u64) {
    put_u64(out, name_offset);
    put_u64(out, object_header);
    put_u32(out, 0);
    put_u32(out, 0);
    out.extend_from_slice(&[0; 16]);
}

/// The superblock: the file's one mutable structure. Rewriting it (96 bytes at offset 0, inside
/// the first page) commits every structure appended before it.
pub fn superblock(end_of_file: u64, root_object_header: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(SUPERBLOCK_SIZE);
    out.extend_from_slice(b"\x89HDF\r\n\x1a\n");
    // Versions: superblock, free space, root entry, reserved, shared headers; sizes of
    // offsets and lengths; reserved.
    out.extend_from_slice(&[0, 0, 0, 0, 0, 8, 8, 0]);
    put_u16(&mut out, LEAF_K as u16);
    put_u16(&mut out, NODE_K as u16);
    put_u32(&mut out, 0); // file consistency flags
    put_u64(&mut out, 0); // base address
    put_u64(&mut out, UNDEF); // free-space info
    put_u64(&mut out, end_of_file);
    put_u64(&mut out, UNDEF); // driver information block
    put_entry(&mut out, 0, root_object_header);
    debug_assert_eq!(out.len(), SUPERBLOCK_SIZE);
    out
}

/// A local heap header whose data segment (`size` bytes at `data`) has no free list.
pub fn heap_header(size: u64, data: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEAP_HEADER_SIZE);
    out.extend_from_slice(b"HEAP");
    out.extend_from_slice(&[0, 0, 0, 0]);
    put_u64(&mut out, size);
    put_u64(&mut out, HEAP_FREE_NULL);
    put_u64(&mut out, data);
    out
}

/// A symbol table node holding `entries` (heap offset of the name, object header), sorted by
/// name, at most `2 LEAF_K`.
pub fn symbol_node(entries: &[(u64, u64)]) -> Vec<u8> {
    debug_assert!(entries.len() <= 2 * LEAF_K);
    let mut out = Vec::with_capacity(SNOD_SIZE);
    out.extend_from_slice(b"SNOD");
    out.extend_from_slice(&[1, 0]);
    put_u16(&mut out, entries.len() as u16);
    for &(name, header) in entries {
        put_entry(&mut out, name, header);
    }
    out.resize(SNOD_SIZE, 0);
    out
}

/// A group B-tree node at `level` (0: children are symbol table nodes) with `children` and
/// `keys` (`children.len() + 1` heap offsets of names: child `i` holds the names `n` with
/// `keys[i] < n <= keys[i + 1]`). Siblings are left undefined (readers descend from the root).
pub fn btree_node(level: u8, keys: &[u64], children: &[u64]) -> Vec<u8> {
    debug_assert_eq!(keys.len(), children.len() + 1);
    debug_assert!(children.len() <= 2 * NODE_K);
    let mut out = Vec::with_capacity(BTREE_SIZE);
    out.extend_from_slice(b"TREE");
    out.extend_from_slice(&[0, level]);
    put_u16(&mut out, children.len() as u16);
    put_u64(&mut out, UNDEF);
    put_u64(&mut out, UNDEF);
    for (key, child) in keys.iter().zip(children) {
        put_u64(&mut out, *key);
        put_u64(&mut out, *child);
    }
    put_u64(&mut out, keys[children.len()]);
    out.resize(BTREE_SIZE, 0);
    out
}

/// A header message: type and data (padded to 8 bytes here).
pub struct Message {
    kind: u16,
    flags: u8,
    data: Vec<u8>,
}

/// A version 1 object header holding `messages`, reference count 1.
pub fn object_header(messages: &[Message]) -> Vec<u8> {
    let body: usize = messages.iter().map(|m| 8 + align8(m.data.len())).sum();
    let mut out = Vec::with_capacity(16 + body);
    out.extend_from_slice(&[1, 0]);
    put_u16(&mut out, messages.len() as u16);
    put_u32(&mut out, 1);
    put_u32(&mut out, body as u32);
    put_u32(&mut out, 0); // pads the prefix to 16 bytes
    for m in messages {
        put_u16(&mut out, m.kind);
        put_u16(&mut out, align8(m.data.len()) as u16);
        out.extend_from_slice(&[m.flags, 0, 0, 0]);
        out.extend_from_slice(&m.data);
        out.resize(align8(out.len()), 0);
    }
    out
}

/// Element types of the datasets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Element {
    /// IEEE 754 binary64, little-endian.
    F64,
    /// IEEE 754 binary32, little-endian (fields for viewing: `output.precision: single`).
    F32,
    /// Two's complement 64-bit signed integer, little-endian.
    I64,
}

fn datatype_bytes(element: Element) -> Vec<u8> {
    let mut out = Vec::with_capacity(24);
    match element {
        Element::F64 => {
            // Version 1, class 1 (floating point); little-endian, implied mantissa MSB, sign at
            // bit 63; size 8; offset 0, precision 64, exponent at 52 (11 bits), mantissa at 0
            // (52 bits), bias 1023.
            out.extend_from_slice(&[0x11, 0x20, 63, 0]);
            put_u32(&mut out, 8);
            put_u16(&mut out, 0);
            put_u16(&mut out, 64);
            out.extend_from_slice(&[52, 11, 0, 52]);
            put_u32(&mut out, 1023);
        }
        Element::F32 => {
            // Version 1, class 1 (floating point); little-endian, implied mantissa MSB, sign at
            // bit 31; size 4; offset 0, precision 32, exponent at 23 (8 bits), mantissa at 0
            // (23 bits), bias 127 (the HDF5 library's `H5T_IEEE_F32LE`).
            out.extend_from_slice(&[0x11, 0x20, 31, 0]);
            put_u32(&mut out, 4);
            put_u16(&mut out, 0);
            put_u16(&mut out, 32);
            out.extend_from_slice(&[23, 8, 0, 23]);
            put_u32(&mut out, 127);
        }
        Element::I64 => {
            // Version 1, class 0 (fixed point); little-endian, signed; size 8; offset 0,
            // precision 64.
            out.extend_from_slice(&[0x10, 0x08, 0, 0]);
            put_u32(&mut out, 8);
            put_u16(&mut out, 0);
            put_u16(&mut out, 64);
        }
    }
    out
}

impl Element {
    /// Bytes of one value.
    pub fn size(self) -> usize {
        match self {
            Element::F32 => 4,
            Element::F64 | Element::I64 => 8,
        }
    }
}

/// Version 1 dataspace: simple with `dims`, or scalar when `dims` is empty.
fn dataspace_bytes(dims: &[usize]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + 8 * dims.len());
    out.extend_from_slice(&[1, dims.len() as u8, 0, 0, 0, 0, 0, 0]);
    for &d in dims {
        put_u64(&mut out, d as u64);
    }
    out
}

pub fn dataspace(dims: &[usize]) -> Message {
    Message {
        kind: 0x0001,
        flags: 0,
        data: dataspace_bytes(dims),
    }
}

pub fn datatype(element: Element) -> Message {
    Message {
        kind: 0x0003,
        flags: 1,
        data: datatype_bytes(element),
    }
}

/// Fill value message, version 2: storage allocated early, no fill value defined.
pub fn fill_value() -> Message {
    Message {
        kind: 0x0005,
        flags: 1,
        data: vec![2, 1, 2, 0],
    }
}

/// Data layout message, version 3, contiguous: `size` bytes at `address` (undefined when empty).
pub fn contiguous_layout(address: u64, size: u64) -> Message {
    let mut data = vec![3, 1];
    put_u64(&mut data, address);
    put_u64(&mut data, size);
    Message {
        kind: 0x0008,
        flags: 0,
        data,
    }
}

/// Symbol table message of an old-style group: its B-tree root and local heap.
pub fn symbol_table(btree: u64, heap: u64) -> Message {
    let mut data = Vec::with_capacity(16);
    put_u64(&mut data, btree);
    put_u64(&mut data, heap);
    Message {
        kind: 0x0011,
        flags: 0,
        data,
    }
}

/// Attribute message, version 1: a scalar f64 named `name`.
pub fn scalar_f64_attribute(name: &str, value: f64) -> Message {
    let datatype = datatype_bytes(Element::F64);
    let dataspace = dataspace_bytes(&[]);
    let mut data = vec![1, 0];
    put_u16(&mut data, (name.len() + 1) as u16);
    put_u16(&mut data, datatype.len() as u16);
    put_u16(&mut data, dataspace.len() as u16);
    // Name (with its terminating NUL), datatype and dataspace, each padded to 8 bytes.
    let mut name_z = name.as_bytes().to_vec();
    name_z.push(0);
    for part in [&name_z, &datatype, &dataspace] {
        data.extend_from_slice(part);
        data.resize(align8(data.len()), 0);
    }
    data.extend_from_slice(&value.to_le_bytes());
    Message {
        kind: 0x000C,
        flags: 0,
        data,
    }
}
