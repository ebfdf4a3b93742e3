//! Ctrl-C and SIGTERM for `run` and `campaign`: the first asks the run to stop at its next safe
//! point (a load step or Newton iteration boundary, every converged step written); a second ends
//! the process at once with status 130 (SIGINT) or 143 (SIGTERM). The handlers only set an
//! atomic flag (async-signal-safe); the library polls it through [`sim::Interrupt`].

use signal_hook::consts::{SIGINT, SIGTERM};

/// The exit status of a run stopped by a signal (128 + SIGINT, as a shell reports Ctrl-C).
pub const INTERRUPTED_STATUS: u8 = 130;

/// Installs the handlers; returns the token the run polls. Where a handler cannot be installed
/// the signal keeps its default action (the process ends at once, as before).
pub fn install() -> sim::Interrupt {
    let interrupt = sim::Interrupt::new();
    for (signal, status) in [(SIGINT, 130), (SIGTERM, 143)] {
        // registered first, so it sees the flag as it was before this signal set it: the
        // second signal (of either kind) ends the process
        let _ = signal_hook::flag::register_conditional_shutdown(signal, status, interrupt.flag());
        let _ = signal_hook::flag::register(signal, interrupt.flag());
    }
    interrupt
}

/// A shell word for `arg` (single-quoted where it holds anything beyond a plain path).
pub fn shell_word(arg: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=,+@%".contains(c);
    if !arg.is_empty() && arg.chars().all(plain) {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_quote_only_what_needs_it() {
        assert_eq!(shell_word("results/x.h5:3"), "results/x.h5:3");
        assert_eq!(shell_word("loading.steps=4"), "loading.steps=4");
        assert_eq!(
            shell_word("mesh.box.cells=[2, 2, 6]"),
            "'mesh.box.cells=[2, 2, 6]'"
        );
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
    }
}
