//! Key protection holds against a caller with a session: sensitive values
//! never leak through side doors of the API (searches, digests, wrapping
//! templates, re-authentication).

mod common;

use common::*;
use cryptoki::object::{Attribute, KeyType, ObjectClass};

/// `C_FindObjects` with `CKA_VALUE` in the template was an equality oracle
/// on sensitive values of session and public objects: a guess that matched
/// returned the key's handle. A sensitive value takes no part in matching.
#[test]
fn searches_never_match_on_sensitive_values() {
    let f = Fixture::new();
    let slot = f.token("find-oracle");
    let s = f.user(slot);
    let value = vec![0x42u8; 32];
    let secret = |sensitive: bool, extractable: bool, token: bool, private: bool| {
        s.create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::AES),
            Attribute::Value(value.clone()),
            Attribute::Sensitive(sensitive),
            Attribute::Extractable(extractable),
            Attribute::Token(token),
            Attribute::Private(private),
            Attribute::Label(format!("k-{sensitive}-{extractable}-{token}-{private}").into()),
        ])
        .unwrap()
    };
    let by_value = |v: &[u8]| {
        s.find_objects(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::Value(v.to_vec()),
        ])
        .unwrap()
    };
    for token in [false, true] {
        for private in [false, true] {
            secret(true, true, token, private);
            secret(false, false, token, private);
        }
    }
    // Neither the right guess nor a wrong one finds a sensitive or
    // unextractable key (before the fix the right guess found the session
    // and public ones).
    assert!(by_value(&value).is_empty(), "{:?}", by_value(&value));
    assert!(by_value(&[0x43; 32]).is_empty());
    // A value the caller may read anyway still matches (session and public
    // objects; private token objects keep theirs sealed and never match).
    let readable = secret(false, true, false, false);
    assert_eq!(by_value(&value), vec![readable]);
    // Other attributes of the protected keys still match.
    let all = s
        .find_objects(&[Attribute::Class(ObjectClass::SECRET_KEY)])
        .unwrap();
    assert_eq!(all.len(), 9);
}

/// `CKA_ALWAYS_AUTHENTICATE` was accepted and never enforced: a key that
/// needs the PIN for every use signed twice without it. Each signature or
/// decryption now needs its own `C_Login(CKU_CONTEXT_SPECIFIC)`.
#[test]
fn always_authenticate_needs_the_pin_for_every_use() {
    use cryptoki::mechanism::Mechanism;
    use cryptoki::session::UserType;
    use cryptoki_sys::*;
    let f = Fixture::new();
    let slot = f.token("always-auth");
    let s = f.user(slot);
    const P256: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
    let pair = |always: bool| {
        s.generate_key_pair(
            &Mechanism::EccKeyPairGen,
            &[Attribute::EcParams(P256.to_vec())],
            &[
                Attribute::Sign(true),
                Attribute::Derive(true),
                Attribute::AlwaysAuthenticate(always),
            ],
        )
        .unwrap()
    };
    let (_, key) = pair(true);
    let l = raw();
    let h = s.handle();
    let c_sign = || {
        let mut sig = [0u8; 64];
        let mut len = sig.len() as CK_ULONG;
        let data = [7u8; 32];
        // SAFETY: live buffers of the stated lengths.
        unsafe { (l.C_Sign.unwrap())(h, data.as_ptr() as *mut u8, 32, sig.as_mut_ptr(), &mut len) }
    };
    let context = |p: &str| s.login(UserType::ContextSpecific, Some(&pin(p)));
    // Without the context login: refused, and the operation is over.
    s.sign_init(&Mechanism::Ecdsa, key).unwrap();
    assert_eq!(c_sign(), CKR_USER_NOT_LOGGED_IN);
    assert_eq!(c_sign(), CKR_OPERATION_NOT_INITIALIZED);
    // A wrong PIN leaves it waiting; the right one lets exactly one
    // signature through.
    s.sign_init(&Mechanism::Ecdsa, key).unwrap();
    assert_rv!(context("0000"), PinIncorrect);
    context(USER_PIN).unwrap();
    assert_eq!(c_sign(), CKR_OK);
    s.sign_init(&Mechanism::Ecdsa, key).unwrap();
    assert_eq!(c_sign(), CKR_USER_NOT_LOGGED_IN, "the login was used up");
    // Multi-part: one login covers the whole operation.
    s.sign_init(&Mechanism::EcdsaSha256, key).unwrap();
    assert_rv!(s.sign_update(b"part"), UserNotLoggedIn);
    s.sign_init(&Mechanism::EcdsaSha256, key).unwrap();
    context(USER_PIN).unwrap();
    s.sign_update(b"part one").unwrap();
    s.sign_update(b"part two").unwrap();
    s.sign_final().unwrap();
    // No operation awaits a context login: refused as the spec says.
    assert_rv!(context(USER_PIN), OperationNotInitialized);
    let (_, plain) = pair(false);
    s.sign_init(&Mechanism::Ecdsa, plain).unwrap();
    assert_rv!(context(USER_PIN), OperationNotInitialized);
    assert_eq!(c_sign(), CKR_OK);
    // Single-call uses cannot be preceded by a context login: refused.
    let (peer, _) = pair(false);
    let point = match s
        .get_attributes(peer, &[cryptoki::object::AttributeType::EcPoint])
        .unwrap()
        .pop()
    {
        Some(Attribute::EcPoint(p)) => p,
        other => panic!("{other:?}"),
    };
    let ecdh = cryptoki::mechanism::elliptic_curve::Ecdh1DeriveParams::new(
        cryptoki::mechanism::elliptic_curve::EcKdf::null(),
        &point,
    );
    let template = [
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::GENERIC_SECRET),
    ];
    assert_rv!(
        s.derive_key(&Mechanism::Ecdh1Derive(ecdh), key, &template),
        KeyFunctionNotPermitted
    );
    let (_, plain2) = pair(false);
    s.derive_key(&Mechanism::Ecdh1Derive(ecdh), plain2, &template)
        .unwrap();
}

/// Decryption with an always-authenticate RSA key, through the same gate.
#[test]
fn always_authenticate_covers_decryption() {
    use cryptoki::mechanism::Mechanism;
    use cryptoki::session::UserType;
    let f = Fixture::new();
    let slot = f.token("always-auth-rsa");
    let s = f.user(slot);
    let (public, private) = s
        .generate_key_pair(
            &Mechanism::RsaPkcsKeyPairGen,
            &[
                Attribute::ModulusBits(2048.into()),
                Attribute::Encrypt(true),
            ],
            &[
                Attribute::Decrypt(true),
                Attribute::AlwaysAuthenticate(true),
            ],
        )
        .unwrap();
    let ct = s
        .encrypt(&Mechanism::RsaPkcs, public, b"secret message")
        .unwrap();
    // cryptoki's decrypt is C_DecryptInit + C_Decrypt: no room for the login.
    assert_rv!(
        s.decrypt(&Mechanism::RsaPkcs, private, &ct),
        UserNotLoggedIn
    );
    let l = raw();
    let c_decrypt = || {
        let mut out = [0u8; 256];
        let mut len = out.len() as cryptoki_sys::CK_ULONG;
        // SAFETY: live buffers of the stated lengths.
        let rv = unsafe {
            (l.C_Decrypt.unwrap())(
                s.handle(),
                ct.as_ptr() as *mut u8,
                ct.len() as cryptoki_sys::CK_ULONG,
                out.as_mut_ptr(),
                &mut len,
            )
        };
        (rv, out[..len as usize].to_vec())
    };
    s.decrypt_init(&Mechanism::RsaPkcs, private).unwrap();
    s.login(UserType::ContextSpecific, Some(&pin(USER_PIN)))
        .unwrap();
    assert_eq!(
        c_decrypt(),
        (cryptoki_sys::CKR_OK, b"secret message".to_vec())
    );
    s.decrypt_init(&Mechanism::RsaPkcs, private).unwrap();
    assert_eq!(c_decrypt().0, cryptoki_sys::CKR_USER_NOT_LOGGED_IN);
    // Encryption with the public key needs nothing.
    s.encrypt(&Mechanism::RsaPkcs, public, b"x").unwrap();
}

/// An extractable AES key holding `value`.
fn extractable_aes(
    s: &cryptoki::session::Session,
    value: &[u8],
    sensitive: bool,
) -> cryptoki::object::ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::AES),
        Attribute::Value(value.to_vec()),
        Attribute::Sensitive(sensitive),
        Attribute::Extractable(true),
    ])
    .unwrap()
}

/// Wrap-then-decrypt revealed a sensitive key: a key allowed both to wrap
/// and to decrypt wrapped it with `CKM_AES_KEY_WRAP` and `C_Decrypt` gave
/// its value. Key-wrap separation (on by default): a sensitive key is never
/// wrapped under a key whose value can decrypt on this token, and
/// `CKA_DECRYPT` never turns on later.
#[test]
fn wrap_then_decrypt_cannot_reveal_a_sensitive_key() {
    use cryptoki::mechanism::Mechanism;
    let mut f = Fixture::new();
    let slot = f.token("wrap-sep");
    let s = f.user(slot);
    let value = vec![0x5cu8; 32];
    let target = extractable_aes(&s, &value, true);
    let kek = |decrypt: bool| {
        s.generate_key(
            &Mechanism::AesKeyGen,
            &[
                Attribute::ValueLen(32.into()),
                Attribute::Wrap(true),
                Attribute::Unwrap(true),
                Attribute::Decrypt(decrypt),
            ],
        )
        .unwrap()
    };
    // A key-encryption key that decrypts (the token's default): refused.
    let both = kek(true);
    assert_rv!(
        s.wrap_key(&Mechanism::AesKeyWrap, both, target),
        KeyNotWrappable
    );
    // One that cannot: allowed, and it never gains decryption.
    let wrap_only = kek(false);
    let blob = s
        .wrap_key(&Mechanism::AesKeyWrap, wrap_only, target)
        .unwrap();
    assert_rv!(
        s.update_attributes(wrap_only, &[Attribute::Decrypt(true)]),
        AttributeReadOnly
    );
    assert_rv!(
        s.copy_object(wrap_only, &[Attribute::Decrypt(true)]),
        AttributeReadOnly
    );
    assert_rv!(
        s.decrypt(&Mechanism::AesKeyWrap, wrap_only, &blob),
        KeyFunctionNotPermitted
    );
    // A copy that cannot decrypt does not help while its original can.
    let twin = s.copy_object(both, &[Attribute::Decrypt(false)]).unwrap();
    assert_rv!(
        s.wrap_key(&Mechanism::AesKeyWrap, twin, target),
        KeyNotWrappable
    );
    // RSA: the public key wraps, its private half would decrypt.
    let rsa = |decrypt: bool| {
        s.generate_key_pair(
            &Mechanism::RsaPkcsKeyPairGen,
            &[Attribute::ModulusBits(2048.into()), Attribute::Wrap(true)],
            &[Attribute::Decrypt(decrypt), Attribute::Unwrap(true)],
        )
        .unwrap()
    };
    let (public, _) = rsa(true);
    assert_rv!(
        s.wrap_key(&Mechanism::RsaPkcs, public, target),
        KeyNotWrappable
    );
    let (public, _) = rsa(false);
    s.wrap_key(&Mechanism::RsaPkcs, public, target).unwrap();
    // A key that is not sensitive may be wrapped under anything.
    let open = extractable_aes(&s, &value, false);
    let blob = s.wrap_key(&Mechanism::AesKeyWrap, both, open).unwrap();
    assert_eq!(
        s.decrypt(&Mechanism::AesKeyWrap, both, &blob).unwrap(),
        value
    );
    drop(s);

    // With the policy turned off, the spec's full flexibility (and risk).
    let conf = f.dir.path().join("conf.toml");
    std::fs::write(&conf, "wrap_separation = false\n").unwrap();
    // SAFETY: tests of this binary are serialised by the fixture's lock.
    unsafe { std::env::set_var("DALEK_PKCS11_CONFIG", &conf) };
    f.restart();
    unsafe { std::env::remove_var("DALEK_PKCS11_CONFIG") };
    let s = f.user(slot);
    let both = s
        .generate_key(
            &Mechanism::AesKeyGen,
            &[Attribute::ValueLen(32.into()), Attribute::Wrap(true)],
        )
        .unwrap();
    let target = extractable_aes(&s, &value, true);
    let blob = s.wrap_key(&Mechanism::AesKeyWrap, both, target).unwrap();
    assert_eq!(
        s.decrypt(&Mechanism::AesKeyWrap, both, &blob).unwrap(),
        value
    );
}
