//! The vendor interface "Vendor dalek-pkcs11" (version 1.0), returned by
//! `C_GetInterface` / `C_GetInterfaceList` next to the standard ones. Its
//! function list holds functions the PKCS#11 API has no place for:
//!
//! ```c
//! typedef struct CK_DALEK_FUNCTION_LIST {
//!     CK_VERSION version;                       /* 1.1 */
//!     CK_RV (*C_DalekVerifyEd25519Batch)(
//!         CK_SESSION_HANDLE hSession,
//!         CK_ULONG ulCount,                     /* 1 .. 65536 */
//!         CK_OBJECT_HANDLE_PTR phKeys,          /* Ed25519 public keys */
//!         CK_BYTE_PTR *ppData, CK_ULONG_PTR pulDataLen,
//!         CK_BYTE_PTR *ppSignature);            /* 64 bytes each */
//!     /* 1.1: the same with the caller's CKM_EDDSA mechanism */
//!     CK_RV (*C_DalekVerifyEd25519BatchMechanism)(
//!         CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism,
//!         CK_ULONG ulCount, CK_OBJECT_HANDLE_PTR phKeys,
//!         CK_BYTE_PTR *ppData, CK_ULONG_PTR pulDataLen,
//!         CK_BYTE_PTR *ppSignature);
//! } CK_DALEK_FUNCTION_LIST;
//! ```
//!
//! `C_DalekVerifyEd25519Batch` returns `CKR_OK` when every signature is
//! valid and `CKR_SIGNATURE_INVALID` when at least one is not.
//! `C_DalekVerifyEd25519BatchMechanism` takes `CKM_EDDSA` with no parameter
//! or a pure-Ed25519 `CK_EDDSA_PARAMS`; Ed25519ph and Ed25519ctx parameters
//! are `CKR_MECHANISM_PARAM_INVALID` (batching exists for pure Ed25519 only).

use super::util::{bytes, guard_hot};
use crate::api::{crypto, module};
use crate::error::err;
use cryptoki_sys::*;

/// Signature of `C_DalekVerifyEd25519Batch`.
pub type VerifyBatchFn = unsafe extern "C" fn(
    CK_SESSION_HANDLE,
    CK_ULONG,
    *const CK_OBJECT_HANDLE,
    *const *const CK_BYTE,
    *const CK_ULONG,
    *const *const CK_BYTE,
) -> CK_RV;

/// Signature of `C_DalekVerifyEd25519BatchMechanism`.
pub type VerifyBatchMechanismFn = unsafe extern "C" fn(
    CK_SESSION_HANDLE,
    *const CK_MECHANISM,
    CK_ULONG,
    *const CK_OBJECT_HANDLE,
    *const *const CK_BYTE,
    *const CK_ULONG,
    *const *const CK_BYTE,
) -> CK_RV;

/// The vendor function list.
#[repr(C)]
pub struct CK_DALEK_FUNCTION_LIST {
    /// 1.1.
    pub version: CK_VERSION,
    /// Batch Ed25519 verification.
    pub C_DalekVerifyEd25519Batch: Option<VerifyBatchFn>,
    /// Batch Ed25519 verification with the caller's mechanism (1.1).
    pub C_DalekVerifyEd25519BatchMechanism: Option<VerifyBatchMechanismFn>,
}

/// The vendor interface's name.
pub const VENDOR_INTERFACE_NAME: &std::ffi::CStr = c"Vendor dalek-pkcs11";

/// The vendor function list instance.
pub static VENDOR_FUNCTION_LIST: CK_DALEK_FUNCTION_LIST = CK_DALEK_FUNCTION_LIST {
    version: CK_VERSION { major: 1, minor: 1 },
    C_DalekVerifyEd25519Batch: Some(C_DalekVerifyEd25519Batch),
    C_DalekVerifyEd25519BatchMechanism: Some(C_DalekVerifyEd25519BatchMechanism),
};

/// Reads `count` elements of a caller array (`CKR_ARGUMENTS_BAD` if null).
///
/// # Safety
/// `ptr` null or valid for `count` elements.
unsafe fn array<'a, T>(ptr: *const T, count: usize) -> crate::error::Result<&'a [T]> {
    if ptr.is_null() {
        return Err(err(CKR_ARGUMENTS_BAD));
    }
    // SAFETY: non-null; the caller guarantees `count` elements.
    Ok(unsafe { std::slice::from_raw_parts(ptr, count) })
}

/// Batch verification of Ed25519 signatures (see the module docs): the
/// call below with `CKM_EDDSA` and no parameter (pure Ed25519).
///
/// # Safety
/// Every array valid for `ulCount` elements; `ppData[i]` valid for
/// `pulDataLen[i]` bytes; `ppSignature[i]` valid for 64 bytes.
pub unsafe extern "C" fn C_DalekVerifyEd25519Batch(
    hSession: CK_SESSION_HANDLE,
    ulCount: CK_ULONG,
    phKeys: *const CK_OBJECT_HANDLE,
    ppData: *const *const CK_BYTE,
    pulDataLen: *const CK_ULONG,
    ppSignature: *const *const CK_BYTE,
) -> CK_RV {
    let plain = CK_MECHANISM {
        mechanism: CKM_EDDSA,
        pParameter: std::ptr::null_mut(),
        ulParameterLen: 0,
    };
    // SAFETY: forwarded under the same contract; `plain` is a valid
    // CK_MECHANISM without a parameter.
    unsafe {
        C_DalekVerifyEd25519BatchMechanism(
            hSession,
            &plain,
            ulCount,
            phKeys,
            ppData,
            pulDataLen,
            ppSignature,
        )
    }
}

/// Batch verification with the caller's `CKM_EDDSA` mechanism (see the
/// module docs): Ed25519ph / Ed25519ctx parameters are
/// `CKR_MECHANISM_PARAM_INVALID`.
///
/// # Safety
/// `pMechanism` a valid `CK_MECHANISM`; the arrays as for
/// [`C_DalekVerifyEd25519Batch`].
pub unsafe extern "C" fn C_DalekVerifyEd25519BatchMechanism(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *const CK_MECHANISM,
    ulCount: CK_ULONG,
    phKeys: *const CK_OBJECT_HANDLE,
    ppData: *const *const CK_BYTE,
    pulDataLen: *const CK_ULONG,
    ppSignature: *const *const CK_BYTE,
) -> CK_RV {
    if pMechanism.is_null() {
        return CKR_ARGUMENTS_BAD;
    }
    guard_hot(|| {
        module::with_session(hSession, |s| {
            // SAFETY: the caller guarantees a valid CK_MECHANISM.
            let mech = unsafe { super::mechanism::read(pMechanism)? };
            let count = usize::try_from(ulCount).map_err(|_| err(CKR_ARGUMENTS_BAD))?;
            if count == 0 || count > crypto::MAX_BATCH {
                return Err(err(CKR_ARGUMENTS_BAD));
            }
            // SAFETY: the caller guarantees the arrays hold ulCount elements.
            let (keys, data, lens, sigs) = unsafe {
                (
                    array(phKeys, count)?,
                    array(ppData, count)?,
                    array(pulDataLen, count)?,
                    array(ppSignature, count)?,
                )
            };
            let messages = data
                .iter()
                .zip(lens)
                // SAFETY: the caller guarantees ppData[i] holds pulDataLen[i] bytes.
                .map(|(&p, &len)| unsafe { bytes(p, len) })
                .collect::<crate::error::Result<Vec<_>>>()?;
            let signatures = sigs
                .iter()
                // SAFETY: the caller guarantees 64 bytes at each signature pointer.
                .map(|&p| unsafe { bytes(p, 64) })
                .collect::<crate::error::Result<Vec<_>>>()?;
            crypto::verify_batch_ed25519(s, &mech, keys, &messages, &signatures)
        })
    })
}
