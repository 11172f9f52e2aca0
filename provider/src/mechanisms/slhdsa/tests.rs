//! NIST ACVP SLH-DSA vectors on this family's keys, for what the C API
//! cannot reach (tests/data/acvp/README.md): FIPS 205's internal interface
//! and signing with a given opt_rand.
//!
//! - sigVer (internal): every case's private key imports with the checked
//!   PK.root and gives the case's public key, every signature verifies or
//!   is refused as the case says, and every valid signature is reproduced
//!   byte for byte from the private key and the case's opt_rand.
//! - sigGen: the internal cases (deterministic and with opt_rand) and the
//!   external ones with opt_rand, signed byte for byte. The deterministic
//!   external cases run through the module (tests/slhdsa/acvp.rs).

use super::key::{PrivateKey, PublicKey};
use super::params::ParamSet;
use crate::mechanisms::test_util::{acvp, acvp_bytes as hex, acvp_external_message, sha256_hex};
use cryptoki_sys::*;

const SIGVER: &[u8] =
    include_bytes!("../../../tests/data/acvp/SLH-DSA-sigVer-FIPS205-subset.json.gz");
const SIGGEN: &[u8] =
    include_bytes!("../../../tests/data/acvp/SLH-DSA-sigGen-FIPS205-subset.json.gz");

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
    let file = acvp(SIGVER);
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

#[test]
fn acvp_siggen_internal_and_randomized_cases_are_signed_byte_for_byte() {
    let file = acvp(SIGGEN);
    let (mut internal, mut hedged) = (0, 0);
    for group in file["testGroups"].as_array().unwrap() {
        let set = set_named(group["parameterSet"].as_str().unwrap());
        let is_internal = group["signatureInterface"] == "internal";
        let deterministic = group["deterministic"].as_bool().unwrap();
        if !is_internal && deterministic {
            continue; // through the module: tests/slhdsa/acvp.rs
        }
        for t in group["tests"].as_array().unwrap() {
            let private = PrivateKey::from_value(set, &hex(&t["sk"])).unwrap();
            let framed = if is_internal {
                hex(&t["message"])
            } else {
                acvp_external_message(t)
            };
            let rand = (!deterministic).then(|| hex(&t["additionalRandomness"]));
            let sig = private.sign(&[&framed], rand.as_deref()).unwrap();
            assert_eq!(sig.len(), set.signature_len());
            assert_eq!(sha256_hex(&sig), t["signatureSha256"], "tc {}", t["tcId"]);
            if is_internal {
                internal += 1;
            } else {
                hedged += 1;
            }
        }
    }
    // The six f sets: one deterministic and one randomized internal case,
    // one randomized pure and one randomized pre-hash external case each.
    assert_eq!((internal, hedged), (12, 12));
}
