//! A generic YAML tree that remembers where every value came from.
//!
//! The configuration is read in two stages: YAML text -> [`Node`] tree (this module, syntax errors
//! carry the parser's line and column) -> typed parameters (`de`, type errors carry the line and
//! column of the offending node). The tree in between is where `--set key.path=value` overrides
//! are applied, so an overridden value is typed and reported exactly like one written in the file,
//! with the `--set` argument as its [`Origin`].

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

/// Where a configuration value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// 1-based line and column (in characters) in the configuration file.
    File { line: u32, column: u32 },
    /// The `--set` argument that wrote the value.
    Override(String),
}

/// A YAML value with its origin.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Node {
    pub value: Value,
    pub origin: Origin,
}

/// A YAML value; scalars are typed by the YAML core schema as serde-saphyr resolves them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// Entries in document order; keys are unique (the parser rejects duplicates).
    Map(Vec<Entry>),
}

/// One `key: value` entry of a mapping.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    pub key: String,
    pub key_origin: Origin,
    pub value: Node,
}

impl Value {
    /// What kind of value this is, for error messages ("a mapping", "a number", ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) | Value::UInt(_) | Value::Float(_) => "a number",
            Value::Str(_) => "a string",
            Value::Seq(_) => "a sequence",
            Value::Map(_) => "a mapping",
        }
    }
}

/// Why a `--set` argument could not be applied to the tree.
#[derive(Debug)]
pub(crate) struct OverrideError {
    /// Key path of the node the problem was found at (empty when the argument itself is malformed).
    pub path: String,
    pub message: String,
}

impl Node {
    /// Parses one YAML document into a tree. An empty document is a null node at 1:1. Only
    /// `true` and `false` are booleans (YAML 1.2), so set names such as `on` or `no` stay strings.
    pub fn parse(text: &str) -> Result<Node, serde_saphyr::Error> {
        if text.trim().is_empty() {
            return Ok(Node {
                value: Value::Null,
                origin: Origin::File { line: 1, column: 1 },
            });
        }
        serde_saphyr::from_str_with_options(text, serde_saphyr::options! { strict_booleans: true })
    }

    /// Applies one `key.path=value` override. Path segments are separated by `.`; a sequence
    /// element is addressed as `name[3]` or `name.3`. Missing mapping keys (and null nodes on the
    /// way) are created, so a key that the file leaves at its default can be set; a key that the
    /// schema does not know is caught later by deserialization, which then names the argument.
    /// The value is parsed as YAML (scalars, `[flow, sequences]`, `{flow: mappings}`).
    pub fn apply_override(&mut self, arg: &str) -> Result<(), OverrideError> {
        let malformed = |message: String| OverrideError {
            path: String::new(),
            message,
        };
        let (key_path, text) = arg
            .split_once('=')
            .ok_or_else(|| malformed("expected `key.path=value`".to_owned()))?;
        let segments = parse_key_path(key_path.trim()).map_err(malformed)?;
        let mut value = Node::parse(text).map_err(|e| {
            if names_non_finite(text) {
                malformed(format!(
                    "the value `{text}` holds a number that is not finite: non-finite numbers \
                     (.nan, .inf) are refused; give a finite value"
                ))
            } else {
                malformed(format!(
                    "the value `{text}` is not valid YAML: {}",
                    super::error::bare_message(&e)
                ))
            }
        })?;
        let origin = Origin::Override(arg.to_owned());
        value.set_origin(&origin);

        let mut node = self;
        let mut path = String::new();
        for segment in &segments {
            node = node.child_mut(segment, &mut path, &origin)?;
        }
        *node = value;
        Ok(())
    }

    /// The child addressed by `segment`, created if it is a missing mapping key; `path` is
    /// extended by the segment.
    fn child_mut(
        &mut self,
        segment: &Segment,
        path: &mut String,
        origin: &Origin,
    ) -> Result<&mut Node, OverrideError> {
        let parent = path.clone();
        let kind = self.value.kind();
        push_segment(path, segment);
        match segment {
            Segment::Key(key) => {
                if matches!(self.value, Value::Null) {
                    self.value = Value::Map(Vec::new());
                }
                let Value::Map(entries) = &mut self.value else {
                    return Err(OverrideError {
                        message: format!(
                            "cannot set key `{key}`: `{}` is {}, not a mapping",
                            display_path(&parent),
                            kind
                        ),
                        path: parent,
                    });
                };
                let index = match entries.iter().position(|e| e.key == *key) {
                    Some(i) => i,
                    None => {
                        entries.push(Entry {
                            key: key.clone(),
                            key_origin: origin.clone(),
                            value: Node {
                                value: Value::Null,
                                origin: origin.clone(),
                            },
                        });
                        entries.len() - 1
                    }
                };
                Ok(&mut entries[index].value)
            }
            Segment::Index(index) => {
                let Value::Seq(items) = &mut self.value else {
                    return Err(OverrideError {
                        message: format!(
                            "cannot index [{index}]: `{}` is {}, not a sequence",
                            display_path(&parent),
                            kind
                        ),
                        path: parent,
                    });
                };
                let len = items.len();
                items.get_mut(*index).ok_or_else(|| OverrideError {
                    message: format!(
                        "index [{index}] is out of range: `{}` has {len} entries",
                        display_path(&parent)
                    ),
                    path: parent.clone(),
                })
            }
        }
    }

    fn set_origin(&mut self, origin: &Origin) {
        self.origin = origin.clone();
        match &mut self.value {
            Value::Seq(items) => items.iter_mut().for_each(|n| n.set_origin(origin)),
            Value::Map(entries) => entries.iter_mut().for_each(|e| {
                e.key_origin = origin.clone();
                e.value.set_origin(origin);
            }),
            _ => {}
        }
    }

    /// The value as JSON (YAML's core types map one to one; keys stay in document order only
    /// as far as `serde_json`'s map keeps them).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match &self.value {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => J::from(*i),
            Value::UInt(u) => J::from(*u),
            Value::Float(x) => serde_json::Number::from_f64(*x).map_or(J::Null, J::Number),
            Value::Str(s) => J::String(s.clone()),
            Value::Seq(items) => J::Array(items.iter().map(Node::to_json).collect()),
            Value::Map(entries) => J::Object(
                entries
                    .iter()
                    .map(|e| (e.key.clone(), e.value.to_json()))
                    .collect(),
            ),
        }
    }

    /// The origin of every node by key path (`materials[1].poisson_ratio`; the root is `""`).
    pub fn origins(&self) -> BTreeMap<String, Origin> {
        fn walk(node: &Node, path: &mut String, out: &mut BTreeMap<String, Origin>) {
            out.insert(path.clone(), node.origin.clone());
            let len = path.len();
            match &node.value {
                Value::Seq(items) => {
                    for (i, item) in items.iter().enumerate() {
                        push_segment(path, &Segment::Index(i));
                        walk(item, path, out);
                        path.truncate(len);
                    }
                }
                Value::Map(entries) => {
                    for entry in entries {
                        push_segment(path, &Segment::Key(entry.key.clone()));
                        walk(&entry.value, path, out);
                        path.truncate(len);
                    }
                }
                _ => {}
            }
        }
        let mut out = BTreeMap::new();
        walk(self, &mut String::new(), &mut out);
        out
    }
}

/// One step of a key path.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(usize),
}

/// Appends a segment in the canonical path syntax: `a.b`, `a[3]`.
fn push_segment(path: &mut String, segment: &Segment) {
    match segment {
        Segment::Key(key) => {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(key);
        }
        Segment::Index(i) => {
            path.push('[');
            path.push_str(&i.to_string());
            path.push(']');
        }
    }
}

/// A key path for messages: the root is shown as `(top level)`.
pub(crate) fn display_path(path: &str) -> &str {
    if path.is_empty() {
        "(top level)"
    } else {
        path
    }
}

/// Child path of `parent` for mapping key `key`.
pub(crate) fn key_path(parent: &str, key: &str) -> String {
    let mut path = parent.to_owned();
    push_segment(&mut path, &Segment::Key(key.to_owned()));
    path
}

/// Child path of `parent` for sequence index `index`.
pub(crate) fn index_path(parent: &str, index: usize) -> String {
    let mut path = parent.to_owned();
    push_segment(&mut path, &Segment::Index(index));
    path
}

/// Splits `a.b[2].c` (or `a.b.2.c`) into segments.
fn parse_key_path(text: &str) -> Result<Vec<Segment>, String> {
    if text.is_empty() {
        return Err("the key path before `=` is empty".to_owned());
    }
    let mut segments = Vec::new();
    for part in text.split('.') {
        let (name, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
        if name.is_empty() && rest.is_empty() {
            return Err(format!("empty segment in key path `{text}`"));
        }
        if !name.is_empty() {
            segments.push(match name.parse::<usize>() {
                Ok(i) => Segment::Index(i),
                Err(_) => Segment::Key(name.to_owned()),
            });
        }
        while !rest.is_empty() {
            let close = rest
                .find(']')
                .filter(|_| rest.starts_with('['))
                .ok_or_else(|| format!("malformed index in key path `{text}`"))?;
            let index = rest[1..close]
                .parse::<usize>()
                .map_err(|_| format!("index `{}` in `{text}` is not a number", &rest[1..close]))?;
            segments.push(Segment::Index(index));
            rest = &rest[close + 1..];
        }
    }
    Ok(segments)
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spanned = Spanned::<Value>::deserialize(deserializer)?;
        Ok(Node {
            value: spanned.value,
            origin: Origin::File {
                line: spanned.referenced.line() as u32,
                column: spanned.referenced.column() as u32,
            },
        })
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::UInt(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::Str(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Value::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries = Vec::new();
        while let Some((key, value)) = map.next_entry::<Spanned<String>, Node>()? {
            entries.push(Entry {
                key: key.value,
                key_origin: Origin::File {
                    line: key.referenced.line() as u32,
                    column: key.referenced.column() as u32,
                },
                value,
            });
        }
        Ok(Value::Map(entries))
    }
}

/// Whether `text` holds YAML's spelling of a non-finite float (`.nan`, `.inf`, `-.inf`, any
/// case) as a token: what the parser refuses as a value.
fn names_non_finite(text: &str) -> bool {
    text.split(|c: char| c.is_whitespace() || "[]{},:".contains(c))
        .map(|token| token.trim_start_matches(['+', '-']).to_ascii_lowercase())
        .any(|token| token == ".nan" || token == ".inf")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: u32, column: u32) -> Origin {
        Origin::File { line, column }
    }

    #[test]
    fn parse_records_origins_of_keys_and_values() {
        let tree = Node::parse("a: 1\nb:\n  - x\n  - [2.5, -3]\nc: [on, true, ~]\n").unwrap();
        let origins = tree.origins();
        assert_eq!(origins["a"], at(1, 4));
        assert_eq!(origins["b[0]"], at(3, 5));
        assert_eq!(origins["b[1][1]"], at(4, 11));
        let Value::Map(entries) = &tree.value else {
            panic!("root is not a map")
        };
        assert_eq!(entries[1].key, "b");
        assert_eq!(entries[1].key_origin, at(2, 1));
        assert_eq!(entries[0].value.value, Value::UInt(1));
        let Value::Seq(c) = &entries[2].value.value else {
            panic!("c is not a sequence")
        };
        let scalars: Vec<&Value> = c.iter().map(|n| &n.value).collect();
        assert_eq!(
            scalars,
            [&Value::Str("on".into()), &Value::Bool(true), &Value::Null]
        );
    }

    #[test]
    fn key_paths_accept_brackets_and_dotted_indices() {
        use Segment::{Index, Key};
        assert_eq!(
            parse_key_path("materials[1].mu").unwrap(),
            vec![Key("materials".into()), Index(1), Key("mu".into())]
        );
        assert_eq!(
            parse_key_path("a.0.b[2][3]").unwrap(),
            vec![
                Key("a".into()),
                Index(0),
                Key("b".into()),
                Index(2),
                Index(3)
            ]
        );
        assert!(parse_key_path("a..b").is_err());
        assert!(parse_key_path("a[x]").is_err());
        assert!(parse_key_path("a[1").is_err());
        assert!(parse_key_path("").is_err());
    }

    #[test]
    fn overrides_replace_create_and_report_bad_paths() {
        let mut tree =
            Node::parse("newton: { rtol: 1.0e-8 }\nmaterials:\n  - { mu: 1 }\n").unwrap();
        tree.apply_override("newton.rtol=1e-6").unwrap();
        tree.apply_override("loading.steps=4").unwrap();
        tree.apply_override("materials[0].lambda=[1, 2]").unwrap();
        let origins = tree.origins();
        let set = |arg: &str| Origin::Override(arg.to_owned());
        assert_eq!(origins["newton.rtol"], set("newton.rtol=1e-6"));
        assert_eq!(origins["loading.steps"], set("loading.steps=4"));
        assert_eq!(
            origins["materials[0].lambda[1]"],
            set("materials[0].lambda=[1, 2]")
        );
        assert_eq!(origins["materials[0].mu"], at(3, 11));

        let err = tree.apply_override("materials[3].mu=1").unwrap_err();
        assert!(err.message.contains("out of range"), "{}", err.message);
        let err = tree.apply_override("newton.rtol.x=1").unwrap_err();
        assert_eq!(err.path, "newton.rtol");
        assert!(tree.apply_override("newton.rtol").is_err());
        assert!(tree.apply_override("newton.rtol=[1, 2").is_err());
    }
}
