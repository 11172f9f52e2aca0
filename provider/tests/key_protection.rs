//! Key protection holds against a caller with a session: sensitive values
//! never leak through side doors of the API (searches, digests, wrapping
//! templates, re-authentication).

mod common;

use common::*;
use cryptoki::object::{Attribute, KeyType, ObjectClass};

/// `C_FindObjects` with `CKA_VALUE` in the template was an equality oracle
/// on sensitive values of session and public objects: a guess that matched
/// returned the key's handle. A sensitive value takes no part in matching.
#[test]
fn searches_never_match_on_sensitive_values() {
    let f = Fixture::new();
    let slot = f.token("find-oracle");
    let s = f.user(slot);
    let value = vec![0x42u8; 32];
    let secret = |sensitive: bool, extractable: bool, token: bool, private: bool| {
        s.create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::AES),
            Attribute::Value(value.clone()),
            Attribute::Sensitive(sensitive),
            Attribute::Extractable(extractable),
            Attribute::Token(token),
            Attribute::Private(private),
            Attribute::Label(format!("k-{sensitive}-{extractable}-{token}-{private}").into()),
        ])
        .unwrap()
    };
    let by_value = |v: &[u8]| {
        s.find_objects(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::Value(v.to_vec()),
        ])
        .unwrap()
    };
    for token in [false, true] {
        for private in [false, true] {
            secret(true, true, token, private);
            secret(false, false, token, private);
        }
    }
    // Neither the right guess nor a wrong one finds a sensitive or
    // unextractable key (before the fix the right guess found the session
    // and public ones).
    assert!(by_value(&value).is_empty(), "{:?}", by_value(&value));
    assert!(by_value(&[0x43; 32]).is_empty());
    // A value the caller may read anyway still matches (session and public
    // objects; private token objects keep theirs sealed and never match).
    let readable = secret(false, true, false, false);
    assert_eq!(by_value(&value), vec![readable]);
    // Other attributes of the protected keys still match.
    let all = s
        .find_objects(&[Attribute::Class(ObjectClass::SECRET_KEY)])
        .unwrap();
    assert_eq!(all.len(), 9);
}
