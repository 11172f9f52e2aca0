//! NIST ACVP SLH-DSA sigGen and sigVer vectors of FIPS 205's external
//! interface (tests/data/acvp/README.md) through the module, each case's
//! key imported with `C_CreateObject`:
//!
//! - sigGen, deterministic: pure cases with `CKM_SLH_DSA` and the case's
//!   context; pre-hash cases with `CKM_HASH_SLH_DSA` over PH(M) for every
//!   one of the twelve hashes (raw `C_SignInit` where `cryptoki` cannot name
//!   the hash), and with the token-hashed `CKM_HASH_SLH_DSA_<hash>` over M
//!   where the hash has one. The signature's SHA-256 must be the case's.
//! - sigVer: `C_Verify` accepts the valid signatures and refuses the
//!   others (`CKR_SIGNATURE_LEN_RANGE` for a wrong length,
//!   `CKR_SIGNATURE_INVALID` otherwise).
//!
//! The randomized and internal-interface cases run on the family's unit
//! tests (src/mechanisms/slhdsa/tests.rs).

use super::acvp_data::sha256_hex;
use super::known_answers::{hex, set_named};
use super::*;
use serde_json::Value;
use sha2::Digest;
use sha3::digest::{ExtendableOutput, Update};

/// PH(M) of an ACVP `hashAlg`, the `CKM_*` naming it, and the
/// `CKM_HASH_SLH_DSA_<hash>` mechanism that hashes in the token (`None`:
/// the SHA-512/t hashes have none).
fn prehash(name: &str, msg: &[u8]) -> (Vec<u8>, CK_MECHANISM_TYPE, Option<CK_MECHANISM_TYPE>) {
    fn xof<X: Default + Update + ExtendableOutput>(msg: &[u8], len: usize) -> Vec<u8> {
        let mut x = X::default();
        x.update(msg);
        let mut out = vec![0; len];
        x.finalize_xof_into(&mut out);
        out
    }
    match name {
        "SHA2-224" => (
            sha2::Sha224::digest(msg).to_vec(),
            CKM_SHA224,
            Some(CKM_HASH_SLH_DSA_SHA224),
        ),
        "SHA2-256" => (
            sha2::Sha256::digest(msg).to_vec(),
            CKM_SHA256,
            Some(CKM_HASH_SLH_DSA_SHA256),
        ),
        "SHA2-384" => (
            sha2::Sha384::digest(msg).to_vec(),
            CKM_SHA384,
            Some(CKM_HASH_SLH_DSA_SHA384),
        ),
        "SHA2-512" => (
            sha2::Sha512::digest(msg).to_vec(),
            CKM_SHA512,
            Some(CKM_HASH_SLH_DSA_SHA512),
        ),
        "SHA2-512/224" => (sha2::Sha512_224::digest(msg).to_vec(), CKM_SHA512_224, None),
        "SHA2-512/256" => (sha2::Sha512_256::digest(msg).to_vec(), CKM_SHA512_256, None),
        "SHA3-224" => (
            sha3::Sha3_224::digest(msg).to_vec(),
            CKM_SHA3_224,
            Some(CKM_HASH_SLH_DSA_SHA3_224),
        ),
        "SHA3-256" => (
            sha3::Sha3_256::digest(msg).to_vec(),
            CKM_SHA3_256,
            Some(CKM_HASH_SLH_DSA_SHA3_256),
        ),
        "SHA3-384" => (
            sha3::Sha3_384::digest(msg).to_vec(),
            CKM_SHA3_384,
            Some(CKM_HASH_SLH_DSA_SHA3_384),
        ),
        "SHA3-512" => (
            sha3::Sha3_512::digest(msg).to_vec(),
            CKM_SHA3_512,
            Some(CKM_HASH_SLH_DSA_SHA3_512),
        ),
        "SHAKE-128" => (
            xof::<sha3::Shake128>(msg, 32),
            CKM_SHAKE_128_KEY_DERIVATION,
            Some(CKM_HASH_SLH_DSA_SHAKE128),
        ),
        "SHAKE-256" => (
            xof::<sha3::Shake256>(msg, 64),
            CKM_SHAKE_256_KEY_DERIVATION,
            Some(CKM_HASH_SLH_DSA_SHAKE256),
        ),
        other => panic!("hashAlg {other}"),
    }
}

/// `C_SignInit` + `C_Sign` (size query, then the signature) or
/// `C_VerifyInit` + `C_Verify` through the function list, with `mechanism`
/// and a `CK_HASH_SIGN_ADDITIONAL_CONTEXT` / `CK_SIGN_ADDITIONAL_CONTEXT`
/// parameter: the hashes `cryptoki` has no name for.
fn raw_call(
    s: &Session,
    key: ObjectHandle,
    mechanism: CK_MECHANISM_TYPE,
    hash: Option<CK_MECHANISM_TYPE>,
    ctx: &[u8],
    data: &[u8],
    signature: Option<&[u8]>,
) -> Result<Vec<u8>, CK_RV> {
    let l = raw();
    let h = s.handle();
    let mut with_hash = CK_HASH_SIGN_ADDITIONAL_CONTEXT {
        hedgeVariant: CKH_DETERMINISTIC_REQUIRED,
        pContext: ctx.as_ptr() as *mut _,
        ulContextLen: ctx.len() as CK_ULONG,
        hash: hash.unwrap_or(0),
    };
    let mut plain = CK_SIGN_ADDITIONAL_CONTEXT {
        hedgeVariant: CKH_DETERMINISTIC_REQUIRED,
        pContext: ctx.as_ptr() as *mut _,
        ulContextLen: ctx.len() as CK_ULONG,
    };
    let mut mech = match hash {
        Some(_) => CK_MECHANISM {
            mechanism,
            pParameter: (&raw mut with_hash).cast(),
            ulParameterLen: size_of::<CK_HASH_SIGN_ADDITIONAL_CONTEXT>() as CK_ULONG,
        },
        None => CK_MECHANISM {
            mechanism,
            pParameter: (&raw mut plain).cast(),
            ulParameterLen: size_of::<CK_SIGN_ADDITIONAL_CONTEXT>() as CK_ULONG,
        },
    };
    let check = |rv: CK_RV| if rv == CKR_OK { Ok(()) } else { Err(rv) };
    // SAFETY: every pointer is to a live local or slice of the given length.
    unsafe {
        if let Some(sig) = signature {
            check(l.C_VerifyInit.unwrap()(h, &mut mech, key.handle()))?;
            check(l.C_Verify.unwrap()(
                h,
                data.as_ptr() as *mut _,
                data.len() as CK_ULONG,
                sig.as_ptr() as *mut _,
                sig.len() as CK_ULONG,
            ))?;
            return Ok(Vec::new());
        }
        check(l.C_SignInit.unwrap()(h, &mut mech, key.handle()))?;
        let mut len: CK_ULONG = 0;
        let d = (data.as_ptr() as *mut u8, data.len() as CK_ULONG);
        check(l.C_Sign.unwrap()(
            h,
            d.0,
            d.1,
            std::ptr::null_mut(),
            &mut len,
        ))?;
        let mut out = vec![0u8; len as usize];
        check(l.C_Sign.unwrap()(h, d.0, d.1, out.as_mut_ptr(), &mut len))?;
        out.truncate(len as usize);
        Ok(out)
    }
}

fn import_signing_key(s: &Session, set: Set, sk: &[u8]) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::PRIVATE_KEY),
        Attribute::KeyType(KeyType::SLH_DSA),
        Attribute::ParameterSet(set.into()),
        Attribute::Value(sk.to_vec()),
        Attribute::Sign(true),
    ])
    .unwrap()
}

#[test]
fn acvp_siggen_deterministic_external_cases_sign_through_the_module() {
    let f = Fixture::new();
    let s = f.user(f.token("acvp-siggen"));
    let file = acvp("SLH-DSA-sigGen-FIPS205-subset.json.gz");
    let (mut pure, mut generic, mut token_hashed) = (0, 0, 0);
    for group in file["testGroups"].as_array().unwrap() {
        if group["signatureInterface"] != "external" || group["deterministic"] != true {
            continue; // the unit tests' cases
        }
        let set = set_named(group["parameterSet"].as_str().unwrap());
        for t in group["tests"].as_array().unwrap() {
            let id = &t["tcId"];
            let expected: &Value = &t["signatureSha256"];
            let key = import_signing_key(&s, set, &hex(&t["sk"]));
            let (ctx, msg) = (hex(&t["context"]), hex(&t["message"]));
            if group["preHash"] == "pure" {
                let sig = s.sign(&deterministic(&ctx), key, &msg).unwrap();
                assert_eq!(sha256_hex(&sig), *expected, "tc {id}");
                pure += 1;
            } else {
                let (ph, hash, token_mech) = prehash(t["hashAlg"].as_str().unwrap(), &msg);
                let sig = raw_call(&s, key, CKM_HASH_SLH_DSA, Some(hash), &ctx, &ph, None);
                assert_eq!(sha256_hex(&sig.unwrap()), *expected, "tc {id}");
                generic += 1;
                if let Some(m) = token_mech {
                    let sig = raw_call(&s, key, m, None, &ctx, &msg, None).unwrap();
                    assert_eq!(sha256_hex(&sig), *expected, "tc {id}");
                    token_hashed += 1;
                }
            }
            s.destroy_object(key).unwrap();
        }
    }
    // Two cases of each kind for the f sets and SHA2/SHAKE-128s, one for
    // the other s sets; the pre-hash cases cover the twelve hashes.
    assert_eq!((pure, generic), (16, 16));
    assert!(token_hashed >= 12, "{token_hashed}");
}

#[test]
fn acvp_sigver_external_cases_verify_through_the_module() {
    let f = Fixture::new();
    let s = f.user(f.token("acvp-sigver"));
    let file = acvp("SLH-DSA-sigVer-FIPS205-external-subset.json.gz");
    let (mut valid, mut invalid, mut length) = (0, 0, 0);
    for group in file["testGroups"].as_array().unwrap() {
        let set = set_named(group["parameterSet"].as_str().unwrap());
        let sig_len = SETS.iter().find(|x| x.0 == set).unwrap().2;
        for t in group["tests"].as_array().unwrap() {
            let id = &t["tcId"];
            let public = s
                .create_object(&[
                    Attribute::Class(ObjectClass::PUBLIC_KEY),
                    Attribute::KeyType(KeyType::SLH_DSA),
                    Attribute::ParameterSet(set.into()),
                    Attribute::Value(hex(&t["pk"])),
                    Attribute::Verify(true),
                ])
                .unwrap();
            let (ctx, msg, sig) = (hex(&t["context"]), hex(&t["message"]), hex(&t["signature"]));
            let result = match t["hashAlg"].as_str() {
                None => raw_call(&s, public, CKM_SLH_DSA, None, &ctx, &msg, Some(&sig)),
                Some(name) => {
                    let (ph, hash, _) = prehash(name, &msg);
                    raw_call(
                        &s,
                        public,
                        CKM_HASH_SLH_DSA,
                        Some(hash),
                        &ctx,
                        &ph,
                        Some(&sig),
                    )
                }
            };
            if t["testPassed"] == true {
                assert_eq!(result, Ok(Vec::new()), "tc {id}");
                valid += 1;
            } else if sig.len() != sig_len {
                assert_eq!(result, Err(CKR_SIGNATURE_LEN_RANGE), "tc {id}");
                length += 1;
            } else {
                assert_eq!(result, Err(CKR_SIGNATURE_INVALID), "tc {id}");
                invalid += 1;
            }
            s.destroy_object(public).unwrap();
        }
    }
    // SHA2-128s and SHAKE-128s, pure and pre-hash: 2 valid and 2 refused
    // each; 3 of the refused signatures are one byte short or long.
    assert_eq!((valid, invalid, length), (8, 5, 3));
}
