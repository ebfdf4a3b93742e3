//! Cursor over an MSH file's bytes: whitespace-separated ASCII tokens with line numbers for
//! error messages, and the fixed-size little- or big-endian numbers of binary sections.

use crate::error::MeshError;

/// Cursor over the bytes. Tokens are maximal runs of non-whitespace, or `"..."` strings
/// (returned without the quotes, on one line), and must be UTF-8.
pub(super) struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// 1-based line of `pos` (binary data counts its newline bytes too).
    line: usize,
    source_name: &'a str,
    /// Section being read, for "unexpected end of file" messages.
    pub section: &'a str,
    /// Whether the binary numbers are big-endian (from `$MeshFormat`'s check integer).
    pub big_endian: bool,
    /// Bytes of a `size_t` in binary sections (the format's data size).
    pub size_t: usize,
}

impl<'a> Scanner<'a> {
    pub fn new(bytes: &'a [u8], source_name: &'a str) -> Self {
        Scanner {
            bytes,
            pos: 0,
            line: 1,
            source_name,
            section: "",
            big_endian: false,
            size_t: 8,
        }
    }

    /// Error at `line`.
    pub fn error(&self, line: usize, message: impl Into<String>) -> MeshError {
        MeshError::Gmsh {
            source_name: self.source_name.to_string(),
            line,
            message: message.into(),
        }
    }

    /// Error in binary data at the cursor: the line of the section and the byte offset.
    pub fn binary_error(&self, message: impl AsRef<str>) -> MeshError {
        self.error(
            self.line,
            format!(
                "at byte {} (binary ${}): {}",
                self.pos,
                self.section,
                message.as_ref()
            ),
        )
    }

    /// Capacity worth reserving for `count` items announced by the file when each item takes at
    /// least `min_bytes` bytes: never more than the unread bytes could hold.
    pub fn capacity_for(&self, count: usize, min_bytes: usize) -> usize {
        count.min((self.bytes.len() - self.pos) / min_bytes.max(1))
    }

    /// Current line (of the last token read, or of the cursor).
    pub fn line(&self) -> usize {
        self.line
    }

    fn skip_whitespace(&mut self, stop_at_newline: bool) {
        while let Some(&b) = self.bytes.get(self.pos) {
            if b == b'\n' {
                if stop_at_newline {
                    return;
                }
                self.line += 1;
            } else if !b.is_ascii_whitespace() {
                return;
            }
            self.pos += 1;
        }
    }

    fn text(&self, start: usize, end: usize) -> Result<&'a str, MeshError> {
        std::str::from_utf8(&self.bytes[start..end]).map_err(|_| {
            self.error(
                self.line,
                "bytes that are not text where a number or name was expected (a binary file \
                 announced as ASCII?)",
            )
        })
    }

    fn read_token(&mut self) -> Result<Option<(&'a str, usize)>, MeshError> {
        let start = self.pos;
        let Some(&first) = self.bytes.get(start) else {
            return Ok(None);
        };
        if first == b'"' {
            let rest = &self.bytes[start + 1..];
            let end = rest
                .iter()
                .position(|&b| b == b'"' || b == b'\n')
                .filter(|&e| rest[e] == b'"')
                .ok_or_else(|| self.error(self.line, "unterminated quoted string"))?;
            self.pos = start + 1 + end + 1;
            return Ok(Some((self.text(start + 1, start + 1 + end)?, self.line)));
        }
        while self
            .bytes
            .get(self.pos)
            .is_some_and(|b| !b.is_ascii_whitespace())
        {
            self.pos += 1;
        }
        Ok(Some((self.text(start, self.pos)?, self.line)))
    }

    /// Next token and its line, or `None` at the end of the text.
    pub fn next_token(&mut self) -> Result<Option<(&'a str, usize)>, MeshError> {
        self.skip_whitespace(false);
        self.read_token()
    }

    /// Next token; the end of the text is an error naming `what` was expected.
    pub fn expect(&mut self, what: &str) -> Result<(&'a str, usize), MeshError> {
        match self.next_token()? {
            Some(t) => Ok(t),
            None => Err(self.error(
                self.line,
                format!(
                    "unexpected end of file in ${} (expected {what})",
                    self.section
                ),
            )),
        }
    }

    /// Next token parsed as a non-negative integer.
    pub fn usize(&mut self, what: &str) -> Result<usize, MeshError> {
        let (tok, line) = self.expect(what)?;
        tok.parse().map_err(|_| {
            self.error(
                line,
                format!("expected {what} (an unsigned integer), found '{tok}'"),
            )
        })
    }

    /// Next token parsed as a signed integer.
    pub fn i64(&mut self, what: &str) -> Result<i64, MeshError> {
        let (tok, line) = self.expect(what)?;
        tok.parse()
            .map_err(|_| self.error(line, format!("expected {what} (an integer), found '{tok}'")))
    }

    /// Next token parsed as a finite float.
    pub fn f64(&mut self, what: &str) -> Result<f64, MeshError> {
        let (tok, line) = self.expect(what)?;
        match tok.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(self.error(
                line,
                format!("expected {what} (a finite number), found '{tok}'"),
            )),
        }
    }

    /// Remaining tokens of the current line (the newline is consumed).
    pub fn rest_of_line(&mut self) -> Result<Vec<&'a str>, MeshError> {
        let mut out = Vec::new();
        loop {
            self.skip_whitespace(true);
            match self.bytes.get(self.pos) {
                None => return Ok(out),
                Some(b'\n') => {
                    self.pos += 1;
                    self.line += 1;
                    return Ok(out);
                }
                Some(_) => {
                    if let Some((tok, _)) = self.read_token()? {
                        out.push(tok);
                    }
                }
            }
        }
    }

    /// Consumes the rest of the current line (up to and including its newline): binary data
    /// starts on the line after an ASCII header.
    pub fn end_line(&mut self) {
        while let Some(&b) = self.bytes.get(self.pos) {
            self.pos += 1;
            if b == b'\n' {
                self.line += 1;
                return;
            }
        }
    }

    /// Skips the text up to and including `marker` (a section end such as `$EndComments`).
    pub fn skip_past(&mut self, marker: &str) -> Result<(), MeshError> {
        let start_line = self.line;
        let rest = &self.bytes[self.pos..];
        let Some(at) = rest
            .windows(marker.len())
            .position(|w| w == marker.as_bytes())
        else {
            return Err(self.error(
                start_line,
                format!(
                    "unexpected end of file: ${} is never closed by {marker}",
                    self.section
                ),
            ));
        };
        self.line += rest[..at].iter().filter(|&&b| b == b'\n').count();
        self.pos += at + marker.len();
        Ok(())
    }

    /// The next `n` bytes of binary data.
    pub fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8], MeshError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(self.binary_error(format!("unexpected end of file (expected {what})")));
        };
        let out = &self.bytes[self.pos..end];
        self.line += out.iter().filter(|&&b| b == b'\n').count();
        self.pos = end;
        Ok(out)
    }

    fn word<const N: usize>(&mut self, what: &str) -> Result<[u8; N], MeshError> {
        let mut w: [u8; N] = self.bytes(N, what)?.try_into().expect("N bytes");
        if self.big_endian {
            w.reverse();
        }
        Ok(w)
    }

    /// A binary 4-byte signed integer.
    pub fn bin_i32(&mut self, what: &str) -> Result<i32, MeshError> {
        Ok(i32::from_le_bytes(self.word(what)?))
    }

    /// A binary 4-byte integer that must not be negative.
    pub fn bin_u32(&mut self, what: &str) -> Result<usize, MeshError> {
        let v = self.bin_i32(what)?;
        usize::try_from(v).map_err(|_| self.binary_error(format!("{what} is negative ({v})")))
    }

    /// A binary `size_t` (4 or 8 bytes, from the format's data size).
    pub fn bin_size(&mut self, what: &str) -> Result<usize, MeshError> {
        let v = if self.size_t == 4 {
            u64::from(u32::from_le_bytes(self.word(what)?))
        } else {
            u64::from_le_bytes(self.word(what)?)
        };
        usize::try_from(v).map_err(|_| self.binary_error(format!("{what} {v} is too large")))
    }

    /// A binary finite 8-byte float.
    pub fn bin_f64(&mut self, what: &str) -> Result<f64, MeshError> {
        let v = f64::from_le_bytes(self.word(what)?);
        if v.is_finite() {
            Ok(v)
        } else {
            Err(self.binary_error(format!("{what} is not a finite number ({v})")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacities_are_bounded_by_the_unread_text() {
        let mut sc = Scanner::new(b"12 34 56 78\n", "<text>");
        assert_eq!(sc.capacity_for(usize::MAX, 2), 6);
        assert_eq!(sc.capacity_for(3, 2), 3);
        sc.next_token().unwrap();
        assert_eq!(sc.capacity_for(usize::MAX, 4), 2);
        assert_eq!(sc.capacity_for(usize::MAX, 0), 10);
    }

    #[test]
    fn binary_numbers_follow_the_byte_order() {
        let mut bytes = vec![];
        bytes.extend_from_slice(&7i32.to_le_bytes());
        bytes.extend_from_slice(&9u64.to_be_bytes());
        bytes.extend_from_slice(&1.5f64.to_le_bytes());
        let mut sc = Scanner::new(&bytes, "<bytes>");
        assert_eq!(sc.bin_i32("a").unwrap(), 7);
        sc.big_endian = true;
        assert_eq!(sc.bin_size("b").unwrap(), 9);
        sc.big_endian = false;
        assert_eq!(sc.bin_f64("c").unwrap(), 1.5);
        assert!(sc
            .bin_i32("d")
            .unwrap_err()
            .to_string()
            .contains("unexpected end"));
    }
}
