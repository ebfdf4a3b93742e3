//! Prescribed vector loads: body forces per unit reference volume and dead-load tractions per unit
//! reference area, evaluated at reference (undeformed) positions.

/// A vector load density. `Copy` and `Sync`, so one value can be shared by all threads of an
/// element loop.
#[derive(Clone, Copy, Default)]
pub enum Load<'a> {
    /// No load (skips the integration entirely).
    #[default]
    None,
    /// The same vector everywhere.
    Constant([f64; 3]),
    /// A field of the reference position `X`.
    Field(&'a (dyn Fn([f64; 3]) -> [f64; 3] + Sync)),
}

impl std::fmt::Debug for Load<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Load::None => write!(f, "Load::None"),
            Load::Constant(v) => write!(f, "Load::Constant({v:?})"),
            Load::Field(_) => write!(f, "Load::Field(..)"),
        }
    }
}
