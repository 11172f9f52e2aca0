//! SLH-DSA (FIPS 205; PKCS#11 3.2 `CKK_SLH_DSA`, `CKM_SLH_DSA_KEY_PAIR_GEN`,
//! `CKM_SLH_DSA`, `CKM_HASH_SLH_DSA`, `CKM_HASH_SLH_DSA_<hash>`) through the
//! C API: key generation and import, persistence, wrapping, signatures
//! with their parameters, and the NIST ACVP keyGen known answers.
//!
//! The s parameter sets sign slowly (seconds per signature for the
//! 192/256-bit ones), so the tests sign with the f sets and SHA2-128s
//! except where a set itself is under test.
//!
//! The tests are grouped by subject in the modules below; this file holds
//! the helpers they share.

#[path = "../common/acvp.rs"]
mod acvp_data;
#[path = "../common/mod.rs"]
mod common;

mod acvp;
mod differential;
mod keys;
mod known_answers;
mod message;
mod sign_verify;

use acvp_data::acvp;
use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::dsa::{HashSignAdditionalContext, HedgeType, SignAdditionalContext};
use cryptoki::object::{
    Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle, SlhDsaParameterSetType,
};
use cryptoki::session::Session;
use cryptoki_sys::*;

type Set = SlhDsaParameterSetType;

/// The twelve parameter sets with n (bytes) and their signature length.
const SETS: [(Set, usize, usize); 12] = [
    (Set::SHA2_128S, 16, 7856),
    (Set::SHAKE_128S, 16, 7856),
    (Set::SHA2_128F, 16, 17088),
    (Set::SHAKE_128F, 16, 17088),
    (Set::SHA2_192S, 24, 16224),
    (Set::SHAKE_192S, 24, 16224),
    (Set::SHA2_192F, 24, 35664),
    (Set::SHAKE_192F, 24, 35664),
    (Set::SHA2_256S, 32, 29792),
    (Set::SHAKE_256S, 32, 29792),
    (Set::SHA2_256F, 32, 49856),
    (Set::SHAKE_256F, 32, 49856),
];

fn slh_dsa(hedge: HedgeType, context: Option<&[u8]>) -> Mechanism<'_> {
    Mechanism::SlhDsa(SignAdditionalContext::new(hedge, context))
}

fn deterministic(context: &[u8]) -> Mechanism<'_> {
    slh_dsa(HedgeType::DeterministicRequired, Some(context))
}

/// A key pair of `set`, on the token if `token`.
fn generate(s: &Session, set: Set, token: bool) -> (ObjectHandle, ObjectHandle) {
    s.generate_key_pair(
        &Mechanism::SlhDsaKeyPairGen,
        &[
            Attribute::Token(token),
            Attribute::ParameterSet(set.into()),
            Attribute::Verify(true),
            Attribute::Label(b"slhdsa".to_vec()),
        ],
        &[
            Attribute::Token(token),
            Attribute::Sign(true),
            Attribute::Label(b"slhdsa".to_vec()),
        ],
    )
    .unwrap()
}

/// A private key of `set` imported from SK.seed ‖ SK.prf ‖ PK.seed ‖ PK.root.
fn import_private(s: &Session, set: Set, value: &[u8]) -> cryptoki::error::Result<ObjectHandle> {
    s.create_object(&[
        Attribute::Class(ObjectClass::PRIVATE_KEY),
        Attribute::KeyType(KeyType::SLH_DSA),
        Attribute::ParameterSet(set.into()),
        Attribute::Value(value.to_vec()),
        Attribute::Sign(true),
    ])
}

/// A public key of `set` imported from PK.seed ‖ PK.root.
fn import_public(s: &Session, set: Set, value: &[u8]) -> cryptoki::error::Result<ObjectHandle> {
    s.create_object(&[
        Attribute::Class(ObjectClass::PUBLIC_KEY),
        Attribute::KeyType(KeyType::SLH_DSA),
        Attribute::ParameterSet(set.into()),
        Attribute::Value(value.to_vec()),
        Attribute::Verify(true),
    ])
}

/// A byte-string attribute of an object.
fn bytes_of(s: &Session, h: ObjectHandle, ty: AttributeType) -> Vec<u8> {
    match s.get_attributes(h, &[ty]).unwrap().pop() {
        Some(Attribute::Value(v) | Attribute::PublicKeyInfo(v)) => v,
        other => panic!("{ty:?}: {other:?}"),
    }
}

/// The `CKA_PARAMETER_SET` of an object.
fn parameter_set_of(s: &Session, h: ObjectHandle) -> CK_ULONG {
    match s
        .get_attributes(h, &[AttributeType::ParameterSet])
        .unwrap()
        .pop()
    {
        Some(Attribute::ParameterSet(p)) => CK_ULONG::from(cryptoki::types::Ulong::from(p)),
        other => panic!("{other:?}"),
    }
}
