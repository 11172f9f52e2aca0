//! Attacks on the attributes themselves (CCS 2010's attribute changes,
//! Caml Crush's sensitive-leak and sticky-attribute filters): flipping
//! protection flags, reading sensitive values, oracles on them, widening
//! usage, copying a private key into a public one.

use super::*;
use cryptoki::session::UserType;

/// The victim: AES-256, generated, sensitive, not extractable, encrypts.
fn victim(s: &Session) -> Result<ObjectHandle, Outcome> {
    step(
        "C_GenerateKey (victim)",
        aes_key(s, false, &[AttributeType::Encrypt]),
    )
}

/// Reads `key`'s `CKA_VALUE` (the attack's success if it is the key).
pub fn read_value(s: &Session, key: ObjectHandle) -> Result<Outcome, Outcome> {
    let info = step(
        "C_GetAttributeValue (CKA_VALUE)",
        s.get_attribute_info(key, &[AttributeType::Value]),
    )?;
    if matches!(
        info.first(),
        Some(cryptoki::object::AttributeInfo::Sensitive)
    ) {
        return Err(Outcome::Refused(
            "C_GetAttributeValue (CKA_VALUE)",
            RvError::AttributeSensitive,
        ));
    }
    let v = step(
        "C_GetAttributeValue (CKA_VALUE)",
        s.get_attributes(key, &[AttributeType::Value]),
    )?;
    match v.first() {
        Some(Attribute::Value(x)) if same_aes_key(s, key, x) => Ok(Outcome::Recovered),
        other => panic!("{other:?}"),
    }
}

#[test]
fn read_sensitive_value() {
    fn attack(s: &Session) -> Outcome {
        outcome(victim(s).and_then(|v| read_value(s, v)))
    }
    expect(attack, value_refused(), value_refused());
}

/// Sensitive turned off, by `C_SetAttributeValue` and in a copy.
#[test]
fn sensitive_switched_off() {
    fn by_set(s: &Session) -> Outcome {
        outcome((|| {
            let v = step(
                "C_GenerateKey (victim)",
                aes_key(s, true, &[AttributeType::Encrypt]),
            )?;
            step(
                "C_SetAttributeValue (CKA_SENSITIVE = false)",
                s.update_attributes(v, &[Attribute::Sensitive(false)]),
            )?;
            read_value(s, v)
        })())
    }
    fn by_copy(s: &Session) -> Outcome {
        outcome((|| {
            let v = step(
                "C_GenerateKey (victim)",
                aes_key(s, true, &[AttributeType::Encrypt]),
            )?;
            let c = step(
                "C_CopyObject (CKA_SENSITIVE = false)",
                s.copy_object(v, &[Attribute::Sensitive(false)]),
            )?;
            read_value(s, c)
        })())
    }
    let set = || {
        Outcome::Refused(
            "C_SetAttributeValue (CKA_SENSITIVE = false)",
            RvError::AttributeReadOnly,
        )
    };
    expect(by_set, set(), set());
    let copy = || {
        Outcome::Refused(
            "C_CopyObject (CKA_SENSITIVE = false)",
            RvError::AttributeReadOnly,
        )
    };
    expect(by_copy, copy(), copy());
}

/// Extractable turned on, then the key wrapped out under a key of the
/// caller's.
#[test]
fn extractable_switched_on() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let v = victim(s)?;
            step(
                "C_SetAttributeValue (CKA_EXTRACTABLE = true)",
                s.update_attributes(v, &[Attribute::Extractable(true)]),
            )?;
            Ok(Outcome::Recovered)
        })())
    }
    let refused = || {
        Outcome::Refused(
            "C_SetAttributeValue (CKA_EXTRACTABLE = true)",
            RvError::AttributeReadOnly,
        )
    };
    expect(attack, refused(), refused());
}

/// `C_FindObjects` as an equality oracle on a sensitive value: a search by
/// the right `CKA_VALUE` must find exactly what a wrong one finds.
#[test]
fn find_objects_value_oracle() {
    fn attack(s: &Session) -> Outcome {
        let value = [0x61u8; 32];
        let key = s
            .create_object(&[
                Attribute::Class(ObjectClass::SECRET_KEY),
                Attribute::KeyType(KeyType::AES),
                Attribute::Token(false),
                Attribute::Sensitive(true),
                Attribute::Value(value.to_vec()),
            ])
            .unwrap();
        let found = s.find_objects(&[Attribute::Value(value.to_vec())]).unwrap();
        if found.contains(&key) {
            Outcome::Recovered
        } else {
            Outcome::Blind("C_FindObjects (by CKA_VALUE)")
        }
    }
    let blind = || Outcome::Blind("C_FindObjects (by CKA_VALUE)");
    expect(attack, blind(), blind());
}

/// `C_DigestKey` as an oracle on a sensitive key.
#[test]
fn digest_key_oracle() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let v = victim(s)?;
            step("C_DigestInit", s.digest_init(&Mechanism::Sha256))?;
            step("C_DigestKey", s.digest_key(v))?;
            Ok(Outcome::Weakened)
        })())
    }
    let refused = || Outcome::Refused("C_DigestKey", RvError::KeyIndigestible);
    expect(attack, refused(), refused());
}

/// A usage flag switched on after the key was made. Key-management flags
/// (derive, wrap, unwrap) and decrypt never widen on a protected key, nor
/// sign and encrypt on a protected secret key (they would compute what a
/// derivation from it output while they were off:
/// `prf_oracle::derivation_base_gains_sign_afterwards`); under `strict` no
/// usage flag widens.
#[test]
fn usage_widened_after_creation() {
    use AttributeType as T;
    for (flag, attr, default_refused) in [
        (T::Derive, Attribute::Derive(true), true),
        (T::Wrap, Attribute::Wrap(true), true),
        (T::Unwrap, Attribute::Unwrap(true), true),
        (T::Decrypt, Attribute::Decrypt(true), true),
        (T::Sign, Attribute::Sign(true), true),
        (T::Verify, Attribute::Verify(true), false),
    ] {
        for policy in POLICIES {
            let got = run(policy, |s| {
                let v = aes_key(s, false, &[AttributeType::Encrypt]).unwrap();
                match s.update_attributes(v, std::slice::from_ref(&attr)) {
                    Ok(()) => Outcome::Weakened,
                    Err(e) => Outcome::Refused("C_SetAttributeValue", rv_of(e)),
                }
            });
            let want = if default_refused || policy == Policy::Strict {
                Outcome::Refused("C_SetAttributeValue", RvError::AttributeReadOnly)
            } else {
                Outcome::Weakened
            };
            assert_eq!(got, want, "{flag:?} under {policy:?}");
        }
    }
}

/// A private key copied into a public object, then used without a login
/// (the copy is a public object; base spec §5.7 lets `C_CopyObject` change
/// `CKA_PRIVATE`).
#[test]
fn private_key_copied_public() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let (_, private) = step(
                "C_GenerateKeyPair",
                s.generate_key_pair(
                    &Mechanism::EccEdwardsKeyPairGen,
                    &[
                        Attribute::Token(false),
                        Attribute::EcParams(vec![
                            0x13, 0x0c, b'e', b'd', b'w', b'a', b'r', b'd', b's', b'2', b'5', b'5',
                            b'1', b'9',
                        ]),
                    ],
                    &[Attribute::Token(false), Attribute::Sign(true)],
                ),
            )?;
            let public = step(
                "C_CopyObject (CKA_PRIVATE = false)",
                s.copy_object(private, &[Attribute::Private(false)]),
            )?;
            s.logout().unwrap();
            step(
                "C_Sign (no login)",
                s.sign(
                    &Mechanism::Eddsa(cryptoki::mechanism::eddsa::EddsaParams::new(
                        cryptoki::mechanism::eddsa::EddsaSignatureScheme::Pure,
                    )),
                    public,
                    b"m",
                ),
            )?;
            // Log in again so the fixture's session ends as it began.
            s.login(UserType::User, Some(&pin(USER_PIN))).unwrap();
            Ok(Outcome::Recovered)
        })())
    }
    expect(
        attack,
        Outcome::Recovered,
        Outcome::Refused(
            "C_CopyObject (CKA_PRIVATE = false)",
            RvError::AttributeReadOnly,
        ),
    );
}
