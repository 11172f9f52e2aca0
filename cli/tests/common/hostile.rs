//! The hostile shim (`cli/hostile-shim`, issue 26): a module wrapping
//! SoftHSM2 that misbehaves as `P11_HOSTILE` says.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use super::{SoftToken, code, softhsm, stderr};

/// The display name hsm-bench gives the shim (its file stem).
pub const HOSTILE: &str = "p11_hostile_shim";

/// The hostile shim cdylib: `$HSM_BENCH_HOSTILE_SHIM`, or built here with
/// cargo into a separate target directory (cargo cannot depend on a cdylib).
pub fn hostile_shim() -> PathBuf {
    static SHIM: OnceLock<PathBuf> = OnceLock::new();
    SHIM.get_or_init(|| super::test_cdylib("p11-hostile-shim", "HSM_BENCH_HOSTILE_SHIM"))
        .clone()
}

impl SoftToken {
    /// `hsm-bench` (no arguments yet) on this token's configuration with the
    /// hostile shim wrapping SoftHSM2 and misbehaving as `spec` says.
    pub fn hostile(&self, spec: &str) -> Command {
        let mut c = self.cmd();
        c.env("P11_HOSTILE_MODULE", softhsm())
            .env("P11_HOSTILE", spec);
        c
    }

    /// `hsm-bench ARGS --module SHIM` on this token with the hostile shim
    /// misbehaving as `spec` says; its output.
    pub fn through_hostile(&self, spec: &str, args: &[&str]) -> Output {
        let mut c = self.hostile(spec);
        c.args(args).arg("--module").arg(hostile_shim());
        super::run(&mut c)
    }

    /// `hsm-bench run --quiet` on this token through `modules` (the hostile
    /// shim is named by [`hostile_shim`]), misbehaving as `spec` says.
    pub fn hostile_run(&self, spec: &str, modules: &[&Path]) -> Command {
        let mut c = self.hostile(spec);
        c.args(["run", "--quiet"]);
        for m in modules {
            c.arg("--module").arg(m);
        }
        c.args(["--token-label", &self.label, "--pin", &self.pin]);
        c
    }
}

/// What a crash or a panic leaves on stderr; a misbehaving module must cause
/// none of it.
pub const PANIC_TEXT: &[&str] = &[
    "panicked",
    "RUST_BACKTRACE",
    "stack backtrace",
    "internal error",
    "memory allocation of",
];

/// Asserts that `o` ended with exit code `want` (not a signal) and that
/// stderr holds no panic text.
pub fn assert_no_panic(o: &Output, want: i32) {
    let err = stderr(o);
    for p in PANIC_TEXT {
        assert!(!err.contains(p), "stderr holds '{p}':\n{err}");
    }
    assert_eq!(code(o), want, "stderr:\n{err}");
}

/// Asserts that `o` ended with exit code `want` and one line on stderr,
/// `hsm-bench: error: …`, holding each of `parts`; returns the line.
pub fn assert_one_line_error(o: &Output, want: i32, parts: &[&str]) -> String {
    assert_no_panic(o, want);
    let err = stderr(o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr:\n{err}");
    let line = lines[0];
    assert!(line.starts_with("hsm-bench: error: "), "{line}");
    for p in parts {
        assert!(line.contains(p), "'{p}' not in: {line}");
    }
    line.to_string()
}
