//! The hash-of-the-key derivations (`CKM_<hash>_KEY_DERIVATION`):
//! key-length reduction and protection inheritance.

use super::*;
use crate::derivation::{MESSAGE, derivation_victim, search_byte};

/// `C_DeriveKey` with `CKM_<hash>_KEY_DERIVATION` (cryptoki 0.12 has no
/// such mechanism: through the raw function list).
fn hash_derive(
    s: &Session,
    mech: cryptoki_sys::CK_MECHANISM_TYPE,
    base: ObjectHandle,
    template: &[Attribute],
) -> cryptoki::error::Result<ObjectHandle> {
    let mut m = cryptoki_sys::CK_MECHANISM {
        mechanism: mech,
        pParameter: std::ptr::null_mut(),
        ulParameterLen: 0,
    };
    let mut t: Vec<cryptoki_sys::CK_ATTRIBUTE> = template.iter().map(Into::into).collect();
    let mut h = 0;
    // SAFETY: the template points into `template`, alive for the call.
    let rv = unsafe {
        raw().C_DeriveKey.unwrap()(
            s.handle(),
            &mut m,
            base.handle(),
            t.as_mut_ptr(),
            t.len() as cryptoki_sys::CK_ULONG,
            &mut h,
        )
    };
    cryptoki::error::Rv::from(rv).into_result(cryptoki::context::Function::DeriveKey)?;
    // SAFETY: a handle the module just returned.
    Ok(unsafe { ObjectHandle::new_from_raw(h) })
}

/// Key-length reduction through a hash of the key
/// (`CKM_SHA256_KEY_DERIVATION` truncated to one byte): the derivation
/// floor counts every output byte as secret, and refuses.
#[test]
fn key_length_reduction_by_hashing() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let victim = derivation_victim(s)?;
            let short = step(
                "C_DeriveKey (short key)",
                hash_derive(
                    s,
                    cryptoki_sys::CKM_SHA256_KEY_DERIVATION,
                    victim,
                    &[
                        Attribute::Class(ObjectClass::SECRET_KEY),
                        Attribute::KeyType(KeyType::GENERIC_SECRET),
                        Attribute::ValueLen(1.into()),
                        Attribute::Token(false),
                        Attribute::Sign(true),
                    ],
                ),
            )?;
            let mac = step(
                "C_Sign (HMAC with the short key)",
                s.sign(&Mechanism::Sha256Hmac, short, MESSAGE),
            )?;
            // One byte of SHA-256(victim) is found by 256 tries.
            search_byte(&[], &mac).expect("a byte gives this MAC");
            Ok(Outcome::Weakened)
        })())
    }
    let refused = || Outcome::Refused("C_DeriveKey (short key)", RvError::KeySizeRange);
    expect(attack, refused(), refused());
}

/// The hash of a sensitive key, asked for as a readable key, is sensitive
/// anyway (mechanisms spec, "SHA-1 key derivation": "if the base key has
/// its CKA_SENSITIVE attribute set to CK_TRUE, so does the derived key"):
/// a readable SHA3-256 of the key would be an offline oracle for guesses of
/// a low-entropy key, as `C_DigestKey` would (refused for sensitive keys).
#[test]
fn hash_of_a_sensitive_key_made_readable() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let victim = derivation_victim(s)?;
            let copy = step(
                "C_DeriveKey (readable hash)",
                hash_derive(
                    s,
                    cryptoki_sys::CKM_SHA3_256_KEY_DERIVATION,
                    victim,
                    &[
                        Attribute::Class(ObjectClass::SECRET_KEY),
                        Attribute::KeyType(KeyType::GENERIC_SECRET),
                        Attribute::Token(false),
                        Attribute::Sensitive(false),
                        Attribute::Extractable(true),
                    ],
                ),
            )?;
            super::attributes::read_value(s, copy)
        })())
    }
    expect(attack, value_refused(), value_refused());
}

/// A base that is not extractable (but not sensitive either) gives a hash
/// that is not extractable and cannot be read, whatever the template asks.
#[test]
fn hash_of_an_unextractable_key_stays_unextractable() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let base = step(
                "C_CreateObject (unextractable base)",
                s.create_object(&[
                    Attribute::Class(ObjectClass::SECRET_KEY),
                    Attribute::KeyType(KeyType::GENERIC_SECRET),
                    Attribute::Token(false),
                    Attribute::Sensitive(false),
                    Attribute::Extractable(false),
                    Attribute::Derive(true),
                    Attribute::Value(vec![0x5a; 32]),
                ]),
            )?;
            let k = step(
                "C_DeriveKey (extractable hash)",
                hash_derive(
                    s,
                    cryptoki_sys::CKM_SHA512_KEY_DERIVATION,
                    base,
                    &[
                        Attribute::Class(ObjectClass::SECRET_KEY),
                        Attribute::KeyType(KeyType::GENERIC_SECRET),
                        Attribute::Token(false),
                        Attribute::Sensitive(false),
                        Attribute::Extractable(true),
                    ],
                ),
            )?;
            let attrs = step(
                "C_GetAttributeValue (CKA_EXTRACTABLE)",
                s.get_attributes(k, &[AttributeType::Extractable]),
            )?;
            assert_eq!(attrs, vec![Attribute::Extractable(false)]);
            super::attributes::read_value(s, k)
        })())
    }
    expect(attack, value_refused(), value_refused());
}
