//! Attacks through `C_WrapKey` / `C_UnwrapKey`: wrap/decrypt (Clulow 2003
//! §2.1), weak wrapping keys (Clulow §2.3), trojan wrapping keys (Clulow
//! §2.4), decrypting copies made after the wrap (issue 23 item 4),
//! re-import under other attributes (CCS 2010), wrap-with-trusted.

use super::*;
use cryptoki::mechanism::misc::KeyDerivationStringData;

/// The victim of the wrapping attacks: AES-256, generated, sensitive and
/// extractable (it may leave the token, wrapped, but never be read).
fn victim(s: &Session) -> Result<ObjectHandle, Outcome> {
    step(
        "C_GenerateKey (victim)",
        aes_key(s, true, &[AttributeType::Encrypt]),
    )
}

/// A wrapping key generated on the token (unextractable) with `usage`.
fn generated_key(s: &Session, usage: &[AttributeType]) -> Result<ObjectHandle, Outcome> {
    step("C_GenerateKey (wrapping key)", aes_key(s, false, usage))
}

fn wrap(s: &Session, w: ObjectHandle, v: ObjectHandle) -> Result<Vec<u8>, Outcome> {
    step("C_WrapKey", s.wrap_key(&Mechanism::AesKeyWrap, w, v))
}

/// Opens the wrapped `blob` of the victim `v` with `C_Decrypt` under
/// `twin`: the attack's success if it gives the victim's value.
fn open_blob(
    s: &Session,
    twin: ObjectHandle,
    blob: &[u8],
    v: ObjectHandle,
) -> Result<Outcome, Outcome> {
    let value = step("C_Decrypt", s.decrypt(&Mechanism::AesKeyWrap, twin, blob))?;
    assert!(same_aes_key(s, v, &value));
    Ok(Outcome::Recovered)
}

/// RFC 3394 unwrap with a known key, off the token.
fn offline_unwrap(kek: &[u8], blob: &[u8]) -> Vec<u8> {
    use aes::cipher::KeyInit;
    let kw = aes_kw::KwAes256::new_from_slice(kek).unwrap();
    let mut out = vec![0u8; blob.len() - 8];
    kw.unwrap_key(blob, &mut out).unwrap().to_vec()
}

/// Clulow's wrap/decrypt: one key that wraps and decrypts.
#[test]
fn wrap_then_decrypt() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let v = victim(s)?;
            let w = generated_key(s, &[AttributeType::Wrap, AttributeType::Decrypt])?;
            let blob = wrap(s, w, v)?;
            let value = step("C_Decrypt", s.decrypt(&Mechanism::AesKeyWrap, w, &blob))?;
            assert!(same_aes_key(s, v, &value));
            Ok(Outcome::Recovered)
        })())
    }
    expect(
        attack,
        Outcome::Refused("C_WrapKey", RvError::KeyNotWrappable),
        Outcome::Refused(
            "C_GenerateKey (wrapping key)",
            RvError::TemplateInconsistent,
        ),
    );
}

/// Issue 23 item 4: wrap under a key whose value the caller chose, then
/// make a second object with that value allowed to decrypt.
#[test]
fn decrypting_copy_created_after_the_wrap() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let v = victim(s)?;
            let kek = [0x42u8; 32];
            let w = step(
                "C_CreateObject (wrapping key)",
                known_key(s, KeyType::AES, &kek, &[AttributeType::Wrap]),
            )?;
            let blob = wrap(s, w, v)?;
            let twin = step(
                "C_CreateObject (decrypting copy)",
                known_key(s, KeyType::AES, &kek, &[AttributeType::Decrypt]),
            )?;
            open_blob(s, twin, &blob, v)
        })())
    }
    // Under default the victim is extractable and the wrapping key's value
    // is the caller's: the blob is theirs to open, on the token or off it.
    expect(
        attack,
        Outcome::Recovered,
        Outcome::Refused(
            "C_CreateObject (wrapping key)",
            RvError::TemplateInconsistent,
        ),
    );
}

/// Item 4 through derivation: a wrapping key that may derive makes a copy
/// of its own value (concatenated with nothing) allowed to decrypt.
#[test]
fn decrypting_copy_derived_after_the_wrap() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let v = victim(s)?;
            let w = generated_key(s, &[AttributeType::Wrap, AttributeType::Derive])?;
            let blob = wrap(s, w, v)?;
            let twin = step(
                "C_DeriveKey (decrypting copy)",
                s.derive_key(
                    &Mechanism::ConcatenateBaseAndData(KeyDerivationStringData::new(&[])),
                    w,
                    &aes_template(&[Attribute::Decrypt(true)]),
                ),
            )?;
            open_blob(s, twin, &blob, v)
        })())
    }
    expect(
        attack,
        Outcome::Refused("C_WrapKey", RvError::KeyNotWrappable),
        Outcome::Refused(
            "C_GenerateKey (wrapping key)",
            RvError::TemplateInconsistent,
        ),
    );
}

/// Item 4 through `C_CopyObject`: the wrapping key copied with decryption.
#[test]
fn decrypting_copy_copied_after_the_wrap() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let v = victim(s)?;
            let w = generated_key(s, &[AttributeType::Wrap])?;
            let blob = wrap(s, w, v)?;
            let twin = step(
                "C_CopyObject (decrypting copy)",
                s.copy_object(w, &[Attribute::Decrypt(true)]),
            )?;
            open_blob(s, twin, &blob, v)
        })())
    }
    let refused = || Outcome::Refused("C_CopyObject (decrypting copy)", RvError::AttributeReadOnly);
    expect(attack, refused(), refused());
}

/// Item 4 through re-import: the (extractable) wrapping key is wrapped
/// under a second key after it wrapped the victim, and unwrapped again
/// allowed to decrypt.
#[test]
fn decrypting_copy_unwrapped_after_the_wrap() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let v = victim(s)?;
            let w = step(
                "C_GenerateKey (extractable wrapping key)",
                aes_key(s, true, &[AttributeType::Wrap]),
            )?;
            let blob = wrap(s, w, v)?;
            let carrier = generated_key(s, &[AttributeType::Wrap, AttributeType::Unwrap])?;
            let w_blob = step(
                "C_WrapKey (the wrapping key)",
                s.wrap_key(&Mechanism::AesKeyWrap, carrier, w),
            )?;
            let twin = step(
                "C_UnwrapKey (decrypting copy)",
                s.unwrap_key(
                    &Mechanism::AesKeyWrap,
                    carrier,
                    &w_blob,
                    &aes_template(&[Attribute::Decrypt(true)]),
                ),
            )?;
            open_blob(s, twin, &blob, v)
        })())
    }
    // Default: the wrapping key was extractable, so its value may leave
    // (wrapped) and come back with other attributes; strict keeps every
    // wrapping key unextractable.
    expect(
        attack,
        Outcome::Recovered,
        Outcome::Refused(
            "C_GenerateKey (extractable wrapping key)",
            RvError::TemplateInconsistent,
        ),
    );
}

/// Issue 23 item 3 / Clulow's weak wrapping keys: an AES-256 key wrapped
/// under single DES (ECB, and CBC-PAD whose padding block is a known
/// plaintext for a 2^56 search), two-key Triple DES (80 bits) and AES-128.
/// The search itself is not run: the weak blob is the attack's success.
#[test]
fn weak_wrapping_keys() {
    type Weak = fn() -> (Mechanism<'static>, Mechanism<'static>);
    fn attack_with(s: &Session, case: Weak) -> Outcome {
        let (keygen, wrap) = case();
        outcome((|| {
            let v = victim(s)?;
            let mut t = vec![Attribute::Token(false), Attribute::Extractable(false)];
            t.extend(usage_flags(&[AttributeType::Wrap]));
            if matches!(keygen, Mechanism::AesKeyGen) {
                t.push(Attribute::ValueLen(16.into()));
            }
            let w = step(
                "C_GenerateKey (weak wrapping key)",
                s.generate_key(&keygen, &t),
            )?;
            step("C_WrapKey", s.wrap_key(&wrap, w, v))?;
            Ok(Outcome::Weakened)
        })())
    }
    let cases: [(&str, Weak); 4] = [
        ("DES-ECB", || (Mechanism::DesKeyGen, Mechanism::DesEcb)),
        ("DES-CBC-PAD", || {
            (Mechanism::DesKeyGen, Mechanism::DesCbcPad([7; 8]))
        }),
        ("DES2 with DES3-ECB", || {
            (Mechanism::Des2KeyGen, Mechanism::Des3Ecb)
        }),
        ("AES-128 key wrap", || {
            (Mechanism::AesKeyGen, Mechanism::AesKeyWrap)
        }),
    ];
    for (name, case) in cases {
        for policy in POLICIES {
            let got = run(policy, |s| attack_with(s, case));
            assert_eq!(
                got,
                Outcome::Refused("C_WrapKey", RvError::KeyNotWrappable),
                "{policy:?} {name}"
            );
        }
    }
    // As strong as the victim: allowed.
    for policy in POLICIES {
        let got = run(policy, |s| {
            outcome((|| {
                let v = victim(s)?;
                let w = generated_key(s, &[AttributeType::Wrap])?;
                wrap(s, w, v)?;
                Ok(Outcome::Weakened)
            })())
        });
        assert_eq!(got, Outcome::Weakened, "{policy:?}");
    }
}

/// Clulow's trojan wrapping key: a key of the caller's choosing made a
/// wrapping key, the blob opened off the token.
#[test]
fn trojan_wrapping_key_created() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let v = victim(s)?;
            let kek = [0x24u8; 32];
            let w = step(
                "C_CreateObject (wrapping key)",
                known_key(s, KeyType::AES, &kek, &[AttributeType::Wrap]),
            )?;
            let blob = wrap(s, w, v)?;
            assert!(same_aes_key(s, v, &offline_unwrap(&kek, &blob)));
            Ok(Outcome::Recovered)
        })())
    }
    expect(
        attack,
        Outcome::Recovered,
        Outcome::Refused(
            "C_CreateObject (wrapping key)",
            RvError::TemplateInconsistent,
        ),
    );
}

/// The trojan through `C_UnwrapKey` (CCS 2010, encrypt/unwrap conflict): a
/// key that encrypts and unwraps turns a chosen value into a wrapping key.
#[test]
fn trojan_wrapping_key_unwrapped() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let v = victim(s)?;
            let k = generated_key(s, &[AttributeType::Encrypt, AttributeType::Unwrap])?;
            let kek = [0x33u8; 32];
            let planted = step(
                "C_Encrypt (chosen key)",
                s.encrypt(&Mechanism::AesKeyWrap, k, &kek),
            )?;
            let w = step(
                "C_UnwrapKey (trojan)",
                s.unwrap_key(
                    &Mechanism::AesKeyWrap,
                    k,
                    &planted,
                    &aes_template(&[Attribute::Wrap(true), Attribute::Decrypt(false)]),
                ),
            )?;
            let blob = wrap(s, w, v)?;
            assert!(same_aes_key(s, v, &offline_unwrap(&kek, &blob)));
            Ok(Outcome::Recovered)
        })())
    }
    expect(
        attack,
        Outcome::Recovered,
        Outcome::Refused(
            "C_GenerateKey (wrapping key)",
            RvError::TemplateInconsistent,
        ),
    );
}

/// The trojan public key: the attacker's RSA public key made a wrapping
/// key; the attacker's private key opens the blob. The victim is a 112-bit
/// generic secret, as strong as RSA-2048, so the strength rule alone does
/// not stop it.
#[test]
fn trojan_public_wrapping_key() {
    fn attack(s: &Session) -> Outcome {
        use rsa::traits::PublicKeyParts;
        outcome((|| {
            let v = step(
                "C_GenerateKey (victim)",
                s.generate_key(
                    &Mechanism::GenericSecretKeyGen,
                    &[
                        Attribute::Token(false),
                        Attribute::ValueLen(14.into()),
                        Attribute::Sensitive(true),
                        Attribute::Extractable(true),
                        Attribute::Sign(true),
                    ],
                ),
            )?;
            let mut rng =
                <rand_chacha::ChaCha20Rng as rand_chacha::rand_core::SeedableRng>::from_seed(
                    [9; 32],
                );
            let private = rsa::RsaPrivateKey::new(&mut rng, 2048).unwrap();
            let w = step(
                "C_CreateObject (attacker's public key)",
                s.create_object(&[
                    Attribute::Class(ObjectClass::PUBLIC_KEY),
                    Attribute::KeyType(KeyType::RSA),
                    Attribute::Token(false),
                    Attribute::Modulus(private.n().to_bytes_be()),
                    Attribute::PublicExponent(private.e().to_bytes_be()),
                    Attribute::Wrap(true),
                ]),
            )?;
            let blob = step("C_WrapKey", s.wrap_key(&Mechanism::RsaPkcs, w, v))?;
            let value = private.decrypt(rsa::Pkcs1v15Encrypt, &blob).unwrap();
            let theirs = s.sign(&Mechanism::Sha256Hmac, v, b"m").unwrap();
            use hmac::{KeyInit, Mac};
            let mut m = hmac::Hmac::<sha2::Sha256>::new_from_slice(&value).unwrap();
            m.update(b"m");
            assert_eq!(m.finalize().into_bytes().as_slice(), theirs);
            Ok(Outcome::Recovered)
        })())
    }
    expect(
        attack,
        Outcome::Recovered,
        Outcome::Refused(
            "C_CreateObject (attacker's public key)",
            RvError::TemplateInconsistent,
        ),
    );
}

/// CCS 2010, re-import under other attributes: wrap the victim, unwrap the
/// blob as a readable key.
#[test]
fn reimport_under_other_attributes() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let v = victim(s)?;
            let w = generated_key(s, &[AttributeType::Wrap, AttributeType::Unwrap])?;
            let blob = wrap(s, w, v)?;
            let copy = step(
                "C_UnwrapKey (readable copy)",
                s.unwrap_key(
                    &Mechanism::AesKeyWrap,
                    w,
                    &blob,
                    &aes_template(&[Attribute::Sensitive(false), Attribute::Extractable(true)]),
                ),
            )?;
            super::attributes::read_value(s, copy)
        })())
    }
    // Default: the victim is extractable; CKA_UNWRAP_TEMPLATE on the
    // unwrapping key is the specification's defence (docs/SECURITY.md).
    expect(
        attack,
        Outcome::Recovered,
        Outcome::Refused("C_UnwrapKey (readable copy)", RvError::TemplateInconsistent),
    );
}

/// `CKA_WRAP_WITH_TRUSTED`: only a trusted key wraps it, and only the SO
/// marks a key trusted.
#[test]
fn wrap_with_trusted() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let v = step(
                "C_GenerateKey (victim)",
                s.generate_key(
                    &Mechanism::AesKeyGen,
                    &[
                        Attribute::Token(false),
                        Attribute::ValueLen(32.into()),
                        Attribute::Sensitive(true),
                        Attribute::Extractable(true),
                        Attribute::WrapWithTrusted(true),
                    ],
                ),
            )?;
            let w = generated_key(s, &[AttributeType::Wrap])?;
            if s.update_attributes(w, &[Attribute::Trusted(true)]).is_ok() {
                return Ok(Outcome::Recovered);
            }
            wrap(s, w, v)?;
            Ok(Outcome::Weakened)
        })())
    }
    let refused = || Outcome::Refused("C_WrapKey", RvError::KeyNotWrappable);
    expect(attack, refused(), refused());
}

/// A key that is not extractable is never wrapped.
#[test]
fn wrap_unextractable_key() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let v = step(
                "C_GenerateKey (victim)",
                aes_key(s, false, &[AttributeType::Encrypt]),
            )?;
            let w = generated_key(s, &[AttributeType::Wrap])?;
            wrap(s, w, v)?;
            Ok(Outcome::Weakened)
        })())
    }
    let refused = || Outcome::Refused("C_WrapKey", RvError::KeyUnextractable);
    expect(attack, refused(), refused());
}

/// The trojan made by `CKM_PKCS5_PBKD2`: the caller knows the password,
/// so the "generated" wrapping key is as known as a created one. The token
/// makes it as a derived key (`CKA_LOCAL` false), so the rules for created
/// keys apply: recovered under `default` (the victim was extractable),
/// refused under `strict`.
#[test]
fn trojan_wrapping_key_from_a_password() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let v = victim(s)?;
            let (mut password, mut salt) = (b"known password".to_vec(), b"salt".to_vec());
            let mut p = cryptoki_sys::CK_PKCS5_PBKD2_PARAMS2 {
                saltSource: cryptoki_sys::CKZ_SALT_SPECIFIED,
                pSaltSourceData: salt.as_mut_ptr().cast(),
                ulSaltSourceDataLen: salt.len() as cryptoki_sys::CK_ULONG,
                iterations: 1000,
                prf: cryptoki_sys::CKP_PKCS5_PBKD2_HMAC_SHA256,
                pPrfData: std::ptr::null_mut(),
                ulPrfDataLen: 0,
                pPassword: password.as_mut_ptr(),
                ulPasswordLen: password.len() as cryptoki_sys::CK_ULONG,
            };
            let mut m = cryptoki_sys::CK_MECHANISM {
                mechanism: cryptoki_sys::CKM_PKCS5_PBKD2,
                pParameter: (&mut p as *mut cryptoki_sys::CK_PKCS5_PBKD2_PARAMS2).cast(),
                ulParameterLen: size_of::<cryptoki_sys::CK_PKCS5_PBKD2_PARAMS2>()
                    as cryptoki_sys::CK_ULONG,
            };
            let mut template = aes_template(&[Attribute::ValueLen(32.into())]);
            template.extend(usage_flags(&[AttributeType::Wrap]));
            let mut t: Vec<cryptoki_sys::CK_ATTRIBUTE> = template.iter().map(Into::into).collect();
            let mut h = 0;
            // SAFETY: mechanism, parameter and template live for the call.
            let rv = unsafe {
                raw().C_GenerateKey.unwrap()(
                    s.handle(),
                    &mut m,
                    t.as_mut_ptr(),
                    t.len() as cryptoki_sys::CK_ULONG,
                    &mut h,
                )
            };
            step(
                "C_GenerateKey (PBKDF2 wrapping key)",
                cryptoki::error::Rv::from(rv).into_result(cryptoki::context::Function::GenerateKey),
            )?;
            // SAFETY: a handle the module just returned.
            let w = unsafe { ObjectHandle::new_from_raw(h) };
            let blob = wrap(s, w, v)?;
            let mut kek = [0u8; 32];
            pbkdf2::pbkdf2_hmac::<sha2::Sha256>(&password, &salt, 1000, &mut kek);
            assert!(same_aes_key(s, v, &offline_unwrap(&kek, &blob)));
            Ok(Outcome::Recovered)
        })())
    }
    expect(
        attack,
        Outcome::Recovered,
        Outcome::Refused(
            "C_GenerateKey (PBKDF2 wrapping key)",
            RvError::TemplateInconsistent,
        ),
    );
}
