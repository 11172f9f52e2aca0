//! Starting operations (base spec §5.8 `C_EncryptInit`, §5.9
//! `C_DecryptInit`, §5.12 `C_DigestInit`, §5.13 `C_SignInit` /
//! `C_SignRecoverInit`, §5.14 `C_VerifyInit` / `C_VerifyRecoverInit`): one
//! active operation of each kind per session (`CKR_OPERATION_ACTIVE`), the
//! key checks of `key_use`, and the context login a key with
//! `CKA_ALWAYS_AUTHENTICATE` needs before each use (§5.6 `C_Login` with
//! `CKU_CONTEXT_SPECIFIC`).

use super::key_use::usable_key;
use crate::api::operations::{Active, Operations, SignatureCheck};
use crate::api::session::Session;
use crate::error::{Result, err};
use crate::mechanisms::keys::KeyMaterial;
use crate::mechanisms::{self, Direction, Mechanism};
use cryptoki_sys::*;
use std::sync::Arc;

/// `C_Login(CKU_CONTEXT_SPECIFIC)` (§5.6): checks the user's PIN for the
/// signature or decryption of this session that awaits it, then lets that
/// one operation proceed: the one initialised last, since the spec has the
/// context login follow the initialisation it is for. Another operation
/// awaiting its own login keeps waiting for its own (one PIN entry never
/// unlocks two uses of `CKA_ALWAYS_AUTHENTICATE` keys). Without such an
/// operation: `CKR_OPERATION_NOT_INITIALIZED`. A wrong PIN counts towards
/// the lockout and leaves the operation waiting. The session's operations
/// stay locked during the (slow) PIN check, so the login applies to exactly
/// the operation that awaited it, whatever another thread does to the
/// session meanwhile (lock order: session operations, then the token's
/// store, as in `C_FindObjectsInit`).
pub fn context_login(session: &Session, pin: &[u8]) -> Result<()> {
    let mut ops = session.ops.lock();
    let ops: &mut Operations = &mut ops;
    let last = [
        ops.sign.as_mut().map(|a| &mut a.awaits_login),
        ops.decrypt.as_mut().map(|a| &mut a.awaits_login),
        ops.sign_recover.as_mut().map(|a| &mut a.awaits_login),
    ]
    .into_iter()
    .flatten()
    .filter(|waiting| waiting.is_some())
    .max_by_key(|waiting| **waiting);
    let Some(last) = last else {
        return Err(err(CKR_OPERATION_NOT_INITIALIZED));
    };
    session.token.reauthenticate(pin)?;
    *last = None;
    Ok(())
}

/// `C_DigestInit`.
pub fn digest_init(session: &Session, mech: &Mechanism<'_>) -> Result<()> {
    let mut ops = session.ops.lock();
    if ops.digest.is_some() {
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    ops.digest = Some(Active::new(mechanisms::digest_init(mech)?));
    Ok(())
}

/// What a keyed operation asks of its mechanism and key.
struct Keyed {
    /// The function the mechanism must support (`CKF_SIGN`, ...).
    function: CK_FLAGS,
    /// The usage flag the key must have (`CKA_SIGN`, ...).
    usage: CK_ATTRIBUTE_TYPE,
    /// A key with `CKA_ALWAYS_AUTHENTICATE` makes the operation await its
    /// `C_Login(CKU_CONTEXT_SPECIFIC)` (§4.9: the PIN for each use means
    /// signing and decryption).
    context_login: bool,
    /// The key's handle and the mechanism are kept for
    /// `C_SetOperationState`, which checks the key again (`opstate`).
    keep_key: bool,
    /// Another slot whose active operation also makes this one
    /// `CKR_OPERATION_ACTIVE` (the two kinds of verification share one).
    excluded_by: fn(&Operations) -> bool,
}

/// No other slot excludes the operation.
fn nothing(_: &Operations) -> bool {
    false
}

/// Starts the operation in `slot` with `key`: `CKR_OPERATION_ACTIVE` if
/// one is active, then the mechanism's and the key's checks (`key_use`),
/// then `start` makes the operation from the parsed key.
fn init_keyed<T>(
    session: &Session,
    slot: impl Fn(&mut Operations) -> &mut Option<Active<T>>,
    mech: &Mechanism<'_>,
    key: CK_OBJECT_HANDLE,
    how: Keyed,
    start: impl FnOnce(Arc<KeyMaterial>) -> Result<T>,
) -> Result<()> {
    let mut ops = session.ops.lock();
    if slot(&mut ops).is_some() || (how.excluded_by)(&ops) {
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    mechanisms::require(mech, how.function)?;
    let usable = usable_key(session, key, mech, how.usage)?;
    let mut active = Active::new(start(usable.material)?);
    active.awaits_login =
        (usable.always_authenticate && how.context_login).then(|| ops.next_init());
    if how.keep_key {
        active.key = Some(key);
        active.mechanism = Some(mech.ty);
    }
    *slot(&mut ops) = Some(active);
    Ok(())
}

/// `C_SignInit`.
pub fn sign_init(session: &Session, mech: &Mechanism<'_>, key: CK_OBJECT_HANDLE) -> Result<()> {
    let how = Keyed {
        function: CKF_SIGN,
        usage: CKA_SIGN,
        context_login: true,
        keep_key: true,
        excluded_by: nothing,
    };
    init_keyed(
        session,
        |o| &mut o.sign,
        mech,
        key,
        how,
        |k| mechanisms::sign_init(mech, k),
    )
}

/// `C_VerifyInit`.
pub fn verify_init(session: &Session, mech: &Mechanism<'_>, key: CK_OBJECT_HANDLE) -> Result<()> {
    let how = Keyed {
        function: CKF_VERIFY,
        usage: CKA_VERIFY,
        context_login: false,
        keep_key: true,
        excluded_by: |o| o.verify_signature.is_some(),
    };
    init_keyed(
        session,
        |o| &mut o.verify,
        mech,
        key,
        how,
        |k| mechanisms::verify_init(mech, k),
    )
}

/// The longest signature `C_VerifySignatureInit` keeps (SLH-DSA-256f's
/// is 49,856 bytes; RSA-16384's 2,048): a longer one cannot verify under
/// any mechanism of the token.
pub const MAX_SIGNATURE_LEN: usize = 64 * 1024;

/// `C_VerifySignatureInit` (PKCS#11 3.2 §5.15): a verification whose
/// signature is given now and the data later (`C_VerifySignature`, or
/// `C_VerifySignatureUpdate` and `C_VerifySignatureFinal`). It and
/// `C_VerifyInit`'s operation exclude each other (one verification per
/// session).
pub fn verify_signature_init(
    session: &Session,
    mech: &Mechanism<'_>,
    key: CK_OBJECT_HANDLE,
    signature: &[u8],
) -> Result<()> {
    if signature.len() > MAX_SIGNATURE_LEN {
        return Err(err(CKR_SIGNATURE_LEN_RANGE));
    }
    let how = Keyed {
        function: CKF_VERIFY,
        usage: CKA_VERIFY,
        context_login: false,
        keep_key: true,
        excluded_by: |o| o.verify.is_some(),
    };
    init_keyed(
        session,
        |o| &mut o.verify_signature,
        mech,
        key,
        how,
        |k| {
            Ok(SignatureCheck {
                op: mechanisms::verify_init(mech, k)?,
                signature: signature.to_vec(),
            })
        },
    )
}

/// `C_SignRecoverInit` (§5.13): the key needs `CKA_SIGN_RECOVER`.
pub fn sign_recover_init(
    session: &Session,
    mech: &Mechanism<'_>,
    key: CK_OBJECT_HANDLE,
) -> Result<()> {
    let how = Keyed {
        function: CKF_SIGN_RECOVER,
        usage: CKA_SIGN_RECOVER,
        context_login: true,
        keep_key: false,
        excluded_by: nothing,
    };
    init_keyed(
        session,
        |o| &mut o.sign_recover,
        mech,
        key,
        how,
        |k| mechanisms::sign_recover_init(mech, k),
    )
}

/// `C_VerifyRecoverInit` (§5.14): the key needs `CKA_VERIFY_RECOVER`.
pub fn verify_recover_init(
    session: &Session,
    mech: &Mechanism<'_>,
    key: CK_OBJECT_HANDLE,
) -> Result<()> {
    let how = Keyed {
        function: CKF_VERIFY_RECOVER,
        usage: CKA_VERIFY_RECOVER,
        context_login: false,
        keep_key: false,
        excluded_by: nothing,
    };
    init_keyed(
        session,
        |o| &mut o.verify_recover,
        mech,
        key,
        how,
        |k| mechanisms::verify_recover_init(mech, k),
    )
}

/// `C_EncryptInit` / `C_DecryptInit`.
pub fn cipher_init(
    session: &Session,
    direction: Direction,
    mech: &Mechanism<'_>,
    key: CK_OBJECT_HANDLE,
) -> Result<()> {
    let (function, usage) = match direction {
        Direction::Encrypt => (CKF_ENCRYPT, CKA_ENCRYPT),
        Direction::Decrypt => (CKF_DECRYPT, CKA_DECRYPT),
    };
    let how = Keyed {
        function,
        usage,
        context_login: direction == Direction::Decrypt,
        keep_key: true,
        excluded_by: nothing,
    };
    init_keyed(
        session,
        |o| o.cipher(direction),
        mech,
        key,
        how,
        |k| mechanisms::cipher_init(mech, k, direction, function),
    )
}
