//! The PRF-based derivations (HKDF-Expand, SP 800-108, the TLS and IKE
//! PRFs) compute an HMAC or CMAC keyed by the base over data the caller
//! chose: a base that may sign with that MAC, gain the right later, or
//! derive a copy of itself that may, tells its caller the derived value
//! (docs/SECURITY.md, "Derived keys").

use super::*;
use crate::derivation::{key_is, known_key_found};
use cryptoki::mechanism::misc::KeyDerivationStringData;

/// The limit of the HMAC-based derivations (HKDF-Expand, SP 800-108 with
/// an HMAC PRF, the TLS and IKE PRFs): the derived value is an HMAC keyed
/// by the base over data the caller knows, so a base that may also sign
/// with that HMAC (`CKA_SIGN`, which secret keys have by default, and no
/// `CKA_ALLOWED_MECHANISMS` excluding it) tells its caller the value of
/// the key derived from it. As for the encryption-of-data derivations:
/// under `default` the key is made but marked as one that was not always
/// secret, and the test runs the attack to the end with HKDF-Expand (the
/// first output block is HMAC(base, info ‖ 0x01)); under `strict` the
/// derivation is refused (docs/SECURITY.md, "Derived keys").
#[test]
fn hmac_kdf_derived_value_known_through_hmac_sign() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let (victim, derived, block) =
                hkdf_expand_victim(s, &[AttributeType::Sign, AttributeType::Derive], true)?;
            hmac_is_the_derived_key(s, victim, derived, &block)
        })())
    }
    expect_known_or_refused(attack);
}

/// A generated, sensitive, never extractable 32-byte generic secret with
/// the usage flags of `usage` (allowed HKDF and HMAC-SHA256 only if
/// `restricted`), and an AES-256 key HKDF-Expand (SHA-256) derives from
/// it; with the data whose HMAC under the victim is the derived value
/// (info ‖ 0x01, RFC 5869 §2.3).
fn hkdf_expand_victim(
    s: &Session,
    usage: &[AttributeType],
    restricted: bool,
) -> Result<(ObjectHandle, ObjectHandle, Vec<u8>), Outcome> {
    let mut t = vec![
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::GENERIC_SECRET),
        Attribute::ValueLen(32.into()),
        Attribute::Token(false),
        Attribute::Sensitive(true),
        Attribute::Extractable(false),
    ];
    t.extend(usage_flags(usage));
    let victim = if restricted {
        // HKDF and its HMAC only: no derivation that copies the victim.
        raw_step(
            "C_GenerateKey (generic secret victim)",
            generate_allowed(
                s,
                &Mechanism::GenericSecretKeyGen,
                &t,
                &[cryptoki_sys::CKM_HKDF_DERIVE, cryptoki_sys::CKM_SHA256_HMAC],
            ),
        )?
    } else {
        step(
            "C_GenerateKey (generic secret victim)",
            s.generate_key(&Mechanism::GenericSecretKeyGen, &t),
        )?
    };
    let info = b"hkdf info".as_slice();
    let params = cryptoki::mechanism::hkdf::HkdfParams::new(
        cryptoki::mechanism::MechanismType::SHA256,
        None,
        Some(info),
    );
    let derived = step(
        "C_DeriveKey (HKDF-Expand)",
        s.derive_key(
            &Mechanism::HkdfDerive(params),
            victim,
            &[
                Attribute::Class(ObjectClass::SECRET_KEY),
                Attribute::KeyType(KeyType::AES),
                Attribute::ValueLen(32.into()),
                Attribute::Token(false),
                Attribute::Sensitive(true),
                Attribute::Encrypt(true),
            ],
        ),
    )?;
    Ok((victim, derived, [info, &[1]].concat()))
}

/// The same attack with the flag switched on after the derivation: the
/// base derives with `CKA_SIGN` false (so the derived key is always
/// sensitive), then gains `CKA_SIGN` (or a copy of it does) and signs the
/// first HKDF block. On a protected secret key `CKA_SIGN` (like
/// `CKA_ENCRYPT`, the encryption-of-data oracle) never widens, at both
/// levels (docs/SECURITY.md, "`default`").
#[test]
fn derivation_base_gains_sign_afterwards() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let (victim, derived, block) = hkdf_expand_victim(s, &[AttributeType::Derive], true)?;
            let marks = step(
                "C_GetAttributeValue (derived key)",
                s.get_attributes(derived, &[AttributeType::AlwaysSensitive]),
            )?;
            assert_eq!(marks, vec![Attribute::AlwaysSensitive(true)]);
            let copy = s.copy_object(victim, &[Attribute::Sign(true)]);
            assert_eq!(
                copy.err().map(rv_of),
                Some(RvError::AttributeReadOnly),
                "C_CopyObject gave a signing copy of the base"
            );
            step(
                "C_SetAttributeValue (CKA_SIGN on the base)",
                s.update_attributes(victim, &[Attribute::Sign(true)]),
            )?;
            let value = step(
                "C_Sign (HMAC-SHA256 under the base)",
                s.sign(&Mechanism::Sha256Hmac, victim, &block),
            )?;
            key_is::<aes::Aes256>(s, derived, &Mechanism::AesEcb, &value)
        })())
    }
    let refused = || {
        Outcome::Refused(
            "C_SetAttributeValue (CKA_SIGN on the base)",
            RvError::AttributeReadOnly,
        )
    };
    expect(attack, refused(), refused());
}

/// The copy route: a base that may not sign, but may derive a copy of
/// itself (`CKM_CONCATENATE_BASE_AND_DATA` with no data, and no
/// `CKA_ALLOWED_MECHANISMS` to say otherwise), gives the copy `CKA_SIGN`
/// and computes the HKDF-Expand output under it. The token counts such a
/// base as one that signs: under `default` the HKDF key is marked as known
/// and the attack runs to the end; under `strict` the HKDF derivation is
/// refused (docs/SECURITY.md, "Derived keys").
#[test]
fn hmac_kdf_derived_value_known_through_a_derived_copy() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let (victim, derived, block) = hkdf_expand_victim(s, &[AttributeType::Derive], false)?;
            let copy = step(
                "C_DeriveKey (copy of the base, CKA_SIGN)",
                s.derive_key(
                    &Mechanism::ConcatenateBaseAndData(KeyDerivationStringData::new(&[])),
                    victim,
                    &[
                        Attribute::Class(ObjectClass::SECRET_KEY),
                        Attribute::KeyType(KeyType::GENERIC_SECRET),
                        Attribute::Token(false),
                        Attribute::Sign(true),
                    ],
                ),
            )?;
            hmac_is_the_derived_key(s, copy, derived, &block)
        })())
    }
    expect_known_or_refused(attack);
}

/// The end of the attack: HMAC-SHA256 under `signer` over `block`, which
/// the token marked `derived` as known for, is `derived`'s value.
fn hmac_is_the_derived_key(
    s: &Session,
    signer: ObjectHandle,
    derived: ObjectHandle,
    block: &[u8],
) -> Result<Outcome, Outcome> {
    let value = step(
        "C_Sign (HMAC-SHA256)",
        s.sign(&Mechanism::Sha256Hmac, signer, block),
    )?;
    known_key_found::<aes::Aes256>(s, derived, &Mechanism::AesEcb, &value)
}

/// Recovered under `default` (the derived key marked as known), the HKDF
/// derivation refused under `strict`.
#[track_caller]
fn expect_known_or_refused(attack: fn(&Session) -> Outcome) {
    expect(
        attack,
        Outcome::Recovered,
        Outcome::Refused(
            "C_DeriveKey (HKDF-Expand)",
            RvError::KeyFunctionNotPermitted,
        ),
    );
}
