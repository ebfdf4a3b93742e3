//! Math expressions of the reference position `x, y, z` and the pseudo-time `t` in inputs (body
//! force, traction and Dirichlet components), parsed once and evaluated on the host at each
//! quadrature point or node. Operators and functions are exmex's (`+ - * / ^`, `sin cos tan exp ln
//! log10 sqrt abs ...`, constants `PI`, `E`); any variable other than `x`, `y`, `z`, `t` is an
//! error naming the valid ones.
//!
//! Time semantics: a load or Dirichlet value whose expression does not contain `t` is its value
//! at load factor one and is scaled by the load factor (or its own curve). One with `t` in any
//! component is the value itself at pseudo-time `t`: it is re-evaluated at each load step's time
//! and ignores the load factor.

use exmex::prelude::*;

/// The variables an expression may use.
pub const VARIABLES: [&str; 4] = ["x", "y", "z", "t"];

/// The longest expression text, in characters. exmex parses in time quadratic in the length
/// (32,000 terms: 24 s); 10,000 characters parse in well under a second, and a longer formula
/// is better written as a shorter one.
pub const MAX_EXPRESSION_CHARS: usize = 10_000;

/// How much of a too-long expression an error quotes, in characters.
const QUOTED_CHARS: usize = 40;

/// A parsed expression of `x, y, z` and `t`.
#[derive(Clone, Debug)]
pub struct Expression {
    text: String,
    /// Boxed: exmex's expression keeps its small vectors inline (about 20 kB).
    flat: Box<FlatEx<f64>>,
    /// For each of the expression's variables (exmex's alphabetical order), its index in
    /// `x, y, z, t`.
    slots: Vec<usize>,
}

impl PartialEq for Expression {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Expression {
    /// Parses `text`; the error says what is wrong for people (unknown variables are named with
    /// the valid ones).
    pub fn parse(text: &str) -> Result<Self, String> {
        check_length(text)?;
        let flat = exmex::parse::<f64>(text).map_err(|_| {
            let exponent = text
                .as_bytes()
                .windows(2)
                .any(|w| w[0].is_ascii_digit() && (w[1] == b'e' || w[1] == b'E'));
            let hint = if exponent {
                " (write numbers without an exponent, `0.0015` or `1.5 * 10^-3`, not `1.5e-3`)"
            } else {
                " (operators + - * / ^, functions such as sin, cos, exp, ln, sqrt, abs, constants PI and E, variables x, y, z, t)"
            };
            format!("`{text}` is not a valid expression{hint}")
        })?;
        let slots = flat
            .var_names()
            .iter()
            .map(|name| {
                VARIABLES.iter().position(|v| v == name).ok_or_else(|| {
                    format!(
                        "`{text}` uses the unknown variable `{name}` (valid: {})",
                        VARIABLES.join(", ")
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let expression = Self {
            text: text.to_owned(),
            flat: Box::new(flat),
            slots,
        };
        let probe = expression.eval_at([0.5, 0.25, 0.125], 0.5);
        if probe.is_err() {
            return Err(format!("`{text}` cannot be evaluated"));
        }
        Ok(expression)
    }

    /// The text it was parsed from.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the expression uses the pseudo-time `t`.
    pub fn uses_time(&self) -> bool {
        self.slots.contains(&3)
    }

    /// The value at the reference position `x` (and `t = 0`).
    pub fn eval(&self, x: [f64; 3]) -> Result<f64, String> {
        self.eval_at(x, 0.0)
    }

    /// The value at the reference position `x` and pseudo-time `t`.
    pub fn eval_at(&self, x: [f64; 3], t: f64) -> Result<f64, String> {
        let all = [x[0], x[1], x[2], t];
        let mut values = [0.0; 4];
        for (v, &slot) in values.iter_mut().zip(&self.slots) {
            *v = all[slot];
        }
        self.flat
            .eval(&values[..self.slots.len()])
            .map_err(|e| format!("`{}`: {}", self.text, e.msg()))
    }
}

/// Errors where `text` is longer than [`MAX_EXPRESSION_CHARS`], quoting its start.
fn check_length(text: &str) -> Result<(), String> {
    let length = text.chars().count();
    if length <= MAX_EXPRESSION_CHARS {
        return Ok(());
    }
    let start: String = text.chars().take(QUOTED_CHARS).collect();
    Err(format!(
        "the expression `{start}...` has {length} characters; an expression has at most {MAX_EXPRESSION_CHARS}"
    ))
}

/// One component of a vector load: a number or an expression of `x, y, z` and `t`.
#[derive(Clone, Debug, PartialEq)]
pub enum Component {
    Value(f64),
    Expression(Expression),
}

impl PartialEq<f64> for Component {
    fn eq(&self, other: &f64) -> bool {
        matches!(self, Component::Value(v) if v == other)
    }
}

impl Component {
    /// The value at the reference position `x` (NaN where an expression fails, which the
    /// caller's finiteness check reports).
    pub fn at(&self, x: [f64; 3]) -> f64 {
        self.at_time(x, 0.0)
    }

    /// The value at the reference position `x` and pseudo-time `t` (NaN where an expression
    /// fails).
    pub fn at_time(&self, x: [f64; 3], t: f64) -> f64 {
        match self {
            Component::Value(v) => *v,
            Component::Expression(e) => e.eval_at(x, t).unwrap_or(f64::NAN),
        }
    }

    /// Whether the component is an expression of the pseudo-time `t`.
    pub fn uses_time(&self) -> bool {
        matches!(self, Component::Expression(e) if e.uses_time())
    }

    /// The number, where the component is one.
    pub fn constant(&self) -> Option<f64> {
        match self {
            Component::Value(v) => Some(*v),
            Component::Expression(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_of_the_position() {
        let e = Expression::parse("2*x + y^2 - sin(PI*z)").unwrap();
        let x = [0.3, -1.5, 0.5];
        assert!((e.eval(x).unwrap() - (0.6 + 2.25 - 1.0)).abs() < 1e-14);
        assert!(!e.uses_time());
        // variables in any subset and order
        let e = Expression::parse("z - x").unwrap();
        assert_eq!(e.eval([1.0, 7.0, 3.0]).unwrap(), 2.0);
        assert_eq!(Expression::parse("4.5").unwrap().eval(x).unwrap(), 4.5);
        let e = Expression::parse("t * x").unwrap();
        assert!(e.uses_time() && !Expression::parse("x").unwrap().uses_time());
        assert_eq!(e.eval_at([3.0, 0.0, 0.0], 0.5).unwrap(), 1.5);
        let err = Expression::parse("x + q").unwrap_err();
        assert!(
            err.contains("unknown variable `q`") && err.contains("x, y, z, t"),
            "{err}"
        );
        assert!(Expression::parse("x +* (").is_err());
        let err = Expression::parse("1.5e-3 * x").unwrap_err();
        assert!(err.contains("without an exponent"), "{err}");
        let e = Expression::parse("1.5 * 10^-3 * x").unwrap();
        assert!((e.eval([2.0, 0.0, 0.0]).unwrap() - 3e-3).abs() < 1e-18);
    }

    #[test]
    fn expressions_of_time() {
        let e = Expression::parse("t * x - sin(PI * t)").unwrap();
        assert!(e.uses_time());
        let v = e.eval_at([2.0, 0.0, 0.0], 0.5).unwrap();
        assert!((v - (1.0 - 1.0)).abs() < 1e-15, "{v}");
        assert_eq!(
            Expression::parse("t").unwrap().eval_at([9.0; 3], 0.25),
            Ok(0.25)
        );
        let c = Component::Expression(Expression::parse("y + t").unwrap());
        assert!(c.uses_time() && !Component::Value(1.0).uses_time());
        assert_eq!(c.at_time([0.0, 1.0, 0.0], 2.0), 3.0);
    }
}
