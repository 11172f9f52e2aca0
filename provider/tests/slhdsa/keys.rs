//! SLH-DSA key objects: generation for every parameter set with its
//! attributes and sensitivity, the parameter-set template rules, import
//! with its PK.root check and length checks, usage flags, persistence and
//! wrapping.

use super::*;
use cryptoki::object::ParameterSetType;
use cryptoki::types::Ulong;

/// The sets tests sign with: the fast ones and the 128-bit small ones (the
/// 192/256-bit small sets take seconds per signature).
fn quick(set: Set) -> bool {
    let ckp = CK_ULONG::from(set);
    ckp <= CKP_SLH_DSA_SHAKE_128F
        || [
            CKP_SLH_DSA_SHA2_192F,
            CKP_SLH_DSA_SHAKE_192F,
            CKP_SLH_DSA_SHA2_256F,
            CKP_SLH_DSA_SHAKE_256F,
        ]
        .contains(&ckp)
}

#[test]
fn generated_keys_carry_their_parameter_set_spki_and_hidden_secrets() {
    let f = Fixture::new();
    let s = f.user(f.token("gen"));
    for (set, n, sig_len) in SETS {
        let (public, private) = generate(&s, set, false);
        let ckp = CK_ULONG::from(set);
        assert_eq!(parameter_set_of(&s, public), ckp);
        assert_eq!(parameter_set_of(&s, private), ckp);
        let pk = bytes_of(&s, public, AttributeType::Value);
        assert_eq!(pk.len(), 2 * n);
        // SPKI (RFC 9909): SEQUENCE { AlgorithmIdentifier { id-slh-dsa-* },
        // BIT STRING pk }, on both keys.
        let info = bytes_of(&s, public, AttributeType::PublicKeyInfo);
        assert_eq!(bytes_of(&s, private, AttributeType::PublicKeyInfo), info);
        assert_eq!(info.len(), 2 * n + 18);
        let arc = info[14];
        assert!((20..=31).contains(&arc), "{arc}");
        assert_eq!(
            info[2..14],
            [
                0x30, 0x0b, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x03
            ][..]
        );
        assert!(info.ends_with(&pk));
        // CKA_VALUE of the (sensitive) private key stays inside.
        assert!(
            s.get_attributes(private, &[AttributeType::Value])
                .unwrap()
                .is_empty()
        );
        if quick(set) {
            let sig = s.sign(&deterministic(b""), private, b"m").unwrap();
            assert_eq!(sig.len(), sig_len);
            s.verify(&deterministic(b""), public, b"m", &sig).unwrap();
        }
    }
}

#[test]
fn generation_needs_a_known_parameter_set_in_the_public_template() {
    let f = Fixture::new();
    let s = f.user(f.token("params"));
    let gen_with = |public: &[Attribute], private: &[Attribute]| {
        s.generate_key_pair(&Mechanism::SlhDsaKeyPairGen, public, private)
    };
    assert_rv!(gen_with(&[], &[]), TemplateIncomplete);
    let unknown = Attribute::ParameterSet(ParameterSetType::try_from(Ulong::from(13)).unwrap());
    // CKR_PARAMETER_SET_NOT_SUPPORTED: cryptoki 0.12 has no name for it.
    assert_eq!(
        gen_with(&[unknown], &[]).map_err(rv_of).unwrap_err(),
        cryptoki::error::RvError::UnknownErrorCode(CKR_PARAMETER_SET_NOT_SUPPORTED)
    );
    let a = Attribute::ParameterSet(Set::SHAKE_128F.into());
    let b = Attribute::ParameterSet(Set::SHA2_128F.into());
    // The same set in the private template is fine; another one is not.
    let one = std::slice::from_ref(&a);
    let (_, private) = gen_with(one, one).unwrap();
    assert_eq!(parameter_set_of(&s, private), CKP_SLH_DSA_SHAKE_128F);
    assert_rv!(gen_with(&[a], &[b]), TemplateInconsistent);
}

#[test]
fn import_checks_lengths_and_pk_root() {
    let f = Fixture::new();
    let s = f.user(f.token("import"));
    for (set, n, _) in SETS {
        let zeros = s
            .create_object(&[
                Attribute::Class(ObjectClass::PRIVATE_KEY),
                Attribute::KeyType(KeyType::SLH_DSA),
                Attribute::ParameterSet(set.into()),
                Attribute::Value(vec![0; 4 * n]),
            ])
            .map(|_| ())
            .map_err(rv_of);
        // All zeros: PK.root 0 is not what the zero seeds give.
        assert_eq!(zeros, Err(cryptoki::error::RvError::AttributeValueInvalid));
    }
    // A readable key's value imports again; a changed PK.root, or seeds
    // that do not give it, are refused.
    let set = Set::SHA2_128F;
    let (public, private) = s
        .generate_key_pair(
            &Mechanism::SlhDsaKeyPairGen,
            &[Attribute::ParameterSet(set.into()), Attribute::Verify(true)],
            &[
                Attribute::Sign(true),
                Attribute::Sensitive(false),
                Attribute::Extractable(true),
            ],
        )
        .unwrap();
    let value = bytes_of(&s, private, AttributeType::Value);
    let pk = bytes_of(&s, public, AttributeType::Value);
    assert_eq!((value.len(), &value[32..]), (64, &pk[..]));
    let copy = import_private(&s, set, &value).unwrap();
    let m = deterministic(b"c");
    let sig = s.sign(&m, private, b"data").unwrap();
    assert_eq!(s.sign(&m, copy, b"data").unwrap(), sig);
    for i in [0, 16, 32, 63] {
        let mut bad = value.clone();
        bad[i] ^= 0x80;
        let r = import_private(&s, set, &bad).map_err(rv_of);
        if i == 16 {
            // SK.prf does not enter PK.root: a different, valid key.
            assert!(r.is_ok());
        } else {
            assert_eq!(
                r,
                Err(cryptoki::error::RvError::AttributeValueInvalid),
                "{i}"
            );
        }
    }
    assert_rv!(import_private(&s, set, &value[..63]), AttributeValueInvalid);
    assert_rv!(
        import_private(&s, set, &[value.clone(), vec![0]].concat()),
        AttributeValueInvalid
    );
    // The value of another set's length.
    assert_rv!(
        import_private(&s, Set::SHA2_192F, &value),
        AttributeValueInvalid
    );
    assert_rv!(import_public(&s, set, &pk[..31]), AttributeValueInvalid);
    assert_rv!(
        import_public(&s, set, &[pk.clone(), pk.clone()].concat()),
        AttributeValueInvalid
    );
    let again = import_public(&s, set, &pk).unwrap();
    s.verify(&m, again, b"data", &sig).unwrap();
    let no_set = s.create_object(&[
        Attribute::Class(ObjectClass::PRIVATE_KEY),
        Attribute::KeyType(KeyType::SLH_DSA),
        Attribute::Value(value.clone()),
    ]);
    assert_rv!(no_set, TemplateIncomplete);
    let no_value = s.create_object(&[
        Attribute::Class(ObjectClass::PRIVATE_KEY),
        Attribute::KeyType(KeyType::SLH_DSA),
        Attribute::ParameterSet(set.into()),
    ]);
    assert_rv!(no_value, TemplateIncomplete);
}

#[test]
fn usage_flags_are_enforced() {
    let f = Fixture::new();
    let s = f.user(f.token("usage"));
    let (public, private) = generate(&s, Set::SHAKE_128F, false);
    // A private key does not verify, a public one does not sign (neither
    // has the usage flag).
    assert_rv!(
        s.sign(&deterministic(b""), public, b"x"),
        KeyFunctionNotPermitted
    );
    let sig = s.sign(&deterministic(b""), private, b"x").unwrap();
    assert_rv!(
        s.verify(&deterministic(b""), private, b"x", &sig),
        KeyFunctionNotPermitted
    );
    let no_sign = s
        .generate_key_pair(
            &Mechanism::SlhDsaKeyPairGen,
            &[Attribute::ParameterSet(Set::SHAKE_128F.into())],
            &[Attribute::Sign(false)],
        )
        .unwrap()
        .1;
    assert_rv!(
        s.sign(&deterministic(b""), no_sign, b"x"),
        KeyFunctionNotPermitted
    );
}

#[test]
fn token_keys_persist_across_a_restart() {
    let mut f = Fixture::new();
    let slot = f.token("persist");
    let m = deterministic(b"persist");
    let sig = {
        let s = f.user(slot);
        let (_, private) = generate(&s, Set::SHA2_192F, true);
        s.sign(&m, private, b"msg").unwrap()
    };
    f.restart();
    let s = f.user(slot);
    let find = |class| {
        s.find_objects(&[
            Attribute::Class(class),
            Attribute::Label(b"slhdsa".to_vec()),
        ])
        .unwrap()
    };
    let (private, public) = (
        find(ObjectClass::PRIVATE_KEY),
        find(ObjectClass::PUBLIC_KEY),
    );
    assert_eq!((private.len(), public.len()), (1, 1));
    assert_eq!(parameter_set_of(&s, private[0]), CKP_SLH_DSA_SHA2_192F);
    assert_eq!(s.sign(&m, private[0], b"msg").unwrap(), sig);
    s.verify(&m, public[0], b"msg", &sig).unwrap();
}

#[test]
fn wrap_and_unwrap_carry_the_private_key() {
    let f = Fixture::new();
    let s = f.user(f.token("wrap"));
    let aes = s
        .generate_key(
            &Mechanism::AesKeyGen,
            &[
                Attribute::ValueLen(32.into()),
                Attribute::Wrap(true),
                Attribute::Unwrap(true),
                // Wrap separation: a wrapping key does not decrypt.
                Attribute::Encrypt(false),
                Attribute::Decrypt(false),
            ],
        )
        .unwrap();
    for (set, n, _) in [SETS[3], SETS[11]] {
        let (public, target) = s
            .generate_key_pair(
                &Mechanism::SlhDsaKeyPairGen,
                &[Attribute::ParameterSet(set.into()), Attribute::Verify(true)],
                &[Attribute::Sign(true), Attribute::Extractable(true)],
            )
            .unwrap();
        let wrapped = s.wrap_key(&Mechanism::AesKeyWrapPad, aes, target).unwrap();
        // PKCS#8 (RFC 9909): 20 or 21 bytes around the 4n-byte key, padded
        // to 8 bytes, plus the 8-byte RFC 5649 block.
        let der = 4 * n + if n == 32 { 21 } else { 20 };
        assert_eq!(wrapped.len(), der.div_ceil(8) * 8 + 8, "{set}");
        let back = s
            .unwrap_key(
                &Mechanism::AesKeyWrapPad,
                aes,
                &wrapped,
                &[
                    Attribute::Class(ObjectClass::PRIVATE_KEY),
                    Attribute::KeyType(KeyType::SLH_DSA),
                    Attribute::Sign(true),
                ],
            )
            .unwrap();
        assert_eq!(parameter_set_of(&s, back), CK_ULONG::from(set));
        let m = deterministic(b"");
        let sig = s.sign(&m, back, b"w").unwrap();
        assert_eq!(sig, s.sign(&m, target, b"w").unwrap());
        s.verify(&m, public, b"w", &sig).unwrap();
        // The template's parameter set must be the wrapped key's.
        let other = s.unwrap_key(
            &Mechanism::AesKeyWrapPad,
            aes,
            &wrapped,
            &[
                Attribute::Class(ObjectClass::PRIVATE_KEY),
                Attribute::KeyType(KeyType::SLH_DSA),
                Attribute::ParameterSet(Set::SHA2_128S.into()),
            ],
        );
        assert_rv!(other, TemplateInconsistent);
    }
    // A non-extractable key does not leave.
    let (_, kept) = generate(&s, Set::SHAKE_128F, false);
    assert_rv!(
        s.wrap_key(&Mechanism::AesKeyWrapPad, aes, kept),
        KeyUnextractable
    );
}

/// Every byte of the token files under the fixture's directory.
fn token_file_bytes(dir: &std::path::Path) -> Vec<u8> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(token_file_bytes(&path));
        } else {
            out.extend(std::fs::read(&path).unwrap());
        }
    }
    out
}

#[test]
fn the_private_value_is_sealed_at_rest() {
    let mut f = Fixture::new();
    let slot = f.token("sealed");
    let value = {
        let s = f.user(slot);
        // A readable session key shows the value the token object must not
        // store in the clear.
        let (_, readable) = s
            .generate_key_pair(
                &Mechanism::SlhDsaKeyPairGen,
                &[Attribute::ParameterSet(Set::SHAKE_128F.into())],
                &[Attribute::Sensitive(false), Attribute::Extractable(true)],
            )
            .unwrap();
        let value = bytes_of(&s, readable, AttributeType::Value);
        s.create_object(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::KeyType(KeyType::SLH_DSA),
            Attribute::ParameterSet(Set::SHAKE_128F.into()),
            Attribute::Value(value.clone()),
            Attribute::Sign(true),
            Attribute::Token(true),
        ])
        .unwrap();
        value
    };
    f.stop();
    let bytes = token_file_bytes(&f.dir.path().join("tokens"));
    // SK.seed and SK.prf (the public half may appear: CKA_PUBLIC_KEY_INFO).
    assert!(
        !bytes
            .windows(16)
            .any(|w| w == &value[..16] || w == &value[16..32]),
        "secret seed in the clear"
    );
    f.start();
    let s = f.user(slot);
    let found = s
        .find_objects(&[Attribute::Class(ObjectClass::PRIVATE_KEY)])
        .unwrap();
    assert_eq!(found.len(), 1);
    s.sign(&deterministic(b""), found[0], b"still works")
        .unwrap();
}
