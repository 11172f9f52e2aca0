//! The TLS 1.2 mechanisms (docs/SECURITY.md "TLS 1.2"): a readable master
//! secret from a protected pre-master, the IV window over another split of
//! the same key block, `pVersion` reading two bytes of a sensitive key,
//! `CKM_TLS_KDF` with the labels TLS itself uses, short keys from a
//! protected master, and an HMAC oracle under the master secret.

use super::*;
use crate::tls_calls as t;
use cryptoki::mechanism::misc::KeyDerivationStringData;
use cryptoki_sys::*;

const CLIENT: [u8; 32] = [0xC1; 32];
const SERVER: [u8; 32] = [0x5E; 32];

/// A token-secret pre-master: generated, sensitive, never extractable,
/// and allowed only the master-secret derivations (an HMAC under it, or
/// under a copy of it, computes its master secret:
/// [`master_secret_computed_by_hmac_under_the_premaster`]).
fn premaster(s: &Session) -> Result<ObjectHandle, Outcome> {
    raw_step(
        "C_GenerateKey (pre-master)",
        generate_allowed(
            s,
            &Mechanism::GenericSecretKeyGen,
            &premaster_template(),
            &[CKM_TLS12_MASTER_KEY_DERIVE, CKM_TLS12_MASTER_KEY_DERIVE_DH],
        ),
    )
}

/// A session, sensitive, never extractable 48-byte generic secret that
/// may derive.
fn premaster_template() -> Vec<Attribute> {
    vec![
        Attribute::Token(false),
        Attribute::ValueLen(48.into()),
        Attribute::Sensitive(true),
        Attribute::Extractable(false),
        Attribute::Derive(true),
    ]
}

/// The TLS 1.2 PRF is HMAC keyed by the pre-master: a pre-master that may
/// also sign with HMAC-SHA256 (secret keys' default `CKA_SIGN`) computes
/// its own master secret in four `C_Sign` calls (`A(1) = HMAC(pms, label ‖
/// seed)`, `HMAC(pms, A(1) ‖ label ‖ seed)`, …). Under `default` the master
/// is made but marked as a key whose value may be known (not
/// `CKA_ALWAYS_SENSITIVE`, so not token-secret: none of the IV rules trust
/// it), and the test runs the attack to the end: the master computed
/// outside the token gives the token's own `CKM_TLS12_MAC`. Under `strict`
/// the derivation is refused (docs/SECURITY.md, "Derived keys").
#[test]
fn master_secret_computed_by_hmac_under_the_premaster() {
    fn attack(s: &Session) -> Outcome {
        use hmac::{KeyInit, Mac};
        outcome((|| {
            let pre = step(
                "C_GenerateKey (pre-master)",
                s.generate_key(&Mechanism::GenericSecretKeyGen, &premaster_template()),
            )?;
            let master = master_of(s, pre, &[Attribute::Token(false)])?;
            let marks = step(
                "C_GetAttributeValue (master)",
                s.get_attributes(master, &[AttributeType::AlwaysSensitive]),
            )?;
            assert_eq!(marks, vec![Attribute::AlwaysSensitive(false)]);
            let seed = [b"master secret".as_slice(), &CLIENT, &SERVER].concat();
            let hmac = |data: &[u8]| {
                step(
                    "C_Sign (HMAC-SHA256 under the pre-master)",
                    s.sign(&Mechanism::Sha256Hmac, pre, data),
                )
            };
            let a1 = hmac(&seed)?;
            let a2 = hmac(&a1)?;
            let value = [
                hmac(&[&a1[..], &seed].concat())?,
                hmac(&[&a2[..], &seed].concat())?,
            ]
            .concat();
            let master_value = &value[..48];
            let handshake = [0x33_u8; 32];
            let theirs = raw_step(
                "C_Sign (CKM_TLS12_MAC under the master)",
                t::mac(
                    s,
                    CKM_TLS12_MAC,
                    master,
                    t::mac_params(CKM_SHA256, 12, 2),
                    &[&handshake],
                ),
            )?;
            let ours = |data: &[u8]| {
                let mut m = hmac::Hmac::<sha2::Sha256>::new_from_slice(master_value).unwrap();
                m.update(data);
                m.finalize().into_bytes().to_vec()
            };
            let seed = [b"client finished".as_slice(), &handshake].concat();
            let finished = ours(&[&ours(&seed)[..], &seed].concat());
            assert_eq!(
                theirs,
                finished[..12],
                "the value found is not the master secret"
            );
            Ok(Outcome::Recovered)
        })())
    }
    expect(
        attack,
        Outcome::Recovered,
        Outcome::Refused(
            "C_DeriveKey (master secret)",
            RvError::KeyFunctionNotPermitted,
        ),
    );
}

/// A master secret from `pre` (the DH variant: no `pVersion`) with the
/// caller's `template`.
fn master_of(
    s: &Session,
    pre: ObjectHandle,
    template: &[Attribute],
) -> Result<ObjectHandle, Outcome> {
    raw_step(
        "C_DeriveKey (master secret)",
        t::master(
            s,
            CKM_TLS12_MASTER_KEY_DERIVE_DH,
            pre,
            CKM_SHA256,
            &CLIENT,
            &SERVER,
            None,
            template,
        ),
    )
}

fn aes_write_keys(len: u64) -> Vec<Attribute> {
    aes_template(&[Attribute::ValueLen(len.into())])
}

/// A readable master secret from a sensitive pre-master: the template's
/// `CKA_SENSITIVE = false`, `CKA_EXTRACTABLE = true` are overruled (as for
/// the simple derivations), so the value cannot be read.
#[test]
fn master_secret_less_protected_than_its_premaster() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let pre = premaster(s)?;
            let master = master_of(
                s,
                pre,
                &[
                    Attribute::Token(false),
                    Attribute::Sensitive(false),
                    Attribute::Extractable(true),
                ],
            )?;
            super::attributes::read_value(s, master)
        })())
    }
    expect(attack, value_refused(), value_refused());
}

/// The AES-128 client write key of the split (32, 16, 0) (a CBC suite)
/// read as the "IVs" of the split (0, 32, 12) (a ChaCha20 suite) of the
/// same key block (design note §4.2). From a token-secret master the
/// second split is refused under `default` (the first split of the tuple
/// is bound) and IVs are never returned under `strict`.
#[test]
fn iv_window_over_another_split() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let pre = premaster(s)?;
            let master = master_of(s, pre, &[Attribute::Token(false)])?;
            second_split(s, master)
        })())
    }
    let refused = || Outcome::Refused("C_DeriveKey (second split)", RvError::MechanismParamInvalid);
    expect(attack, refused(), refused());
}

/// The two splits of [`iv_window_over_another_split`]: the second one's
/// IVs checked against the first one's client write key (by encryption).
fn second_split(s: &Session, master: ObjectHandle) -> Result<Outcome, Outcome> {
    let first = raw_step(
        "C_DeriveKey (first split)",
        t::key_mat(
            s,
            CKM_TLS12_KEY_AND_MAC_DERIVE,
            master,
            CKM_SHA256,
            (256, 128, 0),
            &CLIENT,
            &SERVER,
            &aes_write_keys(16),
        ),
    )?;
    let second = raw_step(
        "C_DeriveKey (second split)",
        t::key_mat(
            s,
            CKM_TLS12_KEY_AND_MAC_DERIVE,
            master,
            CKM_SHA256,
            (0, 256, 96),
            &CLIENT,
            &SERVER,
            &aes_write_keys(32),
        ),
    )?;
    // key block [64, 80) = the first split's client write key = the
    // second split's client IV [64, 76) ‖ server IV [76, 80).
    let guess = [&second.iv_client[..], &second.iv_server[..4]].concat();
    // SAFETY: a handle the module returned.
    let key = unsafe { ObjectHandle::new_from_raw(first.handles[2]) };
    if same_aes128_key(s, key, &guess) {
        Ok(Outcome::Recovered)
    } else {
        Ok(Outcome::Blind("IV bytes"))
    }
}

/// True if `key` encrypts a block as AES-128-ECB under `value` does.
fn same_aes128_key(s: &Session, key: ObjectHandle, value: &[u8]) -> bool {
    use aes::cipher::{BlockCipherEncrypt, KeyInit};
    let block = [0x5a_u8; 16];
    let Ok(theirs) = s.encrypt(&Mechanism::AesEcb, key, &block) else {
        return false;
    };
    let Ok(cipher) = aes::Aes128::new_from_slice(value) else {
        return false;
    };
    let mut ours = block.into();
    cipher.encrypt_block(&mut ours);
    theirs == ours.as_slice()
}

/// The same two splits from a master whose value was known outside the
/// token (its pre-master was imported: not `CKA_ALWAYS_SENSITIVE`): IVs
/// are returned freely and the attack runs to the end under both levels —
/// the keys below such a master were never token-secret (docs/SECURITY.md
/// "TLS 1.2", residuals).
#[test]
fn iv_window_from_a_master_of_known_value() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let pre = step(
                "C_CreateObject (pre-master)",
                s.create_object(&[
                    Attribute::Class(ObjectClass::SECRET_KEY),
                    Attribute::KeyType(KeyType::GENERIC_SECRET),
                    Attribute::Token(false),
                    Attribute::Sensitive(true),
                    Attribute::Derive(true),
                    Attribute::Value(vec![0x42; 48]),
                ]),
            )?;
            let master = master_of(s, pre, &[Attribute::Token(false)])?;
            second_split(s, master)
        })())
    }
    expect(attack, Outcome::Recovered, Outcome::Recovered);
}

/// Under `default` a token-secret session master gives the IVs of its
/// first split (JSSE's AES-GCM: no MAC keys, 4-byte IVs), and the same
/// split again; a token object never does; `strict` never does.
/// `CKM_TLS12_KEY_SAFE_DERIVE` never writes an IV, and its split is bound
/// too.
#[test]
fn iv_policy_for_token_secret_masters() {
    for policy in POLICIES {
        let f = Fixture::with_policy(policy.name());
        let s = f.user(f.token("attacks"));
        let Ok(pre) = premaster(&s) else { panic!() };
        let Ok(master) = master_of(&s, pre, &[Attribute::Token(false)]) else {
            panic!()
        };
        let gcm = |ty, randoms: &[u8; 32]| {
            t::key_mat(
                &s,
                ty,
                master,
                CKM_SHA256,
                (0, 128, 32),
                randoms,
                &SERVER,
                &aes_write_keys(16),
            )
        };
        let strict = policy == Policy::Strict;
        for _ in 0..2 {
            let r = gcm(CKM_TLS12_KEY_AND_MAC_DERIVE, &CLIENT);
            assert_eq!(r.is_err(), strict, "{policy:?}");
            if let Ok(km) = r {
                assert_eq!(km.iv_client.len(), 4);
                assert_ne!(km.iv_client, [0xEE; 4], "IV written");
            }
        }
        // KEY_SAFE: IVs ignored (buffers untouched), keys made.
        let other = [0x77; 32];
        let km = gcm(CKM_TLS12_KEY_SAFE_DERIVE, &other).unwrap();
        assert_eq!((km.iv_client, km.iv_server), (vec![0xEE; 4], vec![0xEE; 4]));
        assert_ne!(km.handles[2], CK_INVALID_HANDLE);
        // ... and its split (no IV) is the first of that tuple: an IV
        // split of another shape is refused.
        let r = t::key_mat(
            &s,
            CKM_TLS12_KEY_AND_MAC_DERIVE,
            master,
            CKM_SHA256,
            (0, 256, 96),
            &other,
            &SERVER,
            &aes_write_keys(32),
        );
        assert_eq!(r.err(), Some(CKR_MECHANISM_PARAM_INVALID), "{policy:?}");
        // A token-object master never returns IVs.
        let Ok(token_master) = master_of(&s, pre, &[Attribute::Token(true)]) else {
            panic!()
        };
        let r = t::key_mat(
            &s,
            CKM_TLS12_KEY_AND_MAC_DERIVE,
            token_master,
            CKM_SHA256,
            (0, 128, 32),
            &[0x99; 32],
            &SERVER,
            &aes_write_keys(16),
        );
        assert_eq!(r.err(), Some(CKR_MECHANISM_PARAM_INVALID), "{policy:?}");
    }
}

/// `pVersion` of `CKM_TLS12_MASTER_KEY_DERIVE` returns the first two bytes
/// of the base: with the victim concatenated to 48 bytes it would read the
/// victim two bytes a call (shifted by `CKM_EXTRACT_KEY_FROM_KEY`). For a
/// token-secret base it is refused.
#[test]
fn pversion_reads_a_sensitive_key() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let victim = crate::derivation::derivation_victim(s)?;
            let padded = step(
                "C_DeriveKey (48-byte copy)",
                s.derive_key(
                    &Mechanism::ConcatenateBaseAndData(KeyDerivationStringData::new(&[0; 16])),
                    victim,
                    &[
                        Attribute::Class(ObjectClass::SECRET_KEY),
                        Attribute::KeyType(KeyType::GENERIC_SECRET),
                        Attribute::Token(false),
                        Attribute::Derive(true),
                    ],
                ),
            )?;
            let mut version = CK_VERSION { major: 0, minor: 0 };
            raw_step(
                "C_DeriveKey (pVersion)",
                t::master(
                    s,
                    CKM_TLS12_MASTER_KEY_DERIVE,
                    padded,
                    CKM_SHA256,
                    &CLIENT,
                    &SERVER,
                    Some(&mut version),
                    &[Attribute::Token(false)],
                ),
            )?;
            Ok(Outcome::Weakened)
        })())
    }
    let refused = || Outcome::Refused("C_DeriveKey (pVersion)", RvError::MechanismParamInvalid);
    expect(attack, refused(), refused());
}

/// `CKM_TLS_KDF` with the key-expansion label and swapped randoms would be
/// the key block as one key of the caller's choosing; a one-letter label
/// followed by randoms that spell the rest is the same seed. Both refused.
#[test]
fn tls_kdf_reserved_labels() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let pre = premaster(s)?;
            let master = master_of(s, pre, &[Attribute::Token(false)])?;
            let mut spelled = [0u8; 32];
            spelled[..12].copy_from_slice(b"ey expansion");
            for (label, client) in [(&b"key expansion"[..], SERVER), (b"k", spelled)] {
                raw_step(
                    "C_DeriveKey (TLS_KDF)",
                    t::kdf(
                        s,
                        CKM_TLS_KDF,
                        master,
                        CKM_SHA256,
                        label,
                        &client,
                        &CLIENT,
                        None,
                        &[Attribute::Token(false), Attribute::ValueLen(32.into())],
                    ),
                )?;
            }
            Ok(Outcome::Recovered)
        })())
    }
    let refused = || Outcome::Refused("C_DeriveKey (TLS_KDF)", RvError::MechanismParamInvalid);
    expect(attack, refused(), refused());
}

/// Key-length reduction through the TLS mechanisms: one-byte MAC keys of a
/// key block, a one-byte `CKM_TLS_KDF` output, from a protected master.
#[test]
fn short_keys_from_a_protected_master() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let pre = premaster(s)?;
            let master = master_of(s, pre, &[Attribute::Token(false)])?;
            let kdf = t::kdf(
                s,
                CKM_TLS_KDF,
                master,
                CKM_SHA256,
                b"EXPORTER-short",
                &CLIENT,
                &SERVER,
                None,
                &[Attribute::Token(false), Attribute::ValueLen(1.into())],
            );
            assert_eq!(kdf.err(), Some(CKR_KEY_SIZE_RANGE));
            raw_step(
                "C_DeriveKey (8-bit MAC keys)",
                t::key_mat(
                    s,
                    CKM_TLS12_KEY_SAFE_DERIVE,
                    master,
                    CKM_SHA256,
                    (8, 128, 0),
                    &CLIENT,
                    &SERVER,
                    &aes_write_keys(16),
                ),
            )?;
            Ok(Outcome::Weakened)
        })())
    }
    let refused = || Outcome::Refused("C_DeriveKey (8-bit MAC keys)", RvError::KeySizeRange);
    expect(attack, refused(), refused());
}

/// An HMAC under the master secret computes the key block
/// (`A(1) = HMAC(ms, label ‖ seed)`, then `HMAC(ms, A(1) ‖ label ‖ seed)`).
/// The master secret is restricted to the TLS mechanisms unless its
/// template lists others, and a protected one may list only TLS ones.
#[test]
fn hmac_oracle_under_the_master_secret() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let pre = premaster(s)?;
            let listed = master_of(
                s,
                pre,
                &[
                    Attribute::Token(false),
                    Attribute::AllowedMechanisms(vec![
                        cryptoki::mechanism::MechanismType::SHA256_HMAC,
                    ]),
                ],
            );
            assert_eq!(
                listed.err(),
                Some(Outcome::Refused(
                    "C_DeriveKey (master secret)",
                    RvError::TemplateInconsistent
                ))
            );
            let master = master_of(s, pre, &[Attribute::Token(false)])?;
            step(
                "C_SignInit (HMAC under the master secret)",
                s.sign(&Mechanism::Sha256Hmac, master, b"key expansion"),
            )?;
            Ok(Outcome::Recovered)
        })())
    }
    let refused = || {
        Outcome::Refused(
            "C_SignInit (HMAC under the master secret)",
            RvError::MechanismInvalid,
        )
    };
    expect(attack, refused(), refused());
}

/// `CKM_TLS12_KEY_AND_MAC_DERIVE` with a template asking for readable keys
/// from a protected master: refused (the spec: the template may not differ
/// from the base).
#[test]
fn readable_traffic_keys_from_a_protected_master() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let pre = premaster(s)?;
            let master = master_of(s, pre, &[Attribute::Token(false)])?;
            raw_step(
                "C_DeriveKey (readable traffic keys)",
                t::key_mat(
                    s,
                    CKM_TLS12_KEY_SAFE_DERIVE,
                    master,
                    CKM_SHA256,
                    (256, 128, 0),
                    &CLIENT,
                    &SERVER,
                    &aes_template(&[
                        Attribute::ValueLen(16.into()),
                        Attribute::Sensitive(false),
                        Attribute::Extractable(true),
                    ]),
                ),
            )?;
            Ok(Outcome::Recovered)
        })())
    }
    let refused = || {
        Outcome::Refused(
            "C_DeriveKey (readable traffic keys)",
            RvError::TemplateInconsistent,
        )
    };
    expect(attack, refused(), refused());
}
