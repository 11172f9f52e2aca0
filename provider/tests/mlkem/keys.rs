//! ML-KEM key objects: generation for every parameter set with its
//! attributes, import from the seed or the expanded key and what import
//! refuses, persistence, and wrapping.

use super::*;

#[test]
fn generated_keys_carry_their_parameter_set_spki_and_hidden_secrets() {
    let f = Fixture::new();
    let s = f.user(f.token("gen"));
    for (set, ek_len, _, _) in SETS {
        let (public, private) = generate(&s, set);
        let ek = bytes_of(&s, public, AttributeType::Value);
        assert_eq!(ek.len(), ek_len);
        // SPKI: SEQUENCE { AlgorithmIdentifier { id-alg-ml-kem-* }, BIT
        // STRING ek }, on both keys.
        let info = bytes_of(&s, public, AttributeType::PublicKeyInfo);
        assert_eq!(bytes_of(&s, private, AttributeType::PublicKeyInfo), info);
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
                0x04,
                CK_ULONG::from(set) as u8
            ]
        );
        assert!(info.ends_with(&ek));
        for ty in [AttributeType::Seed, AttributeType::Value] {
            assert!(
                s.get_attributes(private, &[ty]).unwrap().is_empty(),
                "{ty:?}"
            );
        }
    }
    let gen_with =
        |public: &[Attribute]| s.generate_key_pair(&Mechanism::MlKemKeyPairGen, public, &[]);
    assert_rv!(gen_with(&[]), TemplateIncomplete);
    // (An unknown set is CKR_PARAMETER_SET_NOT_SUPPORTED: unit tests.)
}

#[test]
fn import_from_the_seed_or_the_expanded_key_gives_the_same_key() {
    let f = Fixture::new();
    let s = f.user(f.token("import"));
    let seed = [0x42u8; 64];
    for (set, ek_len, dk_len, _) in SETS {
        let from_seed = import_private(&s, set, &[Attribute::Seed(seed.to_vec())]).unwrap();
        let dk = bytes_of(&s, from_seed, AttributeType::Value);
        assert_eq!(dk.len(), dk_len);
        let info = bytes_of(&s, from_seed, AttributeType::PublicKeyInfo);
        // The same key from its expanded form alone, and from both.
        let expanded = import_private(&s, set, &[Attribute::Value(dk.clone())]).unwrap();
        assert_eq!(bytes_of(&s, expanded, AttributeType::PublicKeyInfo), info);
        import_private(
            &s,
            set,
            &[Attribute::Seed(seed.to_vec()), Attribute::Value(dk.clone())],
        )
        .unwrap();
        // The encapsulation key is inside dk (FIPS 203 Algorithm 16).
        // dk = dk_PKE (384k bytes) ‖ ek ‖ H(ek) ‖ z; ek is 384k + 32.
        let k = (ek_len - 32) / 384;
        let ek = &dk[384 * k..][..ek_len];
        assert!(info.ends_with(ek));
        let public = import_public(&s, set, ek).unwrap();
        let t = readable(KeyType::GENERIC_SECRET, &[]);
        let (ct, sent) = s.encapsulate_key(&Mechanism::MlKem, public, &t).unwrap();
        let sent = bytes_of(&s, sent, AttributeType::Value);
        assert_eq!(decapsulated_value(&s, from_seed, &ct), sent);
        assert_eq!(decapsulated_value(&s, expanded, &ct), sent);
    }
}

#[test]
fn import_refuses_values_that_do_not_make_a_valid_key() {
    let f = Fixture::new();
    let s = f.user(f.token("refuse"));
    let set = MlKemParameterSetType::ML_KEM_512;
    let seed = vec![1u8; 64];
    let k = import_private(&s, set, &[Attribute::Seed(seed.clone())]).unwrap();
    let dk = bytes_of(&s, k, AttributeType::Value);
    let other = import_private(&s, set, &[Attribute::Seed(vec![2u8; 64])]).unwrap();
    let other_dk = bytes_of(&s, other, AttributeType::Value);
    let bad = |values: &[Attribute]| import_private(&s, set, values);
    // Seed of the wrong length; a seed with another key's dk.
    assert_rv!(
        bad(&[Attribute::Seed(vec![1u8; 32])]),
        AttributeValueInvalid
    );
    assert_rv!(
        bad(&[
            Attribute::Seed(seed.clone()),
            Attribute::Value(other_dk.clone())
        ]),
        AttributeValueInvalid
    );
    // dk of the wrong length; H(ek) changed (FIPS 203 §7.3 hash check).
    assert_rv!(
        bad(&[Attribute::Value(dk[1..].to_vec())]),
        AttributeValueInvalid
    );
    let mut h_changed = dk.clone();
    h_changed[1632 - 64] ^= 1;
    assert_rv!(bad(&[Attribute::Value(h_changed)]), AttributeValueInvalid);
    // dk_PKE of another key beside this key's ek, H(ek) and z: the hash
    // check passes, the pairwise test does not.
    let mut spliced = dk.clone();
    spliced[..768].copy_from_slice(&other_dk[..768]);
    assert_rv!(bad(&[Attribute::Value(spliced)]), AttributeValueInvalid);
    // Neither value.
    assert_rv!(bad(&[]), TemplateIncomplete);
    // Public keys: the wrong length, a coefficient of q or more (§7.2).
    let ek = dk[768..768 + 800].to_vec();
    assert_rv!(import_public(&s, set, &ek[1..]), AttributeValueInvalid);
    let mut overflow = ek.clone();
    overflow[0] = 0xff;
    overflow[1] |= 0x0f; // the first 12-bit coefficient is 4095 >= 3329
    assert_rv!(import_public(&s, set, &overflow), AttributeValueInvalid);
    import_public(&s, set, &ek).unwrap();
}

#[test]
fn token_keys_persist_and_private_keys_wrap_in_the_seed_form() {
    let mut f = Fixture::new();
    let slot = f.token("persist");
    let set = MlKemParameterSetType::ML_KEM_768;
    let (ct, secret) = {
        let s = f.user(slot);
        let (public, _) = generate_with(&s, set, true, &[Attribute::Extractable(true)]);
        let t = readable(KeyType::GENERIC_SECRET, &[]);
        let (ct, k) = s.encapsulate_key(&Mechanism::MlKem, public, &t).unwrap();
        (ct, bytes_of(&s, k, AttributeType::Value))
    };
    f.restart();
    let s = f.user(f.slot_labelled("persist"));
    let private = s
        .find_objects(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::KeyType(KeyType::ML_KEM),
        ])
        .unwrap()[0];
    assert_eq!(decapsulated_value(&s, private, &ct), secret);
    // Wrapped (PKCS#8 seed form under AES key wrap) and unwrapped: the same
    // key.
    let kek = s
        .generate_key(
            &Mechanism::AesKeyGen,
            &[
                Attribute::ValueLen(32.into()),
                Attribute::Token(false),
                // Wrap separation: a wrapping key does not decrypt.
                Attribute::Encrypt(false),
                Attribute::Decrypt(false),
            ],
        )
        .unwrap();
    let wrapped = s.wrap_key(&Mechanism::AesKeyWrapPad, kek, private).unwrap();
    let back = s
        .unwrap_key(
            &Mechanism::AesKeyWrapPad,
            kek,
            &wrapped,
            &[
                Attribute::Class(ObjectClass::PRIVATE_KEY),
                Attribute::KeyType(KeyType::ML_KEM),
                Attribute::Token(false),
            ],
        )
        .unwrap();
    assert_eq!(decapsulated_value(&s, back, &ct), secret);
    assert_eq!(
        bytes_of(&s, back, AttributeType::PublicKeyInfo),
        bytes_of(&s, private, AttributeType::PublicKeyInfo)
    );
    // A key imported from its expanded form has no seed to wrap.
    let dk = {
        let k = import_private(&s, set, &[Attribute::Seed(vec![3u8; 64])]).unwrap();
        bytes_of(&s, k, AttributeType::Value)
    };
    let expanded = import_private(&s, set, &[Attribute::Value(dk)]).unwrap();
    assert_rv!(
        s.wrap_key(&Mechanism::AesKeyWrapPad, kek, expanded),
        KeyNotWrappable
    );
}
