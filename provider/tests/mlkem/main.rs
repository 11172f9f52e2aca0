//! ML-KEM (FIPS 203; PKCS#11 3.2 `CKK_ML_KEM`, `CKM_ML_KEM_KEY_PAIR_GEN`,
//! `CKM_ML_KEM` with `C_EncapsulateKey` / `C_DecapsulateKey`) through the C
//! API: key generation and import, the two calls and the keys they make,
//! persistence, wrapping, and known answers (C2SP Wycheproof, NIST ACVP).
//!
//! The tests are grouped by subject in the modules below; this file holds
//! the helpers they share.

#[path = "../common/acvp.rs"]
mod acvp_data;
#[path = "../common/mod.rs"]
mod common;

mod acvp;
mod keys;
mod known_answers;
mod raw;
mod secrets;

use acvp_data::acvp;
use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{
    Attribute, AttributeType, KeyType, MlKemParameterSetType, ObjectClass, ObjectHandle,
};
use cryptoki::session::Session;
use cryptoki_sys::*;

/// The three parameter sets with their ek, dk and ciphertext lengths.
const SETS: [(MlKemParameterSetType, usize, usize, usize); 3] = [
    (MlKemParameterSetType::ML_KEM_512, 800, 1632, 768),
    (MlKemParameterSetType::ML_KEM_768, 1184, 2400, 1088),
    (MlKemParameterSetType::ML_KEM_1024, 1568, 3168, 1568),
];

/// A key pair of `set`, on the token if `token`, with extra private-key
/// attributes.
fn generate_with(
    s: &Session,
    set: MlKemParameterSetType,
    token: bool,
    private_extra: &[Attribute],
) -> (ObjectHandle, ObjectHandle) {
    let mut private = vec![Attribute::Token(token), Attribute::Label(b"mlkem".to_vec())];
    private.extend_from_slice(private_extra);
    s.generate_key_pair(
        &Mechanism::MlKemKeyPairGen,
        &[
            Attribute::Token(token),
            Attribute::ParameterSet(set.into()),
            Attribute::Label(b"mlkem".to_vec()),
        ],
        &private,
    )
    .unwrap()
}

/// A session key pair of `set`.
fn generate(s: &Session, set: MlKemParameterSetType) -> (ObjectHandle, ObjectHandle) {
    generate_with(s, set, false, &[])
}

/// A private key of `set` imported with `values` (`CKA_SEED` and/or
/// `CKA_VALUE`), readable so its values can be compared.
fn import_private(
    s: &Session,
    set: MlKemParameterSetType,
    values: &[Attribute],
) -> cryptoki::error::Result<ObjectHandle> {
    let mut t = vec![
        Attribute::Class(ObjectClass::PRIVATE_KEY),
        Attribute::KeyType(KeyType::ML_KEM),
        Attribute::ParameterSet(set.into()),
        Attribute::Sensitive(false),
        Attribute::Extractable(true),
    ];
    t.extend_from_slice(values);
    s.create_object(&t)
}

/// An encapsulation key of `set` imported from its encoding.
fn import_public(
    s: &Session,
    set: MlKemParameterSetType,
    value: &[u8],
) -> cryptoki::error::Result<ObjectHandle> {
    s.create_object(&[
        Attribute::Class(ObjectClass::PUBLIC_KEY),
        Attribute::KeyType(KeyType::ML_KEM),
        Attribute::ParameterSet(set.into()),
        Attribute::Value(value.to_vec()),
    ])
}

/// A byte-string attribute of an object.
fn bytes_of(s: &Session, h: ObjectHandle, ty: AttributeType) -> Vec<u8> {
    match s.get_attributes(h, &[ty]).unwrap().pop() {
        Some(Attribute::Value(v) | Attribute::PublicKeyInfo(v) | Attribute::Seed(v)) => v,
        other => panic!("{ty:?}: {other:?}"),
    }
}

/// A boolean attribute of an object.
fn flag_of(s: &Session, h: ObjectHandle, ty: AttributeType) -> bool {
    match s.get_attributes(h, &[ty]).unwrap().pop() {
        Some(
            Attribute::Local(b)
            | Attribute::AlwaysSensitive(b)
            | Attribute::NeverExtractable(b)
            | Attribute::Sensitive(b)
            | Attribute::Encapsulate(b)
            | Attribute::Decapsulate(b),
        ) => b,
        other => panic!("{ty:?}: {other:?}"),
    }
}

/// The template of a readable session secret key of `key_type`, with
/// `extra` attributes.
fn readable(key_type: KeyType, extra: &[Attribute]) -> Vec<Attribute> {
    let mut t = vec![
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(key_type),
        Attribute::Token(false),
        Attribute::Sensitive(false),
        Attribute::Extractable(true),
    ];
    t.extend_from_slice(extra);
    t
}

/// Decapsulates `ct` into a readable generic secret and returns its value.
fn decapsulated_value(s: &Session, private: ObjectHandle, ct: &[u8]) -> Vec<u8> {
    let k = s
        .decapsulate_key(
            &Mechanism::MlKem,
            private,
            &readable(KeyType::GENERIC_SECRET, &[]),
            ct,
        )
        .unwrap();
    bytes_of(s, k, AttributeType::Value)
}
