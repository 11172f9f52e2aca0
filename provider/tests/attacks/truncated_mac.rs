//! A truncated MAC is a prefix of the full one, and `C_Verify` says whether
//! a guessed prefix is right: with `CKM_SHA256_HMAC_GENERAL` at 1 byte, 256
//! guesses find the first byte; at 2 bytes, 256 more the second; 32 × 256
//! verifications compute the whole HMAC. A key allowed to verify and not to
//! sign would sign after all (a forged MAC), and a derivation base allowed
//! to verify would hand out its derived value (docs/SECURITY.md, "MAC
//! verification"). Both levels refuse verifications shorter than 8 bytes
//! from a key that may not sign with the mechanism.

use super::*;
use crate::raw_calls::{self as r, flag, ul};
use cryptoki_sys::*;

/// A generated 32-byte generic secret that may verify, and sign if `sign`.
fn hmac_key(s: &Session, sign: bool) -> Result<CK_OBJECT_HANDLE, Outcome> {
    raw_step(
        "C_GenerateKey (HMAC key)",
        r::generate(
            s,
            CKM_GENERIC_SECRET_KEY_GEN,
            vec![
                ul(CKA_VALUE_LEN, 32),
                flag(CKA_TOKEN, false),
                flag(CKA_SENSITIVE, true),
                flag(CKA_EXTRACTABLE, false),
                flag(CKA_VERIFY, true),
                flag(CKA_SIGN, sign),
            ],
        ),
    )
}

/// Finds HMAC-SHA256(key, data) one byte at a time through
/// `CKM_SHA256_HMAC_GENERAL` verifications of growing length.
fn mac_by_verifying(s: &Session, key: CK_OBJECT_HANDLE, data: &[u8]) -> Result<Vec<u8>, Outcome> {
    let mut found = Vec::new();
    for len in 1..=32 {
        let mut param: CK_ULONG = len;
        let mut next = None;
        for guess in 0..=255u8 {
            let tried = [&found[..], &[guess]].concat();
            match r::verify(
                s,
                r::mech(CKM_SHA256_HMAC_GENERAL, Some(&mut param)),
                key,
                data,
                &tried,
            ) {
                CKR_OK => {
                    next = Some(guess);
                    break;
                }
                CKR_SIGNATURE_INVALID => {}
                rv => return raw_step("C_VerifyInit (1-byte HMAC)", Err(rv)),
            }
        }
        found.push(next.ok_or(Outcome::Blind("C_Verify (no byte matched)"))?);
    }
    Ok(found)
}

/// A verify-only HMAC key signs after all: the MAC found through short
/// verifications passes the full-length `CKM_SHA256_HMAC` verification.
#[test]
fn verify_only_hmac_key_forges_through_short_verifications() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let key = hmac_key(s, false)?;
            let data = b"a message the key never signed";
            let mac = mac_by_verifying(s, key, data)?;
            let full = r::verify(s, r::mech(CKM_SHA256_HMAC, None), key, data, &mac);
            assert_eq!(full, CKR_OK, "the MAC found does not verify");
            Ok(Outcome::Recovered)
        })())
    }
    let refused = || Outcome::Refused("C_VerifyInit (1-byte HMAC)", RvError::MechanismParamInvalid);
    expect(attack, refused(), refused());
}

/// What stays allowed: a short verification under a key that may sign
/// with the mechanism (it tells nothing a signature would not), and an
/// 8-byte one under a verify-only key (2^64 guesses for the first prefix).
#[test]
fn short_verifications_that_reveal_nothing_are_allowed() {
    for policy in POLICIES {
        let f = Fixture::with_policy(policy.name());
        let slot = f.token("attacks");
        let s = f.user(slot);
        let data = b"data";
        let signer = hmac_key(&s, true).unwrap();
        let mut one: CK_ULONG = 1;
        let mac = r::sign(
            &s,
            r::mech(CKM_SHA256_HMAC_GENERAL, Some(&mut one)),
            signer,
            data,
            None,
        )
        .unwrap();
        assert_eq!(
            r::verify(
                &s,
                r::mech(CKM_SHA256_HMAC_GENERAL, Some(&mut one)),
                signer,
                data,
                &mac
            ),
            CKR_OK,
            "{policy:?}"
        );
        let verifier = hmac_key(&s, false).unwrap();
        let mut eight: CK_ULONG = 8;
        let wrong = [0u8; 8];
        assert_eq!(
            r::verify(
                &s,
                r::mech(CKM_SHA256_HMAC_GENERAL, Some(&mut eight)),
                verifier,
                data,
                &wrong
            ),
            CKR_SIGNATURE_INVALID,
            "{policy:?}"
        );
        let mut seven: CK_ULONG = 7;
        assert_eq!(
            r::verify(
                &s,
                r::mech(CKM_SHA256_HMAC_GENERAL, Some(&mut seven)),
                verifier,
                data,
                &wrong[..7]
            ),
            CKR_MECHANISM_PARAM_INVALID,
            "{policy:?}"
        );
    }
}
