//! Dual-function operations (base spec §5.16) through the raw function
//! list: each pair gives exactly what its two operations give separately,
//! a size query or a short buffer feeds the digest or MAC nothing, and a
//! call without both operations active is refused.

mod common;

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, ObjectHandle};
use cryptoki::session::Session;
use cryptoki_sys::*;
use std::ptr::null_mut;

type DualFn = unsafe extern "C" fn(
    CK_SESSION_HANDLE,
    *mut CK_BYTE,
    CK_ULONG,
    *mut CK_BYTE,
    *mut CK_ULONG,
) -> CK_RV;

fn mech(ty: CK_MECHANISM_TYPE, param: &mut [u8]) -> CK_MECHANISM {
    CK_MECHANISM {
        mechanism: ty,
        pParameter: if param.is_empty() {
            null_mut()
        } else {
            param.as_mut_ptr().cast()
        },
        ulParameterLen: param.len() as CK_ULONG,
    }
}

#[track_caller]
fn ok(rv: CK_RV) {
    assert_eq!(rv, CKR_OK);
}

/// One dual call on `part`: first a size query and a one-byte buffer
/// (both must leave the second operation untouched), then the real call.
#[track_caller]
fn dual_call(s: &Session, f: DualFn, part: &[u8]) -> Vec<u8> {
    let mut input = part.to_vec();
    let mut len: CK_ULONG = 0;
    // SAFETY: live buffers of the stated lengths.
    unsafe {
        ok(f(
            s.handle(),
            input.as_mut_ptr(),
            input.len() as CK_ULONG,
            null_mut(),
            &mut len,
        ));
        let mut out = vec![0u8; len as usize];
        if len > 1 {
            let mut short: CK_ULONG = 1;
            let rv = f(
                s.handle(),
                input.as_mut_ptr(),
                input.len() as CK_ULONG,
                out.as_mut_ptr(),
                &mut short,
            );
            assert_eq!(rv, CKR_BUFFER_TOO_SMALL);
        }
        ok(f(
            s.handle(),
            input.as_mut_ptr(),
            input.len() as CK_ULONG,
            out.as_mut_ptr(),
            &mut len,
        ));
        out.truncate(len as usize);
        out
    }
}

fn aes_key(s: &Session) -> ObjectHandle {
    s.generate_key(
        &Mechanism::AesKeyGen,
        &[
            Attribute::ValueLen(16.into()),
            Attribute::Token(false),
            Attribute::Encrypt(true),
            Attribute::Decrypt(true),
        ],
    )
    .unwrap()
}

const PARTS: [&[u8]; 3] = [
    b"sixteen byte blk",
    b"and thirty-two bytes of data....",
    b"the last 16 byte",
];

#[test]
fn digest_encrypt_and_decrypt_digest_match_the_single_operations() {
    let f = Fixture::new();
    let slot = f.token("dual");
    let s = f.user(slot);
    let l = raw();
    let h = s.handle();
    let key = aes_key(&s);
    let mut iv = [7u8; 16];
    let whole: Vec<u8> = PARTS.concat();
    let expected_ct = s.encrypt(&Mechanism::AesCbc(iv), key, &whole).unwrap();
    let expected_digest = s.digest(&Mechanism::Sha256, &whole).unwrap();
    // SAFETY (every raw call): live buffers of the stated lengths.
    unsafe {
        // Without both operations: refused.
        let mut len: CK_ULONG = 0;
        assert_eq!(
            l.C_DigestEncryptUpdate.unwrap()(h, [1u8].as_mut_ptr(), 1, null_mut(), &mut len),
            CKR_OPERATION_NOT_INITIALIZED
        );
        ok(l.C_DigestInit.unwrap()(h, &mut mech(CKM_SHA256, &mut [])));
        assert_eq!(
            l.C_DigestEncryptUpdate.unwrap()(h, [1u8].as_mut_ptr(), 1, null_mut(), &mut len),
            CKR_OPERATION_NOT_INITIALIZED
        );
        ok(l.C_EncryptInit.unwrap()(
            h,
            &mut mech(CKM_AES_CBC, &mut iv),
            key.handle(),
        ));
        let mut ct = Vec::new();
        for part in PARTS {
            ct.extend(dual_call(&s, l.C_DigestEncryptUpdate.unwrap(), part));
        }
        let mut rest = [0u8; 16];
        let mut len: CK_ULONG = 16;
        ok(l.C_EncryptFinal.unwrap()(h, rest.as_mut_ptr(), &mut len));
        ct.extend(&rest[..len as usize]);
        assert_eq!(ct, expected_ct);
        let mut digest = [0u8; 32];
        let mut len: CK_ULONG = 32;
        ok(l.C_DigestFinal.unwrap()(h, digest.as_mut_ptr(), &mut len));
        assert_eq!(digest.to_vec(), expected_digest, "digest fed once per part");

        // Decrypt and digest the plaintext.
        ok(l.C_DecryptInit.unwrap()(
            h,
            &mut mech(CKM_AES_CBC, &mut iv),
            key.handle(),
        ));
        ok(l.C_DigestInit.unwrap()(h, &mut mech(CKM_SHA256, &mut [])));
        let mut plain = Vec::new();
        for chunk in expected_ct.chunks(24) {
            plain.extend(dual_call(&s, l.C_DecryptDigestUpdate.unwrap(), chunk));
        }
        let mut rest = [0u8; 16];
        let mut len: CK_ULONG = 16;
        ok(l.C_DecryptFinal.unwrap()(h, rest.as_mut_ptr(), &mut len));
        assert_eq!(len, 0);
        assert_eq!(plain, whole);
        let mut len: CK_ULONG = 32;
        ok(l.C_DigestFinal.unwrap()(h, digest.as_mut_ptr(), &mut len));
        assert_eq!(digest.to_vec(), expected_digest);
    }
}

#[test]
fn sign_encrypt_and_decrypt_verify_match_the_single_operations() {
    let f = Fixture::new();
    let slot = f.token("dualmac");
    let s = f.user(slot);
    let l = raw();
    let h = s.handle();
    let key = aes_key(&s);
    let mac_key = hmac_key(&s);
    let whole: Vec<u8> = PARTS.concat();
    let expected_ct = s.encrypt(&Mechanism::AesEcb, key, &whole).unwrap();
    let expected_mac = s.sign(&Mechanism::Sha256Hmac, mac_key, &whole).unwrap();
    // SAFETY (every raw call): live buffers of the stated lengths.
    unsafe {
        ok(l.C_SignInit.unwrap()(
            h,
            &mut mech(CKM_SHA256_HMAC, &mut []),
            mac_key.handle(),
        ));
        ok(l.C_EncryptInit.unwrap()(
            h,
            &mut mech(CKM_AES_ECB, &mut []),
            key.handle(),
        ));
        let mut ct = Vec::new();
        for part in PARTS {
            ct.extend(dual_call(&s, l.C_SignEncryptUpdate.unwrap(), part));
        }
        let mut len: CK_ULONG = 0;
        ok(l.C_EncryptFinal.unwrap()(h, null_mut(), &mut len));
        ok(l.C_EncryptFinal.unwrap()(
            h,
            [0u8; 16].as_mut_ptr(),
            &mut len,
        ));
        assert_eq!(ct, expected_ct);
        let mut mac = [0u8; 32];
        let mut len: CK_ULONG = 32;
        ok(l.C_SignFinal.unwrap()(h, mac.as_mut_ptr(), &mut len));
        assert_eq!(mac.to_vec(), expected_mac);

        for (tamper, want) in [(false, CKR_OK), (true, CKR_SIGNATURE_INVALID)] {
            ok(l.C_DecryptInit.unwrap()(
                h,
                &mut mech(CKM_AES_ECB, &mut []),
                key.handle(),
            ));
            ok(l.C_VerifyInit.unwrap()(
                h,
                &mut mech(CKM_SHA256_HMAC, &mut []),
                mac_key.handle(),
            ));
            let mut ct = expected_ct.clone();
            if tamper {
                ct[0] ^= 1;
            }
            for chunk in ct.chunks(32) {
                dual_call(&s, l.C_DecryptVerifyUpdate.unwrap(), chunk);
            }
            let mut len: CK_ULONG = 16;
            ok(l.C_DecryptFinal.unwrap()(
                h,
                [0u8; 16].as_mut_ptr(),
                &mut len,
            ));
            let rv = l.C_VerifyFinal.unwrap()(h, mac.as_mut_ptr(), 32);
            assert_eq!(rv, want);
        }
        // An error ends both operations of the pair.
        ok(l.C_SignInit.unwrap()(
            h,
            &mut mech(CKM_SHA256_HMAC, &mut []),
            mac_key.handle(),
        ));
        ok(l.C_EncryptInit.unwrap()(
            h,
            &mut mech(CKM_AES_ECB, &mut []),
            key.handle(),
        ));
        let mut len: CK_ULONG = 64;
        let mut out = [0u8; 64];
        let rv = l.C_SignEncryptUpdate.unwrap()(h, null_mut(), 5, out.as_mut_ptr(), &mut len);
        assert_eq!(rv, CKR_ARGUMENTS_BAD);
        let mut len: CK_ULONG = 32;
        assert_eq!(
            l.C_SignFinal.unwrap()(h, mac.as_mut_ptr(), &mut len),
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(
            l.C_EncryptFinal.unwrap()(h, out.as_mut_ptr(), &mut len),
            CKR_OPERATION_NOT_INITIALIZED
        );
    }
}
