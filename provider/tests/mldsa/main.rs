//! ML-DSA (FIPS 204; PKCS#11 3.2 `CKK_ML_DSA`, `CKM_ML_DSA_KEY_PAIR_GEN`,
//! `CKM_ML_DSA`, `CKM_HASH_ML_DSA`, `CKM_HASH_ML_DSA_<hash>`) through the C
//! API: key generation and import, persistence, wrapping, signatures with
//! their parameters, and the C2SP Wycheproof known answers.
//!
//! The tests are grouped by subject in the modules below; this file holds
//! the helpers they share.

#[path = "../common/acvp.rs"]
mod acvp_data;
#[path = "../common/mod.rs"]
mod common;

mod acvp;
mod backends;
mod keys;
mod known_answers;
mod message;
mod sign_verify;

use acvp_data::acvp;
use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::dsa::{HashSignAdditionalContext, HedgeType, SignAdditionalContext};
use cryptoki::object::{
    Attribute, AttributeType, KeyType, MlDsaParameterSetType, ObjectClass, ObjectHandle,
};
use cryptoki::session::Session;
use cryptoki_sys::*;

/// The three parameter sets with their public key and signature lengths.
const SETS: [(MlDsaParameterSetType, usize, usize); 3] = [
    (MlDsaParameterSetType::ML_DSA_44, 1312, 2420),
    (MlDsaParameterSetType::ML_DSA_65, 1952, 3309),
    (MlDsaParameterSetType::ML_DSA_87, 2592, 4627),
];

fn ml_dsa(hedge: HedgeType, context: Option<&[u8]>) -> Mechanism<'_> {
    Mechanism::MlDsa(SignAdditionalContext::new(hedge, context))
}

fn deterministic(context: &[u8]) -> Mechanism<'_> {
    ml_dsa(HedgeType::DeterministicRequired, Some(context))
}

/// A key pair of `set`, on the token if `token`.
fn generate(s: &Session, set: MlDsaParameterSetType, token: bool) -> (ObjectHandle, ObjectHandle) {
    s.generate_key_pair(
        &Mechanism::MlDsaKeyPairGen,
        &[
            Attribute::Token(token),
            Attribute::ParameterSet(set.into()),
            Attribute::Verify(true),
            Attribute::Label(b"mldsa".to_vec()),
        ],
        &[
            Attribute::Token(token),
            Attribute::Sign(true),
            Attribute::Label(b"mldsa".to_vec()),
        ],
    )
    .unwrap()
}

/// A private key of `set` imported from its seed.
fn import_seed(
    s: &Session,
    set: MlDsaParameterSetType,
    seed: &[u8],
) -> cryptoki::error::Result<ObjectHandle> {
    s.create_object(&[
        Attribute::Class(ObjectClass::PRIVATE_KEY),
        Attribute::KeyType(KeyType::ML_DSA),
        Attribute::ParameterSet(set.into()),
        Attribute::Seed(seed.to_vec()),
        Attribute::Sign(true),
    ])
}

/// A public key of `set` imported from its encoding.
fn import_public(
    s: &Session,
    set: MlDsaParameterSetType,
    value: &[u8],
) -> cryptoki::error::Result<ObjectHandle> {
    s.create_object(&[
        Attribute::Class(ObjectClass::PUBLIC_KEY),
        Attribute::KeyType(KeyType::ML_DSA),
        Attribute::ParameterSet(set.into()),
        Attribute::Value(value.to_vec()),
        Attribute::Verify(true),
    ])
}

/// A byte-string attribute of an object.
fn bytes_of(s: &Session, h: ObjectHandle, ty: AttributeType) -> Vec<u8> {
    match s.get_attributes(h, &[ty]).unwrap().pop() {
        Some(Attribute::Value(v) | Attribute::PublicKeyInfo(v) | Attribute::Seed(v)) => v,
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
