//! `dalek-pkcs11-util` run as an operator would, on a test's token
//! directory, and the checks of what it prints and how it exits. Beside the
//! provider's harness (`provider/tests/common/`, which each test here loads
//! by `#[path]`); the tool itself is this package's binary.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{Fixture, SO_PIN, USER_PIN};

/// The tool with the fixture's token directory (and PINs in `PIN_*`).
pub fn util(f: &Fixture, args: &[&str]) -> Output {
    util_in(&f.dir.path().join("tokens"), args)
}

/// The tool on the token directory `dir`.
pub fn util_in(dir: &Path, args: &[&str]) -> Output {
    util_on("sqlite", dir, args)
}

/// The tool on `storage` (`sqlite` with the token directory `dir`, or a
/// PostgreSQL connection string).
pub fn util_on(storage: &str, dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dalek-pkcs11-util"))
        .env("DALEK_PKCS11_TOKEN_DIR", dir)
        .env_remove("DALEK_PKCS11_CONFIG")
        .env("DALEK_PKCS11_STORAGE", storage)
        .env("PIN_SO", SO_PIN)
        .env("PIN_USER", USER_PIN)
        .env("PIN_NEW", "9876")
        .args(args)
        .output()
        .expect("dalek-pkcs11-util runs")
}

pub fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A usage error or failed operation: exit 2 and one line on stderr.
pub fn refused(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("dalek-pkcs11-util: error: "), "{err}");
    err
}

/// `init-token` of `label` with the standard PINs.
pub fn init_args(label: &str) -> [&str; 7] {
    [
        "init-token",
        "--label",
        label,
        "--so-pin-env",
        "PIN_SO",
        "--pin-env",
        "PIN_USER",
    ]
}
