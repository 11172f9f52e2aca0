//! What a token store is: the [`TokenStore`] trait every storage kind
//! implements, and the values it reads and writes ([`TokenMeta`],
//! [`ObjectRecord`], [`Changes`], [`Written`]). The implementations import
//! these from here; `storage` (mod.rs) picks the implementation.

use super::seal::{self, WrappedKey};
use crate::error::Result;
use serde::{Deserialize, Serialize};

/// Length of an object's unique id.
pub const UID_LEN: usize = 16;
/// An object's unique id (also its `CKA_UNIQUE_ID`, in hex).
pub type Uid = [u8; UID_LEN];

/// Generations of tombstones kept: a process that last looked longer ago
/// than this reloads the whole object list instead (see `changes_since`).
pub const TOMBSTONE_GENERATIONS: u64 = 1024;
/// A purge of old tombstones runs at every this many generations.
pub const PURGE_EVERY: u64 = 128;

/// The new tombstone floor when a purge is due at `generation` (the
/// current floor is `floor`): the tombstones at or below it are dropped.
pub fn tombstone_purge(generation: u64, floor: u64) -> Option<u64> {
    let new = generation.saturating_sub(TOMBSTONE_GENERATIONS);
    (new >= floor + PURGE_EVERY).then_some(new)
}

/// Token-wide metadata, written as one unit.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct TokenMeta {
    /// `CK_TOKEN_INFO.label`, without padding.
    pub label: String,
    /// `CK_TOKEN_INFO.serialNumber`.
    pub serial: String,
    /// Random id of this initialisation; a new `C_InitToken` changes it.
    pub epoch: String,
    /// Token key wrapped under the SO PIN.
    pub so_pin: Option<WrappedKey>,
    /// Token key wrapped under the user PIN; `None` until `C_InitPIN`.
    pub user_pin: Option<WrappedKey>,
    /// Consecutive failed SO logins.
    pub so_failures: u32,
    /// Consecutive failed user logins.
    pub user_failures: u32,
    /// Hex integrity secret (see `integrity`); absent in schema 1 files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<String>,
}

/// One stored object: a few indexed columns plus the serialized attributes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRecord {
    /// Unique id.
    pub uid: Uid,
    /// Generation of the transaction that last wrote it (set by the store).
    pub generation: u64,
    /// `CKA_CLASS`.
    pub class: u64,
    /// `CKA_PRIVATE`.
    pub private: bool,
    /// `CKA_LABEL` (written to the store; empty in records read back,
    /// whose `attrs` hold it).
    pub label: Vec<u8>,
    /// `CKA_ID` (as `label`).
    pub id: Vec<u8>,
    /// Serialized attribute list (sensitive values sealed).
    pub attrs: Vec<u8>,
}

/// What changed since a given generation.
#[derive(Debug, Default)]
pub struct Changes {
    /// The store's current generation.
    pub generation: u64,
    /// The token was re-initialised (epoch changed): drop everything cached.
    pub reset: bool,
    /// `upserts` holds every object of the token (the reader was too far
    /// behind to be told deletions one by one, or the store was reopened):
    /// any other token object the reader knows is gone.
    pub full: bool,
    /// Objects written since.
    pub upserts: Vec<ObjectRecord>,
    /// Objects destroyed since.
    pub deletes: Vec<Uid>,
    /// Objects whose stored record failed authentication: not served, and
    /// dropped by a reader that knew them.
    pub damaged: Vec<Uid>,
}

/// What a conditional write found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// Written, at this generation.
    At(u64),
    /// An expected object was written by someone else since the caller read
    /// it: nothing was written; refresh and try again.
    Stale,
    /// An expected object no longer exists (destroyed, or the token was
    /// re-initialised): nothing was written.
    Gone,
}

/// A stored object a write depends on: it must still exist, at this
/// generation, when the write commits.
pub type Expect = (Uid, u64);

/// One token's persistent state.
pub trait TokenStore: Send {
    /// The token's serial number, as the store is named (fixed for its life).
    fn serial(&self) -> String;
    /// False when the store can be read but not written (its writes fail
    /// with `CKR_TOKEN_WRITE_PROTECTED`).
    fn writable(&self) -> bool {
        true
    }
    /// Reads the metadata.
    fn meta(&mut self) -> Result<TokenMeta>;
    /// Reads, changes and writes the metadata in one transaction (so that
    /// concurrent processes cannot lose a PIN-failure count, for example).
    fn update_meta(
        &mut self,
        change: &mut dyn FnMut(&mut TokenMeta) -> Result<()>,
    ) -> Result<TokenMeta>;
    /// Erases every object and writes `meta`, in one transaction.
    fn reinitialize(&mut self, meta: &TokenMeta) -> Result<()>;
    /// The token's epoch the caller now works in (it has dropped what it
    /// held of an older one). A store shared by processes refuses every
    /// write made while another epoch is stored — a re-initialisation by
    /// another process — with `CKR_DEVICE_REMOVED`, until the caller
    /// accepts the new epoch; the epoch read at open and written by
    /// `reinitialize` is accepted already.
    fn accept_epoch(&mut self, _epoch: &str) {}
    /// Everything changed after `generation` of `epoch`; `None` when nothing
    /// changed (cheap: no query when no other connection wrote).
    fn changes_since(&mut self, epoch: &str, generation: u64) -> Result<Option<Changes>>;
    /// Inserts or replaces objects in one transaction, provided every
    /// object in `expect` still exists at the given generation (checked in
    /// the same transaction, so a write made through a stale view of an
    /// object, or of one another process destroyed, never lands).
    fn put(&mut self, records: &[&ObjectRecord], expect: &[Expect]) -> Result<Written>;
    /// Deletes an object; returns the generation of the deletion, or `None`
    /// when there was no such object.
    fn delete(&mut self, uid: &Uid) -> Result<Option<u64>>;
    /// Reserves `count` consecutive values of the GCM IV counter of the
    /// AES key value `key` and returns the first (SP 800-38D §8.2.1; see
    /// `iv_counters`). No value is ever returned twice for one key value
    /// on this token, whichever process asks, and not after
    /// `reinitialize` either. `CKR_TOKEN_WRITE_PROTECTED` when the store
    /// cannot be written, `CKR_DEVICE_ERROR` when the stored counters fail
    /// authentication, `CKR_DATA_LEN_RANGE` once the counter is used up.
    fn reserve_iv_counter(&mut self, key: &[u8], count: u64) -> Result<u64>;
    /// The key sealing the secret values of token objects that are not
    /// private (needs no PIN; see `integrity`). `None`: such values are
    /// kept as they are (a store that never reaches a disk).
    fn public_seal_key(&self) -> Option<std::sync::Arc<seal::TokenKey>> {
        None
    }
    /// What is wrong with the stored objects, if anything: records that
    /// failed authentication, or a set of records that does not match its
    /// digest (as of the last look).
    fn damage(&self) -> Option<String> {
        None
    }
    /// What is wrong with the store's file outside the records, if anything
    /// (SQLite's integrity check failed, or SQLite reported the file
    /// damaged): the store is read-only while it lasts.
    fn file_damage(&self) -> Option<String> {
        None
    }
}
