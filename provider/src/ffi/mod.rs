//! The C ABI and nothing else: exported `C_*` functions, the function lists
//! and the interfaces of `C_GetInterfaceList` (base spec §5.4, §5.4.x
//! "C_GetInterfaceList", "C_GetInterface"). Each function is a thin wrapper:
//! catch panics, check and convert pointers, call the safe layer (`api`),
//! map the error to `CK_RV`. One file per chapter of the spec.

#![allow(non_snake_case)]

mod alloc;
pub mod calls;
pub mod decrypt;
pub mod digest;
pub mod dual;
pub mod encrypt;
pub mod general;
pub mod keys;
pub mod mechanism;
pub mod message;
pub mod object;
pub mod random;
pub mod session;
pub mod sign;
pub mod slot_token;
mod tls;
mod trace;
pub mod util;
pub mod v3_2;
pub mod vendor;
pub mod verify_signature;

use crate::error::err;
use cryptoki_sys::*;
use decrypt::*;
use digest::*;
use dual::*;
use encrypt::*;
use general::*;
use keys::*;
use message::*;
use object::*;
use random::*;
use session::*;
use sign::*;
use slot_token::*;
use std::ffi::{CStr, c_void};
use util::{guard, out};
use v3_2::*;
use verify_signature::*;

macro_rules! function_list {
    ($list:ident, $version:expr, $get_info:expr, { $($extra:ident),* }) => {
        $list {
            version: $version,
            C_Initialize: Some(C_Initialize),
            C_Finalize: Some(C_Finalize),
            C_GetInfo: Some($get_info),
            C_GetFunctionList: Some(C_GetFunctionList),
            C_GetSlotList: Some(C_GetSlotList),
            C_GetSlotInfo: Some(C_GetSlotInfo),
            C_GetTokenInfo: Some(C_GetTokenInfo),
            C_GetMechanismList: Some(C_GetMechanismList),
            C_GetMechanismInfo: Some(C_GetMechanismInfo),
            C_InitToken: Some(C_InitToken),
            C_InitPIN: Some(C_InitPIN),
            C_SetPIN: Some(C_SetPIN),
            C_OpenSession: Some(C_OpenSession),
            C_CloseSession: Some(C_CloseSession),
            C_CloseAllSessions: Some(C_CloseAllSessions),
            C_GetSessionInfo: Some(C_GetSessionInfo),
            C_GetOperationState: Some(C_GetOperationState),
            C_SetOperationState: Some(C_SetOperationState),
            C_Login: Some(C_Login),
            C_Logout: Some(C_Logout),
            C_CreateObject: Some(C_CreateObject),
            C_CopyObject: Some(C_CopyObject),
            C_DestroyObject: Some(C_DestroyObject),
            C_GetObjectSize: Some(C_GetObjectSize),
            C_GetAttributeValue: Some(C_GetAttributeValue),
            C_SetAttributeValue: Some(C_SetAttributeValue),
            C_FindObjectsInit: Some(C_FindObjectsInit),
            C_FindObjects: Some(C_FindObjects),
            C_FindObjectsFinal: Some(C_FindObjectsFinal),
            C_EncryptInit: Some(C_EncryptInit),
            C_Encrypt: Some(C_Encrypt),
            C_EncryptUpdate: Some(C_EncryptUpdate),
            C_EncryptFinal: Some(C_EncryptFinal),
            C_DecryptInit: Some(C_DecryptInit),
            C_Decrypt: Some(C_Decrypt),
            C_DecryptUpdate: Some(C_DecryptUpdate),
            C_DecryptFinal: Some(C_DecryptFinal),
            C_DigestInit: Some(C_DigestInit),
            C_Digest: Some(C_Digest),
            C_DigestUpdate: Some(C_DigestUpdate),
            C_DigestKey: Some(C_DigestKey),
            C_DigestFinal: Some(C_DigestFinal),
            C_SignInit: Some(C_SignInit),
            C_Sign: Some(C_Sign),
            C_SignUpdate: Some(C_SignUpdate),
            C_SignFinal: Some(C_SignFinal),
            C_SignRecoverInit: Some(C_SignRecoverInit),
            C_SignRecover: Some(C_SignRecover),
            C_VerifyInit: Some(C_VerifyInit),
            C_Verify: Some(C_Verify),
            C_VerifyUpdate: Some(C_VerifyUpdate),
            C_VerifyFinal: Some(C_VerifyFinal),
            C_VerifyRecoverInit: Some(C_VerifyRecoverInit),
            C_VerifyRecover: Some(C_VerifyRecover),
            C_DigestEncryptUpdate: Some(C_DigestEncryptUpdate),
            C_DecryptDigestUpdate: Some(C_DecryptDigestUpdate),
            C_SignEncryptUpdate: Some(C_SignEncryptUpdate),
            C_DecryptVerifyUpdate: Some(C_DecryptVerifyUpdate),
            C_GenerateKey: Some(C_GenerateKey),
            C_GenerateKeyPair: Some(C_GenerateKeyPair),
            C_WrapKey: Some(C_WrapKey),
            C_UnwrapKey: Some(C_UnwrapKey),
            C_DeriveKey: Some(C_DeriveKey),
            C_SeedRandom: Some(C_SeedRandom),
            C_GenerateRandom: Some(C_GenerateRandom),
            C_GetFunctionStatus: Some(C_GetFunctionStatus),
            C_CancelFunction: Some(C_CancelFunction),
            C_WaitForSlotEvent: Some(C_WaitForSlotEvent),
            $($extra: Some($extra),)*
        }
    };
}

/// The 2.40 function list (`C_GetFunctionList`, and interface "PKCS 11" 2.40).
pub static FUNCTION_LIST_2_40: CK_FUNCTION_LIST = function_list!(
    CK_FUNCTION_LIST,
    CK_VERSION {
        major: 2,
        minor: 40
    },
    get_info_v2,
    {}
);

/// The 3.0 function list (interface "PKCS 11" 3.0).
pub static FUNCTION_LIST_3_0: CK_FUNCTION_LIST_3_0 = function_list!(CK_FUNCTION_LIST_3_0, CK_VERSION { major: 3, minor: 0 }, C_GetInfo, {
    C_GetInterfaceList, C_GetInterface, C_LoginUser, C_SessionCancel,
    C_MessageEncryptInit, C_EncryptMessage, C_EncryptMessageBegin, C_EncryptMessageNext, C_MessageEncryptFinal,
    C_MessageDecryptInit, C_DecryptMessage, C_DecryptMessageBegin, C_DecryptMessageNext, C_MessageDecryptFinal,
    C_MessageSignInit, C_SignMessage, C_SignMessageBegin, C_SignMessageNext, C_MessageSignFinal,
    C_MessageVerifyInit, C_VerifyMessage, C_VerifyMessageBegin, C_VerifyMessageNext, C_MessageVerifyFinal
});

/// The 3.2 function list (interface "PKCS 11" 3.2, the default): the 3.0
/// list and the twelve functions 3.2 adds (`v3_2.rs`, `verify_signature.rs`).
pub static FUNCTION_LIST_3_2: CK_FUNCTION_LIST_3_2 = function_list!(CK_FUNCTION_LIST_3_2, CK_VERSION { major: 3, minor: 2 }, get_info_v3_2, {
    C_GetInterfaceList, C_GetInterface, C_LoginUser, C_SessionCancel,
    C_MessageEncryptInit, C_EncryptMessage, C_EncryptMessageBegin, C_EncryptMessageNext, C_MessageEncryptFinal,
    C_MessageDecryptInit, C_DecryptMessage, C_DecryptMessageBegin, C_DecryptMessageNext, C_MessageDecryptFinal,
    C_MessageSignInit, C_SignMessage, C_SignMessageBegin, C_SignMessageNext, C_MessageSignFinal,
    C_MessageVerifyInit, C_VerifyMessage, C_VerifyMessageBegin, C_VerifyMessageNext, C_MessageVerifyFinal,
    C_EncapsulateKey, C_DecapsulateKey,
    C_VerifySignatureInit, C_VerifySignature, C_VerifySignatureUpdate, C_VerifySignatureFinal,
    C_GetSessionValidationFlags, C_AsyncComplete, C_AsyncGetID, C_AsyncJoin,
    C_WrapKeyAuthenticated, C_UnwrapKeyAuthenticated
});

/// The name of the standard interface.
pub const INTERFACE_NAME: &CStr = c"PKCS 11";

/// Immutable interface table. The raw pointers point at statics, so sharing
/// between threads is sound.
pub struct Interfaces(pub [CK_INTERFACE; 4]);
// SAFETY: the table and everything it points to are immutable statics.
unsafe impl Sync for Interfaces {}

/// Interfaces in order of preference: 3.2 first (what `C_GetInterface`
/// with no name and no version gives), then 3.0, then 2.40, then the
/// vendor interface (`vendor.rs`).
pub static INTERFACES: Interfaces = Interfaces([
    CK_INTERFACE {
        pInterfaceName: INTERFACE_NAME.as_ptr() as *mut CK_UTF8CHAR,
        pFunctionList: &FUNCTION_LIST_3_2 as *const CK_FUNCTION_LIST_3_2 as *mut c_void,
        flags: 0,
    },
    CK_INTERFACE {
        pInterfaceName: INTERFACE_NAME.as_ptr() as *mut CK_UTF8CHAR,
        pFunctionList: &FUNCTION_LIST_3_0 as *const CK_FUNCTION_LIST_3_0 as *mut c_void,
        flags: 0,
    },
    CK_INTERFACE {
        pInterfaceName: INTERFACE_NAME.as_ptr() as *mut CK_UTF8CHAR,
        pFunctionList: &FUNCTION_LIST_2_40 as *const CK_FUNCTION_LIST as *mut c_void,
        flags: 0,
    },
    CK_INTERFACE {
        pInterfaceName: vendor::VENDOR_INTERFACE_NAME.as_ptr() as *mut CK_UTF8CHAR,
        pFunctionList: &vendor::VENDOR_FUNCTION_LIST as *const vendor::CK_DALEK_FUNCTION_LIST
            as *mut c_void,
        flags: 0,
    },
]);

fn interface_version(i: &CK_INTERFACE) -> CK_VERSION {
    // SAFETY: every pFunctionList in INTERFACES starts with a CK_VERSION.
    unsafe { *(i.pFunctionList as *const CK_VERSION) }
}

/// `C_GetFunctionList`: the 2.40 list. Callable before `C_Initialize`.
///
/// # Safety
/// `ppFunctionList` null or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GetFunctionList(ppFunctionList: *mut *mut CK_FUNCTION_LIST) -> CK_RV {
    guard(|| {
        // SAFETY: caller guarantees a valid pointer if non-null.
        *unsafe { out(ppFunctionList)? } =
            &FUNCTION_LIST_2_40 as *const CK_FUNCTION_LIST as *mut CK_FUNCTION_LIST;
        Ok(())
    })
}

/// `C_GetInterfaceList`. Callable before `C_Initialize`.
///
/// # Safety
/// `pInterfacesList` null or valid for `*pulCount` entries; `pulCount` valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GetInterfaceList(
    pInterfacesList: *mut CK_INTERFACE,
    pulCount: *mut CK_ULONG,
) -> CK_RV {
    // SAFETY: forwarded caller guarantees.
    guard(|| unsafe { util::out_list(&INTERFACES.0, pInterfacesList, pulCount) })
}

/// `C_GetInterface`: the first interface matching the name (null = any),
/// version (null = any) and flags. Callable before `C_Initialize`.
///
/// # Safety
/// `pInterfaceName` null or NUL-terminated; `pVersion` null or valid;
/// `ppInterface` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GetInterface(
    pInterfaceName: *mut CK_UTF8CHAR,
    pVersion: *mut CK_VERSION,
    ppInterface: *mut *mut CK_INTERFACE,
    flags: CK_FLAGS,
) -> CK_RV {
    guard(|| {
        // SAFETY: caller guarantees validity of the non-null pointers.
        let (out, name, version) = unsafe {
            (
                out(ppInterface)?,
                (!pInterfaceName.is_null())
                    .then(|| CStr::from_ptr(pInterfaceName as *const std::ffi::c_char)),
                pVersion.as_ref(),
            )
        };
        let found = INTERFACES.0.iter().find(|i| {
            // SAFETY: our interface names are NUL-terminated statics.
            let our_name = unsafe { CStr::from_ptr(i.pInterfaceName as *const std::ffi::c_char) };
            let v = interface_version(i);
            name.is_none_or(|n| n == our_name)
                && version.is_none_or(|w| w.major == v.major && w.minor == v.minor)
                && i.flags & flags == flags
        });
        let found = found.ok_or(err(CKR_ARGUMENTS_BAD))?;
        *out = found as *const CK_INTERFACE as *mut CK_INTERFACE;
        Ok(())
    })
}
