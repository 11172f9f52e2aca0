//! Slot and token management (base spec §5.5).

use super::general::MANUFACTURER;
use super::util::{bytes_non_null, guard, out, out_list, pad, unpad};
use crate::api::module;
use crate::api::token::{MAX_PIN_FAILURES, MAX_PIN_LEN, MIN_PIN_LEN};
use crate::error::err;
use crate::mechanisms;
use cryptoki_sys::*;
use std::sync::atomic::Ordering;

const HW_VERSION: CK_VERSION = CK_VERSION { major: 0, minor: 1 };
const FW_VERSION: CK_VERSION = CK_VERSION { major: 0, minor: 1 };

/// `C_GetSlotList`. Every slot has a token (the free slot's is
/// uninitialised), so `tokenPresent` filters nothing. The slot list is
/// re-read (tokens made by other processes appear) on the length query.
///
/// # Safety
/// `pSlotList` null or valid for `*pulCount` ids; `pulCount` valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GetSlotList(
    _tokenPresent: CK_BBOOL,
    pSlotList: *mut CK_SLOT_ID,
    pulCount: *mut CK_ULONG,
) -> CK_RV {
    guard(|| {
        module::with(|m| {
            if pSlotList.is_null() {
                m.rescan()?;
            }
            // SAFETY: forwarded caller guarantees.
            unsafe { out_list(&m.slot_ids(), pSlotList, pulCount) }
        })
    })
}

/// `C_GetSlotInfo`.
///
/// # Safety
/// `pInfo` null or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GetSlotInfo(slotID: CK_SLOT_ID, pInfo: *mut CK_SLOT_INFO) -> CK_RV {
    guard(|| {
        module::with(|m| {
            // SAFETY: caller guarantees a valid CK_SLOT_INFO if non-null.
            let info = unsafe { out(pInfo)? };
            let token = m.token(slotID)?;
            let description = match token.damaged_file() {
                Some(_) => format!("dalek-pkcs11 slot {slotID} (damaged token)"),
                None => format!("dalek-pkcs11 slot {slotID}"),
            };
            pad(&mut info.slotDescription, &description);
            pad(&mut info.manufacturerID, MANUFACTURER);
            info.flags = CKF_TOKEN_PRESENT;
            info.hardwareVersion = HW_VERSION;
            info.firmwareVersion = FW_VERSION;
            Ok(())
        })
    })
}

fn pin_flags(failures: u32, low: CK_FLAGS, final_try: CK_FLAGS, locked: CK_FLAGS) -> CK_FLAGS {
    match failures {
        0 => 0,
        f if f >= MAX_PIN_FAILURES => locked,
        f if f + 1 == MAX_PIN_FAILURES => low | final_try,
        _ => low,
    }
}

/// `C_GetTokenInfo`, with the PIN-count flags of §5.5 table "Token information flags".
///
/// A damaged token is flagged, not hidden (docs/SECURITY.md, "A damaged
/// token"): its `model` is [`DAMAGED_MODEL`]. A damaged file that cannot be
/// opened at all is described without reading it: the label
/// [`DAMAGED_LABEL`], the serial number its name gives, initialised and
/// write-protected; sessions on it are `CKR_TOKEN_NOT_RECOGNIZED`. The spec
/// would have `C_GetTokenInfo` itself return that code, but consumers that
/// look for their token through every slot's information (Go crypto11,
/// python-pkcs11) stop at the first error, and one damaged token would
/// hide every other.
///
/// # Safety
/// `pInfo` null or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GetTokenInfo(slotID: CK_SLOT_ID, pInfo: *mut CK_TOKEN_INFO) -> CK_RV {
    guard(|| {
        module::with(|m| {
            // SAFETY: caller guarantees a valid CK_TOKEN_INFO if non-null.
            let info = unsafe { out(pInfo)? };
            let token = m.token(slotID)?;
            if let Some(file) = token.damaged_file() {
                describe_damaged(info, &file.serial);
                return Ok(());
            }
            let status = token.status()?;
            let mut flags = CKF_RNG | CKF_LOGIN_REQUIRED | CKF_RESTORE_KEY_NOT_NEEDED;
            if token.write_protected() {
                flags |= CKF_WRITE_PROTECTED;
            }
            match &status.meta {
                Some(meta) => {
                    flags |= CKF_TOKEN_INITIALIZED;
                    if meta.user_pin.is_some() {
                        flags |= CKF_USER_PIN_INITIALIZED;
                    }
                    flags |= pin_flags(
                        meta.user_failures,
                        CKF_USER_PIN_COUNT_LOW,
                        CKF_USER_PIN_FINAL_TRY,
                        CKF_USER_PIN_LOCKED,
                    );
                    flags |= pin_flags(
                        meta.so_failures,
                        CKF_SO_PIN_COUNT_LOW,
                        CKF_SO_PIN_FINAL_TRY,
                        CKF_SO_PIN_LOCKED,
                    );
                    pad(&mut info.label, &meta.label);
                    pad(&mut info.serialNumber, &meta.serial);
                }
                None => {
                    pad(&mut info.label, "");
                    pad(&mut info.serialNumber, "");
                }
            }
            info.flags = flags;
            let model = match token.damage() {
                Some(_) => DAMAGED_MODEL,
                None => "dalek soft token",
            };
            describe_the_rest(
                info,
                model,
                token.sessions.load(Ordering::Relaxed),
                token.rw_sessions.load(Ordering::Relaxed),
            );
            Ok(())
        })
    })
}

/// `CK_TOKEN_INFO.model` of a damaged token.
pub const DAMAGED_MODEL: &str = "DAMAGED";
/// `CK_TOKEN_INFO.label` of a token file that cannot be opened.
pub const DAMAGED_LABEL: &str = "DAMAGED TOKEN (see the log)";

/// The token information of a damaged file that cannot be opened.
fn describe_damaged(info: &mut CK_TOKEN_INFO, serial: &str) {
    pad(&mut info.label, DAMAGED_LABEL);
    pad(&mut info.serialNumber, serial);
    info.flags = CKF_TOKEN_INITIALIZED | CKF_WRITE_PROTECTED;
    describe_the_rest(info, DAMAGED_MODEL, 0, 0);
}

/// Token information besides label, serial number and flags: the same for
/// every token but `model` and the session counts.
fn describe_the_rest(info: &mut CK_TOKEN_INFO, model: &str, sessions: usize, rw_sessions: usize) {
    pad(&mut info.manufacturerID, MANUFACTURER);
    pad(&mut info.model, model);
    info.ulMaxSessionCount = CK_EFFECTIVELY_INFINITE;
    info.ulSessionCount = sessions as CK_ULONG;
    info.ulMaxRwSessionCount = CK_EFFECTIVELY_INFINITE;
    info.ulRwSessionCount = rw_sessions as CK_ULONG;
    info.ulMaxPinLen = MAX_PIN_LEN as CK_ULONG;
    info.ulMinPinLen = MIN_PIN_LEN as CK_ULONG;
    info.ulTotalPublicMemory = CK_UNAVAILABLE_INFORMATION;
    info.ulFreePublicMemory = CK_UNAVAILABLE_INFORMATION;
    info.ulTotalPrivateMemory = CK_UNAVAILABLE_INFORMATION;
    info.ulFreePrivateMemory = CK_UNAVAILABLE_INFORMATION;
    info.hardwareVersion = HW_VERSION;
    info.firmwareVersion = FW_VERSION;
    pad(&mut info.utcTime, "");
}

/// `C_GetMechanismList`.
///
/// # Safety
/// `pMechanismList` null or valid for `*pulCount` entries; `pulCount` valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GetMechanismList(
    slotID: CK_SLOT_ID,
    pMechanismList: *mut CK_MECHANISM_TYPE,
    pulCount: *mut CK_ULONG,
) -> CK_RV {
    guard(|| {
        module::with(|m| {
            m.token(slotID)?;
            let list: Vec<CK_MECHANISM_TYPE> = mechanisms::REGISTRY.iter().map(|d| d.ty).collect();
            // SAFETY: forwarded caller guarantees.
            unsafe { out_list(&list, pMechanismList, pulCount) }
        })
    })
}

/// `C_GetMechanismInfo`.
///
/// # Safety
/// `pInfo` null or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GetMechanismInfo(
    slotID: CK_SLOT_ID,
    type_: CK_MECHANISM_TYPE,
    pInfo: *mut CK_MECHANISM_INFO,
) -> CK_RV {
    guard(|| {
        module::with(|m| {
            // SAFETY: caller guarantees a valid CK_MECHANISM_INFO if non-null.
            let info = unsafe { out(pInfo)? };
            let token = m.token(slotID)?;
            let d = mechanisms::lookup(type_)?;
            info.ulMinKeySize = d.min_key;
            if type_ == CKM_RSA_PKCS_KEY_PAIR_GEN {
                info.ulMinKeySize = CK_ULONG::from(token.config().rsa_min_bits);
            }
            info.ulMaxKeySize = d.max_key;
            info.flags = d.flags;
            Ok(())
        })
    })
}

/// `C_InitToken`: `pLabel` is 32 blank-padded bytes.
///
/// # Safety
/// `pPin` valid for `ulPinLen` bytes; `pLabel` valid for 32 bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_InitToken(
    slotID: CK_SLOT_ID,
    pPin: *mut CK_UTF8CHAR,
    ulPinLen: CK_ULONG,
    pLabel: *mut CK_UTF8CHAR,
) -> CK_RV {
    guard(|| {
        module::with(|m| {
            // SAFETY: caller guarantees the PIN and the 32-byte label.
            let (pin, label) =
                unsafe { (bytes_non_null(pPin, ulPinLen)?, bytes_non_null(pLabel, 32)?) };
            m.init_token(slotID, pin, &unpad(label))
        })
    })
}

/// `C_InitPIN`.
///
/// # Safety
/// `pPin` valid for `ulPinLen` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_InitPIN(
    hSession: CK_SESSION_HANDLE,
    pPin: *mut CK_UTF8CHAR,
    ulPinLen: CK_ULONG,
) -> CK_RV {
    guard(|| {
        module::with_session(hSession, |s| {
            // SAFETY: caller guarantees the PIN bytes.
            let pin = unsafe { bytes_non_null(pPin, ulPinLen)? };
            s.require_rw()?;
            s.token.init_pin(pin)
        })
    })
}

/// `C_SetPIN`.
///
/// # Safety
/// `pOldPin` / `pNewPin` valid for their lengths.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_SetPIN(
    hSession: CK_SESSION_HANDLE,
    pOldPin: *mut CK_UTF8CHAR,
    ulOldLen: CK_ULONG,
    pNewPin: *mut CK_UTF8CHAR,
    ulNewLen: CK_ULONG,
) -> CK_RV {
    guard(|| {
        module::with_session(hSession, |s| {
            // SAFETY: caller guarantees the PIN bytes.
            let (old, new) = unsafe {
                (
                    bytes_non_null(pOldPin, ulOldLen)?,
                    bytes_non_null(pNewPin, ulNewLen)?,
                )
            };
            s.require_rw()?;
            s.token.set_pin(old, new)
        })
    })
}

/// `C_WaitForSlotEvent` (§5.5): with `CKF_DONT_BLOCK`, the slot of the
/// oldest unreported event or `CKR_NO_EVENT`; without, waits for one (a
/// `C_Finalize` meanwhile gives `CKR_CRYPTOKI_NOT_INITIALIZED`). An event
/// is a token initialised in a slot, here or by another process.
///
/// # Safety
/// `pSlot` null or valid for writes; `pReserved` must be NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_WaitForSlotEvent(
    flags: CK_FLAGS,
    pSlot: *mut CK_SLOT_ID,
    pReserved: *mut std::ffi::c_void,
) -> CK_RV {
    guard(|| {
        module::with(|m| {
            if !pReserved.is_null() {
                return Err(err(CKR_ARGUMENTS_BAD));
            }
            // SAFETY: caller guarantees a valid CK_SLOT_ID if non-null.
            let slot = unsafe { out(pSlot)? };
            *slot = m.wait_for_slot_event(flags)?;
            Ok(())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pin_count_flags() {
        assert_eq!(pin_flags(0, 1, 2, 4), 0);
        assert_eq!(pin_flags(1, 1, 2, 4), 1);
        assert_eq!(pin_flags(MAX_PIN_FAILURES - 1, 1, 2, 4), 3);
        assert_eq!(pin_flags(MAX_PIN_FAILURES, 1, 2, 4), 4);
    }
}
