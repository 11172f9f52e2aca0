//! Key-length reduction and the other attacks through `C_DeriveKey` and
//! MACs (Clulow 2003 §3, "key-length reduction"; issue 23 item 1).

use super::*;
use aes::cipher::{self, BlockCipherEncrypt};
use cryptoki::mechanism::misc::{ExtractParams, KeyDerivationStringData};
use hmac::{KeyInit, Mac};

pub(crate) const MESSAGE: &[u8] = b"the attacker's chosen message";

/// The byte `secret` of which, with `known` before it, gives `mac` as the
/// HMAC-SHA256 key (a search over 256 values).
pub(crate) fn search_byte(known: &[u8], mac: &[u8]) -> Option<u8> {
    (0..=255u8).find(|&b| {
        let mut key = known.to_vec();
        key.push(b);
        let mut m = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
        m.update(MESSAGE);
        m.finalize().into_bytes().as_slice() == mac
    })
}

/// A short generic secret derived by `mech`, used once as an HMAC key: the
/// MAC of [`MESSAGE`].
fn derive_and_mac(
    s: &Session,
    base: ObjectHandle,
    mech: &Mechanism,
    len: usize,
) -> Result<Vec<u8>, Outcome> {
    let short = step(
        "C_DeriveKey (short key)",
        s.derive_key(
            mech,
            base,
            &[
                Attribute::Class(ObjectClass::SECRET_KEY),
                Attribute::KeyType(KeyType::GENERIC_SECRET),
                Attribute::ValueLen((len as u64).into()),
                Attribute::Token(false),
                Attribute::Sign(true),
            ],
        ),
    )?;
    step(
        "C_Sign (HMAC with the short key)",
        s.sign(&Mechanism::Sha256Hmac, short, MESSAGE),
    )
}

/// The victim of the derivation attacks: AES-256, generated, sensitive,
/// never extractable, allowed to derive from the start (so that only the
/// derivation itself is tested).
pub(crate) fn derivation_victim(s: &Session) -> Result<ObjectHandle, Outcome> {
    step(
        "C_GenerateKey (victim)",
        aes_key(s, false, &[AttributeType::Encrypt, AttributeType::Derive]),
    )
}

/// Issue 23 item 1, as reported: `CKA_DERIVE` switched on after the key
/// was made, then 32 one-byte extractions, each found by 256 HMACs.
fn extract_after_widening(s: &Session) -> Outcome {
    outcome((|| {
        let victim = step(
            "C_GenerateKey (victim)",
            aes_key(s, false, &[AttributeType::Encrypt]),
        )?;
        step(
            "C_SetAttributeValue (CKA_DERIVE = true)",
            s.update_attributes(victim, &[Attribute::Derive(true)]),
        )?;
        extract_bytes(s, victim)
    })())
}

/// Reads `victim` one byte at a time through `CKM_EXTRACT_KEY_FROM_KEY`
/// and an HMAC oracle.
fn extract_bytes(s: &Session, victim: ObjectHandle) -> Result<Outcome, Outcome> {
    let mut recovered = Vec::new();
    for i in 0..32 {
        let mac = derive_and_mac(
            s,
            victim,
            &Mechanism::ExtractKeyFromKey(ExtractParams::new(8 * i)),
            1,
        )?;
        recovered.push(search_byte(&[], &mac).expect("a byte gives this MAC"));
    }
    assert!(
        same_aes_key(s, victim, &recovered),
        "the search found a key other than the victim"
    );
    Ok(Outcome::Recovered)
}

#[test]
fn key_length_reduction_after_widening_derive() {
    let refused = || {
        Outcome::Refused(
            "C_SetAttributeValue (CKA_DERIVE = true)",
            RvError::AttributeReadOnly,
        )
    };
    expect(extract_after_widening, refused(), refused());
}

#[test]
fn key_length_reduction_by_extraction() {
    fn attack(s: &Session) -> Outcome {
        outcome(derivation_victim(s).and_then(|v| extract_bytes(s, v)))
    }
    let refused = || Outcome::Refused("C_DeriveKey (short key)", RvError::KeySizeRange);
    expect(attack, refused(), refused());
}

/// `CKM_CONCATENATE_DATA_AND_BASE` with a known prefix: a key of 14 bytes
/// (above the floor by length) of which one byte is secret.
#[test]
fn key_length_reduction_behind_a_known_prefix() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let victim = derivation_victim(s)?;
            let mut recovered: Vec<u8> = Vec::new();
            for i in 0..32usize {
                let data = vec![0x11u8; 13usize.saturating_sub(i)];
                let len = data.len() + i + 1;
                let mac = derive_and_mac(
                    s,
                    victim,
                    &Mechanism::ConcatenateDataAndBase(KeyDerivationStringData::new(&data)),
                    len,
                )?;
                let mut known = data.clone();
                known.extend_from_slice(&recovered);
                recovered.push(search_byte(&known, &mac).expect("a byte gives this MAC"));
            }
            assert!(same_aes_key(s, victim, &recovered));
            Ok(Outcome::Recovered)
        })())
    }
    let refused = || Outcome::Refused("C_DeriveKey (short key)", RvError::KeySizeRange);
    expect(attack, refused(), refused());
}

/// `CKM_XOR_BASE_AND_DATA` with one byte of data gives one byte of key.
#[test]
fn key_length_reduction_by_xor() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let victim = derivation_victim(s)?;
            let mac = derive_and_mac(
                s,
                victim,
                &Mechanism::XorBaseAndData(KeyDerivationStringData::new(&[0])),
                1,
            )?;
            search_byte(&[], &mac).expect("a byte gives this MAC");
            Ok(Outcome::Recovered)
        })())
    }
    let refused = || Outcome::Refused("C_DeriveKey (short key)", RvError::KeySizeRange);
    expect(attack, refused(), refused());
}

/// A key of a weaker type: 8 bytes of an AES-256 key as a single-DES key
/// (56 bits, an offline search of 2^56 with a known plaintext from
/// `C_Encrypt`). The search is not run here: the weak key's existence is
/// the attack's success.
#[test]
fn key_length_reduction_to_single_des() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let victim = derivation_victim(s)?;
            step(
                "C_DeriveKey (DES key)",
                s.derive_key(
                    &Mechanism::ExtractKeyFromKey(ExtractParams::new(0)),
                    victim,
                    &[
                        Attribute::Class(ObjectClass::SECRET_KEY),
                        Attribute::KeyType(KeyType::DES),
                        Attribute::Token(false),
                        Attribute::Encrypt(true),
                    ],
                ),
            )?;
            Ok(Outcome::Weakened)
        })())
    }
    let refused = || Outcome::Refused("C_DeriveKey (DES key)", RvError::KeySizeRange);
    expect(attack, refused(), refused());
}

/// A derived key asked to be less protected than its base (readable):
/// a key derived by a simple function of a sensitive, unextractable base
/// is sensitive and unextractable whatever the template says.
#[test]
fn derived_key_less_protected_than_its_base() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let victim = derivation_victim(s)?;
            let copy = step(
                "C_DeriveKey (readable copy)",
                s.derive_key(
                    &Mechanism::ConcatenateBaseAndData(KeyDerivationStringData::new(&[])),
                    victim,
                    &aes_template(&[Attribute::Sensitive(false), Attribute::Extractable(true)]),
                ),
            )?;
            super::attributes::read_value(s, copy)
        })())
    }
    expect(attack, value_refused(), value_refused());
}

/// A sensitive HMAC key of 4 bytes is an oracle searched in 2^32 MACs:
/// refused for signing; a key that is not sensitive (RFC 4231's "Jefe")
/// stays usable, its protection being its owner's.
#[test]
fn short_sensitive_mac_key() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let key = step(
                "C_CreateObject (4-byte sensitive HMAC key)",
                s.create_object(&[
                    Attribute::Class(ObjectClass::SECRET_KEY),
                    Attribute::KeyType(KeyType::GENERIC_SECRET),
                    Attribute::Token(false),
                    Attribute::Sensitive(true),
                    Attribute::Sign(true),
                    Attribute::Value(b"Jefe".to_vec()),
                ]),
            )?;
            step(
                "C_Sign (HMAC)",
                s.sign(&Mechanism::Sha256Hmac, key, MESSAGE),
            )?;
            Ok(Outcome::Weakened)
        })())
    }
    let refused = || Outcome::Refused("C_Sign (HMAC)", RvError::KeySizeRange);
    expect(attack, refused(), refused());
    for policy in POLICIES {
        let plain = run(policy, |s| {
            let key = s
                .create_object(&[
                    Attribute::Class(ObjectClass::SECRET_KEY),
                    Attribute::KeyType(KeyType::GENERIC_SECRET),
                    Attribute::Token(false),
                    Attribute::Sign(true),
                    Attribute::Value(b"Jefe".to_vec()),
                ])
                .unwrap();
            match s.sign(&Mechanism::Sha256Hmac, key, MESSAGE) {
                Ok(_) => Outcome::Weakened,
                Err(e) => Outcome::Refused("C_Sign", rv_of(e)),
            }
        });
        assert_eq!(
            plain,
            Outcome::Weakened,
            "{policy:?}: a non-sensitive short key signs"
        );
    }
}

/// The floor is not a ban: 14 bytes (112 bits) of a protected base may be
/// derived, so tests above fail for the right reason.
#[test]
fn derivation_at_the_floor_is_allowed() {
    for policy in POLICIES {
        let got = run(policy, |s| {
            outcome((|| {
                let victim = derivation_victim(s)?;
                derive_and_mac(
                    s,
                    victim,
                    &Mechanism::ExtractKeyFromKey(ExtractParams::new(0)),
                    14,
                )?;
                Ok(Outcome::Weakened)
            })())
        });
        assert_eq!(got, Outcome::Weakened, "{policy:?}");
    }
}

/// The MAC floor for Triple DES: a sensitive two-key Triple DES key (80
/// bits) does not make DES3-CMAC or DES3-MAC tags; a three-key one (112)
/// does.
#[test]
fn sensitive_two_key_triple_des_mac() {
    use cryptoki_sys::*;
    fn sign_init(s: &Session, keygen: Mechanism, ty: CK_MECHANISM_TYPE) -> CK_RV {
        let key = s
            .generate_key(
                &keygen,
                &[
                    Attribute::Token(false),
                    Attribute::Sensitive(true),
                    Attribute::Sign(true),
                ],
            )
            .unwrap();
        let mut m = CK_MECHANISM {
            mechanism: ty,
            pParameter: std::ptr::null_mut(),
            ulParameterLen: 0,
        };
        // SAFETY: a live mechanism struct; the session and key are valid.
        unsafe { raw().C_SignInit.unwrap()(s.handle(), &mut m, key.handle()) }
    }
    for policy in POLICIES {
        for ty in [CKM_DES3_CMAC, CKM_DES3_MAC] {
            let rvs = run(policy, |s| {
                let two = sign_init(s, Mechanism::Des2KeyGen, ty);
                let three = sign_init(s, Mechanism::Des3KeyGen, ty);
                Outcome::Refused(
                    "C_SignInit",
                    match (two, three) {
                        (CKR_KEY_SIZE_RANGE, CKR_OK) => RvError::KeySizeRange,
                        (two, three) => {
                            panic!("{policy:?} {ty:#x}: DES2 {two:#x}, DES3 {three:#x}")
                        }
                    },
                )
            });
            assert_eq!(rvs, Outcome::Refused("C_SignInit", RvError::KeySizeRange));
        }
    }
}

/// The end of the encryption-of-data attacks: `value`, found by the
/// caller, is the key `derived` (a block encrypted under `derived` by the
/// token equals the block encrypted under `value` by the cipher crate
/// `C`), and the token marked `derived` as a key whose value may be known.
pub(crate) fn known_key_found<C: BlockCipherEncrypt + KeyInit>(
    s: &Session,
    derived: ObjectHandle,
    mech: &Mechanism,
    value: &[u8],
) -> Result<Outcome, Outcome> {
    let marks = step(
        "C_GetAttributeValue (derived key)",
        s.get_attributes(
            derived,
            &[
                AttributeType::AlwaysSensitive,
                AttributeType::NeverExtractable,
            ],
        ),
    )?;
    assert_eq!(
        marks,
        vec![
            Attribute::AlwaysSensitive(false),
            Attribute::NeverExtractable(false)
        ],
        "a derived key whose value the caller can learn is marked as known"
    );
    key_is::<C>(s, derived, mech, value)
}

/// `Recovered` if a block encrypted under `derived` by the token equals the
/// block encrypted under `value` by the cipher crate `C`.
pub(crate) fn key_is<C: BlockCipherEncrypt + KeyInit>(
    s: &Session,
    derived: ObjectHandle,
    mech: &Mechanism,
    value: &[u8],
) -> Result<Outcome, Outcome> {
    let mut block = cipher::Block::<C>::default();
    block.fill(0x5a);
    let theirs = step(
        "C_Encrypt (under the derived key)",
        s.encrypt(mech, derived, &block),
    )?;
    C::new_from_slice(value).unwrap().encrypt_block(&mut block);
    assert_eq!(
        theirs,
        block.as_slice(),
        "the value found is not the derived key"
    );
    Ok(Outcome::Recovered)
}

/// A three-key Triple DES victim: generated, sensitive, never extractable,
/// allowed to derive and to do what `usage` adds.
fn des3_victim_with(s: &Session, usage: &[AttributeType]) -> Result<ObjectHandle, Outcome> {
    let mut t = vec![
        Attribute::Token(false),
        Attribute::Sensitive(true),
        Attribute::Extractable(false),
    ];
    let mut flags = vec![AttributeType::Derive];
    flags.extend_from_slice(usage);
    t.extend(usage_flags(&flags));
    // The encryption-of-data derivations and the cipher itself, no
    // derivation that copies the victim (the copy would take any usage).
    raw_step(
        "C_GenerateKey (DES3 victim)",
        generate_allowed(
            s,
            &Mechanism::Des3KeyGen,
            &t,
            &[
                cryptoki_sys::CKM_DES3_ECB_ENCRYPT_DATA,
                cryptoki_sys::CKM_DES3_CBC_ENCRYPT_DATA,
                cryptoki_sys::CKM_DES3_ECB,
            ],
        ),
    )
}

/// A three-key Triple DES victim allowed to derive only.
fn des3_victim(s: &Session) -> Result<ObjectHandle, Outcome> {
    des3_victim_with(s, &[])
}

/// The DES encryption-of-data derivations inherit the base's protection:
/// a copy asked to be readable is sensitive all the same.
#[test]
fn des_encrypt_data_copy_less_protected_than_its_base() {
    fn attack(s: &Session) -> Outcome {
        use cryptoki_sys::*;
        outcome((|| {
            let victim = des3_victim(s)?;
            // Three different blocks: equal ones would make K1 = K2 = K3.
            let mut data: [u8; 24] = std::array::from_fn(|i| i as u8);
            for (mech, cbc) in [
                (CKM_DES3_ECB_ENCRYPT_DATA, false),
                (CKM_DES3_CBC_ENCRYPT_DATA, true),
            ] {
                let mut param = des_encrypt_data_param(cbc.then_some([7; 8]), &mut data);
                let copy = raw_step(
                    "C_DeriveKey (readable DES3 copy)",
                    raw_derive_with(
                        s,
                        mech,
                        &mut param,
                        victim,
                        &mut [
                            (CKA_CLASS, ulong_bytes(CKO_SECRET_KEY)),
                            (CKA_KEY_TYPE, ulong_bytes(CKK_DES3)),
                            (CKA_TOKEN, vec![0]),
                            (CKA_SENSITIVE, vec![0]),
                            (CKA_EXTRACTABLE, vec![1]),
                        ],
                    ),
                )?;
                super::attributes::read_value(s, copy)?;
            }
            Ok(Outcome::Recovered)
        })())
    }
    expect(attack, value_refused(), value_refused());
}

/// Key-length reduction through the DES encryption-of-data derivations: a
/// one-byte generic secret from a protected Triple DES key (then an HMAC
/// oracle searched in 256 tries) is under the floor.
#[test]
fn key_length_reduction_by_des_encrypt_data() {
    fn attack(s: &Session) -> Outcome {
        use cryptoki_sys::*;
        outcome((|| {
            let victim = des3_victim(s)?;
            let mut data = [0x22u8; 8];
            let mut param = des_encrypt_data_param(Some([7; 8]), &mut data);
            raw_step(
                "C_DeriveKey (1-byte key)",
                raw_derive_with(
                    s,
                    CKM_DES3_CBC_ENCRYPT_DATA,
                    &mut param,
                    victim,
                    &mut [
                        (CKA_CLASS, ulong_bytes(CKO_SECRET_KEY)),
                        (CKA_KEY_TYPE, ulong_bytes(CKK_GENERIC_SECRET)),
                        (CKA_VALUE_LEN, ulong_bytes(1)),
                        (CKA_TOKEN, vec![0]),
                        (CKA_SIGN, vec![1]),
                    ],
                ),
            )?;
            Ok(Outcome::Weakened)
        })())
    }
    let refused = || Outcome::Refused("C_DeriveKey (1-byte key)", RvError::KeySizeRange);
    expect(attack, refused(), refused());
}

/// The limit of the encryption-of-data derivations (AES and DES alike):
/// the derived value is `E_K(data)`, so a base that may also encrypt
/// (`CKA_ENCRYPT`) tells its caller the value of the key derived from it.
/// Under `default` the key is made but marked as one that was not always
/// secret (`CKA_ALWAYS_SENSITIVE` and `CKA_NEVER_EXTRACTABLE` false, so
/// the rules that trust only unknowable keys do not trust it), and the
/// test runs the attack to the end: the caller knows the derived key. No
/// value of the base leaks. Under `strict` the derivation is refused
/// (docs/SECURITY.md, "Derived keys").
#[test]
fn encrypt_data_derived_value_known_through_encrypt() {
    fn attack(s: &Session) -> Outcome {
        use cryptoki_sys::*;
        outcome((|| {
            let victim = des3_victim_with(s, &[AttributeType::Encrypt])?;
            let mut data: [u8; 24] = std::array::from_fn(|i| 0x40 + i as u8);
            let mut param = des_encrypt_data_param(None, &mut data);
            let derived = raw_step(
                "C_DeriveKey (DES3 key)",
                raw_derive_with(
                    s,
                    CKM_DES3_ECB_ENCRYPT_DATA,
                    &mut param,
                    victim,
                    &mut [
                        (CKA_CLASS, ulong_bytes(CKO_SECRET_KEY)),
                        (CKA_KEY_TYPE, ulong_bytes(CKK_DES3)),
                        (CKA_TOKEN, vec![0]),
                        (CKA_ENCRYPT, vec![1]),
                    ],
                ),
            )?;
            let value = step(
                "C_Encrypt (the data under the base)",
                s.encrypt(&Mechanism::Des3Ecb, victim, &data),
            )?;
            known_key_found::<des::TdesEde3>(s, derived, &Mechanism::Des3Ecb, &value)
        })())
    }
    expect(
        attack,
        Outcome::Recovered,
        Outcome::Refused("C_DeriveKey (DES3 key)", RvError::KeyFunctionNotPermitted),
    );
}

/// The sibling through a MAC: a CBC-MAC of one block is that block's
/// encryption, so a base allowed to sign with `CKM_AES_MAC_GENERAL` (and
/// not to encrypt) tells the value of a key `CKM_AES_ECB_ENCRYPT_DATA`
/// derives from it. Same outcome as through `C_Encrypt`.
#[test]
fn encrypt_data_derived_value_known_through_cbc_mac() {
    fn attack(s: &Session) -> Outcome {
        use cryptoki_sys::*;
        outcome((|| {
            let victim = step(
                "C_GenerateKey (AES victim)",
                aes_key(s, false, &[AttributeType::Sign, AttributeType::Derive]),
            )?;
            let data = [0x3cu8; 16];
            let derived = aes_ecb_encrypt_data(s, victim, &data)?;
            let mut mac_len: CK_ULONG = 16;
            let value = crate::raw_calls::sign(
                s,
                crate::raw_calls::mech(CKM_AES_MAC_GENERAL, Some(&mut mac_len)),
                victim.handle(),
                &data,
                None,
            )
            .map_err(|rv| raw_step::<()>("C_Sign (CBC-MAC)", Err(rv)).unwrap_err())?;
            known_key_found::<aes::Aes128>(s, derived, &Mechanism::AesEcb, &value)
        })())
    }
    expect(
        attack,
        Outcome::Recovered,
        Outcome::Refused("C_DeriveKey (AES key)", RvError::KeyFunctionNotPermitted),
    );
}

/// The copy route for the encryption-of-data derivations: a base that may
/// not encrypt, decrypt, sign, wrap or unwrap, but may derive a copy of
/// itself (`CKM_CONCATENATE_BASE_AND_DATA` with no data; no
/// `CKA_ALLOWED_MECHANISMS`), gives the copy `CKA_ENCRYPT` and encrypts
/// the data. Same outcome as through `C_Encrypt` under the base.
#[test]
fn encrypt_data_derived_value_known_through_a_derived_copy() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let victim = step(
                "C_GenerateKey (AES victim)",
                aes_key(s, false, &[AttributeType::Derive]),
            )?;
            let data = [0x3cu8; 16];
            let derived = aes_ecb_encrypt_data(s, victim, &data)?;
            let copy = step(
                "C_DeriveKey (copy of the base, CKA_ENCRYPT)",
                s.derive_key(
                    &Mechanism::ConcatenateBaseAndData(KeyDerivationStringData::new(&[])),
                    victim,
                    &[
                        Attribute::Class(ObjectClass::SECRET_KEY),
                        Attribute::KeyType(KeyType::AES),
                        Attribute::Token(false),
                        Attribute::Encrypt(true),
                    ],
                ),
            )?;
            let value = step(
                "C_Encrypt (the data under the copy)",
                s.encrypt(&Mechanism::AesEcb, copy, &data),
            )?;
            known_key_found::<aes::Aes128>(s, derived, &Mechanism::AesEcb, &value)
        })())
    }
    expect(
        attack,
        Outcome::Recovered,
        Outcome::Refused("C_DeriveKey (AES key)", RvError::KeyFunctionNotPermitted),
    );
}

/// An AES-128 key `CKM_AES_ECB_ENCRYPT_DATA` derives from `victim` over
/// `data` (one block): its value is E_victim(data).
fn aes_ecb_encrypt_data(
    s: &Session,
    victim: ObjectHandle,
    data: &[u8; 16],
) -> Result<ObjectHandle, Outcome> {
    use cryptoki_sys::*;
    let mut data = *data;
    let mut param = CK_KEY_DERIVATION_STRING_DATA {
        pData: data.as_mut_ptr(),
        ulLen: data.len() as CK_ULONG,
    };
    // SAFETY: viewing a plain C struct as bytes.
    let mut param = unsafe {
        std::slice::from_raw_parts(
            (&mut param as *mut CK_KEY_DERIVATION_STRING_DATA).cast::<u8>(),
            size_of::<CK_KEY_DERIVATION_STRING_DATA>(),
        )
    }
    .to_vec();
    raw_step(
        "C_DeriveKey (AES key)",
        raw_derive_with(
            s,
            CKM_AES_ECB_ENCRYPT_DATA,
            &mut param,
            victim,
            &mut [
                (CKA_CLASS, ulong_bytes(CKO_SECRET_KEY)),
                (CKA_KEY_TYPE, ulong_bytes(CKK_AES)),
                (CKA_VALUE_LEN, ulong_bytes(16)),
                (CKA_TOKEN, vec![0]),
                (CKA_ENCRYPT, vec![1]),
            ],
        ),
    )
}
