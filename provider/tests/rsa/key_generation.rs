//! RSA key generation (mechanisms spec §2.1.5, `CKM_RSA_PKCS_KEY_PAIR_GEN`):
//! the public exponent, larger keys, and the floor `rsa_min_bits`
//! (docs/configuration.md) raises.

use super::*;

#[test]
fn public_exponent_and_larger_keys() {
    let f = Fixture::new();
    let slot = f.token("sizes");
    let s = f.user(slot);
    let started = std::time::Instant::now();
    for (bits, e) in [
        (1024u64, &[1u8, 0, 1][..]),
        (1536, &[1, 0, 1]),
        (2048, &[3u8][..]),
        (3072, &[1, 0, 3]),
        (4096, &[1, 0, 1]),
    ] {
        let (public, private) = generate(&s, bits, Some(e));
        let got = s
            .get_attributes(
                public,
                &[AttributeType::ModulusBits, AttributeType::PublicExponent],
            )
            .unwrap();
        assert_eq!(
            got,
            vec![
                Attribute::ModulusBits(bits.into()),
                Attribute::PublicExponent(e.to_vec())
            ]
        );
        let sig = s.sign(&Mechanism::Sha384RsaPkcs, private, b"msg").unwrap();
        assert_eq!(sig.len() as u64, bits / 8);
        s.verify(&Mechanism::Sha384RsaPkcs, public, b"msg", &sig)
            .unwrap();
        let ct = s.encrypt(&Mechanism::RsaPkcs, public, b"data").unwrap();
        assert_eq!(
            s.decrypt(&Mechanism::RsaPkcs, private, &ct).unwrap(),
            b"data"
        );
    }
    eprintln!(
        "generated 2048/3072/4096-bit keys in {:?}",
        started.elapsed()
    );
    // Rough timing of blinded RSA-2048 signatures (printed, not asserted).
    let (_, private) = generate(&s, 2048, None);
    let started = std::time::Instant::now();
    for _ in 0..20 {
        s.sign(&Mechanism::Sha256RsaPkcs, private, b"timing")
            .unwrap();
    }
    eprintln!("RSA-2048 sign: {:?} each", started.elapsed() / 20);
    // Unsupported sizes and exponents.
    for bits in [0u64, 512, 1016, 2049, 16392, u32::MAX as u64] {
        assert_rv!(
            s.generate_key_pair(
                &Mechanism::RsaPkcsKeyPairGen,
                &[Attribute::ModulusBits(bits.into())],
                &[]
            ),
            KeySizeRange
        );
    }
    for e in [&[1u8][..], &[2], &[1, 0, 0]] {
        assert_rv!(
            s.generate_key_pair(
                &Mechanism::RsaPkcsKeyPairGen,
                &[
                    Attribute::ModulusBits(2048.into()),
                    Attribute::PublicExponent(e.to_vec())
                ],
                &[]
            ),
            AttributeValueInvalid
        );
    }
}

/// `rsa_min_bits` (docs/configuration.md) raises the generation floor, and
/// `C_GetMechanismInfo` reports it; keys below it that already exist keep
/// working.
#[test]
fn rsa_min_bits_raises_the_generation_floor() {
    let mut f = Fixture::new();
    let slot = f.token("floor");
    let info = f
        .p()
        .get_mechanism_info(slot, MechanismType::RSA_PKCS_KEY_PAIR_GEN)
        .unwrap();
    assert_eq!((info.min_key_size(), info.max_key_size()), (1024, 16384));
    let s = f.user(slot);
    let (public, private) = generate(&s, 1024, None);
    let sig = s.sign(&Mechanism::Sha256RsaPkcs, private, b"m").unwrap();
    let exported = s.get_attributes(public, &[AttributeType::Modulus]).unwrap();
    drop(s);
    let conf = f.dir.path().join("conf.toml");
    std::fs::write(&conf, "rsa_min_bits = 2048\n").unwrap();
    // SAFETY: tests of this binary are serialised by the fixture's lock.
    unsafe { std::env::set_var("DALEK_PKCS11_CONFIG", &conf) };
    f.restart();
    // SAFETY: as above.
    unsafe { std::env::remove_var("DALEK_PKCS11_CONFIG") };
    let info = f
        .p()
        .get_mechanism_info(slot, MechanismType::RSA_PKCS_KEY_PAIR_GEN)
        .unwrap();
    assert_eq!(info.min_key_size(), 2048);
    let s = f.user(slot);
    assert_rv!(
        s.generate_key_pair(
            &Mechanism::RsaPkcsKeyPairGen,
            &[Attribute::ModulusBits(1024.into())],
            &[]
        ),
        KeySizeRange
    );
    // A 1024-bit public key still verifies (imported keys are not refused).
    let Attribute::Modulus(n) = &exported[0] else {
        panic!("no modulus")
    };
    let imported = s
        .create_object(&[
            Attribute::Class(ObjectClass::PUBLIC_KEY),
            Attribute::KeyType(KeyType::RSA),
            Attribute::Modulus(n.clone()),
            Attribute::PublicExponent(vec![1, 0, 1]),
            Attribute::Verify(true),
        ])
        .unwrap();
    s.verify(&Mechanism::Sha256RsaPkcs, imported, b"m", &sig)
        .unwrap();
    assert!(
        s.verify(&Mechanism::Sha256RsaPkcs, imported, b"n", &sig)
            .is_err()
    );
    generate(&s, 2048, None);
}
