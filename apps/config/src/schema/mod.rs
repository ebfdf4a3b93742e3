//! The description of every input key: name, type, default, allowed values, unit and meaning.
//!
//! [`INPUT_KEYS`] (run inputs) and [`CAMPAIGN_KEYS`] (campaign files) are the one description
//! from which the reference page ([`reference_page`], committed as `docs/input-reference.md`),
//! the JSON Schema ([`json_schema`], committed as `docs/hexfem.schema.json`) and the comments of
//! the resolved input ([`Config::to_resolved_yaml`](crate::Config::to_resolved_yaml)) are
//! generated. The tests keep it equal to what the parser accepts: they walk the `Deserialize`
//! impls of [`Config`](crate::Config) and compare every key path, type, choice list and
//! nullability with the table, compare every stated default with the parsed default, check the
//! stated ranges against `validate`, and regenerate the committed files.
//!
//! A key path is written as in error messages, with `[]` for "every entry of the list" and `*`
//! for a key the user chooses (a campaign parameter): `materials[].model`, `grid.*`.

mod json;
mod page;
mod table;

pub use json::{campaign_json_schema, campaign_json_schema_text, json_schema, json_schema_text};
pub use page::reference_page;
pub use page::REGENERATE;
pub use table::{CAMPAIGN_KEYS, INPUT_KEYS};

/// One key of the input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeyDoc {
    /// Key path (`linear_solver.amg.storage`, `boundary.dirichlet[].x`, `grid.*`).
    pub path: &'static str,
    /// What the value is.
    pub ty: Type,
    /// What an absent key means.
    pub default: Default,
    /// Bounds of a number (of each component of a fixed-length list, of the length of a
    /// [`Type::List`]).
    pub bounds: Bounds,
    /// Whether `null` is accepted (the same as leaving the key out).
    pub nullable: bool,
    /// A constraint in words that bounds cannot say (`3 lambda + 2 mu > 0`); empty if none.
    pub rule: &'static str,
    /// The unit of a dimensional value, in the input's consistent unit system.
    pub unit: Unit,
    /// One line: what the key means.
    pub doc: &'static str,
}

/// The type of a key's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Type {
    /// A mapping of the keys listed under `path.`.
    Section,
    /// A mapping of exactly one of the keys listed under `path.` (`mesh: { box: ... }`).
    OneKey,
    /// A list of mappings of the keys under `path[].` (or of the value described at `path[]`).
    List,
    /// A mapping whose keys the user chooses, each value as described at `path.*`.
    Map,
    Bool,
    /// A non-negative integer.
    Int,
    Float,
    Str,
    /// A file or directory path.
    Path,
    /// A set of the mesh: its name, or its numeric id (Exodus II) as an integer or a string.
    SetName,
    /// A number, or an expression of `x, y, z, t` in quotes.
    Scalar,
    /// Any YAML value.
    Any,
    /// A non-empty list of any YAML values.
    Values,
    /// One of the choices.
    Choice(&'static [Choice]),
    /// A list of distinct choices.
    ChoiceList(&'static [Choice]),
    /// A list of exactly `len` elements.
    Array(Elem, usize),
    /// A load curve `[[time, factor], ...]`.
    Curve,
}

/// The element of a [`Type::Array`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    Int,
    Float,
    Scalar,
    /// A point `[x, y, z]`.
    Point,
}

/// A choice of a [`Type::Choice`] key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    pub name: &'static str,
    pub doc: &'static str,
}

/// What an absent key means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Default {
    /// The key must be given.
    Required,
    /// This value, as YAML text.
    Value(&'static str),
    /// Not set; what that means in words (`free`, `the load factor`, `element order + 1`).
    Unset(&'static str),
}

/// A bound of a number.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    None,
    Inclusive(f64),
    Exclusive(f64),
}

/// Lower and upper bounds of a number.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    pub min: Bound,
    pub max: Bound,
}

impl Bounds {
    pub const NONE: Bounds = Bounds {
        min: Bound::None,
        max: Bound::None,
    };

    /// The bounds in words: `> 0`, `0 < value < 1`, `-1 < value < 0.5`, `1..=6`; empty if none.
    pub fn text(&self, integer: bool) -> String {
        let num = |v: f64| format_number(v);
        match (self.min, self.max) {
            (Bound::None, Bound::None) => String::new(),
            (Bound::Inclusive(a), Bound::Inclusive(b)) if integer => {
                format!("{}..={}", num(a), num(b))
            }
            (Bound::Inclusive(a), Bound::None) => format!(">= {}", num(a)),
            (Bound::Exclusive(a), Bound::None) => format!("> {}", num(a)),
            (Bound::None, Bound::Inclusive(b)) => format!("<= {}", num(b)),
            (Bound::None, Bound::Exclusive(b)) => format!("< {}", num(b)),
            (lo, hi) => {
                let side = |b: Bound, lower: bool| match b {
                    Bound::Inclusive(v) if lower => format!("{} <= ", num(v)),
                    Bound::Exclusive(v) if lower => format!("{} < ", num(v)),
                    Bound::Inclusive(v) => format!(" <= {}", num(v)),
                    Bound::Exclusive(v) => format!(" < {}", num(v)),
                    Bound::None => String::new(),
                };
                format!("{}value{}", side(lo, true), side(hi, false))
            }
        }
    }
}

/// A number as written in the docs: integers without a fraction, large ones with an exponent.
fn format_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e7 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// The unit of a dimensional value in the input's consistent unit system (hexfem converts
/// nothing; see `docs/input.md`, "Units").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Dimensionless, or not a physical quantity.
    None,
    Length,
    Force,
    /// Force per area (stress, moduli, traction, pressure).
    Stress,
    /// Force per volume.
    ForcePerVolume,
    /// Angle in degrees.
    Degrees,
}

impl Unit {
    /// The unit in words, `""` for [`Unit::None`].
    pub fn text(self) -> &'static str {
        match self {
            Unit::None => "",
            Unit::Length => "length",
            Unit::Force => "force",
            Unit::Stress => "force/length^2",
            Unit::ForcePerVolume => "force/length^3",
            Unit::Degrees => "degrees",
        }
    }
}

impl Type {
    /// The type in words, as on the reference page.
    pub fn text(&self) -> String {
        let elem = |e: Elem| match e {
            Elem::Int => "int",
            Elem::Float => "float",
            Elem::Scalar => "scalar",
            Elem::Point => "[float; 3]",
        };
        match self {
            Type::Section => "mapping".into(),
            Type::OneKey => "mapping (one key)".into(),
            Type::List => "list".into(),
            Type::Map => "mapping".into(),
            Type::Bool => "bool".into(),
            Type::Int => "int".into(),
            Type::Float => "float".into(),
            Type::Str => "string".into(),
            Type::Path => "path".into(),
            Type::SetName => "set name or id".into(),
            Type::Scalar => "scalar".into(),
            Type::Any => "any".into(),
            Type::Values => "list".into(),
            Type::Choice(_) => "choice".into(),
            Type::ChoiceList(_) => "list of choices".into(),
            Type::Array(e, n) => format!("[{}; {n}]", elem(*e)),
            Type::Curve => "[[float; 2]]".into(),
        }
    }

    /// Whether the value is a mapping or list of mappings whose keys are described by entries
    /// below it.
    pub fn has_children(&self) -> bool {
        matches!(self, Type::Section | Type::OneKey | Type::List | Type::Map)
    }
}

/// The keys of `keys` directly below `parent` (`""`: the top level): `parent.key`, or
/// `parent[].key` for a list, in table order (a list's item entry `parent[]` is no key).
pub fn children<'a>(keys: &'a [KeyDoc], parent: &str) -> Vec<&'a KeyDoc> {
    keys.iter()
        .filter(|k| parent_of(k.path) == parent && !k.path.ends_with("[]"))
        .collect()
}

/// The path of the mapping a key belongs to: `a.b[].c` -> `a.b[]`, `a` -> `""`.
pub(crate) fn parent_of(path: &str) -> &str {
    path.rfind('.').map_or("", |i| &path[..i])
}

/// The last segment of a path: `a.b[].c` -> `c`.
pub(crate) fn name_of(path: &str) -> &str {
    path.rfind('.').map_or(path, |i| &path[i + 1..])
}

/// The entry for a concrete key path (`materials[2].model`, `grid.mesh.box.cells`), if any.
pub fn lookup<'a>(keys: &'a [KeyDoc], path: &str) -> Option<&'a KeyDoc> {
    let generic = generic_path(path);
    keys.iter().find(|k| k.path == generic)
}

/// A concrete key path with list indices replaced by `[]`: `materials[2].model` ->
/// `materials[].model`.
pub(crate) fn generic_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => {
                in_index = true;
                out.push_str("[]");
            }
            ']' => in_index = false,
            _ if in_index => {}
            _ => out.push(c),
        }
    }
    // the user's names under a run input's mappings (`sets.top.kind`) stand as `*`
    for key in INPUT_KEYS.iter().filter(|k| k.ty == Type::Map) {
        if let Some(rest) = out.strip_prefix(key.path).and_then(|r| r.strip_prefix('.')) {
            let tail = rest.find('.').map_or("", |i| &rest[i..]);
            return format!("{}.*{tail}", key.path);
        }
    }
    out
}

#[cfg(test)]
mod tests;
