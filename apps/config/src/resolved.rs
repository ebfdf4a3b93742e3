//! The resolved input: a loaded [`Config`] written back as YAML with every default filled in,
//! keys in the order of the reference, and a comment on each value the input left at its
//! default. Reading the text back gives the same configuration.
//!
//! Paths: the mesh file is written absolute (it was resolved against the YAML file's directory,
//! and the text may be read from anywhere); `output.directory` stays as given (it is relative
//! to the working directory in any case).

use std::fmt::Write;

use serde_json::Value;

use super::error::{ConfigError, ErrorKind};
use super::params::{Config, MeshSource};
use super::schema::{self, KeyDoc, INPUT_KEYS};
use super::tree::{index_path, key_path};

impl Config {
    /// This configuration as YAML with every default filled in (`hexfem check
    /// --print-resolved`); [`load_str`](crate::load_str) of the text gives the same
    /// configuration, from any directory. A value that the input left at its default is marked
    /// `# default` (with its meaning where the value is `null`).
    pub fn to_resolved_yaml(&self) -> Result<String, ConfigError> {
        let mut config = self.clone();
        if let MeshSource::Gmsh(gmsh) = &mut config.mesh {
            if let Ok(absolute) = std::path::absolute(&gmsh.file) {
                gmsh.file = absolute;
            }
        }
        let value = serde_json::to_value(&config).map_err(|e| {
            ConfigError::new(
                ErrorKind::Invalid,
                &self.source.file,
                None,
                None,
                None,
                format!("cannot write the resolved input: {e}"),
            )
        })?;
        let file = &self.source.file;
        let mut out = if file.as_os_str().is_empty() {
            "# hexfem input, resolved: every key, defaults filled in.\n".to_owned()
        } else {
            format!(
                "# hexfem input resolved from {}: every key, defaults filled in.\n",
                file.display()
            )
        };
        Writer {
            config: self,
            out: &mut out,
        }
        .entries(&value, "", 0);
        Ok(out)
    }
}

struct Writer<'a> {
    config: &'a Config,
    out: &'a mut String,
}

impl Writer<'_> {
    /// The entries of mapping `value` at key path `path`, each on its own line(s) at `indent`.
    fn entries(&mut self, value: &Value, path: &str, indent: usize) {
        let Value::Object(map) = value else { return };
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort_by_key(|k| order(&key_path(path, k)));
        for k in keys {
            let child = &map[k.as_str()];
            let child_path = key_path(path, k);
            let pad = "  ".repeat(indent);
            match child {
                Value::Object(m) if !m.is_empty() => {
                    let _ = writeln!(self.out, "{pad}{}:", plain_or_quoted(k));
                    self.entries(child, &child_path, indent + 1);
                }
                Value::Array(items) if items.iter().any(Value::is_object) => {
                    let _ = writeln!(self.out, "{pad}{}:", plain_or_quoted(k));
                    for (i, item) in items.iter().enumerate() {
                        self.list_item(item, &index_path(&child_path, i), indent + 1);
                    }
                }
                _ => {
                    let _ = writeln!(
                        self.out,
                        "{pad}{}: {}{}",
                        plain_or_quoted(k),
                        flow(child),
                        self.comment(&child_path, child)
                    );
                }
            }
        }
    }

    /// One `- key: value` entry of a list of mappings.
    fn list_item(&mut self, item: &Value, path: &str, indent: usize) {
        let pad = "  ".repeat(indent);
        let mut nested = String::new();
        let mut writer = Writer {
            config: self.config,
            out: &mut nested,
        };
        writer.entries(item, path, indent + 1);
        let inner_pad = "  ".repeat(indent + 1);
        match nested.strip_prefix(&inner_pad) {
            Some(rest) if !rest.is_empty() => {
                let _ = write!(self.out, "{pad}- {rest}");
            }
            _ => {
                let _ = writeln!(self.out, "{pad}- {{}}");
            }
        }
    }

    /// `  # default` (with the meaning of a `null`) for a value the input did not give.
    fn comment(&self, path: &str, value: &Value) -> String {
        let source = &self.config.source;
        if source.text.is_empty() || source.origins.contains_key(path) {
            return String::new();
        }
        match schema::lookup(INPUT_KEYS, path) {
            Some(KeyDoc {
                default: schema::Default::Unset(meaning),
                ..
            }) if value.is_null() => format!("  # default: {meaning}"),
            _ => "  # default".to_owned(),
        }
    }
}

/// Position of a key path in the reference (unknown keys last).
fn order(path: &str) -> usize {
    let generic = schema::generic_path(path);
    INPUT_KEYS
        .iter()
        .position(|k| k.path == generic)
        .unwrap_or(usize::MAX)
}

/// A value on one line: scalars, and lists of scalars or of lists, in flow style.
fn flow(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => plain_or_quoted(s),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(flow).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let entries: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", plain_or_quoted(k), flow(v)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
    }
}

/// A string as a plain YAML scalar where that reads back as the same string (in YAML 1.2, and
/// in 1.1 readers but for `y`/`n`, which hexfem's inputs write plain: `y: 0.0`), else as a
/// JSON (= YAML double-quoted) string.
fn plain_or_quoted(s: &str) -> String {
    let plain = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '/' || c == '.')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | ".inf" | ".nan"
        )
        && !s.starts_with("..")
        && s.parse::<f64>().is_err();
    if plain {
        s.to_owned()
    } else {
        serde_json::Value::String(s.to_owned()).to_string()
    }
}
