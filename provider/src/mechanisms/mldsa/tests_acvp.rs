//! NIST ACVP ML-DSA sigGen and sigVer vectors (FIPS 204, vsId 42,
//! tests/data/acvp/README.md) on this family's keys. These vectors use the
//! internal interface (ML-DSA.Sign_internal / Verify_internal on a given
//! M′), which the C API cannot reach: the token frames M′ itself. They are
//! run here on the token's own path below the framing: the expanded key's
//! import (`PrivateKey::from_expanded`, with its checks), μ = H(tr ‖ M′, 64)
//! and signing or verifying from μ (`sign_mu` / `verify_mu`), the calls
//! every `CKM_ML_DSA` / `CKM_HASH_ML_DSA*` operation ends in. The framing
//! is checked against the same vectors through the module in
//! tests/mldsa/acvp.rs.

use super::key::{PrivateKey, PublicKey};
use super::params::ParamSet;
use crate::mechanisms::test_util::{acvp, acvp_bytes as hex, sha256_hex};
use cryptoki_sys::*;
use sha3::Shake256;
use sha3::digest::{ExtendableOutput, Update};

const SIGGEN: &[u8] =
    include_bytes!("../../../tests/data/acvp/ML-DSA-sigGen-FIPS204-subset.json.gz");
const SIGVER: &[u8] = include_bytes!("../../../tests/data/acvp/ML-DSA-sigVer-FIPS204.json.gz");

fn set_named(name: &str) -> ParamSet {
    match name {
        "ML-DSA-44" => ParamSet::P44,
        "ML-DSA-65" => ParamSet::P65,
        "ML-DSA-87" => ParamSet::P87,
        other => panic!("{other}"),
    }
}

/// μ = H(tr ‖ M′, 64) (FIPS 204 Algorithm 7 line 6).
fn mu(tr: &[u8], framed: &[u8]) -> [u8; 64] {
    let mut h = Shake256::default();
    h.update(tr);
    h.update(framed);
    let mut out = [0u8; 64];
    h.finalize_xof_into(&mut out);
    out
}

#[test]
fn acvp_siggen_cases_are_signed_byte_for_byte_from_the_expanded_key() {
    let file = acvp(SIGGEN);
    let (mut deterministic, mut hedged) = (0, 0);
    for group in file["testGroups"].as_array().unwrap() {
        let set = set_named(group["parameterSet"].as_str().unwrap());
        let is_deterministic = group["deterministic"].as_bool().unwrap();
        for t in group["tests"].as_array().unwrap() {
            let key = PrivateKey::from_expanded(set, &hex(&t["sk"])).unwrap();
            let rnd: [u8; 32] = if is_deterministic {
                [0; 32]
            } else {
                hex(&t["rnd"]).try_into().unwrap()
            };
            let sig = key
                .sign_mu(&mu(key.tr(), &hex(&t["message"])), &rnd)
                .unwrap();
            assert_eq!(sig.len(), set.signature_len());
            assert_eq!(sha256_hex(&sig), t["signatureSha256"], "tc {}", t["tcId"]);
            if is_deterministic {
                deterministic += 1;
            } else {
                hedged += 1;
            }
        }
    }
    assert_eq!((deterministic, hedged), (12, 12));
}

#[test]
fn acvp_sigver_cases_verify_or_are_refused_as_each_case_says() {
    let file = acvp(SIGVER);
    let mut outcomes = std::collections::BTreeMap::<String, (u32, u32)>::new();
    for group in file["testGroups"].as_array().unwrap() {
        let set = set_named(group["parameterSet"].as_str().unwrap());
        let pk = hex(&group["pk"]);
        let private = PrivateKey::from_expanded(set, &hex(&group["sk"])).unwrap();
        assert_eq!(private.public_encoding(), pk, "tg {}", group["tgId"]);
        let public = PublicKey::decode(set, &pk).unwrap();
        for t in group["tests"].as_array().unwrap() {
            let sig = hex(&t["signature"]);
            assert_eq!(sig.len(), set.signature_len(), "tc {}", t["tcId"]);
            let result = public
                .verify_mu(&mu(public.tr(), &hex(&t["message"])), &sig)
                .map_err(|e| e.rv());
            let passed = t["testPassed"].as_bool().unwrap();
            let expected = if passed {
                Ok(())
            } else {
                Err(CKR_SIGNATURE_INVALID)
            };
            assert_eq!(result, expected, "tc {} ({})", t["tcId"], t["reason"]);
            let entry = outcomes
                .entry(t["reason"].as_str().unwrap().to_owned())
                .or_default();
            if passed {
                entry.0 += 1;
            } else {
                entry.1 += 1;
            }
        }
    }
    // Nine cases of each kind, three per parameter set: the valid ones,
    // and a modified message, a modified signature, z out of range and
    // too many hints refused.
    let expected = [
        ("modify message", (0, 9)),
        ("modify signature", (0, 9)),
        ("no modification", (9, 0)),
        ("too many hints", (0, 9)),
        ("z too large", (0, 9)),
    ];
    let outcomes: Vec<_> = outcomes.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(outcomes, expected);
}
