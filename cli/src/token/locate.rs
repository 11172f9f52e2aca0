//! Finding files: our module, SoftHSM2, profiles and templates in the workspace.

use std::path::{Path, PathBuf};

/// File name of our PKCS#11 module.
pub const DALEK_LIB: &str = "libdalek_pkcs11.so";

/// Environment variable naming our module explicitly.
pub const DALEK_ENV: &str = "HSM_BENCH_DALEK_MODULE";

/// Environment variable naming the pure-Rust build of our module explicitly.
pub const DALEK_PURE_ENV: &str = "HSM_BENCH_DALEK_PURE_MODULE";

/// Where `cargo build --release -p dalek-pkcs11 --no-default-features
/// --target-dir target/pure-rust` puts the pure-Rust build, relative to the
/// workspace.
pub const DALEK_PURE_REL: &str = "target/pure-rust/release/libdalek_pkcs11.so";

/// Standard install locations of SoftHSM2 on Debian/Ubuntu, Fedora/RHEL, Arch,
/// Alpine, FreeBSD and Homebrew.
pub const SOFTHSM_PATHS: &[&str] = &[
    "/usr/lib/softhsm/libsofthsm2.so",
    "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
    "/usr/lib/aarch64-linux-gnu/softhsm/libsofthsm2.so",
    "/usr/lib64/pkcs11/libsofthsm2.so",
    "/usr/lib/pkcs11/libsofthsm2.so",
    "/usr/lib64/softhsm/libsofthsm2.so",
    "/usr/local/lib/softhsm/libsofthsm2.so",
    "/opt/homebrew/lib/softhsm/libsofthsm2.so",
    "/usr/local/opt/softhsm/lib/softhsm/libsofthsm2.so",
];

/// Directories to search upward from: the executable's directory, the current
/// directory, and the source tree this binary was built from.
fn search_roots() -> Vec<PathBuf> {
    let mut roots = Vec::new();
    if let Ok(exe) = std::env::current_exe()
        && let Some(dir) = exe.parent()
    {
        roots.push(dir.to_path_buf());
    }
    if let Ok(cwd) = std::env::current_dir() {
        roots.push(cwd);
    }
    roots.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    roots
}

/// The first `dir/rel` that exists, walking up from each search root.
pub fn find_upward(rel: &str) -> Option<PathBuf> {
    for root in search_roots() {
        for dir in root.ancestors() {
            let p = dir.join(rel);
            if p.exists() {
                return Some(p);
            }
        }
    }
    None
}

/// Locate our module: `$HSM_BENCH_DALEK_MODULE`, next to the executable, then a
/// `target/release` and then a `target/debug` found upward from the executable's
/// directory or the current directory.
pub fn find_dalek() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(DALEK_ENV) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("{DALEK_ENV}={} does not name a file", p.display()))
        };
    }
    if let Ok(exe) = std::env::current_exe()
        && let Some(dir) = exe.parent()
    {
        let p = dir.join(DALEK_LIB);
        if p.is_file() {
            return Ok(p);
        }
    }
    for profile in ["release", "debug"] {
        if let Some(p) = find_upward(&format!("target/{profile}/{DALEK_LIB}")) {
            return Ok(p);
        }
    }
    Err(format!(
        "our module {DALEK_LIB} was not found next to hsm-bench nor in a target/release or \
         target/debug directory; build it (cargo build --release -p dalek-pkcs11), set \
         {DALEK_ENV}, or use --module softhsm|PATH"
    ))
}

/// Locate the pure-Rust build of our module: `$HSM_BENCH_DALEK_PURE_MODULE`,
/// then a `target/pure-rust/release` found upward from the executable's
/// directory or the current directory.
pub fn find_dalek_pure() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(DALEK_PURE_ENV) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!(
                "{DALEK_PURE_ENV}={} does not name a file",
                p.display()
            ))
        };
    }
    find_upward(DALEK_PURE_REL).ok_or_else(|| {
        format!(
            "the pure-Rust build of our module ({DALEK_PURE_REL}) was not found; build it \
             (cargo build --release -p dalek-pkcs11 --no-default-features --target-dir \
             target/pure-rust) or set {DALEK_PURE_ENV}"
        )
    })
}

/// Locate the system SoftHSM2 module (`$SOFTHSM2_MODULE` first).
pub fn find_softhsm() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("SOFTHSM2_MODULE") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
    }
    SOFTHSM_PATHS
        .iter()
        .map(Path::new)
        .find(|p| p.is_file())
        .map(Path::to_path_buf)
        .ok_or_else(|| {
            "SoftHSM2 was not found (install softhsm2, or set SOFTHSM2_MODULE)".to_string()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_this_crates_manifest_upward() {
        let p = find_upward("cli/Cargo.toml").expect("the workspace is above the test binary");
        assert!(p.ends_with("cli/Cargo.toml"));
        assert!(find_upward("no/such/file/anywhere.xyz").is_none());
    }
}
