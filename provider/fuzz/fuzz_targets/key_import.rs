//! Key material of every type: imported with `C_CreateObject` from fuzzed
//! components, and unwrapped with `C_UnwrapKey` — both fuzzed wrapped bytes
//! and fuzzed plaintext encrypted under the token's key-encryption key
//! first, so the parsers (PKCS #8, raw keys, points) see it.
#![no_main]

use arbitrary::Arbitrary;
use cryptoki_sys::*;
use dalek_pkcs11_fuzz::*;
use libfuzzer_sys::fuzz_target;
use std::ptr::null_mut;

const CLASSES: &[CK_OBJECT_CLASS] = &[CKO_PRIVATE_KEY, CKO_PUBLIC_KEY, CKO_SECRET_KEY, CKO_DATA, 9];
const KEY_TYPES: &[CK_KEY_TYPE] = &[
    CKK_RSA,
    CKK_EC,
    CKK_EC_EDWARDS,
    CKK_AES,
    CKK_GENERIC_SECRET,
    CKK_SHA256_HMAC,
    CKK_EC_MONTGOMERY,
    CKK_ML_DSA,
    CKK_ML_KEM,
    CKK_SLH_DSA,
    0x777,
];

#[derive(Arbitrary, Debug)]
enum Input {
    Create {
        class: u8,
        key_type: u8,
        attrs: Vec<FuzzAttr>,
    },
    UnwrapBytes {
        rsa: bool,
        wrapped: Vec<u8>,
        class: u8,
        key_type: u8,
        attrs: Vec<FuzzAttr>,
    },
    WrapThenUnwrap {
        plain: Vec<u8>,
        class: u8,
        key_type: u8,
        attrs: Vec<FuzzAttr>,
    },
}

fn with_class(class: u8, key_type: u8, attrs: &[FuzzAttr]) -> Vec<FuzzAttr> {
    let mut all = vec![
        FuzzAttr {
            ty: 0,
            value: Value::Ulong(CLASSES[class as usize % CLASSES.len()] as u64),
        },
        FuzzAttr {
            ty: 5,
            value: Value::Ulong(KEY_TYPES[key_type as usize % KEY_TYPES.len()] as u64),
        },
        // Session objects only.
        FuzzAttr {
            ty: 1,
            value: Value::Bool(false),
        },
    ];
    all.extend(
        attrs
            .iter()
            .filter(|a| a.ty() != CKA_TOKEN)
            .take(24)
            .cloned(),
    );
    all
}

fuzz_target!(|input: Input| {
    let h = harness();
    let f = h.f;
    let session = FuzzSession::open();
    let s = session.h;
    let key = |name: &str, private: bool| {
        h.keys
            .iter()
            .filter(|k| k.0 == name)
            .nth(private as usize)
            .map(|k| k.1)
            .unwrap_or(h.keys[0].1)
    };
    let kek = h.keys.iter().find(|k| k.0 == "aes-kek").unwrap().1;
    let mut kwp = CK_MECHANISM {
        mechanism: CKM_AES_KEY_WRAP_PAD,
        pParameter: null_mut(),
        ulParameterLen: 0,
    };
    // SAFETY (every call below): live buffers of the stated lengths.
    unsafe {
        match &input {
            Input::Create {
                class,
                key_type,
                attrs,
            } => {
                let mut t = Template::new(&with_class(*class, *key_type, attrs));
                let (p, n) = t.parts();
                let mut out = 0;
                call("C_CreateObject", || {
                    (f.C_CreateObject.unwrap())(s, p, n, &mut out)
                });
            }
            Input::UnwrapBytes {
                rsa,
                wrapped,
                class,
                key_type,
                attrs,
            } => {
                let mut t = Template::new(&with_class(*class, *key_type, attrs));
                let (p, n) = t.parts();
                let (mut m, with) = if *rsa {
                    (
                        CK_MECHANISM {
                            mechanism: CKM_RSA_PKCS,
                            pParameter: null_mut(),
                            ulParameterLen: 0,
                        },
                        key("rsa2048", true),
                    )
                } else {
                    (kwp, kek)
                };
                let mut out = 0;
                call("C_UnwrapKey", || {
                    (f.C_UnwrapKey.unwrap())(
                        s,
                        &mut m,
                        with,
                        in_ptr(wrapped),
                        wrapped.len() as CK_ULONG,
                        p,
                        n,
                        &mut out,
                    )
                });
            }
            Input::WrapThenUnwrap {
                plain,
                class,
                key_type,
                attrs,
            } => {
                let mut ct = vec![0u8; plain.len() + 16];
                let mut len = ct.len() as CK_ULONG;
                if call("C_EncryptInit", || {
                    (f.C_EncryptInit.unwrap())(s, &mut kwp, kek)
                }) != CKR_OK
                {
                    return;
                }
                let rv = call("C_Encrypt", || {
                    (f.C_Encrypt.unwrap())(
                        s,
                        in_ptr(plain),
                        plain.len() as CK_ULONG,
                        ct.as_mut_ptr(),
                        &mut len,
                    )
                });
                if rv != CKR_OK {
                    return;
                }
                let mut t = Template::new(&with_class(*class, *key_type, attrs));
                let (p, n) = t.parts();
                let mut out = 0;
                call("C_UnwrapKey", || {
                    (f.C_UnwrapKey.unwrap())(s, &mut kwp, kek, ct.as_mut_ptr(), len, p, n, &mut out)
                });
            }
        }
    }
});
