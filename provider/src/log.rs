//! Minimal leveled logging for a library loaded into someone else's process.
//!
//! Off by default. The level and destination come from the configuration
//! (`log_level`, `log_file`, or `DALEK_PKCS11_LOG` / `DALEK_PKCS11_LOG_FILE`).
//! When logging is off, a call costs one relaxed atomic load.

use std::fmt::Arguments;
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Log levels, most severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Off = 0,
    Error = 1,
    Warn = 2,
    Info = 3,
    Debug = 4,
}

impl Level {
    /// Parses `off`, `error`, `warn`, `info`, `debug` (case-insensitive).
    pub fn parse(s: &str) -> Option<Level> {
        match s.trim().to_ascii_lowercase().as_str() {
            "off" | "none" | "" => Some(Level::Off),
            "error" => Some(Level::Error),
            "warn" | "warning" => Some(Level::Warn),
            "info" => Some(Level::Info),
            "debug" | "trace" => Some(Level::Debug),
            _ => None,
        }
    }
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Off as u8);
/// A `std` mutex (futex based): the fork handlers hold it across `fork()`,
/// so a child never inherits it held by a thread it does not have.
static SINK: Mutex<Option<File>> = Mutex::new(None);

/// The log destination, held (see [`hold_sink`]).
pub type SinkHold = MutexGuard<'static, Option<File>>;

/// Holds the log destination: no thread writes a line until it is dropped.
pub fn hold_sink() -> SinkHold {
    SINK.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Sets the level and destination (`None` = standard error).
pub fn configure(level: Level, file: Option<File>) {
    *hold_sink() = file;
    LEVEL.store(level as u8, Ordering::Relaxed);
}

/// True when messages of `level` are written.
#[inline]
pub fn enabled(level: Level) -> bool {
    level != Level::Off && LEVEL.load(Ordering::Relaxed) >= level as u8
}

fn write(level: Level, args: Arguments<'_>) {
    if !enabled(level) {
        return;
    }
    let line = format!(
        "dalek-pkcs11[{}] {:?}: {}\n",
        std::process::id(),
        level,
        args
    );
    let mut sink = hold_sink();
    // Logging must never fail the caller's operation: write errors are ignored.
    let _ = match sink.as_mut() {
        Some(f) => f.write_all(line.as_bytes()),
        None => std::io::stderr().write_all(line.as_bytes()),
    };
}

/// Logs an error.
pub fn error(args: Arguments<'_>) {
    write(Level::Error, args)
}

/// Logs a warning.
pub fn warn(args: Arguments<'_>) {
    write(Level::Warn, args)
}

/// Logs an informational message.
pub fn info(args: Arguments<'_>) {
    write(Level::Info, args)
}

/// Logs a debugging message.
pub fn debug(args: Arguments<'_>) {
    write(Level::Debug, args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_levels() {
        assert_eq!(Level::parse("DEBUG"), Some(Level::Debug));
        assert_eq!(Level::parse("warning"), Some(Level::Warn));
        assert_eq!(Level::parse("off"), Some(Level::Off));
        assert_eq!(Level::parse("loud"), None);
    }

    #[test]
    fn off_disables_everything() {
        assert!(!enabled(Level::Off));
    }
}
