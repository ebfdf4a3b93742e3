//! The `hexfem` command line's rendering that other front ends and tests share: the text of
//! `check`, the plots of a run's summary and of a campaign's table; and the process's
//! allocator ([`huge_pages`]). The simulation itself is the `sim` library.

pub mod check_text;
pub mod huge_pages;
pub mod plot;
pub mod stage_table;
