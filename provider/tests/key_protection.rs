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
    // (RSA-2048 is as strong as a 112-bit key, so it wraps a 14-byte
    // secret, not the AES-256 target: docs/SECURITY.md, "Key-management
    // policy".)
    let small = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Value(vec![0x17; 14]),
            Attribute::Sensitive(true),
            Attribute::Extractable(true),
        ])
        .unwrap();
    let (public, _) = rsa(true);
    assert_rv!(
        s.wrap_key(&Mechanism::RsaPkcs, public, small),
        KeyNotWrappable
    );
    let (public, _) = rsa(false);
    s.wrap_key(&Mechanism::RsaPkcs, public, small).unwrap();
    assert_rv!(
        s.wrap_key(&Mechanism::RsaPkcs, public, target),
        KeyNotWrappable
    );
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

/// The one object labelled `label`.
fn by_label(s: &cryptoki::session::Session, label: &[u8]) -> cryptoki::object::ObjectHandle {
    let found = s.find_objects(&[Attribute::Label(label.to_vec())]).unwrap();
    assert_eq!(found.len(), 1, "{}", String::from_utf8_lossy(label));
    found[0]
}

/// A `CK_ATTRIBUTE` over a live byte buffer.
fn raw_attr(ty: cryptoki_sys::CK_ATTRIBUTE_TYPE, v: &mut [u8]) -> cryptoki_sys::CK_ATTRIBUTE {
    cryptoki_sys::CK_ATTRIBUTE {
        type_: ty,
        pValue: v.as_mut_ptr() as *mut std::ffi::c_void,
        ulValueLen: v.len() as cryptoki_sys::CK_ULONG,
    }
}

/// A nested-template attribute over a live `CK_ATTRIBUTE` array.
fn raw_template(
    ty: cryptoki_sys::CK_ATTRIBUTE_TYPE,
    inner: &mut [cryptoki_sys::CK_ATTRIBUTE],
) -> cryptoki_sys::CK_ATTRIBUTE {
    cryptoki_sys::CK_ATTRIBUTE {
        type_: ty,
        pValue: inner.as_mut_ptr() as *mut std::ffi::c_void,
        ulValueLen: std::mem::size_of_val(inner) as cryptoki_sys::CK_ULONG,
    }
}

/// `CKA_WRAP_TEMPLATE` / `CKA_UNWRAP_TEMPLATE` were accepted as opaque bytes
/// (the caller's structs, pointers included, even stored on disk), returned
/// that way and never enforced. They are parsed, kept, returned in the
/// spec's array form and enforced, as is `CKA_DERIVE_TEMPLATE`.
#[test]
fn wrap_unwrap_and_derive_templates_are_kept_returned_and_enforced() {
    use cryptoki::mechanism::Mechanism;
    use cryptoki_sys::*;
    let f = Fixture::new();
    let slot = f.token("templates");
    let s = f.user(slot);
    let l = raw();
    let h = s.handle();
    let (mut t, mut f_) = ([1u8], [0u8]);
    let mut aes = CKK_AES.to_ne_bytes();
    let mut len32 = (32 as CK_ULONG).to_ne_bytes();
    // Wrap only AES keys; whatever it unwraps is sensitive and unextractable.
    let mut wrap_t = [raw_attr(CKA_KEY_TYPE, &mut aes)];
    let (mut t2, mut f2) = ([1u8], [0u8]);
    let mut unwrap_t = [
        raw_attr(CKA_SENSITIVE, &mut t2),
        raw_attr(CKA_EXTRACTABLE, &mut f2),
    ];
    let mut label = *b"kek";
    let mut template = [
        raw_attr(CKA_LABEL, &mut label),
        raw_attr(CKA_VALUE_LEN, &mut len32),
        raw_attr(CKA_DECRYPT, &mut f_),
        raw_attr(CKA_WRAP, &mut t),
        raw_template(CKA_WRAP_TEMPLATE, &mut wrap_t),
        raw_template(CKA_UNWRAP_TEMPLATE, &mut unwrap_t),
    ];
    let mut mech = CK_MECHANISM {
        mechanism: CKM_AES_KEY_GEN,
        pParameter: std::ptr::null_mut(),
        ulParameterLen: 0,
    };
    let mut kek: CK_OBJECT_HANDLE = 0;
    // SAFETY: every pointer is to a live local of the stated length.
    let rv =
        unsafe { (l.C_GenerateKey.unwrap())(h, &mut mech, template.as_mut_ptr(), 6, &mut kek) };
    assert_eq!(rv, CKR_OK);
    let kek = by_label(&s, b"kek");

    // Read back in the spec's array form: size, then types and lengths,
    // then values.
    let mut outer = [CK_ATTRIBUTE {
        type_: CKA_UNWRAP_TEMPLATE,
        pValue: std::ptr::null_mut(),
        ulValueLen: 0,
    }];
    let get = |outer: &mut [CK_ATTRIBUTE; 1]| {
        // SAFETY: live locals of the stated lengths.
        unsafe { (l.C_GetAttributeValue.unwrap())(h, kek.handle(), outer.as_mut_ptr(), 1) }
    };
    assert_eq!(get(&mut outer), CKR_OK);
    assert_eq!(
        outer[0].ulValueLen as usize,
        2 * std::mem::size_of::<CK_ATTRIBUTE>()
    );
    let mut entries = [CK_ATTRIBUTE {
        type_: 0,
        pValue: std::ptr::null_mut(),
        ulValueLen: 0,
    }; 2];
    outer[0].pValue = entries.as_mut_ptr() as *mut std::ffi::c_void;
    assert_eq!(get(&mut outer), CKR_OK);
    let types: Vec<_> = entries.iter().map(|e| (e.type_, e.ulValueLen)).collect();
    assert_eq!(types, vec![(CKA_SENSITIVE, 1), (CKA_EXTRACTABLE, 1)]);
    let (mut b1, mut b2) = ([9u8], [9u8]);
    entries[0].pValue = b1.as_mut_ptr() as *mut std::ffi::c_void;
    entries[1].pValue = b2.as_mut_ptr() as *mut std::ffi::c_void;
    // The pointer taken after the writes, so the module sees them.
    outer[0].pValue = entries.as_mut_ptr() as *mut std::ffi::c_void;
    assert_eq!(get(&mut outer), CKR_OK);
    assert_eq!((b1[0], b2[0]), (1, 0));
    // Too small an outer array.
    outer[0].ulValueLen = std::mem::size_of::<CK_ATTRIBUTE>() as CK_ULONG;
    assert_eq!(get(&mut outer), CKR_BUFFER_TOO_SMALL);
    assert_eq!(outer[0].ulValueLen, CK_UNAVAILABLE_INFORMATION);

    // Wrap template: an AES key is wrappable, a generic secret is not.
    let target = |ty: KeyType| {
        s.create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(ty),
            Attribute::Value(vec![0x11; 32]),
            Attribute::Extractable(true),
            Attribute::Sensitive(true),
        ])
        .unwrap()
    };
    let blob = s
        .wrap_key(&Mechanism::AesKeyWrap, kek, target(KeyType::AES))
        .unwrap();
    assert_rv!(
        s.wrap_key(&Mechanism::AesKeyWrap, kek, target(KeyType::GENERIC_SECRET)),
        KeyNotWrappable
    );
    // Unwrap template: the unwrapped key is sensitive and unextractable,
    // and a caller asking otherwise is refused.
    let unwrap = |extra: &[Attribute]| {
        let mut t = vec![
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::AES),
        ];
        t.extend_from_slice(extra);
        s.unwrap_key(&Mechanism::AesKeyWrap, kek, &blob, &t)
    };
    let k = unwrap(&[]).unwrap();
    let flags = s
        .get_attributes(
            k,
            &[
                cryptoki::object::AttributeType::Sensitive,
                cryptoki::object::AttributeType::Extractable,
            ],
        )
        .unwrap();
    assert_eq!(
        flags,
        vec![Attribute::Sensitive(true), Attribute::Extractable(false)]
    );
    assert_rv!(unwrap(&[Attribute::Sensitive(false)]), TemplateInconsistent);
    assert_rv!(
        unwrap(&[Attribute::Extractable(true)]),
        TemplateInconsistent
    );
    unwrap(&[Attribute::Sensitive(true)]).unwrap();

    // A template inside a template, or a length that is not whole entries.
    let mut inner = [raw_template(CKA_WRAP_TEMPLATE, &mut wrap_t)];
    let mut bad = [
        raw_attr(CKA_VALUE_LEN, &mut len32),
        raw_template(CKA_UNWRAP_TEMPLATE, &mut inner),
    ];
    let mut k2: CK_OBJECT_HANDLE = 0;
    // SAFETY: live locals.
    let rv = unsafe { (l.C_GenerateKey.unwrap())(h, &mut mech, bad.as_mut_ptr(), 2, &mut k2) };
    assert_eq!(rv, CKR_ATTRIBUTE_VALUE_INVALID);
    let mut ragged = [
        raw_attr(CKA_VALUE_LEN, &mut len32),
        raw_template(CKA_WRAP_TEMPLATE, &mut wrap_t),
    ];
    ragged[1].ulValueLen -= 1;
    // SAFETY: live locals (the module refuses the length before reading).
    let rv = unsafe { (l.C_GenerateKey.unwrap())(h, &mut mech, ragged.as_mut_ptr(), 2, &mut k2) };
    assert_eq!(rv, CKR_ATTRIBUTE_VALUE_INVALID);
}

/// `CKA_DERIVE_TEMPLATE` on an ECDH key binds what derived keys may be.
#[test]
fn derive_template_binds_derived_keys() {
    use cryptoki::mechanism::Mechanism;
    use cryptoki::mechanism::elliptic_curve::{EcKdf, Ecdh1DeriveParams};
    use cryptoki::object::AttributeType;
    use cryptoki_sys::*;
    let f = Fixture::new();
    let slot = f.token("derive-template");
    let s = f.user(slot);
    let l = raw();
    let mut p256 = vec![0x06u8, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
    let (mut t, mut t2) = ([1u8], [1u8]);
    let mut derive_t = [raw_attr(CKA_SENSITIVE, &mut t2)];
    let (mut pub_label, mut priv_label) = (*b"ecdh-public", *b"ecdh-private");
    let mut public = [
        raw_attr(CKA_EC_PARAMS, &mut p256),
        raw_attr(CKA_LABEL, &mut pub_label),
    ];
    let mut private = [
        raw_attr(CKA_LABEL, &mut priv_label),
        raw_attr(CKA_DERIVE, &mut t),
        raw_template(CKA_DERIVE_TEMPLATE, &mut derive_t),
    ];
    let mut mech = CK_MECHANISM {
        mechanism: CKM_EC_KEY_PAIR_GEN,
        pParameter: std::ptr::null_mut(),
        ulParameterLen: 0,
    };
    let (mut pub_h, mut priv_h) = (0, 0);
    // SAFETY: live locals of the stated lengths.
    let rv = unsafe {
        (l.C_GenerateKeyPair.unwrap())(
            s.handle(),
            &mut mech,
            public.as_mut_ptr(),
            2,
            private.as_mut_ptr(),
            3,
            &mut pub_h,
            &mut priv_h,
        )
    };
    assert_eq!(rv, CKR_OK);
    let point = match s
        .get_attributes(by_label(&s, b"ecdh-public"), &[AttributeType::EcPoint])
        .unwrap()
        .pop()
    {
        Some(Attribute::EcPoint(p)) => p,
        other => panic!("{other:?}"),
    };
    let derive = |extra: &[Attribute]| {
        let mut t = vec![
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
        ];
        t.extend_from_slice(extra);
        s.derive_key(
            &Mechanism::Ecdh1Derive(Ecdh1DeriveParams::new(EcKdf::null(), &point)),
            by_label(&s, b"ecdh-private"),
            &t,
        )
    };
    let k = derive(&[]).unwrap();
    assert_eq!(
        s.get_attributes(k, &[AttributeType::Sensitive]).unwrap(),
        vec![Attribute::Sensitive(true)]
    );
    assert_rv!(derive(&[Attribute::Sensitive(false)]), TemplateInconsistent);
}
