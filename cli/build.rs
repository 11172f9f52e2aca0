//! Embeds the git commit of the source tree into the binary as `HSM_BENCH_GIT_COMMIT`.
//!
//! Falls back to "unknown" when git or the repository is not available (e.g. a
//! source tarball or a repository without commits).

use std::path::Path;
use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    let value = if dirty && commit != "unknown" {
        format!("{commit}-dirty")
    } else {
        commit
    };
    println!("cargo:rustc-env=HSM_BENCH_GIT_COMMIT={value}");
    // Re-run when HEAD moves. Only name paths that exist: a missing path would make
    // cargo re-run this script (and rebuild the crate) on every build.
    for p in ["../.git/HEAD", "../.git/refs/heads"] {
        if Path::new(p).exists() {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
