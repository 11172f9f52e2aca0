//! The functions PKCS#11 3.2 adds, through the built module as consumers
//! reach them (the default interface, "PKCS 11" 3.2): verification with the
//! signature given first (§5.15), session validation flags (§5.6), the
//! asynchronous calls of a synchronous token (§5.20), authenticated key
//! wrapping with AES-GCM (§5.18) and the argument checks of key
//! encapsulation (tests/mlkem has ML-KEM itself).

mod common;

use common::*;
use cryptoki::context::Function;
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::Session;
use cryptoki_sys::*;

fn ed25519_pair(s: &Session) -> (ObjectHandle, ObjectHandle) {
    s.generate_key_pair(
        &Mechanism::EccEdwardsKeyPairGen,
        &[
            Attribute::EcParams(vec![
                0x13, 0x0c, b'e', b'd', b'w', b'a', b'r', b'd', b's', b'2', b'5', b'5', b'1', b'9',
            ]),
            Attribute::Verify(true),
        ],
        &[Attribute::Sign(true)],
    )
    .unwrap()
}

fn eddsa() -> Mechanism<'static> {
    Mechanism::Eddsa(cryptoki::mechanism::eddsa::EddsaParams::new(
        cryptoki::mechanism::eddsa::EddsaSignatureScheme::Pure,
    ))
}

#[test]
fn the_default_interface_is_3_2_with_the_new_functions() {
    let f = Fixture::new();
    for function in [
        Function::VerifySignatureInit,
        Function::VerifySignature,
        Function::EncapsulateKey,
        Function::GetSessionValidationFlags,
    ] {
        assert!(f.p().is_fn_supported(function), "{function:?}");
    }
}

#[test]
fn a_signature_given_first_verifies_its_data_in_one_part_or_many() {
    let f = Fixture::new();
    let s = f.user(f.token("v32"));
    let (public, private) = ed25519_pair(&s);
    let data = b"the data, signed before it is seen".repeat(10);
    let sig = s.sign(&eddsa(), private, &data).unwrap();
    // Single part.
    s.verify_signature_init(&eddsa(), public, &sig).unwrap();
    s.verify_signature(&data).unwrap();
    // Single part, other data: invalid, and the operation ended.
    s.verify_signature_init(&eddsa(), public, &sig).unwrap();
    assert_rv!(s.verify_signature(b"other data"), SignatureInvalid);
    assert_rv!(s.verify_signature(&data), OperationNotInitialized);
    // Several parts (EdDSA buffers them).
    s.verify_signature_init(&eddsa(), public, &sig).unwrap();
    for part in data.chunks(37) {
        s.verify_signature_update(part).unwrap();
    }
    s.verify_signature_final().unwrap();
    // A changed signature fails at the end.
    let mut bad = sig.clone();
    bad[5] ^= 1;
    s.verify_signature_init(&eddsa(), public, &bad).unwrap();
    s.verify_signature_update(&data).unwrap();
    assert_rv!(s.verify_signature_final(), SignatureInvalid);
    assert_rv!(s.verify_signature_final(), OperationNotInitialized);
    // An HMAC key too: every mechanism that verifies.
    let mac_key = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Token(false),
            Attribute::Sign(true),
            Attribute::Verify(true),
            Attribute::Value(vec![9; 32]),
        ])
        .unwrap();
    let mac = s.sign(&Mechanism::Sha256Hmac, mac_key, &data).unwrap();
    s.verify_signature_init(&Mechanism::Sha256Hmac, mac_key, &mac)
        .unwrap();
    s.verify_signature(&data).unwrap();
}

#[test]
fn one_verification_per_session_whichever_way_it_began() {
    let f = Fixture::new();
    let s = f.user(f.token("v32"));
    let (public, private) = ed25519_pair(&s);
    let sig = s.sign(&eddsa(), private, b"m").unwrap();
    s.verify_signature_init(&eddsa(), public, &sig).unwrap();
    // The other kind cannot begin, nor finish what this one began.
    assert_rv!(s.verify_init(&eddsa(), public), OperationActive);
    assert_rv!(s.verify_final(&sig), OperationNotInitialized);
    let l = list_3_2();
    // SAFETY: module calls with valid pointers.
    unsafe {
        // Its state is not saved (the signature is part of it).
        let mut len: CK_ULONG = 0;
        assert_eq!(
            l.C_GetOperationState.unwrap()(s.handle(), std::ptr::null_mut(), &mut len),
            CKR_STATE_UNSAVEABLE
        );
        // C_SessionCancel(CKF_VERIFY) ends it.
        assert_eq!(l.C_SessionCancel.unwrap()(s.handle(), CKF_VERIFY), CKR_OK);
    }
    assert_rv!(s.verify_signature(b"m"), OperationNotInitialized);
    // And the other way round.
    s.verify_init(&eddsa(), public).unwrap();
    assert_rv!(
        s.verify_signature_init(&eddsa(), public, &sig),
        OperationActive
    );
    s.verify_update(b"m").unwrap();
    s.verify_final(&sig).unwrap();
}

#[test]
fn the_key_and_the_signature_length_are_checked_first() {
    let f = Fixture::new();
    let s = f.user(f.token("v32"));
    let (public, private) = s
        .generate_key_pair(
            &Mechanism::EccEdwardsKeyPairGen,
            &[
                Attribute::EcParams(vec![
                    0x13, 0x0c, b'e', b'd', b'w', b'a', b'r', b'd', b's', b'2', b'5', b'5', b'1',
                    b'9',
                ]),
                Attribute::Verify(false),
            ],
            &[Attribute::Sign(true)],
        )
        .unwrap();
    let sig = s.sign(&eddsa(), private, b"m").unwrap();
    assert_rv!(
        s.verify_signature_init(&eddsa(), public, &sig),
        KeyFunctionNotPermitted
    );
    let (public, _) = ed25519_pair(&s);
    let huge = vec![0u8; 64 * 1024 + 1];
    assert_rv!(
        s.verify_signature_init(&eddsa(), public, &huge),
        SignatureLenRange
    );
    // Nothing began.
    assert_rv!(s.verify_signature(b"m"), OperationNotInitialized);
}

#[test]
fn validation_flags_async_calls_and_encapsulation_answer_as_the_spec_says() {
    let f = Fixture::new();
    let s = f.user(f.token("v32"));
    let l = list_3_2();
    let h = s.handle();
    // SAFETY: calls into the module with valid or deliberately bad arguments.
    unsafe {
        let mut flags: CK_FLAGS = 0xff;
        assert_eq!(
            l.C_GetSessionValidationFlags.unwrap()(h, CKS_LAST_VALIDATION_OK, &mut flags),
            CKR_OK
        );
        assert_eq!(
            flags, 0,
            "no operation of this token runs under a validation"
        );
        assert_eq!(
            l.C_GetSessionValidationFlags.unwrap()(h, 7, &mut flags),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            l.C_GetSessionValidationFlags.unwrap()(h, CKS_LAST_VALIDATION_OK, std::ptr::null_mut()),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            l.C_GetSessionValidationFlags.unwrap()(h + 999, CKS_LAST_VALIDATION_OK, &mut flags),
            CKR_SESSION_HANDLE_INVALID
        );
        let mut name = *b"C_Sign\0";
        let mut id: CK_ULONG = 0;
        assert_eq!(
            l.C_AsyncGetID.unwrap()(h, name.as_mut_ptr(), &mut id),
            CKR_FUNCTION_NOT_SUPPORTED
        );
        assert_eq!(
            l.C_AsyncComplete.unwrap()(h, name.as_mut_ptr(), std::ptr::null_mut()),
            CKR_FUNCTION_NOT_SUPPORTED
        );
        assert_eq!(
            l.C_AsyncJoin.unwrap()(h, name.as_mut_ptr(), 1, std::ptr::null_mut(), 0),
            CKR_FUNCTION_NOT_SUPPORTED
        );
        assert_eq!(
            l.C_AsyncJoin.unwrap()(h + 999, name.as_mut_ptr(), 1, std::ptr::null_mut(), 0),
            CKR_SESSION_HANDLE_INVALID
        );
        // A mechanism that exists but does not encapsulate, and CKM_ML_KEM
        // with a handle that is no key (tests/mlkem has the KEM itself).
        for (ty, rv) in [
            (CKM_SHA256, CKR_MECHANISM_INVALID),
            (CKM_ML_KEM, CKR_KEY_HANDLE_INVALID),
        ] {
            let mut mech = CK_MECHANISM {
                mechanism: ty,
                pParameter: std::ptr::null_mut(),
                ulParameterLen: 0,
            };
            let mut len: CK_ULONG = 0;
            let mut key: CK_OBJECT_HANDLE = 0;
            let mut ct = [0u8; 8];
            assert_eq!(
                l.C_EncapsulateKey.unwrap()(
                    h,
                    &mut mech,
                    9999,
                    std::ptr::null_mut(),
                    0,
                    std::ptr::null_mut(),
                    &mut len,
                    &mut key
                ),
                rv
            );
            assert_eq!(
                l.C_DecapsulateKey.unwrap()(
                    h,
                    &mut mech,
                    9999,
                    std::ptr::null_mut(),
                    0,
                    ct.as_mut_ptr(),
                    8,
                    &mut key
                ),
                rv
            );
        }
        assert_eq!(
            l.C_EncapsulateKey.unwrap()(
                h,
                std::ptr::null_mut(),
                1,
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut()
            ),
            CKR_ARGUMENTS_BAD
        );
    }
}

/// An AES key of `value` with the given flags (a session object).
fn aes_key(s: &Session, value: &[u8], extra: &[Attribute]) -> ObjectHandle {
    let mut t = vec![
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::AES),
        Attribute::Token(false),
        Attribute::Value(value.to_vec()),
    ];
    t.extend_from_slice(extra);
    s.create_object(&t).unwrap()
}

/// `C_WrapKeyAuthenticated` / `C_UnwrapKeyAuthenticated` with AES-GCM and
/// the per-message parameters.
struct AuthWrap {
    iv: Vec<u8>,
    tag: [u8; 16],
    generator: CK_GENERATOR_FUNCTION,
}

impl AuthWrap {
    fn new(generator: CK_GENERATOR_FUNCTION) -> Self {
        AuthWrap {
            iv: vec![0; 12],
            tag: [0; 16],
            generator,
        }
    }

    fn params(&mut self) -> CK_GCM_MESSAGE_PARAMS {
        CK_GCM_MESSAGE_PARAMS {
            pIv: self.iv.as_mut_ptr(),
            ulIvLen: self.iv.len() as CK_ULONG,
            ulIvFixedBits: 0,
            ivGenerator: self.generator,
            pTag: self.tag.as_mut_ptr(),
            ulTagBits: 128,
        }
    }

    /// The length query, then the wrap.
    fn wrap(
        &mut self,
        s: &Session,
        wrapping: ObjectHandle,
        key: ObjectHandle,
        aad: &[u8],
    ) -> Result<Vec<u8>, CK_RV> {
        let l = list_3_2();
        let mut p = self.params();
        let mut mech = CK_MECHANISM {
            mechanism: CKM_AES_GCM,
            pParameter: &mut p as *mut _ as *mut std::ffi::c_void,
            ulParameterLen: std::mem::size_of::<CK_GCM_MESSAGE_PARAMS>() as CK_ULONG,
        };
        let mut aad = aad.to_vec();
        let mut len: CK_ULONG = 0;
        // SAFETY: valid pointers for every argument.
        unsafe {
            let f = l.C_WrapKeyAuthenticated.unwrap();
            let mut call = |out: *mut u8, len: &mut CK_ULONG, mech: &mut CK_MECHANISM| {
                f(
                    s.handle(),
                    mech,
                    wrapping.handle(),
                    key.handle(),
                    aad.as_mut_ptr(),
                    aad.len() as CK_ULONG,
                    out,
                    len,
                )
            };
            let rv = call(std::ptr::null_mut(), &mut len, &mut mech);
            if rv != CKR_OK {
                return Err(rv);
            }
            let mut out = vec![0u8; len as usize];
            let rv = call(out.as_mut_ptr(), &mut len, &mut mech);
            if rv != CKR_OK {
                return Err(rv);
            }
            out.truncate(len as usize);
            Ok(out)
        }
    }

    fn unwrap(
        &mut self,
        s: &Session,
        unwrapping: ObjectHandle,
        wrapped: &[u8],
        aad: &[u8],
    ) -> Result<ObjectHandle, CK_RV> {
        let l = list_3_2();
        let mut p = self.params();
        let mut mech = CK_MECHANISM {
            mechanism: CKM_AES_GCM,
            pParameter: &mut p as *mut _ as *mut std::ffi::c_void,
            ulParameterLen: std::mem::size_of::<CK_GCM_MESSAGE_PARAMS>() as CK_ULONG,
        };
        let (mut class, mut kt, mut yes) = (CKO_SECRET_KEY, CKK_AES, CK_TRUE);
        let mut template = [
            CK_ATTRIBUTE {
                type_: CKA_CLASS,
                pValue: &mut class as *mut _ as *mut std::ffi::c_void,
                ulValueLen: std::mem::size_of::<CK_ULONG>() as CK_ULONG,
            },
            CK_ATTRIBUTE {
                type_: CKA_KEY_TYPE,
                pValue: &mut kt as *mut _ as *mut std::ffi::c_void,
                ulValueLen: std::mem::size_of::<CK_ULONG>() as CK_ULONG,
            },
            CK_ATTRIBUTE {
                type_: CKA_EXTRACTABLE,
                pValue: &mut yes as *mut _ as *mut std::ffi::c_void,
                ulValueLen: 1,
            },
        ];
        let mut wrapped = wrapped.to_vec();
        let mut aad = aad.to_vec();
        let mut key: CK_OBJECT_HANDLE = 0;
        // SAFETY: valid pointers for every argument.
        let rv = unsafe {
            l.C_UnwrapKeyAuthenticated.unwrap()(
                s.handle(),
                &mut mech,
                unwrapping.handle(),
                wrapped.as_mut_ptr(),
                wrapped.len() as CK_ULONG,
                template.as_mut_ptr(),
                template.len() as CK_ULONG,
                aad.as_mut_ptr(),
                aad.len() as CK_ULONG,
                &mut key,
            )
        };
        match rv {
            // SAFETY: a handle the module just returned.
            CKR_OK => Ok(unsafe { ObjectHandle::new_from_raw(key) }),
            rv => Err(rv),
        }
    }
}

fn value_of(s: &Session, key: ObjectHandle) -> Vec<u8> {
    match s
        .get_attributes(key, &[cryptoki::object::AttributeType::Value])
        .unwrap()
        .pop()
    {
        Some(Attribute::Value(v)) => v,
        other => panic!("no value: {other:?}"),
    }
}

#[test]
fn authenticated_wrap_binds_the_associated_data_and_generates_the_iv() {
    use aes_gcm::aead::{Aead, KeyInit, Payload};
    let f = Fixture::new();
    let s = f.user(f.token("v32"));
    let kek = [0x42u8; 32];
    let wrapping = aes_key(&s, &kek, &[Attribute::Wrap(true), Attribute::Unwrap(true)]);
    let secret = [0x5au8; 16];
    let target = aes_key(
        &s,
        &secret,
        &[Attribute::Extractable(true), Attribute::Sensitive(false)],
    );
    let mut w = AuthWrap::new(CKG_GENERATE_RANDOM);
    let wrapped = w.wrap(&s, wrapping, target, b"key of tenant 7").unwrap();
    assert_eq!(wrapped.len(), 16, "the ciphertext alone");
    assert_ne!(w.iv, [0; 12], "the token generated the IV");
    // An independent AES-GCM (RustCrypto) opens it with the same IV, tag
    // and associated data.
    let gcm = aes_gcm::Aes256Gcm::new_from_slice(&kek).unwrap();
    let mut sealed = wrapped.clone();
    sealed.extend_from_slice(&w.tag);
    let opened = gcm
        .decrypt(
            &aes_gcm::Nonce::try_from(w.iv.as_slice()).unwrap(),
            Payload {
                msg: &sealed,
                aad: b"key of tenant 7",
            },
        )
        .unwrap();
    assert_eq!(opened, secret);
    // The token unwraps it with the same associated data only.
    let back = w
        .unwrap(&s, wrapping, &wrapped, b"key of tenant 7")
        .unwrap();
    assert_eq!(value_of(&s, back), secret);
    assert_eq!(
        w.unwrap(&s, wrapping, &wrapped, b"key of tenant 8"),
        Err(CKR_WRAPPED_KEY_INVALID)
    );
    let mut bad = wrapped.clone();
    bad[0] ^= 1;
    assert_eq!(
        w.unwrap(&s, wrapping, &bad, b"key of tenant 7"),
        Err(CKR_WRAPPED_KEY_INVALID)
    );
    // A counter generator never repeats an IV under one key value.
    let mut c = AuthWrap::new(CKG_GENERATE_COUNTER);
    c.wrap(&s, wrapping, target, b"").unwrap();
    let first = c.iv.clone();
    c.iv = vec![0; 12];
    c.wrap(&s, wrapping, target, b"").unwrap();
    assert_ne!(first, c.iv);
}

#[test]
fn authenticated_wrap_keeps_every_rule_of_c_wrapkey() {
    let f = Fixture::new();
    let s = f.user(f.token("v32"));
    let wrapping = aes_key(
        &s,
        &[1; 32],
        &[Attribute::Wrap(true), Attribute::Unwrap(true)],
    );
    // An unextractable key is not wrapped.
    let kept = aes_key(&s, &[2; 16], &[Attribute::Extractable(false)]);
    let mut w = AuthWrap::new(CKG_GENERATE_RANDOM);
    assert_eq!(w.wrap(&s, wrapping, kept, b""), Err(CKR_KEY_UNEXTRACTABLE));
    // A key that may not wrap does not.
    let no_wrap = aes_key(&s, &[3; 32], &[Attribute::Wrap(false)]);
    let target = aes_key(&s, &[4; 16], &[Attribute::Extractable(true)]);
    assert_eq!(
        w.wrap(&s, no_wrap, target, b""),
        Err(CKR_KEY_FUNCTION_NOT_PERMITTED)
    );
    // Wrap separation (Clulow 2003 §2.1): a sensitive key does not go
    // under a key that could also decrypt the blob (with
    // C_DecryptMessage here).
    let both = aes_key(
        &s,
        &[5; 32],
        &[Attribute::Wrap(true), Attribute::Decrypt(true)],
    );
    let sensitive = aes_key(
        &s,
        &[6; 16],
        &[Attribute::Extractable(true), Attribute::Sensitive(true)],
    );
    assert_eq!(w.wrap(&s, both, sensitive, b""), Err(CKR_KEY_NOT_WRAPPABLE));
    // A too-short IV for the generator is a bad parameter.
    let mut short = AuthWrap::new(CKG_GENERATE_RANDOM);
    short.iv = vec![0; 4];
    assert_eq!(
        short.wrap(&s, wrapping, target, b""),
        Err(CKR_MECHANISM_PARAM_INVALID)
    );
}
