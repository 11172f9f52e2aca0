//! Message-based encryption and decryption (base spec 3.0 §5.19 / §5.20)
//! with `CKM_AES_GCM` (`CK_GCM_MESSAGE_PARAMS`, mechanisms spec 3.0
//! §2.12), `CKM_AES_CCM` (`CK_CCM_MESSAGE_PARAMS`, §2.13) and
//! `CKM_CHACHA20_POLY1305` (`CK_SALSA20_CHACHA20_POLY1305_MSG_PARAMS`,
//! §2.47); message-based signing and verification (§5.21 / §5.22) with the
//! HMAC mechanisms and `CKM_EDDSA`; each kind single-part or multi-part
//! (`*MessageBegin` / `*MessageNext`).

use super::calls::{in_out, init_read, init_with_key, output};
use super::util::{bytes, ending, guard_hot};
use crate::api::message::{self, MESSAGE_CIPHERS, MessageParams};
use crate::api::module;
use crate::api::session::Session;
use crate::error::{Result, err};
use crate::mechanisms::{self, Direction, Mechanism, Param};
use cryptoki_sys::*;
use std::ffi::c_void;

/// The size of the per-message parameter structure of `mechanism`.
fn params_size(mechanism: CK_MECHANISM_TYPE) -> usize {
    match mechanism {
        CKM_AES_CCM => std::mem::size_of::<CK_CCM_MESSAGE_PARAMS>(),
        CKM_CHACHA20_POLY1305 => std::mem::size_of::<CK_SALSA20_CHACHA20_POLY1305_MSG_PARAMS>(),
        _ => std::mem::size_of::<CK_GCM_MESSAGE_PARAMS>(),
    }
}

/// Reads the mechanism of a message `*Init`: `CKM_AES_GCM`, `CKM_AES_CCM`
/// or `CKM_CHACHA20_POLY1305`, anything else is `CKR_MECHANISM_INVALID`.
/// Their parameters come with each message; at init the parameter is
/// either absent or the mechanism's per-message structure (as the
/// `cryptoki` crate and kryoptic pass it for GCM), which is not read: any
/// other length is `CKR_MECHANISM_PARAM_INVALID`.
///
/// # Safety
/// `ptr` null or a valid `CK_MECHANISM`.
unsafe fn read_mechanism(ptr: *const CK_MECHANISM) -> Result<Mechanism<'static>> {
    // SAFETY: caller guarantees validity when non-null.
    let m = unsafe { ptr.as_ref() }.ok_or(err(CKR_ARGUMENTS_BAD))?;
    mechanisms::lookup(m.mechanism)?;
    if !MESSAGE_CIPHERS.contains(&m.mechanism) {
        return Err(err(CKR_MECHANISM_INVALID));
    }
    let absent = m.pParameter.is_null() && m.ulParameterLen == 0;
    let message_params =
        !m.pParameter.is_null() && m.ulParameterLen as usize == params_size(m.mechanism);
    if !absent && !message_params {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    Ok(Mechanism {
        ty: m.mechanism,
        param: Param::None,
    })
}

/// Reads the per-message parameter of `mechanism`, a structure of exactly
/// its size (`CKR_MECHANISM_PARAM_INVALID` otherwise, as for a null IV,
/// nonce or tag pointer, lengths out of the mechanism's range, or the same
/// pointer for both): `CK_GCM_MESSAGE_PARAMS`, `CK_CCM_MESSAGE_PARAMS`, or
/// `CK_SALSA20_CHACHA20_POLY1305_MSG_PARAMS` (`ulNonceLen` in bytes, as
/// `CK_SALSA20_CHACHA20_POLY1305_PARAMS` here; its tag 16 bytes; no
/// generator: the caller's nonce).
///
/// # Safety
/// `ptr` null or valid for `len` bytes; its IV / nonce and tag pointers
/// valid for their lengths.
pub(super) unsafe fn read_params<'a>(
    mechanism: CK_MECHANISM_TYPE,
    ptr: *mut c_void,
    len: CK_ULONG,
) -> Result<MessageParams<'a>> {
    let bad = || err(CKR_MECHANISM_PARAM_INVALID);
    if ptr.is_null() || len as usize != params_size(mechanism) {
        return Err(bad());
    }
    // The fields, lengths bounded before any slice is made: (IV or nonce,
    // its length, fixed bits, generator, tag, tag length, CCM data length).
    let (iv, iv_len, fixed_bits, generator, tag, tag_len, data_len) = match mechanism {
        CKM_AES_CCM => {
            // SAFETY: non-null and of the struct's size; caller guarantees
            // validity (read unaligned: the caller's buffer need not be).
            let p = unsafe { std::ptr::read_unaligned(ptr as *const CK_CCM_MESSAGE_PARAMS) };
            if !(7..=13).contains(&p.ulNonceLen)
                || !matches!(p.ulMACLen, 4 | 6 | 8 | 10 | 12 | 14 | 16)
            {
                return Err(bad());
            }
            let l = (p.ulNonceLen, p.ulNonceFixedBits, p.nonceGenerator);
            (
                p.pNonce,
                l.0,
                l.1,
                l.2,
                p.pMAC,
                p.ulMACLen,
                Some(p.ulDataLen),
            )
        }
        CKM_CHACHA20_POLY1305 => {
            // SAFETY: as above.
            let p = unsafe {
                std::ptr::read_unaligned(ptr as *const CK_SALSA20_CHACHA20_POLY1305_MSG_PARAMS)
            };
            if p.ulNonceLen != 12 {
                return Err(bad());
            }
            (p.pNonce, 12, 0, CKG_NO_GENERATE, p.pTag, 16, None)
        }
        _ => {
            // SAFETY: as above.
            let p = unsafe { std::ptr::read_unaligned(ptr as *const CK_GCM_MESSAGE_PARAMS) };
            if p.ulIvLen == 0
                || p.ulIvLen > 256
                || !matches!(p.ulTagBits, 96 | 104 | 112 | 120 | 128)
            {
                return Err(bad());
            }
            let l = (p.ulIvLen, p.ulIvFixedBits, p.ivGenerator);
            (p.pIv, l.0, l.1, l.2, p.pTag, p.ulTagBits / 8, None)
        }
    };
    if iv.is_null() || tag.is_null() || iv == tag {
        return Err(bad());
    }
    // SAFETY: non-null, lengths bounded above; caller guarantees both
    // buffers are valid (and, as distinct outputs, do not overlap).
    let (iv, tag) = unsafe {
        (
            std::slice::from_raw_parts_mut(iv, iv_len as usize),
            std::slice::from_raw_parts_mut(tag, tag_len as usize),
        )
    };
    Ok(MessageParams {
        mechanism,
        iv,
        fixed_bits,
        generator,
        tag,
        data_len,
    })
}

/// Reads the per-message parameter of the message-cipher operation of
/// `d` on `s` (its mechanism says which structure it is).
///
/// # Safety
/// As [`read_params`].
unsafe fn session_params<'a>(
    s: &Session,
    d: Direction,
    ptr: *mut c_void,
    len: CK_ULONG,
) -> Result<MessageParams<'a>> {
    let mechanism = message::mechanism(s, d)?;
    // SAFETY: forwarded caller guarantee.
    unsafe { read_params(mechanism, ptr, len) }
}

/// # Safety
/// As the exported `C_Message*Init` functions.
unsafe fn init(
    h: CK_SESSION_HANDLE,
    d: Direction,
    p: *mut CK_MECHANISM,
    key: CK_OBJECT_HANDLE,
) -> CK_RV {
    // SAFETY: forwarded caller guarantee.
    guard_hot(|| unsafe { init_read(h, read_mechanism, p, |s, m| message::init(s, d, m, key)) })
}

/// # Safety
/// As the exported functions.
#[allow(clippy::too_many_arguments)]
unsafe fn one_message(
    h: CK_SESSION_HANDLE,
    d: Direction,
    pParameter: *mut c_void,
    ulParameterLen: CK_ULONG,
    pAssociatedData: *mut CK_BYTE,
    ulAssociatedDataLen: CK_ULONG,
    pIn: *mut CK_BYTE,
    ulInLen: CK_ULONG,
    pOut: *mut CK_BYTE,
    pulOutLen: *mut CK_ULONG,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(h, |s| {
            // SAFETY: forwarded caller guarantees.
            let aad = unsafe { bytes(pAssociatedData, ulAssociatedDataLen)? };
            let message = |input: &[u8], buf: Option<&mut [u8]>| {
                // SAFETY: forwarded caller guarantee.
                let params = unsafe { session_params(s, d, pParameter, ulParameterLen)? };
                message::message(s, d, params, aad, input, buf)
            };
            // SAFETY: forwarded caller guarantees.
            unsafe { in_out(pIn, ulInLen, pOut, pulOutLen, message) }
        })
    })
}

/// `C_MessageEncryptInit` (§5.19).
///
/// # Safety
/// `pMechanism` null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_MessageEncryptInit(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    hKey: CK_OBJECT_HANDLE,
) -> CK_RV {
    // SAFETY: forwarded caller guarantee.
    unsafe { init(hSession, Direction::Encrypt, pMechanism, hKey) }
}

/// `C_EncryptMessage` (§5.19): one whole message; IV (nonce) and tag through
/// the mechanism's message parameter in `pParameter`.
///
/// # Safety
/// Inputs valid for their lengths; `pParameter` as the mechanism's message parameter;
/// output null or valid for `*pulCiphertextLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_EncryptMessage(
    hSession: CK_SESSION_HANDLE,
    pParameter: *mut c_void,
    ulParameterLen: CK_ULONG,
    pAssociatedData: *mut CK_BYTE,
    ulAssociatedDataLen: CK_ULONG,
    pPlaintext: *mut CK_BYTE,
    ulPlaintextLen: CK_ULONG,
    pCiphertext: *mut CK_BYTE,
    pulCiphertextLen: *mut CK_ULONG,
) -> CK_RV {
    // SAFETY: forwarded caller guarantees.
    unsafe {
        one_message(
            hSession,
            Direction::Encrypt,
            pParameter,
            ulParameterLen,
            pAssociatedData,
            ulAssociatedDataLen,
            pPlaintext,
            ulPlaintextLen,
            pCiphertext,
            pulCiphertextLen,
        )
    }
}

/// `C_MessageEncryptFinal` (§5.19): ends the message-encryption operation.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_MessageEncryptFinal(hSession: CK_SESSION_HANDLE) -> CK_RV {
    guard_hot(|| module::with_session(hSession, |s| message::finish(s, Direction::Encrypt)))
}

/// `C_MessageDecryptInit` (§5.20).
///
/// # Safety
/// `pMechanism` null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_MessageDecryptInit(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    hKey: CK_OBJECT_HANDLE,
) -> CK_RV {
    // SAFETY: forwarded caller guarantee.
    unsafe { init(hSession, Direction::Decrypt, pMechanism, hKey) }
}

/// `C_DecryptMessage` (§5.20): one whole message, tag read from `pTag`;
/// plaintext is written only once the tag verified.
///
/// # Safety
/// Inputs valid for their lengths; `pParameter` as the mechanism's message parameter;
/// output null or valid for `*pulPlaintextLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_DecryptMessage(
    hSession: CK_SESSION_HANDLE,
    pParameter: *mut c_void,
    ulParameterLen: CK_ULONG,
    pAssociatedData: *mut CK_BYTE,
    ulAssociatedDataLen: CK_ULONG,
    pCiphertext: *mut CK_BYTE,
    ulCiphertextLen: CK_ULONG,
    pPlaintext: *mut CK_BYTE,
    pulPlaintextLen: *mut CK_ULONG,
) -> CK_RV {
    // SAFETY: forwarded caller guarantees.
    unsafe {
        one_message(
            hSession,
            Direction::Decrypt,
            pParameter,
            ulParameterLen,
            pAssociatedData,
            ulAssociatedDataLen,
            pCiphertext,
            ulCiphertextLen,
            pPlaintext,
            pulPlaintextLen,
        )
    }
}

/// `C_MessageDecryptFinal` (§5.20): ends the message-decryption operation.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_MessageDecryptFinal(hSession: CK_SESSION_HANDLE) -> CK_RV {
    guard_hot(|| module::with_session(hSession, |s| message::finish(s, Direction::Decrypt)))
}

/// # Safety
/// As the exported `C_*MessageBegin` functions.
unsafe fn message_begin(
    h: CK_SESSION_HANDLE,
    d: Direction,
    pParameter: *mut c_void,
    ulParameterLen: CK_ULONG,
    pAssociatedData: *mut CK_BYTE,
    ulAssociatedDataLen: CK_ULONG,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(h, |s| {
            // SAFETY: forwarded caller guarantee.
            let aad = unsafe { bytes(pAssociatedData, ulAssociatedDataLen)? };
            // SAFETY: forwarded caller guarantee.
            let params = unsafe { session_params(s, d, pParameter, ulParameterLen)? };
            message::begin(s, d, params, aad)
        })
    })
}

/// Runs the body of a `C_*MessageNext`: any failure other than
/// `CKR_BUFFER_TOO_SMALL` (argument errors and a panic, then
/// `CKR_GENERAL_ERROR`, included) ends the message in progress, never the
/// message operation (§5.19 / §5.20).
fn ending_message(s: &Session, d: Direction, body: impl FnOnce() -> Result<()>) -> Result<()> {
    ending(&[CKR_BUFFER_TOO_SMALL], || message::end_message(s, d), body)
}

/// # Safety
/// As the exported `C_*MessageNext` functions.
#[allow(clippy::too_many_arguments)]
unsafe fn message_next(
    h: CK_SESSION_HANDLE,
    d: Direction,
    pParameter: *mut c_void,
    ulParameterLen: CK_ULONG,
    pIn: *mut CK_BYTE,
    ulInLen: CK_ULONG,
    pOut: *mut CK_BYTE,
    pulOutLen: *mut CK_ULONG,
    flags: CK_FLAGS,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(h, |s| {
            ending_message(s, d, || {
                let last = match flags {
                    0 => false,
                    CKF_END_OF_MESSAGE => true,
                    _ => return Err(err(CKR_ARGUMENTS_BAD)),
                };
                let next = |input: &[u8], buf: Option<&mut [u8]>| {
                    // Optional before the last part (nothing in it is used then).
                    let params = if pParameter.is_null() && ulParameterLen == 0 {
                        None
                    } else {
                        // SAFETY: forwarded caller guarantee.
                        Some(unsafe { session_params(s, d, pParameter, ulParameterLen)? })
                    };
                    message::next(s, d, params, input, last, buf)
                };
                // SAFETY: forwarded caller guarantees.
                unsafe { in_out(pIn, ulInLen, pOut, pulOutLen, next) }
            })
        })
    })
}

/// `C_EncryptMessageBegin` (§5.19): starts a multi-part message; the IV is
/// generated now (into `pIv`) when the parameters ask for it.
///
/// # Safety
/// `pParameter` as the mechanism's message parameter; `pAssociatedData` valid for its
/// length.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_EncryptMessageBegin(
    hSession: CK_SESSION_HANDLE,
    pParameter: *mut c_void,
    ulParameterLen: CK_ULONG,
    pAssociatedData: *mut CK_BYTE,
    ulAssociatedDataLen: CK_ULONG,
) -> CK_RV {
    // SAFETY: forwarded caller guarantees.
    unsafe {
        message_begin(
            hSession,
            Direction::Encrypt,
            pParameter,
            ulParameterLen,
            pAssociatedData,
            ulAssociatedDataLen,
        )
    }
}

/// `C_EncryptMessageNext` (§5.19): a part; with `CKF_END_OF_MESSAGE` the
/// last, which outputs the whole ciphertext and the tag (into `pTag` of
/// `pParameter`, required then). Earlier parts output nothing.
///
/// # Safety
/// Input valid for its length; `pParameter` null or as
/// the mechanism's message parameter; output null or valid for `*pulCiphertextPartLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_EncryptMessageNext(
    hSession: CK_SESSION_HANDLE,
    pParameter: *mut c_void,
    ulParameterLen: CK_ULONG,
    pPlaintextPart: *mut CK_BYTE,
    ulPlaintextPartLen: CK_ULONG,
    pCiphertextPart: *mut CK_BYTE,
    pulCiphertextPartLen: *mut CK_ULONG,
    flags: CK_FLAGS,
) -> CK_RV {
    // SAFETY: forwarded caller guarantees.
    unsafe {
        message_next(
            hSession,
            Direction::Encrypt,
            pParameter,
            ulParameterLen,
            pPlaintextPart,
            ulPlaintextPartLen,
            pCiphertextPart,
            pulCiphertextPartLen,
            flags,
        )
    }
}

/// `C_DecryptMessageBegin` (§5.20): starts a multi-part message.
///
/// # Safety
/// `pParameter` as the mechanism's message parameter; `pAssociatedData` valid for its
/// length.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_DecryptMessageBegin(
    hSession: CK_SESSION_HANDLE,
    pParameter: *mut c_void,
    ulParameterLen: CK_ULONG,
    pAssociatedData: *mut CK_BYTE,
    ulAssociatedDataLen: CK_ULONG,
) -> CK_RV {
    // SAFETY: forwarded caller guarantees.
    unsafe {
        message_begin(
            hSession,
            Direction::Decrypt,
            pParameter,
            ulParameterLen,
            pAssociatedData,
            ulAssociatedDataLen,
        )
    }
}

/// `C_DecryptMessageNext` (§5.20): a part; with `CKF_END_OF_MESSAGE` the
/// last, which checks the tag (from `pTag` of `pParameter`, required then)
/// and only then outputs the whole plaintext. Earlier parts output nothing:
/// no unauthenticated plaintext is ever released.
///
/// # Safety
/// Input valid for its length; `pParameter` null or as
/// the mechanism's message parameter; output null or valid for `*pulPlaintextPartLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_DecryptMessageNext(
    hSession: CK_SESSION_HANDLE,
    pParameter: *mut c_void,
    ulParameterLen: CK_ULONG,
    pCiphertextPart: *mut CK_BYTE,
    ulCiphertextPartLen: CK_ULONG,
    pPlaintextPart: *mut CK_BYTE,
    pulPlaintextPartLen: *mut CK_ULONG,
    flags: CK_FLAGS,
) -> CK_RV {
    // SAFETY: forwarded caller guarantees.
    unsafe {
        message_next(
            hSession,
            Direction::Decrypt,
            pParameter,
            ulParameterLen,
            pCiphertextPart,
            ulCiphertextPartLen,
            pPlaintextPart,
            pulPlaintextPartLen,
            flags,
        )
    }
}

/// The per-message parameter of signing/verification: none for the HMAC
/// mechanisms and `CKM_EDDSA` (their parameter is given at init).
fn no_message_param(p: *mut c_void, len: CK_ULONG) -> Result<()> {
    if p.is_null() && len == 0 {
        Ok(())
    } else {
        Err(err(CKR_MECHANISM_PARAM_INVALID))
    }
}

/// `C_SignMessageBegin` / `C_VerifyMessageBegin`.
fn sign_begin(h: CK_SESSION_HANDLE, sign: bool, p: *mut c_void, len: CK_ULONG) -> CK_RV {
    guard_hot(|| {
        module::with_session(h, |s| {
            no_message_param(p, len)?;
            message::sign_begin(s, sign)
        })
    })
}

/// A part of a multi-part message sign or verify: the session, the part,
/// the (absent) parameter, then `f(session, part)`.
///
/// # Safety
/// As the exported `C_{Sign,Verify}MessageNext` functions.
unsafe fn sign_part(
    h: CK_SESSION_HANDLE,
    p: *mut c_void,
    len: CK_ULONG,
    pDataPart: *mut CK_BYTE,
    ulDataPartLen: CK_ULONG,
    f: impl FnOnce(&Session, &[u8]) -> Result<()>,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(h, |s| {
            // SAFETY: forwarded caller guarantee.
            let data = unsafe { bytes(pDataPart, ulDataPartLen)? };
            no_message_param(p, len)?;
            f(s, data)
        })
    })
}

/// # Safety
/// As the exported `C_Message{Sign,Verify}Init` functions.
unsafe fn sign_init(
    h: CK_SESSION_HANDLE,
    sign: bool,
    p: *mut CK_MECHANISM,
    key: CK_OBJECT_HANDLE,
) -> CK_RV {
    // SAFETY: forwarded caller guarantee.
    guard_hot(|| unsafe { init_with_key(h, p, key, |s, m, k| message::sign_init(s, sign, m, k)) })
}

/// `C_MessageSignInit` (§5.21).
///
/// # Safety
/// `pMechanism` null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_MessageSignInit(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    hKey: CK_OBJECT_HANDLE,
) -> CK_RV {
    // SAFETY: forwarded caller guarantee.
    unsafe { sign_init(hSession, true, pMechanism, hKey) }
}

/// `C_SignMessage` (§5.21): one whole message; `pParameter` must be NULL.
///
/// # Safety
/// Input valid for its length; output null or valid for `*pulSignatureLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_SignMessage(
    hSession: CK_SESSION_HANDLE,
    pParameter: *mut c_void,
    ulParameterLen: CK_ULONG,
    pData: *mut CK_BYTE,
    ulDataLen: CK_ULONG,
    pSignature: *mut CK_BYTE,
    pulSignatureLen: *mut CK_ULONG,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(hSession, |s| {
            let sign = |data: &[u8], buf: Option<&mut [u8]>| {
                no_message_param(pParameter, ulParameterLen)?;
                message::sign_message(s, data, buf)
            };
            // SAFETY: forwarded caller guarantees.
            unsafe { in_out(pData, ulDataLen, pSignature, pulSignatureLen, sign) }
        })
    })
}

/// `C_MessageSignFinal` (§5.21): ends the message-signing operation.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_MessageSignFinal(hSession: CK_SESSION_HANDLE) -> CK_RV {
    guard_hot(|| module::with_session(hSession, |s| message::sign_finish(s, true)))
}

/// `C_MessageVerifyInit` (§5.22).
///
/// # Safety
/// `pMechanism` null or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_MessageVerifyInit(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    hKey: CK_OBJECT_HANDLE,
) -> CK_RV {
    // SAFETY: forwarded caller guarantee.
    unsafe { sign_init(hSession, false, pMechanism, hKey) }
}

/// `C_VerifyMessage` (§5.22): one whole message; `pParameter` must be NULL.
///
/// # Safety
/// Inputs valid for their lengths.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_VerifyMessage(
    hSession: CK_SESSION_HANDLE,
    pParameter: *mut c_void,
    ulParameterLen: CK_ULONG,
    pData: *mut CK_BYTE,
    ulDataLen: CK_ULONG,
    pSignature: *mut CK_BYTE,
    ulSignatureLen: CK_ULONG,
) -> CK_RV {
    guard_hot(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantees.
            let (data, signature) =
                unsafe { (bytes(pData, ulDataLen)?, bytes(pSignature, ulSignatureLen)?) };
            no_message_param(pParameter, ulParameterLen)?;
            message::verify_message(s, data, signature)
        })
    })
}

/// `C_MessageVerifyFinal` (§5.22): ends the message-verification operation.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_MessageVerifyFinal(hSession: CK_SESSION_HANDLE) -> CK_RV {
    guard_hot(|| module::with_session(hSession, |s| message::sign_finish(s, false)))
}

/// `C_SignMessageBegin` (§5.21): starts a multi-part message; `pParameter`
/// must be NULL.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_SignMessageBegin(
    hSession: CK_SESSION_HANDLE,
    pParameter: *mut c_void,
    ulParameterLen: CK_ULONG,
) -> CK_RV {
    sign_begin(hSession, true, pParameter, ulParameterLen)
}

/// `C_SignMessageNext` (§5.21): a part; with `pulSignatureLen` non-null the
/// last part, producing the signature (`pSignature` null: size query).
///
/// # Safety
/// Input valid for its length; output null or valid for `*pulSignatureLen`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_SignMessageNext(
    hSession: CK_SESSION_HANDLE,
    pParameter: *mut c_void,
    ulParameterLen: CK_ULONG,
    pDataPart: *mut CK_BYTE,
    ulDataPartLen: CK_ULONG,
    pSignature: *mut CK_BYTE,
    pulSignatureLen: *mut CK_ULONG,
) -> CK_RV {
    let next = |s: &Session, data: &[u8]| {
        if pulSignatureLen.is_null() {
            return message::sign_next(s, data, false, None).map(|_| ());
        }
        let last = |buf: Option<&mut [u8]>| message::sign_next(s, data, true, buf);
        // SAFETY: forwarded caller guarantee; length pointer non-null.
        unsafe { output(pSignature, pulSignatureLen, last) }
    };
    // SAFETY: forwarded caller guarantees.
    unsafe {
        sign_part(
            hSession,
            pParameter,
            ulParameterLen,
            pDataPart,
            ulDataPartLen,
            next,
        )
    }
}

/// `C_VerifyMessageBegin` (§5.22): starts a multi-part message;
/// `pParameter` must be NULL.
///
/// # Safety
/// No pointer is dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_VerifyMessageBegin(
    hSession: CK_SESSION_HANDLE,
    pParameter: *mut c_void,
    ulParameterLen: CK_ULONG,
) -> CK_RV {
    sign_begin(hSession, false, pParameter, ulParameterLen)
}

/// `C_VerifyMessageNext` (§5.22): a part; with `pSignature` non-null the
/// last part, checking the signature.
///
/// # Safety
/// Inputs valid for their lengths.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_VerifyMessageNext(
    hSession: CK_SESSION_HANDLE,
    pParameter: *mut c_void,
    ulParameterLen: CK_ULONG,
    pDataPart: *mut CK_BYTE,
    ulDataPartLen: CK_ULONG,
    pSignature: *mut CK_BYTE,
    ulSignatureLen: CK_ULONG,
) -> CK_RV {
    let next = |s: &Session, data: &[u8]| {
        let signature = if pSignature.is_null() {
            None
        } else {
            // SAFETY: non-null; caller guarantees validity for its length.
            Some(unsafe { bytes(pSignature, ulSignatureLen)? })
        };
        message::verify_next(s, data, signature)
    };
    // SAFETY: forwarded caller guarantees.
    unsafe {
        sign_part(
            hSession,
            pParameter,
            ulParameterLen,
            pDataPart,
            ulDataPartLen,
            next,
        )
    }
}
