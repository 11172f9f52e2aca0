//! Key management (base spec §5.15).

use super::mechanism;
use super::util::{bytes, finish_output, guard, out, out_buffer, template};
use crate::api::{crypto, module};
use crate::error::err;
use cryptoki_sys::*;

/// `C_GenerateKeyPair`.
///
/// # Safety
/// Templates valid for their counts; handle pointers valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GenerateKeyPair(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    pPublicKeyTemplate: *mut CK_ATTRIBUTE,
    ulPublicKeyAttributeCount: CK_ULONG,
    pPrivateKeyTemplate: *mut CK_ATTRIBUTE,
    ulPrivateKeyAttributeCount: CK_ULONG,
    phPublicKey: *mut CK_OBJECT_HANDLE,
    phPrivateKey: *mut CK_OBJECT_HANDLE,
) -> CK_RV {
    guard(|| {
        module::with_session(hSession, |s| {
            if phPublicKey.is_null() || phPrivateKey.is_null() {
                return Err(err(CKR_ARGUMENTS_BAD));
            }
            // SAFETY: forwarded caller guarantees.
            let (mech, public, private) = unsafe {
                (
                    mechanism::read(pMechanism)?,
                    template(pPublicKeyTemplate, ulPublicKeyAttributeCount)?,
                    template(pPrivateKeyTemplate, ulPrivateKeyAttributeCount)?,
                )
            };
            let (hpub, hpriv) = crypto::generate_key_pair(s, &mech, &public, &private)?;
            // SAFETY: checked non-null above; caller guarantees validity.
            unsafe {
                *out(phPublicKey)? = hpub;
                *out(phPrivateKey)? = hpriv;
            }
            Ok(())
        })
    })
}

/// `C_GenerateKey`.
///
/// # Safety
/// `pTemplate` valid for `ulCount` attributes; `phKey` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_GenerateKey(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    pTemplate: *mut CK_ATTRIBUTE,
    ulCount: CK_ULONG,
    phKey: *mut CK_OBJECT_HANDLE,
) -> CK_RV {
    guard(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantees.
            let (mech, t, out) = unsafe {
                (
                    mechanism::read(pMechanism)?,
                    template(pTemplate, ulCount)?,
                    out(phKey)?,
                )
            };
            *out = crypto::generate_key(s, &mech, &t)?;
            Ok(())
        })
    })
}

/// `C_WrapKey`.
///
/// # Safety
/// `pWrappedKey` null or valid for `*pulWrappedKeyLen` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_WrapKey(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    hWrappingKey: CK_OBJECT_HANDLE,
    hKey: CK_OBJECT_HANDLE,
    pWrappedKey: *mut CK_BYTE,
    pulWrappedKeyLen: *mut CK_ULONG,
) -> CK_RV {
    guard(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantees.
            let (mech, (buf, len)) = unsafe {
                (
                    mechanism::read(pMechanism)?,
                    out_buffer(pWrappedKey, pulWrappedKeyLen)?,
                )
            };
            finish_output(crypto::wrap_key(s, &mech, hWrappingKey, hKey, buf), len)
        })
    })
}

/// `C_UnwrapKey`.
///
/// # Safety
/// `pWrappedKey` valid for `ulWrappedKeyLen`; template valid; `phKey` valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_UnwrapKey(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    hUnwrappingKey: CK_OBJECT_HANDLE,
    pWrappedKey: *mut CK_BYTE,
    ulWrappedKeyLen: CK_ULONG,
    pTemplate: *mut CK_ATTRIBUTE,
    ulAttributeCount: CK_ULONG,
    phKey: *mut CK_OBJECT_HANDLE,
) -> CK_RV {
    guard(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantees.
            let (mech, wrapped, t, out) = unsafe {
                (
                    mechanism::read(pMechanism)?,
                    bytes(pWrappedKey, ulWrappedKeyLen)?,
                    template(pTemplate, ulAttributeCount)?,
                    out(phKey)?,
                )
            };
            *out = crypto::unwrap_key(s, &mech, hUnwrappingKey, wrapped, &t)?;
            Ok(())
        })
    })
}

/// `C_DeriveKey`.
///
/// # Safety
/// Template valid for its count; `phKey` valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn C_DeriveKey(
    hSession: CK_SESSION_HANDLE,
    pMechanism: *mut CK_MECHANISM,
    hBaseKey: CK_OBJECT_HANDLE,
    pTemplate: *mut CK_ATTRIBUTE,
    ulAttributeCount: CK_ULONG,
    phKey: *mut CK_OBJECT_HANDLE,
) -> CK_RV {
    guard(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantees.
            let (mech, t, out) = unsafe {
                (
                    mechanism::read(pMechanism)?,
                    template(pTemplate, ulAttributeCount)?,
                    out(phKey)?,
                )
            };
            *out = crypto::derive_key(s, &mech, hBaseKey, &t)?;
            Ok(())
        })
    })
}
