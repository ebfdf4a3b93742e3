//! Symbolic phase: fill-reducing ordering and the block envelope of the permuted matrix.

use super::rcm::{reverse_cuthill_mckee, Graph};
use crate::{BlockPattern, LinalgError};

/// A stored block read into the lower triangle of the permuted matrix.
#[derive(Debug, Clone, Copy)]
pub(super) struct LowerBlock {
    /// Permuted block column (`<=` the permuted block row).
    pub col: usize,
    /// Slot of the block in the original pattern.
    pub slot: usize,
    /// Read the stored block transposed (it sits in the upper triangle and has no mirror).
    pub transposed: bool,
}

/// Ordering and profile of a square block pattern, shared (e.g. in an `Arc`) by every
/// [`super::DirectSolver::factor`] call on matrices of that pattern.
///
/// Invariants: `perm` and `iperm` are inverse permutations of the block rows; every permuted
/// block row `p` lists its lower blocks (diagonal included) sorted by column, and
/// `first[p]` is the smallest of those columns. The structure used is that of `A + A^T`.
#[derive(Debug, Clone)]
pub struct DirectSymbolic {
    pattern: BlockPattern,
    perm: Vec<usize>,
    iperm: Vec<usize>,
    lower_ptr: Vec<usize>,
    lower: Vec<LowerBlock>,
    first: Vec<usize>,
}

impl DirectSymbolic {
    /// Reverse Cuthill-McKee ordering of the block graph of `A + A^T`, or the natural order
    /// where that has the smaller envelope (RCM's level sets can be wider than the natural
    /// order's planes, e.g. for the 27-point stencil of a lexicographically numbered cube).
    ///
    /// Errors: non-square pattern, or a structurally missing diagonal block.
    pub fn new(pattern: &BlockPattern) -> Result<Self, LinalgError> {
        let graph = block_graph(pattern)?;
        let rcm = Self::with_ordering(pattern, reverse_cuthill_mckee(&graph))?;
        let natural = Self::with_ordering(pattern, (0..graph.n()).collect())?;
        Ok(if natural.envelope_size(1) < rcm.envelope_size(1) {
            natural
        } else {
            rcm
        })
    }

    /// Pure reverse Cuthill-McKee ordering (see [`DirectSymbolic::new`]).
    pub fn reverse_cuthill_mckee(pattern: &BlockPattern) -> Result<Self, LinalgError> {
        let graph = block_graph(pattern)?;
        Self::with_ordering(pattern, reverse_cuthill_mckee(&graph))
    }

    /// Uses the given ordering, `perm[new] = old` (the identity keeps the natural order).
    pub fn with_ordering(pattern: &BlockPattern, perm: Vec<usize>) -> Result<Self, LinalgError> {
        check_square(pattern)?;
        pattern.diagonal_positions()?;
        let n = pattern.n_block_rows();
        if perm.len() != n {
            return Err(LinalgError::LengthMismatch {
                what: "DirectSymbolic ordering",
                expected: n,
                found: perm.len(),
            });
        }
        let mut iperm = vec![usize::MAX; n];
        for (new, &old) in perm.iter().enumerate() {
            if old >= n || iperm[old] != usize::MAX {
                return Err(LinalgError::InvalidPermutation {
                    n,
                    position: new,
                    value: old,
                });
            }
            iperm[old] = new;
        }

        // Lower blocks of each permuted row: stored lower blocks as they are, stored upper
        // blocks without a stored mirror transposed.
        let mut rows: Vec<Vec<LowerBlock>> = vec![Vec::new(); n];
        for i in 0..n {
            let slots = pattern.row_ptr()[i]..pattern.row_ptr()[i + 1];
            for (slot, &j) in slots.zip(pattern.row(i)) {
                let j = j as usize;
                let (p, q) = (iperm[i], iperm[j]);
                if q <= p {
                    rows[p].push(LowerBlock {
                        col: q,
                        slot,
                        transposed: false,
                    });
                } else if pattern.find(j, i).is_none() {
                    rows[q].push(LowerBlock {
                        col: p,
                        slot,
                        transposed: true,
                    });
                }
            }
        }
        let mut lower_ptr = Vec::with_capacity(n + 1);
        let mut lower = Vec::new();
        let mut first = Vec::with_capacity(n);
        lower_ptr.push(0);
        for (p, mut row) in rows.into_iter().enumerate() {
            row.sort_unstable_by_key(|b| b.col);
            first.push(row.first().map_or(p, |b| b.col));
            lower.extend(row);
            lower_ptr.push(lower.len());
        }
        Ok(DirectSymbolic {
            pattern: pattern.clone(),
            perm,
            iperm,
            lower_ptr,
            lower,
            first,
        })
    }

    /// The pattern this plan was built for.
    pub fn pattern(&self) -> &BlockPattern {
        &self.pattern
    }

    /// Number of block rows.
    pub fn n_blocks(&self) -> usize {
        self.perm.len()
    }

    /// The ordering, `permutation()[new] = old` block row.
    pub fn permutation(&self) -> &[usize] {
        &self.perm
    }

    /// New position of old block row `old`.
    pub fn inverse_permutation(&self) -> &[usize] {
        &self.iperm
    }

    /// Largest distance of a stored lower block from the diagonal, in blocks.
    pub fn block_bandwidth(&self) -> usize {
        self.first
            .iter()
            .enumerate()
            .map(|(p, &f)| p - f)
            .max()
            .unwrap_or(0)
    }

    /// First scalar column of the envelope of permuted scalar row `r` for block size `bs`.
    pub(super) fn scalar_first(&self, r: usize, bs: usize) -> usize {
        self.first[r / bs] * bs
    }

    /// Number of strictly lower entries in the scalar envelope for block size `bs` (the memory
    /// of the factor, besides the diagonal).
    pub fn envelope_size(&self, bs: usize) -> usize {
        (0..self.n_blocks() * bs)
            .map(|r| r - self.scalar_first(r, bs))
            .sum()
    }

    /// An estimate of the floating-point operations of one factorization for block size `bs`:
    /// the sum over scalar rows of the squared envelope width (each entry of a row is a dot
    /// product over the envelope before it). An upper bound up to a factor of about two; what
    /// the choice between direct and iterative solvers needs.
    pub fn factor_flops(&self, bs: usize) -> f64 {
        (0..self.n_blocks() * bs)
            .map(|r| {
                let w = (r - self.scalar_first(r, bs)) as f64;
                w * w
            })
            .sum()
    }

    /// Lower blocks of permuted block row `p`, sorted by column.
    pub(super) fn lower_blocks(&self, p: usize) -> &[LowerBlock] {
        &self.lower[self.lower_ptr[p]..self.lower_ptr[p + 1]]
    }
}

fn check_square(pattern: &BlockPattern) -> Result<(), LinalgError> {
    if pattern.n_block_rows() != pattern.n_block_cols() {
        return Err(LinalgError::PatternNotSquare {
            n_block_rows: pattern.n_block_rows(),
            n_block_cols: pattern.n_block_cols(),
        });
    }
    Ok(())
}

/// Graph of `A + A^T` on the block rows, without self loops.
fn block_graph(pattern: &BlockPattern) -> Result<Graph, LinalgError> {
    check_square(pattern)?;
    let n = pattern.n_block_rows();
    let edges = (0..n).flat_map(move |i| {
        pattern
            .row(i)
            .iter()
            .map(move |&j| (i, j as usize))
            .filter(|&(i, j)| i != j)
    });
    Ok(Graph::from_edges(n, edges))
}
