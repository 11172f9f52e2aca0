//! Message-based encryption and decryption (base spec 3.0 §5.19 / §5.20)
//! with `CKM_AES_GCM` and `CK_GCM_MESSAGE_PARAMS`, through the raw 3.0
//! function list (`C_GetInterface("PKCS 11", 3.0)`).

#[path = "../common/mod.rs"]
mod common;

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::Session;
use cryptoki_sys::*;
use std::collections::HashSet;
use std::ptr::null_mut;

/// The 3.0 function list of the loaded module.
fn list30() -> &'static CK_FUNCTION_LIST_3_0 {
    // SAFETY: loading the module under test (the same instance cryptoki
    // uses) and asking for its 3.0 interface with valid pointers; the
    // library stays loaded for the process.
    unsafe {
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
    }
}

fn aes_key(s: &Session, value: &[u8]) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::AES),
        Attribute::Value(value.to_vec()),
        Attribute::Encrypt(true),
        Attribute::Decrypt(true),
        Attribute::Sensitive(true),
    ])
    .unwrap()
}

fn init(l: &CK_FUNCTION_LIST_3_0, s: &Session, key: ObjectHandle, encrypt: bool) -> CK_RV {
    let mut mech = CK_MECHANISM {
        mechanism: CKM_AES_GCM,
        pParameter: null_mut(),
        ulParameterLen: 0,
    };
    // SAFETY: valid mechanism.
    unsafe {
        if encrypt {
            l.C_MessageEncryptInit.unwrap()(s.handle(), &mut mech, key.handle())
        } else {
            l.C_MessageDecryptInit.unwrap()(s.handle(), &mut mech, key.handle())
        }
    }
}

/// One `C_EncryptMessage` / `C_DecryptMessage`; `out` `None` is a size
/// query. Returns the rv and the length reported.
#[allow(clippy::too_many_arguments)]
fn message(
    l: &CK_FUNCTION_LIST_3_0,
    s: &Session,
    encrypt: bool,
    params: &mut CK_GCM_MESSAGE_PARAMS,
    aad: &[u8],
    input: &[u8],
    out: Option<&mut [u8]>,
) -> (CK_RV, CK_ULONG) {
    let (p, mut len) = match out {
        Some(o) => (o.as_mut_ptr(), o.len() as CK_ULONG),
        None => (null_mut(), 0),
    };
    let f = if encrypt {
        l.C_EncryptMessage.unwrap()
    } else {
        l.C_DecryptMessage.unwrap()
    };
    // SAFETY: every buffer valid for the length given.
    let rv = unsafe {
        f(
            s.handle(),
            params as *mut _ as *mut _,
            std::mem::size_of::<CK_GCM_MESSAGE_PARAMS>() as CK_ULONG,
            if aad.is_empty() {
                null_mut()
            } else {
                aad.as_ptr() as *mut _
            },
            aad.len() as CK_ULONG,
            if input.is_empty() {
                null_mut()
            } else {
                input.as_ptr() as *mut _
            },
            input.len() as CK_ULONG,
            p,
            &mut len,
        )
    };
    (rv, len)
}

fn params(
    iv: &mut [u8],
    fixed: CK_ULONG,
    generator: CK_ULONG,
    tag: &mut [u8],
) -> CK_GCM_MESSAGE_PARAMS {
    CK_GCM_MESSAGE_PARAMS {
        pIv: iv.as_mut_ptr(),
        ulIvLen: iv.len() as CK_ULONG,
        ulIvFixedBits: fixed,
        ivGenerator: generator,
        pTag: tag.as_mut_ptr(),
        ulTagBits: tag.len() as CK_ULONG * 8,
    }
}

const KEY: &str = "feffe9928665731c6d6a8f9467308308";
const IV: &str = "cafebabefacedbaddecaf888";
const P3: &str = "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255";
const C3: &str = "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985";
const T3: &str = "4d5c2af327cd64a62cf35abd2ba6fab4";
const A4: &str = "feedfacedeadbeeffeedfacedeadbeefabaddad2";
const T4: &str = "5bc94fbc3221a5db94fae95ae7121a47";

/// GCM spec test cases 3 and 4 (AES-128) through `C_EncryptMessage` with
/// the caller's IV, then back through `C_DecryptMessage`; tampered tag,
/// AAD or ciphertext give `CKR_ENCRYPTED_DATA_INVALID` and write nothing.
#[test]
fn known_answers_and_tamper() {
    let f = Fixture::new();
    let s = f.user(f.token("msg"));
    let key = aes_key(&s, &unhex(KEY));
    let l = list30();
    assert_eq!(init(l, &s, key, true), CKR_OK);
    assert_eq!(init(l, &s, key, true), CKR_OPERATION_ACTIVE);
    assert_eq!(init(l, &s, key, false), CKR_OK);
    let p4 = &unhex(P3)[..60];
    for (aad, plain, ct, tag_hex) in [
        (vec![], unhex(P3), unhex(C3), T3),
        (unhex(A4), p4.to_vec(), unhex(C3)[..60].to_vec(), T4),
    ] {
        let mut iv = unhex(IV);
        let mut tag = [0u8; 16];
        let mut p = params(&mut iv, 0, CKG_NO_GENERATE, &mut tag);
        // Size query, then too small: neither ends the operation.
        assert_eq!(
            message(l, &s, true, &mut p, &aad, &plain, None),
            (CKR_OK, plain.len() as CK_ULONG)
        );
        let mut small = vec![0u8; plain.len() - 1];
        assert_eq!(
            message(l, &s, true, &mut p, &aad, &plain, Some(&mut small)),
            (CKR_BUFFER_TOO_SMALL, plain.len() as CK_ULONG)
        );
        let mut out = vec![0u8; plain.len()];
        assert_eq!(
            message(l, &s, true, &mut p, &aad, &plain, Some(&mut out)).0,
            CKR_OK
        );
        assert_eq!(out, ct);
        assert_eq!(tag.to_vec(), unhex(tag_hex));
        assert_eq!(iv, unhex(IV), "CKG_NO_GENERATE keeps the caller's IV");

        let mut back = vec![0u8; ct.len()];
        let mut p = params(&mut iv, 0, CKG_NO_GENERATE, &mut tag);
        assert_eq!(
            message(l, &s, false, &mut p, &aad, &ct, Some(&mut back)).0,
            CKR_OK
        );
        assert_eq!(back, plain);

        // Tampered tag, AAD, ciphertext.
        let mut bad_tag = tag;
        bad_tag[3] ^= 1;
        let mut bad_aad = aad.clone();
        bad_aad.push(0);
        let mut bad_ct = ct.clone();
        bad_ct[7] ^= 0x80;
        for (t, a, c) in [
            (bad_tag, aad.clone(), ct.clone()),
            (tag, bad_aad, ct.clone()),
            (tag, aad.clone(), bad_ct),
        ] {
            let mut t = t;
            let mut out = vec![0xeeu8; c.len()];
            let mut p = params(&mut iv, 0, CKG_NO_GENERATE, &mut t);
            assert_eq!(
                message(l, &s, false, &mut p, &a, &c, Some(&mut out)).0,
                CKR_ENCRYPTED_DATA_INVALID
            );
            assert!(out.iter().all(|&b| b == 0xee), "no plaintext released");
        }
    }
    // Wrong parameter size / tag size.
    let mut iv = unhex(IV);
    let mut tag = [0u8; 16];
    let mut p = params(&mut iv, 0, CKG_NO_GENERATE, &mut tag);
    let mut out = [0u8; 4];
    let mut len: CK_ULONG = 4;
    // SAFETY: valid buffers; the parameter length is deliberately short.
    let rv = unsafe {
        l.C_EncryptMessage.unwrap()(
            s.handle(),
            &mut p as *mut _ as *mut _,
            8,
            null_mut(),
            0,
            out.as_mut_ptr(),
            4,
            out.as_mut_ptr(),
            &mut len,
        )
    };
    assert_eq!(rv, CKR_MECHANISM_PARAM_INVALID);
    p.ulTagBits = 64;
    assert_eq!(
        message(l, &s, true, &mut p, &[], &[1, 2], Some(&mut out)).0,
        CKR_MECHANISM_PARAM_INVALID
    );
    // SAFETY: no pointers.
    unsafe {
        assert_eq!(l.C_MessageEncryptFinal.unwrap()(s.handle()), CKR_OK);
        assert_eq!(
            l.C_MessageEncryptFinal.unwrap()(s.handle()),
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(l.C_MessageDecryptFinal.unwrap()(s.handle()), CKR_OK);
    }
    let mut p = params(&mut iv, 0, CKG_NO_GENERATE, &mut tag);
    assert_eq!(
        message(l, &s, true, &mut p, &[], &[1, 2], Some(&mut out)).0,
        CKR_OPERATION_NOT_INITIALIZED
    );
}

/// `CKG_GENERATE_COUNTER`: 1000 distinct IVs, the fixed prefix kept, each
/// message decrypts; `CKG_GENERATE_RANDOM`: distinct IVs with the prefix.
/// A `C_EncryptInit` operation runs alongside, unaffected.
#[test]
fn generated_ivs() {
    let f = Fixture::new();
    let s = f.user(f.token("msg"));
    let key = aes_key(&s, &unhex(KEY));
    let l = list30();
    // A classic GCM encryption started before, finished after.
    let mut gp = unhex(IV);
    let mut gparams = CK_GCM_PARAMS {
        pIv: gp.as_mut_ptr(),
        ulIvLen: 12,
        ulIvBits: 96,
        pAAD: null_mut(),
        ulAADLen: 0,
        ulTagBits: 128,
    };
    let mut gmech = CK_MECHANISM {
        mechanism: CKM_AES_GCM,
        pParameter: &mut gparams as *mut _ as *mut _,
        ulParameterLen: std::mem::size_of::<CK_GCM_PARAMS>() as CK_ULONG,
    };
    // SAFETY: valid mechanism.
    assert_eq!(
        unsafe { l.C_EncryptInit.unwrap()(s.handle(), &mut gmech, key.handle()) },
        CKR_OK
    );

    assert_eq!(init(l, &s, key, true), CKR_OK);
    assert_eq!(init(l, &s, key, false), CKR_OK);
    for generator in [CKG_GENERATE_COUNTER, CKG_GENERATE_RANDOM] {
        let mut seen = HashSet::new();
        for i in 0..1000u32 {
            let plain = i.to_be_bytes();
            let mut iv = [0u8; 12];
            iv[..4].copy_from_slice(&[0xa5, 0x5a, 0x0f, 0xf0]);
            let mut tag = [0u8; 16];
            let mut p = params(&mut iv, 32, generator, &mut tag);
            let mut ct = [0u8; 4];
            assert_eq!(
                message(l, &s, true, &mut p, b"ad", &plain, Some(&mut ct)).0,
                CKR_OK
            );
            assert_eq!(&iv[..4], &[0xa5, 0x5a, 0x0f, 0xf0], "fixed part kept");
            assert!(seen.insert(iv), "IV repeated");
            let mut back = [0u8; 4];
            let mut p = params(&mut iv, 32, generator, &mut tag);
            assert_eq!(
                message(l, &s, false, &mut p, b"ad", &ct, Some(&mut back)).0,
                CKR_OK
            );
            assert_eq!(back, plain);
        }
        // Fewer than 32 counter bits is refused.
        let mut iv = [0u8; 12];
        let mut tag = [0u8; 16];
        let mut p = params(&mut iv, 96, generator, &mut tag);
        assert_eq!(
            message(l, &s, true, &mut p, &[], &[1], Some(&mut [0u8; 1])).0,
            CKR_MECHANISM_PARAM_INVALID
        );
    }
    // The classic operation is still there and gives test case 3.
    let plain = unhex(P3);
    let mut out = vec![0u8; plain.len() + 16];
    let mut len = out.len() as CK_ULONG;
    // SAFETY: valid buffers.
    let rv = unsafe {
        l.C_Encrypt.unwrap()(
            s.handle(),
            plain.as_ptr() as *mut _,
            plain.len() as CK_ULONG,
            out.as_mut_ptr(),
            &mut len,
        )
    };
    assert_eq!(rv, CKR_OK);
    assert_eq!(out[..plain.len()], unhex(C3)[..]);
    // C_SessionCancel ends exactly the message operations named.
    // SAFETY: no pointers.
    unsafe {
        assert_eq!(
            l.C_SessionCancel.unwrap()(s.handle(), CKF_MESSAGE_ENCRYPT),
            CKR_OK
        );
        assert_eq!(
            l.C_MessageEncryptFinal.unwrap()(s.handle()),
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(l.C_MessageDecryptFinal.unwrap()(s.handle()), CKR_OK);
    }
}

/// Only `CKM_AES_GCM` without parameter; a key without `CKA_ENCRYPT` is refused.
#[test]
fn init_checks() {
    let f = Fixture::new();
    let s = f.user(f.token("msg"));
    let l = list30();
    let no_encrypt = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::AES),
            Attribute::Value(unhex(KEY)),
            Attribute::Encrypt(false),
        ])
        .unwrap();
    assert_eq!(
        init(l, &s, no_encrypt, true),
        CKR_KEY_FUNCTION_NOT_PERMITTED
    );
    let key = aes_key(&s, &unhex(KEY));
    let mut mech = CK_MECHANISM {
        mechanism: CKM_AES_CBC,
        pParameter: null_mut(),
        ulParameterLen: 0,
    };
    // SAFETY: valid or deliberately null pointers.
    unsafe {
        assert_eq!(
            l.C_MessageEncryptInit.unwrap()(s.handle(), &mut mech, key.handle()),
            CKR_MECHANISM_INVALID
        );
        let mut junk = [0u8; 8];
        mech.mechanism = CKM_AES_GCM;
        mech.pParameter = junk.as_mut_ptr() as *mut _;
        mech.ulParameterLen = 8;
        assert_eq!(
            l.C_MessageEncryptInit.unwrap()(s.handle(), &mut mech, key.handle()),
            CKR_MECHANISM_PARAM_INVALID
        );
        assert_eq!(
            l.C_MessageEncryptInit.unwrap()(s.handle(), null_mut(), key.handle()),
            CKR_ARGUMENTS_BAD
        );
        // A CK_GCM_MESSAGE_PARAMS at init (how the cryptoki crate passes
        // it) is accepted; the per-message parameters still govern.
        let mut at_init = CK_GCM_MESSAGE_PARAMS::default();
        mech.pParameter = (&mut at_init as *mut CK_GCM_MESSAGE_PARAMS).cast();
        mech.ulParameterLen = std::mem::size_of::<CK_GCM_MESSAGE_PARAMS>() as CK_ULONG;
        assert_eq!(
            l.C_MessageEncryptInit.unwrap()(s.handle(), &mut mech, key.handle()),
            CKR_OK
        );
        assert_eq!(l.C_MessageEncryptFinal.unwrap()(s.handle()), CKR_OK);
    }
}

fn sign_init(
    l: &CK_FUNCTION_LIST_3_0,
    s: &Session,
    ty: CK_MECHANISM_TYPE,
    key: ObjectHandle,
    sign: bool,
) -> CK_RV {
    let mut mech = CK_MECHANISM {
        mechanism: ty,
        pParameter: null_mut(),
        ulParameterLen: 0,
    };
    // SAFETY: valid mechanism.
    unsafe {
        if sign {
            l.C_MessageSignInit.unwrap()(s.handle(), &mut mech, key.handle())
        } else {
            l.C_MessageVerifyInit.unwrap()(s.handle(), &mut mech, key.handle())
        }
    }
}

fn sign_message(
    l: &CK_FUNCTION_LIST_3_0,
    s: &Session,
    data: &[u8],
    out: Option<&mut [u8]>,
) -> (CK_RV, CK_ULONG) {
    let (p, mut len) = match out {
        Some(o) => (o.as_mut_ptr(), o.len() as CK_ULONG),
        None => (null_mut(), 0),
    };
    // SAFETY: buffers valid for their lengths.
    let rv = unsafe {
        l.C_SignMessage.unwrap()(
            s.handle(),
            null_mut(),
            0,
            data.as_ptr() as *mut _,
            data.len() as CK_ULONG,
            p,
            &mut len,
        )
    };
    (rv, len)
}

fn verify_message(l: &CK_FUNCTION_LIST_3_0, s: &Session, data: &[u8], sig: &[u8]) -> CK_RV {
    // SAFETY: buffers valid for their lengths.
    unsafe {
        l.C_VerifyMessage.unwrap()(
            s.handle(),
            null_mut(),
            0,
            data.as_ptr() as *mut _,
            data.len() as CK_ULONG,
            sig.as_ptr() as *mut _,
            sig.len() as CK_ULONG,
        )
    }
}

/// RFC 4231 test case 2 (HMAC-SHA-256) through `C_SignMessage` equals the
/// vector and `C_Sign`; `C_VerifyMessage` accepts it and rejects a changed
/// MAC; several messages in one operation; mechanism-info flags.
#[test]
fn hmac_message_sign_and_verify() {
    let f = Fixture::new();
    let slot = f.token("msg");
    let s = f.user(slot);
    let l = list30();
    let key = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Value(b"Jefe".to_vec()),
            Attribute::Sign(true),
            Attribute::Verify(true),
        ])
        .unwrap();
    let data = b"what do ya want for nothing?";
    let expected = unhex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    assert_eq!(s.sign(&Mechanism::Sha256Hmac, key, data).unwrap(), expected);
    assert_eq!(sign_init(l, &s, CKM_SHA256_HMAC, key, true), CKR_OK);
    assert_eq!(
        sign_init(l, &s, CKM_SHA256_HMAC, key, true),
        CKR_OPERATION_ACTIVE
    );
    assert_eq!(sign_message(l, &s, data, None), (CKR_OK, 32));
    let mut small = [0u8; 31];
    assert_eq!(
        sign_message(l, &s, data, Some(&mut small)),
        (CKR_BUFFER_TOO_SMALL, 32)
    );
    for _ in 0..3 {
        let mut mac = [0u8; 32];
        assert_eq!(sign_message(l, &s, data, Some(&mut mac)), (CKR_OK, 32));
        assert_eq!(mac.to_vec(), expected);
    }
    assert_eq!(sign_init(l, &s, CKM_SHA256_HMAC, key, false), CKR_OK);
    assert_eq!(verify_message(l, &s, data, &expected), CKR_OK);
    let mut bad = expected.clone();
    bad[0] ^= 1;
    assert_eq!(verify_message(l, &s, data, &bad), CKR_SIGNATURE_INVALID);
    assert_eq!(
        verify_message(l, &s, b"other", &expected),
        CKR_SIGNATURE_INVALID
    );
    assert_eq!(
        verify_message(l, &s, data, &expected),
        CKR_OK,
        "operation survives"
    );
    // SAFETY: no pointers.
    unsafe {
        assert_eq!(l.C_MessageSignFinal.unwrap()(s.handle()), CKR_OK);
        assert_eq!(l.C_MessageVerifyFinal.unwrap()(s.handle()), CKR_OK);
        assert_eq!(
            l.C_MessageVerifyFinal.unwrap()(s.handle()),
            CKR_OPERATION_NOT_INITIALIZED
        );
    }
    assert_eq!(
        sign_message(l, &s, data, Some(&mut [0u8; 32])).0,
        CKR_OPERATION_NOT_INITIALIZED
    );
    // CMAC has no message signing.
    assert_eq!(
        sign_init(l, &s, CKM_AES_CMAC, key, true),
        CKR_MECHANISM_INVALID
    );

    let flags = |m| {
        let mut info = CK_MECHANISM_INFO::default();
        // SAFETY: valid out-pointer.
        assert_eq!(
            unsafe { l.C_GetMechanismInfo.unwrap()(slot.id(), m, &mut info) },
            CKR_OK
        );
        info.flags
    };
    assert_ne!(flags(CKM_SHA256_HMAC) & CKF_MESSAGE_SIGN, 0);
    assert_ne!(flags(CKM_SHA512_HMAC_GENERAL) & CKF_MESSAGE_VERIFY, 0);
    assert_ne!(flags(CKM_EDDSA) & CKF_MESSAGE_SIGN, 0);
    let gcm = flags(CKM_AES_GCM);
    assert_eq!(
        gcm & (CKF_MESSAGE_ENCRYPT | CKF_MESSAGE_DECRYPT),
        CKF_MESSAGE_ENCRYPT | CKF_MESSAGE_DECRYPT
    );
    assert_eq!(gcm & CKF_MESSAGE_SIGN, 0);
}

/// Ed25519 through `C_SignMessage` verifies with `C_Verify`; a `C_Sign`
/// signature verifies through `C_VerifyMessage`; a changed one does not.
#[test]
fn eddsa_message_sign_and_verify() {
    let f = Fixture::new();
    let s = f.user(f.token("msg"));
    let l = list30();
    let (public, private) = s
        .generate_key_pair(
            &Mechanism::EccEdwardsKeyPairGen,
            &[
                Attribute::EcParams(b"\x13\x0cedwards25519".to_vec()),
                Attribute::Verify(true),
            ],
            &[Attribute::Sign(true)],
        )
        .unwrap();
    assert_eq!(sign_init(l, &s, CKM_EDDSA, private, true), CKR_OK);
    assert_eq!(sign_init(l, &s, CKM_EDDSA, public, false), CKR_OK);
    for msg in [&b""[..], b"abc", &[7u8; 1000]] {
        let mut sig = [0u8; 64];
        assert_eq!(sign_message(l, &s, msg, Some(&mut sig)), (CKR_OK, 64));
        s.verify(
            &Mechanism::Eddsa(cryptoki::mechanism::eddsa::EddsaParams::new(
                cryptoki::mechanism::eddsa::EddsaSignatureScheme::Pure,
            )),
            public,
            msg,
            &sig,
        )
        .unwrap();
        assert_eq!(verify_message(l, &s, msg, &sig), CKR_OK);
        let mut bad = sig;
        bad[10] ^= 4;
        assert_eq!(verify_message(l, &s, msg, &bad), CKR_SIGNATURE_INVALID);
    }
}

/// `C_SignMessageBegin` / `Next` in parts gives the single-part MAC;
/// state errors; `C_VerifyMessageBegin` / `Next` accepts it and rejects a
/// changed one.
#[test]
fn multipart_message_sign() {
    let f = Fixture::new();
    let s = f.user(f.token("msg"));
    let l = list30();
    let key = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Value(b"Jefe".to_vec()),
            Attribute::Sign(true),
            Attribute::Verify(true),
        ])
        .unwrap();
    let expected = unhex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    let h = s.handle();
    assert_eq!(sign_init(l, &s, CKM_SHA256_HMAC, key, true), CKR_OK);
    assert_eq!(sign_init(l, &s, CKM_SHA256_HMAC, key, false), CKR_OK);
    // SAFETY: every buffer valid for its length.
    unsafe {
        let begin = l.C_SignMessageBegin.unwrap();
        let next = l.C_SignMessageNext.unwrap();
        let mut part = *b"what do ya ";
        assert_eq!(
            next(
                h,
                null_mut(),
                0,
                part.as_mut_ptr(),
                11,
                null_mut(),
                null_mut()
            ),
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(begin(h, null_mut(), 0), CKR_OK);
        assert_eq!(begin(h, null_mut(), 0), CKR_OPERATION_ACTIVE);
        assert_eq!(
            sign_message(l, &s, b"x", Some(&mut [0u8; 32])).0,
            CKR_OPERATION_ACTIVE
        );
        assert_eq!(
            next(
                h,
                null_mut(),
                0,
                part.as_mut_ptr(),
                11,
                null_mut(),
                null_mut()
            ),
            CKR_OK
        );
        let mut last = *b"want for nothing?";
        let mut len: CK_ULONG = 0;
        assert_eq!(
            next(
                h,
                null_mut(),
                0,
                last.as_mut_ptr(),
                17,
                null_mut(),
                &mut len
            ),
            CKR_OK
        );
        assert_eq!(len, 32);
        let mut mac = [0u8; 32];
        len = 31;
        assert_eq!(
            next(
                h,
                null_mut(),
                0,
                last.as_mut_ptr(),
                17,
                mac.as_mut_ptr(),
                &mut len
            ),
            CKR_BUFFER_TOO_SMALL
        );
        len = 32;
        assert_eq!(
            next(
                h,
                null_mut(),
                0,
                last.as_mut_ptr(),
                17,
                mac.as_mut_ptr(),
                &mut len
            ),
            CKR_OK
        );
        assert_eq!(mac.to_vec(), expected);
        assert_eq!(
            next(
                h,
                null_mut(),
                0,
                last.as_mut_ptr(),
                17,
                mac.as_mut_ptr(),
                &mut len
            ),
            CKR_OPERATION_NOT_INITIALIZED,
            "the message ended"
        );

        let vbegin = l.C_VerifyMessageBegin.unwrap();
        let vnext = l.C_VerifyMessageNext.unwrap();
        for (sig, want) in [
            (expected.clone(), CKR_OK),
            ([0u8; 32].to_vec(), CKR_SIGNATURE_INVALID),
        ] {
            assert_eq!(vbegin(h, null_mut(), 0), CKR_OK);
            assert_eq!(
                vnext(h, null_mut(), 0, part.as_mut_ptr(), 11, null_mut(), 0),
                CKR_OK
            );
            assert_eq!(
                vnext(
                    h,
                    null_mut(),
                    0,
                    last.as_mut_ptr(),
                    17,
                    sig.as_ptr() as *mut _,
                    32
                ),
                want
            );
        }
    }
}

/// McGrew–Viega test case 6: test case 4's key, plaintext and AAD under a
/// 60-byte IV (the GHASH-derived `J0` path).
const IV6: &str = "9313225df88406e555909c5aff5269aa6a7a9538534f7da1e4c303d2a318a728c3c0c95156809539fcf0e2429a6b525416aedbf5a0de6a57a637b39b";
const C6: &str = "8ce24998625615b603a033aca13fb894be9112a5c3a211a8ba262a3cca7e2ca701e4a9a4fba43c90ccdcb281d48c7c6fd62875d2aca417034c34aee5";
const T6: &str = "619cc5aefffe0bfa462af43c1699d050";

fn ptr_or_null(b: &[u8]) -> *mut u8 {
    if b.is_empty() {
        null_mut()
    } else {
        b.as_ptr() as *mut u8
    }
}

/// `C_EncryptMessageBegin` / `C_DecryptMessageBegin`.
fn begin(
    l: &CK_FUNCTION_LIST_3_0,
    s: &Session,
    encrypt: bool,
    params: &mut CK_GCM_MESSAGE_PARAMS,
    aad: &[u8],
) -> CK_RV {
    let f = if encrypt {
        l.C_EncryptMessageBegin.unwrap()
    } else {
        l.C_DecryptMessageBegin.unwrap()
    };
    // SAFETY: every buffer valid for the length given.
    unsafe {
        f(
            s.handle(),
            params as *mut _ as *mut _,
            std::mem::size_of::<CK_GCM_MESSAGE_PARAMS>() as CK_ULONG,
            ptr_or_null(aad),
            aad.len() as CK_ULONG,
        )
    }
}

/// `C_EncryptMessageNext` / `C_DecryptMessageNext`; `params` `None` passes
/// NULL, `out` `None` is a size query. Returns the rv and the length
/// reported.
fn next(
    l: &CK_FUNCTION_LIST_3_0,
    s: &Session,
    encrypt: bool,
    params: Option<&mut CK_GCM_MESSAGE_PARAMS>,
    input: &[u8],
    out: Option<&mut [u8]>,
    last: bool,
) -> (CK_RV, CK_ULONG) {
    let (p, mut len) = match out {
        Some(o) => (o.as_mut_ptr(), o.len() as CK_ULONG),
        None => (null_mut(), 0),
    };
    let (pp, pl) = match params {
        Some(p) => (
            p as *mut CK_GCM_MESSAGE_PARAMS as *mut _,
            std::mem::size_of::<CK_GCM_MESSAGE_PARAMS>() as CK_ULONG,
        ),
        None => (null_mut(), 0),
    };
    let f = if encrypt {
        l.C_EncryptMessageNext.unwrap()
    } else {
        l.C_DecryptMessageNext.unwrap()
    };
    let flags = if last { CKF_END_OF_MESSAGE } else { 0 };
    // SAFETY: every buffer valid for the length given.
    let rv = unsafe {
        f(
            s.handle(),
            pp,
            pl,
            ptr_or_null(input),
            input.len() as CK_ULONG,
            p,
            &mut len,
            flags,
        )
    };
    (rv, len)
}

/// One whole multi-part message: Begin, a Next per part of the lengths
/// `parts` (the last with `CKF_END_OF_MESSAGE`), each intermediate one
/// checked to output nothing (into a buffer that must stay untouched), the
/// last after a size query. Returns the output, or the failing rv.
#[allow(clippy::too_many_arguments)]
fn multipart(
    l: &CK_FUNCTION_LIST_3_0,
    s: &Session,
    encrypt: bool,
    iv: &mut [u8],
    generator: CK_ULONG,
    tag: &mut [u8],
    aad: &[u8],
    input: &[u8],
    parts: &[usize],
) -> Result<Vec<u8>, CK_RV> {
    assert_eq!(parts.iter().sum::<usize>(), input.len());
    let fixed = if generator == CKG_NO_GENERATE { 0 } else { 32 };
    let mut p = params(iv, fixed, generator, tag);
    let rv = begin(l, s, encrypt, &mut p, aad);
    if rv != CKR_OK {
        return Err(rv);
    }
    let mut at = 0;
    for (i, &n) in parts.iter().enumerate() {
        let part = &input[at..at + n];
        at += n;
        if i + 1 < parts.len() {
            let mut untouched = vec![0xeeu8; 80];
            // Alternately with and without the parameters.
            let pp = if i % 2 == 0 { Some(&mut p) } else { None };
            let (rv, len) = next(l, s, encrypt, pp, part, Some(&mut untouched), false);
            if rv != CKR_OK {
                return Err(rv);
            }
            assert_eq!(len, 0, "an intermediate part outputs nothing");
            assert!(untouched.iter().all(|&b| b == 0xee));
        } else {
            let (rv, need) = next(l, s, encrypt, Some(&mut p), part, None, true);
            if rv != CKR_OK {
                return Err(rv);
            }
            let mut out = vec![0xeeu8; need as usize];
            let (rv, len) = next(l, s, encrypt, Some(&mut p), part, Some(&mut out), true);
            if rv != CKR_OK {
                assert!(out.iter().all(|&b| b == 0xee), "nothing released");
                return Err(rv);
            }
            out.truncate(len as usize);
            return Ok(out);
        }
    }
    unreachable!("parts is never empty")
}

const SPLITS: &[&[usize]] = &[
    &[60],
    &[0, 60],
    &[60, 0],
    &[1, 59],
    &[13, 0, 17, 30],
    &[16, 16, 16, 12],
    &[0, 0, 7, 0, 53, 0],
];

/// Multi-part encryption, however the message is split (empty parts
/// included), gives GCM test cases 4 (96-bit IV) and 6 (60-byte IV) and
/// the same ciphertext and tag as `C_EncryptMessage`, also with a 96-bit
/// tag; multi-part decryption of those ciphertexts gives the plaintext.
#[test]
fn multipart_matches_single_part_and_known_answers() {
    let f = Fixture::new();
    let s = f.user(f.token("msg"));
    let key = aes_key(&s, &unhex(KEY));
    let l = list30();
    assert_eq!(init(l, &s, key, true), CKR_OK);
    assert_eq!(init(l, &s, key, false), CKR_OK);
    let plain = &unhex(P3)[..60];
    let aad = unhex(A4);
    for (iv_hex, ct_hex, tag_hex) in [(IV, &C3[..120], T4), (IV6, C6, T6)] {
        for tag_len in [16usize, 12] {
            let expected_tag = &unhex(tag_hex)[..tag_len];
            // Single-part reference.
            let mut iv = unhex(iv_hex);
            let mut tag = vec![0u8; tag_len];
            let mut p = params(&mut iv, 0, CKG_NO_GENERATE, &mut tag);
            let mut single = vec![0u8; 60];
            assert_eq!(
                message(l, &s, true, &mut p, &aad, plain, Some(&mut single)).0,
                CKR_OK
            );
            assert_eq!(single, unhex(ct_hex));
            assert_eq!(tag, expected_tag);
            for parts in SPLITS {
                let mut iv = unhex(iv_hex);
                let mut tag = vec![0u8; tag_len];
                let ct = multipart(
                    l,
                    &s,
                    true,
                    &mut iv,
                    CKG_NO_GENERATE,
                    &mut tag,
                    &aad,
                    plain,
                    parts,
                )
                .unwrap();
                assert_eq!(ct, single, "parts {parts:?}");
                assert_eq!(tag, expected_tag, "parts {parts:?}");
                assert_eq!(iv, unhex(iv_hex), "CKG_NO_GENERATE keeps the IV");
                let back = multipart(
                    l,
                    &s,
                    false,
                    &mut iv,
                    CKG_NO_GENERATE,
                    &mut tag,
                    &aad,
                    &single,
                    parts,
                )
                .unwrap();
                assert_eq!(back, plain, "parts {parts:?}");
            }
        }
    }
    // An empty message, without AAD, in one or several empty parts.
    let mut tag = [0u8; 16];
    let mut iv = unhex(IV);
    let mut p = params(&mut iv, 0, CKG_NO_GENERATE, &mut tag);
    assert_eq!(
        message(l, &s, true, &mut p, &[], &[], Some(&mut [])).0,
        CKR_OK
    );
    let single_tag = tag;
    for parts in [&[0usize][..], &[0, 0, 0]] {
        let mut tag = [0u8; 16];
        let out = multipart(
            l,
            &s,
            true,
            &mut iv,
            CKG_NO_GENERATE,
            &mut tag,
            &[],
            &[],
            parts,
        )
        .unwrap();
        assert!(out.is_empty());
        assert_eq!(tag, single_tag);
    }
}

/// A changed tag, AAD or ciphertext byte (in any part) fails the last
/// `C_DecryptMessageNext` with `CKR_ENCRYPTED_DATA_INVALID`, releasing no
/// plaintext at any step; the message ends, the operation stays.
#[test]
fn multipart_decrypt_tamper_releases_nothing() {
    let f = Fixture::new();
    let s = f.user(f.token("msg"));
    let key = aes_key(&s, &unhex(KEY));
    let l = list30();
    assert_eq!(init(l, &s, key, false), CKR_OK);
    let ct = unhex(C6);
    let aad = unhex(A4);
    let tag = unhex(T6);
    for case in 0..4 {
        let (mut c, mut a, mut t) = (ct.clone(), aad.clone(), tag.clone());
        match case {
            0 => t[15] ^= 1,
            1 => a[0] ^= 0x40,
            2 => c[5] ^= 1,
            _ => c[59] ^= 0x80,
        }
        let mut iv = unhex(IV6);
        assert_eq!(
            multipart(
                l,
                &s,
                false,
                &mut iv,
                CKG_NO_GENERATE,
                &mut t,
                &a,
                &c,
                &[13, 0, 17, 30]
            ),
            Err(CKR_ENCRYPTED_DATA_INVALID),
            "case {case}"
        );
        let mut out = [0u8; 60];
        assert_eq!(
            next(l, &s, false, None, &[], Some(&mut out), false).0,
            CKR_OPERATION_NOT_INITIALIZED,
            "the failed message ended"
        );
    }
    // The operation is still there.
    let mut iv = unhex(IV6);
    let mut t = tag.clone();
    assert_eq!(
        multipart(
            l,
            &s,
            false,
            &mut iv,
            CKG_NO_GENERATE,
            &mut t,
            &aad,
            &ct,
            &[30, 30]
        )
        .unwrap(),
        unhex(P3)[..60].to_vec()
    );
}

/// Size queries (intermediate and last part) and `CKR_BUFFER_TOO_SMALL`
/// commit nothing: repeating the same call gives the right output, not one
/// with a part counted twice; both directions.
#[test]
fn multipart_size_query_and_short_buffer() {
    let f = Fixture::new();
    let s = f.user(f.token("msg"));
    let key = aes_key(&s, &unhex(KEY));
    let l = list30();
    assert_eq!(init(l, &s, key, true), CKR_OK);
    assert_eq!(init(l, &s, key, false), CKR_OK);
    let plain = unhex(P3)[..60].to_vec();
    let ct = unhex(C6);
    for encrypt in [true, false] {
        let (input, expected) = if encrypt {
            (&plain, &ct)
        } else {
            (&ct, &plain)
        };
        let mut iv = unhex(IV6);
        let mut tag = if encrypt {
            [0u8; 16].to_vec()
        } else {
            unhex(T6)
        };
        let mut p = params(&mut iv, 0, CKG_NO_GENERATE, &mut tag);
        assert_eq!(begin(l, &s, encrypt, &mut p, &unhex(A4)), CKR_OK);
        // Intermediate part: queried twice, then passed once.
        for _ in 0..2 {
            assert_eq!(
                next(l, &s, encrypt, Some(&mut p), &input[..25], None, false),
                (CKR_OK, 0)
            );
        }
        assert_eq!(
            next(
                l,
                &s,
                encrypt,
                Some(&mut p),
                &input[..25],
                Some(&mut []),
                false
            ),
            (CKR_OK, 0)
        );
        // Last part: queried, too small twice, then right.
        assert_eq!(
            next(l, &s, encrypt, Some(&mut p), &input[25..], None, true),
            (CKR_OK, 60)
        );
        let mut out = [0xeeu8; 60];
        for short in [0usize, 59] {
            assert_eq!(
                next(
                    l,
                    &s,
                    encrypt,
                    Some(&mut p),
                    &input[25..],
                    Some(&mut out[..short]),
                    true
                ),
                (CKR_BUFFER_TOO_SMALL, 60)
            );
            assert!(out.iter().all(|&b| b == 0xee));
        }
        let mut big = vec![0u8; 100];
        assert_eq!(
            next(
                l,
                &s,
                encrypt,
                Some(&mut p),
                &input[25..],
                Some(&mut big),
                true
            ),
            (CKR_OK, 60)
        );
        assert_eq!(&big[..60], &expected[..]);
        if encrypt {
            assert_eq!(tag, unhex(T6));
        }
        // The message ended with its last part.
        assert_eq!(
            next(l, &s, encrypt, Some(&mut p), &[], Some(&mut big), true).0,
            CKR_OPERATION_NOT_INITIALIZED
        );
    }
}

/// State and argument rules of Begin / Next.
#[test]
fn multipart_state_and_argument_errors() {
    let f = Fixture::new();
    let s = f.user(f.token("msg"));
    let key = aes_key(&s, &unhex(KEY));
    let l = list30();
    let h = s.handle();
    let mut iv = unhex(IV);
    let mut tag = [0u8; 16];
    let mut p = params(&mut iv, 0, CKG_NO_GENERATE, &mut tag);
    let mut out = [0u8; 64];
    let psize = std::mem::size_of::<CK_GCM_MESSAGE_PARAMS>() as CK_ULONG;
    for encrypt in [true, false] {
        // No message operation at all.
        assert_eq!(
            begin(l, &s, encrypt, &mut p, &[]),
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(
            next(l, &s, encrypt, Some(&mut p), b"x", Some(&mut out), true).0,
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(init(l, &s, key, encrypt), CKR_OK);
        // Next without Begin.
        assert_eq!(
            next(l, &s, encrypt, Some(&mut p), b"x", Some(&mut out), false).0,
            CKR_OPERATION_NOT_INITIALIZED
        );
        // Bad parameter size at Begin: no message is started.
        let (begin_f, next_f) = if encrypt {
            (
                l.C_EncryptMessageBegin.unwrap(),
                l.C_EncryptMessageNext.unwrap(),
            )
        } else {
            (
                l.C_DecryptMessageBegin.unwrap(),
                l.C_DecryptMessageNext.unwrap(),
            )
        };
        // SAFETY: valid buffers; lengths deliberately wrong.
        unsafe {
            let pp = &mut p as *mut CK_GCM_MESSAGE_PARAMS as *mut _;
            assert_eq!(
                begin_f(h, pp, 8, null_mut(), 0),
                CKR_MECHANISM_PARAM_INVALID
            );
            assert_eq!(
                begin_f(h, null_mut(), 0, null_mut(), 0),
                CKR_MECHANISM_PARAM_INVALID
            );
            assert_eq!(begin_f(h, pp, psize, null_mut(), 3), CKR_ARGUMENTS_BAD);
        }
        assert_eq!(
            next(l, &s, encrypt, Some(&mut p), b"x", Some(&mut out), false).0,
            CKR_OPERATION_NOT_INITIALIZED,
            "no message was started"
        );
        // Begin twice; single-part during a multi-part message.
        assert_eq!(begin(l, &s, encrypt, &mut p, b"ad"), CKR_OK);
        assert_eq!(begin(l, &s, encrypt, &mut p, b"ad"), CKR_OPERATION_ACTIVE);
        assert_eq!(
            message(l, &s, encrypt, &mut p, &[], &[1; 16], Some(&mut out)).0,
            CKR_OPERATION_ACTIVE
        );
        // Each argument error ends the message (the operation stays).
        type Bad = Box<dyn Fn(&mut CK_GCM_MESSAGE_PARAMS, &mut [u8]) -> CK_RV>;
        let cases: Vec<(Bad, CK_RV)> = vec![
            // Unknown flags.
            (
                Box::new(move |p, out| {
                    let mut len = out.len() as CK_ULONG;
                    // SAFETY: valid buffers.
                    unsafe {
                        next_f(
                            h,
                            p as *mut _ as *mut _,
                            psize,
                            out.as_mut_ptr(),
                            1,
                            out.as_mut_ptr(),
                            &mut len,
                            2,
                        )
                    }
                }),
                CKR_ARGUMENTS_BAD,
            ),
            // NULL pulCiphertextPartLen.
            (
                Box::new(move |p, out| {
                    // SAFETY: valid buffers, null length pointer.
                    unsafe {
                        next_f(
                            h,
                            p as *mut _ as *mut _,
                            psize,
                            out.as_mut_ptr(),
                            1,
                            out.as_mut_ptr(),
                            null_mut(),
                            0,
                        )
                    }
                }),
                CKR_ARGUMENTS_BAD,
            ),
            // NULL part with a nonzero length.
            (
                Box::new(move |p, out| {
                    let mut len = out.len() as CK_ULONG;
                    // SAFETY: valid buffers but the null input.
                    unsafe {
                        next_f(
                            h,
                            p as *mut _ as *mut _,
                            psize,
                            null_mut(),
                            5,
                            out.as_mut_ptr(),
                            &mut len,
                            0,
                        )
                    }
                }),
                CKR_ARGUMENTS_BAD,
            ),
            // Short parameter struct.
            (
                Box::new(move |p, out| {
                    let mut len = out.len() as CK_ULONG;
                    // SAFETY: valid buffers; parameter length too short.
                    unsafe {
                        next_f(
                            h,
                            p as *mut _ as *mut _,
                            8,
                            out.as_mut_ptr(),
                            1,
                            out.as_mut_ptr(),
                            &mut len,
                            0,
                        )
                    }
                }),
                CKR_MECHANISM_PARAM_INVALID,
            ),
            // Last part without the parameters (where the tag goes).
            (
                Box::new(move |_, out| {
                    let mut len = out.len() as CK_ULONG;
                    // SAFETY: valid buffers, no parameters.
                    unsafe {
                        next_f(
                            h,
                            null_mut(),
                            0,
                            out.as_mut_ptr(),
                            1,
                            out.as_mut_ptr(),
                            &mut len,
                            CKF_END_OF_MESSAGE,
                        )
                    }
                }),
                CKR_MECHANISM_PARAM_INVALID,
            ),
            // Last part with another tag length than Begin's.
            (
                Box::new(move |p, out| {
                    let mut q = *p;
                    q.ulTagBits = 96;
                    let mut len = out.len() as CK_ULONG;
                    // SAFETY: valid buffers (the tag buffer is 16 bytes).
                    unsafe {
                        next_f(
                            h,
                            &mut q as *mut _ as *mut _,
                            psize,
                            out.as_mut_ptr(),
                            1,
                            out.as_mut_ptr(),
                            &mut len,
                            CKF_END_OF_MESSAGE,
                        )
                    }
                }),
                CKR_MECHANISM_PARAM_INVALID,
            ),
        ];
        for (i, (call, want)) in cases.iter().enumerate() {
            if i > 0 {
                assert_eq!(begin(l, &s, encrypt, &mut p, b"ad"), CKR_OK);
            }
            assert_eq!(call(&mut p, &mut out), *want, "case {i}");
            assert_eq!(
                next(l, &s, encrypt, Some(&mut p), b"x", Some(&mut out), false).0,
                CKR_OPERATION_NOT_INITIALIZED,
                "case {i} ended the message"
            );
        }
        // The operation is still there, with no message in progress: a
        // single-part message runs (the decryption's outcome depends on
        // what `tag` holds; it must not be a state error).
        let r = message(l, &s, encrypt, &mut p, &[], &[], Some(&mut out)).0;
        if encrypt {
            assert_eq!(r, CKR_OK);
        } else {
            assert!(r == CKR_OK || r == CKR_ENCRYPTED_DATA_INVALID, "{r:#x}");
        }
        // C_Message*Final with a message in progress ends both.
        assert_eq!(begin(l, &s, encrypt, &mut p, b"ad"), CKR_OK);
        assert_eq!(
            next(l, &s, encrypt, Some(&mut p), b"part", Some(&mut out), false),
            (CKR_OK, 0)
        );
        // SAFETY: no pointers.
        let fin = unsafe {
            if encrypt {
                l.C_MessageEncryptFinal.unwrap()(h)
            } else {
                l.C_MessageDecryptFinal.unwrap()(h)
            }
        };
        assert_eq!(fin, CKR_OK);
        assert_eq!(
            next(l, &s, encrypt, Some(&mut p), b"x", Some(&mut out), true).0,
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(
            begin(l, &s, encrypt, &mut p, &[]),
            CKR_OPERATION_NOT_INITIALIZED
        );
        // A new operation starts without a message; C_SessionCancel drops
        // one in progress with the operation.
        assert_eq!(init(l, &s, key, encrypt), CKR_OK);
        assert_eq!(
            next(l, &s, encrypt, Some(&mut p), b"x", Some(&mut out), true).0,
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(begin(l, &s, encrypt, &mut p, b"ad"), CKR_OK);
        let flag = if encrypt {
            CKF_MESSAGE_ENCRYPT
        } else {
            CKF_MESSAGE_DECRYPT
        };
        // SAFETY: no pointers.
        assert_eq!(unsafe { l.C_SessionCancel.unwrap()(h, flag) }, CKR_OK);
        assert_eq!(init(l, &s, key, encrypt), CKR_OK);
        assert_eq!(
            next(l, &s, encrypt, Some(&mut p), b"x", Some(&mut out), true).0,
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(begin(l, &s, encrypt, &mut p, b"ad"), CKR_OK, "not active");
        // SAFETY: no pointers.
        unsafe {
            if encrypt {
                assert_eq!(l.C_MessageEncryptFinal.unwrap()(h), CKR_OK);
            } else {
                assert_eq!(l.C_MessageDecryptFinal.unwrap()(h), CKR_OK);
            }
        }
    }
}

/// Generated IVs: written to `pIv` at `C_EncryptMessageBegin`, distinct
/// across multi-part and single-part messages of the operation (one
/// counter), the fixed prefix kept; each message decrypts.
#[test]
fn multipart_generated_ivs_differ() {
    let f = Fixture::new();
    let s = f.user(f.token("msg"));
    let key = aes_key(&s, &unhex(KEY));
    let l = list30();
    assert_eq!(init(l, &s, key, true), CKR_OK);
    assert_eq!(init(l, &s, key, false), CKR_OK);
    let prefix = [0xa5, 0x5a, 0x0f, 0xf0];
    for generator in [CKG_GENERATE_COUNTER, CKG_GENERATE_RANDOM, CKG_GENERATE] {
        let mut seen = HashSet::new();
        for i in 0..100u32 {
            let plain = [i.to_be_bytes(), (!i).to_be_bytes()].concat();
            // Non-fixed bytes the generator must overwrite (a counter's
            // first value is all zeros).
            let mut iv = [0xffu8; 12];
            iv[..4].copy_from_slice(&prefix);
            let mut tag = [0u8; 16];
            let ct = if i % 3 == 2 {
                let mut p = params(&mut iv, 32, generator, &mut tag);
                let mut ct = [0u8; 8];
                assert_eq!(
                    message(l, &s, true, &mut p, b"ad", &plain, Some(&mut ct)).0,
                    CKR_OK
                );
                ct.to_vec()
            } else {
                let mut p = params(&mut iv, 32, generator, &mut tag);
                assert_eq!(begin(l, &s, true, &mut p, b"ad"), CKR_OK);
                let at_begin = iv;
                assert_ne!(&at_begin[4..], &[0xffu8; 8], "IV generated at Begin");
                let (rv, _) = next(l, &s, true, None, &plain[..3], Some(&mut []), false);
                assert_eq!(rv, CKR_OK);
                let mut ct = [0u8; 8];
                assert_eq!(
                    next(l, &s, true, Some(&mut p), &plain[3..], Some(&mut ct), true),
                    (CKR_OK, 8)
                );
                assert_eq!(at_begin, iv, "the IV is not changed after Begin");
                ct.to_vec()
            };
            assert_eq!(&iv[..4], &prefix, "fixed part kept");
            assert!(seen.insert(iv), "IV repeated");
            let mut back = [0u8; 8];
            let mut p = params(&mut iv, 32, generator, &mut tag);
            assert_eq!(
                message(l, &s, false, &mut p, b"ad", &ct, Some(&mut back)).0,
                CKR_OK
            );
            assert_eq!(back.to_vec(), plain);
        }
    }
}

/// Multi-part messages as the `cryptoki` crate (0.12) drives them: its
/// `encrypt_message_next` / `decrypt_message_next` pass the same
/// `CK_GCM_MESSAGE_PARAMS` to every part, query the output size first, and
/// read the tag from the parameter after the last part. GCM test case 4
/// (McGrew–Viega), split in three parts.
#[test]
fn cryptoki_crates_multipart_message_calls() {
    use cryptoki::mechanism::MessageParam;
    use cryptoki::mechanism::aead::{GcmMessageParams, GeneratorFunction};
    let f = Fixture::new();
    let s = f.user(f.token("msg-cryptoki"));
    let key = aes_key(&s, &unhex(KEY));
    let plain = &unhex(P3)[..60];
    let aad = unhex(A4);
    let expected_ct = unhex(&C3[..120]);
    let mut iv = unhex(IV);
    let mut tag = [0u8; 16];
    let param =
        GcmMessageParams::new(&mut iv, 0.into(), GeneratorFunction::NoGenerate, &mut tag).unwrap();
    // As cryptoki's own tests do: the init carries a parameter too.
    s.message_encrypt_init(&Mechanism::AesGcmMessage(param), key)
        .unwrap();
    s.encrypt_message_begin(MessageParam::AesGcmMessage(param), &aad)
        .unwrap();
    let mut ct = Vec::new();
    for (i, part) in plain.chunks(25).enumerate() {
        let last = i == plain.len().div_ceil(25) - 1;
        ct.extend(
            s.encrypt_message_next(MessageParam::AesGcmMessage(param), part, last)
                .unwrap(),
        );
    }
    s.message_encrypt_final().unwrap();
    assert_eq!(ct, expected_ct);
    assert_eq!(tag.to_vec(), unhex(T4));

    let mut iv = unhex(IV);
    let mut tag = unhex(T4);
    let param =
        GcmMessageParams::new(&mut iv, 0.into(), GeneratorFunction::NoGenerate, &mut tag).unwrap();
    s.message_decrypt_init(&Mechanism::AesGcmMessage(param), key)
        .unwrap();
    s.decrypt_message_begin(MessageParam::AesGcmMessage(param), &aad)
        .unwrap();
    let mut back = Vec::new();
    for (i, part) in expected_ct.chunks(25).enumerate() {
        let last = i == expected_ct.len().div_ceil(25) - 1;
        let out = s
            .decrypt_message_next(MessageParam::AesGcmMessage(param), part, last)
            .unwrap();
        // Nothing before the tag has been checked.
        assert!(last || out.is_empty(), "plaintext released before the tag");
        back.extend(out);
    }
    s.message_decrypt_final().unwrap();
    assert_eq!(back, plain);
}

// ---------------------------------------------------------------------------
// IVs the token generates: a counter never repeats for a key value (across
// operations, sessions, copies of the key, processes, restarts and token
// re-initialisation); random IVs keep at least 64 random bits.
// ---------------------------------------------------------------------------

/// The fixed field of the IVs below (SP 800-38D §8.2.1): constant for the key.
const PREFIX: [u8; 4] = [0xa5, 0x5a, 0x0f, 0xf0];

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// An AES token key labelled `label`.
fn token_aes_key(s: &Session, value: &[u8], label: &[u8]) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::AES),
        Attribute::Token(true),
        Attribute::Label(label.to_vec()),
        Attribute::Value(value.to_vec()),
        Attribute::Encrypt(true),
        Attribute::Decrypt(true),
    ])
    .unwrap()
}

/// One message-encryption operation on `key` (its own init and final)
/// encrypting `n` messages with generated counter IVs — single-part and
/// multi-part, `CKG_GENERATE_COUNTER` and `CKG_GENERATE_COUNTER_XOR` over
/// a constant base — each decrypted again by a message-decryption
/// operation. Returns the IVs.
fn counter_messages(
    l: &CK_FUNCTION_LIST_3_0,
    s: &Session,
    key: ObjectHandle,
    n: u32,
) -> Vec<Vec<u8>> {
    assert_eq!(init(l, s, key, true), CKR_OK);
    assert_eq!(init(l, s, key, false), CKR_OK);
    let mut ivs = Vec::new();
    for i in 0..n {
        let plain = [i.to_be_bytes(), (!i).to_be_bytes()].concat();
        let xor = i % 2 == 1;
        let (generator, fill) = if xor {
            // The base the counter is XORed into: the same for every message.
            (CKG_GENERATE_COUNTER_XOR, 0u8)
        } else {
            (CKG_GENERATE_COUNTER, 0xff)
        };
        let mut iv = [fill; 12];
        iv[..4].copy_from_slice(&PREFIX);
        let mut tag = [0u8; 16];
        let mut ct = [0u8; 8];
        if i % 3 == 0 {
            let mut p = params(&mut iv, 32, generator, &mut tag);
            assert_eq!(begin(l, s, true, &mut p, b"ad"), CKR_OK);
            assert_eq!(
                next(l, s, true, Some(&mut p), &plain, Some(&mut ct), true),
                (CKR_OK, 8)
            );
        } else {
            let mut p = params(&mut iv, 32, generator, &mut tag);
            assert_eq!(
                message(l, s, true, &mut p, b"ad", &plain, Some(&mut ct)).0,
                CKR_OK
            );
        }
        assert_eq!(&iv[..4], &PREFIX, "fixed field kept");
        let mut back = [0u8; 8];
        let mut p = params(&mut iv, 32, generator, &mut tag);
        assert_eq!(
            message(l, s, false, &mut p, b"ad", &ct, Some(&mut back)).0,
            CKR_OK
        );
        assert_eq!(back.to_vec(), plain, "the message decrypts with its IV");
        ivs.push(iv.to_vec());
    }
    // SAFETY: no pointers.
    unsafe {
        assert_eq!(l.C_MessageEncryptFinal.unwrap()(s.handle()), CKR_OK);
        assert_eq!(l.C_MessageDecryptFinal.unwrap()(s.handle()), CKR_OK);
    }
    ivs
}

/// Every IV seen so far for one key value; a repeat fails the test.
#[derive(Default)]
struct Ivs(HashSet<Vec<u8>>);

impl Ivs {
    fn add(&mut self, ivs: Vec<Vec<u8>>, what: &str) {
        assert!(!ivs.is_empty());
        for iv in ivs {
            let h = hex(&iv);
            assert!(self.0.insert(iv), "{what}: IV {h} was already used");
        }
    }
}

/// The part of [`counter_ivs_never_repeat_for_a_key_value`] inside one
/// process: two operations in one session, a second session, a copy of
/// the key (`C_CopyObject`), and the same value imported again.
fn counter_ivs_in_one_process(f: &Fixture, slot: cryptoki::slot::Slot, seen: &mut Ivs) {
    let l = list30();
    let s = f.user(slot);
    let key = token_aes_key(&s, &unhex(KEY), b"iv-key");
    seen.add(counter_messages(l, &s, key, 20), "first operation");
    seen.add(
        counter_messages(l, &s, key, 20),
        "second operation of the session",
    );
    let s2 = f.p().open_rw_session(slot).unwrap();
    seen.add(counter_messages(l, &s2, key, 20), "second session");
    let copy = s.copy_object(key, &[Attribute::Token(false)]).unwrap();
    seen.add(counter_messages(l, &s, copy, 20), "C_CopyObject copy");
    let again = aes_key(&s, &unhex(KEY));
    seen.add(
        counter_messages(l, &s, again, 20),
        "the same value imported again",
    );
    // Operations on the key and its copy at the same time.
    let s3 = f.p().open_rw_session(slot).unwrap();
    assert_eq!(init(l, &s3, copy, true), CKR_OK);
    let mut interleaved = Vec::new();
    for round in 0..10 {
        let sess = if round % 2 == 0 { &s } else { &s3 };
        if round == 0 {
            assert_eq!(init(l, &s, key, true), CKR_OK);
        }
        let mut iv = [0u8; 12];
        iv[..4].copy_from_slice(&PREFIX);
        let mut tag = [0u8; 16];
        let mut p = params(&mut iv, 32, CKG_GENERATE_COUNTER, &mut tag);
        let mut ct = [0u8; 1];
        assert_eq!(
            message(l, sess, true, &mut p, &[], &[7], Some(&mut ct)).0,
            CKR_OK
        );
        interleaved.push(iv.to_vec());
    }
    seen.add(interleaved, "two operations at once");
}

/// `CKG_GENERATE_COUNTER` (and `_XOR` over a constant base) never gives
/// one key value the same IV twice: not across operations, sessions, a
/// `C_CopyObject` copy, the value imported again, two processes
/// encrypting at once, nor a `C_Finalize` / `C_Initialize` restart. Every
/// message decrypts with the IV written back.
#[test]
fn counter_ivs_never_repeat_for_a_key_value() {
    let mut f = Fixture::new();
    let slot = f.token("iv-counter");
    let mut seen = Ivs::default();
    counter_ivs_in_one_process(&f, slot, &mut seen);
    // Two processes at once, while this one keeps the token open.
    let workers = [
        f.spawn_worker("IV_WORKER", "iv-counter 300"),
        f.spawn_worker("IV_WORKER", "iv-counter 300"),
    ];
    for (i, w) in workers.into_iter().enumerate() {
        let out = finish_worker(w);
        assert!(out.contains("done"), "{out}");
        let ivs: Vec<Vec<u8>> = out
            .lines()
            .filter_map(|line| line.strip_prefix("iv "))
            .map(unhex)
            .collect();
        assert_eq!(ivs.len(), 300, "{out}");
        seen.add(ivs, &format!("worker process {i}"));
    }
    // A restart, as a new process would see the token.
    f.restart();
    let slot = f.slot_labelled("iv-counter");
    let s = f.user(slot);
    let key = s
        .find_objects(&[Attribute::Label(b"iv-key".to_vec())])
        .unwrap();
    assert_eq!(key.len(), 1);
    seen.add(
        counter_messages(list30(), &s, key[0], 20),
        "after a restart",
    );
    assert_eq!(seen.0.len(), 5 * 20 + 10 + 600 + 20);
}

/// The same within one process on a memory token (nothing on disk).
#[test]
fn counter_ivs_never_repeat_on_a_memory_token() {
    let f = Fixture::with_storage("memory");
    let slot = f.token("iv-memory");
    let mut seen = Ivs::default();
    counter_ivs_in_one_process(&f, slot, &mut seen);
    assert_eq!(seen.0.len(), 5 * 20 + 10);
}

/// `C_InitToken` over a token erases its keys but not the counter: the
/// same key value imported into the re-initialised token does not get an
/// IV it had before.
#[test]
fn counter_ivs_survive_token_reinitialisation() {
    let f = Fixture::new();
    let slot = f.token("iv-reinit");
    let l = list30();
    let mut seen = Ivs::default();
    {
        let s = f.user(slot);
        let key = token_aes_key(&s, &unhex(KEY), b"iv-key");
        seen.add(counter_messages(l, &s, key, 20), "before C_InitToken");
    }
    f.p()
        .init_token(slot, &pin(SO_PIN), "iv-reinit")
        .expect("C_InitToken again");
    let s = f.p().open_rw_session(slot).unwrap();
    s.login(cryptoki::session::UserType::So, Some(&pin(SO_PIN)))
        .unwrap();
    s.init_pin(&pin(USER_PIN)).unwrap();
    s.logout().unwrap();
    s.login(cryptoki::session::UserType::User, Some(&pin(USER_PIN)))
        .unwrap();
    let key = aes_key(&s, &unhex(KEY));
    seen.add(counter_messages(l, &s, key, 20), "after C_InitToken");
}

/// `CKG_GENERATE_RANDOM` and `CKG_GENERATE` fill the bits after
/// `ulIvFixedBits` from the DRBG; fewer than 64 such bits would repeat too
/// soon, so they are refused (`CKR_MECHANISM_PARAM_INVALID`), single-part
/// and at `C_EncryptMessageBegin`.
#[test]
fn random_ivs_keep_at_least_64_random_bits() {
    let f = Fixture::new();
    let s = f.user(f.token("iv-random"));
    let key = aes_key(&s, &unhex(KEY));
    let l = list30();
    assert_eq!(init(l, &s, key, true), CKR_OK);
    assert_eq!(init(l, &s, key, false), CKR_OK);
    for generator in [CKG_GENERATE_RANDOM, CKG_GENERATE] {
        for (len, fixed, accepted) in [
            (12usize, 95, false),
            (12, 65, false),
            (12, 33, false),
            (12, 32, true),
            (12, 0, true),
            (16, 64, true),
            (16, 65, false),
        ] {
            let what = format!("generator {generator}, {len}-byte IV, {fixed} fixed bits");
            let expect = if accepted {
                CKR_OK
            } else {
                CKR_MECHANISM_PARAM_INVALID
            };
            let original = vec![0x3c_u8; len];
            let mut iv = original.clone();
            let mut tag = [0u8; 16];
            let mut ct = [0u8; 3];
            let mut p = params(&mut iv, fixed, generator, &mut tag);
            assert_eq!(
                message(l, &s, true, &mut p, &[], b"abc", Some(&mut ct)).0,
                expect,
                "{what}"
            );
            if accepted {
                assert_ne!(iv, original, "{what}: random bits written");
                let mut back = [0u8; 3];
                let mut p = params(&mut iv, fixed, generator, &mut tag);
                assert_eq!(
                    message(l, &s, false, &mut p, &[], &ct, Some(&mut back)).0,
                    CKR_OK
                );
                assert_eq!(&back, b"abc", "{what}");
            } else {
                assert_eq!(iv, original, "{what}: no IV written");
            }
            let mut iv = original.clone();
            let mut p = params(&mut iv, fixed, generator, &mut tag);
            assert_eq!(begin(l, &s, true, &mut p, &[]), expect, "{what} (Begin)");
            if accepted {
                assert_eq!(
                    next(l, &s, true, Some(&mut p), b"abc", Some(&mut ct), true),
                    (CKR_OK, 3)
                );
            }
        }
    }
}

/// The token's files, for the edits below.
fn token_file(f: &Fixture, slot: cryptoki::slot::Slot) -> std::path::PathBuf {
    let serial = f
        .p()
        .get_token_info(slot)
        .unwrap()
        .serial_number()
        .to_string();
    f.dir
        .path()
        .join("tokens")
        .join(format!("{}.sqlite", serial.trim()))
}

/// A counter edited back in the file, or its row deleted, is detected:
/// counter IVs are refused (`CKR_DEVICE_ERROR`) rather than repeated,
/// while random IVs keep working.
#[test]
fn an_edited_counter_is_refused_not_repeated() {
    let mut f = Fixture::new();
    let edits = [
        ("iv-edit", "UPDATE iv_counters SET next = 0"),
        ("iv-delete", "DELETE FROM iv_counters"),
    ];
    let mut files = Vec::new();
    for (label, _) in edits {
        let slot = f.token(label);
        let s = f.user(slot);
        let key = token_aes_key(&s, &unhex(KEY), b"iv-key");
        counter_messages(list30(), &s, key, 5);
        files.push(token_file(&f, slot));
    }
    f.stop();
    for ((_, sql), file) in edits.iter().zip(&files) {
        let conn = rusqlite::Connection::open(file).unwrap();
        assert_eq!(conn.execute(sql, []).unwrap(), 1, "{sql}");
    }
    f.start();
    let l = list30();
    for (label, sql) in edits {
        let s = f.user(f.slot_labelled(label));
        let key = s
            .find_objects(&[Attribute::Label(b"iv-key".to_vec())])
            .unwrap()[0];
        assert_eq!(init(l, &s, key, true), CKR_OK);
        let mut iv = [0u8; 12];
        let mut tag = [0u8; 16];
        let mut p = params(&mut iv, 32, CKG_GENERATE_COUNTER, &mut tag);
        let mut ct = [0u8; 1];
        assert_eq!(
            message(l, &s, true, &mut p, &[], &[1], Some(&mut ct)).0,
            CKR_DEVICE_ERROR,
            "after {sql}"
        );
        let mut p = params(&mut iv, 32, CKG_GENERATE_RANDOM, &mut tag);
        assert_eq!(
            message(l, &s, true, &mut p, &[], &[1], Some(&mut ct)).0,
            CKR_OK
        );
    }
}

/// A write-protected token cannot record a counter: `CKG_GENERATE_COUNTER`
/// is refused with `CKR_TOKEN_WRITE_PROTECTED`; random IVs work.
#[test]
fn a_read_only_token_refuses_counter_ivs() {
    use std::os::unix::fs::PermissionsExt;
    let mut f = Fixture::new();
    let slot = f.token("iv-read-only");
    {
        let s = f.user(slot);
        token_aes_key(&s, &unhex(KEY), b"iv-key");
    }
    let file = token_file(&f, slot);
    f.stop();
    let dir = file.parent().unwrap().to_path_buf();
    let set = |p: &std::path::Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    set(f.dir.path(), 0o755);
    set(&file, 0o444);
    set(&dir, 0o555);
    let out = finish_worker(f.spawn_worker("IV_WORKER", "iv-read-only read-only"));
    set(&dir, 0o700);
    assert!(out.contains("done"), "{out}");
}

/// In the read-only worker: as `nobody` when run as root (root writes anyway).
fn read_only_worker(label: &str) {
    // SAFETY: plain system calls on this process, before any thread uses
    // the module.
    unsafe {
        if libc::geteuid() == 0 {
            assert_eq!(libc::setgid(65534), 0);
            assert_eq!(libc::setuid(65534), 0);
        }
    }
    let (p, slot) = worker_module(label);
    assert!(p.get_token_info(slot).unwrap().write_protected());
    let s = p.open_ro_session(slot).unwrap();
    s.login(cryptoki::session::UserType::User, Some(&pin(USER_PIN)))
        .unwrap();
    let key = s
        .find_objects(&[Attribute::Label(b"iv-key".to_vec())])
        .unwrap()[0];
    let l = list30();
    assert_eq!(init(l, &s, key, true), CKR_OK);
    for generator in [CKG_GENERATE_COUNTER, CKG_GENERATE_COUNTER_XOR] {
        let mut iv = [0u8; 12];
        let mut tag = [0u8; 16];
        let mut p = params(&mut iv, 32, generator, &mut tag);
        let mut ct = [0u8; 1];
        assert_eq!(
            message(l, &s, true, &mut p, &[], &[1], Some(&mut ct)).0,
            CKR_TOKEN_WRITE_PROTECTED
        );
        assert_eq!(iv, [0u8; 12], "no IV written");
    }
    let mut iv = [0u8; 12];
    let mut tag = [0u8; 16];
    let mut p = params(&mut iv, 32, CKG_GENERATE_RANDOM, &mut tag);
    let mut ct = [0u8; 1];
    assert_eq!(
        message(l, &s, true, &mut p, &[], &[1], Some(&mut ct)).0,
        CKR_OK
    );
}

/// Entry point of the worker processes (skipped in a normal run): with
/// `IV_WORKER="<label> <count>"`, encrypts `count` messages with counter
/// IVs under the key `iv-key` of the token `<label>` and prints each IV;
/// with `"<label> read-only"`, the read-only checks.
#[test]
#[ignore = "runs only as the second process of the tests above"]
fn worker() {
    let Ok(spec) = std::env::var("IV_WORKER") else {
        return;
    };
    let args: Vec<&str> = spec.split(' ').collect();
    if args[1] == "read-only" {
        read_only_worker(args[0]);
        println!("done");
        return;
    }
    let count: u32 = args[1].parse().unwrap();
    let (p, slot) = worker_module(args[0]);
    let s = p.open_ro_session(slot).unwrap();
    s.login(cryptoki::session::UserType::User, Some(&pin(USER_PIN)))
        .unwrap();
    let key = s
        .find_objects(&[Attribute::Label(b"iv-key".to_vec())])
        .unwrap()[0];
    let l = list30();
    // Several operations, so the process comes back to the counter.
    let mut ivs = Vec::new();
    while (ivs.len() as u32) < count {
        ivs.extend(counter_messages(
            l,
            &s,
            key,
            (count - ivs.len() as u32).min(70),
        ));
    }
    for iv in ivs {
        println!("iv {}", hex(&iv));
    }
    println!("done");
}
