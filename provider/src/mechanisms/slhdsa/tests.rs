//! NIST ACVP SLH-DSA sigVer sample vectors (FIPS 205's internal interface,
//! which the C API cannot reach: tests/data/acvp/README.md) on this family's
//! keys: every case's private key imports with the checked PK.root and
//! gives the case's public key, every signature verifies or is refused as
//! the case says, and every valid signature is reproduced byte for byte
//! from the private key and the case's opt_rand (a sigGen known answer).

use super::key::{PrivateKey, PublicKey};
use super::params::ParamSet;
use cryptoki_sys::*;
use serde_json::Value;
use std::io::Read;

const SIGVER: &[u8] =
    include_bytes!("../../../tests/data/acvp/SLH-DSA-sigVer-FIPS205-subset.json.gz");

fn hex(v: &Value) -> Vec<u8> {
    let s = v.as_str().unwrap();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The set an ACVP `parameterSet` names ("SLH-DSA-SHA2-128s", ...).
fn set_named(name: &str) -> ParamSet {
    let all = [
        ("SHA2-128s", ParamSet::Sha2_128s),
        ("SHAKE-128s", ParamSet::Shake128s),
        ("SHA2-128f", ParamSet::Sha2_128f),
        ("SHAKE-128f", ParamSet::Shake128f),
        ("SHA2-192s", ParamSet::Sha2_192s),
        ("SHAKE-192s", ParamSet::Shake192s),
        ("SHA2-192f", ParamSet::Sha2_192f),
        ("SHAKE-192f", ParamSet::Shake192f),
        ("SHA2-256s", ParamSet::Sha2_256s),
        ("SHAKE-256s", ParamSet::Shake256s),
        ("SHA2-256f", ParamSet::Sha2_256f),
        ("SHAKE-256f", ParamSet::Shake256f),
    ];
    let suffix = name.strip_prefix("SLH-DSA-").unwrap();
    all.into_iter().find(|(n, _)| *n == suffix).unwrap().1
}

#[test]
fn acvp_sigver_cases_verify_and_their_valid_signatures_are_reproduced() {
    let mut json = String::new();
    flate2::read::GzDecoder::new(SIGVER)
        .read_to_string(&mut json)
        .unwrap();
    let file: Value = serde_json::from_str(&json).unwrap();
    let (mut valid, mut invalid, mut length) = (0, 0, 0);
    for group in file["testGroups"].as_array().unwrap() {
        let set = set_named(group["parameterSet"].as_str().unwrap());
        for t in group["tests"].as_array().unwrap() {
            let id = &t["tcId"];
            let (sk, pk, msg, sig) = (
                hex(&t["sk"]),
                hex(&t["pk"]),
                hex(&t["message"]),
                hex(&t["signature"]),
            );
            let private = PrivateKey::from_value(set, &sk).unwrap();
            assert_eq!(private.public_encoding(), pk, "tc {id}");
            let public = PublicKey::decode(set, &pk).unwrap();
            let result = public.verify(&[&msg], &sig).map_err(|e| e.rv());
            if t["testPassed"].as_bool().unwrap() {
                assert_eq!(result, Ok(()), "tc {id}");
                let rand = hex(&t["additionalRandomness"]);
                assert_eq!(private.sign(&[&msg], Some(&rand)).unwrap(), sig, "tc {id}");
                valid += 1;
            } else if sig.len() != set.signature_len() {
                assert_eq!(result, Err(CKR_SIGNATURE_LEN_RANGE), "tc {id}");
                length += 1;
            } else {
                assert_eq!(result, Err(CKR_SIGNATURE_INVALID), "tc {id}");
                invalid += 1;
            }
        }
    }
    // SHAKE-128f: 3 valid, 4 modified, 2 of the wrong length; SHA2-192s:
    // 1 valid, 2 modified.
    assert_eq!((valid, invalid, length), (4, 6, 2));
}
