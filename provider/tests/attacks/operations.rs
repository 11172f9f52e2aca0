//! Attacks on operations in progress: one context-specific login spent on
//! two `CKA_ALWAYS_AUTHENTICATE` uses (issue 23 item 5), an operation state
//! restored after its key lost the usage (item 6), and keys that need a
//! PIN per use in single-call functions.

use super::*;
use cryptoki::mechanism::MechanismType;
use cryptoki::mechanism::rsa::{PkcsMgfType, PkcsOaepParams, PkcsOaepSource};
use cryptoki_sys::*;
use std::ptr::null_mut;

/// A P-256 session key pair whose private key has `private`.
fn p256_pair(
    s: &Session,
    private: &[Attribute],
) -> cryptoki::error::Result<(ObjectHandle, ObjectHandle)> {
    let mut t = vec![Attribute::Token(false)];
    t.extend_from_slice(private);
    s.generate_key_pair(
        &Mechanism::EccKeyPairGen,
        &[
            Attribute::Token(false),
            Attribute::EcParams(vec![
                0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07,
            ]),
        ],
        &t,
    )
}

fn raw_mech(ty: CK_MECHANISM_TYPE) -> CK_MECHANISM {
    CK_MECHANISM {
        mechanism: ty,
        pParameter: null_mut(),
        ulParameterLen: 0,
    }
}

fn rv(r: CK_RV) -> Result<(), RvError> {
    match cryptoki::error::Rv::from(r) {
        cryptoki::error::Rv::Ok => Ok(()),
        cryptoki::error::Rv::Error(e) => Err(e),
    }
}

fn raw_step(name: &'static str, r: CK_RV) -> Result<(), Outcome> {
    rv(r).map_err(|e| Outcome::Refused(name, e))
}

/// Issue 23 item 5: a signature pending on one `CKA_ALWAYS_AUTHENTICATE`
/// key and a decryption pending on another; one `C_Login(CKU_CONTEXT_
/// SPECIFIC)` must not unlock both.
#[test]
fn one_context_login_for_two_operations() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let (_, signer) = step(
                "C_GenerateKeyPair (signing key)",
                p256_pair(
                    s,
                    &[Attribute::Sign(true), Attribute::AlwaysAuthenticate(true)],
                ),
            )?;
            let (public, decrypter) = step(
                "C_GenerateKeyPair (decryption key)",
                s.generate_key_pair(
                    &Mechanism::RsaPkcsKeyPairGen,
                    &[
                        Attribute::Token(false),
                        Attribute::ModulusBits(2048.into()),
                        Attribute::Encrypt(true),
                    ],
                    &[
                        Attribute::Token(false),
                        Attribute::Decrypt(true),
                        Attribute::AlwaysAuthenticate(true),
                    ],
                ),
            )?;
            let oaep = Mechanism::RsaPkcsOaep(PkcsOaepParams::new(
                MechanismType::SHA256,
                PkcsMgfType::MGF1_SHA256,
                PkcsOaepSource::empty(),
            ));
            let mut ciphertext = s.encrypt(&oaep, public, b"secret").unwrap();
            let l = raw();
            let h = s.handle();
            let mut ecdsa = raw_mech(CKM_ECDSA_SHA256);
            // SAFETY: live mechanism structs and buffers of the stated lengths.
            unsafe {
                raw_step(
                    "C_SignInit",
                    l.C_SignInit.unwrap()(h, &mut ecdsa, signer.handle()),
                )?;
                let mut oaep_params = CK_RSA_PKCS_OAEP_PARAMS {
                    hashAlg: CKM_SHA256,
                    mgf: CKG_MGF1_SHA256,
                    source: CKZ_DATA_SPECIFIED,
                    pSourceData: null_mut(),
                    ulSourceDataLen: 0,
                };
                let mut m = CK_MECHANISM {
                    mechanism: CKM_RSA_PKCS_OAEP,
                    pParameter: (&mut oaep_params as *mut CK_RSA_PKCS_OAEP_PARAMS).cast(),
                    ulParameterLen: std::mem::size_of::<CK_RSA_PKCS_OAEP_PARAMS>() as CK_ULONG,
                };
                raw_step(
                    "C_DecryptInit",
                    l.C_DecryptInit.unwrap()(h, &mut m, decrypter.handle()),
                )?;
                let mut pin = USER_PIN.as_bytes().to_vec();
                raw_step(
                    "C_Login (context specific, once)",
                    l.C_Login.unwrap()(
                        h,
                        CKU_CONTEXT_SPECIFIC,
                        pin.as_mut_ptr(),
                        pin.len() as CK_ULONG,
                    ),
                )?;
                let mut plain = [0u8; 256];
                let mut plain_len = plain.len() as CK_ULONG;
                let decrypted = rv(l.C_Decrypt.unwrap()(
                    h,
                    ciphertext.as_mut_ptr(),
                    ciphertext.len() as CK_ULONG,
                    plain.as_mut_ptr(),
                    &mut plain_len,
                ));
                let mut data = *b"data";
                let mut sig = [0u8; 72];
                let mut sig_len = sig.len() as CK_ULONG;
                let signed = rv(l.C_Sign.unwrap()(
                    h,
                    data.as_mut_ptr(),
                    data.len() as CK_ULONG,
                    sig.as_mut_ptr(),
                    &mut sig_len,
                ));
                match (decrypted, signed) {
                    (Ok(()), Ok(())) => Ok(Outcome::Recovered),
                    (Ok(()), Err(e)) => Ok(Outcome::Refused("C_Sign (second use, no login)", e)),
                    (Err(e), _) => Ok(Outcome::Refused("C_Decrypt (the use the login was for)", e)),
                }
            }
        })())
    }
    let refused = || Outcome::Refused("C_Sign (second use, no login)", RvError::UserNotLoggedIn);
    expect(attack, refused(), refused());
}

/// Issue 23 item 6: an HMAC state saved, the key's `CKA_SIGN` switched off,
/// the state restored and finished.
#[test]
fn operation_state_restored_after_usage_revoked() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let key = step(
                "C_GenerateKey (MAC key)",
                s.generate_key(
                    &Mechanism::GenericSecretKeyGen,
                    &[
                        Attribute::Token(false),
                        Attribute::ValueLen(32.into()),
                        Attribute::Sensitive(true),
                        Attribute::Sign(true),
                    ],
                ),
            )?;
            let l = raw();
            let h = s.handle();
            let mut m = raw_mech(CKM_SHA256_HMAC);
            let mut data = *b"part one";
            let mut state = vec![0u8; 256];
            let mut state_len = state.len() as CK_ULONG;
            // SAFETY: live mechanism struct and buffers of the stated lengths.
            unsafe {
                raw_step("C_SignInit", l.C_SignInit.unwrap()(h, &mut m, key.handle()))?;
                raw_step(
                    "C_SignUpdate",
                    l.C_SignUpdate.unwrap()(h, data.as_mut_ptr(), data.len() as CK_ULONG),
                )?;
                raw_step(
                    "C_GetOperationState",
                    l.C_GetOperationState.unwrap()(h, state.as_mut_ptr(), &mut state_len),
                )?;
            }
            step(
                "C_SetAttributeValue (CKA_SIGN = false)",
                s.update_attributes(key, &[Attribute::Sign(false)]),
            )?;
            let mut mac = [0u8; 32];
            let mut mac_len = mac.len() as CK_ULONG;
            // SAFETY: as above.
            unsafe {
                raw_step(
                    "C_SetOperationState",
                    l.C_SetOperationState.unwrap()(
                        h,
                        state.as_mut_ptr(),
                        state_len,
                        0,
                        key.handle(),
                    ),
                )?;
                raw_step(
                    "C_SignFinal",
                    l.C_SignFinal.unwrap()(h, mac.as_mut_ptr(), &mut mac_len),
                )?;
            }
            Ok(Outcome::Weakened)
        })())
    }
    let refused = || Outcome::Refused("C_SetOperationState", RvError::KeyFunctionNotPermitted);
    expect(attack, refused(), refused());
}

/// A key that needs its PIN for every use is never used by a single call
/// that no context login can precede (`C_DeriveKey`, `C_UnwrapKey`).
#[test]
fn always_authenticate_key_in_a_single_call() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let (_, private) = step(
                "C_GenerateKeyPair",
                p256_pair(
                    s,
                    &[Attribute::Derive(true), Attribute::AlwaysAuthenticate(true)],
                ),
            )?;
            let (peer_public, _) = p256_pair(s, &[]).unwrap();
            let point = match s
                .get_attributes(peer_public, &[AttributeType::EcPoint])
                .unwrap()
                .remove(0)
            {
                Attribute::EcPoint(p) => p,
                other => panic!("{other:?}"),
            };
            let params = cryptoki::mechanism::elliptic_curve::Ecdh1DeriveParams::new(
                cryptoki::mechanism::elliptic_curve::EcKdf::null(),
                &point,
            );
            step(
                "C_DeriveKey",
                s.derive_key(
                    &Mechanism::Ecdh1Derive(params),
                    private,
                    &[
                        Attribute::Class(ObjectClass::SECRET_KEY),
                        Attribute::KeyType(KeyType::GENERIC_SECRET),
                        Attribute::ValueLen(32.into()),
                        Attribute::Token(false),
                    ],
                ),
            )?;
            Ok(Outcome::Weakened)
        })())
    }
    let refused = || Outcome::Refused("C_DeriveKey", RvError::KeyFunctionNotPermitted);
    expect(attack, refused(), refused());
}
