//! Whitespace tokenizer over an MSH text that tracks line numbers for error messages.

use crate::error::MeshError;

/// Cursor over the text. Tokens are maximal runs of non-whitespace, or `"..."` strings
/// (returned without the quotes, on one line).
pub(super) struct Scanner<'a> {
    text: &'a str,
    pos: usize,
    /// 1-based line of `pos`.
    line: usize,
    source_name: &'a str,
    /// Section being read, for "unexpected end of file" messages.
    pub section: &'a str,
}

impl<'a> Scanner<'a> {
    pub fn new(text: &'a str, source_name: &'a str) -> Self {
        Scanner {
            text,
            pos: 0,
            line: 1,
            source_name,
            section: "",
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

    /// Capacity worth reserving for `count` items announced by the file when each item takes at
    /// least `min_bytes` bytes of text: never more than the unread text could hold.
    pub fn capacity_for(&self, count: usize, min_bytes: usize) -> usize {
        count.min((self.text.len() - self.pos) / min_bytes.max(1))
    }

    /// Current line (of the last token read, or of the cursor).
    pub fn line(&self) -> usize {
        self.line
    }

    fn skip_whitespace(&mut self, stop_at_newline: bool) {
        let bytes = self.text.as_bytes();
        while let Some(&b) = bytes.get(self.pos) {
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

    fn read_token(&mut self) -> Result<Option<(&'a str, usize)>, MeshError> {
        let bytes = self.text.as_bytes();
        let start = self.pos;
        let Some(&first) = bytes.get(start) else {
            return Ok(None);
        };
        if first == b'"' {
            let rest = &self.text[start + 1..];
            let end = rest
                .find(['"', '\n'])
                .filter(|&e| rest.as_bytes()[e] == b'"')
                .ok_or_else(|| self.error(self.line, "unterminated quoted string"))?;
            self.pos = start + 1 + end + 1;
            return Ok(Some((&rest[..end], self.line)));
        }
        while bytes
            .get(self.pos)
            .is_some_and(|b| !b.is_ascii_whitespace())
        {
            self.pos += 1;
        }
        Ok(Some((&self.text[start..self.pos], self.line)))
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
            match self.text.as_bytes().get(self.pos) {
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

    /// Skips the text up to and including `marker` (a section end such as `$EndComments`).
    pub fn skip_past(&mut self, marker: &str) -> Result<(), MeshError> {
        let start_line = self.line;
        let rest = &self.text[self.pos..];
        let Some(at) = rest.find(marker) else {
            return Err(self.error(
                start_line,
                format!(
                    "unexpected end of file: ${} is never closed by {marker}",
                    self.section
                ),
            ));
        };
        self.line += rest[..at].matches('\n').count();
        self.pos += at + marker.len();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacities_are_bounded_by_the_unread_text() {
        let mut sc = Scanner::new("12 34 56 78\n", "<text>");
        assert_eq!(sc.capacity_for(usize::MAX, 2), 6);
        assert_eq!(sc.capacity_for(3, 2), 3);
        sc.next_token().unwrap();
        assert_eq!(sc.capacity_for(usize::MAX, 4), 2);
        assert_eq!(sc.capacity_for(usize::MAX, 0), 10);
    }
}
