//! Error type of the CLI and the mapping of errors to exit codes.
//!
//! Exit codes (stable, documented in `docs/benchmarking.md`):
//! 0 ok, 1 regression (with `--fail-on-regression`), 2 usage or input error,
//! 3 inconclusive comparison or mismatched metadata, 4 nothing was measured,
//! 5 an op failed (with `--fail-on-error`), 130 interrupted (SIGINT), 141 stdout
//! closed by its reader (e.g. `| head -1`).

use std::fmt;

/// Exit code: success.
pub const EXIT_OK: i32 = 0;
/// Exit code: a regression was found and `--fail-on-regression` was given.
pub const EXIT_REGRESSION: i32 = 1;
/// Exit code: bad usage, bad input, module or token problem.
pub const EXIT_USAGE: i32 = 2;
/// Exit code: the comparison could not conclude (mismatched settings, nothing to compare).
pub const EXIT_INCONCLUSIVE: i32 = 3;

/// Exit code: a run measured nothing (every op unsupported or failed).
pub const EXIT_NOTHING_MEASURED: i32 = 4;
/// Exit code: an op failed and `--fail-on-error` was given.
pub const EXIT_FAILED_OPS: i32 = 5;

/// Exit code: the run was interrupted (SIGINT); finished results were written.
pub const EXIT_INTERRUPTED: i32 = 130;
/// Exit code: stdout was closed by its reader (128 + SIGPIPE, as a shell reports
/// a program killed by SIGPIPE); nothing is printed.
pub const EXIT_CLOSED_STDOUT: i32 = 141;

/// An error that ends the program with a one-line message and an exit code.
#[derive(Debug)]
pub struct CliError {
    /// Exit code of the process.
    pub code: i32,
    /// One-line message (no trailing newline).
    pub message: String,
}

impl CliError {
    /// A usage or input error (exit code 2).
    pub fn usage(message: impl Into<String>) -> Self {
        CliError {
            code: EXIT_USAGE,
            message: message.into(),
        }
    }

    /// An inconclusive comparison or mismatched metadata (exit code 3).
    pub fn inconclusive(message: impl Into<String>) -> Self {
        CliError {
            code: EXIT_INCONCLUSIVE,
            message: message.into(),
        }
    }

    /// Ends quietly (no message) with `code`.
    pub fn quiet(code: i32) -> Self {
        CliError {
            code,
            message: String::new(),
        }
    }

    /// Prefix the message with context, e.g. `login failed: CKR_PIN_INCORRECT`.
    pub fn context(mut self, what: &str) -> Self {
        self.message = format!("{what}: {}", self.message);
        self
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError::usage(e.to_string())
    }
}

/// Result alias used throughout the CLI.
pub type Result<T, E = CliError> = std::result::Result<T, E>;
