//! Key-length reduction and the other attacks through `C_DeriveKey` and
//! MACs (Clulow 2003 §3, "key-length reduction"; issue 23 item 1).

use super::*;
use cryptoki::mechanism::misc::{ExtractParams, KeyDerivationStringData};
use hmac::{KeyInit, Mac};

const MESSAGE: &[u8] = b"the attacker's chosen message";

/// The byte `secret` of which, with `known` before it, gives `mac` as the
/// HMAC-SHA256 key (a search over 256 values).
fn search_byte(known: &[u8], mac: &[u8]) -> Option<u8> {
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
fn derivation_victim(s: &Session) -> Result<ObjectHandle, Outcome> {
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
    let refused = || {
        Outcome::Refused(
            "C_GetAttributeValue (CKA_VALUE)",
            RvError::AttributeSensitive,
        )
    };
    expect(attack, refused(), refused());
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

/// `C_DeriveKey` with `CKM_PUB_KEY_FROM_PRIV_KEY` (PKCS#11 3.2) through the
/// raw function list: the new object's handle, or the code.
fn public_from_private(
    s: &Session,
    base: ObjectHandle,
    template: &[(cryptoki_sys::CK_ATTRIBUTE_TYPE, Vec<u8>)],
    param: Option<&mut [u8]>,
) -> Result<ObjectHandle, cryptoki_sys::CK_RV> {
    use cryptoki_sys::*;
    let (p, n) = match param {
        Some(p) => (p.as_mut_ptr().cast(), p.len() as CK_ULONG),
        None => (std::ptr::null_mut(), 0),
    };
    let mut m = CK_MECHANISM {
        mechanism: CKM_PUB_KEY_FROM_PRIV_KEY,
        pParameter: p,
        ulParameterLen: n,
    };
    let mut values: Vec<Vec<u8>> = template.iter().map(|(_, v)| v.clone()).collect();
    let mut t: Vec<CK_ATTRIBUTE> = template
        .iter()
        .zip(values.iter_mut())
        .map(|((ty, _), v)| CK_ATTRIBUTE {
            type_: *ty,
            pValue: v.as_mut_ptr().cast(),
            ulValueLen: v.len() as CK_ULONG,
        })
        .collect();
    let mut out: CK_OBJECT_HANDLE = 0;
    // SAFETY: the mechanism, template and values outlive the call.
    let rv = unsafe {
        raw().C_DeriveKey.unwrap()(
            s.handle(),
            &mut m,
            base.handle(),
            t.as_mut_ptr(),
            t.len() as CK_ULONG,
            &mut out,
        )
    };
    if rv == CKR_OK {
        // SAFETY: a handle the module just returned.
        Ok(unsafe { ObjectHandle::new_from_raw(out) })
    } else {
        Err(rv)
    }
}

fn ulong(v: cryptoki_sys::CK_ULONG) -> Vec<u8> {
    v.to_ne_bytes().to_vec()
}

/// `CKM_PUB_KEY_FROM_PRIV_KEY` on every private key type the token
/// generates: the public key made from the private key alone verifies the
/// private key's signatures (or, for ML-KEM, encapsulates to it, for
/// X25519 agrees with it) exactly as the generated public key does, and
/// has the generated public key's values. Neither policy refuses it; the
/// base needs no `CKA_DERIVE` (kryoptic's rule: only public values come
/// out).
#[test]
fn public_key_from_private_key_for_every_key_type() {
    for policy in POLICIES {
        let f = Fixture::with_policy(policy.name());
        let slot = f.token("pubfrompriv");
        let s = f.user(slot);
        let oid = |v: &[u8]| Attribute::EcParams(v.to_vec());
        let pairs: Vec<(&str, Mechanism, Vec<Attribute>, Vec<AttributeType>)> = vec![
            (
                "rsa",
                Mechanism::RsaPkcsKeyPairGen,
                vec![
                    Attribute::ModulusBits(2048.into()),
                    Attribute::PublicExponent(vec![1, 0, 1]),
                ],
                vec![AttributeType::Modulus, AttributeType::PublicExponent],
            ),
            (
                "p256",
                Mechanism::EccKeyPairGen,
                vec![oid(&[
                    0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07,
                ])],
                vec![AttributeType::EcPoint, AttributeType::EcParams],
            ),
            (
                "ed25519",
                Mechanism::EccEdwardsKeyPairGen,
                vec![oid(&[0x06, 0x03, 0x2b, 0x65, 0x70])],
                vec![AttributeType::EcPoint],
            ),
            (
                "x25519",
                Mechanism::EccMontgomeryKeyPairGen,
                vec![oid(b"\x13\x0acurve25519")],
                vec![AttributeType::EcPoint],
            ),
            (
                "ml-dsa-44",
                Mechanism::MlDsaKeyPairGen,
                vec![Attribute::ParameterSet(
                    cryptoki::object::MlDsaParameterSetType::ML_DSA_44.into(),
                )],
                vec![
                    AttributeType::Value,
                    AttributeType::ParameterSet,
                    AttributeType::PublicKeyInfo,
                ],
            ),
            (
                "ml-kem-512",
                Mechanism::MlKemKeyPairGen,
                vec![Attribute::ParameterSet(
                    cryptoki::object::MlKemParameterSetType::ML_KEM_512.into(),
                )],
                vec![
                    AttributeType::Value,
                    AttributeType::ParameterSet,
                    AttributeType::PublicKeyInfo,
                ],
            ),
            (
                "slh-dsa-sha2-128f",
                Mechanism::SlhDsaKeyPairGen,
                vec![Attribute::ParameterSet(
                    cryptoki::object::SlhDsaParameterSetType::SHA2_128F.into(),
                )],
                vec![
                    AttributeType::Value,
                    AttributeType::ParameterSet,
                    AttributeType::PublicKeyInfo,
                ],
            ),
        ];
        for (name, keygen, public_template, compared) in pairs {
            let (public, private) = s
                .generate_key_pair(
                    &keygen,
                    &[&public_template[..], &[Attribute::Token(false)]].concat(),
                    &[
                        Attribute::Token(false),
                        Attribute::Sensitive(true),
                        Attribute::Extractable(false),
                        Attribute::Derive(false),
                    ],
                )
                .unwrap();
            let made = public_from_private(
                &s,
                private,
                &[
                    (cryptoki_sys::CKA_TOKEN, vec![0]),
                    (cryptoki_sys::CKA_LABEL, b"derived".to_vec()),
                ],
                None,
            )
            .unwrap_or_else(|rv| panic!("{policy:?} {name}: {rv:#x}"));
            let want = s.get_attributes(public, &compared).unwrap();
            assert_eq!(
                s.get_attributes(made, &compared).unwrap(),
                want,
                "{policy:?} {name}"
            );
            assert_eq!(
                s.get_attributes(made, &[AttributeType::Class, AttributeType::Label])
                    .unwrap(),
                vec![
                    Attribute::Class(ObjectClass::PUBLIC_KEY),
                    Attribute::Label(b"derived".to_vec())
                ]
            );
            // Nothing private comes out: no private exponent (RSA), no
            // CKA_VALUE where the public key has none (EC, Edwards,
            // Montgomery); where it has one, it is the public value
            // (compared above).
            let mut secrets = vec![AttributeType::PrivateExponent];
            if !compared.contains(&AttributeType::Value) {
                secrets.push(AttributeType::Value);
            }
            for secret in secrets {
                assert!(
                    s.get_attributes(made, &[secret]).unwrap().is_empty(),
                    "{policy:?} {name}: {secret:?}"
                );
            }
        }
        // DSA (no cryptoki mechanism: through the raw function list).
        let (dsa_public, dsa_private) = dsa_pair(&s);
        let made = public_from_private(&s, dsa_private, &[], None).unwrap();
        for ty in [
            cryptoki_sys::CKA_PRIME,
            cryptoki_sys::CKA_SUBPRIME,
            cryptoki_sys::CKA_BASE,
            cryptoki_sys::CKA_VALUE,
        ] {
            assert_eq!(
                raw_value(&s, made, ty),
                raw_value(&s, dsa_public, ty),
                "{policy:?} dsa {ty:#x}"
            );
        }
    }
}

/// The value of attribute `ty` of `h`, through the raw function list.
fn raw_value(s: &Session, h: ObjectHandle, ty: cryptoki_sys::CK_ATTRIBUTE_TYPE) -> Vec<u8> {
    use cryptoki_sys::*;
    let mut a = CK_ATTRIBUTE {
        type_: ty,
        pValue: std::ptr::null_mut(),
        ulValueLen: 0,
    };
    let get = raw().C_GetAttributeValue.unwrap();
    // SAFETY: a size query, then a buffer of that size.
    unsafe {
        assert_eq!(get(s.handle(), h.handle(), &mut a, 1), CKR_OK, "{ty:#x}");
        let mut v = vec![0u8; a.ulValueLen as usize];
        a.pValue = v.as_mut_ptr().cast();
        assert_eq!(get(s.handle(), h.handle(), &mut a, 1), CKR_OK, "{ty:#x}");
        v
    }
}

/// A DSA key pair on fresh 1024-bit domain parameters, through the raw
/// function list.
fn dsa_pair(s: &Session) -> (ObjectHandle, ObjectHandle) {
    use cryptoki_sys::*;
    let l = raw();
    let plain = |ty| CK_MECHANISM {
        mechanism: ty,
        pParameter: std::ptr::null_mut(),
        ulParameterLen: 0,
    };
    let attr = |ty, v: &mut Vec<u8>| CK_ATTRIBUTE {
        type_: ty,
        pValue: v.as_mut_ptr().cast(),
        ulValueLen: v.len() as CK_ULONG,
    };
    let mut bits = ulong(1024);
    let mut t = [attr(CKA_PRIME_BITS, &mut bits)];
    let mut domain: CK_OBJECT_HANDLE = 0;
    // SAFETY: live mechanism and template.
    let rv = unsafe {
        l.C_GenerateKey.unwrap()(
            s.handle(),
            &mut plain(CKM_DSA_PARAMETER_GEN),
            t.as_mut_ptr(),
            1,
            &mut domain,
        )
    };
    assert_eq!(rv, CKR_OK);
    // SAFETY: a handle the module just returned.
    let domain = unsafe { ObjectHandle::new_from_raw(domain) };
    let mut pqg: Vec<Vec<u8>> = [CKA_PRIME, CKA_SUBPRIME, CKA_BASE]
        .into_iter()
        .map(|ty| raw_value(s, domain, ty))
        .collect();
    let (mut yes, mut no) = (vec![1u8], vec![0u8]);
    let (p, rest) = pqg.split_at_mut(1);
    let (q, g) = rest.split_at_mut(1);
    let mut public = [
        attr(CKA_PRIME, &mut p[0]),
        attr(CKA_SUBPRIME, &mut q[0]),
        attr(CKA_BASE, &mut g[0]),
        attr(CKA_VERIFY, &mut yes),
    ];
    let mut no2 = no.clone();
    let mut private = [attr(CKA_SIGN, &mut no), attr(CKA_DERIVE, &mut no2)];
    let (mut hp, mut hs) = (0, 0);
    // SAFETY: live mechanism and templates.
    let rv = unsafe {
        l.C_GenerateKeyPair.unwrap()(
            s.handle(),
            &mut plain(CKM_DSA_KEY_PAIR_GEN),
            public.as_mut_ptr(),
            public.len() as CK_ULONG,
            private.as_mut_ptr(),
            private.len() as CK_ULONG,
            &mut hp,
            &mut hs,
        )
    };
    assert_eq!(rv, CKR_OK);
    // SAFETY: handles the module just returned.
    unsafe {
        (
            ObjectHandle::new_from_raw(hp),
            ObjectHandle::new_from_raw(hs),
        )
    }
}

/// The attacks on `CKM_PUB_KEY_FROM_PRIV_KEY`: a template asking for a
/// private or secret class, another key type or key values of its own,
/// a secret key or public key as the base, a parameter, and a private key
/// whose `CKA_ALLOWED_MECHANISMS` leaves the mechanism out are refused,
/// and no object is made.
#[test]
fn public_key_from_private_key_refuses_what_it_must() {
    use cryptoki_sys::*;
    for policy in POLICIES {
        let f = Fixture::with_policy(policy.name());
        let slot = f.token("pubfromprivattack");
        let s = f.user(slot);
        let (public, private) = s
            .generate_key_pair(
                &Mechanism::EccKeyPairGen,
                &[
                    Attribute::EcParams(vec![
                        0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07,
                    ]),
                    Attribute::Token(false),
                ],
                &[Attribute::Token(false), Attribute::Sensitive(true)],
            )
            .unwrap();
        let count = || s.find_objects(&[]).unwrap().len();
        let before = count();
        let bad_templates: Vec<Vec<(CK_ATTRIBUTE_TYPE, Vec<u8>)>> = vec![
            vec![(CKA_CLASS, ulong(CKO_PRIVATE_KEY))],
            vec![(CKA_CLASS, ulong(CKO_SECRET_KEY))],
            vec![(CKA_KEY_TYPE, ulong(CKK_RSA))],
            vec![(CKA_VALUE, vec![1; 32])],
            vec![(CKA_EC_POINT, vec![4; 65])],
            vec![(
                CKA_EC_PARAMS,
                vec![0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x0a],
            )],
        ];
        for t in &bad_templates {
            assert_eq!(
                public_from_private(&s, private, t, None).err(),
                Some(CKR_TEMPLATE_INCONSISTENT),
                "{policy:?} {t:?}"
            );
        }
        let aes = aes_key(&s, true, &[AttributeType::Derive]).unwrap();
        for base in [public, aes] {
            assert_eq!(
                public_from_private(&s, base, &[], None).err(),
                Some(CKR_KEY_TYPE_INCONSISTENT)
            );
        }
        let mut param = [0u8; 4];
        assert_eq!(
            public_from_private(&s, private, &[], Some(&mut param)).err(),
            Some(CKR_MECHANISM_PARAM_INVALID)
        );
        let (_, restricted) = s
            .generate_key_pair(
                &Mechanism::EccKeyPairGen,
                &[
                    Attribute::EcParams(vec![
                        0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07,
                    ]),
                    Attribute::Token(false),
                ],
                &[
                    Attribute::Token(false),
                    Attribute::AllowedMechanisms(vec![cryptoki::mechanism::MechanismType::ECDSA]),
                ],
            )
            .unwrap();
        assert_eq!(
            public_from_private(&s, restricted, &[], None).err(),
            Some(CKR_MECHANISM_INVALID)
        );
        // Only the AES key and the restricted pair appeared.
        assert_eq!(count(), before + 1 + 2, "{policy:?}");
        // A CKO_PUBLIC_KEY class and the base's key type are accepted.
        public_from_private(
            &s,
            private,
            &[
                (CKA_CLASS, ulong(CKO_PUBLIC_KEY)),
                (CKA_KEY_TYPE, ulong(CKK_EC)),
                (CKA_TOKEN, vec![0]),
            ],
            None,
        )
        .unwrap();
    }
}

/// The `C_DeriveKey` error as a cryptoki error, for [`Outcome::Refused`].
fn derive_step(
    name: &'static str,
    r: Result<ObjectHandle, cryptoki_sys::CK_RV>,
) -> Result<ObjectHandle, Outcome> {
    r.map_err(|rv| match cryptoki::error::Rv::from(rv) {
        cryptoki::error::Rv::Error(e) => Outcome::Refused(name, e),
        cryptoki::error::Rv::Ok => unreachable!("an error code"),
    })
}

/// A three-key Triple DES victim: generated, sensitive, never extractable,
/// allowed to encrypt and derive.
fn des3_victim(s: &Session) -> Result<ObjectHandle, Outcome> {
    let mut t = vec![
        Attribute::Token(false),
        Attribute::Sensitive(true),
        Attribute::Extractable(false),
    ];
    t.extend(usage_flags(&[
        AttributeType::Encrypt,
        AttributeType::Derive,
    ]));
    step(
        "C_GenerateKey (DES3 victim)",
        s.generate_key(&Mechanism::Des3KeyGen, &t),
    )
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
                let copy = derive_step(
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
    let refused = || {
        Outcome::Refused(
            "C_GetAttributeValue (CKA_VALUE)",
            RvError::AttributeSensitive,
        )
    };
    expect(attack, refused(), refused());
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
            derive_step(
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
/// (`CKA_ENCRYPT`) tells its caller the value of every key derived from it,
/// sensitive or not. Neither level forbids encrypt with derive on one key;
/// the derived key is a new key whose value was never secret, and no value
/// of the base leaks (docs/SECURITY.md, "Derived keys"). The test runs the
/// attack to the end: the caller knows the derived key.
#[test]
fn encrypt_data_derived_value_known_through_encrypt() {
    fn attack(s: &Session) -> Outcome {
        use cryptoki_sys::*;
        outcome((|| {
            let victim = des3_victim(s)?;
            let mut data: [u8; 24] = std::array::from_fn(|i| 0x40 + i as u8);
            let mut param = des_encrypt_data_param(None, &mut data);
            let derived = derive_step(
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
            let block = [0x5au8; 8];
            let theirs = step(
                "C_Encrypt (under the derived key)",
                s.encrypt(&Mechanism::Des3Ecb, derived, &block),
            )?;
            use des::cipher::{BlockCipherEncrypt, KeyInit};
            let ours = des::TdesEde3::new_from_slice(&value).unwrap();
            let mut b = block.into();
            ours.encrypt_block(&mut b);
            assert_eq!(
                theirs,
                b.as_slice(),
                "the value found is not the derived key"
            );
            Ok(Outcome::Recovered)
        })())
    }
    expect(attack, Outcome::Recovered, Outcome::Recovered);
}

/// `C_DeriveKey` with `CKM_<hash>_KEY_DERIVATION` (cryptoki 0.12 has no
/// such mechanism: through the raw function list).
fn hash_derive(
    s: &Session,
    mech: cryptoki_sys::CK_MECHANISM_TYPE,
    base: ObjectHandle,
    template: &[Attribute],
) -> cryptoki::error::Result<ObjectHandle> {
    let mut m = cryptoki_sys::CK_MECHANISM {
        mechanism: mech,
        pParameter: std::ptr::null_mut(),
        ulParameterLen: 0,
    };
    let mut t: Vec<cryptoki_sys::CK_ATTRIBUTE> = template.iter().map(Into::into).collect();
    let mut h = 0;
    // SAFETY: the template points into `template`, alive for the call.
    let rv = unsafe {
        raw().C_DeriveKey.unwrap()(
            s.handle(),
            &mut m,
            base.handle(),
            t.as_mut_ptr(),
            t.len() as cryptoki_sys::CK_ULONG,
            &mut h,
        )
    };
    cryptoki::error::Rv::from(rv).into_result(cryptoki::context::Function::DeriveKey)?;
    // SAFETY: a handle the module just returned.
    Ok(unsafe { ObjectHandle::new_from_raw(h) })
}

/// Key-length reduction through a hash of the key
/// (`CKM_SHA256_KEY_DERIVATION` truncated to one byte): the derivation
/// floor counts every output byte as secret, and refuses.
#[test]
fn key_length_reduction_by_hashing() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let victim = derivation_victim(s)?;
            let short = step(
                "C_DeriveKey (short key)",
                hash_derive(
                    s,
                    cryptoki_sys::CKM_SHA256_KEY_DERIVATION,
                    victim,
                    &[
                        Attribute::Class(ObjectClass::SECRET_KEY),
                        Attribute::KeyType(KeyType::GENERIC_SECRET),
                        Attribute::ValueLen(1.into()),
                        Attribute::Token(false),
                        Attribute::Sign(true),
                    ],
                ),
            )?;
            let mac = step(
                "C_Sign (HMAC with the short key)",
                s.sign(&Mechanism::Sha256Hmac, short, MESSAGE),
            )?;
            // One byte of SHA-256(victim) is found by 256 tries.
            search_byte(&[], &mac).expect("a byte gives this MAC");
            Ok(Outcome::Weakened)
        })())
    }
    let refused = || Outcome::Refused("C_DeriveKey (short key)", RvError::KeySizeRange);
    expect(attack, refused(), refused());
}

/// The hash of a sensitive key, asked for as a readable key, is sensitive
/// anyway (mechanisms spec, "SHA-1 key derivation": "if the base key has
/// its CKA_SENSITIVE attribute set to CK_TRUE, so does the derived key"):
/// a readable SHA3-256 of the key would be an offline oracle for guesses of
/// a low-entropy key, as `C_DigestKey` would (refused for sensitive keys).
#[test]
fn hash_of_a_sensitive_key_made_readable() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let victim = derivation_victim(s)?;
            let copy = step(
                "C_DeriveKey (readable hash)",
                hash_derive(
                    s,
                    cryptoki_sys::CKM_SHA3_256_KEY_DERIVATION,
                    victim,
                    &[
                        Attribute::Class(ObjectClass::SECRET_KEY),
                        Attribute::KeyType(KeyType::GENERIC_SECRET),
                        Attribute::Token(false),
                        Attribute::Sensitive(false),
                        Attribute::Extractable(true),
                    ],
                ),
            )?;
            super::attributes::read_value(s, copy)
        })())
    }
    let refused = || {
        Outcome::Refused(
            "C_GetAttributeValue (CKA_VALUE)",
            RvError::AttributeSensitive,
        )
    };
    expect(attack, refused(), refused());
}

/// A base that is not extractable (but not sensitive either) gives a hash
/// that is not extractable and cannot be read, whatever the template asks.
#[test]
fn hash_of_an_unextractable_key_stays_unextractable() {
    fn attack(s: &Session) -> Outcome {
        outcome((|| {
            let base = step(
                "C_CreateObject (unextractable base)",
                s.create_object(&[
                    Attribute::Class(ObjectClass::SECRET_KEY),
                    Attribute::KeyType(KeyType::GENERIC_SECRET),
                    Attribute::Token(false),
                    Attribute::Sensitive(false),
                    Attribute::Extractable(false),
                    Attribute::Derive(true),
                    Attribute::Value(vec![0x5a; 32]),
                ]),
            )?;
            let k = step(
                "C_DeriveKey (extractable hash)",
                hash_derive(
                    s,
                    cryptoki_sys::CKM_SHA512_KEY_DERIVATION,
                    base,
                    &[
                        Attribute::Class(ObjectClass::SECRET_KEY),
                        Attribute::KeyType(KeyType::GENERIC_SECRET),
                        Attribute::Token(false),
                        Attribute::Sensitive(false),
                        Attribute::Extractable(true),
                    ],
                ),
            )?;
            let attrs = step(
                "C_GetAttributeValue (CKA_EXTRACTABLE)",
                s.get_attributes(k, &[AttributeType::Extractable]),
            )?;
            assert_eq!(attrs, vec![Attribute::Extractable(false)]);
            super::attributes::read_value(s, k)
        })())
    }
    let refused = || {
        Outcome::Refused(
            "C_GetAttributeValue (CKA_VALUE)",
            RvError::AttributeSensitive,
        )
    };
    expect(attack, refused(), refused());
}
