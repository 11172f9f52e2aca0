//! `C_GetOperationState` / `C_SetOperationState` (base spec §5.6) for
//! digests, MACs (HMAC, CMAC; sign and verify) and symmetric encryption and
//! decryption (AES ECB, CBC, CBC-PAD, CTR; DES and Triple-DES ECB, CBC,
//! CBC-PAD).
//!
//! The state never leaves the module: `C_GetOperationState` keeps a copy of
//! the session's operations here, with the token (slot and serial) they
//! belong to, and returns an opaque reference to it — a random 128-bit id
//! and an HMAC-SHA256 tag over it under a secret made when the module
//! initialises. A MAC's state is key-equivalent (an HMAC's
//! inner and outer hash states compute MACs under the key), so handing it
//! to the caller, even encrypted, would let the caller take it elsewhere;
//! an opaque reference cannot be. `C_SetOperationState` refuses a
//! reference it did not issue, one edited in any byte, one from another
//! token, or one after `C_Finalize` (`CKR_SAVED_STATE_INVALID`). A saved
//! state can be restored any number of times, into any session of the same
//! token; the newest [`MAX_SAVED`] are kept.
//!
//! What is saved: the session's digest, its sign/verify operation when
//! that is a MAC, and its encryption/decryption when the mechanism is one
//! of the block or counter modes above. Any other active operation (AES-GCM:
//! a restored copy could encrypt two messages under one IV; RSA; a
//! signature; a 3.2 `C_VerifySignatureInit` verification; one awaiting its
//! context-specific login; one a single-part call has claimed) makes the
//! state `CKR_STATE_UNSAVEABLE`. Restoring needs the MAC's key again as
//! `hAuthenticationKey` and the cipher's key as `hEncryptionKey`
//! (`CKR_KEY_NEEDED`; another key, or the handle now naming another key
//! value: `CKR_KEY_CHANGED`; a key the state does not use:
//! `CKR_KEY_NOT_NEEDED`), each checked again as its `C_*Init` checks it.
//! Restoring a CBC or CTR state twice continues from the same chaining
//! value or counter twice; that is no more than `C_EncryptInit` with the
//! same IV or counter block already allows the caller.

use super::crypto::key_use::{check_restored_key, restored_cipher_key};
use super::operations::{Active, Operations};
use super::session::Session;
use crate::error::{Result, err};
use crate::mechanisms::digest::DigestOp;
use crate::mechanisms::{CipherOp, SignOp, VerifyOp};
use cryptoki_sys::*;
use hmac::{KeyInit, Mac};
use std::collections::{HashMap, VecDeque};
use zeroize::Zeroizing;

/// Saved states kept at once (the oldest is forgotten first).
pub const MAX_SAVED: usize = 256;
/// Length of a state reference: magic, id, tag.
pub const STATE_LEN: usize = 4 + 16 + 16;
const MAGIC: &[u8; 4] = b"DPS1";

/// A copy of a session's saveable operations.
struct Saved {
    slot: CK_SLOT_ID,
    serial: Option<String>,
    /// The MAC's key is a private object: the state is forgotten at logout.
    private: bool,
    digest: Option<(DigestOp, bool)>,
    sign: Option<(SignOp, bool, Option<KeyUse>)>,
    verify: Option<(VerifyOp, bool, Option<KeyUse>)>,
    encrypt: Option<(CipherOp, bool, Option<KeyUse>)>,
    decrypt: Option<(CipherOp, bool, Option<KeyUse>)>,
}

/// The key of a saved MAC and the mechanism it was checked for.
#[derive(Clone, Copy)]
struct KeyUse {
    handle: CK_OBJECT_HANDLE,
    mechanism: CK_MECHANISM_TYPE,
}

/// The module's saved operation states.
pub struct SavedStates {
    secret: Zeroizing<[u8; 32]>,
    states: HashMap<[u8; 16], Saved>,
    order: VecDeque<[u8; 16]>,
}

impl SavedStates {
    /// An empty store with a fresh secret.
    pub fn new() -> Result<SavedStates> {
        let mut secret = Zeroizing::new([0u8; 32]);
        crate::mechanisms::random::os_fill(secret.as_mut())?;
        Ok(SavedStates {
            secret,
            states: HashMap::new(),
            order: VecDeque::new(),
        })
    }

    fn tag(&self, id: &[u8; 16]) -> [u8; 16] {
        let mut m = <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(self.secret.as_slice())
            .expect("HMAC takes any key length");
        m.update(MAGIC);
        m.update(id);
        let full = m.finalize().into_bytes();
        let mut tag = [0u8; 16];
        tag.copy_from_slice(&full[..16]);
        tag
    }

    fn keep(&mut self, id: [u8; 16], saved: Saved) {
        if self.order.len() >= MAX_SAVED
            && let Some(oldest) = self.order.pop_front()
        {
            self.states.remove(&oldest);
        }
        self.order.push_back(id);
        self.states.insert(id, saved);
    }

    /// Forgets the saved states of the token in `slot` whose MAC key is a
    /// private object (at logout): they hold that key, parsed, which must
    /// not outlive the login (docs/SECURITY.md, "Memory hygiene"), and
    /// `C_SetOperationState` could not use them before the next login
    /// anyway. The blocks go back zeroed (`ffi::alloc`).
    pub fn forget_private(&mut self, slot: CK_SLOT_ID) {
        // Not `retain`: an entry dropped in place leaves the bytes its
        // operation's type did not use (stale stack contents copied in with
        // it) in the table's block. A new table, and the old block freed.
        let old = std::mem::take(&mut self.states);
        self.states = old
            .into_iter()
            .filter(|(_, s)| s.slot != slot || !s.private)
            .collect();
        let states = &self.states;
        self.order.retain(|id| states.contains_key(id));
    }

    /// The saved state `blob` refers to, if this store issued it.
    fn lookup(&self, blob: &[u8]) -> Result<&Saved> {
        let invalid = || err(CKR_SAVED_STATE_INVALID);
        if blob.len() != STATE_LEN || &blob[..4] != MAGIC {
            return Err(invalid());
        }
        let id: [u8; 16] = blob[4..20].try_into().map_err(|_| invalid())?;
        let diff = self
            .tag(&id)
            .iter()
            .zip(&blob[20..])
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if std::hint::black_box(diff) != 0 {
            return Err(invalid());
        }
        self.states.get(&id).ok_or_else(invalid)
    }
}

fn saveable<T, C>(slot: &Option<Active<T>>, copy: C) -> Result<Option<(T, bool, Option<KeyUse>)>>
where
    C: Fn(&T) -> Option<T>,
{
    match slot {
        None => Ok(None),
        Some(a) if a.awaits_login.is_some() || a.pending.is_some() || a.single => {
            Err(err(CKR_STATE_UNSAVEABLE))
        }
        Some(a) => {
            let key = match (a.key, a.mechanism) {
                (Some(handle), Some(mechanism)) => Some(KeyUse { handle, mechanism }),
                (None, _) => None,
                // A keyed operation whose mechanism was not recorded cannot
                // have its key checked again on restore.
                (Some(_), None) => return Err(err(CKR_STATE_UNSAVEABLE)),
            };
            copy(&a.op)
                .map(|op| Some((op, a.multipart, key)))
                .ok_or(err(CKR_STATE_UNSAVEABLE))
        }
    }
}

/// `C_GetOperationState`: `out` `None` asks for the length.
pub fn get(
    store: &parking_lot::Mutex<SavedStates>,
    session: &Session,
    out: Option<&mut [u8]>,
) -> Result<usize> {
    let guard = session.ops.lock();
    let ops: &Operations = &guard;
    let Operations {
        digest,
        sign,
        verify,
        encrypt,
        decrypt,
        sign_recover,
        verify_recover,
        verify_signature,
        ..
    } = ops;
    if sign_recover.is_some() || verify_recover.is_some() || verify_signature.is_some() {
        return Err(err(CKR_STATE_UNSAVEABLE));
    }
    if digest.is_none()
        && sign.is_none()
        && verify.is_none()
        && encrypt.is_none()
        && decrypt.is_none()
    {
        return Err(err(CKR_OPERATION_NOT_INITIALIZED));
    }
    // Copied first, so a size query already says whether it can be saved.
    let sign = saveable(sign, SignOp::try_clone)?;
    let verify = saveable(verify, VerifyOp::try_clone)?;
    let encrypt = saveable(encrypt, CipherOp::try_clone)?;
    let decrypt = saveable(decrypt, CipherOp::try_clone)?;
    let private = [
        sign.as_ref().map(|s| &s.2),
        verify.as_ref().map(|v| &v.2),
        encrypt.as_ref().map(|e| &e.2),
        decrypt.as_ref().map(|d| &d.2),
    ]
    .into_iter()
    .flatten()
    .any(|key| {
        key.as_ref()
            .is_none_or(|k| session.token.key(k.handle).is_ok_and(|o| o.private))
    });
    let saved = Saved {
        slot: session.token.slot_id,
        serial: session.token.serial(),
        private,
        digest: saveable(digest, |d| Some(d.clone()))?.map(|(d, m, _)| (d, m)),
        sign,
        verify,
        encrypt,
        decrypt,
    };
    drop(guard);
    let Some(out) = out else {
        return Ok(STATE_LEN);
    };
    if out.len() < STATE_LEN {
        return Err(crate::error::Error::buffer_too_small(STATE_LEN));
    }
    let mut id = [0u8; 16];
    crate::mechanisms::random::os_fill(&mut id)?;
    let mut store = store.lock();
    let tag = store.tag(&id);
    store.keep(id, saved);
    out[..4].copy_from_slice(MAGIC);
    out[4..20].copy_from_slice(&id);
    out[20..STATE_LEN].copy_from_slice(&tag);
    Ok(STATE_LEN)
}

/// `C_SetOperationState`: the session's cryptographic operations become
/// the saved ones (its search, if any, stays).
pub fn set(
    store: &parking_lot::Mutex<SavedStates>,
    session: &Session,
    blob: &[u8],
    encryption_key: CK_OBJECT_HANDLE,
    authentication_key: CK_OBJECT_HANDLE,
) -> Result<()> {
    let store = store.lock();
    let saved = store.lookup(blob)?;
    if saved.slot != session.token.slot_id || saved.serial != session.token.serial() {
        return Err(err(CKR_SAVED_STATE_INVALID));
    }
    let ciphers: Vec<(&CipherOp, KeyUse, CK_ATTRIBUTE_TYPE)> = [
        saved.encrypt.as_ref().map(|e| (e, CKA_ENCRYPT)),
        saved.decrypt.as_ref().map(|d| (d, CKA_DECRYPT)),
    ]
    .into_iter()
    .flatten()
    .map(|((op, _, key), usage)| key.map(|k| (op, k, usage)))
    .collect::<Option<_>>()
    .ok_or(err(CKR_SAVED_STATE_INVALID))?;
    match (ciphers.first(), encryption_key) {
        (None, CK_INVALID_HANDLE) => {}
        (None, _) => return Err(err(CKR_KEY_NOT_NEEDED)),
        (Some(_), CK_INVALID_HANDLE) => return Err(err(CKR_KEY_NEEDED)),
        (Some(_), given) => {
            for (op, k, usage) in &ciphers {
                if k.handle != given {
                    return Err(err(CKR_KEY_CHANGED));
                }
                // The key must still be there, visible to this session and
                // allow the mechanism and the direction, and hold the value
                // the state was saved with (a handle given to another key
                // since is another key).
                let key = restored_cipher_key(session, k.handle, k.mechanism, *usage)?;
                if !op.same_key(&key) {
                    return Err(err(CKR_KEY_CHANGED));
                }
            }
        }
    }
    let keys: Vec<(KeyUse, CK_ATTRIBUTE_TYPE)> = [
        saved.sign.as_ref().and_then(|s| s.2).map(|k| (k, CKA_SIGN)),
        saved
            .verify
            .as_ref()
            .and_then(|v| v.2)
            .map(|k| (k, CKA_VERIFY)),
    ]
    .into_iter()
    .flatten()
    .collect();
    match (keys.first(), authentication_key) {
        (None, CK_INVALID_HANDLE) => {}
        (None, _) => return Err(err(CKR_KEY_NOT_NEEDED)),
        (Some(_), CK_INVALID_HANDLE) => return Err(err(CKR_KEY_NEEDED)),
        (Some(_), given) => {
            if keys.iter().any(|(k, _)| k.handle != given) {
                return Err(err(CKR_KEY_CHANGED));
            }
            // The key must still exist, be visible to this session and
            // still allow what the operation does with it: a MAC whose
            // key lost CKA_SIGN since the save does not go on.
            for (k, usage) in &keys {
                check_restored_key(session, k.handle, k.mechanism, *usage)?;
            }
        }
    }
    let restore = |op: Option<(DigestOp, bool)>| {
        op.map(|(op, multipart)| {
            let mut a = Active::new(op);
            a.multipart = multipart;
            a
        })
    };
    let digest = restore(saved.digest.clone());
    let sign = saved
        .sign
        .as_ref()
        .and_then(|(op, multipart, key)| op.try_clone().map(|op| restored(op, *multipart, *key)));
    let verify = saved
        .verify
        .as_ref()
        .and_then(|(op, multipart, key)| op.try_clone().map(|op| restored(op, *multipart, *key)));
    let encrypt = saved
        .encrypt
        .as_ref()
        .and_then(|(op, multipart, key)| op.try_clone().map(|op| restored(op, *multipart, *key)));
    let decrypt = saved
        .decrypt
        .as_ref()
        .and_then(|(op, multipart, key)| op.try_clone().map(|op| restored(op, *multipart, *key)));
    drop(store);
    let mut ops = session.ops.lock();
    let find = ops.find.take();
    ops.cancel_all();
    ops.find = find;
    ops.digest = digest;
    ops.sign = sign;
    ops.verify = verify;
    ops.encrypt = encrypt;
    ops.decrypt = decrypt;
    Ok(())
}

/// An operation restored from a saved state.
fn restored<T>(op: T, multipart: bool, key: Option<KeyUse>) -> Active<T> {
    let mut a = Active::new(op);
    a.multipart = multipart;
    a.key = key.map(|k| k.handle);
    a.mechanism = key.map(|k| k.mechanism);
    a
}
