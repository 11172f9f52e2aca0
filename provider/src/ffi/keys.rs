//! Key management (base spec §5.15).

use super::calls::new_key;
use super::mechanism;
use super::tls::{self, TlsDerive};
use super::util::{bytes, finish_output, guard, guard_deep, out, out_buffer, template};
use crate::api::session::Session;
use crate::api::{crypto, module};
use crate::attributes::Attr;
use crate::error::Result;
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
            // Arguments before the mechanism: a bad template is
            // CKR_ARGUMENTS_BAD whatever the mechanism, as consumer suites expect.
            // SAFETY: forwarded caller guarantees.
            let (public, private, mech) = unsafe {
                (
                    template(pPublicKeyTemplate, ulPublicKeyAttributeCount)?,
                    template(pPrivateKeyTemplate, ulPrivateKeyAttributeCount)?,
                    mechanism::read(pMechanism)?,
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
    guard_deep(|| {
        module::with_session(hSession, |s| {
            let generate = |mech: &_, t: &[_]| crypto::generate_key(s, mech, t);
            // SAFETY: forwarded caller guarantees.
            unsafe { new_key(pMechanism, pTemplate, ulCount, phKey, generate) }
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
            // Arguments before the mechanism (see C_GenerateKeyPair).
            // SAFETY: forwarded caller guarantees.
            let ((buf, len), mech) = unsafe {
                (
                    out_buffer(pWrappedKey, pulWrappedKeyLen)?,
                    mechanism::read(pMechanism)?,
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
    guard_deep(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantee.
            let wrapped = unsafe { bytes(pWrappedKey, ulWrappedKeyLen)? };
            let unwrap =
                |mech: &_, t: &[_]| crypto::unwrap_key(s, mech, hUnwrappingKey, wrapped, t);
            // SAFETY: forwarded caller guarantees.
            unsafe { new_key(pMechanism, pTemplate, ulAttributeCount, phKey, unwrap) }
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
    let rv = guard(|| {
        module::with_session(hSession, |s| {
            // SAFETY: forwarded caller guarantee.
            if unsafe { mechanism::is_sp800_108(pMechanism) } {
                // SAFETY: forwarded caller guarantees.
                let (t, out, kdf) = unsafe {
                    (
                        template(pTemplate, ulAttributeCount)?,
                        out(phKey)?,
                        mechanism::read_sp800_108(pMechanism)?,
                    )
                };
                let mech = crate::mechanisms::Mechanism {
                    ty: kdf.ty,
                    param: crate::mechanisms::Param::Sp800108(&kdf.params),
                };
                let templates: Vec<_> = kdf.additional.iter().map(|(t, _)| t.clone()).collect();
                let handles = crypto::derive_keys_sp800_108(s, &mech, hBaseKey, &t, &templates)
                    .inspect_err(|_| {
                        // No key was made: no handle is reported.
                        for (_, ph) in &kdf.additional {
                            // SAFETY: as below.
                            unsafe { **ph = CK_INVALID_HANDLE };
                        }
                    })?;
                *out = handles[0];
                // Mechanisms spec 3.0 §2.42: each additional key's handle
                // goes to its CK_DERIVED_KEY.phKey, after every key is made.
                for ((_, ph), h) in kdf.additional.iter().zip(&handles[1..]) {
                    // SAFETY: read_sp800_108 checked phKey non-null; the
                    // caller guarantees it valid for writes.
                    unsafe { **ph = *h };
                }
                return Ok(());
            }
            // SAFETY: forwarded caller guarantee.
            if unsafe { tls::is_tls_derive(pMechanism) } {
                // SAFETY: forwarded caller guarantees.
                let (t, read) = unsafe {
                    (
                        template(pTemplate, ulAttributeCount)?,
                        tls::read_derive(pMechanism)?,
                    )
                };
                return derive_tls(s, read, hBaseKey, &t, phKey);
            }
            let derive = |mech: &_, t: &[_]| crypto::derive_key(s, mech, hBaseKey, t);
            // SAFETY: forwarded caller guarantees.
            unsafe { new_key(pMechanism, pTemplate, ulAttributeCount, phKey, derive) }
        })
    });
    // SAFETY: forwarded caller guarantee.
    unsafe { super::trace::call("C_DeriveKey", pMechanism, rv) };
    rv
}

/// The TLS 1.2 derivations with outputs in their parameter (mechanisms
/// spec 3.0 §2.42): the master secret's handle goes to `phKey` and the
/// version to `pVersion`; the key-and-MAC keys' handles and IVs go to the
/// caller's `CK_SSL3_KEY_MAT_OUT` (`phKey` is not used and, when given,
/// receives `CK_INVALID_HANDLE`). Outputs are written only after every key
/// exists; on failure the four handles are `CK_INVALID_HANDLE`.
fn derive_tls(
    s: &Session,
    read: TlsDerive,
    base: CK_OBJECT_HANDLE,
    t: &[Attr],
    phKey: *mut CK_OBJECT_HANDLE,
) -> Result<()> {
    match read {
        TlsDerive::Master {
            ty,
            params,
            version,
        } => {
            // SAFETY: caller guarantees phKey valid for writes.
            let out = unsafe { out(phKey)? };
            if let Some((client, _)) = &params.randoms {
                log_tls(ty, client);
            }
            let mech = crate::mechanisms::Mechanism {
                ty,
                param: crate::mechanisms::Param::TlsMaster(&params),
            };
            let (h, v) = crypto::derive_master(s, &mech, base, t)?;
            *out = h;
            if let Some([major, minor]) = v {
                // SAFETY: read_derive kept pVersion only when non-null (v is
                // Some only then); the caller guarantees it valid for writes.
                unsafe { *version = CK_VERSION { major, minor } };
            }
            Ok(())
        }
        TlsDerive::KeyMat { ty, params, out } => {
            log_tls(ty, &params.client);
            let mech = crate::mechanisms::Mechanism {
                ty,
                param: crate::mechanisms::Param::TlsKeyMat(&params),
            };
            // SAFETY: read_derive checked pReturnedKeyMaterial non-null and
            // aligned; the caller guarantees it valid for reads and writes.
            let o = unsafe { &mut *out };
            let made = crypto::derive_key_material(s, &mech, base, t);
            let handles = made.as_ref().map_or([CK_INVALID_HANDLE; 4], |m| m.handles);
            o.hClientMacSecret = handles[0];
            o.hServerMacSecret = handles[1];
            o.hClientKey = handles[2];
            o.hServerKey = handles[3];
            let made = made?;
            let half = made.ivs.len() / 2;
            if half > 0 {
                // SAFETY: read_derive checked both IV pointers non-null when
                // IVs are asked for; the caller allocates ulIVSizeInBits/8
                // bytes at each.
                unsafe {
                    std::ptr::copy_nonoverlapping(made.ivs.as_ptr(), o.pIVClient, half);
                    std::ptr::copy_nonoverlapping(made.ivs[half..].as_ptr(), o.pIVServer, half);
                }
            }
            if !phKey.is_null() {
                // SAFETY: non-null; the caller guarantees it valid for writes.
                unsafe { *phKey = CK_INVALID_HANDLE };
            }
            Ok(())
        }
    }
}

/// A debug line naming a TLS derivation and its client random (public
/// data, never key bytes), so a log can be tied to one handshake.
fn log_tls(ty: CK_MECHANISM_TYPE, client: &[u8]) {
    if crate::log::enabled(crate::log::Level::Debug) {
        let hex: String = client.iter().map(|b| format!("{b:02x}")).collect();
        crate::log::debug(format_args!(
            "C_DeriveKey mechanism {ty:#x} client random {hex}"
        ));
    }
}
