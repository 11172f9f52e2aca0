//! Digests (`C_Digest*` with SHA-1 and SHA-2) and random numbers
//! (`C_GenerateRandom`) of the base spec, on the token of the Ed25519
//! tests.

use super::*;

#[test]
fn digests_and_random() {
    let f = Fixture::new();
    let slot = f.token("digest");
    let s = f.user(slot);
    let abc_sha256 = unhex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert_eq!(s.digest(&Mechanism::Sha256, b"abc").unwrap(), abc_sha256);
    s.digest_init(&Mechanism::Sha256).unwrap();
    s.digest_update(b"a").unwrap();
    s.digest_update(b"bc").unwrap();
    assert_eq!(s.digest_final().unwrap(), abc_sha256);
    for (m, len) in [
        (Mechanism::Sha1, 20),
        (Mechanism::Sha224, 28),
        (Mechanism::Sha384, 48),
        (Mechanism::Sha512, 64),
    ] {
        assert_eq!(s.digest(&m, b"x").unwrap().len(), len);
    }
    // C_DigestKey digests the value of a secret key that could be read
    // outright (extractable, not sensitive), and of no other.
    let secret = |sensitive: bool, extractable: bool| {
        s.create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Value(b"abc".to_vec()),
            Attribute::Sensitive(sensitive),
            Attribute::Extractable(extractable),
        ])
        .unwrap()
    };
    s.digest_init(&Mechanism::Sha256).unwrap();
    s.digest_key(secret(false, true)).unwrap();
    assert_eq!(s.digest_final().unwrap(), abc_sha256);
    for (sensitive, extractable) in [(true, true), (false, false), (true, false)] {
        s.digest_init(&Mechanism::Sha256).unwrap();
        assert_rv!(
            s.digest_key(secret(sensitive, extractable)),
            KeyIndigestible
        );
        assert_rv!(s.digest_final(), OperationNotInitialized);
    }
    // A key made with the token's defaults is sensitive: indigestible.
    let default_key = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Value(b"abc".to_vec()),
        ])
        .unwrap();
    s.digest_init(&Mechanism::Sha256).unwrap();
    assert_rv!(s.digest_key(default_key), KeyIndigestible);
    let (public, _) = generate(&s, false);
    s.digest_init(&Mechanism::Sha256).unwrap();
    assert_rv!(s.digest_key(public), KeyIndigestible);
    assert_rv!(s.digest_final(), OperationNotInitialized);
    // Raw conventions.
    let l = raw();
    let mut mech = CK_MECHANISM {
        mechanism: CKM_SHA256,
        pParameter: std::ptr::null_mut(),
        ulParameterLen: 0,
    };
    let mut out = [0u8; 32];
    let mut len: CK_ULONG = 31;
    let mut data = *b"abc";
    // SAFETY: valid local buffers.
    unsafe {
        assert_eq!(l.C_DigestInit.unwrap()(s.handle(), &mut mech), CKR_OK);
        assert_eq!(
            l.C_Digest.unwrap()(s.handle(), data.as_mut_ptr(), 3, out.as_mut_ptr(), &mut len),
            CKR_BUFFER_TOO_SMALL
        );
        assert_eq!(len, 32);
        assert_eq!(
            l.C_Digest.unwrap()(s.handle(), data.as_mut_ptr(), 3, out.as_mut_ptr(), &mut len),
            CKR_OK
        );
        assert_eq!(out.to_vec(), abc_sha256);
        let mut p = [1u8; 4];
        let mut with_param = CK_MECHANISM {
            mechanism: CKM_SHA256,
            pParameter: p.as_mut_ptr().cast(),
            ulParameterLen: 4,
        };
        assert_eq!(
            l.C_DigestInit.unwrap()(s.handle(), &mut with_param),
            CKR_MECHANISM_PARAM_INVALID
        );
        assert_eq!(
            l.C_GenerateRandom.unwrap()(s.handle(), std::ptr::null_mut(), 8),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            l.C_GenerateRandom.unwrap()(s.handle(), out.as_mut_ptr(), 0),
            CKR_OK
        );
    }
    let a = s.generate_random_vec(64).unwrap();
    let b = s.generate_random_vec(64).unwrap();
    assert_eq!(a.len(), 64);
    assert_ne!(a, b);
}
