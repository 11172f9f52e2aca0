//! Owned templates and the raw calls the tests of mechanisms that the
//! `cryptoki` crate does not name (DSA, Diffie-Hellman) make through the
//! module's function list. Include with `#[path = "common/raw_tpl.rs"]`
//! beside `mod common;`.
#![allow(dead_code)]

use crate::common::raw;
use cryptoki::session::Session;
use cryptoki_sys::*;
use std::ptr::null_mut;

/// An owned template: attribute types and values.
pub type Tpl = Vec<(CK_ATTRIBUTE_TYPE, Vec<u8>)>;

/// A `CK_ULONG` attribute value.
pub fn ul(v: CK_ULONG) -> Vec<u8> {
    v.to_ne_bytes().to_vec()
}

/// `CK_TRUE`.
pub fn yes() -> Vec<u8> {
    vec![CK_TRUE]
}

/// `CK_FALSE`.
pub fn no() -> Vec<u8> {
    vec![CK_FALSE]
}

/// The template as `CK_ATTRIBUTE`s pointing into `t`.
pub fn raw_attrs(t: &mut Tpl) -> Vec<CK_ATTRIBUTE> {
    t.iter_mut()
        .map(|(ty, v)| CK_ATTRIBUTE {
            type_: *ty,
            pValue: v.as_mut_ptr().cast(),
            ulValueLen: v.len() as CK_ULONG,
        })
        .collect()
}

/// A mechanism without a parameter.
pub fn mech(ty: CK_MECHANISM_TYPE) -> CK_MECHANISM {
    CK_MECHANISM {
        mechanism: ty,
        pParameter: null_mut(),
        ulParameterLen: 0,
    }
}

/// `CKR_OK` as `Ok`.
pub fn check(rv: CK_RV) -> Result<(), CK_RV> {
    if rv == CKR_OK { Ok(()) } else { Err(rv) }
}

/// `C_CreateObject`.
pub fn create(s: &Session, mut t: Tpl) -> Result<CK_OBJECT_HANDLE, CK_RV> {
    let mut a = raw_attrs(&mut t);
    let mut h = 0;
    // SAFETY: every attribute points at a live buffer of its length.
    check(unsafe {
        raw().C_CreateObject.unwrap()(s.handle(), a.as_mut_ptr(), a.len() as CK_ULONG, &mut h)
    })?;
    Ok(h)
}

/// `C_GetAttributeValue` of one attribute: a size query, then the read.
pub fn get(s: &Session, h: CK_OBJECT_HANDLE, ty: CK_ATTRIBUTE_TYPE) -> Result<Vec<u8>, CK_RV> {
    let mut a = CK_ATTRIBUTE {
        type_: ty,
        pValue: null_mut(),
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

/// `C_GenerateKey` with a parameterless mechanism.
pub fn generate_key(
    s: &Session,
    ty: CK_MECHANISM_TYPE,
    mut t: Tpl,
) -> Result<CK_OBJECT_HANDLE, CK_RV> {
    let mut a = raw_attrs(&mut t);
    let mut m = mech(ty);
    let mut h = 0;
    // SAFETY: live mechanism and template.
    check(unsafe {
        raw().C_GenerateKey.unwrap()(
            s.handle(),
            &mut m,
            a.as_mut_ptr(),
            a.len() as CK_ULONG,
            &mut h,
        )
    })?;
    Ok(h)
}

/// `C_GenerateKeyPair` with a parameterless mechanism: (public, private).
pub fn generate_pair(
    s: &Session,
    ty: CK_MECHANISM_TYPE,
    mut public: Tpl,
    mut private: Tpl,
) -> Result<(CK_OBJECT_HANDLE, CK_OBJECT_HANDLE), CK_RV> {
    let (mut pa, mut sa) = (raw_attrs(&mut public), raw_attrs(&mut private));
    let mut m = mech(ty);
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

/// `C_DeriveKey` with a byte-string parameter (`None`: no parameter).
pub fn derive(
    s: &Session,
    ty: CK_MECHANISM_TYPE,
    param: Option<&[u8]>,
    base: CK_OBJECT_HANDLE,
    mut t: Tpl,
) -> Result<CK_OBJECT_HANDLE, CK_RV> {
    let mut a = raw_attrs(&mut t);
    let mut param = param.map(<[u8]>::to_vec);
    let mut m = mech(ty);
    if let Some(p) = param.as_mut() {
        m.pParameter = p.as_mut_ptr().cast();
        m.ulParameterLen = p.len() as CK_ULONG;
    }
    let mut h = 0;
    // SAFETY: live mechanism, parameter and template.
    check(unsafe {
        raw().C_DeriveKey.unwrap()(
            s.handle(),
            &mut m,
            base,
            a.as_mut_ptr(),
            a.len() as CK_ULONG,
            &mut h,
        )
    })?;
    Ok(h)
}
