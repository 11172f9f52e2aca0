//! Both signing paths give valid FIPS 204 signatures and the same
//! verification results (docs/mechanisms.md, `CKM_ML_DSA`): in the default
//! build, pure ML-DSA with an empty context signs (hedged) and verifies on
//! aws-lc-rs, single-part and multi-part up to 64 KiB; a context, the
//! deterministic variant and longer multi-part messages run on μ with the
//! RustCrypto crate. Each signature the module makes is checked with the
//! crate's `verify_with_context` (and, in the default build, with aws-lc-rs
//! directly), and each is verified through the module on both paths.

use super::*;
use cryptoki::error::RvError;
use ml_dsa::{
    EncodedVerifyingKey, ExpandedSigningKey, MlDsa44, MlDsa65, MlDsa87, MlDsaParams, Signature,
    SigningKey, VerifyingKey,
};
use std::ptr::null_mut;

/// Bytes a multi-part operation buffers for aws-lc (`awslc::MAX_BUFFERED`).
const BOUND: usize = 64 * 1024;

/// The crate's verdict on `sig` over `msg` with `ctx` under `public`.
fn crate_verifies(public: &[u8], msg: &[u8], ctx: &[u8], sig: &[u8]) -> bool {
    fn check<P: MlDsaParams>(public: &[u8], msg: &[u8], ctx: &[u8], sig: &[u8]) -> bool {
        let vk = VerifyingKey::<P>::decode(&EncodedVerifyingKey::<P>::try_from(public).unwrap());
        Signature::<P>::try_from(sig).is_ok_and(|sig| vk.verify_with_context(msg, ctx, &sig))
    }
    match public.len() {
        1312 => check::<MlDsa44>(public, msg, ctx, sig),
        1952 => check::<MlDsa65>(public, msg, ctx, sig),
        2592 => check::<MlDsa87>(public, msg, ctx, sig),
        n => panic!("public key of {n} bytes"),
    }
}

/// aws-lc-rs's verdict (empty context, all it offers).
#[cfg(feature = "aws-lc")]
fn aws_lc_verifies(public: &[u8], msg: &[u8], sig: &[u8]) -> bool {
    use aws_lc_rs::signature::{ML_DSA_44, ML_DSA_65, ML_DSA_87, UnparsedPublicKey};
    let alg = match public.len() {
        1312 => &ML_DSA_44,
        1952 => &ML_DSA_65,
        _ => &ML_DSA_87,
    };
    UnparsedPublicKey::new(alg, public).verify(msg, sig).is_ok()
}

/// Checks a pure empty-context signature outside the module.
fn assert_valid(public: &[u8], msg: &[u8], sig: &[u8]) {
    assert!(
        crate_verifies(public, msg, b"", sig),
        "the crate refuses it"
    );
    #[cfg(feature = "aws-lc")]
    assert!(aws_lc_verifies(public, msg, sig), "aws-lc refuses it");
}

fn message(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// `C_SignInit` / `C_SignUpdate` in `chunk`-byte parts / `C_SignFinal`.
fn sign_parts(
    s: &Session,
    m: &Mechanism<'_>,
    key: ObjectHandle,
    msg: &[u8],
    chunk: usize,
) -> Vec<u8> {
    s.sign_init(m, key).unwrap();
    for part in msg.chunks(chunk) {
        s.sign_update(part).unwrap();
    }
    s.sign_final().unwrap()
}

/// `C_VerifyInit` / `C_VerifyUpdate` in `chunk`-byte parts / `C_VerifyFinal`.
fn verify_parts(
    s: &Session,
    m: &Mechanism<'_>,
    key: ObjectHandle,
    msg: &[u8],
    chunk: usize,
    sig: &[u8],
) -> cryptoki::error::Result<()> {
    s.verify_init(m, key)?;
    for part in msg.chunks(chunk) {
        s.verify_update(part)?;
    }
    s.verify_final(sig)
}

/// Verifies `sig` (pure, empty context) through the module with no
/// parameter and with each hedge variant, single-part (aws-lc in the
/// default build) and multi-part (aws-lc within the bound, μ past it):
/// each must answer `want` (`None`: valid).
fn assert_module_verdict(
    s: &Session,
    public: ObjectHandle,
    msg: &[u8],
    sig: &[u8],
    want: Option<cryptoki::error::RvError>,
) {
    let mut results = Vec::new();
    for m in [
        ml_dsa(HedgeType::Preferred, None),
        ml_dsa(HedgeType::Required, Some(b"")),
        deterministic(b""),
    ] {
        results.push(s.verify(&m, public, msg, sig));
        results.push(verify_parts(s, &m, public, msg, 1000, sig));
    }
    for r in results {
        match (r, want) {
            (Ok(()), None) => {}
            (Err(e), Some(w)) => assert_eq!(rv_of(e), w),
            (r, w) => panic!("{r:?}, want {w:?}"),
        }
    }
}

#[test]
fn pure_empty_context_signatures_verify_with_the_crate_and_aws_lc() {
    let f = Fixture::new();
    let s = f.user(f.token("backends"));
    for (set, _, sig_len) in SETS {
        let (public, private) = generate(&s, set, false);
        let pk = bytes_of(&s, public, AttributeType::Value);
        for msg in [Vec::new(), message(1), message(5000), message(BOUND)] {
            for m in [
                ml_dsa(HedgeType::Preferred, None),
                ml_dsa(HedgeType::Preferred, Some(b"")),
                ml_dsa(HedgeType::Required, Some(b"")),
            ] {
                let single = s.sign(&m, private, &msg).unwrap();
                let multi = sign_parts(&s, &m, private, &msg, 4096);
                for sig in [&single, &multi] {
                    assert_eq!(sig.len(), sig_len);
                    assert_valid(&pk, &msg, sig);
                    assert_module_verdict(&s, public, &msg, sig, None);
                }
                assert_ne!(single, multi, "hedged signatures are randomized");
            }
        }
    }
}

#[test]
fn multipart_messages_past_the_buffer_bound_still_sign_and_verify() {
    let f = Fixture::new();
    let s = f.user(f.token("bound"));
    let (public, private) = generate(&s, MlDsaParameterSetType::ML_DSA_65, false);
    let pk = bytes_of(&s, public, AttributeType::Value);
    let none = ml_dsa(HedgeType::Preferred, None);
    for len in [BOUND - 1, BOUND, BOUND + 1, 3 * BOUND + 17] {
        let msg = message(len);
        // Multi-part within the bound and single-part on aws-lc, multi-part
        // past the bound on μ (one update of it too); verified both ways.
        let sigs = [
            sign_parts(&s, &none, private, &msg, 4096),
            sign_parts(&s, &none, private, &msg, len),
            s.sign(&none, private, &msg).unwrap(),
        ];
        for sig in sigs {
            assert_valid(&pk, &msg, &sig);
            s.verify(&none, public, &msg, &sig).unwrap();
            for vchunk in [1000, BOUND + 1] {
                verify_parts(&s, &none, public, &msg, vchunk, &sig).unwrap();
            }
            // A changed last byte fails on every path.
            let mut other = msg.clone();
            *other.last_mut().unwrap() ^= 1;
            assert_rv!(s.verify(&none, public, &other, &sig), SignatureInvalid);
            assert_rv!(
                verify_parts(&s, &none, public, &other, 4096, &sig),
                SignatureInvalid
            );
        }
    }
}

#[test]
fn signatures_verify_through_the_module_whichever_path_made_them() {
    let f = Fixture::new();
    let s = f.user(f.token("paths"));
    let (public, private) = generate(&s, MlDsaParameterSetType::ML_DSA_44, false);
    let pk = bytes_of(&s, public, AttributeType::Value);
    let msg = message(300);
    // The deterministic variant and a multi-part message past the bound
    // run on μ; no parameter, single-part, on aws-lc (default build).
    let on_mu = s.sign(&deterministic(b""), private, &msg).unwrap();
    let long = message(BOUND + 100);
    let long_on_mu = sign_parts(&s, &ml_dsa(HedgeType::Required, None), private, &long, 8192);
    let hedged = s
        .sign(&ml_dsa(HedgeType::Preferred, None), private, &msg)
        .unwrap();
    for sig in [&on_mu, &hedged] {
        assert_valid(&pk, &msg, sig);
        assert_module_verdict(&s, public, &msg, sig, None);
        // Corrupted: invalid on every path; short: a length error first.
        for i in [0, 1000, sig.len() - 1] {
            let mut bad = sig.clone();
            bad[i] ^= 0x10;
            assert_module_verdict(&s, public, &msg, &bad, Some(RvError::SignatureInvalid));
        }
        let short = &sig[..sig.len() - 1];
        assert_module_verdict(&s, public, &msg, short, Some(RvError::SignatureLenRange));
        let mut longer = sig.clone();
        longer.push(0);
        assert_module_verdict(&s, public, &msg, &longer, Some(RvError::SignatureLenRange));
        // Not a signature with a context: the context is not dropped.
        assert_rv!(
            s.verify(&deterministic(b"c"), public, &msg, sig),
            SignatureInvalid
        );
    }
    assert_valid(&pk, &long, &long_on_mu);
    assert_module_verdict(&s, public, &long, &long_on_mu, None);
    // A signature with a context verifies only with it (μ path both ways).
    let ctx = s
        .sign(&ml_dsa(HedgeType::Preferred, Some(b"ctx")), private, &msg)
        .unwrap();
    assert!(crate_verifies(&pk, &msg, b"ctx", &ctx));
    s.verify(&deterministic(b"ctx"), public, &msg, &ctx)
        .unwrap();
    assert_module_verdict(&s, public, &msg, &ctx, Some(RvError::SignatureInvalid));
}

/// A key imported as its expanded value only (no seed) reaches aws-lc from
/// that value.
#[test]
fn a_key_imported_without_its_seed_signs_valid_signatures() {
    fn expanded<P: MlDsaParams>(seed: &[u8; 32]) -> (Vec<u8>, Vec<u8>) {
        let sk = SigningKey::<P>::from_seed(&(*seed).into());
        let key: &ExpandedSigningKey<P> = sk.expanded_key();
        #[allow(deprecated)] // skEncode, FIPS 204 Algorithm 24
        let value = key.to_expanded().to_vec();
        (value, key.verifying_key().encode().to_vec())
    }
    let f = Fixture::new();
    let s = f.user(f.token("expanded"));
    let seed = [0x42u8; 32];
    for (set, pk_len, _) in SETS {
        let (value, pk) = match pk_len {
            1312 => expanded::<MlDsa44>(&seed),
            1952 => expanded::<MlDsa65>(&seed),
            _ => expanded::<MlDsa87>(&seed),
        };
        let private = s
            .create_object(&[
                Attribute::Class(ObjectClass::PRIVATE_KEY),
                Attribute::KeyType(KeyType::ML_DSA),
                Attribute::ParameterSet(set.into()),
                Attribute::Value(value),
                Attribute::Sign(true),
            ])
            .unwrap();
        let public = import_public(&s, set, &pk).unwrap();
        let msg = message(77);
        for m in [ml_dsa(HedgeType::Preferred, None), deterministic(b"")] {
            let sig = s.sign(&m, private, &msg).unwrap();
            assert_valid(&pk, &msg, &sig);
            assert_module_verdict(&s, public, &msg, &sig, None);
        }
    }
}

/// The message-based API (base spec §5.21 / §5.22) runs the same
/// operations: whole messages and `C_SignMessageBegin` / `Next`, hedged
/// with an empty context.
#[test]
fn message_api_signatures_with_an_empty_context_are_valid() {
    let f = Fixture::new();
    let s = f.user(f.token("msgapi"));
    let (public, private) = generate(&s, MlDsaParameterSetType::ML_DSA_87, false);
    let pk = bytes_of(&s, public, AttributeType::Value);
    // SAFETY: loading the module under test (the instance cryptoki uses)
    // and asking for its 3.0 interface with valid pointers; the library
    // stays loaded for the process.
    let l = unsafe {
        let lib = cryptoki_sys::Pkcs11::new(module_path()).unwrap();
        let mut name = *b"PKCS 11\0";
        let mut v = CK_VERSION { major: 3, minor: 0 };
        let mut iface: *mut CK_INTERFACE = null_mut();
        assert_eq!(
            lib.C_GetInterface(name.as_mut_ptr(), &mut v, &mut iface, 0),
            CKR_OK
        );
        let l = &*((*iface).pFunctionList as *const CK_FUNCTION_LIST_3_0);
        std::mem::forget(lib);
        l
    };
    let mut mech = CK_MECHANISM {
        mechanism: CKM_ML_DSA,
        pParameter: null_mut(),
        ulParameterLen: 0,
    };
    let h = s.handle();
    let mut whole = vec![0u8; 4627];
    let mut parts = vec![0u8; 4627];
    let mut msg = message(BOUND + 5);
    let (head, tail) = msg.split_at_mut(BOUND - 5);
    // SAFETY: every buffer is valid for its length; the mechanism outlives
    // the calls.
    unsafe {
        assert_eq!(
            l.C_MessageSignInit.unwrap()(h, &mut mech, private.handle()),
            CKR_OK
        );
        let mut len = whole.len() as CK_ULONG;
        let rv = l.C_SignMessage.unwrap()(
            h,
            null_mut(),
            0,
            head.as_mut_ptr(),
            head.len() as CK_ULONG,
            whole.as_mut_ptr(),
            &mut len,
        );
        assert_eq!((rv, len), (CKR_OK, 4627));
        assert_eq!(l.C_SignMessageBegin.unwrap()(h, null_mut(), 0), CKR_OK);
        let next = l.C_SignMessageNext.unwrap();
        let rv = next(
            h,
            null_mut(),
            0,
            head.as_mut_ptr(),
            head.len() as CK_ULONG,
            null_mut(),
            null_mut(),
        );
        assert_eq!(rv, CKR_OK);
        let mut len = parts.len() as CK_ULONG;
        let rv = next(
            h,
            null_mut(),
            0,
            tail.as_mut_ptr(),
            tail.len() as CK_ULONG,
            parts.as_mut_ptr(),
            &mut len,
        );
        assert_eq!((rv, len), (CKR_OK, 4627));
        assert_eq!(l.C_MessageSignFinal.unwrap()(h), CKR_OK);
        assert_eq!(
            l.C_MessageVerifyInit.unwrap()(h, &mut mech, public.handle()),
            CKR_OK
        );
        let rv = l.C_VerifyMessage.unwrap()(
            h,
            null_mut(),
            0,
            head.as_mut_ptr(),
            head.len() as CK_ULONG,
            whole.as_mut_ptr(),
            4627,
        );
        assert_eq!(rv, CKR_OK);
        assert_eq!(l.C_MessageVerifyFinal.unwrap()(h), CKR_OK);
    }
    let head_len = BOUND - 5;
    assert_valid(&pk, &msg[..head_len], &whole);
    assert_valid(&pk, &msg, &parts);
    s.verify(&ml_dsa(HedgeType::Preferred, None), public, &msg, &parts)
        .unwrap();
}
