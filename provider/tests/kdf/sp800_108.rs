//! Helpers for the NIST SP 800-108 KDF tests (PKCS #11 3.0 mechanisms
//! spec §2.42 "SP 800-108 Key Derivation"): raw CK_SP800_108_* structures,
//! so that every field (and every malformed one) reaches the module as
//! written.

use super::*;
use cryptoki_sys::*;
use std::ffi::c_void;

static FALSE: CK_BBOOL = 0;
static TRUE: CK_BBOOL = 1;
static SECRET: CK_ULONG = CKO_SECRET_KEY;
static PUBLIC: CK_ULONG = CKO_PUBLIC_KEY;
static GENERIC: CK_ULONG = CKK_GENERIC_SECRET;

fn attr<T>(ty: CK_ATTRIBUTE_TYPE, v: &T) -> CK_ATTRIBUTE {
    CK_ATTRIBUTE {
        type_: ty,
        pValue: v as *const T as *mut c_void,
        ulValueLen: std::mem::size_of::<T>() as CK_ULONG,
    }
}

/// An extractable session generic secret of `*len` bytes.
fn tpl(len: &CK_ULONG) -> Vec<CK_ATTRIBUTE> {
    vec![
        attr(CKA_CLASS, &SECRET),
        attr(CKA_KEY_TYPE, &GENERIC),
        attr(CKA_VALUE_LEN, len),
        attr(CKA_SENSITIVE, &FALSE),
        attr(CKA_EXTRACTABLE, &TRUE),
        attr(CKA_TOKEN, &FALSE),
    ]
}

pub fn ctr(bits: CK_ULONG, le: bool) -> CK_SP800_108_COUNTER_FORMAT {
    CK_SP800_108_COUNTER_FORMAT {
        bLittleEndian: le as CK_BBOOL,
        ulWidthInBits: bits,
    }
}

pub fn dkm(method: CK_ULONG, bits: CK_ULONG, le: bool) -> CK_SP800_108_DKM_LENGTH_FORMAT {
    CK_SP800_108_DKM_LENGTH_FORMAT {
        dkmLengthMethod: method,
        bLittleEndian: le as CK_BBOOL,
        ulWidthInBits: bits,
    }
}

fn param<T>(ty: CK_ULONG, v: &T) -> CK_PRF_DATA_PARAM {
    CK_PRF_DATA_PARAM {
        type_: ty,
        pValue: v as *const T as *mut c_void,
        ulValueLen: std::mem::size_of::<T>() as CK_ULONG,
    }
}

/// The counter-mode iteration variable.
pub fn iter_ctr(f: &CK_SP800_108_COUNTER_FORMAT) -> CK_PRF_DATA_PARAM {
    param(CK_SP800_108_ITERATION_VARIABLE, f)
}

/// The feedback / double-pipeline iteration variable (no value).
pub fn iter() -> CK_PRF_DATA_PARAM {
    CK_PRF_DATA_PARAM {
        type_: CK_SP800_108_ITERATION_VARIABLE,
        pValue: std::ptr::null_mut(),
        ulValueLen: 0,
    }
}

pub fn counter(f: &CK_SP800_108_COUNTER_FORMAT) -> CK_PRF_DATA_PARAM {
    param(CK_SP800_108_OPTIONAL_COUNTER, f)
}

pub fn dkm_len(f: &CK_SP800_108_DKM_LENGTH_FORMAT) -> CK_PRF_DATA_PARAM {
    param(CK_SP800_108_DKM_LENGTH, f)
}

pub fn bytes(b: &[u8]) -> CK_PRF_DATA_PARAM {
    CK_PRF_DATA_PARAM {
        type_: CK_SP800_108_BYTE_ARRAY,
        pValue: b.as_ptr() as *mut c_void,
        ulValueLen: b.len() as CK_ULONG,
    }
}

/// C_DeriveKey with `mech` (whose parameter points at `pAdditional`
/// entries built from `extra`); the primary key gets `primary`.
fn call(
    s: &Session,
    mech: &mut CK_MECHANISM,
    base: ObjectHandle,
    primary: &mut [CK_ATTRIBUTE],
) -> Result<CK_OBJECT_HANDLE, CK_RV> {
    let mut h: CK_OBJECT_HANDLE = CK_INVALID_HANDLE;
    // SAFETY: the mechanism, its parameter and the template are live.
    let rv = unsafe {
        raw().C_DeriveKey.unwrap()(
            s.handle(),
            mech,
            base.handle(),
            primary.as_mut_ptr(),
            primary.len() as CK_ULONG,
            &mut h,
        )
    };
    if rv == CKR_OK { Ok(h) } else { Err(rv) }
}

pub fn raw_value(s: &Session, h: CK_OBJECT_HANDLE) -> Vec<u8> {
    raw_attr(s, h, CKA_VALUE)
}

pub fn raw_attr(s: &Session, h: CK_OBJECT_HANDLE, ty: CK_ATTRIBUTE_TYPE) -> Vec<u8> {
    let mut buf = vec![0u8; 1024];
    let mut a = CK_ATTRIBUTE {
        type_: ty,
        pValue: buf.as_mut_ptr() as *mut c_void,
        ulValueLen: buf.len() as CK_ULONG,
    };
    // SAFETY: one attribute with a live buffer of its length.
    let rv = unsafe { raw().C_GetAttributeValue.unwrap()(s.handle(), h, &mut a, 1) };
    assert_eq!(rv, CKR_OK);
    buf.truncate(a.ulValueLen as usize);
    buf
}

/// Where a derivation's parameter varies.
pub struct Kdf<'a> {
    pub ty: CK_MECHANISM_TYPE,
    pub prf: CK_MECHANISM_TYPE,
    pub data: Vec<CK_PRF_DATA_PARAM>,
    /// Feedback mode's IV (None: NULL).
    pub iv: Option<&'a [u8]>,
}

/// Derives keys of `lens` bytes (the first the primary key, the rest
/// additional keys) and returns their values.
pub fn derive(
    s: &Session,
    k: &Kdf<'_>,
    base: ObjectHandle,
    lens: &[CK_ULONG],
) -> Result<Vec<Vec<u8>>, CK_RV> {
    let handles = derive_handles(s, k, base, lens, |_| {}).map_err(|(rv, _)| rv)?;
    Ok(handles.iter().map(|&h| raw_value(s, h)).collect())
}

/// As [`derive`], giving handles; `edit` may change the additional
/// keys' templates first. On failure, also the additional keys'
/// `phKey` values as the module left them.
pub fn derive_handles(
    s: &Session,
    k: &Kdf<'_>,
    base: ObjectHandle,
    lens: &[CK_ULONG],
    edit: impl FnOnce(&mut Vec<Vec<CK_ATTRIBUTE>>),
) -> Result<Vec<CK_OBJECT_HANDLE>, (CK_RV, Vec<CK_OBJECT_HANDLE>)> {
    let mut templates: Vec<Vec<CK_ATTRIBUTE>> = lens[1..].iter().map(tpl).collect();
    edit(&mut templates);
    let mut outs = vec![0xdead as CK_OBJECT_HANDLE; templates.len()];
    let mut extra: Vec<CK_DERIVED_KEY> = templates
        .iter_mut()
        .zip(outs.iter_mut())
        .map(|(t, o)| CK_DERIVED_KEY {
            pTemplate: t.as_mut_ptr(),
            ulAttributeCount: t.len() as CK_ULONG,
            phKey: o,
        })
        .collect();
    let (n, p) = if extra.is_empty() {
        (0, std::ptr::null_mut())
    } else {
        (extra.len() as CK_ULONG, extra.as_mut_ptr())
    };
    let mut data = k.data.clone();
    let r = with_mechanism(k, &mut data, n, p, |m| call(s, m, base, &mut tpl(&lens[0])));
    drop(extra);
    match r {
        Ok(h) => Ok(std::iter::once(h).chain(outs).collect()),
        Err(rv) => Err((rv, outs)),
    }
}

/// Builds the mechanism of `k` and runs `f` on it.
pub fn with_mechanism<R>(
    k: &Kdf<'_>,
    data: &mut [CK_PRF_DATA_PARAM],
    n_keys: CK_ULONG,
    keys: *mut CK_DERIVED_KEY,
    f: impl FnOnce(&mut CK_MECHANISM) -> R,
) -> R {
    let mut counter_params = CK_SP800_108_KDF_PARAMS {
        prfType: k.prf,
        ulNumberOfDataParams: data.len() as CK_ULONG,
        pDataParams: data.as_mut_ptr(),
        ulAdditionalDerivedKeys: n_keys,
        pAdditionalDerivedKeys: keys,
    };
    let iv = k.iv.unwrap_or(&[]);
    let mut feedback_params = CK_SP800_108_FEEDBACK_KDF_PARAMS {
        prfType: k.prf,
        ulNumberOfDataParams: data.len() as CK_ULONG,
        pDataParams: data.as_mut_ptr(),
        ulIVLen: iv.len() as CK_ULONG,
        pIV: if k.iv.is_some() {
            iv.as_ptr() as *mut u8
        } else {
            std::ptr::null_mut()
        },
        ulAdditionalDerivedKeys: n_keys,
        pAdditionalDerivedKeys: keys,
    };
    let mut m = if k.ty == CKM_SP800_108_FEEDBACK_KDF {
        CK_MECHANISM {
            mechanism: k.ty,
            pParameter: &mut feedback_params as *mut _ as *mut c_void,
            ulParameterLen: std::mem::size_of::<CK_SP800_108_FEEDBACK_KDF_PARAMS>() as CK_ULONG,
        }
    } else {
        CK_MECHANISM {
            mechanism: k.ty,
            pParameter: &mut counter_params as *mut _ as *mut c_void,
            ulParameterLen: std::mem::size_of::<CK_SP800_108_KDF_PARAMS>() as CK_ULONG,
        }
    };
    f(&mut m)
}

pub fn aes(s: &Session, value: &[u8]) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::AES),
        Attribute::Value(value.to_vec()),
        Attribute::Derive(true),
        Attribute::Token(false),
    ])
    .unwrap()
}

pub fn n_objects(s: &Session) -> usize {
    s.find_objects(&[]).unwrap().len()
}

pub fn tpl_public(t: &mut [CK_ATTRIBUTE]) {
    t[0] = attr(CKA_CLASS, &PUBLIC);
}
