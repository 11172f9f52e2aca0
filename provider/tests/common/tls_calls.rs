//! Raw calls of the TLS 1.2 mechanisms (cryptoki has no CK_TLS12_* or
//! CK_TLS_MAC_PARAMS): every parameter struct built as a C caller would,
//! through the module's function list. Shared by `tests/tls.rs` and the
//! attack tests.
#![allow(dead_code)]

use crate::common::raw;
use cryptoki::object::{Attribute, ObjectHandle};
use cryptoki::session::Session;
use cryptoki_sys::*;

fn check(rv: CK_RV) -> Result<(), CK_RV> {
    if rv == CKR_OK { Ok(()) } else { Err(rv) }
}

fn derive(
    s: &Session,
    mech: &mut CK_MECHANISM,
    base: ObjectHandle,
    template: &[Attribute],
    ph: *mut CK_OBJECT_HANDLE,
) -> Result<(), CK_RV> {
    let mut t: Vec<CK_ATTRIBUTE> = template.iter().map(Into::into).collect();
    // SAFETY: every pointer is live for its stated length during the call.
    check(unsafe {
        raw().C_DeriveKey.unwrap()(
            s.handle(),
            mech,
            base.handle(),
            t.as_mut_ptr(),
            t.len() as CK_ULONG,
            ph,
        )
    })
}

fn mechanism<T>(ty: CK_MECHANISM_TYPE, p: &mut T) -> CK_MECHANISM {
    CK_MECHANISM {
        mechanism: ty,
        pParameter: (p as *mut T).cast(),
        ulParameterLen: std::mem::size_of::<T>() as CK_ULONG,
    }
}

fn random_data(client: &[u8], server: &[u8]) -> CK_SSL3_RANDOM_DATA {
    CK_SSL3_RANDOM_DATA {
        pClientRandom: client.as_ptr() as *mut u8,
        ulClientRandomLen: client.len() as CK_ULONG,
        pServerRandom: server.as_ptr() as *mut u8,
        ulServerRandomLen: server.len() as CK_ULONG,
    }
}

fn handle(h: CK_OBJECT_HANDLE) -> ObjectHandle {
    // SAFETY: a handle the module just returned.
    unsafe { ObjectHandle::new_from_raw(h) }
}

/// `CKM_TLS12_MASTER_KEY_DERIVE[_DH]`; `version` is `pVersion` (None: NULL).
#[allow(clippy::too_many_arguments)]
pub fn master(
    s: &Session,
    ty: CK_MECHANISM_TYPE,
    base: ObjectHandle,
    prf: CK_MECHANISM_TYPE,
    client: &[u8],
    server: &[u8],
    version: Option<&mut CK_VERSION>,
    template: &[Attribute],
) -> Result<ObjectHandle, CK_RV> {
    let mut p = CK_TLS12_MASTER_KEY_DERIVE_PARAMS {
        RandomInfo: random_data(client, server),
        pVersion: version.map_or(std::ptr::null_mut(), |v| v as *mut CK_VERSION),
        prfHashMechanism: prf,
    };
    let mut m = mechanism(ty, &mut p);
    let mut h = 0;
    derive(s, &mut m, base, template, &mut h)?;
    Ok(handle(h))
}

/// `CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE[_DH]`.
pub fn extended_master(
    s: &Session,
    ty: CK_MECHANISM_TYPE,
    base: ObjectHandle,
    prf: CK_MECHANISM_TYPE,
    session_hash: &[u8],
    version: Option<&mut CK_VERSION>,
    template: &[Attribute],
) -> Result<ObjectHandle, CK_RV> {
    let mut p = CK_TLS12_EXTENDED_MASTER_KEY_DERIVE_PARAMS {
        prfHashMechanism: prf,
        pSessionHash: session_hash.as_ptr() as *mut u8,
        ulSessionHashLen: session_hash.len() as CK_ULONG,
        pVersion: version.map_or(std::ptr::null_mut(), |v| v as *mut CK_VERSION),
    };
    let mut m = mechanism(ty, &mut p);
    let mut h = 0;
    derive(s, &mut m, base, template, &mut h)?;
    Ok(handle(h))
}

/// What `CKM_TLS12_KEY_AND_MAC_DERIVE` returned: the four handles (raw,
/// `CK_INVALID_HANDLE` for absent keys) and the two IV buffers as the
/// module left them.
#[derive(Debug)]
pub struct KeyMat {
    pub handles: [CK_OBJECT_HANDLE; 4],
    pub iv_client: Vec<u8>,
    pub iv_server: Vec<u8>,
}

/// `CKM_TLS12_KEY_AND_MAC_DERIVE` / `CKM_TLS12_KEY_SAFE_DERIVE` with sizes
/// in bits; the IV buffers are `iv_bits / 8` bytes of 0xEE beforehand.
#[allow(clippy::too_many_arguments)]
pub fn key_mat(
    s: &Session,
    ty: CK_MECHANISM_TYPE,
    base: ObjectHandle,
    prf: CK_MECHANISM_TYPE,
    (mac_bits, key_bits, iv_bits): (CK_ULONG, CK_ULONG, CK_ULONG),
    client: &[u8],
    server: &[u8],
    template: &[Attribute],
) -> Result<KeyMat, CK_RV> {
    let n = (iv_bits / 8) as usize;
    let mut iv_client = vec![0xEE; n.max(1)];
    let mut iv_server = vec![0xEE; n.max(1)];
    let mut out = CK_SSL3_KEY_MAT_OUT {
        hClientMacSecret: 0x5555,
        hServerMacSecret: 0x5555,
        hClientKey: 0x5555,
        hServerKey: 0x5555,
        pIVClient: iv_client.as_mut_ptr(),
        pIVServer: iv_server.as_mut_ptr(),
    };
    let mut p = CK_TLS12_KEY_MAT_PARAMS {
        ulMacSizeInBits: mac_bits,
        ulKeySizeInBits: key_bits,
        ulIVSizeInBits: iv_bits,
        bIsExport: 0,
        RandomInfo: random_data(client, server),
        pReturnedKeyMaterial: &mut out,
        prfHashMechanism: prf,
    };
    let mut m = mechanism(ty, &mut p);
    let r = derive(s, &mut m, base, template, std::ptr::null_mut());
    let handles = [
        out.hClientMacSecret,
        out.hServerMacSecret,
        out.hClientKey,
        out.hServerKey,
    ];
    if let Err(rv) = r {
        // Refused parameters leave the struct as it was; a failure after
        // reading them reports no handle.
        assert!(
            handles == [CK_INVALID_HANDLE; 4] || handles == [0x5555; 4],
            "failure leaves no handle: {handles:?}"
        );
        return Err(rv);
    }
    iv_client.truncate(n);
    iv_server.truncate(n);
    Ok(KeyMat {
        handles,
        iv_client,
        iv_server,
    })
}

/// `CKM_TLS_KDF` / `CKM_TLS12_KDF`; `context` None is a NULL pointer.
#[allow(clippy::too_many_arguments)]
pub fn kdf(
    s: &Session,
    ty: CK_MECHANISM_TYPE,
    base: ObjectHandle,
    prf: CK_MECHANISM_TYPE,
    label: &[u8],
    client: &[u8],
    server: &[u8],
    context: Option<&[u8]>,
    template: &[Attribute],
) -> Result<ObjectHandle, CK_RV> {
    let mut p = CK_TLS_KDF_PARAMS {
        prfMechanism: prf,
        pLabel: label.as_ptr() as *mut u8,
        ulLabelLength: label.len() as CK_ULONG,
        RandomInfo: random_data(client, server),
        pContextData: context.map_or(std::ptr::null_mut(), |c| c.as_ptr() as *mut u8),
        ulContextDataLength: context.map_or(0, |c| c.len() as CK_ULONG),
    };
    let mut m = mechanism(ty, &mut p);
    let mut h = 0;
    derive(s, &mut m, base, template, &mut h)?;
    Ok(handle(h))
}

/// `CK_TLS_MAC_PARAMS`.
pub fn mac_params(
    prf: CK_MECHANISM_TYPE,
    len: CK_ULONG,
    server_or_client: CK_ULONG,
) -> CK_TLS_MAC_PARAMS {
    CK_TLS_MAC_PARAMS {
        prfHashMechanism: prf,
        ulMacLength: len,
        ulServerOrClient: server_or_client,
    }
}

/// `CKM_TLS_MAC` (or `ty`) over `parts`: `C_SignInit`, one `C_SignUpdate`
/// per part, `C_SignFinal` (with a size query first).
pub fn mac(
    s: &Session,
    ty: CK_MECHANISM_TYPE,
    key: ObjectHandle,
    mut p: CK_TLS_MAC_PARAMS,
    parts: &[&[u8]],
) -> Result<Vec<u8>, CK_RV> {
    let f = raw();
    let mut m = mechanism(ty, &mut p);
    // SAFETY: every pointer is live for its stated length during each call.
    unsafe {
        check(f.C_SignInit.unwrap()(s.handle(), &mut m, key.handle()))?;
        for part in parts {
            check(f.C_SignUpdate.unwrap()(
                s.handle(),
                part.as_ptr() as *mut u8,
                part.len() as CK_ULONG,
            ))?;
        }
        let mut len = 0;
        check(f.C_SignFinal.unwrap()(
            s.handle(),
            std::ptr::null_mut(),
            &mut len,
        ))?;
        let mut out = vec![0u8; len as usize];
        check(f.C_SignFinal.unwrap()(
            s.handle(),
            out.as_mut_ptr(),
            &mut len,
        ))?;
        out.truncate(len as usize);
        Ok(out)
    }
}

/// `C_VerifyInit` + `C_VerifyUpdate` per part + `C_VerifyFinal`.
pub fn mac_verify(
    s: &Session,
    ty: CK_MECHANISM_TYPE,
    key: ObjectHandle,
    mut p: CK_TLS_MAC_PARAMS,
    parts: &[&[u8]],
    signature: &[u8],
) -> Result<(), CK_RV> {
    let f = raw();
    let mut m = mechanism(ty, &mut p);
    // SAFETY: as in `mac`.
    unsafe {
        check(f.C_VerifyInit.unwrap()(s.handle(), &mut m, key.handle()))?;
        for part in parts {
            check(f.C_VerifyUpdate.unwrap()(
                s.handle(),
                part.as_ptr() as *mut u8,
                part.len() as CK_ULONG,
            ))?;
        }
        check(f.C_VerifyFinal.unwrap()(
            s.handle(),
            signature.as_ptr() as *mut u8,
            signature.len() as CK_ULONG,
        ))
    }
}
