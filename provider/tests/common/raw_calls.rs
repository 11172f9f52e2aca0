//! Calls through the raw function list for the mechanisms cryptoki 0.12
//! does not name (SHA-3, SHA-512/t, the hash key derivations, PBKDF2):
//! templates as (type, bytes) pairs, and one helper per C function.
#![allow(dead_code)]

use super::common::*;
use cryptoki::session::Session;
use cryptoki_sys::*;

/// A template attribute: type and value bytes.
pub type A = (CK_ATTRIBUTE_TYPE, Vec<u8>);

pub fn ul(ty: CK_ATTRIBUTE_TYPE, v: CK_ULONG) -> A {
    (ty, v.to_ne_bytes().to_vec())
}

pub fn flag(ty: CK_ATTRIBUTE_TYPE, v: bool) -> A {
    (ty, vec![v as u8])
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
/// `CK_MAC_GENERAL_PARAMS` of the `_GENERAL` HMACs).
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

pub fn create(s: &Session, mut t: Vec<A>) -> Result<CK_OBJECT_HANDLE, CK_RV> {
    let mut attrs = raw_template(&mut t);
    let mut h = 0;
    // SAFETY: every pValue points at a live buffer of its length.
    let rv = unsafe {
        raw().C_CreateObject.unwrap()(s.handle(), attrs.as_mut_ptr(), attrs.len() as _, &mut h)
    };
    if rv == CKR_OK { Ok(h) } else { Err(rv) }
}

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

pub fn mac_key(s: &Session, key_type: CK_KEY_TYPE, value: &[u8]) -> CK_OBJECT_HANDLE {
    secret(
        s,
        key_type,
        value,
        vec![flag(CKA_SIGN, true), flag(CKA_VERIFY, true)],
    )
}

pub fn attr(s: &Session, h: CK_OBJECT_HANDLE, ty: CK_ATTRIBUTE_TYPE) -> Result<Vec<u8>, CK_RV> {
    let mut buf = vec![0u8; 1024];
    let mut a = CK_ATTRIBUTE {
        type_: ty,
        pValue: buf.as_mut_ptr().cast(),
        ulValueLen: buf.len() as CK_ULONG,
    };
    // SAFETY: the attribute points at a live buffer of its length.
    let rv = unsafe { raw().C_GetAttributeValue.unwrap()(s.handle(), h, &mut a, 1) };
    if rv != CKR_OK {
        return Err(rv);
    }
    buf.truncate(a.ulValueLen as usize);
    Ok(buf)
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

pub fn derive(
    s: &Session,
    ty: CK_MECHANISM_TYPE,
    base: CK_OBJECT_HANDLE,
    mut t: Vec<A>,
) -> Result<CK_OBJECT_HANDLE, CK_RV> {
    let mut m = mech(ty, None);
    let mut attrs = raw_template(&mut t);
    let mut h = 0;
    // SAFETY: valid mechanism and template buffers.
    let rv = unsafe {
        raw().C_DeriveKey.unwrap()(
            s.handle(),
            &mut m,
            base,
            attrs.as_mut_ptr(),
            attrs.len() as _,
            &mut h,
        )
    };
    if rv == CKR_OK { Ok(h) } else { Err(rv) }
}

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
