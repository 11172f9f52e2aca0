//! The PKCS#11 key-management attack catalogue, run against the built
//! module as an attacker with a logged-in session would run it: one test
//! per published attack, each a sequence of C API calls, under each level
//! of the key-management policy (`key_policy = default | strict`).
//!
//! Sources: J. Clulow, "On the Security of PKCS #11" (CHES 2003);
//! M. Bortolozzo, M. Centenaro, R. Focardi, G. Steel, "Attacking and Fixing
//! PKCS#11 Security Tokens" (CCS 2010, the Tookan attacks and the secure
//! configuration); R. Benadjila, T. Calderon, M. Daubignard, "Caml Crush: a
//! PKCS#11 Filtering Proxy" (CARDIS 2014, its filter patches); and the
//! defects of issue 23 found against this token. `docs/SECURITY.md`
//! ("Attack catalogue") maps each test to its source and its defence.
//!
//! Every test states the outcome under both levels. Where a level does not
//! stop an attack (the key was meant to be able to leave), the test runs
//! the attack to the end and checks that it really recovers the key, so
//! the table in the documentation cannot claim more than the token does.

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/ike_params.rs"]
mod ike_params;
#[path = "../common/otp_calls.rs"]
mod otp_calls;
#[path = "../common/raw_calls.rs"]
mod raw_calls;
#[path = "../common/raw_message.rs"]
mod raw_message;
#[path = "../common/tls_calls.rs"]
mod tls_calls;

mod attributes;
mod derivation;
mod ike;
mod iv;
mod kem;
mod key_hashing;
mod operations;
mod otp;
mod prf_oracle;
mod public_key;
mod tls;
mod truncated_mac;
mod wrapping;

use common::*;
use cryptoki::error::RvError;
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::Session;

/// The levels of `key_policy`.
pub const POLICIES: [Policy; 2] = [Policy::Default, Policy::Strict];

/// A level of `key_policy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Default,
    Strict,
}

impl Policy {
    fn name(self) -> &'static str {
        match self {
            Policy::Default => "default",
            Policy::Strict => "strict",
        }
    }
}

/// How an attack ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The attack recovered the secret it was after.
    Recovered,
    /// The token made something weaker than the secret (a short key, a
    /// weak wrap, a MAC under a short key): what is left is an offline
    /// search the test does not run.
    Weakened,
    /// The oracle answered, but told nothing (the step named).
    Blind(&'static str),
    /// The token refused the named step with this code.
    Refused(&'static str, RvError),
}

/// Runs `attack` on a fresh token under `policy` with a logged-in user
/// session; its outcome.
pub fn run(policy: Policy, attack: impl FnOnce(&Session) -> Outcome) -> Outcome {
    let f = Fixture::with_policy(policy.name());
    let slot = f.token("attacks");
    let s = f.user(slot);
    attack(&s)
}

/// Asserts the outcome of `attack` under each level.
#[track_caller]
pub fn expect(attack: fn(&Session) -> Outcome, default: Outcome, strict: Outcome) {
    for (policy, want) in POLICIES.into_iter().zip([default, strict]) {
        let got = run(policy, attack);
        assert_eq!(got, want, "under key_policy = {}", policy.name());
    }
}

/// The outcome of an attack stopped where it reads the key's value: the
/// copy or derived key it made is sensitive.
pub fn value_refused() -> Outcome {
    Outcome::Refused(
        "C_GetAttributeValue (CKA_VALUE)",
        RvError::AttributeSensitive,
    )
}

/// `Err` of a step: the step's name and the token's code.
pub fn step<T>(name: &'static str, r: cryptoki::error::Result<T>) -> Result<T, Outcome> {
    r.map_err(|e| Outcome::Refused(name, rv_of(e)))
}

/// `Err` of a step made through the raw C API: the step's name and the
/// token's code.
pub fn raw_step<T>(name: &'static str, r: Result<T, cryptoki_sys::CK_RV>) -> Result<T, Outcome> {
    r.map_err(|rv| match cryptoki::error::Rv::from(rv) {
        cryptoki::error::Rv::Error(e) => Outcome::Refused(name, e),
        cryptoki::error::Rv::Ok => unreachable!("an error code"),
    })
}

/// Turns a `Result` of steps into the attack's outcome.
pub fn outcome(r: Result<Outcome, Outcome>) -> Outcome {
    r.unwrap_or_else(|o| o)
}

/// Generates an AES-256 session key with the usage flags of `usage` (all
/// others false), sensitive, and extractable as asked.
pub fn aes_key(
    s: &Session,
    extractable: bool,
    usage: &[AttributeType],
) -> cryptoki::error::Result<ObjectHandle> {
    let mut t = vec![
        Attribute::Token(false),
        Attribute::ValueLen(32.into()),
        Attribute::Sensitive(true),
        Attribute::Extractable(extractable),
    ];
    t.extend(usage_flags(usage));
    s.generate_key(&Mechanism::AesKeyGen, &t)
}

/// Every usage flag, true for those in `on`.
pub fn usage_flags(on: &[AttributeType]) -> Vec<Attribute> {
    use AttributeType as T;
    [
        (T::Encrypt, Attribute::Encrypt as fn(bool) -> Attribute),
        (T::Decrypt, Attribute::Decrypt),
        (T::Sign, Attribute::Sign),
        (T::Verify, Attribute::Verify),
        (T::Wrap, Attribute::Wrap),
        (T::Unwrap, Attribute::Unwrap),
        (T::Derive, Attribute::Derive),
    ]
    .into_iter()
    .map(|(ty, make)| make(on.contains(&ty)))
    .collect()
}

/// The template of an AES session key: class, type, `CKA_TOKEN = false`,
/// then `extra`.
pub fn aes_template(extra: &[Attribute]) -> Vec<Attribute> {
    let mut t = vec![
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::AES),
        Attribute::Token(false),
    ];
    t.extend_from_slice(extra);
    t
}

/// A secret key with a value the caller chose (C_CreateObject).
pub fn known_key(
    s: &Session,
    key_type: KeyType,
    value: &[u8],
    usage: &[AttributeType],
) -> cryptoki::error::Result<ObjectHandle> {
    let mut t = vec![
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(key_type),
        Attribute::Token(false),
        Attribute::Value(value.to_vec()),
    ];
    t.extend(usage_flags(usage));
    s.create_object(&t)
}

/// True if `key` (on the token) encrypts a block exactly as AES-ECB under
/// `value` does: the attacker's proof that `value` is the key.
pub fn same_aes_key(s: &Session, key: ObjectHandle, value: &[u8]) -> bool {
    use aes::cipher::{BlockCipherEncrypt, KeyInit};
    let block = [0x5a_u8; 16];
    let Ok(theirs) = s.encrypt(&Mechanism::AesEcb, key, &block) else {
        return false;
    };
    let Ok(cipher) = aes::Aes256::new_from_slice(value) else {
        return false;
    };
    let mut ours = block.into();
    cipher.encrypt_block(&mut ours);
    theirs == ours.as_slice()
}
