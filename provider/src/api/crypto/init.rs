//! Starting operations (base spec §5.8 `C_EncryptInit`, §5.9
//! `C_DecryptInit`, §5.12 `C_DigestInit`, §5.13 `C_SignInit` /
//! `C_SignRecoverInit`, §5.14 `C_VerifyInit` / `C_VerifyRecoverInit`): one
//! active operation of each kind per session (`CKR_OPERATION_ACTIVE`), the
//! key checks of `key_use`, and the context login a key with
//! `CKA_ALWAYS_AUTHENTICATE` needs before each use (§5.6 `C_Login` with
//! `CKU_CONTEXT_SPECIFIC`).

use super::key_use::usable_key;
use crate::api::operations::{Active, Operations};
use crate::api::session::Session;
use crate::error::{Result, err};
use crate::mechanisms::{self, CipherOp, Direction, Mechanism};
use cryptoki_sys::*;

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
    let ops = &mut *ops;
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

/// `C_SignInit`.
pub fn sign_init(session: &Session, mech: &Mechanism<'_>, key: CK_OBJECT_HANDLE) -> Result<()> {
    let mut ops = session.ops.lock();
    if ops.sign.is_some() {
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    mechanisms::require(mech, CKF_SIGN)?;
    let handle = key;
    let key = usable_key(session, key, mech, CKA_SIGN)?;
    let mut active = Active::new(mechanisms::sign_init(mech, key.material)?);
    active.awaits_login = key.always_authenticate.then(|| ops.next_init());
    active.key = Some(handle);
    active.mechanism = Some(mech.ty);
    ops.sign = Some(active);
    Ok(())
}

/// `C_VerifyInit`.
pub fn verify_init(session: &Session, mech: &Mechanism<'_>, key: CK_OBJECT_HANDLE) -> Result<()> {
    let mut ops = session.ops.lock();
    if ops.verify.is_some() {
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    mechanisms::require(mech, CKF_VERIFY)?;
    let material = usable_key(session, key, mech, CKA_VERIFY)?.material;
    let mut active = Active::new(mechanisms::verify_init(mech, material)?);
    active.key = Some(key);
    active.mechanism = Some(mech.ty);
    ops.verify = Some(active);
    Ok(())
}

/// `C_SignRecoverInit` (§5.13): the key needs `CKA_SIGN_RECOVER`.
pub fn sign_recover_init(
    session: &Session,
    mech: &Mechanism<'_>,
    key: CK_OBJECT_HANDLE,
) -> Result<()> {
    let mut ops = session.ops.lock();
    if ops.sign_recover.is_some() {
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    mechanisms::require(mech, CKF_SIGN_RECOVER)?;
    let key = usable_key(session, key, mech, CKA_SIGN_RECOVER)?;
    let mut active = Active::new(mechanisms::sign_recover_init(mech, key.material)?);
    active.awaits_login = key.always_authenticate.then(|| ops.next_init());
    ops.sign_recover = Some(active);
    Ok(())
}

/// `C_VerifyRecoverInit` (§5.14): the key needs `CKA_VERIFY_RECOVER`.
pub fn verify_recover_init(
    session: &Session,
    mech: &Mechanism<'_>,
    key: CK_OBJECT_HANDLE,
) -> Result<()> {
    let mut ops = session.ops.lock();
    if ops.verify_recover.is_some() {
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    mechanisms::require(mech, CKF_VERIFY_RECOVER)?;
    let material = usable_key(session, key, mech, CKA_VERIFY_RECOVER)?.material;
    ops.verify_recover = Some(Active::new(mechanisms::verify_recover_init(
        mech, material,
    )?));
    Ok(())
}

pub(super) fn slot_of(ops: &mut Operations, direction: Direction) -> &mut Option<Active<CipherOp>> {
    match direction {
        Direction::Encrypt => &mut ops.encrypt,
        Direction::Decrypt => &mut ops.decrypt,
    }
}

/// `C_EncryptInit` / `C_DecryptInit`.
pub fn cipher_init(
    session: &Session,
    direction: Direction,
    mech: &Mechanism<'_>,
    key: CK_OBJECT_HANDLE,
) -> Result<()> {
    let mut ops = session.ops.lock();
    if slot_of(&mut ops, direction).is_some() {
        return Err(err(CKR_OPERATION_ACTIVE));
    }
    let (function, usage) = match direction {
        Direction::Encrypt => (CKF_ENCRYPT, CKA_ENCRYPT),
        Direction::Decrypt => (CKF_DECRYPT, CKA_DECRYPT),
    };
    mechanisms::require(mech, function)?;
    let key = usable_key(session, key, mech, usage)?;
    let mut active = Active::new(mechanisms::cipher_init(
        mech,
        key.material,
        direction,
        function,
    )?);
    // §4.9: the PIN for each use means signing and decryption.
    active.awaits_login =
        (key.always_authenticate && direction == Direction::Decrypt).then(|| ops.next_init());
    *slot_of(&mut ops, direction) = Some(active);
    Ok(())
}
