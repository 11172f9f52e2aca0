//! ML-DSA-65 (FIPS 204) signing and verification, each timed on the
//! RustCrypto `ml-dsa` crate directly and through `C_Sign` / `C_Verify`
//! (`CKM_ML_DSA`, empty context). `ml-dsa-65-sign` and `ml-dsa-65-verify`
//! time what most callers ask for, no parameter (hedged signing, 32 bytes of
//! OS randomness per signature on both sides; in the default build the
//! module computes it on aws-lc-rs, docs/mechanisms.md); each module
//! signature is checked against the crate before timing.
//! `ml-dsa-65-sign-deterministic` times the deterministic variant
//! (`CK_SIGN_ADDITIONAL_CONTEXT` with `CKH_DETERMINISTIC_REQUIRED`), which
//! the module computes on the crate in both builds: both sides compute the
//! same signature, checked once before timing.

use super::{Template, Token, compare};
use criterion::Criterion;
use cryptoki_sys::*;
use ml_dsa::{MlDsa65, Signature, SigningKey};
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

/// `CKM_ML_DSA` without a parameter: hedged, empty context.
fn hedged() -> CK_MECHANISM {
    super::plain(CKM_ML_DSA)
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
    let expanded = direct.expanded_key();
    // Hedged, empty context: M′ = 0 ‖ 0 ‖ M (FIPS 204 Algorithm 2).
    let crate_hedged = || {
        let mut rnd = [0u8; 32];
        getrandom::fill(&mut rnd).unwrap();
        let m: [&[u8]; 2] = [&[0, 0], black_box(&data[..])];
        expanded.sign_internal(&m, &rnd.into())
    };
    let mut sig = vec![0u8; 3309];
    let n = t.sign(&mut hedged(), key, &data, &mut sig);
    let theirs = Signature::<MlDsa65>::try_from(&sig[..n]).unwrap();
    assert!(vk.verify_with_context(&data, b"", &theirs), "module signs");
    assert!(
        vk.verify_with_context(&data, b"", &crate_hedged()),
        "crate signs"
    );
    compare(c, "ml-dsa-65-sign", Some(30), crate_hedged, || {
        t.sign(&mut hedged(), key, black_box(&data), &mut sig)
    });
    let n = t.sign(&mut deterministic(&mut p), key, &data, &mut sig);
    let reference = expanded.sign_deterministic(&data, b"").unwrap();
    assert_eq!(sig[..n], reference.encode()[..], "same signature both ways");
    compare(
        c,
        "ml-dsa-65-sign-deterministic",
        Some(30),
        || black_box(expanded.sign_deterministic(black_box(&data), b"").unwrap()),
        || t.sign(&mut deterministic(&mut p), key, black_box(&data), &mut sig),
    );
    compare(
        c,
        "ml-dsa-65-verify",
        None,
        || assert!(vk.verify_with_context(black_box(&data), b"", &reference)),
        || t.verify(&mut hedged(), public, black_box(&data), &sig[..n]),
    );
}
