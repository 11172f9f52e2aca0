//! Attacks on OATH HOTP keys (`CKO_OTP_KEY` / `CKK_HOTP`, RFC 4226): an
//! HOTP key's value is the seed of every future OTP, so any other use of
//! it — a plain HMAC over a chosen counter, a derivation, a wrap, an
//! encryption — hands out OTPs ahead of time or the seed itself; a
//! caller's counter on a key whose counter the token keeps does the same;
//! moving the stored counter back (or copying the key with it) replays
//! OTPs already used. docs/SECURITY.md ("HOTP keys") lists the defences.

use super::otp_calls::*;
use super::raw_calls::*;
use super::*;
use cryptoki::error::Rv;
use cryptoki_sys::*;

/// `Ok` for `CKR_OK`, else the step refused with the token's code.
fn raw_step(name: &'static str, r: CK_RV) -> Result<(), Outcome> {
    match Rv::from(r) {
        Rv::Ok => Ok(()),
        Rv::Error(e) => Err(Outcome::Refused(name, e)),
    }
}

/// An HOTP session key with the RFC 4226 seed (counter kept by the token:
/// `CKA_OTP_COUNTER_REQUIREMENT` ignored), readable unless `sensitive`.
fn seed_key(s: &Session, extractable: bool) -> Result<CK_OBJECT_HANDLE, Outcome> {
    hotp_key(
        s,
        RFC4226_KEY,
        CK_OTP_PARAM_IGNORED,
        vec![
            flag(CKA_SENSITIVE, !extractable),
            flag(CKA_EXTRACTABLE, extractable),
        ],
    )
    .map_err(|rv| match Rv::from(rv) {
        Rv::Error(e) => Outcome::Refused("C_CreateObject", e),
        Rv::Ok => unreachable!(),
    })
}

/// `CKM_SHA_1_HMAC` on an HOTP key over the 8-byte counter 5 would be
/// HMAC(K, 5): its dynamic truncation is the OTP the token will hand out
/// at counter 5 (RFC 4226 §5.3), before it does.
#[test]
fn plain_hmac_on_an_hotp_key() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let key = seed_key(s, false)?;
            let mac = sign(
                s,
                mech(CKM_SHA_1_HMAC, None),
                key,
                &5u64.to_be_bytes(),
                None,
            )
            .or_else(|rv| raw_step("C_SignInit (CKM_SHA_1_HMAC)", rv).map(|()| Vec::new()))?;
            let offset = usize::from(mac[19] & 0x0f);
            let code =
                u32::from_be_bytes(mac[offset..offset + 4].try_into().unwrap()) & 0x7fff_ffff;
            assert_eq!(format!("{:06}", code % 1_000_000), RFC4226_OTPS[5]);
            Ok(Outcome::Recovered)
        })())
    }
    let refused = || Outcome::Refused("C_SignInit (CKM_SHA_1_HMAC)", RvError::KeyTypeInconsistent);
    expect(attack, refused(), refused());
}

/// The other way round: a generic secret or an HMAC key (whose HMACs a
/// caller may compute at will) taken as an HOTP key.
#[test]
fn hotp_with_a_generic_secret_or_hmac_key() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            for key_type in [CKK_GENERIC_SECRET, CKK_SHA_1_HMAC] {
                let key = mac_key(s, key_type, RFC4226_KEY);
                raw_step("C_SignInit (CKM_HOTP)", hotp_sign_init(s, key, None))?;
            }
            Ok(Outcome::Recovered)
        })())
    }
    let refused = || Outcome::Refused("C_SignInit (CKM_HOTP)", RvError::KeyTypeInconsistent);
    expect(attack, refused(), refused());
}

/// An HOTP key with `CKA_DERIVE` (then `CKM_CONCATENATE_BASE_AND_DATA`
/// with no data copies the seed into an extractable secret), or given it
/// afterwards.
#[test]
fn hotp_key_as_a_derivation_base() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let created = hotp_key(
                s,
                RFC4226_KEY,
                CK_OTP_PARAM_IGNORED,
                vec![flag(CKA_DERIVE, true)],
            );
            if let Err(rv) = created {
                raw_step("C_CreateObject (CKA_DERIVE)", rv)?;
            }
            let key = seed_key(s, false)?;
            raw_step(
                "C_SetAttributeValue (CKA_DERIVE)",
                set_attr(s, key, flag(CKA_DERIVE, true)),
            )?;
            Ok(Outcome::Recovered)
        })())
    }
    let refused = || Outcome::Refused("C_CreateObject (CKA_DERIVE)", RvError::TemplateInconsistent);
    expect(attack, refused(), refused());
}

/// The usage flags that would make an HOTP key a cipher or wrapping key
/// are refused at creation and read-only afterwards.
#[test]
fn hotp_key_with_other_roles() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let key = seed_key(s, false)?;
            for ty in [CKA_ENCRYPT, CKA_DECRYPT, CKA_WRAP, CKA_UNWRAP, CKA_DERIVE] {
                if set_attr(s, key, flag(ty, true)) == CKR_OK {
                    return Ok(Outcome::Weakened);
                }
                if hotp_key(s, RFC4226_KEY, CK_OTP_PARAM_IGNORED, vec![flag(ty, true)]).is_ok() {
                    return Ok(Outcome::Weakened);
                }
            }
            let mut m = mech(CKM_AES_ECB, None);
            // SAFETY: valid session and mechanism.
            let rv = unsafe { raw().C_EncryptInit.unwrap()(s.handle(), &mut m, key) };
            raw_step("C_EncryptInit (CKM_AES_ECB)", rv)?;
            Ok(Outcome::Recovered)
        })())
    }
    let refused = || {
        Outcome::Refused(
            "C_EncryptInit (CKM_AES_ECB)",
            RvError::KeyFunctionNotPermitted,
        )
    };
    expect(attack, refused(), refused());
}

/// Wrapping an extractable HOTP key out, or digesting it, would reveal
/// the seed (or a function of it an offline search inverts): OTP keys are
/// not wrappable and not digestible.
#[test]
fn hotp_key_wrapped_or_digested() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let key = seed_key(s, true)?;
            let wrapping = step(
                "C_GenerateKey (AES wrapping key)",
                aes_key(s, false, &[AttributeType::Wrap, AttributeType::Unwrap]),
            )?;
            let mut m = mech(CKM_SHA256, None);
            // SAFETY: valid session and mechanism.
            let rv = unsafe { raw().C_DigestInit.unwrap()(s.handle(), &mut m) };
            raw_step("C_DigestInit", rv)?;
            // SAFETY: valid session and key.
            let digest = unsafe { raw().C_DigestKey.unwrap()(s.handle(), key) };
            if digest == CKR_OK {
                return Ok(Outcome::Weakened);
            }
            let mut w = mech(CKM_AES_KEY_WRAP_PAD, None);
            let mut out = [0u8; 128];
            let mut len = out.len() as CK_ULONG;
            // SAFETY: valid session, mechanism, keys and output buffer.
            let rv = unsafe {
                raw().C_WrapKey.unwrap()(
                    s.handle(),
                    &mut w,
                    wrapping.handle(),
                    key,
                    out.as_mut_ptr(),
                    &mut len,
                )
            };
            raw_step("C_WrapKey", rv)?;
            Ok(Outcome::Recovered)
        })())
    }
    let refused = || Outcome::Refused("C_WrapKey", RvError::KeyNotWrappable);
    expect(attack, refused(), refused());
}

/// A caller's `CK_OTP_COUNTER` on a key whose counter the token keeps
/// (`CKA_OTP_COUNTER_REQUIREMENT` = ignored) would give the OTPs of any
/// future counter now.
#[test]
fn counter_override_where_the_key_ignores_it() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let key = seed_key(s, false)?;
            let future = Some(Otp {
                counter: Some(9),
                ..Default::default()
            });
            raw_step(
                "C_SignInit (CK_OTP_COUNTER)",
                hotp_sign_init(s, key, future),
            )?;
            Ok(Outcome::Recovered)
        })())
    }
    let refused = || {
        Outcome::Refused(
            "C_SignInit (CK_OTP_COUNTER)",
            RvError::MechanismParamInvalid,
        )
    };
    expect(attack, refused(), refused());
}

/// After an OTP was used (verified, so its counter stored forward), moving
/// `CKA_OTP_COUNTER` back — directly, or through a copy made with an
/// earlier counter — would make it verify again (replay).
#[test]
fn counter_rewind_replays_an_otp() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let key = seed_key(s, false)?;
            raw_step(
                "C_Verify (first use)",
                hotp_verify(s, key, None, RFC4226_OTPS[0]),
            )?;
            if hotp_verify(s, key, None, RFC4226_OTPS[0]) == CKR_OK {
                return Ok(Outcome::Recovered);
            }
            let earlier = (CKA_OTP_COUNTER, 0u64.to_be_bytes().to_vec());
            let mut t = vec![earlier.clone()];
            let mut attrs = raw_template(&mut t);
            let mut copy = 0;
            // SAFETY: valid session and template.
            let rv = unsafe {
                raw().C_CopyObject.unwrap()(s.handle(), key, attrs.as_mut_ptr(), 1, &mut copy)
            };
            if rv == CKR_OK {
                return Ok(Outcome::Recovered);
            }
            raw_step(
                "C_SetAttributeValue (CKA_OTP_COUNTER)",
                set_attr(s, key, earlier),
            )?;
            raw_step(
                "C_Verify (replay)",
                hotp_verify(s, key, None, RFC4226_OTPS[0]),
            )?;
            Ok(Outcome::Recovered)
        })())
    }
    let refused = || {
        Outcome::Refused(
            "C_SetAttributeValue (CKA_OTP_COUNTER)",
            RvError::AttributeReadOnly,
        )
    };
    expect(attack, refused(), refused());
}
