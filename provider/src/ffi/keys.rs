//! Key management (base spec §5.15).

use super::mechanism;
use super::util::{guard, out, template};
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
        module::with(|m| {
            let s = m.session(hSession)?;
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
            let (hpub, hpriv) = crypto::generate_key_pair(&s, &mech, &public, &private)?;
            // SAFETY: checked non-null above; caller guarantees validity.
            unsafe {
                *out(phPublicKey)? = hpub;
                *out(phPrivateKey)? = hpriv;
            }
            Ok(())
        })
    })
}
