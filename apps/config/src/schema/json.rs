//! The JSON Schema (draft-07, what yaml-language-server reads) of run inputs and campaign files,
//! generated from the key tables.
//!
//! Every mapping of fixed keys has `additionalProperties: false`, so a misspelled key is flagged
//! in an editor as the parser would reject it. Material entries carry the parameter sets of
//! their model ([`MaterialModel::accepted_parameters`]). What the schema cannot say (a set
//! that exists in the mesh, `lower` below `upper`, ...) stays with `hexfem check`.

use serde_json::{json, Map, Value};

use super::table::{CAMPAIGN_KEYS, INPUT_KEYS};
use super::{children, Bound, Default, Elem, KeyDoc, Type};
use crate::material::MaterialModel;

/// The JSON Schema of a run input (`docs/hexfem.schema.json`).
pub fn json_schema() -> Value {
    let mut root = section(INPUT_KEYS, "", false);
    add_material_parameter_sets(&mut root);
    add_cross_key_rules(&mut root);
    document(
        root,
        "hexfem input",
        "A hexfem run input (docs/input-reference.md).",
    )
}

/// [`json_schema`] as the text of `docs/hexfem.schema.json` (`hexfem schema` prints it):
/// pretty-printed, ending in a newline.
pub fn json_schema_text() -> String {
    text(&json_schema())
}

/// [`campaign_json_schema`] as the text of `docs/hexfem-campaign.schema.json`.
pub fn campaign_json_schema_text() -> String {
    text(&campaign_json_schema())
}

fn text(schema: &Value) -> String {
    let mut out = serde_json::to_string_pretty(schema).unwrap_or_default();
    out.push('\n');
    out
}

/// The JSON Schema of a campaign file (`docs/hexfem-campaign.schema.json`).
pub fn campaign_json_schema() -> Value {
    let mut root = section(CAMPAIGN_KEYS, "", false);
    if let Some(object) = root.as_object_mut() {
        // exactly one design
        object.insert(
            "oneOf".into(),
            json!([
                { "required": ["grid"] },
                { "required": ["cases"] },
                { "required": ["latin_hypercube"] }
            ]),
        );
    }
    document(
        root,
        "hexfem campaign",
        "A hexfem campaign file (docs/input-reference.md#campaign-files).",
    )
}

fn document(root: Value, title: &str, description: &str) -> Value {
    let mut out = Map::new();
    out.insert(
        "$schema".into(),
        "http://json-schema.org/draft-07/schema#".into(),
    );
    out.insert("title".into(), title.into());
    out.insert("description".into(), description.into());
    if let Value::Object(fields) = root {
        out.extend(fields);
    }
    Value::Object(out)
}

/// The schema of the mapping at `parent` (`one_key`: exactly one of its keys).
fn section(keys: &[KeyDoc], parent: &str, one_key: bool) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for key in children(keys, parent) {
        let name = super::name_of(key.path);
        if key.default == Default::Required && !one_key {
            required.push(Value::from(name));
        }
        properties.insert(name.to_owned(), schema_of(keys, key));
    }
    let mut out = Map::new();
    out.insert("type".into(), "object".into());
    out.insert("properties".into(), Value::Object(properties));
    out.insert("additionalProperties".into(), false.into());
    if !required.is_empty() {
        out.insert("required".into(), Value::Array(required));
    }
    if one_key {
        out.insert("minProperties".into(), 1.into());
        out.insert("maxProperties".into(), 1.into());
    }
    Value::Object(out)
}

/// The schema of one key's value, with its description and default.
fn schema_of(keys: &[KeyDoc], key: &KeyDoc) -> Value {
    let mut schema = match key.ty {
        Type::Section => section(keys, key.path, false),
        Type::OneKey => section(keys, key.path, true),
        Type::List => {
            let item_path = format!("{}[]", key.path);
            let items = match keys.iter().find(|k| k.path == item_path) {
                Some(item) => schema_of(keys, item),
                None => section(keys, &item_path, false),
            };
            let mut list = json!({ "type": "array", "items": items });
            if let Bound::Inclusive(n) = key.bounds.min {
                list["minItems"] = json!(n as u64);
            }
            list
        }
        Type::Map => {
            let value_path = format!("{}.*", key.path);
            let values = keys
                .iter()
                .find(|k| k.path == value_path)
                .map_or(json!({}), |v| schema_of(keys, v));
            json!({ "type": "object", "additionalProperties": values })
        }
        Type::Bool => json!({ "type": "boolean" }),
        Type::Int => number("integer", key),
        Type::Float => number("number", key),
        Type::Str | Type::Path => json!({ "type": "string" }),
        Type::SetName => json!({ "type": ["string", "integer"] }),
        Type::Scalar => scalar(),
        Type::Any => json!({}),
        Type::Values => json!({ "type": "array", "minItems": 1 }),
        Type::Choice(choices) => {
            json!({ "enum": choices.iter().map(|c| c.name).collect::<Vec<_>>() })
        }
        Type::ChoiceList(choices) => json!({
            "type": "array",
            "items": { "enum": choices.iter().map(|c| c.name).collect::<Vec<_>>() },
            "uniqueItems": true
        }),
        Type::Array(elem, len) => {
            let items = match elem {
                Elem::Int => number("integer", key),
                Elem::Float => number("number", key),
                Elem::Scalar => scalar(),
                Elem::Point => fixed(json!({ "type": "number" }), 3),
            };
            fixed(items, len)
        }
        Type::Curve => json!({
            "type": "array",
            "items": fixed(json!({ "type": "number" }), 2)
        }),
    };
    if key.nullable {
        allow_null(&mut schema);
    }
    if let Value::Object(object) = &mut schema {
        object.insert("description".into(), describe(key).into());
        if let Default::Value(text) = key.default {
            if let Some(value) = yaml_value(text) {
                object.insert("default".into(), value);
            }
        }
    }
    schema
}

/// `{ type, minimum/maximum/exclusive* }` of a number key.
fn number(kind: &str, key: &KeyDoc) -> Value {
    let mut out = json!({ "type": kind });
    match key.bounds.min {
        Bound::Inclusive(v) => out["minimum"] = json!(v),
        Bound::Exclusive(v) => out["exclusiveMinimum"] = json!(v),
        Bound::None => {}
    }
    match key.bounds.max {
        Bound::Inclusive(v) => out["maximum"] = json!(v),
        Bound::Exclusive(v) => out["exclusiveMaximum"] = json!(v),
        Bound::None => {}
    }
    out
}

fn scalar() -> Value {
    json!({ "type": ["number", "string"] })
}

/// A list of exactly `len` items.
fn fixed(items: Value, len: usize) -> Value {
    json!({ "type": "array", "items": items, "minItems": len, "maxItems": len })
}

/// Adds `null` to the accepted types.
fn allow_null(schema: &mut Value) {
    if let Some(t) = schema.get_mut("type") {
        *t = match t.take() {
            Value::String(one) => json!([one, "null"]),
            Value::Array(mut types) => {
                types.push("null".into());
                Value::Array(types)
            }
            other => other,
        };
    }
}

/// The description an editor shows: the meaning, the allowed values, the unit, the default.
fn describe(key: &KeyDoc) -> String {
    let mut text = capitalised(key.doc);
    let integer = matches!(key.ty, Type::Int | Type::Array(Elem::Int, _));
    let bounds = key.bounds.text(integer);
    let mut allowed: Vec<String> = Vec::new();
    if !bounds.is_empty() && !matches!(key.ty, Type::List) {
        allowed.push(bounds);
    }
    if !key.rule.is_empty() {
        allowed.push(key.rule.to_owned());
    }
    if !allowed.is_empty() {
        text.push_str(&format!(" Allowed: {}.", allowed.join("; ")));
    }
    if let Type::Choice(choices) | Type::ChoiceList(choices) = key.ty {
        let list: Vec<String> = choices
            .iter()
            .map(|c| format!("`{}`: {}", c.name, c.doc))
            .collect();
        text.push_str(&format!(" Choices: {}.", list.join("; ")));
    }
    if !key.unit.text().is_empty() {
        text.push_str(&format!(" Unit: {}.", key.unit.text()));
    }
    match key.default {
        Default::Required => text.push_str(" Required."),
        Default::Value(v) => text.push_str(&format!(" Default: `{v}`.")),
        Default::Unset(meaning) if meaning != "-" => {
            text.push_str(&format!(" Default: {meaning}."))
        }
        Default::Unset(_) => {}
    }
    text
}

fn capitalised(doc: &str) -> String {
    let mut chars = doc.chars();
    let mut out: String = chars
        .next()
        .map(|c| c.to_uppercase().collect())
        .unwrap_or_default();
    out.push_str(chars.as_str());
    if !out.ends_with('.') {
        out.push('.');
    }
    out
}

/// A default's YAML text as a JSON value (`None` if it does not parse).
fn yaml_value(text: &str) -> Option<Value> {
    crate::tree::Node::parse(text)
        .ok()
        .map(|node| node.to_json())
}

/// `allOf: [{ if model == m, then oneOf: its parameter sets }]` on the material entries: each
/// set required and every other parameter absent.
fn add_material_parameter_sets(root: &mut Value) {
    const MODELS: [MaterialModel; 5] = [
        MaterialModel::Linear,
        MaterialModel::SaintVenantKirchhoff,
        MaterialModel::NeoHookean,
        MaterialModel::DecoupledNeoHookean,
        MaterialModel::MooneyRivlin,
    ];
    let parameters = crate::material::PARAMETER_KEYS;
    let rules: Vec<Value> = MODELS
        .iter()
        .map(|model| {
            let sets: Vec<Value> = model
                .accepted_parameters()
                .iter()
                .map(|set| {
                    let absent: Map<String, Value> = parameters
                        .iter()
                        .filter(|p| !set.contains(p))
                        .map(|p| ((*p).to_owned(), Value::Bool(false)))
                        .collect();
                    json!({ "required": set, "properties": absent })
                })
                .collect();
            json!({
                "if": { "properties": { "model": { "const": model.name() } }, "required": ["model"] },
                "then": { "oneOf": sets }
            })
        })
        .collect();
    if let Some(items) = root.pointer_mut("/properties/materials/items") {
        items["allOf"] = Value::Array(rules);
    }
}

/// Rules between keys that `validate` checks and a schema can say: a Dirichlet entry gives at
/// least one component; a box gives `corners` or `lower`/`upper`, not both.
fn add_cross_key_rules(root: &mut Value) {
    if let Some(entry) = root.pointer_mut("/properties/boundary/properties/dirichlet/items") {
        entry["anyOf"] = json!([
            { "required": ["x"] },
            { "required": ["y"] },
            { "required": ["z"] }
        ]);
    }
    if let Some(mesh) = root.pointer_mut("/properties/mesh/properties/box") {
        mesh["not"] = json!({
            "anyOf": [
                { "required": ["corners", "lower"] },
                { "required": ["corners", "upper"] }
            ]
        });
    }
}
