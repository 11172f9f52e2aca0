//! RSA round trips with a generated key: PSS (mechanisms spec
//! §2.1.14–2.1.15) and OAEP (§2.1.8) over every hash and MGF, and raw X.509
//! (§2.1.7).

use super::*;

fn pss(hash: MechanismType, mgf: PkcsMgfType, s_len: u64) -> PkcsPssParams {
    PkcsPssParams {
        hash_alg: hash,
        mgf,
        s_len: s_len.into(),
    }
}

const HASHES: [(MechanismType, PkcsMgfType, usize); 5] = [
    (MechanismType::SHA1, PkcsMgfType::MGF1_SHA1, 20),
    (MechanismType::SHA224, PkcsMgfType::MGF1_SHA224, 28),
    (MechanismType::SHA256, PkcsMgfType::MGF1_SHA256, 32),
    (MechanismType::SHA384, PkcsMgfType::MGF1_SHA384, 48),
    (MechanismType::SHA512, PkcsMgfType::MGF1_SHA512, 64),
];

fn digest_mechanism(h: MechanismType) -> Mechanism<'static> {
    match h {
        MechanismType::SHA1 => Mechanism::Sha1,
        MechanismType::SHA224 => Mechanism::Sha224,
        MechanismType::SHA256 => Mechanism::Sha256,
        MechanismType::SHA384 => Mechanism::Sha384,
        _ => Mechanism::Sha512,
    }
}

#[test]
fn generated_key_pss_oaep_x509_every_combination() {
    let f = Fixture::new();
    let slot = f.token("gen");
    let s = f.user(slot);
    let (public, private) = generate(&s, 2048, None);
    let attrs = s
        .get_attributes(
            public,
            &[AttributeType::ModulusBits, AttributeType::PublicExponent],
        )
        .unwrap();
    assert_eq!(
        attrs,
        vec![
            Attribute::ModulusBits(2048.into()),
            Attribute::PublicExponent(vec![1, 0, 1])
        ]
    );
    let msg = b"PSS and OAEP with every hash".to_vec();
    // PSS: raw (input is the hash) and hashing mechanisms, salt 0 and hLen.
    for (h, mgf, hlen) in HASHES {
        let digest = s.digest(&digest_mechanism(h), &msg).unwrap();
        for salt in [0, hlen as u64] {
            let raw = Mechanism::RsaPkcsPss(pss(h, mgf, salt));
            let sig = s.sign(&raw, private, &digest).unwrap();
            assert_eq!(sig.len(), 256);
            s.verify(&raw, public, &digest, &sig).unwrap();
            let mut bad = sig.clone();
            bad[7] ^= 2;
            assert_rv!(s.verify(&raw, public, &digest, &bad), SignatureInvalid);
            assert_rv!(s.sign(&raw, private, &digest[1..]), DataLenRange);
            let hashing = match h {
                MechanismType::SHA1 => Some(Mechanism::Sha1RsaPkcsPss(pss(h, mgf, salt))),
                MechanismType::SHA256 => Some(Mechanism::Sha256RsaPkcsPss(pss(h, mgf, salt))),
                MechanismType::SHA384 => Some(Mechanism::Sha384RsaPkcsPss(pss(h, mgf, salt))),
                MechanismType::SHA512 => Some(Mechanism::Sha512RsaPkcsPss(pss(h, mgf, salt))),
                _ => None,
            };
            if let Some(m) = hashing {
                let sig2 = s.sign(&m, private, &msg).unwrap();
                // Same hash: the raw mechanism verifies the hashing one's output.
                s.verify(&raw, public, &digest, &sig2).unwrap();
                s.verify_init(&m, public).unwrap();
                s.verify_update(&msg[..4]).unwrap();
                s.verify_update(&msg[4..]).unwrap();
                s.verify_final(&sig2).unwrap();
            }
        }
    }
    // PSS parameter checks: missing, mismatched hash or MGF, salt too long.
    let sha256 = HASHES[2];
    for params in [
        pss(sha256.0, PkcsMgfType::MGF1_SHA1, 32),
        pss(MechanismType::SHA384, sha256.1, 32),
        pss(sha256.0, sha256.1, 256 - 32 - 1),
    ] {
        assert_rv!(
            s.sign_init(&Mechanism::RsaPkcsPss(params), private),
            MechanismParamInvalid
        );
    }
    assert_rv!(
        s.sign_init(
            &Mechanism::Sha256RsaPkcsPss(pss(MechanismType::SHA512, PkcsMgfType::MGF1_SHA512, 0)),
            private
        ),
        MechanismParamInvalid
    );
    let l = raw();
    let mut no_param = CK_MECHANISM {
        mechanism: CKM_RSA_PKCS_PSS,
        pParameter: std::ptr::null_mut(),
        ulParameterLen: 0,
    };
    // SAFETY: valid mechanism struct without parameter.
    let rv = unsafe { l.C_SignInit.unwrap()(s.handle(), &mut no_param, private.handle()) };
    assert_eq!(rv, CKR_MECHANISM_PARAM_INVALID);
    // OAEP: every hash with every MGF, with a label.
    let label = b"label \xff\x00 bytes".to_vec();
    for (h, _, hlen) in HASHES {
        for (_, mgf, _) in HASHES {
            let mech = Mechanism::RsaPkcsOaep(PkcsOaepParams::new(
                h,
                mgf,
                PkcsOaepSource::data_specified(&label),
            ));
            let longest = vec![0x33u8; 256 - 2 * hlen - 2];
            for data in [&msg[..], &longest[..]] {
                let ct = s.encrypt(&mech, public, data).unwrap();
                assert_eq!(ct.len(), 256);
                assert_eq!(s.decrypt(&mech, private, &ct).unwrap(), data);
            }
            assert_rv!(
                s.encrypt(&mech, public, &[longest.clone(), vec![1]].concat()),
                DataLenRange
            );
            let other =
                Mechanism::RsaPkcsOaep(PkcsOaepParams::new(h, mgf, PkcsOaepSource::empty()));
            let ct = s.encrypt(&mech, public, &msg).unwrap();
            assert_rv!(s.decrypt(&other, private, &ct), EncryptedDataInvalid);
        }
    }
    // Raw X.509 both ways: a full-size integer below the modulus.
    let mut block = vec![0u8; 256];
    block[1..].fill(0x5c);
    let ct = s.encrypt(&Mechanism::RsaX509, public, &block).unwrap();
    assert_eq!(ct.len(), 256);
    assert_eq!(s.decrypt(&Mechanism::RsaX509, private, &ct).unwrap(), block);
    let sig = s.sign(&Mechanism::RsaX509, private, &block).unwrap();
    s.verify(&Mechanism::RsaX509, public, &block, &sig).unwrap();
    // X.509 is textbook RSA: signing is decryption.
    assert_eq!(
        s.decrypt(&Mechanism::RsaX509, private, &block).unwrap(),
        sig
    );
    // Shorter input is a smaller integer, output stays k bytes.
    let short = s.encrypt(&Mechanism::RsaX509, public, b"\x01\x02").unwrap();
    let back = s.decrypt(&Mechanism::RsaX509, private, &short).unwrap();
    assert_eq!(back.len(), 256);
    assert_eq!(&back[254..], b"\x01\x02");
    assert!(back[..254].iter().all(|b| *b == 0));
    assert_rv!(
        s.encrypt(&Mechanism::RsaX509, public, &[0xffu8; 256]),
        DataInvalid
    );
    // PKCS #1 v1.5 encryption limits; mechanisms are single-part.
    assert_rv!(
        s.encrypt(&Mechanism::RsaPkcs, public, &[0u8; 246]),
        DataLenRange
    );
    s.encrypt_init(&Mechanism::RsaPkcs, public).unwrap();
    assert_rv!(s.encrypt_update(b"x"), FunctionNotSupported);
    s.sign_init(&Mechanism::RsaPkcs, private).unwrap();
    assert_rv!(s.sign_update(b"x"), FunctionNotSupported);
    // Key types.
    assert_rv!(
        s.sign(&Mechanism::RsaPkcs, public, b"x"),
        KeyFunctionNotPermitted
    );
    let aes = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::AES),
            Attribute::Value(vec![1; 16]),
            Attribute::Encrypt(true),
        ])
        .unwrap();
    assert_rv!(
        s.encrypt(&Mechanism::RsaPkcs, aes, b"x"),
        KeyTypeInconsistent
    );
}
