//! The keys `C_EncapsulateKey` and `C_DecapsulateKey` make: the two sides
//! agree, the template's key type and length, what the new keys inherit,
//! the strength floor, usage flags, and ciphertexts of the wrong length or
//! not made for the key.

use super::*;

#[test]
fn both_sides_get_the_same_aes_key_for_every_set() {
    let f = Fixture::new();
    let s = f.user(f.token("agree"));
    for (set, _, _, ct_len) in SETS {
        let (public, private) = generate(&s, set);
        let template = readable(
            KeyType::AES,
            &[Attribute::Encrypt(true), Attribute::Decrypt(true)],
        );
        let (ct, sent) = s
            .encapsulate_key(&Mechanism::MlKem, public, &template)
            .unwrap();
        assert_eq!(ct.len(), ct_len);
        let got = s
            .decapsulate_key(&Mechanism::MlKem, private, &template, &ct)
            .unwrap();
        let value = bytes_of(&s, sent, AttributeType::Value);
        // No CKA_VALUE_LEN: the whole 32-byte secret, an AES-256 key.
        assert_eq!(value.len(), 32);
        assert_eq!(bytes_of(&s, got, AttributeType::Value), value);
        let data = [7u8; 16];
        let c = s.encrypt(&Mechanism::AesEcb, sent, &data).unwrap();
        assert_eq!(s.decrypt(&Mechanism::AesEcb, got, &c).unwrap(), data);
        // Two encapsulations never share a secret.
        let (ct2, again) = s
            .encapsulate_key(&Mechanism::MlKem, public, &template)
            .unwrap();
        assert_ne!(ct2, ct);
        assert_ne!(bytes_of(&s, again, AttributeType::Value), value);
        for k in [sent, got] {
            assert!(!flag_of(&s, k, AttributeType::Local));
        }
    }
}

#[test]
fn value_len_takes_the_first_bytes_and_no_more_than_the_secret() {
    let f = Fixture::new();
    let s = f.user(f.token("len"));
    let (public, private) = generate(&s, MlKemParameterSetType::ML_KEM_768);
    let short = readable(KeyType::GENERIC_SECRET, &[Attribute::ValueLen(16.into())]);
    let (ct, k16) = s
        .encapsulate_key(&Mechanism::MlKem, public, &short)
        .unwrap();
    let whole = decapsulated_value(&s, private, &ct);
    assert_eq!(bytes_of(&s, k16, AttributeType::Value), whole[..16]);
    let aes128 = readable(KeyType::AES, &[Attribute::ValueLen(16.into())]);
    let k = s
        .decapsulate_key(&Mechanism::MlKem, private, &aes128, &ct)
        .unwrap();
    assert_eq!(bytes_of(&s, k, AttributeType::Value), whole[..16]);
    for (kt, len) in [
        (KeyType::GENERIC_SECRET, 33u64),
        (KeyType::AES, 20),
        (KeyType::GENERIC_SECRET, 0),
    ] {
        let t = readable(kt, &[Attribute::ValueLen(len.into())]);
        assert_rv!(
            s.encapsulate_key(&Mechanism::MlKem, public, &t),
            AttributeValueInvalid
        );
        assert_rv!(
            s.decapsulate_key(&Mechanism::MlKem, private, &t, &ct),
            AttributeValueInvalid
        );
    }
}

#[test]
fn a_decapsulated_key_inherits_the_protection_of_the_private_key() {
    let f = Fixture::new();
    let s = f.user(f.token("inherit"));
    // A generated private key is sensitive and never extractable.
    let (public, private) = generate(&s, MlKemParameterSetType::ML_KEM_512);
    assert!(flag_of(&s, private, AttributeType::AlwaysSensitive));
    let sensitive = [
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::AES),
        Attribute::Token(false),
        Attribute::Sensitive(true),
    ];
    let (ct, sent) = s
        .encapsulate_key(&Mechanism::MlKem, public, &sensitive)
        .unwrap();
    let got = s
        .decapsulate_key(&Mechanism::MlKem, private, &sensitive, &ct)
        .unwrap();
    // Whoever holds the private key can make the encapsulated secret: it
    // was never only inside this token.
    assert!(!flag_of(&s, sent, AttributeType::AlwaysSensitive));
    assert!(flag_of(&s, got, AttributeType::AlwaysSensitive));
    // Key-length reduction (Clulow 2003): a 1-byte key from a protected
    // private key could be brute-forced through a MAC; refused.
    let tiny = readable(KeyType::GENERIC_SECRET, &[Attribute::ValueLen(1.into())]);
    assert_rv!(
        s.decapsulate_key(&Mechanism::MlKem, private, &tiny, &ct),
        KeySizeRange
    );
    // From a private key that is not protected it is the caller's choice.
    let seed = [9u8; 64];
    let open = import_private(
        &s,
        MlKemParameterSetType::ML_KEM_512,
        &[Attribute::Seed(seed.to_vec())],
    )
    .unwrap();
    s.decapsulate_key(&Mechanism::MlKem, open, &tiny, &ct)
        .unwrap();
    let g = s
        .decapsulate_key(&Mechanism::MlKem, open, &readable(KeyType::AES, &[]), &ct)
        .unwrap();
    assert!(!flag_of(&s, g, AttributeType::AlwaysSensitive));
}

#[test]
fn usage_flags_key_types_and_allowed_mechanisms_are_enforced() {
    let f = Fixture::new();
    let s = f.user(f.token("usage"));
    let set = MlKemParameterSetType::ML_KEM_768;
    let (public, private) = generate(&s, set);
    assert!(flag_of(&s, public, AttributeType::Encapsulate));
    assert!(flag_of(&s, private, AttributeType::Decapsulate));
    let t = readable(KeyType::AES, &[]);
    let (ct, _) = s.encapsulate_key(&Mechanism::MlKem, public, &t).unwrap();
    // The other key of the pair, and a key of another type.
    assert_rv!(
        s.encapsulate_key(&Mechanism::MlKem, private, &t),
        KeyFunctionNotPermitted
    );
    assert_rv!(
        s.decapsulate_key(&Mechanism::MlKem, public, &t, &ct),
        KeyFunctionNotPermitted
    );
    // CKA_ENCAPSULATE / CKA_DECAPSULATE switched off.
    s.update_attributes(public, &[Attribute::Encapsulate(false)])
        .unwrap();
    assert_rv!(
        s.encapsulate_key(&Mechanism::MlKem, public, &t),
        KeyFunctionNotPermitted
    );
    let (_, locked) = generate_with(&s, set, false, &[Attribute::Decapsulate(false)]);
    assert_rv!(
        s.decapsulate_key(&Mechanism::MlKem, locked, &t, &ct),
        KeyFunctionNotPermitted
    );
    // CKA_ALLOWED_MECHANISMS without CKM_ML_KEM.
    let (_, other) = generate_with(
        &s,
        set,
        false,
        &[Attribute::AllowedMechanisms(vec![
            cryptoki::mechanism::MechanismType::ML_DSA,
        ])],
    );
    assert_rv!(
        s.decapsulate_key(&Mechanism::MlKem, other, &t, &ct),
        MechanismInvalid
    );
    // A mechanism that does not encapsulate.
    assert_rv!(
        s.decapsulate_key(&Mechanism::Sha256, private, &t, &ct),
        MechanismInvalid
    );
}

#[test]
fn ciphertexts_of_the_wrong_length_fail_and_foreign_ones_give_another_secret() {
    let f = Fixture::new();
    let s = f.user(f.token("ct"));
    let (public, private) = generate(&s, MlKemParameterSetType::ML_KEM_1024);
    let t = readable(KeyType::GENERIC_SECRET, &[]);
    let (ct, sent) = s.encapsulate_key(&Mechanism::MlKem, public, &t).unwrap();
    let secret = bytes_of(&s, sent, AttributeType::Value);
    for bad in [
        &ct[..ct.len() - 1],
        &[][..],
        &[ct.clone(), vec![0]].concat()[..],
    ] {
        assert_rv!(
            s.decapsulate_key(&Mechanism::MlKem, private, &t, bad),
            EncryptedDataLenRange
        );
    }
    // FIPS 203 implicit rejection: a changed ciphertext decapsulates to an
    // unrelated secret, with no error to tell the two apart.
    let mut changed = ct.clone();
    changed[5] ^= 1;
    let other = decapsulated_value(&s, private, &changed);
    assert_eq!(other.len(), 32);
    assert_ne!(other, secret);
    assert_eq!(decapsulated_value(&s, private, &ct), secret);
}
