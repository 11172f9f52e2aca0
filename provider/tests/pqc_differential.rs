//! The two back ends agree (default build, where aws-lc-rs is linked): the
//! token runs ML-DSA with a context, HashML-DSA and the deterministic
//! variant on the RustCrypto crate in both builds, and pure ML-DSA with an
//! empty context on aws-lc-rs in the default one (docs/mechanisms.md says
//! which back end runs what, ML-KEM included). aws-lc-rs checks the token
//! through the built module: the same seed gives the same keys (ML-DSA
//! public key and expanded private key; ML-KEM dk), one side signs and the
//! other verifies (the token's deterministic signatures, and a multi-part
//! verification past the 64 KiB the token buffers for aws-lc, run on the
//! crate), one encapsulates and the other decapsulates.
#![cfg(feature = "aws-lc")]

mod common;

use aws_lc_rs::encoding::{AsDer, AsRawBytes};
use aws_lc_rs::kem;
use aws_lc_rs::signature::{self as lc, KeyPair, UnparsedPublicKey};
use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::dsa::{HedgeType, SignAdditionalContext};
use cryptoki::object::{
    Attribute, AttributeType, KeyType, MlDsaParameterSetType, MlKemParameterSetType, ObjectClass,
    ObjectHandle,
};
use cryptoki::session::Session;

fn bytes_of(s: &Session, h: ObjectHandle, ty: AttributeType) -> Vec<u8> {
    match s.get_attributes(h, &[ty]).unwrap().pop() {
        Some(Attribute::Value(v) | Attribute::PublicKeyInfo(v)) => v,
        other => panic!("{ty:?}: {other:?}"),
    }
}

/// A readable private key of `key_type` with `attrs` (set, seed).
fn import(s: &Session, key_type: KeyType, attrs: &[Attribute]) -> ObjectHandle {
    let mut t = vec![
        Attribute::Class(ObjectClass::PRIVATE_KEY),
        Attribute::KeyType(key_type),
        Attribute::Sensitive(false),
        Attribute::Extractable(true),
    ];
    t.extend_from_slice(attrs);
    s.create_object(&t).unwrap()
}

#[test]
fn ml_dsa_keys_and_signatures_agree_with_aws_lc() {
    let f = Fixture::new();
    let s = f.user(f.token("diff-mldsa"));
    let sets = [
        (
            MlDsaParameterSetType::ML_DSA_44,
            &lc::ML_DSA_44_SIGNING,
            &lc::ML_DSA_44,
        ),
        (
            MlDsaParameterSetType::ML_DSA_65,
            &lc::ML_DSA_65_SIGNING,
            &lc::ML_DSA_65,
        ),
        (
            MlDsaParameterSetType::ML_DSA_87,
            &lc::ML_DSA_87_SIGNING,
            &lc::ML_DSA_87,
        ),
    ];
    let mut rng = Rng(0x5eed);
    for (set, signing, verifying) in sets {
        for _ in 0..3 {
            let seed: Vec<u8> = (0..32).map(|_| rng.next() as u8).collect();
            let theirs = lc::PqdsaKeyPair::from_seed(signing, &seed).unwrap();
            let private = import(
                &s,
                KeyType::ML_DSA,
                &[
                    Attribute::ParameterSet(set.into()),
                    Attribute::Seed(seed),
                    Attribute::Sign(true),
                ],
            );
            // Same keys: the expanded private key and the SPKI.
            let expanded = theirs.private_key().as_raw_bytes().unwrap();
            assert_eq!(
                bytes_of(&s, private, AttributeType::Value),
                expanded.as_ref()
            );
            let spki = theirs.public_key().as_der().unwrap();
            assert_eq!(
                bytes_of(&s, private, AttributeType::PublicKeyInfo),
                spki.as_ref()
            );
            let public = s
                .create_object(&[
                    Attribute::Class(ObjectClass::PUBLIC_KEY),
                    Attribute::KeyType(KeyType::ML_DSA),
                    Attribute::ParameterSet(set.into()),
                    Attribute::Value(theirs.public_key().as_ref().to_vec()),
                    Attribute::Verify(true),
                ])
                .unwrap();
            // aws-lc signs (hedged, empty context), the token verifies.
            let msg = b"differential message";
            let mut sig = vec![0u8; 4627];
            let n = theirs.sign(msg, &mut sig).unwrap();
            let pure = Mechanism::MlDsa(SignAdditionalContext::new(HedgeType::Preferred, None));
            s.verify(&pure, public, msg, &sig[..n]).unwrap();
            assert!(s.verify(&pure, public, b"other", &sig[..n]).is_err());
            // The token signs, aws-lc verifies.
            let ours = s.sign(&pure, private, msg).unwrap();
            UnparsedPublicKey::new(verifying, theirs.public_key().as_ref())
                .verify(msg, &ours)
                .unwrap();
            assert!(
                UnparsedPublicKey::new(verifying, theirs.public_key().as_ref())
                    .verify(b"other", &ours)
                    .is_err()
            );
            // The crate's paths: the token signs deterministically (on μ),
            // aws-lc verifies; aws-lc signs a long message, the token
            // verifies it in parts past its buffer (on μ).
            let det = Mechanism::MlDsa(SignAdditionalContext::new(
                HedgeType::DeterministicRequired,
                Some(b""),
            ));
            let ours = s.sign(&det, private, msg).unwrap();
            UnparsedPublicKey::new(verifying, theirs.public_key().as_ref())
                .verify(msg, &ours)
                .unwrap();
            let long: Vec<u8> = (0..70_000u32).map(|i| i as u8).collect();
            let n = theirs.sign(&long, &mut sig).unwrap();
            s.verify_init(&pure, public).unwrap();
            for part in long.chunks(8192) {
                s.verify_update(part).unwrap();
            }
            s.verify_final(&sig[..n]).unwrap();
        }
    }
}

#[test]
fn ml_kem_secrets_agree_with_aws_lc_both_ways() {
    let f = Fixture::new();
    let s = f.user(f.token("diff-mlkem"));
    let sets = [
        (MlKemParameterSetType::ML_KEM_512, &kem::ML_KEM_512),
        (MlKemParameterSetType::ML_KEM_768, &kem::ML_KEM_768),
        (MlKemParameterSetType::ML_KEM_1024, &kem::ML_KEM_1024),
    ];
    let readable = [
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::GENERIC_SECRET),
        Attribute::Sensitive(false),
        Attribute::Extractable(true),
    ];
    let mut rng = Rng(0x6b656d);
    for (set, alg) in sets {
        for _ in 0..3 {
            let seed: Vec<u8> = (0..64).map(|_| rng.next() as u8).collect();
            let private = import(
                &s,
                KeyType::ML_KEM,
                &[Attribute::ParameterSet(set.into()), Attribute::Seed(seed)],
            );
            // aws-lc takes the expanded dk the token derived from the seed.
            let dk = bytes_of(&s, private, AttributeType::Value);
            let theirs = kem::DecapsulationKey::new(alg, &dk).unwrap();
            // (aws-lc derives no ek from a raw dk: it is read from dk, where
            // FIPS 203 puts it after dk_PKE, and must be the SPKI's.)
            // dk = dk_PKE (384k) ‖ ek (384k + 32) ‖ H(ek) ‖ z: 768k + 96 bytes.
            let k = (dk.len() - 96) / 768;
            let ek_bytes = dk[384 * k..768 * k + 32].to_vec();
            assert!(bytes_of(&s, private, AttributeType::PublicKeyInfo).ends_with(&ek_bytes));
            let ek = kem::EncapsulationKey::new(alg, &ek_bytes).unwrap();
            // aws-lc encapsulates, the token decapsulates.
            let (ct, secret) = ek.encapsulate().unwrap();
            let k = s
                .decapsulate_key(&Mechanism::MlKem, private, &readable, ct.as_ref())
                .unwrap();
            assert_eq!(bytes_of(&s, k, AttributeType::Value), secret.as_ref());
            // The token encapsulates to the same ek, aws-lc decapsulates.
            let public = s
                .create_object(&[
                    Attribute::Class(ObjectClass::PUBLIC_KEY),
                    Attribute::KeyType(KeyType::ML_KEM),
                    Attribute::ParameterSet(set.into()),
                    Attribute::Value(ek_bytes.clone()),
                ])
                .unwrap();
            let (ct, k) = s
                .encapsulate_key(&Mechanism::MlKem, public, &readable)
                .unwrap();
            let theirs_secret = theirs.decapsulate(ct.as_slice().into()).unwrap();
            assert_eq!(
                bytes_of(&s, k, AttributeType::Value),
                theirs_secret.as_ref()
            );
        }
    }
}
