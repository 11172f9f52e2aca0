//! SLH-DSA signatures through `C_Sign*` / `C_Verify*`: hedged and
//! deterministic, contexts, multi-part, corrupted signatures, and the
//! HashSLH-DSA mechanisms (pre-hashed input single-part only).

use super::*;
use sha2::Digest;

#[test]
fn hedged_signatures_differ_and_deterministic_ones_repeat() {
    let f = Fixture::new();
    let s = f.user(f.token("hedge"));
    let (public, private) = generate(&s, Set::SHAKE_128F, false);
    let ctx = [0xee; 33];
    for hedge in [HedgeType::Preferred, HedgeType::Required] {
        let m = slh_dsa(hedge, Some(&ctx));
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
    let none = Mechanism::SlhDsa(SignAdditionalContext::new(HedgeType::Preferred, None));
    let n = s.sign(&none, private, b"data").unwrap();
    s.verify(&deterministic(b""), public, b"data", &n).unwrap();
    assert_ne!(n, s.sign(&none, private, b"data").unwrap());
}

#[test]
fn wrong_context_data_or_signature_is_rejected() {
    let f = Fixture::new();
    let s = f.user(f.token("reject"));
    let (public, private) = generate(&s, Set::SHA2_128S, false);
    let m = deterministic(b"right");
    let sig = s.sign(&m, private, b"data").unwrap();
    assert_eq!(sig.len(), 7856);
    assert_rv!(
        s.verify(&deterministic(b"wrong"), public, b"data", &sig),
        SignatureInvalid
    );
    assert_rv!(
        s.verify(&deterministic(b""), public, b"data", &sig),
        SignatureInvalid
    );
    assert_rv!(s.verify(&m, public, b"datA", &sig), SignatureInvalid);
    for i in [0, 16, 3000, sig.len() - 1] {
        let mut bad = sig.clone();
        bad[i] ^= 0x01;
        assert_rv!(s.verify(&m, public, b"data", &bad), SignatureInvalid);
    }
    assert_rv!(
        s.verify(&m, public, b"data", &sig[..sig.len() - 1]),
        SignatureLenRange
    );
    assert_rv!(
        s.verify(&m, public, b"data", &[sig.clone(), vec![0]].concat()),
        SignatureLenRange
    );
    // A context over 255 bytes is a bad parameter; 255 bytes are fine.
    assert_rv!(
        s.sign(&deterministic(&[0u8; 256]), private, b"x"),
        MechanismParamInvalid
    );
    let (public, private) = generate(&s, Set::SHAKE_128F, false);
    let long = deterministic(&[7u8; 255]);
    let sig = s.sign(&long, private, b"x").unwrap();
    s.verify(&long, public, b"x", &sig).unwrap();
    // A key of another set does not verify it.
    let (other, _) = generate(&s, Set::SHA2_128F, false);
    assert_rv!(s.verify(&long, other, b"x", &sig), SignatureInvalid);
}

#[test]
fn multipart_equals_single_part() {
    let f = Fixture::new();
    let s = f.user(f.token("multi"));
    let (public, private) = generate(&s, Set::SHA2_256F, false);
    let m = deterministic(b"c");
    let whole = s.sign(&m, private, b"hello world").unwrap();
    s.sign_init(&m, private).unwrap();
    s.sign_update(b"hello ").unwrap();
    s.sign_update(b"").unwrap();
    s.sign_update(b"world").unwrap();
    assert_eq!(s.sign_final().unwrap(), whole);
    s.verify_init(&m, public).unwrap();
    s.verify_update(b"hello").unwrap();
    s.verify_update(b" world").unwrap();
    s.verify_final(&whole).unwrap();
    s.verify_init(&m, public).unwrap();
    s.verify_update(b"hello").unwrap();
    assert_rv!(s.verify_final(&whole), SignatureInvalid);
    // A larger message in many parts.
    let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
    let whole = s.sign(&m, private, &data).unwrap();
    s.sign_init(&m, private).unwrap();
    for part in data.chunks(4099) {
        s.sign_update(part).unwrap();
    }
    assert_eq!(s.sign_final().unwrap(), whole);
}

#[test]
fn hash_slh_dsa_takes_the_prehash_single_part_only() {
    let f = Fixture::new();
    let s = f.user(f.token("prehash"));
    let (public, private) = generate(&s, Set::SHAKE_128F, false);
    let ph = sha2::Sha384::digest(b"message").to_vec();
    let m = Mechanism::HashSlhDsa(HashSignAdditionalContext::new(
        HedgeType::DeterministicRequired,
        Some(b"ctx"),
        cryptoki::mechanism::MechanismType::SHA384,
    ));
    let sig = s.sign(&m, private, &ph).unwrap();
    s.verify(&m, public, &ph, &sig).unwrap();
    // The token-hashed mechanism gives the same signature over the message.
    let internal = Mechanism::HashSlhDsaSha384(SignAdditionalContext::new(
        HedgeType::DeterministicRequired,
        Some(b"ctx"),
    ));
    assert_eq!(s.sign(&internal, private, b"message").unwrap(), sig);
    s.sign_init(&internal, private).unwrap();
    s.sign_update(b"mess").unwrap();
    s.sign_update(b"age").unwrap();
    assert_eq!(s.sign_final().unwrap(), sig);
    // Not a signature of pure SLH-DSA, nor under another context.
    assert_rv!(
        s.verify(&deterministic(b"ctx"), public, b"message", &sig),
        SignatureInvalid
    );
    let other_ctx = Mechanism::HashSlhDsaSha384(SignAdditionalContext::new(
        HedgeType::DeterministicRequired,
        Some(b"ctX"),
    ));
    assert_rv!(
        s.verify(&other_ctx, public, b"message", &sig),
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
    // A hash FIPS 205 does not allow (SHA-1) is a bad parameter, as is the
    // pure mechanism's parameter structure.
    let sha1 = Mechanism::HashSlhDsa(HashSignAdditionalContext::new(
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
    let (public, private) = generate(&s, Set::SHA2_128F, false);
    let p = |h| SignAdditionalContext::new(h, Some(b"x"));
    let all = |h| {
        [
            Mechanism::HashSlhDsaSha224(p(h)),
            Mechanism::HashSlhDsaSha256(p(h)),
            Mechanism::HashSlhDsaSha384(p(h)),
            Mechanism::HashSlhDsaSha512(p(h)),
            Mechanism::HashSlhDsaSha3_224(p(h)),
            Mechanism::HashSlhDsaSha3_256(p(h)),
            Mechanism::HashSlhDsaSha3_384(p(h)),
            Mechanism::HashSlhDsaSha3_512(p(h)),
            Mechanism::HashSlhDsaShake128(p(h)),
            Mechanism::HashSlhDsaShake256(p(h)),
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

#[test]
fn mechanism_info_reports_the_strength_range() {
    let f = Fixture::new();
    let slot = f.token("info");
    use cryptoki::mechanism::MechanismType as T;
    for ty in [
        T::SLH_DSA_KEY_PAIR_GEN,
        T::SLH_DSA,
        T::HASH_SLH_DSA,
        T::HASH_SLH_DSA_SHAKE256,
    ] {
        let info = f.p().get_mechanism_info(slot, ty).unwrap();
        assert_eq!(
            (info.min_key_size(), info.max_key_size()),
            (128, 256),
            "{ty}"
        );
    }
    let info = f.p().get_mechanism_info(slot, T::SLH_DSA).unwrap();
    assert!(info.sign() && info.verify() && !info.generate_key_pair());
    let info = f
        .p()
        .get_mechanism_info(slot, T::SLH_DSA_KEY_PAIR_GEN)
        .unwrap();
    assert!(info.generate_key_pair() && !info.sign());
}
