//! Calls through the raw (2.40) function list for the mechanisms cryptoki
//! 0.12 does not name (SHA-3, SHA-512/t, the hash key derivations, PBKDF2,
//! MD5, DSA, Diffie-Hellman): templates as (type, bytes) pairs, one helper
//! per C function, each returning the module's `CK_RV` as `Err`. Include
//! with `#[path = "common/raw_calls.rs"]` beside `mod common;`. (The 3.0
//! message functions have their own helpers, `raw_message.rs`.)
#![allow(dead_code)]

use super::common::*;
use cryptoki::session::Session;
use cryptoki_sys::*;

/// A template attribute: type and value bytes.
pub type A = (CK_ATTRIBUTE_TYPE, Vec<u8>);

/// A `CK_ULONG` attribute.
pub fn ul(ty: CK_ATTRIBUTE_TYPE, v: CK_ULONG) -> A {
    (ty, ul_bytes(v))
}

/// A `CK_BBOOL` attribute.
pub fn flag(ty: CK_ATTRIBUTE_TYPE, v: bool) -> A {
    (ty, vec![v as u8])
}

/// The bytes of a `CK_ULONG` attribute value (as `C_GetAttributeValue`
/// returns it).
pub fn ul_bytes(v: CK_ULONG) -> Vec<u8> {
    v.to_ne_bytes().to_vec()
}

/// The bytes of `CK_TRUE`.
pub fn yes() -> Vec<u8> {
    vec![CK_TRUE]
}

/// `CKR_OK` as `Ok`, any other code as `Err`.
pub fn check(rv: CK_RV) -> Result<(), CK_RV> {
    if rv == CKR_OK { Ok(()) } else { Err(rv) }
}

pub fn raw_template(t: &mut [A]) -> Vec<CK_ATTRIBUTE> {
    t.iter_mut()
        .map(|(ty, v)| CK_ATTRIBUTE {
            type_: *ty,
            pValue: v.as_mut_ptr().cast(),
            ulValueLen: v.len() as CK_ULONG,
        })
        .collect()
}

/// A `CK_MECHANISM` with an optional `CK_ULONG` parameter (the
/// `CK_MAC_GENERAL_PARAMS` of the `_GENERAL` HMACs); `None`: no parameter.
pub fn mech(ty: CK_MECHANISM_TYPE, param: Option<&mut CK_ULONG>) -> CK_MECHANISM {
    match param {
        None => CK_MECHANISM {
            mechanism: ty,
            pParameter: std::ptr::null_mut(),
            ulParameterLen: 0,
        },
        Some(p) => CK_MECHANISM {
            mechanism: ty,
            pParameter: (p as *mut CK_ULONG).cast(),
            ulParameterLen: size_of::<CK_ULONG>() as CK_ULONG,
        },
    }
}

/// `C_CreateObject`.
pub fn create(s: &Session, mut t: Vec<A>) -> Result<CK_OBJECT_HANDLE, CK_RV> {
    let mut attrs = raw_template(&mut t);
    let mut h = 0;
    // SAFETY: every pValue points at a live buffer of its length.
    let rv = unsafe {
        raw().C_CreateObject.unwrap()(s.handle(), attrs.as_mut_ptr(), attrs.len() as _, &mut h)
    };
    if rv == CKR_OK { Ok(h) } else { Err(rv) }
}

/// A session secret key of `key_type` with the value `value` and the
/// attributes `more` (made or the test fails).
pub fn secret(s: &Session, key_type: CK_KEY_TYPE, value: &[u8], more: Vec<A>) -> CK_OBJECT_HANDLE {
    let mut t = vec![
        ul(CKA_CLASS, CKO_SECRET_KEY),
        ul(CKA_KEY_TYPE, key_type),
        (CKA_VALUE, value.to_vec()),
        flag(CKA_TOKEN, false),
    ];
    t.extend(more);
    create(s, t).unwrap()
}

/// A session secret key that signs and verifies.
pub fn mac_key(s: &Session, key_type: CK_KEY_TYPE, value: &[u8]) -> CK_OBJECT_HANDLE {
    secret(
        s,
        key_type,
        value,
        vec![flag(CKA_SIGN, true), flag(CKA_VERIFY, true)],
    )
}

/// `C_GetAttributeValue` of one attribute: a size query, then the read.
pub fn attr(s: &Session, h: CK_OBJECT_HANDLE, ty: CK_ATTRIBUTE_TYPE) -> Result<Vec<u8>, CK_RV> {
    let mut a = CK_ATTRIBUTE {
        type_: ty,
        pValue: std::ptr::null_mut(),
        ulValueLen: 0,
    };
    // SAFETY: a size query, then a read into a buffer of that size.
    unsafe {
        check(raw().C_GetAttributeValue.unwrap()(s.handle(), h, &mut a, 1))?;
        let mut v = vec![0u8; a.ulValueLen as usize];
        a.pValue = v.as_mut_ptr().cast();
        check(raw().C_GetAttributeValue.unwrap()(s.handle(), h, &mut a, 1))?;
        Ok(v)
    }
}

/// `C_Digest` single-part, or multi-part over `chunk`-byte pieces.
pub fn digest(s: &Session, ty: CK_MECHANISM_TYPE, data: &[u8], chunk: Option<usize>) -> Vec<u8> {
    let f = raw();
    let mut m = mech(ty, None);
    let mut out = [0u8; 64];
    let mut len = out.len() as CK_ULONG;
    // SAFETY: valid session, mechanism and buffers of the given lengths.
    unsafe {
        assert_eq!(f.C_DigestInit.unwrap()(s.handle(), &mut m), CKR_OK);
        match chunk {
            None => assert_eq!(
                f.C_Digest.unwrap()(
                    s.handle(),
                    data.as_ptr() as *mut u8,
                    data.len() as CK_ULONG,
                    out.as_mut_ptr(),
                    &mut len
                ),
                CKR_OK
            ),
            Some(c) => {
                for piece in data.chunks(c) {
                    let rv = f.C_DigestUpdate.unwrap()(
                        s.handle(),
                        piece.as_ptr() as *mut u8,
                        piece.len() as CK_ULONG,
                    );
                    assert_eq!(rv, CKR_OK);
                }
                let rv = f.C_DigestFinal.unwrap()(s.handle(), out.as_mut_ptr(), &mut len);
                assert_eq!(rv, CKR_OK);
            }
        }
    }
    out[..len as usize].to_vec()
}

/// `C_Sign` (single-part, or multi-part over `chunk`).
pub fn sign(
    s: &Session,
    mut m: CK_MECHANISM,
    key: CK_OBJECT_HANDLE,
    data: &[u8],
    chunk: Option<usize>,
) -> Result<Vec<u8>, CK_RV> {
    let f = raw();
    let mut out = vec![0u8; 1024];
    let mut len = out.len() as CK_ULONG;
    // SAFETY: valid session, mechanism and buffers of the given lengths.
    unsafe {
        let rv = f.C_SignInit.unwrap()(s.handle(), &mut m, key);
        if rv != CKR_OK {
            return Err(rv);
        }
        let rv = match chunk {
            None => f.C_Sign.unwrap()(
                s.handle(),
                data.as_ptr() as *mut u8,
                data.len() as CK_ULONG,
                out.as_mut_ptr(),
                &mut len,
            ),
            Some(c) => {
                for piece in data.chunks(c) {
                    let rv = f.C_SignUpdate.unwrap()(
                        s.handle(),
                        piece.as_ptr() as *mut u8,
                        piece.len() as CK_ULONG,
                    );
                    assert_eq!(rv, CKR_OK);
                }
                f.C_SignFinal.unwrap()(s.handle(), out.as_mut_ptr(), &mut len)
            }
        };
        if rv != CKR_OK {
            return Err(rv);
        }
    }
    out.truncate(len as usize);
    Ok(out)
}

/// `C_VerifyInit` + `C_Verify`: the init's error or the verification's.
pub fn verify(
    s: &Session,
    mut m: CK_MECHANISM,
    key: CK_OBJECT_HANDLE,
    data: &[u8],
    sig: &[u8],
) -> CK_RV {
    let f = raw();
    // SAFETY: valid session, mechanism and buffers of the given lengths.
    unsafe {
        let rv = f.C_VerifyInit.unwrap()(s.handle(), &mut m, key);
        if rv != CKR_OK {
            return rv;
        }
        f.C_Verify.unwrap()(
            s.handle(),
            data.as_ptr() as *mut u8,
            data.len() as CK_ULONG,
            sig.as_ptr() as *mut u8,
            sig.len() as CK_ULONG,
        )
    }
}

/// `C_DeriveKey` with a parameterless mechanism.
pub fn derive(
    s: &Session,
    ty: CK_MECHANISM_TYPE,
    base: CK_OBJECT_HANDLE,
    t: Vec<A>,
) -> Result<CK_OBJECT_HANDLE, CK_RV> {
    derive_with(s, ty, None, base, t)
}

/// `C_DeriveKey` with a byte-string parameter (`None`: no parameter).
pub fn derive_with(
    s: &Session,
    ty: CK_MECHANISM_TYPE,
    param: Option<&[u8]>,
    base: CK_OBJECT_HANDLE,
    mut t: Vec<A>,
) -> Result<CK_OBJECT_HANDLE, CK_RV> {
    let mut param = param.map(<[u8]>::to_vec);
    let mut m = mech(ty, None);
    if let Some(p) = param.as_mut() {
        m.pParameter = p.as_mut_ptr().cast();
        m.ulParameterLen = p.len() as CK_ULONG;
    }
    let mut attrs = raw_template(&mut t);
    let mut h = 0;
    // SAFETY: live mechanism, parameter and template.
    check(unsafe {
        raw().C_DeriveKey.unwrap()(
            s.handle(),
            &mut m,
            base,
            attrs.as_mut_ptr(),
            attrs.len() as CK_ULONG,
            &mut h,
        )
    })?;
    Ok(h)
}

/// `C_GenerateKey` with a parameterless mechanism.
pub fn generate(s: &Session, ty: CK_MECHANISM_TYPE, t: Vec<A>) -> Result<CK_OBJECT_HANDLE, CK_RV> {
    generate_with(s, mech(ty, None), t)
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn vectors(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

pub fn opt_hex(s: &str) -> Vec<u8> {
    if s == "-" { Vec::new() } else { unhex(s) }
}

/// `C_GenerateKey` with a mechanism built by the caller (a parameter).
pub fn generate_with(
    s: &Session,
    mut m: CK_MECHANISM,
    mut t: Vec<A>,
) -> Result<CK_OBJECT_HANDLE, CK_RV> {
    let mut attrs = raw_template(&mut t);
    let mut h = 0;
    // SAFETY: valid mechanism and template buffers.
    let rv = unsafe {
        raw().C_GenerateKey.unwrap()(
            s.handle(),
            &mut m,
            attrs.as_mut_ptr(),
            attrs.len() as _,
            &mut h,
        )
    };
    if rv == CKR_OK { Ok(h) } else { Err(rv) }
}

/// `C_GenerateKeyPair` with a parameterless mechanism: (public, private).
pub fn generate_pair(
    s: &Session,
    ty: CK_MECHANISM_TYPE,
    mut public: Vec<A>,
    mut private: Vec<A>,
) -> Result<(CK_OBJECT_HANDLE, CK_OBJECT_HANDLE), CK_RV> {
    let (mut pa, mut sa) = (raw_template(&mut public), raw_template(&mut private));
    let mut m = mech(ty, None);
    let (mut hp, mut hs) = (0, 0);
    // SAFETY: live mechanism and templates.
    check(unsafe {
        raw().C_GenerateKeyPair.unwrap()(
            s.handle(),
            &mut m,
            pa.as_mut_ptr(),
            pa.len() as CK_ULONG,
            sa.as_mut_ptr(),
            sa.len() as CK_ULONG,
            &mut hp,
            &mut hs,
        )
    })?;
    Ok((hp, hs))
}
