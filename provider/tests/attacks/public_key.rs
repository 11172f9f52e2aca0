//! `CKM_PUB_KEY_FROM_PRIV_KEY` (PKCS#11 3.2): what a public key made from
//! a private key may carry, and what such a derivation must refuse.

use super::*;

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
