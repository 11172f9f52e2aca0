//! NIST ACVP SLH-DSA known answers (tests/data/acvp/README.md) driven through
//! the module: every keyGen case's private key SK.seed ‖ SK.prf ‖ PK.seed ‖
//! PK.root imports with `C_CreateObject` and the public key the token
//! derives from it is the case's; the same value with PK.root changed is
//! refused (the first case of each group). The sigVer subset's keys import the same way, and its
//! signatures of the wrong length are `CKR_SIGNATURE_LEN_RANGE` (the rest of
//! those cases use FIPS 205's internal interface, which no PKCS#11
//! mechanism reaches: the family's unit tests check them).

use super::*;
use serde_json::Value;

pub(super) fn hex(v: &Value) -> Vec<u8> {
    unhex(v.as_str().unwrap())
}

/// The set an ACVP `parameterSet` names ("SLH-DSA-SHA2-128s", ...).
pub(super) fn set_named(name: &str) -> Set {
    let names = [
        "SHA2-128s",
        "SHAKE-128s",
        "SHA2-128f",
        "SHAKE-128f",
        "SHA2-192s",
        "SHAKE-192s",
        "SHA2-192f",
        "SHAKE-192f",
        "SHA2-256s",
        "SHAKE-256s",
        "SHA2-256f",
        "SHAKE-256f",
    ];
    let i = names
        .iter()
        .position(|n| Some(*n) == name.strip_prefix("SLH-DSA-"))
        .unwrap();
    SETS[i].0
}

/// Imports `sk` and checks the public key the token derives is `pk`, and,
/// if `refuse`, that `sk` with PK.root changed is refused (a second key
/// generation: the s sets' take long, so once per group).
fn check_key(s: &Session, set: Set, sk: &[u8], pk: &[u8], refuse: bool) -> ObjectHandle {
    let private = import_private(s, set, sk).unwrap();
    let info = bytes_of(s, private, AttributeType::PublicKeyInfo);
    assert_eq!(info[18..], *pk);
    let public = import_public(s, set, pk).unwrap();
    assert_eq!(bytes_of(s, public, AttributeType::PublicKeyInfo), info);
    if refuse {
        let mut wrong = sk.to_vec();
        *wrong.last_mut().unwrap() ^= 1;
        assert_rv!(import_private(s, set, &wrong), AttributeValueInvalid);
    }
    public
}

#[test]
fn acvp_keygen_keys_import_and_derive_their_public_key() {
    let f = Fixture::new();
    let s = f.user(f.token("kat-keygen"));
    let file = acvp("SLH-DSA-keyGen-FIPS205.json.gz");
    let (mut checked, mut refused) = (0, 0);
    for group in file["testGroups"].as_array().unwrap() {
        let set = set_named(group["parameterSet"].as_str().unwrap());
        for (i, t) in group["tests"].as_array().unwrap().iter().enumerate() {
            let (sk, pk) = (hex(&t["sk"]), hex(&t["pk"]));
            let seeds = [hex(&t["skSeed"]), hex(&t["skPrf"]), hex(&t["pkSeed"])].concat();
            let n = pk.len() / 2;
            // The case's sk is SK.seed ‖ SK.prf ‖ PK.seed ‖ PK.root.
            assert_eq!(sk, [&seeds[..], &pk[n..]].concat(), "tc {}", t["tcId"]);
            check_key(&s, set, &sk, &pk, i == 0);
            checked += 1;
            refused += usize::from(i == 0);
        }
    }
    println!(
        "ACVP SLH-DSA keyGen: {checked} keys imported with their public key, \
         {refused} with a wrong PK.root refused"
    );
    assert_eq!((checked, refused), (120, 12));
}

#[test]
fn acvp_sigver_keys_import_and_wrong_lengths_are_refused() {
    let f = Fixture::new();
    let s = f.user(f.token("kat-sigver"));
    let file = acvp("SLH-DSA-sigVer-FIPS205-subset.json.gz");
    let (mut keys, mut lengths) = (0, 0);
    for group in file["testGroups"].as_array().unwrap() {
        let set = set_named(group["parameterSet"].as_str().unwrap());
        let sig_len = SETS.iter().find(|x| x.0 == set).unwrap().2;
        for (i, t) in group["tests"].as_array().unwrap().iter().enumerate() {
            let public = check_key(&s, set, &hex(&t["sk"]), &hex(&t["pk"]), i == 0);
            keys += 1;
            let sig = hex(&t["signature"]);
            if sig.len() != sig_len {
                assert!(!t["testPassed"].as_bool().unwrap());
                let msg = hex(&t["message"]);
                assert_rv!(
                    s.verify(&deterministic(b""), public, &msg, &sig),
                    SignatureLenRange
                );
                lengths += 1;
            }
        }
    }
    println!("ACVP SLH-DSA sigVer: {keys} keys imported, {lengths} wrong lengths refused");
    assert_eq!((keys, lengths), (12, 2));
}
