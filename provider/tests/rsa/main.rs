//! RSA through the C API (mechanisms spec §2.1): PKCS #1 v1.5 known
//! answers (made by OpenSSL) with keys imported with and without CRT values,
//! verification and OAEP decryption vectors checked against OpenSSL's verdicts, PSS / OAEP round
//! trips over every hash and MGF, raw X.509, key generation and the public
//! exponent, the AtMost output path of C_Decrypt, and key wrapping.
//!
//! The tests are grouped by subject in the modules below; this file holds
//! the helpers they share.

#[path = "../common/mod.rs"]
mod common;

mod decrypt_and_wrap;
mod key_generation;
mod known_answers;
mod legacy_public;
mod pss_oaep;
mod recovery;

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
