//! Ctrl-C (SIGINT) during a run: the handler only raises a flag. The measuring
//! threads look at it between operations, the suite stops before the next
//! job, and `run` writes the finished results, drops the modules (removing
//! temporary tokens) and exits 130; nothing calls `process::exit` past them.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Install the SIGINT handler (once per process; later calls do nothing).
pub fn install() {
    // An error means a handler is already installed, which is just as good.
    let _ = ctrlc::set_handler(|| REQUESTED.store(true, Ordering::Relaxed));
}

/// Whether Ctrl-C was pressed.
#[inline]
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}
