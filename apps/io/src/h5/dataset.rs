//! Contiguous datasets whose data are written in pieces: [`Reserved::append`] reserves a
//! dataset's bytes and appends its object header (the file layout of a dataset written whole),
//! then [`Pieces`] writes values at offsets inside the reserved bytes, in any order, until every
//! value is written; only then may the transaction commit ([`Pieces::finish`] checks it). A
//! kill between pieces leaves the previous committed state: the pieces lie beyond its end.

use std::io;

use rayon::prelude::*;

use super::encode::{self, Element};
use super::AppendFile;

/// Values [`Pieces::put_f64`] and [`Pieces::put_indices`] write at a time (8 MiB of f64: f64
/// and index values straight from the caller's, f32 ones encoded into one buffer). Each write
/// of a piece starts the disk's writeback of its bytes ([`super::AppendFile`]).
pub(crate) const PIECE_VALUES: usize = 1 << 20;

/// f32 values encoded per task of the parallel encoding.
const ENCODE_VALUES: usize = 1 << 13;

/// What an index dataset's values must lie below.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IndexBound {
    /// Not an index dataset (f64 values).
    None,
    /// Every value below this.
    Below(u64),
    /// `[cell, local face]` pairs: cells below this, faces below 6.
    FacePairs(u64),
}

/// One dataset's reserved bytes and the values written so far.
#[derive(Clone, Debug)]
pub(crate) struct Reserved {
    /// Address of the data (undefined for an empty dataset).
    address: u64,
    /// Values (not rows) of the dataset.
    len: usize,
    element: Element,
    bound: IndexBound,
    /// Values written so far (pieces never overlap, so the dataset is complete at `len`).
    written: usize,
    /// Object header of the dataset.
    pub(crate) header: u64,
}

impl Reserved {
    /// Reserves a contiguous dataset of `shape` and appends its object header.
    pub(crate) fn append(
        file: &mut AppendFile,
        element: Element,
        shape: &[usize],
        bound: IndexBound,
    ) -> io::Result<Self> {
        let len: usize = shape.iter().product();
        let bytes = (element.size() * len) as u64;
        let address = if len == 0 {
            encode::UNDEF
        } else {
            file.reserve(bytes)?
        };
        let header = file.alloc(&encode::object_header(&[
            encode::dataspace(shape),
            encode::datatype(element),
            encode::fill_value(),
            encode::contiguous_layout(address, bytes),
        ]))?;
        Ok(Reserved {
            address,
            len,
            element,
            bound,
            written: 0,
            header,
        })
    }
}

/// Writes values into reserved datasets (indexed in the order the writer names). A misplaced
/// piece (outside its dataset, of the wrong type, an index out of range) or an I/O error is kept
/// as the first error and later pieces are ignored, so a caller receiving pieces from other
/// ranks goes on receiving; [`Pieces::finish`] returns it.
pub struct Pieces<'a> {
    file: &'a mut AppendFile,
    datasets: &'a mut [Reserved],
    failed: Option<PieceError>,
    /// The encoded bytes of an f32 piece (reused from piece to piece).
    encoded: Vec<u8>,
}

/// Why pieces failed.
#[derive(Debug)]
pub(crate) enum PieceError {
    Io(io::Error),
    Invalid(String),
}

impl PieceError {
    /// The output error for the file at `path`.
    pub(crate) fn into_output(self, path: &std::path::Path) -> crate::OutputError {
        match self {
            PieceError::Io(source) => crate::OutputError::Io {
                path: path.to_owned(),
                source,
            },
            PieceError::Invalid(m) => crate::OutputError::InvalidData(m),
        }
    }
}

impl<'a> Pieces<'a> {
    pub(crate) fn new(file: &'a mut AppendFile, datasets: &'a mut [Reserved]) -> Self {
        Pieces {
            file,
            datasets,
            failed: None,
            encoded: Vec::new(),
        }
    }

    /// Writes f64 `values` at value `first` of dataset `dataset`: as they are into an f64
    /// dataset, rounded to nearest into an f32 one; [`PIECE_VALUES`] at a time (an f64 piece
    /// straight from `values`, an f32 one encoded in parallel into one buffer; a field of at
    /// most that many values is one write).
    pub fn put_f64(&mut self, dataset: usize, first: usize, values: &[f64]) {
        let single = self.datasets.get(dataset).map(|d| d.element) == Some(Element::F32);
        let element = if single { Element::F32 } else { Element::F64 };
        if self.check(dataset, first, values.len(), element).is_none() {
            return;
        }
        let mut encoded = std::mem::take(&mut self.encoded);
        for (k, piece) in values.chunks(PIECE_VALUES).enumerate() {
            if self.failed.is_some() {
                break;
            }
            let at = first + k * PIECE_VALUES;
            if single {
                encode_f32(piece, &mut encoded);
                self.write(dataset, at, piece.len(), &encoded);
            } else {
                match le_bytes(piece) {
                    Some(bytes) => self.write(dataset, at, piece.len(), bytes),
                    None => {
                        encode_f64(piece, &mut encoded);
                        self.write(dataset, at, piece.len(), &encoded);
                    }
                }
            }
        }
        self.encoded = encoded;
    }

    /// Writes the indices `values` at value `first` of the index dataset `dataset`,
    /// [`PIECE_VALUES`] at a time.
    pub fn put_indices(&mut self, dataset: usize, first: usize, values: &[u64]) {
        let Some(bound) = self.check(dataset, first, values.len(), Element::I64) else {
            return;
        };
        let bad = values.iter().enumerate().find(|&(i, &v)| match bound {
            IndexBound::None => false,
            IndexBound::Below(b) => v >= b,
            IndexBound::FacePairs(cells) => {
                v >= if (first + i).is_multiple_of(2) {
                    cells
                } else {
                    6
                }
            }
        });
        if let Some((i, v)) = bad {
            self.fail(format!(
                "index {v} at value {} of dataset {dataset} is out of range ({bound:?})",
                first + i
            ));
            return;
        }
        let mut encoded = std::mem::take(&mut self.encoded);
        for (k, piece) in values.chunks(PIECE_VALUES).enumerate() {
            if self.failed.is_some() {
                break;
            }
            let at = first + k * PIECE_VALUES;
            // every bound fits in i64 (counts held in memory): a value's i64 bytes are its u64
            // bytes
            match le_bytes(piece) {
                Some(bytes) => self.write(dataset, at, piece.len(), bytes),
                None => {
                    encoded.clear();
                    encoded.extend(piece.iter().flat_map(|&v| (v as i64).to_le_bytes()));
                    self.write(dataset, at, piece.len(), &encoded);
                }
            }
        }
        self.encoded = encoded;
    }

    /// The first error, or an error if a dataset is not complete.
    pub(crate) fn finish(self) -> Result<(), PieceError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        match self.datasets.iter().position(|d| d.written != d.len) {
            Some(i) => Err(PieceError::Invalid(format!(
                "dataset {i}: {} of {} values written",
                self.datasets[i].written, self.datasets[i].len
            ))),
            None => Ok(()),
        }
    }

    fn fail(&mut self, message: String) {
        self.failed.get_or_insert(PieceError::Invalid(message));
    }

    /// The dataset's bound if the piece fits in it (else records the error).
    fn check(
        &mut self,
        dataset: usize,
        first: usize,
        len: usize,
        element: Element,
    ) -> Option<IndexBound> {
        if self.failed.is_some() {
            return None;
        }
        let Some(d) = self.datasets.get(dataset) else {
            self.fail(format!(
                "dataset {dataset} of {} does not exist",
                self.datasets.len()
            ));
            return None;
        };
        if d.element != element || first + len > d.len {
            self.fail(format!(
                "a piece of {len} {element:?} values at {first} does not fit dataset {dataset} of {} {:?} values",
                d.len, d.element
            ));
            return None;
        }
        Some(d.bound)
    }

    fn write(&mut self, dataset: usize, first: usize, len: usize, bytes: &[u8]) {
        if len == 0 {
            return;
        }
        let d = &mut self.datasets[dataset];
        d.written += len;
        if let Err(e) = self
            .file
            .write_reserved(d.address + (d.element.size() * first) as u64, bytes)
        {
            self.failed = Some(PieceError::Io(e));
        }
    }
}

/// The bytes of `values` as the file holds them (little-endian), without a copy where the
/// machine is little-endian (`None` elsewhere: encode them).
fn le_bytes<T: bytemuck::Pod>(values: &[T]) -> Option<&[u8]> {
    cfg!(target_endian = "little").then(|| bytemuck::cast_slice(values))
}

/// `values` as little-endian f64 bytes into `out` (a big-endian machine's encoding).
fn encode_f64(values: &[f64], out: &mut Vec<u8>) {
    out.clear();
    out.extend(values.iter().flat_map(|v| v.to_le_bytes()));
}

/// `values` rounded to nearest f32, as little-endian bytes into `out` (in parallel; `out`'s
/// allocation reused).
fn encode_f32(values: &[f64], out: &mut Vec<u8>) {
    // sized without a fill where `out` is already long enough (every byte is overwritten)
    if out.len() < 4 * values.len() {
        out.resize(4 * values.len(), 0);
    }
    out.truncate(4 * values.len());
    out.par_chunks_mut(4 * ENCODE_VALUES)
        .zip(values.par_chunks(ENCODE_VALUES))
        .for_each(|(bytes, values)| {
            for (b, &v) in bytes.chunks_exact_mut(4).zip(values) {
                b.copy_from_slice(&(v as f32).to_le_bytes());
            }
        });
}
