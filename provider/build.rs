//! Link settings of the `aws-lc` build (the default one).
//!
//! AWS-LC keeps per-thread state behind a `pthread_key_t` whose destructor
//! lives in this module. A consumer that `dlclose`s the module while other
//! threads are still alive would make those threads jump into unmapped code
//! when they exit, so the aws-lc build marks the module `-z nodelete`: it
//! stays mapped until the process ends (re-loading it finds the same copy).
//! The pure-Rust build (`--no-default-features`) has no such state and
//! links normally.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_AWS_LC").is_some() {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
    }
}
