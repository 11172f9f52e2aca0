//! ML-DSA key objects: generation for every parameter set with its
//! attributes, sensitivity, import from the seed, length checks, usage
//! flags, persistence and wrapping.

use super::*;

#[test]
fn generated_keys_carry_their_parameter_set_spki_and_hidden_secrets() {
    let f = Fixture::new();
    let s = f.user(f.token("gen"));
    for (set, pk_len, sig_len) in SETS {
        let (public, private) = generate(&s, set, false);
        let ckp = CK_ULONG::from(set);
        assert_eq!(parameter_set_of(&s, public), ckp);
        assert_eq!(parameter_set_of(&s, private), ckp);
        let pk = bytes_of(&s, public, AttributeType::Value);
        assert_eq!(pk.len(), pk_len);
        // SPKI (RFC 9881): SEQUENCE { AlgorithmIdentifier { id-ml-dsa-* },
        // BIT STRING pk }, on both keys.
        let info = bytes_of(&s, public, AttributeType::PublicKeyInfo);
        assert_eq!(bytes_of(&s, private, AttributeType::PublicKeyInfo), info);
        assert_eq!(info.len(), pk_len + 22);
        assert_eq!(
            info[4..17],
            [
                0x30,
                0x0b,
                0x06,
                0x09,
                0x60,
                0x86,
                0x48,
                0x01,
                0x65,
                0x03,
                0x04,
                0x03,
                0x10 + ckp as u8
            ]
        );
        assert!(info.ends_with(&pk));
        // CKA_SEED and CKA_VALUE of the (sensitive) private key stay inside.
        for ty in [AttributeType::Seed, AttributeType::Value] {
            assert!(
                s.get_attributes(private, &[ty]).unwrap().is_empty(),
                "{ty:?}"
            );
        }
        let sig = s.sign(&deterministic(b""), private, b"m").unwrap();
        assert_eq!(sig.len(), sig_len);
        s.verify(&deterministic(b""), public, b"m", &sig).unwrap();
    }
}

#[test]
fn generation_needs_a_known_parameter_set_in_the_public_template() {
    let f = Fixture::new();
    let s = f.user(f.token("params"));
    let gen_with = |public: &[Attribute], private: &[Attribute]| {
        s.generate_key_pair(&Mechanism::MlDsaKeyPairGen, public, private)
    };
    assert_rv!(gen_with(&[], &[]), TemplateIncomplete);
    // (An unknown set is CKR_PARAMETER_SET_NOT_SUPPORTED: unit tests.)
    let p65 = Attribute::ParameterSet(MlDsaParameterSetType::ML_DSA_65.into());
    let p87 = Attribute::ParameterSet(MlDsaParameterSetType::ML_DSA_87.into());
    // The same set in the private template is fine; another one is not.
    let one = std::slice::from_ref(&p65);
    let (_, private) = gen_with(one, one).unwrap();
    assert_eq!(parameter_set_of(&s, private), CKP_ML_DSA_65);
    assert_rv!(gen_with(&[p65], &[p87]), TemplateInconsistent);
}

#[test]
fn import_from_the_seed_reproduces_the_generated_key() {
    let f = Fixture::new();
    let s = f.user(f.token("import"));
    let seed = [0x42u8; 32];
    for (set, _, _) in SETS {
        let private = import_seed(&s, set, &seed).unwrap();
        let info = bytes_of(&s, private, AttributeType::PublicKeyInfo);
        let pk = info[22..].to_vec();
        let public = import_public(&s, set, &pk).unwrap();
        assert_eq!(bytes_of(&s, public, AttributeType::PublicKeyInfo), info);
        let again = import_seed(&s, set, &seed).unwrap();
        let m = deterministic(b"ctx");
        let sig = s.sign(&m, private, b"data").unwrap();
        assert_eq!(s.sign(&m, again, b"data").unwrap(), sig);
        s.verify(&m, public, b"data", &sig).unwrap();
    }
    // Bad lengths and shapes are refused with the right codes.
    let p44 = MlDsaParameterSetType::ML_DSA_44;
    assert_rv!(import_seed(&s, p44, &seed[..31]), AttributeValueInvalid);
    assert_rv!(import_seed(&s, p44, &[0; 33]), AttributeValueInvalid);
    assert_rv!(import_public(&s, p44, &[0; 1311]), AttributeValueInvalid);
    assert_rv!(import_public(&s, p44, &[0; 1952]), AttributeValueInvalid);
    // An expanded key that does not hold together (all zeros: its tr is not
    // H(pk)) is refused, as is a value that disagrees with the seed.
    let expanded_only = s.create_object(&[
        Attribute::Class(ObjectClass::PRIVATE_KEY),
        Attribute::KeyType(KeyType::ML_DSA),
        Attribute::ParameterSet(p44.into()),
        Attribute::Value(vec![0; 2560]),
    ]);
    assert_rv!(expanded_only, AttributeValueInvalid);
    let disagreeing = s.create_object(&[
        Attribute::Class(ObjectClass::PRIVATE_KEY),
        Attribute::KeyType(KeyType::ML_DSA),
        Attribute::ParameterSet(p44.into()),
        Attribute::Seed(seed.to_vec()),
        Attribute::Value(vec![0; 2560]),
    ]);
    assert_rv!(disagreeing, AttributeValueInvalid);
    let no_set = s.create_object(&[
        Attribute::Class(ObjectClass::PRIVATE_KEY),
        Attribute::KeyType(KeyType::ML_DSA),
        Attribute::Seed(seed.to_vec()),
    ]);
    assert_rv!(no_set, TemplateIncomplete);
}

#[test]
fn usage_flags_are_enforced() {
    let f = Fixture::new();
    let s = f.user(f.token("usage"));
    let no_sign = s
        .create_object(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::KeyType(KeyType::ML_DSA),
            Attribute::ParameterSet(MlDsaParameterSetType::ML_DSA_44.into()),
            Attribute::Seed(vec![1; 32]),
            Attribute::Sign(false),
        ])
        .unwrap();
    assert_rv!(
        s.sign(&deterministic(b""), no_sign, b"x"),
        KeyFunctionNotPermitted
    );
    let (public, private) = generate(&s, MlDsaParameterSetType::ML_DSA_44, false);
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
}

#[test]
fn token_keys_persist_across_a_restart() {
    let mut f = Fixture::new();
    let slot = f.token("persist");
    let m = deterministic(b"persist");
    let sig = {
        let s = f.user(slot);
        let (_, private) = generate(&s, MlDsaParameterSetType::ML_DSA_87, true);
        s.sign(&m, private, b"msg").unwrap()
    };
    f.restart();
    let s = f.user(slot);
    let find = |class| {
        s.find_objects(&[Attribute::Class(class), Attribute::Label(b"mldsa".to_vec())])
            .unwrap()
    };
    let (private, public) = (
        find(ObjectClass::PRIVATE_KEY),
        find(ObjectClass::PUBLIC_KEY),
    );
    assert_eq!((private.len(), public.len()), (1, 1));
    assert_eq!(s.sign(&m, private[0], b"msg").unwrap(), sig);
    s.verify(&m, public[0], b"msg", &sig).unwrap();
}

#[test]
fn wrap_and_unwrap_carry_the_seed() {
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
    let target = s
        .create_object(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::KeyType(KeyType::ML_DSA),
            Attribute::ParameterSet(MlDsaParameterSetType::ML_DSA_87.into()),
            Attribute::Seed(vec![5; 32]),
            Attribute::Sign(true),
            Attribute::Extractable(true),
        ])
        .unwrap();
    let wrapped = s.wrap_key(&Mechanism::AesKeyWrapPad, aes, target).unwrap();
    // PKCS#8 seed form (54 bytes) padded to 56, plus the 8-byte RFC 5649 block.
    assert_eq!(wrapped.len(), 64);
    let back = s
        .unwrap_key(
            &Mechanism::AesKeyWrapPad,
            aes,
            &wrapped,
            &[
                Attribute::Class(ObjectClass::PRIVATE_KEY),
                Attribute::KeyType(KeyType::ML_DSA),
                Attribute::Sign(true),
            ],
        )
        .unwrap();
    assert_eq!(parameter_set_of(&s, back), CKP_ML_DSA_87);
    let m = deterministic(b"");
    assert_eq!(
        s.sign(&m, back, b"w").unwrap(),
        s.sign(&m, target, b"w").unwrap()
    );
    // A non-extractable key does not leave.
    let (_, kept) = generate(&s, MlDsaParameterSetType::ML_DSA_44, false);
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
fn seed_and_expanded_key_are_sealed_at_rest() {
    let mut f = Fixture::new();
    let slot = f.token("sealed");
    let seed: Vec<u8> = (0..32u8).map(|i| i.wrapping_mul(37) ^ 0xa5).collect();
    let expanded = {
        let s = f.user(slot);
        // A readable session copy (not sensitive, extractable) shows the
        // values the token object must not store in the clear.
        let readable = s
            .create_object(&[
                Attribute::Class(ObjectClass::PRIVATE_KEY),
                Attribute::KeyType(KeyType::ML_DSA),
                Attribute::ParameterSet(MlDsaParameterSetType::ML_DSA_65.into()),
                Attribute::Seed(seed.clone()),
                Attribute::Sensitive(false),
                Attribute::Extractable(true),
            ])
            .unwrap();
        assert_eq!(bytes_of(&s, readable, AttributeType::Seed), seed);
        let expanded = bytes_of(&s, readable, AttributeType::Value);
        assert_eq!(expanded.len(), 4032);
        s.create_object(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::KeyType(KeyType::ML_DSA),
            Attribute::ParameterSet(MlDsaParameterSetType::ML_DSA_65.into()),
            Attribute::Seed(seed.clone()),
            Attribute::Token(true),
        ])
        .unwrap();
        expanded
    };
    f.stop();
    let bytes = token_file_bytes(&f.dir.path().join("tokens"));
    assert!(
        !bytes.windows(32).any(|w| w == &seed[..]),
        "seed in the clear"
    );
    assert!(
        !bytes.windows(64).any(|w| w == &expanded[1000..1064]),
        "expanded key in the clear"
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

#[test]
fn an_expanded_key_alone_imports_signs_and_does_not_wrap() {
    let f = Fixture::new();
    let s = f.user(f.token("expanded"));
    let set = MlDsaParameterSetType::ML_DSA_65;
    let readable = s
        .create_object(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::KeyType(KeyType::ML_DSA),
            Attribute::ParameterSet(set.into()),
            Attribute::Seed(vec![9; 32]),
            Attribute::Sign(true),
            Attribute::Sensitive(false),
            Attribute::Extractable(true),
        ])
        .unwrap();
    let expanded = bytes_of(&s, readable, AttributeType::Value);
    let imported = s
        .create_object(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::KeyType(KeyType::ML_DSA),
            Attribute::ParameterSet(set.into()),
            Attribute::Value(expanded.clone()),
            Attribute::Sign(true),
            Attribute::Extractable(true),
        ])
        .unwrap();
    assert_eq!(
        bytes_of(&s, imported, AttributeType::PublicKeyInfo),
        bytes_of(&s, readable, AttributeType::PublicKeyInfo)
    );
    let m = deterministic(b"x");
    assert_eq!(
        s.sign(&m, imported, b"data").unwrap(),
        s.sign(&m, readable, b"data").unwrap()
    );
    // s1 with a coefficient out of range.
    let mut bad = expanded;
    bad[130] = 0xff;
    assert_rv!(
        s.create_object(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::KeyType(KeyType::ML_DSA),
            Attribute::ParameterSet(set.into()),
            Attribute::Value(bad),
        ]),
        AttributeValueInvalid
    );
    // No seed: RFC 9881's seed form cannot be written.
    let aes = s
        .generate_key(
            &Mechanism::AesKeyGen,
            &[
                Attribute::ValueLen(32.into()),
                Attribute::Wrap(true),
                Attribute::Encrypt(false),
                Attribute::Decrypt(false),
            ],
        )
        .unwrap();
    assert_rv!(
        s.wrap_key(&Mechanism::AesKeyWrapPad, aes, imported),
        KeyNotWrappable
    );
}
