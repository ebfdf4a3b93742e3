//! A serde `Deserializer` over a [`Node`] tree whose errors carry the origin and key path of the
//! node they concern.
//!
//! Every `deserialize_*` call stamps errors raised while visiting its node with that node's
//! origin unless an inner node already did, so the innermost node wins: a wrong type points at
//! the value, an unknown key at the key, a missing key at the mapping that lacks it.

use std::fmt;

use serde::de::{self, DeserializeSeed, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor};

use super::tree::{display_path, index_path, key_path, Entry, Node, Origin, Value};

/// A schema error: a wrong type, an unknown or missing key, an unknown variant.
#[derive(Debug)]
pub(crate) struct DeError {
    pub message: String,
    /// Origin and key path of the node the error concerns; set by the innermost node.
    pub place: Option<(Origin, String)>,
}

impl DeError {
    fn located(mut self, origin: &Origin, path: &str) -> Self {
        if self.place.is_none() {
            self.place = Some((origin.clone(), path.to_owned()));
        }
        self
    }
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError {
            message: msg.to_string(),
            place: None,
        }
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        Self::custom(format!(
            "unknown key `{field}`{}; valid keys: {}",
            suggestion(field, expected),
            expected.join(", ")
        ))
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        Self::custom(format!(
            "unknown choice `{variant}`{}; valid choices: {}",
            suggestion(variant, expected),
            expected.join(", ")
        ))
    }

    fn missing_field(field: &'static str) -> Self {
        Self::custom(format!("missing key `{field}`"))
    }

    fn duplicate_field(field: &'static str) -> Self {
        Self::custom(format!("key `{field}` is given twice"))
    }
}

/// `" (did you mean `x`?)"` for the closest candidate within a small edit distance, else `""`.
fn suggestion(given: &str, candidates: &[&str]) -> String {
    let limit = (given.chars().count() / 3).max(2);
    candidates
        .iter()
        .map(|c| (edit_distance(given, c), *c))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, c)| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default()
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

/// Deserializer for one node; `path` is its key path.
pub(crate) struct NodeDe<'a> {
    node: &'a Node,
    path: String,
}

impl<'a> NodeDe<'a> {
    pub fn root(node: &'a Node) -> Self {
        NodeDe {
            node,
            path: String::new(),
        }
    }

    fn locate<T>(&self, result: Result<T, DeError>) -> Result<T, DeError> {
        result.map_err(|e| e.located(&self.node.origin, &self.path))
    }

    fn invalid_type(&self, expected: &dyn de::Expected) -> DeError {
        let unexpected = match &self.node.value {
            Value::Null => de::Unexpected::Unit,
            Value::Bool(b) => de::Unexpected::Bool(*b),
            Value::Int(i) => de::Unexpected::Signed(*i),
            Value::UInt(u) => de::Unexpected::Unsigned(*u),
            Value::Float(x) => de::Unexpected::Float(*x),
            Value::Str(s) => de::Unexpected::Str(s),
            Value::Seq(_) => de::Unexpected::Seq,
            Value::Map(_) => de::Unexpected::Map,
        };
        de::Error::invalid_type(unexpected, expected)
    }
}

impl<'de> de::Deserializer<'de> for NodeDe<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let result = match &self.node.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Int(i) => visitor.visit_i64(*i),
            Value::UInt(u) => visitor.visit_u64(*u),
            Value::Float(x) => visitor.visit_f64(*x),
            Value::Str(s) => visitor.visit_borrowed_str(s),
            Value::Seq(items) => {
                let mut seq = SeqDe {
                    items: items.iter().enumerate(),
                    path: &self.path,
                };
                visitor
                    .visit_seq(&mut seq)
                    .and_then(|v| match seq.items.len() {
                        0 => Ok(v),
                        extra => Err(de::Error::custom(format!(
                            "expected {} entries, found {}",
                            items.len() - extra,
                            items.len()
                        ))),
                    })
            }
            Value::Map(entries) => visitor.visit_map(MapDe {
                entries: entries.iter(),
                pending: None,
                path: &self.path,
            }),
        };
        self.locate(result)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.node.value {
            Value::Null => self.locate(visitor.visit_none()),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let result = match &self.node.value {
            Value::Str(s) => visitor.visit_enum(UnitVariantDe { name: s }),
            Value::Map(entries) if entries.len() == 1 => visitor.visit_enum(MapVariantDe {
                entry: &entries[0],
                path: &self.path,
            }),
            Value::Map(entries) => {
                let found: Vec<&str> = entries.iter().map(|e| e.key.as_str()).collect();
                Err(de::Error::custom(format!(
                    "expected exactly one of the keys {}, found {}",
                    variants.join(" | "),
                    if found.is_empty() {
                        "none".to_owned()
                    } else {
                        found.join(", ")
                    }
                )))
            }
            _ => Err(self.invalid_type(&format!("one of {}", variants.join(" | ")).as_str())),
        };
        self.locate(result)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

struct SeqDe<'a, I> {
    items: I,
    path: &'a str,
}

impl<'de, I> SeqAccess<'de> for &mut SeqDe<'_, I>
where
    I: ExactSizeIterator<Item = (usize, &'de Node)>,
{
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        match self.items.next() {
            Some((i, node)) => seed
                .deserialize(NodeDe {
                    node,
                    path: index_path(self.path, i),
                })
                .map(Some),
            None => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

struct MapDe<'a, 'de> {
    entries: std::slice::Iter<'de, Entry>,
    pending: Option<&'de Entry>,
    path: &'a str,
}

impl<'de> MapAccess<'de> for MapDe<'_, 'de> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        let Some(entry) = self.entries.next() else {
            return Ok(None);
        };
        self.pending = Some(entry);
        let key = de::value::BorrowedStrDeserializer::<DeError>::new(&entry.key);
        seed.deserialize(key)
            .map(Some)
            .map_err(|e| e.located(&entry.key_origin, &key_path(self.path, &entry.key)))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let entry = self
            .pending
            .take()
            .ok_or_else(|| de::Error::custom("a map value was requested before its key"))?;
        seed.deserialize(NodeDe {
            node: &entry.value,
            path: key_path(self.path, &entry.key),
        })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// An enum written as a bare string: `model: neo_hookean`.
struct UnitVariantDe<'de> {
    name: &'de str,
}

impl<'de> EnumAccess<'de> for UnitVariantDe<'de> {
    type Error = DeError;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self), DeError> {
        let name = de::value::BorrowedStrDeserializer::<DeError>::new(self.name);
        Ok((seed.deserialize(name)?, self))
    }
}

impl<'de> VariantAccess<'de> for UnitVariantDe<'de> {
    type Error = DeError;

    fn unit_variant(self) -> Result<(), DeError> {
        Ok(())
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, _seed: T) -> Result<T::Value, DeError> {
        Err(self.needs_value())
    }
    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, _visitor: V) -> Result<V::Value, DeError> {
        Err(self.needs_value())
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, DeError> {
        Err(self.needs_value())
    }
}

impl UnitVariantDe<'_> {
    fn needs_value(&self) -> DeError {
        de::Error::custom(format!(
            "`{}` needs parameters: write `{}: {{ ... }}`",
            self.name, self.name
        ))
    }
}

/// An enum written as a one-key mapping: `mesh: { box: { ... } }`.
struct MapVariantDe<'a, 'de> {
    entry: &'de Entry,
    path: &'a str,
}

impl<'a, 'de> MapVariantDe<'a, 'de> {
    fn value(&self) -> NodeDe<'de> {
        NodeDe {
            node: &self.entry.value,
            path: key_path(self.path, &self.entry.key),
        }
    }
}

impl<'de> EnumAccess<'de> for MapVariantDe<'_, 'de> {
    type Error = DeError;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self), DeError> {
        let key = de::value::BorrowedStrDeserializer::<DeError>::new(&self.entry.key);
        let variant = seed.deserialize(key).map_err(|e| {
            e.located(
                &self.entry.key_origin,
                &key_path(self.path, &self.entry.key),
            )
        })?;
        Ok((variant, self))
    }
}

impl<'de> VariantAccess<'de> for MapVariantDe<'_, 'de> {
    type Error = DeError;

    fn unit_variant(self) -> Result<(), DeError> {
        match self.entry.value.value {
            Value::Null => Ok(()),
            _ => {
                let de = self.value();
                de.locate(Err(de::Error::custom(format!(
                    "`{}` takes no parameters",
                    display_path(&de.path)
                ))))
            }
        }
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, DeError> {
        seed.deserialize(self.value())
    }
    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, DeError> {
        de::Deserializer::deserialize_any(self.value(), visitor)
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        de::Deserializer::deserialize_any(self.value(), visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        young_modulus: f64,
        #[serde(default)]
        steps: Option<usize>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields, rename_all = "snake_case")]
    enum Choice {
        First(Inner),
        Second,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        inner: Vec<Inner>,
        choice: Choice,
        point: [f64; 3],
    }

    fn parse(text: &str) -> Result<Outer, DeError> {
        let tree = Node::parse(text).unwrap();
        Outer::deserialize(NodeDe::root(&tree))
    }

    fn place(err: &DeError) -> (u32, u32, &str) {
        match &err.place {
            Some((Origin::File { line, column }, path)) => (*line, *column, path.as_str()),
            other => panic!("unexpected place {other:?}"),
        }
    }

    #[test]
    fn deserializes_nested_values() {
        let outer = parse(
            "inner:\n  - { young_modulus: 1 }\n  - { young_modulus: 2.5, steps: 3 }\n\
             choice: { first: { young_modulus: 7 } }\npoint: [1, 2, 3]\n",
        )
        .unwrap();
        assert_eq!(outer.inner[0].young_modulus, 1.0);
        assert_eq!(outer.inner[1].steps, Some(3));
        assert_eq!(
            outer.choice,
            Choice::First(Inner {
                young_modulus: 7.0,
                steps: None
            })
        );
        assert_eq!(outer.point, [1.0, 2.0, 3.0]);
        let unit = parse("inner: []\nchoice: second\npoint: [0, 0, 0]\n").unwrap();
        assert_eq!(unit.choice, Choice::Second);
    }

    #[test]
    fn errors_point_at_the_innermost_node() {
        let head = "choice: second\npoint: [0, 0, 0]\n";
        let err = parse(&format!(
            "{head}inner:\n  - {{ young_modulus: 1, stpes: 2 }}\n"
        ))
        .unwrap_err();
        assert_eq!(place(&err), (4, 25, "inner[0].stpes"));
        assert!(
            err.message.contains("did you mean `steps`?"),
            "{}",
            err.message
        );
        assert!(
            err.message.contains("young_modulus, steps"),
            "{}",
            err.message
        );

        let err = parse(&format!("{head}inner:\n  - {{ young_modulus: abc }}\n")).unwrap_err();
        assert_eq!(place(&err), (4, 22, "inner[0].young_modulus"));

        let err = parse(&format!("{head}inner:\n  - {{ steps: -1 }}\n")).unwrap_err();
        assert_eq!(place(&err), (4, 14, "inner[0].steps"));

        let err = parse(&format!("{head}inner:\n  - {{ steps: 1 }}\n")).unwrap_err();
        assert_eq!(place(&err), (4, 5, "inner[0]"));
        assert!(err.message.contains("missing key `young_modulus`"));

        let err = parse("inner: []\nchoice: third\npoint: [0, 0, 0]\n").unwrap_err();
        assert_eq!(place(&err), (2, 9, "choice"));
        assert!(
            err.message.contains("valid choices: first, second"),
            "{}",
            err.message
        );

        let err =
            parse("inner: []\nchoice: { first: {young_modulus: 1}, second: }\npoint: [0, 0, 0]\n")
                .unwrap_err();
        assert_eq!(place(&err), (2, 9, "choice"));

        let err = parse("inner: []\nchoice: second\npoint: [0, 0, 0, 0]\n").unwrap_err();
        assert_eq!(place(&err), (3, 8, "point"));
        let err = parse("inner: []\nchoice: second\npoint: [0, 0]\n").unwrap_err();
        assert_eq!(place(&err), (3, 8, "point"));
    }

    #[test]
    fn suggestions_need_a_close_match() {
        assert_eq!(edit_distance("modle", "model"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(
            suggestion("modle", &["cells", "model"]),
            " (did you mean `model`?)"
        );
        assert_eq!(suggestion("zzzzzz", &["cells", "model"]), "");
    }
}
