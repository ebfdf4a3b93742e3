//! The key tables against the parser: every key the `Deserialize` impls accept is described
//! with its type, choices and nullability, and nothing else; stated defaults and ranges are the
//! parser's; every input file and the maximal inputs validate against the JSON Schema; the
//! committed page and schemas are current; the resolved input reads back unchanged.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};
use serde::Deserialize;
use serde_json::Value as Json;

use super::*;
use crate::tree::{key_path, Node};
use crate::{load, load_str, Config};

// ---------------------------------------------------------------------------------------------
// A deserializer that records the shape of every key the parser accepts.

/// What a `Deserialize` impl asked for at a key path.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Shape {
    Struct,
    /// A mapping whose keys the user names (traced with one key, its value at `path.*`).
    Map,
    Enum(Vec<&'static str>),
    Seq,
    Tuple(usize),
    Bool,
    Int,
    Float,
    Str,
    Any,
}

#[derive(Default)]
struct Trace {
    shapes: BTreeMap<String, Shape>,
    nullable: BTreeSet<String>,
    /// Every enum picks its variant `min(pass, len - 1)`, so that passes `0..most variants`
    /// visit every variant's payload.
    pass: usize,
    most_variants: usize,
}

type TraceError = de::value::Error;

struct Tracer<'t> {
    trace: &'t RefCell<Trace>,
    path: String,
}

impl<'t> Tracer<'t> {
    fn record(&self, shape: Shape) {
        self.trace
            .borrow_mut()
            .shapes
            .insert(self.path.clone(), shape);
    }
    fn child(&self, path: String) -> Tracer<'t> {
        Tracer {
            trace: self.trace,
            path,
        }
    }
}

macro_rules! trace_as {
    ($($method:ident => $shape:expr, $visit:ident($value:expr);)*) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
            self.record($shape);
            visitor.$visit($value)
        })*
    };
}

impl<'de> Deserializer<'de> for Tracer<'_> {
    type Error = TraceError;

    trace_as! {
        deserialize_bool => Shape::Bool, visit_bool(false);
        deserialize_i8 => Shape::Int, visit_u64(1);
        deserialize_i16 => Shape::Int, visit_u64(1);
        deserialize_i32 => Shape::Int, visit_u64(1);
        deserialize_i64 => Shape::Int, visit_u64(1);
        deserialize_u8 => Shape::Int, visit_u64(1);
        deserialize_u16 => Shape::Int, visit_u64(1);
        deserialize_u32 => Shape::Int, visit_u64(1);
        deserialize_u64 => Shape::Int, visit_u64(1);
        deserialize_f32 => Shape::Float, visit_f64(1.0);
        deserialize_f64 => Shape::Float, visit_f64(1.0);
        deserialize_char => Shape::Str, visit_str("a");
        deserialize_str => Shape::Str, visit_str("all");
        deserialize_string => Shape::Str, visit_str("all");
        deserialize_any => Shape::Any, visit_f64(1.0);
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        self.trace.borrow_mut().nullable.insert(self.path.clone());
        visitor.visit_some(self)
    }
    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        visitor.visit_unit()
    }
    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        self.record(Shape::Seq);
        let item = self.child(format!("{}[]", self.path));
        visitor.visit_seq(Items {
            tracer: item,
            left: 1,
        })
    }
    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        self.record(Shape::Tuple(len));
        let item = self.child(format!("{}[]", self.path));
        visitor.visit_seq(Items {
            tracer: item,
            left: len,
        })
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        self.record(Shape::Struct);
        visitor.visit_map(Fields {
            tracer: self,
            fields,
            next: 0,
        })
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        self.record(Shape::Enum(variants.to_vec()));
        let variant = {
            let mut trace = self.trace.borrow_mut();
            trace.most_variants = trace.most_variants.max(variants.len());
            variants[trace.pass.min(variants.len() - 1)]
        };
        visitor.visit_enum(Variant {
            tracer: self,
            variant,
        })
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TraceError> {
        self.record(Shape::Map);
        visitor.visit_map(NamedEntry {
            tracer: self.child(format!("{}.*", self.path)),
            done: false,
        })
    }

    serde::forward_to_deserialize_any! {
        i128 u128 bytes byte_buf unit_struct tuple_struct identifier ignored_any
    }
}

/// The one entry of a traced [`Shape::Map`]: a name, and the value traced at `path.*`.
struct NamedEntry<'t> {
    tracer: Tracer<'t>,
    done: bool,
}

impl<'de> MapAccess<'de> for NamedEntry<'_> {
    type Error = TraceError;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, TraceError> {
        if self.done {
            return Ok(None);
        }
        self.done = true;
        seed.deserialize(de::value::BorrowedStrDeserializer::new("name"))
            .map(Some)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, TraceError> {
        seed.deserialize(self.tracer.child(self.tracer.path.clone()))
    }
}

struct Items<'t> {
    tracer: Tracer<'t>,
    left: usize,
}

impl<'de> SeqAccess<'de> for Items<'_> {
    type Error = TraceError;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, TraceError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(self.tracer.child(self.tracer.path.clone()))
            .map(Some)
    }
}

struct Fields<'t> {
    tracer: Tracer<'t>,
    fields: &'static [&'static str],
    next: usize,
}

impl<'de> MapAccess<'de> for Fields<'_> {
    type Error = TraceError;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, TraceError> {
        match self.fields.get(self.next).copied() {
            Some(field) => seed
                .deserialize(de::value::BorrowedStrDeserializer::new(field))
                .map(Some),
            None => Ok(None),
        }
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, TraceError> {
        let field = self.fields[self.next];
        self.next += 1;
        seed.deserialize(self.tracer.child(key_path(&self.tracer.path, field)))
    }
}

struct Variant<'t> {
    tracer: Tracer<'t>,
    variant: &'static str,
}

impl<'de, 't> EnumAccess<'de> for Variant<'t> {
    type Error = TraceError;
    type Variant = Self;
    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Self), TraceError> {
        let name = seed.deserialize(de::value::BorrowedStrDeserializer::new(self.variant))?;
        Ok((name, self))
    }
}

impl<'de> VariantAccess<'de> for Variant<'_> {
    type Error = TraceError;
    fn unit_variant(self) -> Result<(), TraceError> {
        Ok(())
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, TraceError> {
        seed.deserialize(self.tracer.child(key_path(&self.tracer.path, self.variant)))
    }
    fn tuple_variant<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        let payload = self.tracer.child(key_path(&self.tracer.path, self.variant));
        payload.deserialize_tuple(len, visitor)
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, TraceError> {
        let payload = self.tracer.child(key_path(&self.tracer.path, self.variant));
        payload.deserialize_struct("", fields, visitor)
    }
}

/// Every key path `Config`'s `Deserialize` impls accept, with its shape, and the nullable ones.
fn traced_config() -> (BTreeMap<String, Shape>, BTreeSet<String>) {
    let trace = RefCell::new(<Trace as std::default::Default>::default());
    loop {
        let root = Tracer {
            trace: &trace,
            path: String::new(),
        };
        if let Err(e) = Config::deserialize(root) {
            panic!("tracing the configuration failed: {e}");
        }
        let mut t = trace.borrow_mut();
        t.pass += 1;
        if t.pass >= t.most_variants {
            break;
        }
    }
    let mut t = trace.into_inner();
    t.shapes.remove("");
    (t.shapes, t.nullable)
}

/// The shapes a table entry stands for (its own and its elements').
fn expected_shapes(keys: &[KeyDoc], key: &KeyDoc) -> Vec<(String, Shape)> {
    let p = key.path.to_owned();
    let item = format!("{p}[]");
    let names = |choices: &[Choice]| choices.iter().map(|c| c.name).collect::<Vec<_>>();
    let elem = |e: Elem, at: &str| -> Vec<(String, Shape)> {
        match e {
            Elem::Int => vec![(at.to_owned(), Shape::Int)],
            Elem::Float => vec![(at.to_owned(), Shape::Float)],
            Elem::Scalar => vec![(at.to_owned(), Shape::Any)],
            Elem::Point => vec![
                (at.to_owned(), Shape::Tuple(3)),
                (format!("{at}[]"), Shape::Float),
            ],
        }
    };
    match key.ty {
        Type::Section => vec![(p, Shape::Struct)],
        Type::OneKey => {
            let variants = children(keys, key.path)
                .iter()
                .map(|k| name_of(k.path))
                .collect();
            vec![(p, Shape::Enum(variants))]
        }
        Type::List => vec![(p, Shape::Seq), (item, Shape::Struct)],
        Type::Bool => vec![(p, Shape::Bool)],
        Type::Int => vec![(p, Shape::Int)],
        Type::Float => vec![(p, Shape::Float)],
        Type::Str | Type::Path => vec![(p, Shape::Str)],
        Type::Scalar | Type::SetName => vec![(p, Shape::Any)],
        Type::Choice(c) => vec![(p, Shape::Enum(names(c)))],
        Type::ChoiceList(c) => vec![(p, Shape::Seq), (item, Shape::Enum(names(c)))],
        Type::Array(e, n) => {
            let mut out = vec![(p, Shape::Tuple(n))];
            out.extend(elem(e, &item));
            out
        }
        Type::Curve => vec![
            (p, Shape::Seq),
            (item.clone(), Shape::Tuple(2)),
            (format!("{item}[]"), Shape::Float),
        ],
        Type::Map => vec![(p, Shape::Map)],
        Type::Any | Type::Values => panic!("{}: not a run input type", key.path),
    }
}

#[test]
fn every_key_the_parser_accepts_is_described_and_nothing_else() {
    let (traced, nullable) = traced_config();
    let mut expected = BTreeMap::new();
    for key in INPUT_KEYS {
        for (path, shape) in expected_shapes(INPUT_KEYS, key) {
            assert!(
                expected.insert(path.clone(), shape).is_none(),
                "{path} is described twice"
            );
        }
    }
    let traced_paths: BTreeSet<&String> = traced.keys().collect();
    let described: BTreeSet<&String> = expected.keys().collect();
    let undescribed: Vec<_> = traced_paths.difference(&described).collect();
    let unparsed: Vec<_> = described.difference(&traced_paths).collect();
    assert!(
        undescribed.is_empty(),
        "keys the parser accepts that the table lacks: {undescribed:?}"
    );
    assert!(
        unparsed.is_empty(),
        "keys the table describes that the parser does not accept: {unparsed:?}"
    );
    for (path, shape) in &expected {
        assert_eq!(
            &traced[path], shape,
            "{path}: the table's type is not the parser's"
        );
    }
    let described_nullable: BTreeSet<String> = INPUT_KEYS
        .iter()
        .filter(|k| k.nullable)
        .map(|k| k.path.to_owned())
        .collect();
    assert_eq!(described_nullable, nullable, "keys that take null");
    eprintln!(
        "{} input keys described, {} paths traced",
        INPUT_KEYS.len(),
        traced.len()
    );
}

#[test]
fn campaign_keys_are_the_parsers() {
    let top: Vec<&str> = children(CAMPAIGN_KEYS, "").iter().map(|k| k.path).collect();
    assert_eq!(top, crate::campaign::KEYS);
    let lhs: Vec<&str> = children(CAMPAIGN_KEYS, "latin_hypercube")
        .iter()
        .map(|k| name_of(k.path))
        .collect();
    assert_eq!(lhs, crate::campaign::LATIN_HYPERCUBE_KEYS);
    // a key the table lacks is refused by the parser
    let err = crate::campaign::Campaign::parse("base: a.yaml\nbse: 1\n", Path::new("c.yaml"))
        .unwrap_err();
    assert!(err.message().contains("unknown key `bse`"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Defaults and ranges.

/// Every list with one entry of only its required keys, and the sections left out.
const REQUIRED_ONLY: &str = "\
mesh: { box: { cells: [1, 1, 1] } }
materials: [{ model: linear }]
boundary:
  dirichlet: [{ set: a }]
  twist: [{ set: a, axis: [0, 0, 1], center: [0, 0, 0], angle_deg: 1 }]
  traction: [{ set: a, value: [0, 0, 0] }]
  pressure: [{ set: a, value: 1 }]
  nodal_force: [{ set: a, value: [0, 0, 0] }]
  point_load: [{ at: [0, 0, 0], value: [0, 0, 0] }]
output: { probes: { points: [{ name: p, at: [0, 0, 0] }], sets: [{ set: a }] } }
";

/// `text` parsed into a `Config` as the parser types it, without validation or path resolution.
fn parse_unchecked(text: &str) -> Json {
    let tree = Node::parse(text).unwrap();
    let config =
        Config::deserialize(crate::de::NodeDe::root(&tree)).unwrap_or_else(|e| panic!("{e}"));
    serde_json::to_value(&config).unwrap()
}

/// The value at a generic path (`[]` read as the first entry); `None` if absent.
fn at_path<'a>(value: &'a Json, path: &str) -> Option<&'a Json> {
    let mut node = value;
    for segment in path.split('.') {
        let (name, lists) = segment.split_at(segment.find('[').unwrap_or(segment.len()));
        node = node.get(name)?;
        for _ in 0..lists.len() / 2 {
            node = node.get(0)?;
        }
    }
    Some(node)
}

fn same(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => x.as_f64() == y.as_f64(),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        _ => a == b,
    }
}

#[test]
fn stated_defaults_are_the_parsers() {
    // keys of list entries in REQUIRED_ONLY, the others in an input of only the required keys
    let bare =
        parse_unchecked("mesh: { box: { cells: [1, 1, 1] } }\nmaterials: [{ model: linear }]\n");
    let entries = parse_unchecked(REQUIRED_ONLY);
    let gmsh = parse_unchecked(
        &REQUIRED_ONLY.replace("box: { cells: [1, 1, 1] }", "gmsh: { file: a.msh }"),
    );
    let mut checked = 0;
    for key in INPUT_KEYS {
        let parsed = if key.path.starts_with("mesh.gmsh") {
            &gmsh
        } else if key.path.contains("[]") {
            &entries
        } else {
            &bare
        };
        let found = at_path(parsed, key.path);
        match key.default {
            Default::Value(text) => {
                let stated = Node::parse(text).unwrap().to_json();
                let found = found.unwrap_or_else(|| panic!("{}: no default value", key.path));
                assert!(
                    same(found, &stated),
                    "{}: stated default {stated}, parsed {found}",
                    key.path
                );
                checked += 1;
            }
            Default::Unset(_) if !key.ty.has_children() => {
                assert!(
                    found.is_none_or(|v| v.is_null() || v == &Json::Array(vec![])),
                    "{}: stated unset, parsed {found:?}",
                    key.path
                );
            }
            _ => {}
        }
    }
    assert!(checked > 40, "{checked}");
}

/// Input in which a key's bounds are tried: its section for plain keys, a material entry of
/// the right model for material parameters.
fn context_for(path: &str, gmsh: &GmshDir) -> Option<String> {
    let minimal = "mesh: { box: { cells: [2, 1, 1] } }\n";
    let material = |entry: &str| format!("{minimal}materials: [{entry}]\n");
    let name = name_of(path);
    Some(match path {
        p if p.starts_with("materials[]") => material(match name {
            "young_modulus" | "poisson_ratio" => {
                "{ model: linear, young_modulus: 1, poisson_ratio: 0.3 }"
            }
            "mu" => "{ model: linear, lambda: 1, mu: 1 }",
            "kappa" => "{ model: decoupled_neo_hookean, kappa: 1, mu: 1 }",
            "mu1" | "mu2" => "{ model: mooney_rivlin, lambda: 1, mu1: 1, mu2: 1 }",
            "mu2_fraction" => {
                "{ model: mooney_rivlin, young_modulus: 1, poisson_ratio: 0.3, mu2_fraction: 0.5 }"
            }
            _ => return None,
        }),
        p if p.starts_with("mesh.gmsh") => {
            GMSH.replace("part.msh", &gmsh.0.join("part.msh").display().to_string())
        }
        p if p.contains("[]") => return None,
        p if p.starts_with("sets.*") => format!(
            "{}sets: {{ top: {{ kind: faces, normal: [0, 0, 1] }} }}\n",
            material("{ model: linear, lambda: 1, mu: 1 }")
        ),
        _ => material("{ model: linear, lambda: 1, mu: 1 }"),
    })
}

#[test]
fn stated_ranges_are_the_validators() {
    let gmsh = GmshDir::new("ranges");
    let mut tried = 0;
    for key in INPUT_KEYS {
        if key.bounds == Bounds::NONE {
            continue;
        }
        let target = key.path.replace("[]", "[0]").replace(".*", ".top");
        if key.ty == Type::List {
            let text = format!(
                "mesh: {{ box: {{ cells: [1, 1, 1] }} }}\n{}: []\n",
                key.path
            );
            assert!(
                load_str(&text, Path::new("r.yaml"), &[]).is_err(),
                "{}: empty list accepted",
                key.path
            );
            continue;
        }
        let Some(base) = context_for(key.path, &gmsh) else {
            panic!("{}: no context to try its range in", key.path)
        };
        let integer = matches!(key.ty, Type::Int | Type::Array(Elem::Int, _));
        let value = |v: f64| {
            let v = if integer {
                format!("{v:.0}")
            } else {
                format!("{v:?}")
            };
            match key.ty {
                Type::Array(_, n) => format!("[{}]", vec![v; n].join(", ")),
                _ => v,
            }
        };
        let step = |v: f64| {
            if integer {
                1.0
            } else {
                (v.abs() * 1e-9).max(1e-12)
            }
        };
        let mut outside = Vec::new();
        let mut inside = Vec::new();
        match key.bounds.min {
            Bound::Inclusive(v) => {
                inside.push(v);
                if !(integer && v - 1.0 < 0.0) {
                    outside.push(v - step(v));
                }
            }
            Bound::Exclusive(v) => outside.push(v),
            Bound::None => {}
        }
        match key.bounds.max {
            Bound::Inclusive(v) => {
                inside.push(v);
                outside.push(v + step(v));
            }
            Bound::Exclusive(v) => outside.push(v),
            Bound::None => {}
        }
        for v in outside {
            let arg = format!("{target}={}", value(v));
            let err = load_str(&base, Path::new("r.yaml"), std::slice::from_ref(&arg))
                .expect_err(&format!("{arg} is outside the stated range but accepted"));
            assert_eq!(err.key_path(), Some(target.as_str()), "{arg}: {err}");
        }
        for v in inside {
            let arg = format!("{target}={}", value(v));
            if let Err(e) = load_str(&base, Path::new("r.yaml"), std::slice::from_ref(&arg)) {
                panic!("{arg} is inside the stated range but refused: {e}");
            }
        }
        tried += 1;
    }
    assert!(tried > 20, "{tried}");
}

// ---------------------------------------------------------------------------------------------
// Input files, the maximal inputs and the JSON Schema.

/// Every key of the table but `mesh.gmsh` and `mesh.box.corners`, each set to a valid value.
const MAXIMAL: &str = "\
mesh:
  box: { cells: [4, 2, 2], lower: [0, 0, 0], upper: [4, 1, 1], order: 2 }
materials:
  - { cells: all, model: linear, young_modulus: 1.0e3, poisson_ratio: 0.3 }
  - { model: neo_hookean, lambda: 500, mu: 300 }
  - { model: decoupled_neo_hookean, kappa: 800, mu: 300 }
  - { model: mooney_rivlin, lambda: 500, mu1: 200, mu2: 100 }
  - { model: mooney_rivlin, young_modulus: 1.0e3, poisson_ratio: 0.3, mu2_fraction: 0.25 }
  - { model: saint_venant_kirchhoff, young_modulus: 1.0e3, poisson_ratio: 0.3 }
body_force: [0, 0, \"-0.5 * x\"]
boundary:
  dirichlet:
    - { set: xmin, x: 0.0, y: \"0.01 * z\", z: 0.0, curve: [[0, 0], [1, 1]] }
  twist:
    - { set: xmax, axis: [1, 0, 0], center: [4, 0.5, 0.5], angle_deg: 10, axial: 0.01, curve: [[0, 0], [1, 1]] }
  traction:
    - { set: ymax, value: [0, 0, -1.0e-3], curve: [[0, 0], [1, 1]] }
  pressure:
    - { set: zmax, value: 1.0e-3, curve: [[0, 0], [1, 1]] }
  nodal_force:
    - { set: ymin, value: [0, 0, -1.0e-4], curve: [[0, 0], [1, 1]] }
  point_load:
    - { at: [4, 1, 1], value: [0, 0, -1.0e-3], curve: [[0, 0], [1, 1]] }
sets:
  top: { kind: faces, box: { lower: [0, 0, 0], upper: [4, 1, 1] }, plane: { point: [0, 0, 1], normal: [0, 0, 1] }, normal: [0, 0, 1], angle_deg: 5, expression: \"z - 1\", tolerance: 1.0e-6 }
loading: { steps: 2, min_increment: 1.0e-4, max_cutbacks: 6, growth: 2.0, curve: [[0, 0], [1, 1], [2, 0.5]] }
newton:
  rtol: 1.0e-9
  atol: 1.0e-12
  stol: 1.0e-13
  max_iterations: 30
  line_search: residual
  max_line_search: 4
  forcing: fixed
device: cpu
linear_solver:
  method: cg_amg
  rtol: 1.0e-9
  atol: 0.0
  max_iterations: 500
  amg:
    strength_threshold: 0.01
    mis2_levels: 0
    coarse_eq_limit: 100
    max_levels: 5
    process_eq_limit: 1000
    min_coarsening_ratio: 1.5
    smooth_prolongator: false
    prolongator_omega_scale: 1.4
    eig_steps: 12
    smoother: jacobi
    chebyshev_degree: 3
    chebyshev_lower: 0.05
    chebyshev_upper: 1.2
    jacobi_sweeps: 3
    jacobi_omega: 0.6
    reuse: full
    recompute_eigs: false
    renewal: keep_aggregates
    storage: scalar
    precision: mixed
quadrature: { points: 3 }
formulation: projected
output:
  directory: out
  name: maximal
  fields: [displacement, von_mises]
  vtu: true
  precision: single
  probes:
    points: [{ name: tip, at: [4, 0.5, 0.5], fields: [displacement, von_mises] }]
    sets: [{ set: xmin, name: clamp, about: [0, 0.5, 0.5], fields: [von_mises] }]
    globals: [strain_energy, max_displacement]
";

/// The box keys MAXIMAL cannot hold with `lower`/`upper`.
const CORNERS: &str = "\
mesh:
  box:
    cells: [2, 1, 1]
    order: 1
    corners: [[0, 0, 0], [2, 0, 0], [0, 1, 0], [2, 1, 0], [0, 0, 1], [2, 0, 1], [0, 1, 1], [2, 1, 1]]
materials: [{ model: linear, lambda: 1, mu: 1 }]
";

/// `gmsh`, with a mesh file path relative to the YAML file.
const GMSH: &str = "\
mesh: { gmsh: { file: part.msh, scale: 0.001 } }
materials: [{ model: linear, lambda: 1, mu: 1 }]
";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The YAML files directly in `dir`, sorted.
fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    files
}

/// The generic key paths written in `text` (list indices as `[]`, elements of value lists
/// dropped).
fn written_keys(text: &str) -> BTreeSet<String> {
    Node::parse(text)
        .unwrap()
        .origins()
        .into_keys()
        .map(|p| {
            let mut p = generic_path(&p);
            while INPUT_KEYS.iter().all(|k| k.path != p) && p.ends_with("[]") {
                p.truncate(p.len() - 2);
            }
            p
        })
        .filter(|p| !p.is_empty())
        .collect()
}

/// A directory with GMSH's input and a stand-in mesh file (validation only checks it is a file).
struct GmshDir(PathBuf);

impl GmshDir {
    /// `tag` keeps the directories of tests running at once apart.
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("hexfem-schema-{}-{tag}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join("part.msh"),
            "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n",
        )
        .unwrap();
        fs::write(dir.join("part.yaml"), GMSH).unwrap();
        GmshDir(dir)
    }
}

impl Drop for GmshDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn maximal_inputs_write_every_described_key_and_load() {
    let gmsh = GmshDir::new("maximal");
    let mut written = BTreeSet::new();
    for text in [MAXIMAL, CORNERS, GMSH] {
        written.extend(written_keys(text));
    }
    load_str(MAXIMAL, Path::new("maximal.yaml"), &[]).unwrap_or_else(|e| panic!("{e}"));
    load_str(CORNERS, Path::new("corners.yaml"), &[]).unwrap_or_else(|e| panic!("{e}"));
    load(&gmsh.0.join("part.yaml")).unwrap_or_else(|e| panic!("{e}"));
    let described: BTreeSet<String> = INPUT_KEYS.iter().map(|k| k.path.to_owned()).collect();
    let missing: Vec<_> = described.difference(&written).collect();
    let unknown: Vec<_> = written.difference(&described).collect();
    assert!(missing.is_empty(), "the maximal inputs lack {missing:?}");
    assert!(
        unknown.is_empty(),
        "the maximal inputs write undescribed {unknown:?}"
    );
}

#[test]
fn keys_of_every_input_file_are_described() {
    for file in yaml_files(&repo().join("inputs")) {
        let text = fs::read_to_string(&file).unwrap();
        for key in written_keys(&text) {
            assert!(
                lookup(INPUT_KEYS, &key).is_some(),
                "{}: {key} is not described",
                file.display()
            );
        }
    }
    for file in yaml_files(&repo().join("inputs/campaigns")) {
        let text = fs::read_to_string(&file).unwrap();
        let tree = Node::parse(&text).unwrap();
        let crate::tree::Value::Map(entries) = &tree.value else {
            panic!("not a mapping")
        };
        for e in entries {
            assert!(
                CAMPAIGN_KEYS.iter().any(|k| k.path == e.key),
                "{}: {}",
                file.display(),
                e.key
            );
            // parameters and `set` keys are key paths of the input
            if let crate::tree::Value::Map(parameters) = &e.value.value {
                for p in parameters.iter().filter(|_| e.key != "latin_hypercube") {
                    let generic: Vec<&str> = p
                        .key
                        .split('.')
                        .map(|s| if s.parse::<usize>().is_ok() { "[]" } else { s })
                        .collect();
                    let generic = generic.join(".").replace(".[]", "[]");
                    assert!(
                        lookup(INPUT_KEYS, &generic).is_some(),
                        "{}: parameter {}",
                        file.display(),
                        p.key
                    );
                }
            }
        }
    }
}

// A validator of the JSON Schema subset the generator emits (it refuses any other keyword, so
// nothing the schema says goes unchecked).

const KEYWORDS: &[&str] = &[
    "$schema",
    "title",
    "description",
    "default",
    "type",
    "enum",
    "const",
    "properties",
    "additionalProperties",
    "required",
    "items",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minProperties",
    "maxProperties",
    "oneOf",
    "anyOf",
    "allOf",
    "if",
    "then",
    "not",
];

fn valid(schema: &Json, value: &Json) -> bool {
    errors(schema, value, "").is_empty()
}

fn errors(schema: &Json, value: &Json, at: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Json::Object(s) = schema else {
        if schema == &Json::Bool(false) {
            out.push(format!("{at}: not allowed"));
        }
        return out;
    };
    for k in s.keys() {
        assert!(
            KEYWORDS.contains(&k.as_str()),
            "keyword {k} is outside the validated subset"
        );
    }
    let mut fail = |msg: String| out.push(format!("{at}: {msg}"));
    if let Some(t) = s.get("type") {
        let types: Vec<&str> = match t {
            Json::String(t) => vec![t.as_str()],
            Json::Array(ts) => ts.iter().filter_map(Json::as_str).collect(),
            _ => panic!("bad type {t}"),
        };
        let fits = types.iter().any(|t| match *t {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "null" => value.is_null(),
            "number" => value.is_number(),
            "integer" => value.is_u64() || value.is_i64(),
            other => panic!("type {other}"),
        });
        if !fits {
            fail(format!("{value} is not {types:?}"));
        }
    }
    if let Some(Json::Array(choices)) = s.get("enum") {
        if !choices.contains(value) {
            fail(format!("{value} is not one of {choices:?}"));
        }
    }
    if let Some(c) = s.get("const") {
        if c != value {
            fail(format!("{value} is not {c}"));
        }
    }
    if let Some(x) = value.as_f64() {
        let bound = |k: &str| s.get(k).and_then(Json::as_f64);
        if bound("minimum").is_some_and(|m| x < m)
            || bound("maximum").is_some_and(|m| x > m)
            || bound("exclusiveMinimum").is_some_and(|m| x <= m)
            || bound("exclusiveMaximum").is_some_and(|m| x >= m)
        {
            fail(format!("{x} is out of range"));
        }
    }
    if let Json::Object(map) = value {
        let properties = s.get("properties").and_then(Json::as_object);
        for (k, v) in map {
            let path = key_path(at, k);
            match properties.and_then(|p| p.get(k)) {
                Some(sub) => out.extend(errors(sub, v, &path)),
                None => {
                    if let Some(extra) = s.get("additionalProperties") {
                        out.extend(errors(extra, v, &path));
                    }
                }
            }
        }
        for r in s
            .get("required")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
        {
            if !map.contains_key(r.as_str().unwrap()) {
                out.push(format!("{at}: missing {r}"));
            }
        }
        let n = map.len() as u64;
        if s.get("minProperties")
            .and_then(Json::as_u64)
            .is_some_and(|m| n < m)
            || s.get("maxProperties")
                .and_then(Json::as_u64)
                .is_some_and(|m| n > m)
        {
            out.push(format!("{at}: {n} keys"));
        }
    }
    if let Json::Array(items) = value {
        if let Some(item) = s.get("items") {
            for (i, v) in items.iter().enumerate() {
                out.extend(errors(item, v, &format!("{at}[{i}]")));
            }
        }
        let n = items.len() as u64;
        if s.get("minItems")
            .and_then(Json::as_u64)
            .is_some_and(|m| n < m)
            || s.get("maxItems")
                .and_then(Json::as_u64)
                .is_some_and(|m| n > m)
        {
            out.push(format!("{at}: {n} items"));
        }
        if s.get("uniqueItems") == Some(&Json::Bool(true))
            && items
                .iter()
                .enumerate()
                .any(|(i, a)| items[..i].contains(a))
        {
            out.push(format!("{at}: repeated items"));
        }
    }
    let count = |k: &str| -> Option<usize> {
        s.get(k)
            .and_then(Json::as_array)
            .map(|subs| subs.iter().filter(|sub| valid(sub, value)).count())
    };
    if count("oneOf").is_some_and(|n| n != 1) {
        out.push(format!("{at}: not exactly one of oneOf"));
    }
    if count("anyOf") == Some(0) {
        out.push(format!("{at}: none of anyOf"));
    }
    for sub in s
        .get("allOf")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
    {
        out.extend(errors(sub, value, at));
    }
    if let (Some(cond), Some(then)) = (s.get("if"), s.get("then")) {
        if valid(cond, value) {
            out.extend(errors(then, value, at));
        }
    }
    if s.get("not").is_some_and(|n| valid(n, value)) {
        out.push(format!("{at}: matches `not`"));
    }
    out
}

fn yaml_json(text: &str) -> Json {
    Node::parse(text).unwrap().to_json()
}

#[test]
fn every_input_file_and_the_maximal_inputs_fit_the_schema() {
    let schema = json_schema();
    let mut count = 0;
    for file in yaml_files(&repo().join("inputs")) {
        let errs = errors(&schema, &yaml_json(&fs::read_to_string(&file).unwrap()), "");
        assert!(errs.is_empty(), "{}: {errs:?}", file.display());
        count += 1;
    }
    for text in [
        MAXIMAL,
        CORNERS,
        GMSH,
        REQUIRED_ONLY
            .replace("{ model: linear }", "{ model: linear, lambda: 1, mu: 1 }")
            .replace("dirichlet: [{ set: a }]", "dirichlet: [{ set: a, x: 0 }]")
            .as_str(),
    ] {
        let errs = errors(&schema, &yaml_json(text), "");
        assert!(errs.is_empty(), "{errs:?}\n{text}");
    }
    let campaign = campaign_json_schema();
    for file in yaml_files(&repo().join("inputs/campaigns")) {
        let errs = errors(
            &campaign,
            &yaml_json(&fs::read_to_string(&file).unwrap()),
            "",
        );
        assert!(errs.is_empty(), "{}: {errs:?}", file.display());
        count += 1;
    }
    assert!(count >= 10, "{count}");
}

#[test]
fn the_schema_rejects_what_the_parser_rejects() {
    let schema = json_schema();
    let minimal =
        "mesh: { box: { cells: [2, 1, 1] } }\nmaterials: [{ model: linear, lambda: 1, mu: 1 }]\n";
    assert!(valid(&schema, &yaml_json(minimal)));
    for (change, why) in [
        ("newton: { rtoll: 1.0e-6 }", "misspelled key"),
        ("meshh: 1", "misspelled top-level key"),
        (
            "linear_solver: { amg: { storag: scalar } }",
            "misspelled amg key",
        ),
        (
            "linear_solver: { amg: { storage: blocky } }",
            "unknown choice",
        ),
        (
            "output: { fields: [displacement, displacement] }",
            "repeated field",
        ),
        ("loading: { steps: 0 }", "out of range"),
        ("loading: { steps: 1.5 }", "not an integer"),
        ("newton: { rtol: 1 }", "exclusive bound"),
        ("quadrature: { points: 7 }", "above the maximum"),
        ("formulation: mixed", "unknown formulation"),
        ("boundary: { dirichlet: [{ x: 0 }] }", "missing set"),
        ("body_force: [0, 0]", "two components"),
        ("boundary: { dirichlet: [{ set: xmin }] }", "no component"),
        (
            "mesh: { box: { cells: [1, 1, 1], lower: [0, 0, 0], corners: [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 1], [1, 1, 1]] } }",
            "corners with lower",
        ),
    ] {
        let text = match change.strip_prefix("mesh: ") {
            // in place of the minimal input's mesh
            Some(mesh) => minimal.replace("{ box: { cells: [2, 1, 1] } }", mesh),
            None => format!("{minimal}{change}\n"),
        };
        assert!(
            !valid(&schema, &yaml_json(&text)),
            "{why} accepted: {change}"
        );
        assert!(
            load_str(&text, Path::new("s.yaml"), &[]).is_err(),
            "{why}: the parser accepts {change}"
        );
    }
    for (entry, ok) in [
        (
            "{ model: linear, young_modulus: 1, poisson_ratio: 0.3 }",
            true,
        ),
        ("{ model: linear, young_modulus: 1, mu: 1 }", false),
        ("{ model: linear, kappa: 1, mu: 1 }", false),
        ("{ model: decoupled_neo_hookean, kappa: 1, mu: 1 }", true),
        (
            "{ model: mooney_rivlin, young_modulus: 1, poisson_ratio: 0.3, mu2_fraction: 0.5 }",
            true,
        ),
        (
            "{ model: mooney_rivlin, young_modulus: 1, poisson_ratio: 0.3 }",
            false,
        ),
        (
            "{ model: mooney_rivlin, young_modulus: 1, poisson_ratio: 0.3, mu2_fraction: 1.5 }",
            false,
        ),
        (
            "{ model: neo_hookean, young_modulos: 1, poisson_ratio: 0.3 }",
            false,
        ),
    ] {
        let text = format!("mesh: {{ box: {{ cells: [2, 1, 1] }} }}\nmaterials: [{entry}]\n");
        assert_eq!(valid(&schema, &yaml_json(&text)), ok, "{entry}");
        assert_eq!(
            load_str(&text, Path::new("s.yaml"), &[]).is_ok(),
            ok,
            "the parser on {entry}"
        );
    }
    // null where the parser takes it
    let text = format!("{minimal}quadrature: {{ points: null }}\noutput: {{ name: ~ }}\n");
    assert!(valid(&schema, &yaml_json(&text)));
    let campaign = campaign_json_schema();
    for (text, ok) in [
        ("base: a.yaml\ngrid: { loading.steps: [1, 2] }\n", true),
        ("base: a.yaml\ngrid: { loading.steps: [1, 2] }\ncases: [{ loading.steps: 1 }]\n", false),
        ("base: a.yaml\nbse: 1\ngrid: { loading.steps: [1, 2] }\n", false),
        ("base: a.yaml\nlatin_hypercube: { samples: 4, seed: 1, ranges: { newton.rtol: [1.0e-9, 1.0e-6] } }\n", true),
        ("base: a.yaml\nlatin_hypercube: { samples: 4, seed: 1, rangs: {} }\n", false),
    ] {
        assert_eq!(valid(&campaign, &yaml_json(text)), ok, "{text}");
    }
}

// ---------------------------------------------------------------------------------------------
// The committed files.

#[test]
fn reference_files_are_current() {
    let docs = repo().join("docs");
    let files = [
        ("input-reference.md", reference_page()),
        ("hexfem.schema.json", json_schema_text()),
        ("hexfem-campaign.schema.json", campaign_json_schema_text()),
    ];
    let bless = std::env::var_os("HEXFEM_BLESS").is_some();
    let mut stale = Vec::new();
    for (name, generated) in &files {
        let path = docs.join(name);
        if bless {
            fs::write(&path, generated).unwrap();
        } else if fs::read_to_string(&path).ok().as_deref() != Some(generated.as_str()) {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "{} differ from the key tables; regenerate them with\n    {REGENERATE}",
        stale.join(", ")
    );
}

#[test]
fn the_page_lists_every_key_with_type_default_and_meaning() {
    let page = reference_page();
    for key in INPUT_KEYS
        .iter()
        .chain(CAMPAIGN_KEYS)
        .filter(|k| !k.path.ends_with("[]"))
    {
        let name = super::page::shown_name(key.path);
        assert!(
            page.contains(&format!("| `{name}` | {}", key.ty.text())),
            "{}",
            key.path
        );
    }
    for needle in [
        "`mu2_fraction`",
        "`storage`",
        "`formulation`",
        "`scale`",
        "`latin_hypercube`",
        "### `linear_solver.amg`",
    ] {
        assert!(page.contains(needle), "{needle}");
    }
    assert_eq!(
        Bounds {
            min: Bound::Exclusive(0.0),
            max: Bound::Exclusive(1.0)
        }
        .text(false),
        "0 < value < 1"
    );
    assert_eq!(
        Bounds {
            min: Bound::Inclusive(1.0),
            max: Bound::Inclusive(6.0)
        }
        .text(true),
        "1..=6"
    );
}

// ---------------------------------------------------------------------------------------------
// The resolved input.

fn resolved_round_trip(config: &Config) -> String {
    let text = config.to_resolved_yaml().unwrap();
    let again = load_str(&text, &config.source.file, &[]).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut expected = config.clone();
    if let crate::MeshSource::Gmsh(g) = &mut expected.mesh {
        g.file = std::path::absolute(&g.file).unwrap();
    }
    assert_eq!(
        serde_json::to_value(&again).unwrap(),
        serde_json::to_value(&expected).unwrap(),
        "{text}"
    );
    // read from elsewhere, it means the same
    let elsewhere = load_str(&text, Path::new("/elsewhere/resolved.yaml"), &[]).unwrap();
    assert_eq!(elsewhere.mesh, again.mesh);
    text
}

#[test]
fn resolved_input_reads_back_the_same_configuration() {
    let mut count = 0;
    for file in yaml_files(&repo().join("inputs")) {
        let config = load(&file).unwrap_or_else(|e| panic!("{e}"));
        let text = resolved_round_trip(&config);
        let errs = errors(&json_schema(), &yaml_json(&text), "");
        assert!(errs.is_empty(), "{}: {errs:?}", file.display());
        count += 1;
    }
    assert!(count >= 9);
    let maximal = load_str(MAXIMAL, Path::new("maximal.yaml"), &[]).unwrap();
    let text = resolved_round_trip(&maximal);
    // MAXIMAL sets every key but the `cells` of four material entries
    let defaulted: Vec<&str> = text.lines().filter(|l| l.contains("# default")).collect();
    assert_eq!(defaulted, ["  - cells: all  # default"; 5], "{text}");
    let gmsh = GmshDir::new("resolved");
    resolved_round_trip(&load(&gmsh.0.join("part.yaml")).unwrap());
}

#[test]
fn resolved_input_fills_in_and_marks_the_defaults() {
    let minimal =
        "mesh: { box: { cells: [2, 1, 1] } }\nmaterials: [{ model: linear, lambda: 1, mu: 1 }]\n";
    let overrides = [
        "newton.rtol=1e-6".to_owned(),
        "boundary.dirichlet=[{ set: xmin, y: 0 }]".to_owned(),
    ];
    let config = load_str(minimal, Path::new("dir/beam.yaml"), &overrides).unwrap();
    let text = resolved_round_trip(&config);
    for line in [
        "  rtol: 1e-6\n",
        "  max_iterations: 25  # default\n",
        "  points: null  # default: element order + 1\n",
        "    storage: blocked  # default\n",
        "  name: beam  # default\n",
        "  - cells: all  # default\n    model: linear\n",
        "    - set: xmin\n      y: 0.0\n",
        "device: auto  # default\n",
    ] {
        assert!(text.contains(line), "{line:?} missing in\n{text}");
    }
    // keys in the reference's order
    let position = |k: &str| text.find(k).unwrap();
    assert!(position("mesh:") < position("materials:"));
    assert!(position("loading:") < position("newton:"));
    assert!(position("newton:") < position("linear_solver:"));
    // a string that YAML would read as something else is quoted
    let tricky = load_str(
        minimal,
        Path::new("t.yaml"),
        &["output.name=\"true\"".into()],
    )
    .unwrap();
    assert!(resolved_round_trip(&tricky).contains("name: \"true\""));
}
