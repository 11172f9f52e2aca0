//! Unit tests of the ML-DSA family against the crate's own FIPS 204
//! entry points (sign_deterministic, sign_internal, verify_with_context).

use super::*;
use crate::attributes::Attributes;
use crate::mechanisms::material::KeyMaterial;
use crate::mechanisms::operation::{SignOperation, VerifyOperation};
use crate::mechanisms::params::{Mechanism, Param};
use cryptoki_sys::*;
use ml_dsa::{Keypair, MlDsa65, Signature, SigningKey};
use std::sync::Arc;

const SEED: [u8; 32] = [7; 32];

fn pair(set: ParamSet) -> (Arc<KeyMaterial>, Arc<KeyMaterial>) {
    let sk = PrivateKey::from_seed(set, &SEED).unwrap();
    let pk = PublicKey::decode(set, &sk.public_encoding()).unwrap();
    (
        Arc::new(KeyMaterial::MlDsaPrivate(Box::new(sk))),
        Arc::new(KeyMaterial::MlDsaPublic(Box::new(pk))),
    )
}

fn mech(ty: CK_MECHANISM_TYPE, param: Param<'_>) -> Mechanism<'_> {
    Mechanism { ty, param }
}

fn sign(m: &Mechanism<'_>, key: &Arc<KeyMaterial>, data: &[u8]) -> Vec<u8> {
    let mut op = MlDsaSign::new(m, key.clone()).unwrap();
    let mut out = vec![0u8; op.output_len()];
    let n = op.sign(data, &mut out).unwrap();
    out.truncate(n);
    out
}

fn det(context: &[u8]) -> Param<'_> {
    Param::SignContext {
        hedge: CKH_DETERMINISTIC_REQUIRED,
        context,
    }
}

#[test]
fn pure_deterministic_matches_the_crate_and_hedged_verifies() {
    let (sk, pk) = pair(ParamSet::P65);
    let reference = SigningKey::<MlDsa65>::from_seed(&SEED.into());
    let want = reference
        .expanded_key()
        .sign_deterministic(b"message", b"ctx")
        .unwrap()
        .encode()
        .to_vec();
    let m = mech(CKM_ML_DSA, det(b"ctx"));
    assert_eq!(sign(&m, &sk, b"message"), want);
    // Hedged (the default with no parameter): differs, and verifies with
    // the crate and with the token; another context does not.
    let hedged = sign(&mech(CKM_ML_DSA, Param::None), &sk, b"message");
    assert_ne!(
        hedged,
        sign(&mech(CKM_ML_DSA, Param::None), &sk, b"message")
    );
    let vk = reference.verifying_key();
    let sig = Signature::<MlDsa65>::try_from(&hedged[..]).unwrap();
    assert!(vk.verify_with_context(b"message", b"", &sig));
    let mut v = MlDsaVerify::new(&mech(CKM_ML_DSA, Param::None), pk.clone()).unwrap();
    v.verify(b"message", &hedged).unwrap();
    let mut v = MlDsaVerify::new(&mech(CKM_ML_DSA, det(b"other")), pk.clone()).unwrap();
    assert_eq!(
        v.verify(b"message", &hedged).unwrap_err().rv(),
        CKR_SIGNATURE_INVALID
    );
    let mut v = MlDsaVerify::new(&mech(CKM_ML_DSA, Param::None), pk).unwrap();
    assert_eq!(
        v.verify(b"message", &hedged[1..]).unwrap_err().rv(),
        CKR_SIGNATURE_LEN_RANGE
    );
}

#[test]
fn hash_ml_dsa_matches_fips_204_algorithm_4_over_sign_internal() {
    use sha2::Digest;
    let (sk, pk) = pair(ParamSet::P65);
    let reference = SigningKey::<MlDsa65>::from_seed(&SEED.into());
    let ph = sha2::Sha384::digest(b"message");
    let oid = [
        0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02,
    ];
    let want = reference
        .expanded_key()
        .sign_internal(&[&[1], &[3], b"ctx", &oid, &ph], &Default::default())
        .encode()
        .to_vec();
    let external = mech(
        CKM_HASH_ML_DSA,
        Param::HashSignContext {
            hedge: CKH_DETERMINISTIC_REQUIRED,
            context: b"ctx",
            hash: CKM_SHA384,
        },
    );
    assert_eq!(sign(&external, &sk, &ph), want);
    let internal = mech(CKM_HASH_ML_DSA_SHA384, det(b"ctx"));
    assert_eq!(sign(&internal, &sk, b"message"), want);
    // Multi-part on the token-hashed form.
    let mut op = MlDsaSign::new(&internal, sk.clone()).unwrap();
    op.update(b"mess").unwrap();
    op.update(b"age").unwrap();
    let mut out = vec![0u8; op.output_len()];
    op.finish(&mut out).unwrap();
    assert_eq!(out, want);
    let mut v = MlDsaVerify::new(&external, pk.clone()).unwrap();
    v.verify(&ph, &want).unwrap();
    // The pre-hash form is single-part only, and PH(M) has its hash's length.
    let mut op = MlDsaSign::new(&external, sk.clone()).unwrap();
    assert_eq!(
        op.update(&ph).unwrap_err().rv(),
        CKR_OPERATION_NOT_INITIALIZED
    );
    let mut op = MlDsaSign::new(&external, sk).unwrap();
    assert_eq!(
        op.sign(&ph[1..], &mut out).unwrap_err().rv(),
        CKR_DATA_LEN_RANGE
    );
    let mut v = MlDsaVerify::new(&external, pk).unwrap();
    assert_eq!(
        v.update(&ph).unwrap_err().rv(),
        CKR_OPERATION_NOT_INITIALIZED
    );
}

#[test]
fn multipart_equals_single_part_for_every_mechanism() {
    let (sk, pk) = pair(ParamSet::P44);
    for ty in [
        CKM_ML_DSA,
        CKM_HASH_ML_DSA_SHA224,
        CKM_HASH_ML_DSA_SHA256,
        CKM_HASH_ML_DSA_SHA512,
        CKM_HASH_ML_DSA_SHA3_224,
        CKM_HASH_ML_DSA_SHA3_256,
        CKM_HASH_ML_DSA_SHA3_384,
        CKM_HASH_ML_DSA_SHA3_512,
        CKM_HASH_ML_DSA_SHAKE128,
        CKM_HASH_ML_DSA_SHAKE256,
    ] {
        let m = mech(ty, det(b""));
        let one = sign(&m, &sk, b"hello world");
        assert_eq!(one.len(), 2420);
        let mut op = MlDsaSign::new(&m, sk.clone()).unwrap();
        op.update(b"hello ").unwrap();
        op.update(b"world").unwrap();
        let mut two = vec![0u8; 2420];
        op.finish(&mut two).unwrap();
        assert_eq!(one, two, "{ty:#x}");
        let mut v = MlDsaVerify::new(&m, pk.clone()).unwrap();
        v.update(b"hello world").unwrap();
        v.finish(&one).unwrap();
        // Each hash gives another M′: a signature under one fails under another.
        let mut v = MlDsaVerify::new(&mech(CKM_HASH_ML_DSA_SHA384, det(b"")), pk.clone()).unwrap();
        assert!(v.verify(b"hello world", &one).is_err(), "{ty:#x}");
    }
}

#[test]
fn bad_parameters_are_refused() {
    let (sk, pk) = pair(ParamSet::P44);
    let long = [0u8; 256];
    for (ty, p) in [
        (CKM_ML_DSA, det(&long)),
        (
            CKM_ML_DSA,
            Param::SignContext {
                hedge: 3,
                context: b"",
            },
        ),
        (CKM_HASH_ML_DSA, Param::None),
        (CKM_HASH_ML_DSA, det(b"")),
        (
            CKM_HASH_ML_DSA,
            Param::HashSignContext {
                hedge: CKH_HEDGE_PREFERRED,
                context: b"",
                hash: CKM_MD5,
            },
        ),
        (CKM_ML_DSA, Param::Bytes(b"x")),
    ] {
        let m = mech(ty, p);
        assert_eq!(
            MlDsaSign::new(&m, sk.clone()).err().unwrap().rv(),
            CKR_MECHANISM_PARAM_INVALID
        );
    }
    let m = mech(CKM_ML_DSA, Param::None);
    assert_eq!(
        MlDsaSign::new(&m, pk.clone()).err().unwrap().rv(),
        CKR_KEY_TYPE_INCONSISTENT
    );
    assert_eq!(
        MlDsaVerify::new(&m, sk).err().unwrap().rv(),
        CKR_KEY_TYPE_INCONSISTENT
    );
}

fn import(
    class: CK_OBJECT_CLASS,
    attrs: &[(CK_ATTRIBUTE_TYPE, Vec<u8>)],
) -> Result<Attributes, CK_RV> {
    let mut a = Attributes::new();
    for (t, v) in attrs {
        a.set_bytes(*t, v);
    }
    complete_import(class, &mut a)
        .map(|()| a)
        .map_err(|e| e.rv())
}

#[test]
fn import_checks_seed_value_and_lengths() {
    let set = |s: ParamSet| s.ckp().to_ne_bytes().to_vec();
    let sk = PrivateKey::from_seed(ParamSet::P65, &SEED).unwrap();
    let expanded = sk.expanded_encoding().to_vec();
    assert_eq!(expanded.len(), ParamSet::P65.private_len());
    let a = import(
        CKO_PRIVATE_KEY,
        &[
            (CKA_PARAMETER_SET, set(ParamSet::P65)),
            (CKA_SEED, SEED.to_vec()),
        ],
    )
    .unwrap();
    assert_eq!(a.bytes(CKA_VALUE), Some(&expanded[..]));
    let info = a.bytes(CKA_PUBLIC_KEY_INFO).unwrap();
    assert_eq!(info.len(), 1974);
    assert!(info.ends_with(&sk.public_encoding()));
    // Seed and agreeing value: fine; disagreeing value, a short seed, a
    // seed under another set's value, an unknown set: refused.
    let ok = [
        (CKA_PARAMETER_SET, set(ParamSet::P65)),
        (CKA_SEED, SEED.to_vec()),
        (CKA_VALUE, expanded.clone()),
    ];
    assert!(import(CKO_PRIVATE_KEY, &ok).is_ok());
    let mut wrong = expanded.clone();
    wrong[100] ^= 1;
    for bad in [
        vec![
            (CKA_PARAMETER_SET, set(ParamSet::P65)),
            (CKA_SEED, SEED.to_vec()),
            (CKA_VALUE, wrong),
        ],
        vec![
            (CKA_PARAMETER_SET, set(ParamSet::P65)),
            (CKA_SEED, vec![1; 31]),
        ],
        vec![
            (CKA_PARAMETER_SET, set(ParamSet::P44)),
            (CKA_SEED, SEED.to_vec()),
            (CKA_VALUE, expanded.clone()),
        ],
        vec![
            (CKA_PARAMETER_SET, 9u64.to_ne_bytes().to_vec()),
            (CKA_SEED, SEED.to_vec()),
        ],
    ] {
        assert_eq!(
            import(CKO_PRIVATE_KEY, &bad).unwrap_err(),
            CKR_ATTRIBUTE_VALUE_INVALID
        );
    }
    assert_eq!(
        import(CKO_PRIVATE_KEY, &[(CKA_PARAMETER_SET, set(ParamSet::P65))]).unwrap_err(),
        CKR_TEMPLATE_INCOMPLETE
    );
    // The expanded key alone: accepted when consistent, and it signs as the
    // seed's key does.
    let a = import(
        CKO_PRIVATE_KEY,
        &[
            (CKA_PARAMETER_SET, set(ParamSet::P65)),
            (CKA_VALUE, expanded.clone()),
        ],
    )
    .unwrap();
    assert_eq!(a.bytes(CKA_PUBLIC_KEY_INFO), Some(info));
    let from_value = PrivateKey::from_expanded(ParamSet::P65, &expanded).unwrap();
    assert_eq!(from_value.public_encoding(), sk.public_encoding());
    assert_eq!(
        from_value.sign_mu(&[3; 64], &[0; 32]).unwrap(),
        sk.sign_mu(&[3; 64], &[0; 32]).unwrap()
    );
    assert_eq!(&from_value.expanded_encoding()[..], &expanded[..]);
    let pk = sk.public_encoding();
    assert!(
        import(
            CKO_PUBLIC_KEY,
            &[
                (CKA_PARAMETER_SET, set(ParamSet::P65)),
                (CKA_VALUE, pk.clone())
            ]
        )
        .is_ok()
    );
    for (s, v) in [
        (ParamSet::P44, pk.clone()),
        (ParamSet::P65, pk[1..].to_vec()),
    ] {
        assert_eq!(
            import(
                CKO_PUBLIC_KEY,
                &[(CKA_PARAMETER_SET, set(s)), (CKA_VALUE, v)]
            )
            .unwrap_err(),
            CKR_ATTRIBUTE_VALUE_INVALID
        );
    }
}

#[test]
fn pkcs8_seed_form_round_trips_and_other_forms_are_refused() {
    for s in ParamSet::ALL {
        let der = pkcs8(s, &SEED);
        assert_eq!(der.len(), 54);
        let mut a = Attributes::new();
        from_pkcs8(&der, &mut a).unwrap();
        assert_eq!(a.bytes(CKA_SEED), Some(&SEED[..]));
        assert_eq!(a.ulong(CKA_PARAMETER_SET), Some(s.ckp()));
        let mut other = Attributes::new();
        other.set_ulong(
            CKA_PARAMETER_SET,
            if s == ParamSet::P44 {
                CKP_ML_DSA_65
            } else {
                CKP_ML_DSA_44
            },
        );
        assert_eq!(
            from_pkcs8(&der, &mut other).unwrap_err().rv(),
            CKR_TEMPLATE_INCONSISTENT
        );
        for bad in [&der[..53], &der[..17], &[&der[..], &[0][..]].concat()[..]] {
            assert_eq!(
                from_pkcs8(bad, &mut Attributes::new()).unwrap_err().rv(),
                CKR_WRAPPED_KEY_INVALID
            );
        }
    }
    // Python cryptography's seed-form PKCS#8 of ML-DSA-65 starts so.
    assert_eq!(
        pkcs8(ParamSet::P65, &SEED)[..22],
        [
            0x30, 0x34, 0x02, 0x01, 0x00, 0x30, 0x0b, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65,
            0x03, 0x04, 0x03, 0x12, 0x04, 0x22, 0x80, 0x20
        ]
    );
}

#[test]
fn generation_sets_every_attribute() {
    let mut t = Attributes::new();
    t.set_ulong(CKA_PARAMETER_SET, CKP_ML_DSA_87);
    let g = generate(&t).unwrap();
    assert_eq!(g.key_type, CKK_ML_DSA);
    let seed = g.private.bytes(CKA_SEED).unwrap();
    let sk = PrivateKey::from_seed(ParamSet::P87, seed).unwrap();
    assert_eq!(g.public.bytes(CKA_VALUE), Some(&sk.public_encoding()[..]));
    assert_eq!(
        g.private.bytes(CKA_VALUE),
        Some(&sk.expanded_encoding()[..])
    );
    assert_eq!(g.private.ulong(CKA_PARAMETER_SET), Some(CKP_ML_DSA_87));
    assert_eq!(
        g.public.bytes(CKA_PUBLIC_KEY_INFO),
        g.private.bytes(CKA_PUBLIC_KEY_INFO)
    );
    let other = generate(&t).unwrap();
    assert_ne!(other.private.bytes(CKA_SEED), Some(seed));
    assert_eq!(
        generate(&Attributes::new()).err().unwrap().rv(),
        CKR_TEMPLATE_INCOMPLETE
    );
}

#[test]
fn malformed_expanded_keys_are_refused_without_panicking() {
    for s in ParamSet::ALL {
        let sk = PrivateKey::from_seed(s, &SEED).unwrap();
        let good = sk.expanded_encoding().to_vec();
        let refused = |v: &[u8]| PrivateKey::from_expanded(s, v).err().map(|e| e.rv());
        assert_eq!(refused(&good), None);
        // Wrong length, a changed rho (A differs: tr no longer matches), a
        // changed tr, and s1 / s2 coefficients out of [-eta, eta] (an
        // all-ones packing is 7 or 15 > 2 eta).
        let mut cases = vec![good[..good.len() - 1].to_vec()];
        for (at, xor) in [(0, 1), (70, 0x80)] {
            let mut v = good.clone();
            v[at] ^= xor;
            cases.push(v);
        }
        // The end of s2 (t0 follows: its 13-bit values are all in range).
        let s2_end = match s {
            ParamSet::P44 => 128 + 8 * 96,
            ParamSet::P65 => 128 + 11 * 128,
            ParamSet::P87 => 128 + 15 * 96,
        };
        for at in [128, 128 + 300, s2_end - 3] {
            let mut v = good.clone();
            v[at] = 0xff;
            v[at + 1] = 0xff;
            v[at + 2] = 0xff;
            cases.push(v);
        }
        cases.push(vec![0xff; s.private_len()]);
        cases.push(vec![0; s.private_len()]);
        for v in cases {
            assert_eq!(refused(&v), Some(CKR_ATTRIBUTE_VALUE_INVALID), "{s:?}");
        }
    }
}
