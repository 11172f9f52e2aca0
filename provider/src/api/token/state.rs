//! A token's state (base spec §5.5 slot and token management; §4.4 token
//! objects): its store, the login state of this process, the object table,
//! and the locks that order them. The functions that use them are split by
//! job: `store` (object store access), `login` (the login state machine),
//! `pin` (PINs and token initialisation).
//!
//! Locking: the store mutex serialises every change to token objects and
//! the refresh that imports other processes' changes; it is taken before the
//! object table's lock, never after. Signing and other operations on
//! already-found objects touch neither.

use super::table::{ObjectTable, SealKeys};
use crate::api::fork_gate::storage_gate;
use crate::api::ivcounter::IvCounters;
use crate::api::object::Object;
use crate::config::Config;
use crate::error::{Result, err};
use crate::storage::seal::TokenKey;
use crate::storage::{DamagedFile, TokenMeta, TokenStore};
use cryptoki_sys::*;
use parking_lot::{Mutex, RwLock};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Hands out object handles, unique in the process.
#[derive(Default)]
pub struct HandleAllocator(AtomicU64);

impl HandleAllocator {
    /// The next handle (never 0, which is `CK_INVALID_HANDLE`).
    pub fn next(&self) -> CK_ULONG {
        (self.0.fetch_add(1, Ordering::Relaxed) + 1) as CK_ULONG
    }
}

/// Who is logged in, and the unwrapped token key while someone is.
pub(super) struct Login {
    pub(super) user: Option<CK_USER_TYPE>,
    pub(super) key: Option<Arc<TokenKey>>,
}

/// One token (or the uninitialised token of the free slot).
pub struct Token {
    /// Slot the token sits in.
    pub slot_id: CK_SLOT_ID,
    pub(super) config: Arc<Config>,
    pub(super) handles: Arc<HandleAllocator>,
    pub(super) store: Mutex<Option<Box<dyn TokenStore>>>,
    pub(super) login: RwLock<Login>,
    pub(super) objects: RwLock<ObjectTable>,
    /// Held by `C_InitToken` for its whole run and briefly by
    /// `C_OpenSession`, so that no session opens on a token being
    /// (re-)initialised.
    pub init_lock: Mutex<()>,
    /// Open sessions of this process on the token.
    pub sessions: AtomicUsize,
    /// Of which read/write.
    pub rw_sessions: AtomicUsize,
    /// Failed tries (SO, user) on a write-protected token, which cannot
    /// record them: counted for this process only.
    pub(super) volatile_failures: Mutex<[u32; 2]>,
    /// Held while a PIN of this token is checked: this process checks one
    /// PIN at a time, so its threads never hold more than one reserved try
    /// (see `Token::verify_pin`) and concurrent right PINs never add up
    /// to a locked PIN.
    pub(super) pin_checks: Mutex<()>,
    /// The store's public sealing key, kept here so that opening a value
    /// never needs the store's lock (taken after object locks elsewhere);
    /// renewed whenever the store is looked at.
    pub(super) public_seal: RwLock<Option<Arc<TokenKey>>>,
    /// This process's blocks of the token's GCM IV counters.
    pub iv_counters: IvCounters,
    /// Bumped when this process finds the token re-initialised by another
    /// one: sessions opened before belong to the old token and end
    /// (`CKR_SESSION_HANDLE_INVALID` at their next call).
    pub incarnation: std::sync::atomic::AtomicU64,
    /// The token file of this slot, found damaged: listed, never served
    /// (no store), until the file changes and opens (see `Module::rescan`).
    pub(super) damaged: Mutex<Option<DamagedFile>>,
}

/// Snapshot of token metadata for `C_GetTokenInfo`.
pub struct TokenStatus {
    /// Metadata, `None` for the uninitialised token.
    pub meta: Option<TokenMeta>,
}

/// A token's store, locked, with the shared hold on the fork gate that
/// every use of a database takes (see `fork_gate::storage_gate`). The store
/// lock is released before the gate.
pub(super) struct StoreGuard<'a> {
    store: parking_lot::MutexGuard<'a, Option<Box<dyn TokenStore>>>,
    _gate: std::sync::RwLockReadGuard<'static, ()>,
}

impl std::ops::Deref for StoreGuard<'_> {
    type Target = Option<Box<dyn TokenStore>>;
    fn deref(&self) -> &Self::Target {
        &self.store
    }
}

impl std::ops::DerefMut for StoreGuard<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.store
    }
}

impl Token {
    /// The store, locked for a use of its database.
    pub(super) fn store(&self) -> StoreGuard<'_> {
        let gate = storage_gate();
        StoreGuard {
            store: self.store.lock(),
            _gate: gate,
        }
    }

    /// In a forked child's `C_Initialize`: closes the database connection
    /// inherited from the parent (idle at the fork), dropping nothing else.
    pub fn abandon_store(&self) {
        drop(self.store.lock().take());
    }

    /// A token over an existing store (or `None` for a free slot).
    ///
    /// Its objects are read from the store on first use (the first
    /// [`Token::refresh`], which `C_OpenSession`, `C_Login` and
    /// `C_FindObjectsInit` make), not here: `C_Initialize` stays fast however
    /// many objects a token holds, and an application that never opens a
    /// session on a token never pays for loading it.
    pub fn new(
        slot_id: CK_SLOT_ID,
        config: Arc<Config>,
        handles: Arc<HandleAllocator>,
        store: Option<Box<dyn TokenStore>>,
    ) -> Result<Token> {
        let token = Token {
            slot_id,
            config,
            handles,
            store: Mutex::new(store),
            login: RwLock::new(Login {
                user: None,
                key: None,
            }),
            objects: RwLock::new(ObjectTable::default()),
            init_lock: Mutex::new(()),
            sessions: AtomicUsize::new(0),
            rw_sessions: AtomicUsize::new(0),
            volatile_failures: Mutex::new([0; 2]),
            pin_checks: Mutex::new(()),
            public_seal: RwLock::new(None),
            iv_counters: Default::default(),
            incarnation: Default::default(),
            damaged: Mutex::new(None),
        };
        token.note_public_seal(token.store.lock().as_deref());
        Ok(token)
    }

    /// True if some object of the token known to this process (token
    /// objects, this process's session objects; private ones too, whoever
    /// is logged in) satisfies `test`.
    pub fn any_object(&self, test: impl Fn(&Object) -> bool) -> bool {
        self.objects.read().by_handle.values().any(|o| test(o))
    }

    /// The module's configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// True once `C_InitToken` has run for this token.
    pub fn initialized(&self) -> bool {
        self.store.lock().is_some()
    }

    /// A slot for the damaged token file `file` (listed, never served).
    pub fn damaged(
        slot_id: CK_SLOT_ID,
        config: Arc<Config>,
        handles: Arc<HandleAllocator>,
        file: DamagedFile,
    ) -> Result<Token> {
        let token = Token::new(slot_id, config, handles, None)?;
        *token.damaged.lock() = Some(file);
        Ok(token)
    }

    /// The damaged token file of this slot, if it holds one.
    pub fn damaged_file(&self) -> Option<DamagedFile> {
        self.damaged.lock().clone()
    }

    /// True when the slot is taken: by a token, or by a damaged token file
    /// (not the free slot).
    pub fn occupied(&self) -> bool {
        self.initialized() || self.damaged.lock().is_some()
    }

    /// The token's damage, if any, in a few words: a damaged file, records
    /// that failed authentication, or a file SQLite finds damaged.
    pub fn damage(&self) -> Option<String> {
        if let Some(d) = self.damaged.lock().as_ref() {
            return Some(d.reason.clone());
        }
        let store = self.store.lock();
        let store = store.as_ref()?;
        store.damage().or_else(|| store.file_damage())
    }

    /// The damaged file of this slot was repaired or restored: `store`
    /// (opened from it) takes its place, and the slot serves the token.
    /// The caller holds the storage gate (`Module::rescan`): it is not
    /// taken again here (a second read hold could wait behind a fork's
    /// write hold, which waits for the first).
    pub fn attach(&self, store: Box<dyn TokenStore>) {
        let mut slot = self.store.lock();
        self.note_public_seal(Some(&*store));
        *slot = Some(store);
        *self.damaged.lock() = None;
    }

    /// The damaged file of this slot was found damaged again (changed, but
    /// still damaged): `file` describes it now.
    pub fn still_damaged(&self, file: DamagedFile) {
        *self.damaged.lock() = Some(file);
    }

    /// Current metadata, read from the store (fresh PIN counters).
    /// On a write-protected token the PIN counts include this process's
    /// unrecorded failures.
    pub fn status(&self) -> Result<TokenStatus> {
        let mut store = self.store();
        let mut meta = match store.as_mut() {
            Some(s) => Some(s.meta()?),
            None => None,
        };
        if let Some(m) = meta.as_mut()
            && store.as_ref().is_some_and(|s| !s.writable())
        {
            let [so, user] = *self.volatile_failures.lock();
            m.so_failures = m.so_failures.saturating_add(so);
            m.user_failures = m.user_failures.saturating_add(user);
        }
        Ok(TokenStatus { meta })
    }

    /// `CKR_DEVICE_ERROR` (and a log line) when stored records failed
    /// authentication or the set of records does not match its digest, as
    /// of the last refresh: a search would silently miss them.
    pub fn check_intact(&self) -> Result<()> {
        match self.store.lock().as_ref().and_then(|s| s.damage()) {
            None => Ok(()),
            Some(what) => {
                crate::log::error(format_args!("search refused: {what}"));
                Err(err(CKR_DEVICE_ERROR))
            }
        }
    }

    /// True when the token's store can be read but not written
    /// (`CKF_WRITE_PROTECTED`).
    pub fn write_protected(&self) -> bool {
        self.store.lock().as_ref().is_some_and(|s| !s.writable())
    }

    /// Serial number, if initialised (from the store's name: no I/O), or
    /// the one a damaged file's name gives.
    pub fn serial(&self) -> Option<String> {
        if let Some(serial) = self.store.lock().as_ref().map(|s| s.serial()) {
            return Some(serial);
        }
        self.damaged.lock().as_ref().map(|d| d.serial.clone())
    }

    /// Reserves `count` values of the GCM IV counter of the AES key value
    /// `key` in the token's store; the first (see `ivcounter`).
    pub fn reserve_iv_counter(&self, key: &[u8], count: u64) -> Result<u64> {
        let r = {
            let mut store = self.store();
            store
                .as_mut()
                .ok_or(err(CKR_TOKEN_NOT_RECOGNIZED))
                .and_then(|s| s.reserve_iv_counter(key, count))
        };
        self.settle(r)
    }

    /// The key `obj`'s sealed values are (to be) sealed under: the token key
    /// for a private object (while someone is logged in), the token's public
    /// sealing key for a token object that is not private (`None` for a
    /// store that has none, whose values stay plain).
    pub fn seal_key(&self, obj: &Object) -> Option<Arc<TokenKey>> {
        self.seal_keys().for_object(obj).cloned()
    }

    /// Both sealing keys at once (for a pass over many objects while the
    /// object table is locked, where the store must not be locked).
    pub fn seal_keys(&self) -> SealKeys {
        SealKeys {
            private: self.token_key(),
            public: self.public_seal.read().clone(),
        }
    }

    /// Takes the public sealing key of `store` (after it was opened,
    /// created or refreshed: a re-initialisation changes it).
    pub(super) fn note_public_seal(&self, store: Option<&dyn TokenStore>) {
        *self.public_seal.write() = store.and_then(|s| s.public_seal_key());
    }

    /// Drops every cached key and object and closes the token's database
    /// (`C_Finalize`). Locks are taken one at a time in `refresh`'s order
    /// (store, objects, login), never nested the other way.
    pub fn shutdown(&self) {
        let mut store = self.store();
        self.objects.write().clear();
        self.iv_counters.forget_parsed_keys();
        {
            let mut login = self.login.write();
            login.user = None;
            login.key = None;
        }
        *store = None;
    }
}
