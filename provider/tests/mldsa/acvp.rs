//! NIST ACVP ML-DSA vectors (FIPS 204, `tests/data/acvp`) through the
//! module.
//!
//! - keyGen: each seed ξ imported with `C_CreateObject` must give the
//!   vector's public key (in `CKA_PUBLIC_KEY_INFO`) and expanded private
//!   key (`CKA_VALUE`).
//! - sigGen: the vectors sign a given M′ (the internal interface), which
//!   the C API cannot pass; the token frames M′ = 0 ‖ |ctx| ‖ ctx ‖ M
//!   itself. Each case's expanded key is imported with `C_CreateObject`
//!   (`CKA_VALUE` only) and signs the case's message as M, with and without
//!   a context, deterministically; the signature must equal
//!   ML-DSA.Sign_internal of that M′ by the `ml-dsa` crate, which must
//!   itself give the case's signature on the case's own M′ (so the
//!   reference is checked on the same file), and must verify through the
//!   module (on aws-lc-rs in the default build when the context is empty).
//!   The token's own Sign_internal is checked on these vectors below the
//!   framing by the unit tests (src/mechanisms/mldsa/tests_acvp.rs).

use super::acvp_data::sha256_hex;
use super::*;
use ml_dsa::{ExpandedSigningKey, MlDsa44, MlDsa65, MlDsa87, MlDsaParams};

/// ML-DSA.Sign_internal(sk, M′, rnd) by the `ml-dsa` crate.
fn reference_sign(sk: &[u8], framed: &[&[u8]], rnd: &[u8; 32]) -> Vec<u8> {
    #[allow(deprecated)] // skDecode of the vector's key
    fn sign<P: MlDsaParams>(sk: &[u8], framed: &[&[u8]], rnd: &[u8; 32]) -> Vec<u8> {
        let key = ExpandedSigningKey::<P>::from_expanded(&sk.try_into().unwrap());
        key.sign_internal(framed, &(*rnd).into()).encode().to_vec()
    }
    match sk.len() {
        2560 => sign::<MlDsa44>(sk, framed, rnd),
        4032 => sign::<MlDsa65>(sk, framed, rnd),
        4896 => sign::<MlDsa87>(sk, framed, rnd),
        n => panic!("expanded key of {n} bytes"),
    }
}

fn set_named(name: &str) -> MlDsaParameterSetType {
    match name {
        "ML-DSA-44" => MlDsaParameterSetType::ML_DSA_44,
        "ML-DSA-65" => MlDsaParameterSetType::ML_DSA_65,
        "ML-DSA-87" => MlDsaParameterSetType::ML_DSA_87,
        other => panic!("{other}"),
    }
}

#[test]
fn acvp_siggen_keys_sign_through_the_module_as_sign_internal_does() {
    let doc = acvp("ML-DSA-sigGen-FIPS204-subset.json.gz");
    let f = Fixture::new();
    let s = f.user(f.token("acvp"));
    let mut checked = 0;
    for group in doc["testGroups"].as_array().unwrap() {
        let set = set_named(group["parameterSet"].as_str().unwrap());
        let deterministic_case = group["deterministic"].as_bool().unwrap();
        for t in group["tests"].as_array().unwrap() {
            let id = &t["tcId"];
            let hex = |k: &str| unhex(t[k].as_str().unwrap());
            let (sk, msg) = (hex("sk"), hex("message"));
            let rnd: [u8; 32] = if deterministic_case {
                [0; 32]
            } else {
                hex("rnd").try_into().unwrap()
            };
            let reference = reference_sign(&sk, &[&msg], &rnd);
            assert_eq!(sha256_hex(&reference), t["signatureSha256"], "tc {id}");

            let private = s
                .create_object(&[
                    Attribute::Class(ObjectClass::PRIVATE_KEY),
                    Attribute::KeyType(KeyType::ML_DSA),
                    Attribute::ParameterSet(set.into()),
                    Attribute::Value(sk.clone()),
                    Attribute::Sign(true),
                ])
                .unwrap();
            let info = bytes_of(&s, private, AttributeType::PublicKeyInfo);
            let pk_len = SETS.iter().find(|(p, ..)| *p == set).unwrap().1;
            let public = import_public(&s, set, &info[info.len() - pk_len..]).unwrap();
            for ctx in [&b""[..], b"ACVP"] {
                let sig = s.sign(&deterministic(ctx), private, &msg).unwrap();
                let framed = reference_sign(&sk, &[&[0, ctx.len() as u8], ctx, &msg], &[0; 32]);
                assert_eq!(sig, framed, "tc {id}, context {ctx:?}");
                let verify = ml_dsa(HedgeType::Preferred, Some(ctx));
                s.verify(&verify, public, &msg, &sig).unwrap();
                let mut bad = sig.clone();
                bad[7] ^= 1;
                assert_eq!(
                    rv_of(s.verify(&verify, public, &msg, &bad).unwrap_err()),
                    cryptoki::error::RvError::SignatureInvalid,
                    "tc {id}"
                );
            }
            s.destroy_object(private).unwrap();
            s.destroy_object(public).unwrap();
            checked += 1;
        }
    }
    assert_eq!(checked, 24);
}

#[test]
fn acvp_key_generation_from_the_seed() {
    let doc = acvp("ML-DSA-keyGen-FIPS204.json.gz");
    let f = Fixture::new();
    let s = f.user(f.token("acvp"));
    let mut checked = 0;
    for group in doc["testGroups"].as_array().unwrap() {
        let set = match group["parameterSet"].as_str().unwrap() {
            "ML-DSA-44" => MlDsaParameterSetType::ML_DSA_44,
            "ML-DSA-65" => MlDsaParameterSetType::ML_DSA_65,
            "ML-DSA-87" => MlDsaParameterSetType::ML_DSA_87,
            other => panic!("{other}"),
        };
        for t in group["tests"].as_array().unwrap() {
            let hex = |k: &str| unhex(t[k].as_str().unwrap());
            let k = s
                .create_object(&[
                    Attribute::Class(ObjectClass::PRIVATE_KEY),
                    Attribute::KeyType(KeyType::ML_DSA),
                    Attribute::ParameterSet(set.into()),
                    Attribute::Seed(hex("seed")),
                    Attribute::Sensitive(false),
                    Attribute::Extractable(true),
                ])
                .unwrap();
            let pk = hex("pk");
            assert_eq!(
                bytes_of(&s, k, AttributeType::Value),
                hex("sk"),
                "tcId {}",
                t["tcId"]
            );
            assert!(
                bytes_of(&s, k, AttributeType::PublicKeyInfo).ends_with(&pk),
                "tcId {}",
                t["tcId"]
            );
            s.destroy_object(k).unwrap();
            checked += 1;
        }
    }
    assert_eq!(checked, 75);
}
