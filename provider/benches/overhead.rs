//! Interface overhead: the same operation called on the crypto crate
//! directly and through the module's exported function list, in one
//! process, so the ratio is not blurred by machine noise.
//!
//! `cargo bench -p dalek-pkcs11 --bench overhead`

use criterion::{Criterion, criterion_group, criterion_main};
use cryptoki_sys::*;
use dalek_pkcs11::ffi::C_GetFunctionList;
use ed25519_dalek::{Signer, SigningKey};
use std::hint::black_box;
use std::ptr::null_mut;

/// A logged-in session on a memory token holding one Ed25519 key made from `seed`.
struct Token {
    list: &'static CK_FUNCTION_LIST,
    session: CK_SESSION_HANDLE,
    key: CK_OBJECT_HANDLE,
    _dir: tempfile::TempDir,
}

fn call(rv: CK_RV, what: &str) {
    assert_eq!(rv, CKR_OK, "{what}");
}

impl Token {
    fn new(seed: &[u8; 32]) -> Token {
        let dir = tempfile::tempdir().unwrap();
        // SAFETY: single-threaded set-up before any module call.
        unsafe {
            std::env::set_var("DALEK_PKCS11_STORAGE", "memory");
            std::env::set_var("DALEK_PKCS11_TOKEN_DIR", dir.path());
        }
        let mut list: *mut CK_FUNCTION_LIST = null_mut();
        // SAFETY: the module's own entry points with valid pointers throughout.
        unsafe {
            call(C_GetFunctionList(&mut list), "C_GetFunctionList");
            let l = &*list;
            call(l.C_Initialize.unwrap()(null_mut()), "C_Initialize");
            let mut so = *b"87654321";
            let mut user = *b"1234";
            let mut label = [b' '; 32];
            call(
                l.C_InitToken.unwrap()(0, so.as_mut_ptr(), 8, label.as_mut_ptr()),
                "C_InitToken",
            );
            let mut s = 0;
            call(
                l.C_OpenSession.unwrap()(
                    0,
                    CKF_SERIAL_SESSION | CKF_RW_SESSION,
                    null_mut(),
                    None,
                    &mut s,
                ),
                "C_OpenSession",
            );
            call(
                l.C_Login.unwrap()(s, CKU_SO, so.as_mut_ptr(), 8),
                "C_Login SO",
            );
            call(l.C_InitPIN.unwrap()(s, user.as_mut_ptr(), 4), "C_InitPIN");
            call(l.C_Logout.unwrap()(s), "C_Logout");
            call(
                l.C_Login.unwrap()(s, CKU_USER, user.as_mut_ptr(), 4),
                "C_Login",
            );
            let mut class = CKO_PRIVATE_KEY;
            let mut key_type = CKK_EC_EDWARDS;
            let mut params = [0x06u8, 0x03, 0x2b, 0x65, 0x70];
            let mut value = *seed;
            let mut template = [
                CK_ATTRIBUTE {
                    type_: CKA_CLASS,
                    pValue: (&mut class as *mut CK_ULONG).cast(),
                    ulValueLen: 8,
                },
                CK_ATTRIBUTE {
                    type_: CKA_KEY_TYPE,
                    pValue: (&mut key_type as *mut CK_ULONG).cast(),
                    ulValueLen: 8,
                },
                CK_ATTRIBUTE {
                    type_: CKA_EC_PARAMS,
                    pValue: params.as_mut_ptr().cast(),
                    ulValueLen: 5,
                },
                CK_ATTRIBUTE {
                    type_: CKA_VALUE,
                    pValue: value.as_mut_ptr().cast(),
                    ulValueLen: 32,
                },
            ];
            let mut key = 0;
            call(
                l.C_CreateObject.unwrap()(s, template.as_mut_ptr(), 4, &mut key),
                "C_CreateObject",
            );
            Token {
                list: l,
                session: s,
                key,
                _dir: dir,
            }
        }
    }

    /// `C_SignInit` + `C_Sign` into a preallocated buffer, as hsm-bench times it.
    fn sign(&self, data: &mut [u8], sig: &mut [u8; 64]) {
        let mut mech = CK_MECHANISM {
            mechanism: CKM_EDDSA,
            pParameter: null_mut(),
            ulParameterLen: 0,
        };
        let mut len: CK_ULONG = 64;
        // SAFETY: live buffers of the stated lengths.
        unsafe {
            call(
                self.list.C_SignInit.unwrap()(self.session, &mut mech, self.key),
                "C_SignInit",
            );
            call(
                self.list.C_Sign.unwrap()(
                    self.session,
                    data.as_mut_ptr(),
                    data.len() as CK_ULONG,
                    sig.as_mut_ptr(),
                    &mut len,
                ),
                "C_Sign",
            );
        }
    }
}

fn ed25519_sign(c: &mut Criterion) {
    let seed = [42u8; 32];
    let token = Token::new(&seed);
    let direct = SigningKey::from_bytes(&seed);
    let mut data = [0x5au8; 128];
    let mut sig = [0u8; 64];
    token.sign(&mut data, &mut sig);
    assert_eq!(
        sig,
        direct.sign(&data).to_bytes(),
        "same signature both ways"
    );
    let mut group = c.benchmark_group("ed25519-sign-128B");
    group.bench_function("ed25519-dalek direct", |b| {
        b.iter(|| black_box(direct.sign(black_box(&data))))
    });
    group.bench_function("C_SignInit+C_Sign", |b| {
        b.iter(|| token.sign(black_box(&mut data), &mut sig))
    });
    group.finish();
}

criterion_group!(benches, ed25519_sign);
criterion_main!(benches);
