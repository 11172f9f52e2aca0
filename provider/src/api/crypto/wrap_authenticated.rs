//! Authenticated key wrapping (PKCS#11 3.2 §5.18 `C_WrapKeyAuthenticated`,
//! `C_UnwrapKeyAuthenticated`; mechanisms §6.13.3): `CKM_AES_GCM` with the
//! per-message `CK_GCM_MESSAGE_PARAMS` of the message functions, so the
//! token generates the IV (`ivGenerator`; never the caller's for a wrap
//! unless it asks for `CKG_NO_GENERATE`) and the tag goes to `pTag`, and
//! the caller's associated data is bound to the wrapped key. Every check of
//! `C_WrapKey` / `C_UnwrapKey` applies unchanged (`wrap.rs`).

use super::wrap::{checked_export, import_unwrapped, unwrapping_key};
use crate::api::message::{MessageParams, one_message};
use crate::api::session::Session;
use crate::attributes::Attr;
use crate::error::{Error, Result, err};
use crate::mechanisms::{self, Direction, Mechanism, Param};
use cryptoki_sys::*;
use zeroize::Zeroizing;

/// The mechanism both calls take: AES-GCM, whose parameters come apart
/// (`CK_GCM_MESSAGE_PARAMS`), offered for message encryption.
fn gcm(function: CK_FLAGS) -> Result<Mechanism<'static>> {
    let mech = Mechanism {
        ty: CKM_AES_GCM,
        param: Param::None,
    };
    mechanisms::require(&mech, function)?;
    Ok(mech)
}

/// `C_WrapKeyAuthenticated`: the key's value (or PKCS#8 encoding) under
/// AES-GCM with `aad`; `out` `None` asks for the length (no IV is
/// generated then). The wrapped key is the ciphertext alone: the IV and
/// the tag are in `params`.
pub fn wrap_key_authenticated(
    session: &Session,
    params: MessageParams<'_>,
    wrapping: CK_OBJECT_HANDLE,
    key: CK_OBJECT_HANDLE,
    aad: &[u8],
    out: Option<&mut [u8]>,
) -> Result<usize> {
    let mech = gcm(CKF_MESSAGE_ENCRYPT)?;
    let (material, bytes) = checked_export(session, &mech, wrapping, key)?;
    let Some(out) = out else {
        return Ok(bytes.len());
    };
    if out.len() < bytes.len() {
        return Err(Error::buffer_too_small(bytes.len()));
    }
    one_message(
        session,
        material,
        Direction::Encrypt,
        params,
        aad,
        &bytes,
        out,
    )
    .map_err(|e| match e.rv() {
        CKR_KEY_TYPE_INCONSISTENT => err(CKR_WRAPPING_KEY_TYPE_INCONSISTENT),
        _ => e,
    })
}

/// `C_UnwrapKeyAuthenticated`: decrypts `wrapped` with the IV and tag of
/// `params` and `aad` (a wrong tag, IV or associated data:
/// `CKR_WRAPPED_KEY_INVALID`, and no key), then makes the key as
/// `C_UnwrapKey` does.
pub fn unwrap_key_authenticated(
    session: &Session,
    params: MessageParams<'_>,
    unwrapping: CK_OBJECT_HANDLE,
    wrapped: &[u8],
    template: &[Attr],
    aad: &[u8],
) -> Result<CK_OBJECT_HANDLE> {
    let mech = gcm(CKF_MESSAGE_DECRYPT)?;
    let material = unwrapping_key(session, &mech, unwrapping)?;
    let mut plain = Zeroizing::new(vec![0u8; wrapped.len()]);
    let n = one_message(
        session,
        material,
        Direction::Decrypt,
        params,
        aad,
        wrapped,
        &mut plain,
    )
    .map_err(|e| match e.rv() {
        CKR_ENCRYPTED_DATA_INVALID | CKR_ENCRYPTED_DATA_LEN_RANGE => err(CKR_WRAPPED_KEY_INVALID),
        CKR_KEY_TYPE_INCONSISTENT => err(CKR_UNWRAPPING_KEY_TYPE_INCONSISTENT),
        _ => e,
    })?;
    plain.truncate(n);
    import_unwrapped(session, unwrapping, &plain, template)
}
