//! [`Layout`]: which part of a distributed vector this rank holds.

use std::sync::Arc;

use comm::{Comm, SelfComm};

use crate::LinalgError;

/// The entries of a vector one rank holds: `owned` entries (global indices
/// `global_offset..global_offset + owned`, this rank computes them) followed by a tail of `ghosts`
/// copies of entries other ranks own. Reductions ([`crate::ops::dot`], [`crate::ops::norm2`])
/// sum the owned entries and then reduce over `comm`; element-wise operations act on all local
/// entries.
///
/// Invariant: `global_offset + owned <= global_len`.
#[derive(Clone, Debug)]
pub struct Layout {
    owned: usize,
    ghosts: usize,
    global_offset: u64,
    global_len: u64,
    comm: Arc<dyn Comm>,
}

impl Layout {
    /// `n` entries, all owned, on one rank ([`SelfComm`]).
    pub fn serial(n: usize) -> Self {
        Self {
            owned: n,
            ghosts: 0,
            global_offset: 0,
            global_len: n as u64,
            comm: SelfComm::shared(),
        }
    }

    /// A rank's part of a vector of `global_len` entries. Errors if the owned range does not fit.
    pub fn new(
        owned: usize,
        ghosts: usize,
        global_offset: u64,
        global_len: u64,
        comm: Arc<dyn Comm>,
    ) -> Result<Self, LinalgError> {
        if global_offset
            .checked_add(owned as u64)
            .is_none_or(|end| end > global_len)
        {
            return Err(LinalgError::InvalidLayout {
                owned,
                global_offset,
                global_len,
            });
        }
        Ok(Self {
            owned,
            ghosts,
            global_offset,
            global_len,
            comm,
        })
    }

    /// Entries this rank owns (the first `owned` local entries).
    pub fn owned(&self) -> usize {
        self.owned
    }

    /// Ghost entries after the owned ones.
    pub fn ghosts(&self) -> usize {
        self.ghosts
    }

    /// Local entries: `owned + ghosts`.
    pub fn len(&self) -> usize {
        self.owned + self.ghosts
    }

    /// True if the rank holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Global index of the first owned entry.
    pub fn global_offset(&self) -> u64 {
        self.global_offset
    }

    /// Entries of the whole vector, over all ranks.
    pub fn global_len(&self) -> u64 {
        self.global_len
    }

    /// The ranks that share the vector.
    pub fn comm(&self) -> &Arc<dyn Comm> {
        &self.comm
    }

    /// True if both describe the same part of the same vector (sizes and offsets).
    pub fn matches(&self, other: &Layout) -> bool {
        (self.owned, self.ghosts, self.global_offset, self.global_len)
            == (
                other.owned,
                other.ghosts,
                other.global_offset,
                other.global_len,
            )
            && (self.comm.rank(), self.comm.size()) == (other.comm.rank(), other.comm.size())
    }
}

impl PartialEq for Layout {
    fn eq(&self, other: &Self) -> bool {
        self.matches(other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_layout_owns_everything_and_bad_ranges_are_rejected() {
        let l = Layout::serial(7);
        assert_eq!((l.owned(), l.ghosts(), l.len()), (7, 0, 7));
        assert_eq!((l.global_offset(), l.global_len()), (0, 7));
        assert_eq!(l.comm().size(), 1);
        let part = Layout::new(3, 2, 4, 7, SelfComm::shared()).unwrap();
        assert_eq!(part.len(), 5);
        assert!(!part.matches(&l));
        assert_eq!(
            Layout::new(4, 0, 4, 7, SelfComm::shared()).unwrap_err(),
            LinalgError::InvalidLayout {
                owned: 4,
                global_offset: 4,
                global_len: 7
            }
        );
    }
}
