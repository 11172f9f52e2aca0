//! Helpers for the families' known-answer tests.

/// Lower-case hex digits of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes from hex digits (test vectors).
pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// A gzip-compressed NIST ACVP vector file (JSON, `tests/data/acvp`).
pub fn acvp(gz: &[u8]) -> serde_json::Value {
    use std::io::Read;
    let mut json = String::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_string(&mut json)
        .unwrap();
    serde_json::from_str(&json).unwrap()
}

/// A hex field of an ACVP case (or group) as bytes.
pub fn acvp_bytes(v: &serde_json::Value) -> Vec<u8> {
    unhex(v.as_str().unwrap())
}

/// The lower-case hex SHA-256 of `bytes` (the subsets keep a signature's
/// digest in `signatureSha256`, not the signature).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex(&sha2::Sha256::digest(bytes))
}

/// The pre-hash an ACVP `hashAlg` names ("SHA2-256", "SHA3-384",
/// "SHAKE-128", ...).
pub fn acvp_hash(name: &str) -> super::prehash::HashAlg {
    use cryptoki_sys::*;
    let ckm = match name {
        "SHA2-224" => CKM_SHA224,
        "SHA2-256" => CKM_SHA256,
        "SHA2-384" => CKM_SHA384,
        "SHA2-512" => CKM_SHA512,
        "SHA2-512/224" => CKM_SHA512_224,
        "SHA2-512/256" => CKM_SHA512_256,
        "SHA3-224" => CKM_SHA3_224,
        "SHA3-256" => CKM_SHA3_256,
        "SHA3-384" => CKM_SHA3_384,
        "SHA3-512" => CKM_SHA3_512,
        "SHAKE-128" => CKM_SHAKE_128_KEY_DERIVATION,
        "SHAKE-256" => CKM_SHAKE_256_KEY_DERIVATION,
        other => panic!("hashAlg {other}"),
    };
    super::prehash::HashAlg::of(ckm).unwrap()
}

/// M′ of an ACVP case of the external interface (FIPS 204 Algorithms 2
/// and 4, FIPS 205 Algorithms 22 and 23): 0 ‖ |ctx| ‖ ctx ‖ M for "pure",
/// 1 ‖ |ctx| ‖ ctx ‖ OID ‖ PH(M) for "preHash" (written here from the
/// standards, apart from the token's framing it checks).
pub fn acvp_external_message(case: &serde_json::Value) -> Vec<u8> {
    let (ctx, msg) = (acvp_bytes(&case["context"]), acvp_bytes(&case["message"]));
    let mut framed = vec![0, ctx.len() as u8];
    framed.extend_from_slice(&ctx);
    match case["hashAlg"].as_str() {
        None => framed.extend_from_slice(&msg),
        Some(name) => {
            framed[0] = 1;
            let alg = acvp_hash(name);
            let mut h = super::prehash::Hasher::new(alg);
            h.update(&msg);
            framed.extend_from_slice(&alg.oid_der());
            framed.extend_from_slice(&h.finish(alg.len));
        }
    }
    framed
}
