//! End-to-end tests of hexfem live in `tests/`: every input of `inputs/` run and checked against
//! physics, the AMG on the ex56 problem as the app builds it, and the verification suite. The
//! command-line tests stay with the binary (`crates/apps/tests/cli.rs`).
