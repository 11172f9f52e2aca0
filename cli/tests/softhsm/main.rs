//! End-to-end tests of the hsm-bench binary against SoftHSM2 (and the delay shim
//! wrapped around it). Small iteration counts keep the whole file fast.
//!
//! The tests are grouped by subject in the modules below; this file holds
//! the helpers they share.

#[path = "../common/mod.rs"]
mod common;

mod comparison;
mod delay_shim;
mod errors;
mod modes;
mod output;
mod tokens_and_profiles;

use common::*;
use serde_json::Value;

const OPS: &str = "ed25519-sign,ed25519-verify,p256-sign,aes256-gcm-*,sha256,hmac-sha256,random32,rsa2048-oaep-sha256-encrypt";

/// One JSON run on a temporary SoftHSM2 token, shared by several tests.
fn softhsm_run(dir: &std::path::Path) -> (Value, std::path::PathBuf) {
    let out_path = dir.join("run.json");
    // A private TMPDIR shows whether the temporary token is removed afterwards.
    let o = run(cmd()
        .env("TMPDIR", dir)
        .args([
            "run",
            "--module",
            "softhsm",
            "--ops",
            OPS,
            "--iterations",
            "40",
            "--warmup",
            "2",
        ])
        .args(["--format", "json", "--quiet", "--output"])
        .arg(&out_path));
    assert_eq!(code(&o), 0);
    (json(&out_path), out_path)
}

fn doctor(v: &Value, op: &str, f: impl Fn(&mut serde_json::Map<String, Value>)) -> Value {
    let mut b = v.clone();
    for r in b["results"].as_array_mut().unwrap() {
        if r["op"] == op {
            f(r.as_object_mut().unwrap());
        }
    }
    b
}
