//! The configuration error: what went wrong, in which file, where, and at which key path.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use serde_saphyr::MessageFormatter;

use super::tree::{display_path, Origin};

/// The class of a [`ConfigError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The file could not be read.
    Io,
    /// The text is not valid YAML (or uses a rejected feature such as a duplicate key or `.inf`).
    Syntax,
    /// Valid YAML that does not fit the schema: unknown key or choice, wrong type, missing key.
    Schema,
    /// A `--set` argument is malformed or cannot be applied to the tree.
    Override,
    /// A value that fits the schema but is out of range or inconsistent.
    Invalid,
}

/// An error in a configuration file or in a `--set` override.
///
/// `Display` renders `file:line:column: key.path: message` followed by the offending source line
/// with a caret, or `file: --set `arg`: key.path: message` when the value came from an override.
#[derive(Debug)]
pub struct ConfigError(Box<Details>);

#[derive(Debug)]
struct Details {
    kind: ErrorKind,
    file: PathBuf,
    origin: Option<Origin>,
    path: Option<String>,
    message: String,
    snippet: Option<String>,
    source: Option<io::Error>,
}

impl ConfigError {
    pub(crate) fn io(file: &Path, source: io::Error) -> Self {
        ConfigError(Box::new(Details {
            kind: ErrorKind::Io,
            file: file.to_owned(),
            origin: None,
            path: None,
            message: format!("cannot read the configuration: {source}"),
            snippet: None,
            source: Some(source),
        }))
    }

    /// An error at `origin` (if known) and key `path` (if known); `text` is the file's content,
    /// used to quote the offending line.
    pub(crate) fn new(
        kind: ErrorKind,
        file: &Path,
        text: Option<&str>,
        origin: Option<Origin>,
        path: Option<String>,
        message: String,
    ) -> Self {
        let snippet = match (&origin, text) {
            (Some(Origin::File { line, column }), Some(text)) => snippet(text, *line, *column),
            _ => None,
        };
        ConfigError(Box::new(Details {
            kind,
            file: file.to_owned(),
            origin,
            path,
            message,
            snippet,
            source: None,
        }))
    }

    /// A YAML syntax error reported by the parser.
    pub(crate) fn syntax(file: &Path, text: &str, error: &serde_saphyr::Error) -> Self {
        let origin = error.location().map(|l| Origin::File {
            line: l.line() as u32,
            column: l.column() as u32,
        });
        Self::new(
            ErrorKind::Syntax,
            file,
            Some(text),
            origin,
            None,
            bare_message(error),
        )
    }

    pub fn kind(&self) -> ErrorKind {
        self.0.kind
    }

    /// The configuration file.
    pub fn file(&self) -> &Path {
        &self.0.file
    }

    /// Where the offending value came from, when known.
    pub fn origin(&self) -> Option<&Origin> {
        self.0.origin.as_ref()
    }

    /// 1-based line and column in the file, when the offending value was written there.
    pub fn line_column(&self) -> Option<(u32, u32)> {
        match self.0.origin {
            Some(Origin::File { line, column }) => Some((line, column)),
            _ => None,
        }
    }

    /// Key path of the offending value (`materials[1].poisson_ratio`; `""` is the top level).
    pub fn key_path(&self) -> Option<&str> {
        self.0.path.as_deref()
    }

    /// The message without file, place and snippet.
    pub fn message(&self) -> &str {
        &self.0.message
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.0.file.display())?;
        match &self.0.origin {
            Some(Origin::File { line, column }) => write!(f, ":{line}:{column}")?,
            Some(Origin::Override(arg)) => write!(f, ": --set `{arg}`")?,
            None => {}
        }
        if let Some(path) = &self.0.path {
            write!(f, ": {}", display_path(path))?;
        }
        write!(f, ": {}", self.0.message)?;
        if let Some(snippet) = &self.0.snippet {
            write!(f, "\n{snippet}")?;
        }
        Ok(())
    }
}

/// The message already includes the I/O error's, so it is not chained as a source (a printed
/// chain would repeat it); [`ConfigError::io_error`] gives it.
impl std::error::Error for ConfigError {}

impl ConfigError {
    /// The I/O error of an [`ErrorKind::Io`] error.
    pub fn io_error(&self) -> Option<&io::Error> {
        self.0.source.as_ref()
    }
}

/// serde-saphyr's message without its location suffix and snippet.
pub(crate) fn bare_message(error: &serde_saphyr::Error) -> String {
    serde_saphyr::DefaultMessageFormatter
        .format_message(error.without_snippet())
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// A snippet quotes at most this many characters of its line either side of the column.
const SNIPPET_REACH: usize = 60;

/// The source line `line` with a caret under character `column` (both 1-based), in the layout
/// of compiler diagnostics; a long line is cut to [`SNIPPET_REACH`] characters either side of
/// the column, the cuts marked `...`. `None` when the line does not exist.
fn snippet(text: &str, line: u32, column: u32) -> Option<String> {
    let source: Vec<char> = text
        .lines()
        .nth(usize::try_from(line).ok()?.checked_sub(1)?)?
        .chars()
        .collect();
    let at = (column.saturating_sub(1) as usize).min(source.len());
    let start = at.saturating_sub(SNIPPET_REACH);
    let end = source.len().min(at + SNIPPET_REACH);
    let (before, after) = (
        if start > 0 { "..." } else { "" },
        if end < source.len() { "..." } else { "" },
    );
    let quoted: String = source[start..end].iter().collect();
    let number = line.to_string();
    let pad = " ".repeat(number.len());
    // Keep tabs so that the caret lines up with the quoted text.
    let indent: String = " ".repeat(before.len())
        + &source[start..at]
            .iter()
            .map(|&c| if c == '\t' { '\t' } else { ' ' })
            .collect::<String>();
    Some(format!(
        "{pad} |\n{number} | {before}{quoted}{after}\n{pad} | {indent}^"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippet_marks_the_column() {
        let text = "a: 1\nb:\n\tc: x\n";
        assert_eq!(snippet(text, 1, 4).unwrap(), "  |\n1 | a: 1\n  |    ^");
        assert_eq!(snippet(text, 3, 5).unwrap(), "  |\n3 | \tc: x\n  | \t   ^");
        assert!(snippet(text, 9, 1).is_none());
        // a long line is cut around the column
        let long = format!("k: {}x{}\n", "a".repeat(200), "b".repeat(200));
        let cut = snippet(&long, 1, 204).unwrap();
        let expected = format!(
            "  |\n1 | ...{}x{}...\n  | {}^",
            "a".repeat(60),
            "b".repeat(59),
            " ".repeat(63)
        );
        assert_eq!(cut, expected);
        assert!(snippet(text, 0, 1).is_none());
    }

    #[test]
    fn display_names_file_place_and_path() {
        let err = ConfigError::new(
            ErrorKind::Invalid,
            Path::new("in/run.yaml"),
            Some("a: 1\nb: 2\n"),
            Some(Origin::File { line: 2, column: 4 }),
            Some("b".into()),
            "must be odd".into(),
        );
        assert_eq!(
            err.to_string(),
            "in/run.yaml:2:4: b: must be odd\n  |\n2 | b: 2\n  |    ^"
        );
        let err = ConfigError::new(
            ErrorKind::Schema,
            Path::new("run.yaml"),
            None,
            Some(Origin::Override("b=3".into())),
            Some("b".into()),
            "bad".into(),
        );
        assert_eq!(err.to_string(), "run.yaml: --set `b=3`: b: bad");
        assert_eq!(err.line_column(), None);
    }
}
