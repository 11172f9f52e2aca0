//! Ed25519 through the C API (mechanisms spec §2.3.5–2.3.6, 2.3.14): key
//! generation, import, known answers (RFC 8032), single- and multi-part
//! signing and verification, the output-buffer conventions and usage rules.

#[path = "../common/mod.rs"]
mod common;

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::eddsa::{EddsaParams, EddsaSignatureScheme};
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::Session;
use cryptoki_sys::*;

const OID: &[u8] = &[0x06, 0x03, 0x2b, 0x65, 0x70];
const PRINTABLE: &[u8] = b"\x13\x0cedwards25519";
const GNUPG_OID: &[u8] = &[
    0x06, 0x09, 0x2b, 0x06, 0x01, 0x04, 0x01, 0xda, 0x47, 0x0f, 0x01,
];

fn eddsa() -> Mechanism<'static> {
    Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Pure))
}

struct Vector {
    secret: Vec<u8>,
    public: Vec<u8>,
    message: Vec<u8>,
    signature: Vec<u8>,
}

fn rfc8032() -> Vec<Vector> {
    include_str!("vectors/rfc8032-ed25519.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let f: Vec<_> = l.split(':').collect();
            Vector {
                secret: unhex(f[0]),
                public: unhex(f[1]),
                message: unhex(f[2]),
                signature: unhex(f[3]),
            }
        })
        .collect()
}

fn import_private(s: &Session, secret: &[u8], params: &[u8]) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::PRIVATE_KEY),
        Attribute::KeyType(KeyType::EC_EDWARDS),
        Attribute::EcParams(params.to_vec()),
        Attribute::Value(secret.to_vec()),
        Attribute::Sign(true),
    ])
    .unwrap()
}

fn import_public(s: &Session, point: &[u8], params: &[u8]) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::PUBLIC_KEY),
        Attribute::KeyType(KeyType::EC_EDWARDS),
        Attribute::EcParams(params.to_vec()),
        Attribute::EcPoint(point.to_vec()),
    ])
    .unwrap()
}

fn generate(s: &Session, token: bool) -> (ObjectHandle, ObjectHandle) {
    s.generate_key_pair(
        &Mechanism::EccEdwardsKeyPairGen,
        &[
            Attribute::EcParams(PRINTABLE.to_vec()),
            Attribute::Token(token),
            Attribute::Verify(true),
        ],
        &[
            Attribute::Token(token),
            Attribute::Sign(true),
            Attribute::Label(b"gen".to_vec()),
        ],
    )
    .unwrap()
}

#[test]
fn rfc8032_known_answers_through_imported_keys() {
    let f = Fixture::new();
    let slot = f.token("kat");
    let s = f.user(slot);
    let vectors = rfc8032();
    assert_eq!(vectors.len(), 4);
    for (i, v) in vectors.iter().enumerate() {
        let params = [OID, PRINTABLE, GNUPG_OID][i % 3];
        let private = import_private(&s, &v.secret, params);
        assert_eq!(
            s.sign(&eddsa(), private, &v.message).unwrap(),
            v.signature,
            "vector {i}"
        );
        // The public point computed from the secret matches the vector.
        let point = s
            .get_attributes(private, &[AttributeType::EcPoint])
            .unwrap();
        assert_eq!(
            point,
            vec![Attribute::EcPoint([&[0x04, 0x20][..], &v.public].concat())]
        );
        // Public key import: raw on odd vectors, DER on even ones.
        let encoded = if i % 2 == 0 {
            [&[0x04, 0x20][..], &v.public].concat()
        } else {
            v.public.clone()
        };
        let public = import_public(&s, &encoded, params);
        s.verify(&eddsa(), public, &v.message, &v.signature)
            .unwrap();
        let mut bad = v.signature.clone();
        bad[10] ^= 0x40;
        assert_rv!(
            s.verify(&eddsa(), public, &v.message, &bad),
            SignatureInvalid
        );
        assert_rv!(
            s.verify(&eddsa(), public, &v.message, &v.signature[..63]),
            SignatureLenRange
        );
        // Returned as DER whatever the import form.
        let stored = s.get_attributes(public, &[AttributeType::EcPoint]).unwrap();
        assert_eq!(
            stored,
            vec![Attribute::EcPoint([&[0x04, 0x20][..], &v.public].concat())]
        );
    }
}

#[test]
fn generated_keys_sign_and_verify_single_and_multi_part() {
    let f = Fixture::new();
    let slot = f.token("gen");
    let s = f.user(slot);
    let (public, private) = generate(&s, true);
    let attrs = s
        .get_attributes(
            private,
            &[
                AttributeType::Local,
                AttributeType::KeyGenMechanism,
                AttributeType::AlwaysSensitive,
                AttributeType::NeverExtractable,
                AttributeType::Private,
            ],
        )
        .unwrap();
    assert_eq!(attrs[0], Attribute::Local(true));
    assert_eq!(
        attrs[1],
        Attribute::KeyGenMechanism(cryptoki::mechanism::MechanismType::ECC_EDWARDS_KEY_PAIR_GEN)
    );
    assert_eq!(attrs[2], Attribute::AlwaysSensitive(true));
    assert_eq!(attrs[3], Attribute::NeverExtractable(true));
    assert_eq!(attrs[4], Attribute::Private(true));
    assert!(
        s.get_attributes(private, &[AttributeType::Value])
            .unwrap()
            .is_empty(),
        "sensitive value withheld"
    );

    let msg = vec![0x5a; 128];
    let sig = s.sign(&eddsa(), private, &msg).unwrap();
    s.verify(&eddsa(), public, &msg, &sig).unwrap();
    s.sign_init(&eddsa(), private).unwrap();
    s.sign_update(&msg[..50]).unwrap();
    s.sign_update(&msg[50..]).unwrap();
    assert_eq!(s.sign_final().unwrap(), sig, "Ed25519 is deterministic");
    s.verify_init(&eddsa(), public).unwrap();
    s.verify_update(&msg[..1]).unwrap();
    s.verify_update(&msg[1..]).unwrap();
    s.verify_final(&sig).unwrap();
    s.verify_init(&eddsa(), public).unwrap();
    s.verify_update(&msg[1..]).unwrap();
    assert_rv!(s.verify_final(&sig), SignatureInvalid);
    // Private keys have no CKA_VERIFY (§4.9): they cannot verify.
    assert_rv!(
        s.verify(&eddsa(), private, &msg, &sig),
        KeyFunctionNotPermitted
    );
}

#[test]
fn output_buffer_conventions() {
    let f = Fixture::new();
    let slot = f.token("buffers");
    let s = f.user(slot);
    let (public, private) = generate(&s, false);
    let l = raw();
    let h = s.handle();
    let mut mech = CK_MECHANISM {
        mechanism: CKM_EDDSA,
        pParameter: std::ptr::null_mut(),
        ulParameterLen: 0,
    };
    let mut data = *b"conventions";
    let mut sig = [0u8; 64];
    let mut len: CK_ULONG = 0;
    // SAFETY: all pointers are to live locals of the stated lengths.
    unsafe {
        assert_eq!(
            l.C_Sign.unwrap()(h, data.as_mut_ptr(), 11, sig.as_mut_ptr(), &mut len),
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut mech, private.handle()),
            CKR_OK
        );
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut mech, private.handle()),
            CKR_OPERATION_ACTIVE
        );
        // Size query keeps the operation.
        assert_eq!(
            l.C_Sign.unwrap()(h, data.as_mut_ptr(), 11, std::ptr::null_mut(), &mut len),
            CKR_OK
        );
        assert_eq!(len, 64);
        // Too small: the required length, operation kept.
        len = 10;
        assert_eq!(
            l.C_Sign.unwrap()(h, data.as_mut_ptr(), 11, sig.as_mut_ptr(), &mut len),
            CKR_BUFFER_TOO_SMALL
        );
        assert_eq!(len, 64);
        len = 64;
        assert_eq!(
            l.C_Sign.unwrap()(h, data.as_mut_ptr(), 11, sig.as_mut_ptr(), &mut len),
            CKR_OK
        );
        assert_eq!(len, 64);
        // Finished: a second C_Sign has nothing to do.
        assert_eq!(
            l.C_Sign.unwrap()(h, data.as_mut_ptr(), 11, sig.as_mut_ptr(), &mut len),
            CKR_OPERATION_NOT_INITIALIZED
        );
        // Null length pointer; null data with a length.
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut mech, private.handle()),
            CKR_OK
        );
        assert_eq!(
            l.C_Sign.unwrap()(
                h,
                data.as_mut_ptr(),
                11,
                sig.as_mut_ptr(),
                std::ptr::null_mut()
            ),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut mech, private.handle()),
            CKR_OK
        );
        assert_eq!(
            l.C_Sign.unwrap()(h, std::ptr::null_mut(), 11, sig.as_mut_ptr(), &mut len),
            CKR_ARGUMENTS_BAD
        );
        // After an update, C_Sign may not finish the operation.
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut mech, private.handle()),
            CKR_OK
        );
        assert_eq!(l.C_SignUpdate.unwrap()(h, data.as_mut_ptr(), 11), CKR_OK);
        assert_eq!(
            l.C_Sign.unwrap()(h, data.as_mut_ptr(), 11, sig.as_mut_ptr(), &mut len),
            CKR_OPERATION_ACTIVE
        );
        // SignFinal conventions.
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut mech, private.handle()),
            CKR_OK
        );
        assert_eq!(l.C_SignUpdate.unwrap()(h, data.as_mut_ptr(), 11), CKR_OK);
        len = 0;
        assert_eq!(
            l.C_SignFinal.unwrap()(h, sig.as_mut_ptr(), &mut len),
            CKR_BUFFER_TOO_SMALL
        );
        assert_eq!(len, 64);
        assert_eq!(
            l.C_SignFinal.unwrap()(h, sig.as_mut_ptr(), &mut len),
            CKR_OK
        );
        // Bad mechanism pointers and parameters.
        assert_eq!(
            l.C_SignInit.unwrap()(h, std::ptr::null_mut(), private.handle()),
            CKR_ARGUMENTS_BAD
        );
        let mut unknown = CK_MECHANISM {
            mechanism: 0x8000_7777,
            pParameter: std::ptr::null_mut(),
            ulParameterLen: 0,
        };
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut unknown, private.handle()),
            CKR_MECHANISM_INVALID
        );
        let mut digest = CK_MECHANISM {
            mechanism: CKM_SHA256,
            pParameter: std::ptr::null_mut(),
            ulParameterLen: 0,
        };
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut digest, private.handle()),
            CKR_MECHANISM_INVALID
        );
        let params_len = std::mem::size_of::<CK_EDDSA_PARAMS>() as CK_ULONG;
        // A context over 255 bytes (RFC 8032 §5.1) is a parameter error.
        let mut long_context = [0u8; 256];
        let mut prehash = CK_EDDSA_PARAMS {
            phFlag: 1,
            ulContextDataLen: 256,
            pContextData: long_context.as_mut_ptr(),
        };
        let mut ph = CK_MECHANISM {
            mechanism: CKM_EDDSA,
            pParameter: (&mut prehash as *mut CK_EDDSA_PARAMS).cast(),
            ulParameterLen: params_len,
        };
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut ph, private.handle()),
            CKR_MECHANISM_PARAM_INVALID
        );
        let mut pure = CK_EDDSA_PARAMS {
            phFlag: 0,
            ulContextDataLen: 0,
            pContextData: std::ptr::null_mut(),
        };
        ph.pParameter = (&mut pure as *mut CK_EDDSA_PARAMS).cast();
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut ph, private.handle()),
            CKR_OK,
            "pure Ed25519 via CK_EDDSA_PARAMS"
        );
        assert_eq!(
            l.C_SignFinal.unwrap()(h, sig.as_mut_ptr(), &mut len),
            CKR_OK
        );
        ph.ulParameterLen = 3;
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut ph, private.handle()),
            CKR_MECHANISM_PARAM_INVALID
        );
        assert_eq!(
            l.C_SignInit.unwrap()(h, &mut mech, 0xdead_beef),
            CKR_KEY_HANDLE_INVALID
        );
        assert_eq!(
            l.C_SignInit.unwrap()(0xdead_beef, &mut mech, private.handle()),
            CKR_SESSION_HANDLE_INVALID
        );
        // Verify needs no output buffer but checks its inputs.
        assert_eq!(
            l.C_VerifyInit.unwrap()(h, &mut mech, public.handle()),
            CKR_OK
        );
        assert_eq!(
            l.C_Verify.unwrap()(h, data.as_mut_ptr(), 11, std::ptr::null_mut(), 64),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            l.C_VerifyFinal.unwrap()(h, sig.as_mut_ptr(), 64),
            CKR_OPERATION_NOT_INITIALIZED,
            "an error ends the operation"
        );
    }
}

#[test]
fn usage_flags_login_and_allowed_mechanisms() {
    let f = Fixture::new();
    let slot = f.token("usage");
    let s = f.user(slot);
    let vectors = rfc8032();
    let no_sign = s
        .create_object(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::KeyType(KeyType::EC_EDWARDS),
            Attribute::EcParams(OID.to_vec()),
            Attribute::Value(vectors[0].secret.clone()),
            Attribute::Sign(false),
        ])
        .unwrap();
    assert_rv!(s.sign(&eddsa(), no_sign, b"x"), KeyFunctionNotPermitted);
    let only_sha = s
        .create_object(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::KeyType(KeyType::EC_EDWARDS),
            Attribute::EcParams(OID.to_vec()),
            Attribute::Value(vectors[0].secret.clone()),
            Attribute::AllowedMechanisms(vec![cryptoki::mechanism::MechanismType::SHA256]),
        ])
        .unwrap();
    assert_rv!(s.sign(&eddsa(), only_sha, b"x"), MechanismInvalid);
    let data = s
        .create_object(&[
            Attribute::Class(ObjectClass::DATA),
            Attribute::Value(b"v".to_vec()),
        ])
        .unwrap();
    assert_rv!(s.sign(&eddsa(), data, b"x"), KeyTypeInconsistent);
    let (_, private) = generate(&s, true);
    let other = f.p().open_ro_session(slot).unwrap();
    s.logout().unwrap();
    assert_rv!(other.sign(&eddsa(), private, b"x"), UserNotLoggedIn);
}

#[test]
fn token_keys_persist_and_cached_keys_follow_logout() {
    let mut f = Fixture::new();
    let slot = f.token("persist");
    let msg = b"persisted".to_vec();
    let sig = {
        let s = f.user(slot);
        let (_, private) = generate(&s, true);
        s.sign(&eddsa(), private, &msg).unwrap()
    };
    f.restart();
    let s = f.user(slot);
    let found = s
        .find_objects(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::Label(b"gen".to_vec()),
        ])
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(
        s.sign(&eddsa(), found[0], &msg).unwrap(),
        sig,
        "same key after restart"
    );
    let public = s
        .find_objects(&[Attribute::Class(ObjectClass::PUBLIC_KEY)])
        .unwrap();
    s.verify(&eddsa(), public[0], &msg, &sig).unwrap();
    // Logout ends operations in progress.
    s.sign_init(&eddsa(), found[0]).unwrap();
    s.logout().unwrap();
    assert_rv!(s.sign_final(), OperationNotInitialized);
}

#[test]
fn digests_and_random() {
    let f = Fixture::new();
    let slot = f.token("digest");
    let s = f.user(slot);
    let abc_sha256 = unhex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert_eq!(s.digest(&Mechanism::Sha256, b"abc").unwrap(), abc_sha256);
    s.digest_init(&Mechanism::Sha256).unwrap();
    s.digest_update(b"a").unwrap();
    s.digest_update(b"bc").unwrap();
    assert_eq!(s.digest_final().unwrap(), abc_sha256);
    for (m, len) in [
        (Mechanism::Sha1, 20),
        (Mechanism::Sha224, 28),
        (Mechanism::Sha384, 48),
        (Mechanism::Sha512, 64),
    ] {
        assert_eq!(s.digest(&m, b"x").unwrap().len(), len);
    }
    // C_DigestKey digests the value of a secret key that could be read
    // outright (extractable, not sensitive), and of no other.
    let secret = |sensitive: bool, extractable: bool| {
        s.create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Value(b"abc".to_vec()),
            Attribute::Sensitive(sensitive),
            Attribute::Extractable(extractable),
        ])
        .unwrap()
    };
    s.digest_init(&Mechanism::Sha256).unwrap();
    s.digest_key(secret(false, true)).unwrap();
    assert_eq!(s.digest_final().unwrap(), abc_sha256);
    for (sensitive, extractable) in [(true, true), (false, false), (true, false)] {
        s.digest_init(&Mechanism::Sha256).unwrap();
        assert_rv!(
            s.digest_key(secret(sensitive, extractable)),
            KeyIndigestible
        );
        assert_rv!(s.digest_final(), OperationNotInitialized);
    }
    // A key made with the token's defaults is sensitive: indigestible.
    let default_key = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Value(b"abc".to_vec()),
        ])
        .unwrap();
    s.digest_init(&Mechanism::Sha256).unwrap();
    assert_rv!(s.digest_key(default_key), KeyIndigestible);
    let (public, _) = generate(&s, false);
    s.digest_init(&Mechanism::Sha256).unwrap();
    assert_rv!(s.digest_key(public), KeyIndigestible);
    assert_rv!(s.digest_final(), OperationNotInitialized);
    // Raw conventions.
    let l = raw();
    let mut mech = CK_MECHANISM {
        mechanism: CKM_SHA256,
        pParameter: std::ptr::null_mut(),
        ulParameterLen: 0,
    };
    let mut out = [0u8; 32];
    let mut len: CK_ULONG = 31;
    let mut data = *b"abc";
    // SAFETY: valid local buffers.
    unsafe {
        assert_eq!(l.C_DigestInit.unwrap()(s.handle(), &mut mech), CKR_OK);
        assert_eq!(
            l.C_Digest.unwrap()(s.handle(), data.as_mut_ptr(), 3, out.as_mut_ptr(), &mut len),
            CKR_BUFFER_TOO_SMALL
        );
        assert_eq!(len, 32);
        assert_eq!(
            l.C_Digest.unwrap()(s.handle(), data.as_mut_ptr(), 3, out.as_mut_ptr(), &mut len),
            CKR_OK
        );
        assert_eq!(out.to_vec(), abc_sha256);
        let mut p = [1u8; 4];
        let mut with_param = CK_MECHANISM {
            mechanism: CKM_SHA256,
            pParameter: p.as_mut_ptr().cast(),
            ulParameterLen: 4,
        };
        assert_eq!(
            l.C_DigestInit.unwrap()(s.handle(), &mut with_param),
            CKR_MECHANISM_PARAM_INVALID
        );
        assert_eq!(
            l.C_GenerateRandom.unwrap()(s.handle(), std::ptr::null_mut(), 8),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            l.C_GenerateRandom.unwrap()(s.handle(), out.as_mut_ptr(), 0),
            CKR_OK
        );
    }
    let a = s.generate_random_vec(64).unwrap();
    let b = s.generate_random_vec(64).unwrap();
    assert_eq!(a.len(), 64);
    assert_ne!(a, b);
}

/// The vendor interface's batch verification (`ffi/vendor.rs`).
#[test]
fn vendor_batch_verification() {
    let f = Fixture::new();
    let slot = f.token("batch");
    let s = f.user(slot);
    let pairs: Vec<_> = (0..16).map(|_| generate(&s, false)).collect();
    let messages: Vec<Vec<u8>> = (0..16u8).map(|i| vec![i; 32 + i as usize]).collect();
    let mut sigs: Vec<Vec<u8>> = pairs
        .iter()
        .zip(&messages)
        .map(|((_, k), m)| s.sign(&eddsa(), *k, m).unwrap())
        .collect();
    // SAFETY: loading the module under test; calls with live arrays of ulCount elements.
    unsafe {
        let lib = cryptoki_sys::Pkcs11::new(module_path()).unwrap();
        let mut iface: *mut CK_INTERFACE = std::ptr::null_mut();
        let mut name = *b"Vendor dalek-pkcs11\0";
        assert_eq!(
            lib.C_GetInterface(name.as_mut_ptr(), std::ptr::null_mut(), &mut iface, 0),
            CKR_OK
        );
        #[repr(C)]
        struct VendorList {
            version: CK_VERSION,
            verify_batch: Option<
                unsafe extern "C" fn(
                    CK_SESSION_HANDLE,
                    CK_ULONG,
                    *const CK_OBJECT_HANDLE,
                    *const *const CK_BYTE,
                    *const CK_ULONG,
                    *const *const CK_BYTE,
                ) -> CK_RV,
            >,
            verify_batch_mechanism: Option<
                unsafe extern "C" fn(
                    CK_SESSION_HANDLE,
                    *const CK_MECHANISM,
                    CK_ULONG,
                    *const CK_OBJECT_HANDLE,
                    *const *const CK_BYTE,
                    *const CK_ULONG,
                    *const *const CK_BYTE,
                ) -> CK_RV,
            >,
        }
        let list = &*((*iface).pFunctionList as *const VendorList);
        assert_eq!((list.version.major, list.version.minor), (1, 1));
        let batch = list.verify_batch.unwrap();
        let keys: Vec<CK_OBJECT_HANDLE> = pairs.iter().map(|(p, _)| p.handle()).collect();
        let lens: Vec<CK_ULONG> = messages.iter().map(|m| m.len() as CK_ULONG).collect();
        let run = |sigs: &Vec<Vec<u8>>, keys: &[CK_OBJECT_HANDLE]| {
            let data: Vec<*const u8> = messages.iter().map(|m| m.as_ptr()).collect();
            let sig_ptrs: Vec<*const u8> = sigs.iter().map(|x| x.as_ptr()).collect();
            batch(
                s.handle(),
                keys.len() as CK_ULONG,
                keys.as_ptr(),
                data.as_ptr(),
                lens.as_ptr(),
                sig_ptrs.as_ptr(),
            )
        };
        assert_eq!(run(&sigs, &keys), CKR_OK);
        // 1.1: the same with a mechanism; only pure Ed25519 batches.
        let batch_mech = list.verify_batch_mechanism.unwrap();
        let run_mech = |mech: &CK_MECHANISM| {
            let data: Vec<*const u8> = messages.iter().map(|m| m.as_ptr()).collect();
            let sig_ptrs: Vec<*const u8> = sigs.iter().map(|x| x.as_ptr()).collect();
            batch_mech(
                s.handle(),
                mech,
                keys.len() as CK_ULONG,
                keys.as_ptr(),
                data.as_ptr(),
                lens.as_ptr(),
                sig_ptrs.as_ptr(),
            )
        };
        let mut context = *b"foo";
        let mut params = |ph: bool, len: usize| CK_EDDSA_PARAMS {
            phFlag: ph as CK_BBOOL,
            ulContextDataLen: len as CK_ULONG,
            pContextData: context.as_mut_ptr(),
        };
        let with = |ty, p: Option<&mut CK_EDDSA_PARAMS>| CK_MECHANISM {
            mechanism: ty,
            ulParameterLen: if p.is_some() {
                std::mem::size_of::<CK_EDDSA_PARAMS>() as CK_ULONG
            } else {
                0
            },
            pParameter: p.map_or(std::ptr::null_mut(), |p| p as *mut _ as *mut _),
        };
        assert_eq!(run_mech(&with(CKM_EDDSA, None)), CKR_OK);
        assert_eq!(
            run_mech(&with(CKM_EDDSA, Some(&mut params(false, 0)))),
            CKR_OK
        );
        for (ph, len) in [(true, 0), (true, 3), (false, 3)] {
            assert_eq!(
                run_mech(&with(CKM_EDDSA, Some(&mut params(ph, len)))),
                CKR_MECHANISM_PARAM_INVALID,
                "phFlag {ph}, context {len}"
            );
        }
        assert_eq!(run_mech(&with(CKM_ECDSA, None)), CKR_MECHANISM_INVALID);
        sigs[9][0] ^= 1;
        assert_eq!(run(&sigs, &keys), CKR_SIGNATURE_INVALID);
        sigs[9][0] ^= 1;
        let mut private_keys = keys.clone();
        private_keys[3] = pairs[3].1.handle();
        assert_eq!(
            run(&sigs, &private_keys),
            CKR_KEY_FUNCTION_NOT_PERMITTED,
            "private keys have no CKA_VERIFY"
        );
        for count in [0, 2] {
            assert_eq!(
                batch(
                    s.handle(),
                    count,
                    keys.as_ptr(),
                    std::ptr::null(),
                    lens.as_ptr(),
                    std::ptr::null()
                ),
                CKR_ARGUMENTS_BAD,
                "count {count}"
            );
        }
        // A public key at the identity point with R = identity and S = 0:
        // C_Verify refuses it, and so must the batch (its equation alone
        // held for every message).
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let weak = s
            .create_object(&[
                Attribute::Class(ObjectClass::PUBLIC_KEY),
                Attribute::KeyType(KeyType::EC_EDWARDS),
                Attribute::EcParams(b"\x13\x0cedwards25519".to_vec()),
                Attribute::EcPoint(identity.to_vec()),
                Attribute::Verify(true),
            ])
            .unwrap();
        let mut forged = vec![0u8; 64];
        forged[..32].copy_from_slice(&identity);
        assert_rv!(
            s.verify(&eddsa(), weak, &messages[0], &forged),
            SignatureInvalid
        );
        let mut with_weak = keys.clone();
        with_weak[5] = weak.handle();
        sigs[5] = forged;
        assert_eq!(run(&sigs, &with_weak), CKR_SIGNATURE_INVALID);
        let all_weak = vec![weak.handle(); 16];
        let all_forged = vec![sigs[5].clone(); 16];
        assert_eq!(run(&all_forged, &all_weak), CKR_SIGNATURE_INVALID);
        std::mem::forget(lib);
    }
}

/// RFC 8032 §7.2 (Ed25519ctx) through the C API: each vector's key is
/// imported, its signature reproduced byte for byte and verified; another
/// context, pure Ed25519 and a tampered signature are refused.
#[test]
fn rfc8032_ed25519ctx_through_imported_keys() {
    let f = Fixture::new();
    let slot = f.token("ctx");
    let s = f.user(slot);
    let k1 = "0305334e381af78f141cb666f6199f57bc3495335a256a95bd2a55bf546663f6";
    let p1 = "dfc9425e4f968f7f0c29f0259cf5f9aed6851c2bb4ad8bfb860cfee0ab248292";
    let m1 = "f726936d19c800494e3fdaff20b276a8";
    let vectors = [
        (
            k1,
            p1,
            m1,
            "foo",
            "55a4cc2f70a54e04288c5f4cd1e45a7bb520b36292911876cada7323198dd87a8b36950b95130022907a7fb7c4e9b2d5f6cca685a587b4b21f4b888e4e7edb0d",
        ),
        (
            k1,
            p1,
            m1,
            "bar",
            "fc60d5872fc46b3aa69f8b5b4351d5808f92bcc044606db097abab6dbcb1aee3216c48e8b3b66431b5b186d1d28f8ee15a5ca2df6668346291c2043d4eb3e90d",
        ),
        (
            k1,
            p1,
            "508e9e6882b979fea900f62adceaca35",
            "foo",
            "8b70c1cc8310e1de20ac53ce28ae6e7207f33c3295e03bb5c0732a1d20dc64908922a8b052cf99b7c4fe107a5abb5b2c4085ae75890d02df26269d8945f84b0b",
        ),
        (
            "ab9c2853ce297ddab85c993b3ae14bcad39b2c682beabc27d6d4eb20711d6560",
            "0f1d1274943b91415889152e893d80e93275a1fc0b65fd71b4b0dda10ad7d772",
            m1,
            "foo",
            "21655b5f1aa965996b3f97b3c849eafba922a0a62992f73b3d1b73106a84ad85e9b86a7b6005ea868337ff2d20a7f5fbd4cd10b0be49a68da2b2e0dc0ad8960f",
        ),
    ];
    for (sk, pk, msg, ctx, sig) in vectors {
        let (sk, pk, msg, sig) = (unhex(sk), unhex(pk), unhex(msg), unhex(sig));
        let private = import_private(&s, &sk, OID);
        let public = import_public(&s, &pk, PRINTABLE);
        let mech = Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Ed25519ctx(
            ctx.as_bytes(),
        )));
        assert_eq!(s.sign(&mech, private, &msg).unwrap(), sig, "context {ctx}");
        s.verify(&mech, public, &msg, &sig).unwrap();
        // Multi-part gives the same signature.
        s.sign_init(&mech, private).unwrap();
        s.sign_update(&msg[..5]).unwrap();
        s.sign_update(&msg[5..]).unwrap();
        assert_eq!(s.sign_final().unwrap(), sig);
        let other = Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Ed25519ctx(b"baz")));
        assert_rv!(s.verify(&other, public, &msg, &sig), SignatureInvalid);
        assert_rv!(s.verify(&eddsa(), public, &msg, &sig), SignatureInvalid);
        let mut bad = sig.clone();
        bad[10] ^= 0x20;
        assert_rv!(s.verify(&mech, public, &msg, &bad), SignatureInvalid);
    }
}

/// RFC 8032 §7.3 (Ed25519ph, "abc") through the C API: single-part,
/// multi-part (streamed into SHA-512) and verification; another context,
/// pure Ed25519 and a tampered signature are refused; a context over 255
/// bytes is a parameter error.
#[test]
fn rfc8032_ed25519ph_through_imported_keys() {
    let f = Fixture::new();
    let slot = f.token("ph");
    let s = f.user(slot);
    let sk = unhex("833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42");
    let pk = unhex("ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf");
    let sig = unhex(
        "98a70222f0b8121aa9d30f813d683f809e462b469c7ff87639499bb94e6dae4131f85042463c2a355a2003d062adf5aaa10b8c61e636062aaad11c2a26083406",
    );
    let private = import_private(&s, &sk, PRINTABLE);
    let public = import_public(&s, &pk, OID);
    let ph = Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Ed25519ph(&[])));
    assert_eq!(s.sign(&ph, private, b"abc").unwrap(), sig);
    s.sign_init(&ph, private).unwrap();
    for part in [&b"a"[..], b"b", b"", b"c"] {
        s.sign_update(part).unwrap();
    }
    assert_eq!(s.sign_final().unwrap(), sig);
    s.verify(&ph, public, b"abc", &sig).unwrap();
    s.verify_init(&ph, public).unwrap();
    s.verify_update(b"ab").unwrap();
    s.verify_update(b"c").unwrap();
    s.verify_final(&sig).unwrap();
    // A long message streams: multi-part equals single-part.
    let long: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
    let one = s.sign(&ph, private, &long).unwrap();
    s.sign_init(&ph, private).unwrap();
    for chunk in long.chunks(4096) {
        s.sign_update(chunk).unwrap();
    }
    assert_eq!(s.sign_final().unwrap(), one);
    s.verify(&ph, public, &long, &one).unwrap();
    let ctx = Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Ed25519ph(b"ctx")));
    assert_rv!(s.verify(&ctx, public, b"abc", &sig), SignatureInvalid);
    assert_rv!(s.verify(&eddsa(), public, b"abc", &sig), SignatureInvalid);
    let mut bad = sig.clone();
    bad[63] ^= 1;
    assert_rv!(s.verify(&ph, public, b"abc", &bad), SignatureInvalid);
    let with_ctx = s.sign(&ctx, private, b"abc").unwrap();
    s.verify(&ctx, public, b"abc", &with_ctx).unwrap();
    assert_rv!(s.verify(&ph, public, b"abc", &with_ctx), SignatureInvalid);
    let too_long = [7u8; 256];
    let bad_param = Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Ed25519ph(&too_long)));
    assert_rv!(s.sign(&bad_param, private, b"abc"), MechanismParamInvalid);
    let bad_ctx = Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Ed25519ctx(
        &too_long,
    )));
    assert_rv!(s.sign(&bad_ctx, private, b"abc"), MechanismParamInvalid);
    // phFlag false with an empty context is pure Ed25519.
    let empty_ctx = Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Ed25519ctx(&[])));
    assert_eq!(
        s.sign(&empty_ctx, private, b"abc").unwrap(),
        s.sign(&eddsa(), private, b"abc").unwrap()
    );
}

/// Ed448 is not supported: its OID and name are `CKR_CURVE_NOT_SUPPORTED`
/// for generation and import.
#[test]
fn ed448_is_curve_not_supported() {
    let f = Fixture::new();
    let slot = f.token("ed448");
    let s = f.user(slot);
    for params in [&[0x06, 0x03, 0x2b, 0x65, 0x71][..], b"\x13\x0aedwards448"] {
        assert_rv!(
            s.generate_key_pair(
                &Mechanism::EccEdwardsKeyPairGen,
                &[Attribute::EcParams(params.to_vec())],
                &[Attribute::Sign(true)],
            ),
            CurveNotSupported
        );
        assert_rv!(
            s.create_object(&[
                Attribute::Class(ObjectClass::PUBLIC_KEY),
                Attribute::KeyType(KeyType::EC_EDWARDS),
                Attribute::EcParams(params.to_vec()),
                Attribute::EcPoint(vec![1; 57]),
            ]),
            CurveNotSupported
        );
    }
}
