//! PETSc's binary format (`MatLoad`, `VecLoad`; big-endian 32-bit indices, 64-bit reals) for
//! handing hexfem's linear systems to peer solvers without loss: a [`Bsr`] as a scalar AIJ
//! matrix with every stored entry of its blocks (explicit zeros included, columns ascending in
//! each row) and a `.info` file that tells `MatLoad` its block size; a vector as `Vec`. The
//! readers are for tests and checks (PETSc reads the files itself).

use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{bail, ensure, Context, Result};
use linalg::Bsr;

/// PETSc's class id of a matrix in a binary file (`MAT_FILE_CLASSID`).
pub const MAT_FILE_CLASSID: i32 = 1211216;
/// PETSc's class id of a vector in a binary file (`VEC_FILE_CLASSID`).
pub const VEC_FILE_CLASSID: i32 = 1211214;

/// A scalar matrix in compressed sparse rows, as read back from a file.
#[derive(Clone, Debug, PartialEq)]
pub struct Csr {
    pub n_rows: usize,
    pub n_cols: usize,
    pub row_ptr: Vec<usize>,
    pub col_idx: Vec<usize>,
    pub values: Vec<f64>,
}

impl Csr {
    /// The scalar rows of a host [`Bsr`]: each stored block's entries (zeros kept), its block
    /// columns ascending as the pattern stores them. Errors for a device matrix.
    pub fn of_bsr(k: &Bsr) -> Result<Self> {
        let (br, bc) = (k.block_rows(), k.block_cols());
        let pattern = k.pattern();
        let values = k.host().context("the matrix must be on the host")?;
        let (mut row_ptr, mut col_idx, mut out) = (vec![0], Vec::new(), Vec::new());
        for bi in 0..pattern.n_block_rows() {
            let slots = pattern.row_ptr()[bi]..pattern.row_ptr()[bi + 1];
            for r in 0..br {
                for slot in slots.clone() {
                    let bj = pattern.col_idx()[slot] as usize;
                    let block = &values[slot * br * bc..(slot + 1) * br * bc];
                    for c in 0..bc {
                        col_idx.push(bj * bc + c);
                        out.push(block[r * bc + c]);
                    }
                }
                row_ptr.push(col_idx.len());
            }
        }
        Ok(Csr {
            n_rows: k.n_rows(),
            n_cols: k.n_cols(),
            row_ptr,
            col_idx,
            values: out,
        })
    }
}

fn index(i: usize, what: &str) -> Result<i32> {
    i32::try_from(i).with_context(|| format!("{what} {i} exceeds PETSc's 32-bit indices"))
}

fn create(path: &Path) -> Result<BufWriter<std::fs::File>> {
    Ok(BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
    ))
}

/// Writes `k` (host) to `path` as a PETSc AIJ matrix, and `path.info` with
/// `-matload_block_size` of its row blocks (so `MatLoad` keeps the 3x3 blocks).
pub fn write_matrix(path: &Path, k: &Bsr) -> Result<()> {
    let csr = Csr::of_bsr(k)?;
    let mut w = create(path)?;
    for v in [
        MAT_FILE_CLASSID,
        index(csr.n_rows, "rows")?,
        index(csr.n_cols, "columns")?,
        index(csr.values.len(), "stored entries")?,
    ] {
        w.write_all(&v.to_be_bytes())?;
    }
    for row in csr.row_ptr.windows(2) {
        w.write_all(&index(row[1] - row[0], "row length")?.to_be_bytes())?;
    }
    for &c in &csr.col_idx {
        w.write_all(&index(c, "column")?.to_be_bytes())?;
    }
    for v in &csr.values {
        w.write_all(&v.to_be_bytes())?;
    }
    w.flush()?;
    let mut info = path.as_os_str().to_owned();
    info.push(".info");
    std::fs::write(&info, format!("-matload_block_size {}\n", k.block_rows()))
        .with_context(|| format!("writing {}", Path::new(&info).display()))?;
    Ok(())
}

/// Writes `values` to `path` as a PETSc vector.
pub fn write_vector(path: &Path, values: &[f64]) -> Result<()> {
    let mut w = create(path)?;
    w.write_all(&VEC_FILE_CLASSID.to_be_bytes())?;
    w.write_all(&index(values.len(), "length")?.to_be_bytes())?;
    for v in values {
        w.write_all(&v.to_be_bytes())?;
    }
    w.flush()?;
    Ok(())
}

/// Big-endian words of a file, read in order.
struct Words<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Words<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N]> {
        let Some(word) = self.bytes.get(self.at..self.at + N) else {
            bail!("the file ends at byte {} inside a word", self.bytes.len());
        };
        self.at += N;
        let mut out = [0; N];
        out.copy_from_slice(word);
        Ok(out)
    }
    fn int(&mut self) -> Result<usize> {
        let v = i32::from_be_bytes(self.take()?);
        usize::try_from(v).with_context(|| format!("a negative count {v}"))
    }
    fn real(&mut self) -> Result<f64> {
        Ok(f64::from_be_bytes(self.take()?))
    }
    fn end(&self) -> Result<()> {
        ensure!(
            self.at == self.bytes.len(),
            "{} bytes after the object",
            self.bytes.len() - self.at
        );
        Ok(())
    }
}

/// Reads a PETSc AIJ matrix written by [`write_matrix`].
pub fn read_matrix(path: &Path) -> Result<Csr> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let mut w = Words {
        bytes: &bytes,
        at: 0,
    };
    ensure!(
        i32::from_be_bytes(w.take()?) == MAT_FILE_CLASSID,
        "{}: not a PETSc matrix",
        path.display()
    );
    let (n_rows, n_cols, nnz) = (w.int()?, w.int()?, w.int()?);
    let mut row_ptr = vec![0];
    for _ in 0..n_rows {
        row_ptr.push(row_ptr[row_ptr.len() - 1] + w.int()?);
    }
    ensure!(row_ptr[n_rows] == nnz, "row lengths do not sum to {nnz}");
    let col_idx = (0..nnz).map(|_| w.int()).collect::<Result<Vec<_>>>()?;
    let values = (0..nnz).map(|_| w.real()).collect::<Result<Vec<_>>>()?;
    w.end()?;
    Ok(Csr {
        n_rows,
        n_cols,
        row_ptr,
        col_idx,
        values,
    })
}

/// Reads a PETSc vector written by [`write_vector`].
pub fn read_vector(path: &Path) -> Result<Vec<f64>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let mut w = Words {
        bytes: &bytes,
        at: 0,
    };
    ensure!(
        i32::from_be_bytes(w.take()?) == VEC_FILE_CLASSID,
        "{}: not a PETSc vector",
        path.display()
    );
    let n = w.int()?;
    let values = (0..n).map(|_| w.real()).collect::<Result<Vec<_>>>()?;
    w.end()?;
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocked_matrix_and_a_vector_read_back_bit_for_bit() -> Result<()> {
        // two block rows of 3x3 blocks: an explicit zero, a negative zero, a subnormal and
        // irrational entries
        let n = 6;
        let mut dense = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                if i / 3 == j / 3 || (i / 3 == 0 && j / 3 == 1) || (i / 3 == 1 && j / 3 == 0) {
                    dense[i * n + j] = ((i * n + j) as f64).sqrt() / 7.0 - 0.5;
                }
            }
        }
        dense[4] = 5e-324;
        dense[1] = -0.0;
        dense[2] = 0.0;
        let k = Bsr::from_dense(&dense, n, n, 3, 3)?;
        let dir = std::env::temp_dir().join(format!("hexfem-petsc-binary-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        write_matrix(&dir.join("A"), &k)?;
        let back = read_matrix(&dir.join("A"))?;
        assert_eq!(back, Csr::of_bsr(&k)?);
        let mut again = vec![0.0; n * n];
        for i in 0..n {
            for s in back.row_ptr[i]..back.row_ptr[i + 1] {
                assert!(s == back.row_ptr[i] || back.col_idx[s] > back.col_idx[s - 1]);
                again[i * n + back.col_idx[s]] = back.values[s];
            }
        }
        assert_eq!(
            again.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            dense.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("A.info"))?,
            "-matload_block_size 3\n"
        );
        let v = [1.0 / 3.0, -0.0, f64::MAX, 1e-300];
        write_vector(&dir.join("v"), &v)?;
        let read = read_vector(&dir.join("v"))?;
        assert_eq!(
            read.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            v.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        std::fs::remove_dir_all(&dir)?;
        Ok(())
    }
}
