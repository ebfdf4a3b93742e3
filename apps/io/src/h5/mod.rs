//! An HDF5 file that only grows, committed by rewriting its superblock.
//!
//! Why this layout: the HDF5 library updates its metadata (group B-trees, heaps, object headers,
//! the superblock) in place, in several writes per step, so a process killed inside a flush or a
//! write that fails for lack of space leaves a file the library cannot open. SWMR mode keeps the
//! file consistent for a concurrent reader, but it cannot create groups after the start (one
//! group per step is what XDMF readers such as meshio need) and a killed SWMR writer leaves the
//! superblock's "open for writing" flag set, so ordinary readers (h5dump, h5py, ParaView) refuse
//! the file until `h5clear -s` is run. Here, instead, every structure a step needs (its data, its
//! datasets and group, and new copies of the nodes on the path from the new link to the root) is
//! appended after the committed end of the file; nothing the committed root can reach is ever
//! overwritten. The step becomes visible only when the 96-byte superblock at offset 0 is rewritten
//! with the new root and end of file: one write inside the first page, which a kill cannot split.
//! Before that write the data are flushed to the disk (`fdatasync`), so a full disk or an I/O
//! error surfaces before the commit. A kill or an error at any other write leaves the previous
//! committed state, which every HDF5 reader opens; the bytes beyond the committed end are
//! ignored by readers and overwritten by the next step.
//!
//! Structures are the oldest format versions (superblock 0, object header 1, symbol-table
//! groups), which every HDF5 library reads. Growth per step is the step's data plus about 2 KB of
//! metadata; the name heap of a large group is reallocated by doubling (amortised O(1)).

mod dataset;
pub(crate) mod encode;
mod group;

use std::fs;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

pub use dataset::Pieces;
#[cfg(test)]
pub(crate) use dataset::PIECE_VALUES;
pub(crate) use dataset::{IndexBound, Reserved};
pub(crate) use group::Group;

use crate::faults::Faults;
use encode::{align8, SUPERBLOCK_SIZE};

/// Appended bytes are gathered and written in one call up to this size.
const PENDING_LIMIT: usize = 4 << 20;

/// A write of at least this many bytes starts the disk's writeback of them at once.
const WRITEBACK_MIN: usize = 1 << 20;

/// The file and the state of the current transaction. Calling order: [`AppendFile::create`],
/// then per transaction any number of [`AppendFile::alloc`] / [`AppendFile::write_unreferenced`]
/// / [`AppendFile::reserve`] and [`AppendFile::write_reserved`] followed by
/// [`AppendFile::commit`] (or [`AppendFile::abandon`] after an error).
pub(crate) struct AppendFile {
    file: fs::File,
    path: PathBuf,
    /// End of the committed state (the superblock's end-of-file address).
    committed: u64,
    /// Where the next appended structure goes (8-byte aligned).
    tail: u64,
    /// Appended bytes not yet written; they start at `pending_base`.
    pending: Vec<u8>,
    pending_base: u64,
    faults: Faults,
}

impl AppendFile {
    /// Creates (or truncates) `path`. Nothing is committed until the first [`AppendFile::commit`];
    /// until then the file has no valid superblock, so create it under a temporary name.
    pub fn create(path: &Path, faults: Faults) -> io::Result<Self> {
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        let start = align8(SUPERBLOCK_SIZE) as u64;
        Ok(AppendFile {
            file,
            path: path.to_owned(),
            committed: 0,
            tail: start,
            pending: Vec::new(),
            pending_base: start,
            faults,
        })
    }

    /// Renames the file (after its first commit, from its temporary name to its final one).
    pub fn rename(&mut self, to: &Path) -> io::Result<()> {
        if self.faults.hit(0).is_some() {
            return Err(self.faults.stop());
        }
        fs::rename(&self.path, to)?;
        self.path = to.to_owned();
        Ok(())
    }

    /// Appends `bytes` after everything so far and returns their address.
    pub fn alloc(&mut self, bytes: &[u8]) -> io::Result<u64> {
        let address = self.tail;
        let gap = (address - self.pending_base) as usize - self.pending.len();
        self.pending.resize(self.pending.len() + gap, 0);
        if bytes.len() >= PENDING_LIMIT {
            self.flush()?;
            self.write(address, bytes)?;
            self.pending_base = address + bytes.len() as u64;
        } else {
            self.pending.extend_from_slice(bytes);
            if self.pending.len() >= PENDING_LIMIT {
                self.flush()?;
            }
        }
        self.tail = align8(address as usize + bytes.len()) as u64;
        Ok(address)
    }

    /// Reserves `len` bytes after everything so far, as [`AppendFile::alloc`] would place them,
    /// for data written later in pieces by [`AppendFile::write_reserved`] (every byte before the
    /// commit); returns their address. What precedes them is written first.
    pub fn reserve(&mut self, len: u64) -> io::Result<u64> {
        let address = self.tail;
        let gap = (address - self.pending_base) as usize - self.pending.len();
        self.pending.resize(self.pending.len() + gap, 0);
        self.flush()?;
        self.pending_base = address + len;
        self.tail = align8((address + len) as usize) as u64;
        Ok(address)
    }

    /// Writes `bytes` at `offset` inside a range [`AppendFile::reserve`] returned in this
    /// transaction (beyond the committed end: nothing a reader can reach changes).
    pub fn write_reserved(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        debug_assert!(offset >= self.committed && offset + bytes.len() as u64 <= self.pending_base);
        self.write(offset, bytes)
    }

    /// Writes `bytes` at `offset`, inside a structure appended earlier whose range at
    /// `offset..offset + len` no committed structure references (free space of a name heap).
    pub fn write_unreferenced(&mut self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        if offset >= self.pending_base {
            let start = (offset - self.pending_base) as usize;
            let end = start + bytes.len();
            if self.pending.len() < end {
                self.pending.resize(end, 0);
            }
            self.pending[start..end].copy_from_slice(bytes);
            Ok(())
        } else {
            debug_assert!(offset + bytes.len() as u64 <= self.pending_base);
            self.write(offset, bytes)
        }
    }

    /// Makes everything appended so far part of the file, with `root` (an object header address)
    /// as the root group: flushes, syncs the data to the disk, then rewrites the superblock.
    /// (The writeback of the large writes before it has been started as they were written, so
    /// the sync mostly waits for writes under way.)
    pub fn commit(&mut self, root: u64) -> io::Result<()> {
        self.flush()?;
        self.file.sync_data()?;
        self.write(0, &encode::superblock(self.tail, root))?;
        self.committed = self.tail;
        Ok(())
    }

    /// Forgets the current transaction after an error: the next one overwrites its bytes.
    pub fn abandon(&mut self) {
        self.pending.clear();
        self.tail = self.committed.max(align8(SUPERBLOCK_SIZE) as u64);
        self.pending_base = self.tail;
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            let pending = std::mem::take(&mut self.pending);
            let result = self.write(self.pending_base, &pending);
            self.pending_base += pending.len() as u64;
            self.pending = pending;
            self.pending.clear();
            result?;
        }
        Ok(())
    }

    /// One write position (see [`Faults`]); a large write then starts the writeback of its
    /// bytes ([`start_writeback`]).
    fn write(&self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        if let Some(cut) = self.faults.hit(bytes.len()) {
            self.file.write_all_at(&bytes[..cut], offset)?;
            return Err(self.faults.stop());
        }
        self.file.write_all_at(bytes, offset)?;
        if bytes.len() >= WRITEBACK_MIN {
            start_writeback(&self.file, offset, bytes.len());
        }
        Ok(())
    }
}

/// Starts writing the `len` bytes at `offset` of `file` to the disk, without waiting for them
/// (Linux's `sync_file_range` with `SYNC_FILE_RANGE_WRITE`), so that the disk works while the
/// transaction goes on appending and the commit's `fdatasync` finds little left to write. Not a
/// durability point: the commit order is unchanged (every byte synced by `fdatasync`, then
/// the superblock), and an I/O error is the `fdatasync`'s to report, so the call's own result
/// is not used. Elsewhere than on Linux it does nothing.
#[cfg(target_os = "linux")]
fn start_writeback(file: &fs::File, offset: u64, len: usize) {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    // SAFETY: the descriptor is `file`'s, open for the whole call; the call reads and writes no
    // memory of this process.
    let _ = unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE)
    };
}

/// See the Linux version: elsewhere the commit's sync writes everything.
#[cfg(not(target_os = "linux"))]
fn start_writeback(_file: &fs::File, _offset: u64, _len: usize) {}
