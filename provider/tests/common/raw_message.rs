//! Raw calls of the message-based encryption functions (base spec 3.0
//! §5.19 / §5.20) through the 3.0 function list, for any per-message
//! parameter structure (`CK_GCM_MESSAGE_PARAMS`, `CK_CCM_MESSAGE_PARAMS`,
//! `CK_SALSA20_CHACHA20_POLY1305_MSG_PARAMS`): the `cryptoki` crate names
//! only GCM's. Include with `#[path = "../common/raw_message.rs"]` beside
//! `mod common;` and `raw_calls.rs` (whose key helpers it uses).
#![allow(dead_code)]

use crate::raw_calls::{flag, generate, secret, ul};
use cryptoki::object::ObjectHandle;
use cryptoki::session::Session;
use cryptoki_sys::*;
use std::ptr::null_mut;

/// A per-message parameter structure, passed by pointer and size.
pub trait MsgParam: Sized {
    fn raw(&mut self) -> (*mut std::ffi::c_void, CK_ULONG) {
        (
            (self as *mut Self).cast(),
            std::mem::size_of::<Self>() as CK_ULONG,
        )
    }
}
impl MsgParam for CK_GCM_MESSAGE_PARAMS {}
impl MsgParam for CK_CCM_MESSAGE_PARAMS {}
impl MsgParam for CK_SALSA20_CHACHA20_POLY1305_MSG_PARAMS {}

/// `b`'s address, or NULL when empty.
pub fn ptr_or_null(b: &[u8]) -> *mut u8 {
    if b.is_empty() {
        null_mut()
    } else {
        b.as_ptr() as *mut u8
    }
}

/// `C_MessageEncryptInit` / `C_MessageDecryptInit` with `mechanism` and no
/// parameter.
pub fn message_init(
    l: &CK_FUNCTION_LIST_3_0,
    s: &Session,
    mechanism: CK_MECHANISM_TYPE,
    key: ObjectHandle,
    encrypt: bool,
) -> CK_RV {
    let mut mech = CK_MECHANISM {
        mechanism,
        pParameter: null_mut(),
        ulParameterLen: 0,
    };
    let f = if encrypt {
        l.C_MessageEncryptInit.unwrap()
    } else {
        l.C_MessageDecryptInit.unwrap()
    };
    // SAFETY: valid mechanism.
    unsafe { f(s.handle(), &mut mech, key.handle()) }
}

/// `C_MessageEncryptFinal` / `C_MessageDecryptFinal`.
pub fn message_final(l: &CK_FUNCTION_LIST_3_0, s: &Session, encrypt: bool) -> CK_RV {
    let f = if encrypt {
        l.C_MessageEncryptFinal.unwrap()
    } else {
        l.C_MessageDecryptFinal.unwrap()
    };
    // SAFETY: no pointers.
    unsafe { f(s.handle()) }
}

/// One `C_EncryptMessage` / `C_DecryptMessage`; `out` `None` is a size
/// query. Returns the rv and the length reported.
pub fn message(
    l: &CK_FUNCTION_LIST_3_0,
    s: &Session,
    encrypt: bool,
    params: &mut impl MsgParam,
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
    let (pp, pl) = params.raw();
    // SAFETY: every buffer valid for the length given.
    let rv = unsafe {
        f(
            s.handle(),
            pp,
            pl,
            ptr_or_null(aad),
            aad.len() as CK_ULONG,
            ptr_or_null(input),
            input.len() as CK_ULONG,
            p,
            &mut len,
        )
    };
    (rv, len)
}

/// `C_EncryptMessageBegin` / `C_DecryptMessageBegin`.
pub fn begin(
    l: &CK_FUNCTION_LIST_3_0,
    s: &Session,
    encrypt: bool,
    params: &mut impl MsgParam,
    aad: &[u8],
) -> CK_RV {
    let f = if encrypt {
        l.C_EncryptMessageBegin.unwrap()
    } else {
        l.C_DecryptMessageBegin.unwrap()
    };
    let (pp, pl) = params.raw();
    // SAFETY: every buffer valid for the length given.
    unsafe { f(s.handle(), pp, pl, ptr_or_null(aad), aad.len() as CK_ULONG) }
}

/// `C_EncryptMessageNext` / `C_DecryptMessageNext`; `params` `None` passes
/// NULL, `out` `None` is a size query. Returns the rv and the length
/// reported.
pub fn next<P: MsgParam>(
    l: &CK_FUNCTION_LIST_3_0,
    s: &Session,
    encrypt: bool,
    params: Option<&mut P>,
    input: &[u8],
    out: Option<&mut [u8]>,
    last: bool,
) -> (CK_RV, CK_ULONG) {
    let (p, mut len) = match out {
        Some(o) => (o.as_mut_ptr(), o.len() as CK_ULONG),
        None => (null_mut(), 0),
    };
    let (pp, pl) = params.map_or((null_mut(), 0), |p| p.raw());
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

/// A `CK_CCM_MESSAGE_PARAMS` over `nonce` and `mac` (`ulMACLen` its length).
pub fn ccm_params(
    data_len: usize,
    nonce: &mut [u8],
    fixed_bits: CK_ULONG,
    generator: CK_GENERATOR_FUNCTION,
    mac: &mut [u8],
) -> CK_CCM_MESSAGE_PARAMS {
    CK_CCM_MESSAGE_PARAMS {
        ulDataLen: data_len as CK_ULONG,
        pNonce: nonce.as_mut_ptr(),
        ulNonceLen: nonce.len() as CK_ULONG,
        ulNonceFixedBits: fixed_bits,
        nonceGenerator: generator,
        pMAC: mac.as_mut_ptr(),
        ulMACLen: mac.len() as CK_ULONG,
    }
}

/// A `CK_SALSA20_CHACHA20_POLY1305_MSG_PARAMS` over `nonce` and the
/// 16-byte `tag` (`ulNonceLen` in bytes).
pub fn chacha_params(
    nonce: &mut [u8],
    tag: &mut [u8; 16],
) -> CK_SALSA20_CHACHA20_POLY1305_MSG_PARAMS {
    CK_SALSA20_CHACHA20_POLY1305_MSG_PARAMS {
        pNonce: nonce.as_mut_ptr(),
        ulNonceLen: nonce.len() as CK_ULONG,
        pTag: tag.as_mut_ptr(),
    }
}

/// A session secret key of `key_type` (`CKK_AES`, `CKK_CHACHA20`) with the
/// value `value`, for encryption and decryption (the `cryptoki` crate has
/// no `CKK_CHACHA20`).
pub fn secret_cipher_key(s: &Session, key_type: CK_KEY_TYPE, value: &[u8]) -> ObjectHandle {
    let usage = vec![flag(CKA_ENCRYPT, true), flag(CKA_DECRYPT, true)];
    // SAFETY: a handle the module just returned for this session's token.
    unsafe { ObjectHandle::new_from_raw(secret(s, key_type, value, usage)) }
}

/// A sensitive session key made by `C_GenerateKey` with the parameterless
/// `mechanism` (`CKM_AES_KEY_GEN` with a 32-byte `CKA_VALUE_LEN`,
/// `CKM_CHACHA20_KEY_GEN`), for encryption and decryption.
pub fn generated_cipher_key(
    s: &Session,
    mechanism: CK_MECHANISM_TYPE,
) -> Result<ObjectHandle, CK_RV> {
    let mut t = vec![
        flag(CKA_TOKEN, false),
        flag(CKA_SENSITIVE, true),
        flag(CKA_ENCRYPT, true),
        flag(CKA_DECRYPT, true),
    ];
    if mechanism == CKM_AES_KEY_GEN {
        t.push(ul(CKA_VALUE_LEN, 32));
    }
    let h = generate(s, mechanism, t)?;
    // SAFETY: a handle the module just returned for this session's token.
    Ok(unsafe { ObjectHandle::new_from_raw(h) })
}
