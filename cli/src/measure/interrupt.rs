//! Ctrl-C (SIGINT) during a run: the handler only raises a flag. In the
//! scheduler every wait for a module's worker looks at it (`remote.rs`), so
//! the first Ctrl-C ends a run even while a module hangs in a call; the
//! worker measuring gets a SIGINT of its own, and its measuring threads look
//! at its flag between operations. `run` then writes the finished results,
//! finishes or kills the workers, removes temporary tokens and exits 130;
//! nothing calls `process::exit` past them. Only a second Ctrl-C exits at
//! once.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Install the SIGINT handler (once per process; later calls do nothing).
pub fn install() {
    // An error means a handler is already installed, which is just as good.
    let _ = ctrlc::set_handler(|| {
        if REQUESTED.swap(true, Ordering::Relaxed) {
            // A second Ctrl-C: the user will not wait for a call that hangs.
            eprintln!(
                "hsm-bench: interrupted twice: exiting now (temporary tokens and token keys may \
                 remain; remove keys with `hsm-bench keys delete --prefix {}`)",
                crate::suite::keyset::token_key_prefix()
            );
            std::process::exit(crate::error::EXIT_INTERRUPTED);
        }
    });
}

/// Whether Ctrl-C was pressed.
#[inline]
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}
