//! RSA through the C API (mechanisms spec §2.1): PKCS #1 v1.5 known
//! answers (made by OpenSSL) with keys imported with and without CRT values,
//! verification and OAEP decryption vectors checked against OpenSSL's verdicts, PSS / OAEP round
//! trips over every hash and MGF, raw X.509, key generation and the public
//! exponent, the AtMost output path of C_Decrypt, and key wrapping.

#[path = "../common/mod.rs"]
mod common;

use common::*;
use cryptoki::mechanism::rsa::{PkcsMgfType, PkcsOaepParams, PkcsOaepSource, PkcsPssParams};
use cryptoki::mechanism::{Mechanism, MechanismType};
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::Session;
use cryptoki_sys::*;

fn lines(text: &'static str) -> Vec<Vec<&'static str>> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split(':').collect())
        .collect()
}

/// Imports a private key from n, e, d and optionally the primes.
fn import_private(
    s: &Session,
    n: &[u8],
    e: &[u8],
    d: &[u8],
    primes: Option<(&[u8], &[u8])>,
) -> ObjectHandle {
    let mut t = vec![
        Attribute::Class(ObjectClass::PRIVATE_KEY),
        Attribute::KeyType(KeyType::RSA),
        Attribute::Modulus(n.to_vec()),
        Attribute::PublicExponent(e.to_vec()),
        Attribute::PrivateExponent(d.to_vec()),
        Attribute::Sign(true),
        Attribute::Decrypt(true),
        Attribute::Unwrap(true),
    ];
    if let Some((p, q)) = primes {
        t.push(Attribute::Prime1(p.to_vec()));
        t.push(Attribute::Prime2(q.to_vec()));
    }
    s.create_object(&t).unwrap()
}

fn import_public(s: &Session, n: &[u8], e: &[u8]) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::PUBLIC_KEY),
        Attribute::KeyType(KeyType::RSA),
        Attribute::Modulus(n.to_vec()),
        Attribute::PublicExponent(e.to_vec()),
        Attribute::Verify(true),
        Attribute::Encrypt(true),
        Attribute::Wrap(true),
    ])
    .unwrap()
}

fn generate(s: &Session, bits: u64, exponent: Option<&[u8]>) -> (ObjectHandle, ObjectHandle) {
    let mut public = vec![
        Attribute::ModulusBits(bits.into()),
        Attribute::Verify(true),
        Attribute::Encrypt(true),
        Attribute::Wrap(true),
        Attribute::Token(false),
    ];
    if let Some(e) = exponent {
        public.push(Attribute::PublicExponent(e.to_vec()));
    }
    s.generate_key_pair(
        &Mechanism::RsaPkcsKeyPairGen,
        &public,
        &[
            Attribute::Sign(true),
            Attribute::Decrypt(true),
            Attribute::Unwrap(true),
            Attribute::Extractable(true),
            Attribute::Token(false),
        ],
    )
    .unwrap()
}

/// The SHA-256 DigestInfo prefix (RFC 8017 §9.2 note 1).
const SHA256_DIGEST_INFO: &str = "3031300d060960864801650304020105000420";

#[test]
fn pkcs1v15_known_answers_with_and_without_crt() {
    let f = Fixture::new();
    let slot = f.token("kat");
    let s = f.user(slot);
    let mut keys = 0;
    let mut current: Option<(ObjectHandle, ObjectHandle, ObjectHandle)> = None;
    let mut signatures = 0;
    for v in lines(include_str!("vectors/rsa-pkcs1v15-sha256-sign.txt")) {
        match v[0] {
            "key" => {
                let (n, e, d, p, q) = (
                    unhex(v[1]),
                    unhex(v[2]),
                    unhex(v[3]),
                    unhex(v[4]),
                    unhex(v[5]),
                );
                let without = import_private(&s, &n, &e, &d, None);
                let with = import_private(&s, &n, &e, &d, Some((&p, &q)));
                let public = import_public(&s, &n, &e);
                // The CRT values computed for the key without them agree.
                let attrs = [
                    AttributeType::Modulus,
                    AttributeType::PublicExponent,
                    AttributeType::ModulusBits,
                ];
                let got = s.get_attributes(public, &attrs).unwrap();
                assert_eq!(got[2], Attribute::ModulusBits(2048.into()));
                current = Some((without, with, public));
                keys += 1;
            }
            "sig" => {
                let (without, with, public) = current.unwrap();
                let (tc, msg, sig) = (v[1], unhex(v[2]), unhex(v[3]));
                let mech = Mechanism::Sha256RsaPkcs;
                assert_eq!(s.sign(&mech, without, &msg).unwrap(), sig, "tcId {tc}");
                assert_eq!(s.sign(&mech, with, &msg).unwrap(), sig, "tcId {tc} (CRT)");
                // Multi-part.
                s.sign_init(&mech, with).unwrap();
                for part in msg.chunks(5) {
                    s.sign_update(part).unwrap();
                }
                assert_eq!(s.sign_final().unwrap(), sig, "tcId {tc} multi-part");
                // CKM_RSA_PKCS over the DigestInfo gives the same signature.
                let digest = s.digest(&Mechanism::Sha256, &msg).unwrap();
                let info = [unhex(SHA256_DIGEST_INFO), digest].concat();
                assert_eq!(s.sign(&Mechanism::RsaPkcs, without, &info).unwrap(), sig);
                // Verification, and rejection of damaged signatures.
                s.verify(&mech, public, &msg, &sig).unwrap();
                s.verify(&Mechanism::RsaPkcs, public, &info, &sig).unwrap();
                let mut bad = sig.clone();
                bad[sig.len() / 2] ^= 0x01;
                assert_rv!(s.verify(&mech, public, &msg, &bad), SignatureInvalid);
                assert_rv!(s.verify(&mech, public, b"other", &sig), SignatureInvalid);
                assert_rv!(s.verify(&mech, public, &msg, &sig[1..]), SignatureLenRange);
                signatures += 1;
            }
            other => panic!("unknown line {other}"),
        }
    }
    assert_eq!((keys, signatures), (2, 9));
}

#[test]
fn pkcs1v15_verification_vectors() {
    let f = Fixture::new();
    let slot = f.token("verify");
    let s = f.user(slot);
    let mut public = None;
    let (mut valid, mut invalid) = (0, 0);
    for v in lines(include_str!("vectors/rsa-pkcs1v15-sha256-verify.txt")) {
        match v[0] {
            "pub" => public = Some(import_public(&s, &unhex(v[1]), &unhex(v[2]))),
            kind => {
                let (tc, msg, sig) = (v[1], unhex(v[2]), unhex(v[3]));
                let r = s.verify(&Mechanism::Sha256RsaPkcs, public.unwrap(), &msg, &sig);
                if kind == "valid" {
                    r.unwrap_or_else(|e| panic!("tcId {tc}: {e}"));
                    valid += 1;
                } else {
                    assert!(r.is_err(), "tcId {tc} accepted");
                    invalid += 1;
                }
            }
        }
    }
    assert_eq!((valid, invalid), (7, 20));
}

#[test]
fn oaep_decryption_vectors_with_labels() {
    let f = Fixture::new();
    let slot = f.token("oaep");
    let s = f.user(slot);
    let mut key = None;
    let mut count = 0;
    for v in lines(include_str!("vectors/rsa-oaep-sha256.txt")) {
        if v[0] == "key" {
            key = Some(import_private(
                &s,
                &unhex(v[1]),
                &unhex(v[2]),
                &unhex(v[3]),
                None,
            ));
            continue;
        }
        let (tc, label, msg, ct) = (v[1], unhex(v[2]), unhex(v[3]), unhex(v[4]));
        let mech = Mechanism::RsaPkcsOaep(PkcsOaepParams::new(
            MechanismType::SHA256,
            PkcsMgfType::MGF1_SHA256,
            PkcsOaepSource::data_specified(&label),
        ));
        let r = s.decrypt(&mech, key.unwrap(), &ct);
        if v[0] == "valid" {
            assert_eq!(r.unwrap(), msg, "tcId {tc}");
        } else {
            let rv = rv_of(r.expect_err(tc));
            let want = if ct.len() == 256 {
                cryptoki::error::RvError::EncryptedDataInvalid
            } else {
                cryptoki::error::RvError::EncryptedDataLenRange
            };
            assert_eq!(rv, want, "tcId {tc}");
        }
        count += 1;
    }
    assert_eq!(count, 20);
}

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

#[test]
fn decrypt_buffer_too_small_keeps_the_operation() {
    let f = Fixture::new();
    let slot = f.token("atmost");
    let s = f.user(slot);
    let (public, private) = generate(&s, 2048, None);
    let mut ct = s
        .encrypt(&Mechanism::RsaPkcs, public, b"ten bytes!")
        .unwrap();
    let l = raw();
    let h = s.handle();
    let mut out = [0u8; 256];
    let mut len: CK_ULONG = 0;
    // SAFETY: all pointers are to live locals of the stated lengths.
    unsafe {
        s.decrypt_init(&Mechanism::RsaPkcs, private).unwrap();
        // Size query: an upper bound (k − 11).
        assert_eq!(
            l.C_Decrypt.unwrap()(h, ct.as_mut_ptr(), 256, std::ptr::null_mut(), &mut len),
            CKR_OK
        );
        assert_eq!(len, 245);
        // Too small: the exact length, operation kept.
        len = 4;
        assert_eq!(
            l.C_Decrypt.unwrap()(h, ct.as_mut_ptr(), 256, out.as_mut_ptr(), &mut len),
            CKR_BUFFER_TOO_SMALL
        );
        assert_eq!(len, 10);
        assert_eq!(
            l.C_Decrypt.unwrap()(h, ct.as_mut_ptr(), 256, out.as_mut_ptr(), &mut len),
            CKR_OK
        );
        assert_eq!(&out[..10], b"ten bytes!");
        assert_eq!(
            l.C_Decrypt.unwrap()(h, ct.as_mut_ptr(), 256, out.as_mut_ptr(), &mut len),
            CKR_OPERATION_NOT_INITIALIZED
        );
        // A ciphertext of the wrong length ends the operation.
        s.decrypt_init(&Mechanism::RsaPkcs, private).unwrap();
        len = 256;
        assert_eq!(
            l.C_Decrypt.unwrap()(h, ct.as_mut_ptr(), 255, out.as_mut_ptr(), &mut len),
            CKR_ENCRYPTED_DATA_LEN_RANGE
        );
        // Signature size query and too-small buffer.
        s.sign_init(&Mechanism::Sha256RsaPkcs, private).unwrap();
        let mut data = *b"abc";
        len = 255;
        assert_eq!(
            l.C_Sign.unwrap()(h, data.as_mut_ptr(), 3, out.as_mut_ptr(), &mut len),
            CKR_BUFFER_TOO_SMALL
        );
        assert_eq!(len, 256);
        assert_eq!(
            l.C_Sign.unwrap()(h, data.as_mut_ptr(), 3, out.as_mut_ptr(), &mut len),
            CKR_OK
        );
    }
    s.verify(&Mechanism::Sha256RsaPkcs, public, b"abc", &out)
        .unwrap();
}

#[test]
fn key_wrapping_with_oaep_and_aes_key_wrap_pad() {
    let f = Fixture::new();
    let slot = f.token("wrap");
    let s = f.user(slot);
    let (public, private) = generate(&s, 2048, None);
    let aes = s
        .generate_key(
            &Mechanism::AesKeyGen,
            &[
                Attribute::ValueLen(32.into()),
                Attribute::Encrypt(true),
                // Key-wrap separation: a key that wraps sensitive keys (the
                // RSA private key below) must not decrypt.
                Attribute::Decrypt(false),
                Attribute::Wrap(true),
                Attribute::Unwrap(true),
                Attribute::Extractable(true),
            ],
        )
        .unwrap();
    let block = [0x42u8; 16];
    let reference = s.encrypt(&Mechanism::AesEcb, aes, &block).unwrap();
    let aes_template = [
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::AES),
        Attribute::Encrypt(true),
        // Copies of the wrapping key's value that could decrypt would make it
        // refuse to wrap the sensitive private key below.
        Attribute::Decrypt(false),
    ];
    // An AES key under RSA-OAEP and PKCS #1 v1.5.
    let label = b"wrap".to_vec();
    for mech in [
        Mechanism::RsaPkcsOaep(PkcsOaepParams::new(
            MechanismType::SHA256,
            PkcsMgfType::MGF1_SHA256,
            PkcsOaepSource::data_specified(&label),
        )),
        Mechanism::RsaPkcs,
    ] {
        let wrapped = s.wrap_key(&mech, public, aes).unwrap();
        assert_eq!(wrapped.len(), 256);
        let back = s
            .unwrap_key(&mech, private, &wrapped, &aes_template)
            .unwrap();
        assert_eq!(
            s.encrypt(&Mechanism::AesEcb, back, &block).unwrap(),
            reference
        );
        let mut bad = wrapped.clone();
        bad[100] ^= 1;
        assert_rv!(
            s.unwrap_key(&mech, private, &bad, &aes_template),
            WrappedKeyInvalid
        );
    }
    // An RSA private key under AES key wrap with padding (PKCS #8 inside).
    let wrapped = s.wrap_key(&Mechanism::AesKeyWrapPad, aes, private).unwrap();
    let back = s
        .unwrap_key(
            &Mechanism::AesKeyWrapPad,
            aes,
            &wrapped,
            &[
                Attribute::Class(ObjectClass::PRIVATE_KEY),
                Attribute::KeyType(KeyType::RSA),
                Attribute::Sign(true),
            ],
        )
        .unwrap();
    let msg = b"same key";
    assert_eq!(
        s.sign(&Mechanism::Sha256RsaPkcs, back, msg).unwrap(),
        s.sign(&Mechanism::Sha256RsaPkcs, private, msg).unwrap()
    );
    // Unextractable keys are refused.
    let locked = s
        .generate_key(
            &Mechanism::AesKeyGen,
            &[
                Attribute::ValueLen(16.into()),
                Attribute::Extractable(false),
            ],
        )
        .unwrap();
    assert_rv!(
        s.wrap_key(&Mechanism::RsaPkcs, public, locked),
        KeyUnextractable
    );
}

/// A raw `CK_MECHANISM` without parameter.
fn plain_mech(ty: CK_MECHANISM_TYPE) -> CK_MECHANISM {
    CK_MECHANISM {
        mechanism: ty,
        pParameter: std::ptr::null_mut(),
        ulParameterLen: 0,
    }
}

type InitFn = unsafe extern "C" fn(CK_SESSION_HANDLE, *mut CK_MECHANISM, CK_OBJECT_HANDLE) -> CK_RV;
type RunFn = unsafe extern "C" fn(
    CK_SESSION_HANDLE,
    *mut CK_BYTE,
    CK_ULONG,
    *mut CK_BYTE,
    *mut CK_ULONG,
) -> CK_RV;

/// Init, size query, then the call into a buffer of the queried size.
fn recover_call(
    s: &Session,
    init: InitFn,
    run: RunFn,
    mech: CK_MECHANISM_TYPE,
    key: ObjectHandle,
    input: &[u8],
) -> Result<Vec<u8>, CK_RV> {
    let mut input = input.to_vec();
    let mut m = plain_mech(mech);
    // SAFETY: live buffers of the stated lengths throughout.
    unsafe {
        let rv = init(s.handle(), &mut m, key.handle());
        if rv != CKR_OK {
            return Err(rv);
        }
        let mut len: CK_ULONG = 0;
        let rv = run(
            s.handle(),
            input.as_mut_ptr(),
            input.len() as CK_ULONG,
            std::ptr::null_mut(),
            &mut len,
        );
        if rv != CKR_OK {
            return Err(rv);
        }
        let mut out = vec![0u8; len as usize];
        let rv = run(
            s.handle(),
            input.as_mut_ptr(),
            input.len() as CK_ULONG,
            out.as_mut_ptr(),
            &mut len,
        );
        if rv != CKR_OK {
            return Err(rv);
        }
        out.truncate(len as usize);
        Ok(out)
    }
}

/// `C_SignRecover` / `C_VerifyRecover` (base spec §5.13–5.14) with
/// `CKM_RSA_PKCS` and `CKM_RSA_X_509`: the signature is what `C_Sign`
/// makes, recovery gives the data back (PKCS #1 v1.5: without its padding;
/// X.509: the whole block), a short buffer keeps the operation, and a
/// tampered signature or another mechanism is refused.
#[test]
fn sign_and_verify_with_recovery() {
    let f = Fixture::new();
    let slot = f.token("recover");
    let s = f.user(slot);
    let l = raw();
    let (sign_init, sign) = (l.C_SignRecoverInit.unwrap(), l.C_SignRecover.unwrap());
    let (verify_init, verify) = (l.C_VerifyRecoverInit.unwrap(), l.C_VerifyRecover.unwrap());
    for ty in [MechanismType::RSA_PKCS, MechanismType::RSA_X_509] {
        let info = f.p().get_mechanism_info(slot, ty).unwrap();
        assert!(info.sign_recover() && info.verify_recover(), "{ty}");
    }
    let (public, private) = generate(&s, 2048, None);
    let data = b"recover me".to_vec();
    let signature = recover_call(&s, sign_init, sign, CKM_RSA_PKCS, private, &data).unwrap();
    assert_eq!(
        signature,
        s.sign(&Mechanism::RsaPkcs, private, &data).unwrap(),
        "PKCS #1 v1.5 is deterministic: the same signature as C_Sign"
    );
    let recovered =
        recover_call(&s, verify_init, verify, CKM_RSA_PKCS, public, &signature).unwrap();
    assert_eq!(recovered, data);
    // A short buffer: CKR_BUFFER_TOO_SMALL with the exact length, and the
    // operation survives for the next call.
    let mut m = plain_mech(CKM_RSA_PKCS);
    let mut sig = signature.clone();
    // SAFETY: live buffers of the stated lengths.
    unsafe {
        assert_eq!(verify_init(s.handle(), &mut m, public.handle()), CKR_OK);
        let mut small = [0u8; 3];
        let mut len: CK_ULONG = 3;
        let rv = verify(
            s.handle(),
            sig.as_mut_ptr(),
            sig.len() as CK_ULONG,
            small.as_mut_ptr(),
            &mut len,
        );
        assert_eq!((rv, len as usize), (CKR_BUFFER_TOO_SMALL, data.len()));
        let mut out = vec![0u8; len as usize];
        let rv = verify(
            s.handle(),
            sig.as_mut_ptr(),
            sig.len() as CK_ULONG,
            out.as_mut_ptr(),
            &mut len,
        );
        assert_eq!(rv, CKR_OK);
        assert_eq!(out, data);
    }
    // Tampered, truncated, or over-long input.
    let mut bad = signature.clone();
    bad[100] ^= 1;
    assert_eq!(
        recover_call(&s, verify_init, verify, CKM_RSA_PKCS, public, &bad).unwrap_err(),
        CKR_SIGNATURE_INVALID
    );
    assert_eq!(
        recover_call(
            &s,
            verify_init,
            verify,
            CKM_RSA_PKCS,
            public,
            &signature[1..]
        )
        .unwrap_err(),
        CKR_SIGNATURE_LEN_RANGE
    );
    assert_eq!(
        recover_call(&s, sign_init, sign, CKM_RSA_PKCS, private, &[1u8; 246]).unwrap_err(),
        CKR_DATA_LEN_RANGE
    );
    // CKM_RSA_X_509: raw blocks, the data right-aligned in k bytes.
    let block = recover_call(&s, sign_init, sign, CKM_RSA_X_509, private, &data).unwrap();
    assert_eq!(block, s.sign(&Mechanism::RsaX509, private, &data).unwrap());
    let whole = recover_call(&s, verify_init, verify, CKM_RSA_X_509, public, &block).unwrap();
    assert_eq!(whole.len(), 256);
    assert_eq!(&whole[256 - data.len()..], &data[..]);
    assert!(whole[..256 - data.len()].iter().all(|&b| b == 0));
    // A mechanism without recovery, and keys without the usage flag.
    assert_eq!(
        recover_call(&s, sign_init, sign, CKM_SHA256_RSA_PKCS, private, &data).unwrap_err(),
        CKR_MECHANISM_INVALID
    );
    s.update_attributes(private, &[Attribute::SignRecover(false)])
        .unwrap();
    assert_eq!(
        recover_call(&s, sign_init, sign, CKM_RSA_PKCS, private, &data).unwrap_err(),
        CKR_KEY_FUNCTION_NOT_PERMITTED
    );
    s.update_attributes(public, &[Attribute::VerifyRecover(false)])
        .unwrap();
    assert_eq!(
        recover_call(&s, verify_init, verify, CKM_RSA_PKCS, public, &signature).unwrap_err(),
        CKR_KEY_FUNCTION_NOT_PERMITTED
    );
}
