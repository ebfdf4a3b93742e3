//! The reference page, `docs/input-reference.md`, generated from the key tables.

use std::fmt::Write;

use super::table::{CAMPAIGN_KEYS, INPUT_KEYS};
use super::{children, Default, Elem, KeyDoc, Type};

/// The command that regenerates the committed page and schemas.
pub const REGENERATE: &str =
    "HEXFEM_BLESS=1 cargo test --release -p hexfem-config reference_files_are_current";

/// The reference page: every key of a run input and of a campaign file with its type, default,
/// allowed values, unit and meaning, one table per mapping.
pub fn reference_page() -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "# Input reference\n\n\
         <!-- Generated from apps/config/src/schema/table.rs; do not edit. Regenerate with\n     \
         {REGENERATE} -->\n\n\
         Every key of a run input and of a campaign file, generated from the description the \
         parser is tested against. How to write an input (units, paths, overrides, expressions, \
         examples) is in the [input guide](input.md). Editors: the JSON Schemas \
         [`hexfem.schema.json`](hexfem.schema.json) and \
         [`hexfem-campaign.schema.json`](hexfem-campaign.schema.json) (see the guide).\n\n\
         Types: `scalar` is a number or an expression of `x, y, z, t` in quotes; `[float; 3]` a \
         list of exactly three numbers; `[[float; 2]]` a list of `[time, factor]` pairs; `path` \
         a file or directory name. A key marked `null ok` also takes `null`, which means the \
         same as leaving it out. Units are those of the input's one consistent system (hexfem \
         converts nothing): `length`, `force`, `force/length^2` (stress) and so on.\n\n\
         ## Run input\n\n"
    );
    sections(&mut out, INPUT_KEYS, "###");
    out.push_str("## Campaign files\n\n");
    out.push_str(
        "A campaign file names a base input and the parameters that vary, as key paths of the \
         input (the `--set` syntax); `<key.path>` below stands for such a path. See \
         [campaigns](campaigns.md).\n\n",
    );
    sections(&mut out, CAMPAIGN_KEYS, "###");
    out
}

/// One table per mapping: the top level first, then every mapping in table order.
fn sections(out: &mut String, keys: &[KeyDoc], heading: &str) {
    table(out, keys, "");
    for key in keys.iter().filter(|k| k.ty.has_children()) {
        let parent = match key.ty {
            Type::List if !keys.iter().any(|k| k.path == format!("{}[]", key.path)) => {
                format!("{}[]", key.path)
            }
            Type::List => continue,
            _ => key.path.to_owned(),
        };
        let _ = writeln!(out, "{heading} `{}`\n", shown(&parent));
        let _ = writeln!(out, "{}\n", sentence(key.doc));
        table(out, keys, &parent);
    }
}

/// The table of the keys directly under `parent`, then the meaning of each choice.
fn table(out: &mut String, keys: &[KeyDoc], parent: &str) {
    let rows = children(keys, parent);
    if rows.is_empty() {
        return;
    }
    out.push_str("| key | type | default | allowed | unit | meaning |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    for key in &rows {
        let name = shown_name(key.path);
        let mut ty = key.ty.text();
        if key.nullable {
            ty.push_str(", null ok");
        }
        let default = match key.default {
            Default::Required => "required".to_owned(),
            Default::Value(v) => format!("`{v}`"),
            Default::Unset(meaning) => meaning.to_owned(),
        };
        let _ = writeln!(
            out,
            "| `{name}` | {ty} | {} | {} | {} | {} |",
            cell(&default),
            cell(&allowed(key)),
            key.unit.text(),
            cell(key.doc)
        );
    }
    out.push('\n');
    for key in &rows {
        if let Type::Choice(choices) | Type::ChoiceList(choices) = key.ty {
            let _ = writeln!(out, "`{}`:", shown_name(key.path));
            for c in choices {
                let _ = writeln!(out, "- `{}`: {}", c.name, c.doc);
            }
            out.push('\n');
        }
    }
}

/// The allowed values in words: bounds, rule, choices.
fn allowed(key: &KeyDoc) -> String {
    let integer = matches!(key.ty, Type::Int | Type::Array(Elem::Int, _));
    let mut parts = Vec::new();
    let bounds = key.bounds.text(integer);
    if !bounds.is_empty() {
        parts.push(match key.ty {
            Type::List => format!("at least {} entry", &bounds[3..]),
            Type::Array(..) => format!("each {bounds}"),
            _ => bounds,
        });
    }
    if let Type::Choice(choices) | Type::ChoiceList(choices) = key.ty {
        let names: Vec<String> = choices.iter().map(|c| format!("`{}`", c.name)).collect();
        parts.push(names.join(", "));
    }
    if matches!(key.ty, Type::ChoiceList(_)) {
        parts.push("no repeats".into());
    }
    if !key.rule.is_empty() {
        parts.push(key.rule.to_owned());
    }
    parts.join("; ")
}

/// The last name of `path` as shown (see [`shown`]).
pub(crate) fn shown_name(path: &str) -> String {
    match super::name_of(path) {
        "*" => placeholder(path).to_owned(),
        name => name.to_owned(),
    }
}

/// What a `*` of `path` stands for.
fn placeholder(path: &str) -> &'static str {
    if path.starts_with("sets.") {
        "<name>"
    } else {
        "<key.path>"
    }
}

/// A key or path as shown: `*` becomes `<name>` under a run input's named sets, `<key.path>`
/// in a campaign file.
pub(crate) fn shown(path: &str) -> String {
    path.replace('*', placeholder(path))
}

/// A table cell: `|` escaped.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

fn sentence(doc: &str) -> String {
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
