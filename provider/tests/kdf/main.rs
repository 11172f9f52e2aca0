//! Key derivation through the C API: HKDF (`CKM_HKDF_DERIVE`,
//! `CKM_HKDF_DATA`, `CKM_HKDF_KEY_GEN`; PKCS #11 3.0 mechanisms spec §2.43)
//! against the RFC 5869 appendix A vectors, the simple derivations of §2.42
//! and §2.16.12 (concatenation, XOR, extraction, AES encryption of data),
//! the NIST SP 800-108 KDFs, and what a derived key inherits from its bases.
//!
//! The tests are grouped by subject in the modules below; this file holds
//! the helpers they share.

#[path = "../common/mod.rs"]
mod common;

mod floor;
mod hkdf;
mod simple;
mod sp800_108;
mod sp800_108_keys;
mod sp800_108_malformed;
mod sp800_108_vectors;

use common::*;
use cryptoki::mechanism::ekdf::AesCbcDeriveParams;
use cryptoki::mechanism::hkdf::{HkdfParams, HkdfSalt};
use cryptoki::mechanism::misc::{ExtractParams, KeyDerivationStringData};
use cryptoki::mechanism::{Mechanism, MechanismType};
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::Session;

use cryptoki_sys::{
    CK_SP800_108_DKM_LENGTH_SUM_OF_KEYS, CK_SP800_108_DKM_LENGTH_SUM_OF_SEGMENTS, CKM_AES_CMAC,
    CKM_SHA256_HMAC, CKM_SP800_108_COUNTER_KDF, CKM_SP800_108_DOUBLE_PIPELINE_KDF,
    CKM_SP800_108_FEEDBACK_KDF,
};
use sp800_108::{Kdf, bytes, counter, ctr, dkm, dkm_len, iter, iter_ctr};

/// A generic secret holding `value`, allowed to derive.
fn secret(s: &Session, value: &[u8], derive: bool) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::GENERIC_SECRET),
        Attribute::Value(value.to_vec()),
        Attribute::Derive(derive),
        Attribute::Token(false),
    ])
    .unwrap()
}

/// Template of an extractable generic secret of `len` bytes.
fn open_secret(len: u64) -> Vec<Attribute> {
    vec![
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::GENERIC_SECRET),
        Attribute::ValueLen(len.into()),
        Attribute::Sensitive(false),
        Attribute::Extractable(true),
        Attribute::Token(false),
    ]
}

fn value(s: &Session, h: ObjectHandle) -> Vec<u8> {
    match &s.get_attributes(h, &[AttributeType::Value]).unwrap()[0] {
        Attribute::Value(v) => v.clone(),
        other => panic!("{other:?}"),
    }
}

fn flags(s: &Session, h: ObjectHandle) -> (bool, bool) {
    let got = s
        .get_attributes(
            h,
            &[
                AttributeType::AlwaysSensitive,
                AttributeType::NeverExtractable,
            ],
        )
        .unwrap();
    match (&got[0], &got[1]) {
        (Attribute::AlwaysSensitive(a), Attribute::NeverExtractable(n)) => (*a, *n),
        other => panic!("{other:?}"),
    }
}
