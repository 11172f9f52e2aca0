//! The NIST ACVP vector files of tests/data/acvp (README.md there) for the
//! post-quantum test binaries (not part of `common`, which the util crate's
//! tests share without flate2).
#![allow(dead_code)]

use std::io::Read;
use std::path::PathBuf;

/// A gzip-compressed ACVP vector file of tests/data/acvp, parsed.
pub fn acvp(name: &str) -> serde_json::Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/acvp")
        .join(name);
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The lower-case hex SHA-256 of `bytes` (the subsets keep a signature's
/// digest in `signatureSha256`).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
