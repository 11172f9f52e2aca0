//! Ed25519 through the C API (mechanisms spec §2.3.5–2.3.6, 2.3.14): key
//! generation, import, known answers (RFC 8032), single- and multi-part
//! signing and verification, the output-buffer conventions and usage rules.
//!
//! The tests are grouped by subject in the modules below; this file holds
//! the helpers they share.

#[path = "../common/mod.rs"]
mod common;

mod batch;
mod digests_and_random;
mod ed448;
mod keys;
mod known_answers;
mod sign_verify;

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::eddsa::{EddsaParams, EddsaSignatureScheme};
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::Session;
use cryptoki_sys::*;

const OID: &[u8] = &[0x06, 0x03, 0x2b, 0x65, 0x70];
const PRINTABLE: &[u8] = b"\x13\x0cedwards25519";
const GNUPG_OID: &[u8] = &[
    0x06, 0x09, 0x2b, 0x06, 0x01, 0x04, 0x01, 0xda, 0x47, 0x0f, 0x01,
];

fn eddsa() -> Mechanism<'static> {
    Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Pure))
}

struct Vector {
    secret: Vec<u8>,
    public: Vec<u8>,
    message: Vec<u8>,
    signature: Vec<u8>,
}

fn rfc8032() -> Vec<Vector> {
    include_str!("../vectors/rfc8032-ed25519.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let f: Vec<_> = l.split(':').collect();
            Vector {
                secret: unhex(f[0]),
                public: unhex(f[1]),
                message: unhex(f[2]),
                signature: unhex(f[3]),
            }
        })
        .collect()
}

fn import_private(s: &Session, secret: &[u8], params: &[u8]) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::PRIVATE_KEY),
        Attribute::KeyType(KeyType::EC_EDWARDS),
        Attribute::EcParams(params.to_vec()),
        Attribute::Value(secret.to_vec()),
        Attribute::Sign(true),
    ])
    .unwrap()
}

fn import_public(s: &Session, point: &[u8], params: &[u8]) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::PUBLIC_KEY),
        Attribute::KeyType(KeyType::EC_EDWARDS),
        Attribute::EcParams(params.to_vec()),
        Attribute::EcPoint(point.to_vec()),
    ])
    .unwrap()
}

fn generate(s: &Session, token: bool) -> (ObjectHandle, ObjectHandle) {
    s.generate_key_pair(
        &Mechanism::EccEdwardsKeyPairGen,
        &[
            Attribute::EcParams(PRINTABLE.to_vec()),
            Attribute::Token(token),
            Attribute::Verify(true),
        ],
        &[
            Attribute::Token(token),
            Attribute::Sign(true),
            Attribute::Label(b"gen".to_vec()),
        ],
    )
    .unwrap()
}
