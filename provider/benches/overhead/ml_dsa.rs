//! ML-DSA-65 (FIPS 204) signing and verification, each timed on the
//! RustCrypto `ml-dsa` crate directly and through `C_Sign` / `C_Verify`
//! (`CKM_ML_DSA`, deterministic: `CK_SIGN_ADDITIONAL_CONTEXT` with
//! `CKH_DETERMINISTIC_REQUIRED`, so both sides compute the same signature,
//! checked once before timing).

use super::{Template, Token, compare};
use criterion::Criterion;
use cryptoki_sys::*;
use ml_dsa::{MlDsa65, SigningKey};
use signature::Keypair;
use std::hint::black_box;

/// `CKM_ML_DSA` asking for deterministic signatures with an empty context.
fn deterministic(p: &mut CK_SIGN_ADDITIONAL_CONTEXT) -> CK_MECHANISM {
    *p = CK_SIGN_ADDITIONAL_CONTEXT {
        hedgeVariant: CKH_DETERMINISTIC_REQUIRED,
        pContext: std::ptr::null_mut(),
        ulContextLen: 0,
    };
    CK_MECHANISM {
        mechanism: CKM_ML_DSA,
        pParameter: p as *mut _ as *mut std::ffi::c_void,
        ulParameterLen: std::mem::size_of::<CK_SIGN_ADDITIONAL_CONTEXT>() as CK_ULONG,
    }
}

pub fn bench(c: &mut Criterion, t: &Token) {
    let seed = [42u8; 32];
    let direct = SigningKey::<MlDsa65>::from_seed(&seed.into());
    let vk = direct.verifying_key();
    let key = t.create(
        Template::new()
            .ulong(CKA_CLASS, CKO_PRIVATE_KEY)
            .ulong(CKA_KEY_TYPE, CKK_ML_DSA)
            .ulong(CKA_PARAMETER_SET, CKP_ML_DSA_65)
            .bytes(CKA_SEED, &seed),
    );
    let public = t.create(
        Template::new()
            .ulong(CKA_CLASS, CKO_PUBLIC_KEY)
            .ulong(CKA_KEY_TYPE, CKK_ML_DSA)
            .ulong(CKA_PARAMETER_SET, CKP_ML_DSA_65)
            .bytes(CKA_VALUE, &vk.encode()),
    );
    let data = [0x5au8; 32];
    let mut p = CK_SIGN_ADDITIONAL_CONTEXT {
        hedgeVariant: 0,
        pContext: std::ptr::null_mut(),
        ulContextLen: 0,
    };
    let mut sig = vec![0u8; 3309];
    let n = t.sign(&mut deterministic(&mut p), key, &data, &mut sig);
    let expanded = &direct;
    let reference = expanded
        .expanded_key()
        .sign_deterministic(&data, b"")
        .unwrap();
    assert_eq!(sig[..n], reference.encode()[..], "same signature both ways");
    compare(
        c,
        "ml-dsa-65-sign",
        Some(30),
        || {
            black_box(
                expanded
                    .expanded_key()
                    .sign_deterministic(black_box(&data), b"")
                    .unwrap(),
            )
        },
        || t.sign(&mut deterministic(&mut p), key, black_box(&data), &mut sig),
    );
    compare(
        c,
        "ml-dsa-65-verify",
        None,
        || assert!(vk.verify_with_context(black_box(&data), b"", &reference)),
        || t.verify(&mut deterministic(&mut p), public, black_box(&data), &sig),
    );
}
