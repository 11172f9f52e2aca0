//! ML-DSA signatures through `C_Sign*` / `C_Verify*`: hedged and
//! deterministic, contexts, multi-part, corrupted signatures, and the
//! HashML-DSA mechanisms (pre-hashed input single-part only).

use super::*;
use sha2::Digest;

#[test]
fn hedged_signatures_differ_and_deterministic_ones_repeat() {
    let f = Fixture::new();
    let s = f.user(f.token("hedge"));
    let (public, private) = generate(&s, MlDsaParameterSetType::ML_DSA_65, false);
    let ctx = [0xee; 33];
    for hedge in [HedgeType::Preferred, HedgeType::Required] {
        let m = ml_dsa(hedge, Some(&ctx));
        let a = s.sign(&m, private, b"data").unwrap();
        let b = s.sign(&m, private, b"data").unwrap();
        assert_ne!(a, b);
        s.verify(&m, public, b"data", &a).unwrap();
        s.verify(&deterministic(&ctx), public, b"data", &b).unwrap();
    }
    let d = deterministic(&ctx);
    let a = s.sign(&d, private, b"data").unwrap();
    assert_eq!(a, s.sign(&d, private, b"data").unwrap());
    // No parameter at all: empty context, hedged.
    let none = ml_dsa(HedgeType::Preferred, None);
    let n = s.sign(&none, private, b"data").unwrap();
    s.verify(&deterministic(b""), public, b"data", &n).unwrap();
}

#[test]
fn wrong_context_data_or_signature_is_rejected() {
    let f = Fixture::new();
    let s = f.user(f.token("reject"));
    let (public, private) = generate(&s, MlDsaParameterSetType::ML_DSA_44, false);
    let m = deterministic(b"right");
    let sig = s.sign(&m, private, b"data").unwrap();
    assert_rv!(
        s.verify(&deterministic(b"wrong"), public, b"data", &sig),
        SignatureInvalid
    );
    assert_rv!(s.verify(&m, public, b"datA", &sig), SignatureInvalid);
    for i in [0, 100, sig.len() - 1] {
        let mut bad = sig.clone();
        bad[i] ^= 0x01;
        assert_rv!(s.verify(&m, public, b"data", &bad), SignatureInvalid);
    }
    assert_rv!(
        s.verify(&m, public, b"data", &sig[..sig.len() - 1]),
        SignatureLenRange
    );
    // A context over 255 bytes is a bad parameter.
    let long = [0u8; 256];
    assert_rv!(
        s.sign(&deterministic(&long), private, b"x"),
        MechanismParamInvalid
    );
}

#[test]
fn multipart_equals_single_part() {
    let f = Fixture::new();
    let s = f.user(f.token("multi"));
    let (public, private) = generate(&s, MlDsaParameterSetType::ML_DSA_87, false);
    let m = deterministic(b"c");
    let whole = s.sign(&m, private, b"hello world").unwrap();
    s.sign_init(&m, private).unwrap();
    s.sign_update(b"hello ").unwrap();
    s.sign_update(b"world").unwrap();
    assert_eq!(s.sign_final().unwrap(), whole);
    s.verify_init(&m, public).unwrap();
    s.verify_update(b"hello").unwrap();
    s.verify_update(b" world").unwrap();
    s.verify_final(&whole).unwrap();
    s.verify_init(&m, public).unwrap();
    s.verify_update(b"hello").unwrap();
    assert_rv!(s.verify_final(&whole), SignatureInvalid);
}

#[test]
fn hash_ml_dsa_takes_the_prehash_single_part_only() {
    let f = Fixture::new();
    let s = f.user(f.token("prehash"));
    let (public, private) = generate(&s, MlDsaParameterSetType::ML_DSA_65, false);
    let ph = sha2::Sha384::digest(b"message").to_vec();
    let m = Mechanism::HashMlDsa(HashSignAdditionalContext::new(
        HedgeType::DeterministicRequired,
        Some(b"ctx"),
        cryptoki::mechanism::MechanismType::SHA384,
    ));
    let sig = s.sign(&m, private, &ph).unwrap();
    s.verify(&m, public, &ph, &sig).unwrap();
    // The token-hashed mechanism gives the same signature over the message.
    let internal = Mechanism::HashMlDsaSha384(SignAdditionalContext::new(
        HedgeType::DeterministicRequired,
        Some(b"ctx"),
    ));
    assert_eq!(s.sign(&internal, private, b"message").unwrap(), sig);
    s.sign_init(&internal, private).unwrap();
    s.sign_update(b"mess").unwrap();
    s.sign_update(b"age").unwrap();
    assert_eq!(s.sign_final().unwrap(), sig);
    // Not a signature of pure ML-DSA.
    assert_rv!(
        s.verify(&deterministic(b"ctx"), public, b"message", &sig),
        SignatureInvalid
    );
    // PH(M) must have the hash's length.
    assert_rv!(s.sign(&m, private, &ph[1..]), DataLenRange);
    // Multi-part: CKR_OPERATION_NOT_INITIALIZED, and the operation ends (a
    // one-shot call after a new init works).
    s.sign_init(&m, private).unwrap();
    assert_rv!(s.sign_update(&ph), OperationNotInitialized);
    assert_rv!(s.sign_final(), OperationNotInitialized);
    s.sign(&m, private, &ph).unwrap();
    s.verify_init(&m, public).unwrap();
    assert_rv!(s.verify_update(&ph), OperationNotInitialized);
    assert_rv!(s.verify_final(&sig), OperationNotInitialized);
    // A hash FIPS 204 does not list (SHA-1) is a bad parameter.
    let sha1 = Mechanism::HashMlDsa(HashSignAdditionalContext::new(
        HedgeType::Preferred,
        None,
        cryptoki::mechanism::MechanismType::SHA1,
    ));
    assert_rv!(s.sign(&sha1, private, &[0; 20]), MechanismParamInvalid);
}

#[test]
fn every_token_hashed_mechanism_signs_and_verifies() {
    let f = Fixture::new();
    let s = f.user(f.token("hashes"));
    let (public, private) = generate(&s, MlDsaParameterSetType::ML_DSA_44, false);
    let p = |h| SignAdditionalContext::new(h, Some(b"x"));
    let all = |h| {
        [
            Mechanism::HashMlDsaSha224(p(h)),
            Mechanism::HashMlDsaSha256(p(h)),
            Mechanism::HashMlDsaSha384(p(h)),
            Mechanism::HashMlDsaSha512(p(h)),
            Mechanism::HashMlDsaSha3_224(p(h)),
            Mechanism::HashMlDsaSha3_256(p(h)),
            Mechanism::HashMlDsaSha3_384(p(h)),
            Mechanism::HashMlDsaSha3_512(p(h)),
            Mechanism::HashMlDsaShake128(p(h)),
            Mechanism::HashMlDsaShake256(p(h)),
        ]
    };
    let mut seen = Vec::new();
    for (m, d) in all(HedgeType::Preferred)
        .into_iter()
        .zip(all(HedgeType::DeterministicRequired))
    {
        let sig = s.sign(&m, private, b"payload").unwrap();
        s.verify(&d, public, b"payload", &sig).unwrap();
        s.verify_init(&d, public).unwrap();
        s.verify_update(b"pay").unwrap();
        s.verify_update(b"load").unwrap();
        s.verify_final(&sig).unwrap();
        let det = s.sign(&d, private, b"payload").unwrap();
        assert!(!seen.contains(&det), "two hashes gave one signature");
        seen.push(det);
    }
}
