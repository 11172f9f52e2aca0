//! ECDSA and ECDH on P-256 / P-384 through the C API (mechanisms spec §2.3):
//! RFC 6979 known answers, verification vectors checked against OpenSSL's
//! verdicts, generation, import forms, multi-part, and key derivation.

mod common;

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::elliptic_curve::{EcKdf, Ecdh1DeriveParams};
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::Session;

const P256: &[u8] = &[0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const P384: &[u8] = &[0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x22];

fn params(curve: &str) -> &'static [u8] {
    if curve == "P-256" { P256 } else { P384 }
}

fn digest(hash: &str, msg: &[u8], s: &Session) -> Vec<u8> {
    let m = match hash {
        "sha256" => Mechanism::Sha256,
        "sha384" => Mechanism::Sha384,
        other => panic!("{other}"),
    };
    s.digest(&m, msg).unwrap()
}

fn public_key(s: &Session, params: &[u8], point: Vec<u8>) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::PUBLIC_KEY),
        Attribute::KeyType(KeyType::EC),
        Attribute::EcParams(params.to_vec()),
        Attribute::EcPoint(point),
    ])
    .unwrap()
}

fn private_key(s: &Session, params: &[u8], value: Vec<u8>) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::PRIVATE_KEY),
        Attribute::KeyType(KeyType::EC),
        Attribute::EcParams(params.to_vec()),
        Attribute::Value(value),
        Attribute::Derive(true),
    ])
    .unwrap()
}

#[test]
fn rfc6979_deterministic_signatures() {
    let f = Fixture::new();
    // The aws-lc build signs with random nonces: there the known answers
    // must verify and our signatures must verify, not equal them.
    let randomized = is_aws_lc(&f);
    let slot = f.token("rfc6979");
    let s = f.user(slot);
    for line in include_str!("vectors/rfc6979-ecdsa.txt")
        .lines()
        .filter(|l| !l.starts_with('#'))
    {
        let v: Vec<_> = line.split(':').collect();
        let key = private_key(&s, params(v[0]), unhex(v[2]));
        let expected = [unhex(v[4]), unhex(v[5])].concat();
        let msg = unhex(v[3]);
        // Hash-and-sign mechanism, single and multi-part, and raw CKM_ECDSA on the digest.
        let mech = if v[1] == "sha256" {
            Mechanism::EcdsaSha256
        } else {
            Mechanism::EcdsaSha384
        };
        let check: Box<dyn Fn(Vec<u8>)> = if randomized {
            let point = match s
                .get_attributes(key, &[AttributeType::EcPoint])
                .unwrap()
                .remove(0)
            {
                Attribute::EcPoint(p) => p,
                other => panic!("{other:?}"),
            };
            let public = public_key(&s, params(v[0]), point);
            s.verify(&mech, public, &msg, &expected).unwrap();
            let (s, mech, msg) = (&s, &mech, &msg);
            Box::new(move |sig: Vec<u8>| {
                assert_eq!(sig.len(), expected.len());
                s.verify(mech, public, msg, &sig).unwrap();
            })
        } else {
            let name = v[0];
            Box::new(move |sig: Vec<u8>| assert_eq!(sig, expected, "{name}"))
        };
        check(s.sign(&mech, key, &msg).unwrap());
        s.sign_init(&mech, key).unwrap();
        s.sign_update(&msg[..2]).unwrap();
        s.sign_update(&msg[2..]).unwrap();
        check(s.sign_final().unwrap());
        check(
            s.sign(&Mechanism::Ecdsa, key, &digest(v[1], &msg, &s))
                .unwrap(),
        );
    }
}

#[test]
fn verification_vectors_match_openssl() {
    let f = Fixture::new();
    let slot = f.token("ecverify");
    let s = f.user(slot);
    let mut checked = 0;
    for line in include_str!("vectors/ecdsa-verify.txt")
        .lines()
        .filter(|l| !l.starts_with('#'))
    {
        let v: Vec<_> = line.split(':').collect();
        let point = [vec![0x04], unhex(v[2]), unhex(v[3])].concat();
        // Raw point on import half the time, DER the other half.
        let encoded = if checked % 2 == 0 {
            point.clone()
        } else {
            [vec![0x04, point.len() as u8], point.clone()].concat()
        };
        let key = public_key(&s, params(v[0]), encoded);
        let sig = [unhex(v[5]), unhex(v[6])].concat();
        let msg = unhex(v[4]);
        let mech = if v[1] == "sha256" {
            Mechanism::EcdsaSha256
        } else {
            Mechanism::EcdsaSha384
        };
        let ours = s.verify(&mech, key, &msg, &sig);
        assert_eq!(ours.is_ok(), v[7] == "1", "line {line}: {ours:?}");
        if let Err(e) = ours {
            assert_eq!(rv_of(e), cryptoki::error::RvError::SignatureInvalid);
        }
        checked += 1;
    }
    assert!(checked > 30);
}

#[test]
fn generation_import_forms_and_lengths() {
    let f = Fixture::new();
    let slot = f.token("ecgen");
    let s = f.user(slot);
    for (p, len) in [(P256, 64usize), (P384, 96)] {
        let (public, private) = s
            .generate_key_pair(
                &Mechanism::EccKeyPairGen,
                &[Attribute::EcParams(p.to_vec()), Attribute::Token(true)],
                &[Attribute::Token(true), Attribute::Derive(true)],
            )
            .unwrap();
        let point = match s
            .get_attributes(public, &[AttributeType::EcPoint])
            .unwrap()
            .pop()
        {
            Some(Attribute::EcPoint(pt)) => pt,
            other => panic!("{other:?}"),
        };
        assert_eq!(point[0], 0x04, "DER OCTET STRING");
        assert_eq!(point[2], 0x04, "uncompressed point");
        assert_eq!(point.len(), 2 + 1 + len);
        let msg = vec![3u8; 100];
        let sig = s.sign(&Mechanism::EcdsaSha512, private, &msg).unwrap();
        assert_eq!(sig.len(), len);
        s.verify(&Mechanism::EcdsaSha512, public, &msg, &sig)
            .unwrap();
        assert_rv!(
            s.verify(&Mechanism::EcdsaSha512, public, &msg, &sig[1..]),
            SignatureLenRange
        );
        // Short and long inputs to raw CKM_ECDSA: hashes of any size.
        for h in [vec![1u8; 20], vec![2u8; 64]] {
            let sig = s.sign(&Mechanism::Ecdsa, private, &h).unwrap();
            s.verify(&Mechanism::Ecdsa, public, &h, &sig).unwrap();
        }
    }
    // The printable curve name is accepted.
    let named = s.generate_key_pair(
        &Mechanism::EccKeyPairGen,
        &[Attribute::EcParams(b"\x13\x0aprime256v1".to_vec())],
        &[],
    );
    assert!(named.is_ok());
    assert_rv!(
        s.generate_key_pair(
            &Mechanism::EccKeyPairGen,
            &[Attribute::EcParams(b"\x13\x09secp521r1".to_vec())],
            &[]
        ),
        CurveNotSupported
    );
    assert_rv!(
        s.generate_key_pair(&Mechanism::EccKeyPairGen, &[], &[]),
        TemplateIncomplete
    );
    // An Ed25519 key cannot do ECDSA.
    let (_, ed) = s
        .generate_key_pair(
            &Mechanism::EccEdwardsKeyPairGen,
            &[Attribute::EcParams(b"\x13\x0cedwards25519".to_vec())],
            &[],
        )
        .unwrap();
    assert_rv!(s.sign(&Mechanism::Ecdsa, ed, &[0; 32]), KeyTypeInconsistent);
}

#[test]
fn ecdh_derives_the_same_secret_both_ways() {
    let f = Fixture::new();
    let slot = f.token("ecdh");
    let s = f.user(slot);
    for p in [P256, P384] {
        let make = || {
            s.generate_key_pair(
                &Mechanism::EccKeyPairGen,
                &[Attribute::EcParams(p.to_vec())],
                &[Attribute::Derive(true)],
            )
            .unwrap()
        };
        let (a_pub, a_priv) = make();
        let (b_pub, b_priv) = make();
        let point = |h| match s
            .get_attributes(h, &[AttributeType::EcPoint])
            .unwrap()
            .pop()
        {
            Some(Attribute::EcPoint(pt)) => pt,
            other => panic!("{other:?}"),
        };
        let (pa, pb) = (point(a_pub), point(b_pub));
        let template = [
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Sensitive(false),
            Attribute::Extractable(true),
        ];
        // Public data as DER (a to b) and raw (b to a).
        let ab = s
            .derive_key(
                &Mechanism::Ecdh1Derive(Ecdh1DeriveParams::new(EcKdf::null(), &pb)),
                a_priv,
                &template,
            )
            .unwrap();
        let ba = s
            .derive_key(
                &Mechanism::Ecdh1Derive(Ecdh1DeriveParams::new(EcKdf::null(), &pa[2..])),
                b_priv,
                &template,
            )
            .unwrap();
        let value = |h| s.get_attributes(h, &[AttributeType::Value]).unwrap();
        assert_eq!(value(ab), value(ba));
        // SHA-256 KDF into an AES key that then works.
        let aes_template = [
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::AES),
            Attribute::ValueLen(32.into()),
            Attribute::Sensitive(false),
            Attribute::Extractable(true),
        ];
        let k1 = s
            .derive_key(
                &Mechanism::Ecdh1Derive(Ecdh1DeriveParams::new(EcKdf::sha256(&[]), &pb)),
                a_priv,
                &aes_template,
            )
            .unwrap();
        let k2 = s
            .derive_key(
                &Mechanism::Ecdh1Derive(Ecdh1DeriveParams::new(EcKdf::sha256(&[]), &pa)),
                b_priv,
                &aes_template,
            )
            .unwrap();
        assert_eq!(value(k1), value(k2));
        assert_ne!(value(k1), value(ab));
        let attrs = s
            .get_attributes(k1, &[AttributeType::ValueLen, AttributeType::Local])
            .unwrap();
        assert_eq!(
            attrs,
            vec![Attribute::ValueLen(32.into()), Attribute::Local(false)]
        );
        // A point on the wrong curve is a parameter error.
        let other = if p == P256 {
            vec![4u8; 97]
        } else {
            vec![4u8; 65]
        };
        assert_rv!(
            s.derive_key(
                &Mechanism::Ecdh1Derive(Ecdh1DeriveParams::new(EcKdf::null(), &other)),
                a_priv,
                &template
            ),
            MechanismParamInvalid
        );
    }
}
