//! RSA known answers and vectors (mechanisms spec §2.1.6, §2.1.12 PKCS #1
//! v1.5; §2.1.8 OAEP): signatures made by OpenSSL with keys imported with
//! and without CRT values, and verification and OAEP decryption vectors
//! checked against OpenSSL's verdicts.

use super::*;

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
    for v in lines(include_str!("../vectors/rsa-pkcs1v15-sha256-sign.txt")) {
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
    for v in lines(include_str!("../vectors/rsa-pkcs1v15-sha256-verify.txt")) {
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
    for v in lines(include_str!("../vectors/rsa-oaep-sha256.txt")) {
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
