//! A token: its store, the login state of this process, and the objects it
//! holds (token objects loaded from the store, session objects of this
//! process's sessions).
//!
//! Locking: the store mutex serialises every change to token objects and
//! the refresh that imports other processes' changes; it is taken before the
//! object table's lock, never after. Signing and other operations on
//! already-found objects touch neither.

use super::handles::HandleMap;
use super::object::Object;
use super::template::{self, Reveal};
use crate::attributes::{Attr, Attributes, Value};
use crate::config::Config;
use crate::error::{Result, err};
use crate::storage::seal::{TokenKey, WrappedKey, hex, random_bytes};
use crate::storage::{self, TokenMeta, TokenStore, Uid, Written};
use cryptoki_sys::*;
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Consecutive wrong PINs after which a PIN is locked.
pub const MAX_PIN_FAILURES: u32 = 10;
/// Shortest PIN accepted.
pub const MIN_PIN_LEN: usize = 4;
/// Longest PIN accepted.
pub const MAX_PIN_LEN: usize = 255;

/// Hands out object handles, unique in the process.
#[derive(Default)]
pub struct HandleAllocator(AtomicU64);

impl HandleAllocator {
    /// The next handle (never 0, which is `CK_INVALID_HANDLE`).
    pub fn next(&self) -> CK_ULONG {
        (self.0.fetch_add(1, Ordering::Relaxed) + 1) as CK_ULONG
    }
}

struct Login {
    user: Option<CK_USER_TYPE>,
    key: Option<Arc<TokenKey>>,
}

/// The objects of a token in this process, indexed by handle, unique id,
/// `CKA_LABEL` and `CKA_ID` (so `C_FindObjectsInit` by label or id does not
/// look at every object).
#[derive(Default)]
struct ObjectTable {
    by_handle: HandleMap<Arc<Object>>,
    by_uid: HashMap<Uid, CK_OBJECT_HANDLE>,
    by_label: HashMap<Vec<u8>, BTreeSet<CK_OBJECT_HANDLE>>,
    by_id: HashMap<Vec<u8>, BTreeSet<CK_OBJECT_HANDLE>>,
    epoch: String,
    generation: u64,
}

/// `CKA_LABEL` and `CKA_ID` of an object, as indexed.
fn index_keys(obj: &Object) -> (Vec<u8>, Vec<u8>) {
    obj.with_attrs(|a| {
        (
            a.bytes(CKA_LABEL).unwrap_or_default().to_vec(),
            a.bytes(CKA_ID).unwrap_or_default().to_vec(),
        )
    })
}

fn unindex(
    map: &mut HashMap<Vec<u8>, BTreeSet<CK_OBJECT_HANDLE>>,
    key: &[u8],
    handle: CK_OBJECT_HANDLE,
) {
    if let Some(set) = map.get_mut(key) {
        set.remove(&handle);
        if set.is_empty() {
            map.remove(key);
        }
    }
}

impl ObjectTable {
    /// Adds (or replaces) an object.
    fn add(&mut self, obj: Arc<Object>) {
        if let Some(old) = self.by_handle.get(&obj.handle).cloned() {
            self.take(old.handle);
        }
        let (label, id) = index_keys(&obj);
        self.by_label.entry(label).or_default().insert(obj.handle);
        self.by_id.entry(id).or_default().insert(obj.handle);
        if obj.token {
            self.by_uid.insert(obj.uid, obj.handle);
        }
        self.by_handle.insert(obj.handle, obj);
    }

    /// Removes an object; its cached key is dropped.
    fn take(&mut self, handle: CK_OBJECT_HANDLE) -> Option<Arc<Object>> {
        let obj = self.by_handle.remove(&handle)?;
        let (label, id) = index_keys(&obj);
        unindex(&mut self.by_label, &label, handle);
        unindex(&mut self.by_id, &id, handle);
        if obj.token && self.by_uid.get(&obj.uid) == Some(&handle) {
            self.by_uid.remove(&obj.uid);
        }
        obj.forget_key();
        Some(obj)
    }

    /// Makes room for `n` more objects (a token's first load adds them
    /// all at once).
    fn reserve(&mut self, n: usize) {
        self.by_handle.reserve(n);
        self.by_uid.reserve(n);
        self.by_label.reserve(n);
        self.by_id.reserve(n);
    }

    /// Removes every object (cached keys dropped), without unindexing
    /// them one by one.
    fn clear(&mut self) {
        for obj in self.by_handle.values() {
            obj.forget_key();
        }
        self.by_handle.clear();
        self.by_uid.clear();
        self.by_label.clear();
        self.by_id.clear();
    }

    /// Removes every object matching `doomed`.
    fn take_where(&mut self, doomed: impl Fn(&Object) -> bool) {
        let handles: Vec<_> = self
            .by_handle
            .values()
            .filter(|o| doomed(o))
            .map(|o| o.handle)
            .collect();
        for h in handles {
            self.take(h);
        }
    }

    /// Handles of visible objects matching `template`, ascending.
    ///
    /// An attribute takes part in matching only if `C_GetAttributeValue`
    /// would reveal it (§5.7 rules 1–5): a template naming a sensitive or
    /// unextractable value (or a sealed one) matches no object, so
    /// `C_FindObjects` is never an equality oracle on key material.
    fn find(&self, template: &[Attr], user: bool, keys: &SealKeys) -> Vec<CK_OBJECT_HANDLE> {
        let matches = |o: &Object| {
            if o.private && !user {
                return false;
            }
            // Readable values stored sealed (a private object's CKA_VALUE)
            // are opened after the attribute lock is released.
            let mut sealed = Vec::new();
            let plain_match = o.with_attrs(|a| {
                template
                    .iter()
                    .all(|t| match template::reveal(a, o.tables, t.ty) {
                        Reveal::Value(Value::Plain(v)) => **v == *t.value,
                        Reveal::Value(Value::Sealed(_)) => {
                            sealed.push(t);
                            true
                        }
                        _ => false,
                    })
            });
            plain_match
                && sealed.iter().all(|t| {
                    matches!(
                        o.plain_value(t.ty, keys.for_object(o).map(|k| &**k)),
                        Ok(Some(v)) if *v == *t.value
                    )
                })
        };
        let indexed = template.iter().find_map(|t| match t.ty {
            CKA_LABEL => Some(self.by_label.get(t.value.as_slice())),
            CKA_ID => Some(self.by_id.get(t.value.as_slice())),
            _ => None,
        });
        let mut found: Vec<_> = match indexed {
            Some(None) => Vec::new(),
            Some(Some(set)) => set
                .iter()
                .filter(|h| self.by_handle.get(h).is_some_and(|o| matches(o)))
                .copied()
                .collect(),
            None => self
                .by_handle
                .values()
                .filter(|o| matches(o))
                .map(|o| o.handle)
                .collect(),
        };
        found.sort_unstable();
        found
    }
}

/// One token (or the uninitialised token of the free slot).
pub struct Token {
    /// Slot the token sits in.
    pub slot_id: CK_SLOT_ID,
    config: Arc<Config>,
    handles: Arc<HandleAllocator>,
    store: Mutex<Option<Box<dyn TokenStore>>>,
    login: RwLock<Login>,
    objects: RwLock<ObjectTable>,
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
    volatile_failures: Mutex<[u32; 2]>,
    /// Held while a PIN of this token is checked: this process checks one
    /// PIN at a time, so its threads never hold more than one reserved try
    /// (see [`Token::verify_pin`]) and concurrent right PINs never add up
    /// to a locked PIN.
    pin_checks: Mutex<()>,
    /// The store's public sealing key, kept here so that opening a value
    /// never needs the store's lock (taken after object locks elsewhere);
    /// renewed whenever the store is looked at.
    public_seal: RwLock<Option<Arc<TokenKey>>>,
    /// This process's blocks of the token's GCM IV counters.
    pub iv_counters: super::ivcounter::IvCounters,
}

/// The keys sealed values are under (see [`Token::seal_key`]).
pub struct SealKeys {
    private: Option<Arc<TokenKey>>,
    public: Option<Arc<TokenKey>>,
}

impl SealKeys {
    /// The key of `obj`'s sealed values.
    pub fn for_object(&self, obj: &Object) -> Option<&Arc<TokenKey>> {
        if obj.private {
            self.private.as_ref()
        } else if obj.token {
            self.public.as_ref()
        } else {
            None
        }
    }
}

/// Snapshot of token metadata for `C_GetTokenInfo`.
pub struct TokenStatus {
    /// Metadata, `None` for the uninitialised token.
    pub meta: Option<TokenMeta>,
}

fn check_pin_len(pin: &[u8]) -> Result<()> {
    if (MIN_PIN_LEN..=MAX_PIN_LEN).contains(&pin.len()) {
        Ok(())
    } else {
        Err(err(CKR_PIN_LEN_RANGE))
    }
}

fn random_hex(n: usize) -> Result<String> {
    let mut b = vec![0u8; n];
    random_bytes(&mut b)?;
    Ok(hex(&b))
}

/// A token's store, locked, with the shared hold on the fork gate that
/// every use of a database takes (see `fork_gate::storage_gate`). The store
/// lock is released before the gate.
struct StoreGuard<'a> {
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
    fn store(&self) -> StoreGuard<'_> {
        let gate = super::fork_gate::storage_gate();
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

    /// Serial number, if initialised (from the store's name: no I/O).
    pub fn serial(&self) -> Option<String> {
        self.store.lock().as_ref().map(|s| s.serial())
    }

    /// Reserves `count` values of the GCM IV counter of the AES key value
    /// `key` in the token's store; the first (see `ivcounter`).
    pub fn reserve_iv_counter(&self, key: &[u8], count: u64) -> Result<u64> {
        let mut store = self.store();
        store
            .as_mut()
            .ok_or(err(CKR_TOKEN_NOT_RECOGNIZED))?
            .reserve_iv_counter(key, count)
    }

    /// Who is logged in (in this process).
    pub fn logged_in(&self) -> Option<CK_USER_TYPE> {
        self.login.read().user
    }

    /// True if the normal user is logged in.
    pub fn user_logged_in(&self) -> bool {
        self.logged_in() == Some(CKU_USER)
    }

    /// The unwrapped token key, while someone is logged in.
    pub fn token_key(&self) -> Option<Arc<TokenKey>> {
        self.login.read().key.clone()
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
    fn note_public_seal(&self, store: Option<&dyn TokenStore>) {
        *self.public_seal.write() = store.and_then(|s| s.public_seal_key());
    }

    /// Imports what other processes changed since we last looked.
    pub fn refresh(&self) -> Result<()> {
        let mut store = self.store();
        let Some(s) = store.as_mut() else {
            return Ok(());
        };
        let (epoch, generation) = {
            let t = self.objects.read();
            (
                t.epoch.clone(),
                if t.epoch.is_empty() {
                    u64::MAX
                } else {
                    t.generation
                },
            )
        };
        let Some(changes) = s.changes_since(&epoch, generation)? else {
            return Ok(());
        };
        self.note_public_seal(Some(&**s));
        let meta_epoch = if changes.reset || epoch.is_empty() {
            Some(s.meta()?.epoch)
        } else {
            None
        };
        let mut t = self.objects.write();
        t.reserve(changes.upserts.len());
        if let Some(e) = meta_epoch {
            if !t.epoch.is_empty() && t.epoch != e {
                // Re-initialised by another process: everything we knew is gone.
                let mut login = self.login.write();
                login.user = None;
                login.key = None;
            }
            t.take_where(|o| o.token);
            t.epoch = e;
        }
        if changes.full {
            // Every object is listed: the token objects not in the list are gone.
            let listed: std::collections::HashSet<Uid> =
                changes.upserts.iter().map(|r| r.uid).collect();
            t.take_where(|o| o.token && !listed.contains(&o.uid));
        }
        for rec in &changes.upserts {
            let existing = t.by_uid.get(&rec.uid).copied();
            if let Some(h) = existing
                && t.by_handle.get(&h).is_some_and(|o| {
                    // A full list is the truth even if its generations went
                    // back (a log lost to tampering).
                    o.generation() == rec.generation
                        || (!changes.full && o.generation() > rec.generation)
                })
            {
                continue;
            }
            let handle = existing.unwrap_or_else(|| self.handles.next());
            match Object::from_record(handle, rec) {
                Ok(o) => t.add(Arc::new(o)),
                Err(e) => crate::log::error(format_args!(
                    "skipping unreadable object {}: {e}",
                    hex(&rec.uid)
                )),
            }
        }
        // Destroyed objects go, and so do objects whose stored record no
        // longer authenticates: never served in a state nobody wrote.
        for uid in changes.deletes.iter().chain(&changes.damaged) {
            if let Some(h) = t.by_uid.get(uid).copied() {
                t.take(h);
            }
        }
        t.generation = t.generation.max(changes.generation);
        if changes.reset || changes.full || generation == u64::MAX {
            t.generation = changes.generation;
        }
        Ok(())
    }

    /// Visibility rule of §4.4 / §6.7: private objects only while the user is logged in.
    pub fn visible(&self, obj: &Object) -> bool {
        !obj.private || self.user_logged_in()
    }

    /// Looks up a visible object (`CKR_OBJECT_HANDLE_INVALID` otherwise).
    pub fn object(&self, handle: CK_OBJECT_HANDLE) -> Result<Arc<Object>> {
        let obj = self.objects.read().by_handle.get(&handle).cloned();
        match obj {
            Some(o) if self.visible(&o) => Ok(o),
            _ => Err(err(CKR_OBJECT_HANDLE_INVALID)),
        }
    }

    /// Looks up a key for a cryptographic operation: an invisible private
    /// key gives `CKR_USER_NOT_LOGGED_IN`, an unknown handle `CKR_KEY_HANDLE_INVALID`.
    pub fn key(&self, handle: CK_OBJECT_HANDLE) -> Result<Arc<Object>> {
        let obj = self.objects.read().by_handle.get(&handle).cloned();
        match obj {
            Some(o) if self.visible(&o) => Ok(o),
            Some(_) => Err(err(CKR_USER_NOT_LOGGED_IN)),
            None => Err(err(CKR_KEY_HANDLE_INVALID)),
        }
    }

    /// Handles of the visible objects matching `template` (all of its
    /// attributes equal; sealed values never match), ascending.
    pub fn find(&self, template: &[Attr]) -> Vec<CK_OBJECT_HANDLE> {
        let user = self.user_logged_in();
        let keys = self.seal_keys();
        self.objects.read().find(template, user, &keys)
    }

    /// A fresh handle.
    pub fn next_handle(&self) -> CK_OBJECT_HANDLE {
        self.handles.next()
    }

    /// Adds new objects (all token or all session objects), storing token
    /// objects in one transaction. Sensitive values of private token
    /// objects are sealed first. With `source` (the object a copy or
    /// derivation was made from), the write lands only if that object still
    /// stands as read: `Ok(None)` asks the caller to refresh and try again,
    /// a destroyed source gives `CKR_OBJECT_HANDLE_INVALID`.
    pub fn insert(
        &self,
        objects: Vec<Object>,
        source: Option<(&Object, u64)>,
    ) -> Result<Option<Vec<CK_OBJECT_HANDLE>>> {
        let token_objects = objects.iter().any(|o| o.token);
        let mut store = self.store();
        if token_objects {
            let public = store.as_ref().and_then(|s| s.public_seal_key());
            let private = self.token_key();
            for o in objects.iter().filter(|o| o.token) {
                if o.private {
                    o.seal_sensitive(private.as_deref().ok_or(err(CKR_USER_NOT_LOGGED_IN))?)?;
                } else if let Some(k) = public.as_deref() {
                    o.seal_sensitive(k)?;
                }
            }
            let records: Vec<_> = objects
                .iter()
                .filter(|o| o.token)
                .map(Object::to_record)
                .collect();
            let refs: Vec<_> = records.iter().collect();
            let expect: Vec<_> = source
                .filter(|(o, _)| o.token)
                .map(|(o, read_at)| (o.uid, read_at))
                .into_iter()
                .collect();
            let s = store.as_mut().ok_or(err(CKR_TOKEN_NOT_RECOGNIZED))?;
            let g = match s.put(&refs, &expect)? {
                Written::At(g) => g,
                Written::Stale => return Ok(None),
                Written::Gone => {
                    if let Some((src, _)) = source {
                        self.objects.write().take(src.handle);
                    }
                    return Err(err(CKR_OBJECT_HANDLE_INVALID));
                }
            };
            let mut t = self.objects.write();
            if t.generation + 1 == g {
                t.generation = g;
            }
            for o in &objects {
                o.set_generation(g);
            }
            drop(t);
        }
        let mut t = self.objects.write();
        let handles = objects.iter().map(|o| o.handle).collect();
        for o in objects {
            t.add(Arc::new(o));
        }
        Ok(Some(handles))
    }

    /// Changes the attributes of `obj` to `change(current)`, where
    /// `current` are its attributes with sealed values opened, read under
    /// the store lock (so threads of this process never undo each other's
    /// changes: every token-object write takes that lock). Nothing changes
    /// unless the store took the new record: the new attribute set is
    /// sealed and written first and only then swapped in, so a failed call
    /// leaves the object as it was (PKCS#11 3.0 §5.7 `C_SetAttributeValue`).
    /// The write lands only if the stored object is still the one `obj`
    /// reflects: `Ok(false)` when another process changed it since (refresh
    /// and try again), `CKR_OBJECT_HANDLE_INVALID` when it was destroyed.
    pub fn modify(
        &self,
        obj: &Arc<Object>,
        change: impl FnOnce(&Attributes) -> Result<Attributes>,
    ) -> Result<bool> {
        let mut store = self.store();
        let (current, read_at) = obj.unsealed_attrs(self.seal_key(obj).as_deref())?;
        let mut attrs = change(&current)?;
        let mut generation = read_at + 1;
        if obj.token {
            let key = if obj.private {
                Some(self.token_key().ok_or(err(CKR_USER_NOT_LOGGED_IN))?)
            } else {
                store.as_ref().and_then(|s| s.public_seal_key())
            };
            if let Some(key) = key {
                obj.seal_into(&mut attrs, &key)?;
            }
            let s = store.as_mut().ok_or(err(CKR_TOKEN_NOT_RECOGNIZED))?;
            let record = obj.record_with(&attrs);
            match s.put(&[&record], &[(obj.uid, read_at)])? {
                Written::At(g) => generation = g,
                Written::Stale => return Ok(false),
                Written::Gone => {
                    self.objects.write().take(obj.handle);
                    return Err(err(CKR_OBJECT_HANDLE_INVALID));
                }
            }
        }
        // Re-index under the new label and id; an object another thread
        // destroyed meanwhile stays destroyed.
        let mut t = self.objects.write();
        match t.take(obj.handle) {
            Some(current) if Arc::ptr_eq(&current, obj) => {}
            Some(current) => {
                t.add(current);
                return Ok(false);
            }
            None => return Err(err(CKR_OBJECT_HANDLE_INVALID)),
        }
        obj.replace_attrs(attrs, generation);
        t.add(obj.clone());
        if obj.token && t.generation + 1 == generation {
            t.generation = generation;
        }
        Ok(true)
    }

    /// Destroys an object. One that another process destroyed first is
    /// `CKR_OBJECT_HANDLE_INVALID` (and forgotten here).
    pub fn remove(&self, obj: &Object) -> Result<()> {
        let mut store = self.store();
        let gone = if obj.token {
            let s = store.as_mut().ok_or(err(CKR_TOKEN_NOT_RECOGNIZED))?;
            let g = s.delete(&obj.uid)?;
            let mut t = self.objects.write();
            if let Some(g) = g
                && t.generation + 1 == g
            {
                t.generation = g;
            }
            g.is_none()
        } else {
            false
        };
        let taken = self.objects.write().take(obj.handle);
        if gone || taken.is_none() {
            return Err(err(CKR_OBJECT_HANDLE_INVALID));
        }
        Ok(())
    }

    /// Removes the session objects of `session` (all sessions if `None`)
    /// and, with `private_only`, only the private ones.
    pub fn drop_session_objects(&self, session: Option<CK_SESSION_HANDLE>, private_only: bool) {
        self.objects.write().take_where(|o| {
            !o.token && session.is_none_or(|s| o.session == s) && (!private_only || o.private)
        });
    }

    /// Checks `pin` for `user` and returns the unwrapped token key, counting
    /// failures in the store (so the count survives restarts and is shared
    /// by processes).
    ///
    /// The try is *reserved* before the key derivation runs: one transaction
    /// refuses a locked PIN and counts this attempt as a failure. Only then is
    /// the PIN evaluated (slowly, with no lock held), and the outcome settled:
    /// a right PIN clears the count, a wrong one leaves it counted, anything
    /// else gives the try back. So at most [`MAX_PIN_FAILURES`] wrong PINs are
    /// ever evaluated between two right ones, whatever the number of threads
    /// or processes trying at once (PKCS#11 3.0 §5.6 `C_Login` and the token's
    /// `CKF_USER_PIN_*` flags); and when the attempt cannot be recorded (full
    /// disk, read-only file) the PIN is not evaluated at all. The threads of
    /// one process check PINs one at a time (`pin_checks`): reserved tries
    /// of right PINs in flight at once would otherwise count as failures
    /// and refuse a right PIN with `CKR_PIN_LOCKED` (100 threads logging in
    /// at once, as cryptoki's `login_feast` test does).
    fn verify_pin(&self, user: CK_USER_TYPE, pin: &[u8]) -> Result<TokenKey> {
        let _checking = self.pin_checks.lock();
        self.verify_pin_checking(user, pin)
    }

    /// [`Token::verify_pin`] for a caller that holds `pin_checks`.
    fn verify_pin_checking(&self, user: CK_USER_TYPE, pin: &[u8]) -> Result<TokenKey> {
        fn counter(m: &mut TokenMeta, user: CK_USER_TYPE) -> &mut u32 {
            if user == CKU_SO {
                &mut m.so_failures
            } else {
                &mut m.user_failures
            }
        }
        fn wrapped_pin(m: &TokenMeta, user: CK_USER_TYPE) -> Result<&WrappedKey> {
            match user {
                CKU_SO => m.so_pin.as_ref().ok_or(err(CKR_TOKEN_NOT_RECOGNIZED)),
                _ => m.user_pin.as_ref().ok_or(err(CKR_USER_PIN_NOT_INITIALIZED)),
            }
        }
        let slot = usize::from(user != CKU_SO);
        // A write-protected token cannot record tries: they are counted in
        // this process's memory, on top of the stored count.
        let volatile = self.write_protected();
        let settle = |change: &mut dyn FnMut(&mut u32)| -> Result<()> {
            if volatile {
                change(&mut self.volatile_failures.lock()[slot]);
                return Ok(());
            }
            let mut store = self.store();
            let s = store.as_mut().ok_or(err(CKR_TOKEN_NOT_RECOGNIZED))?;
            s.update_meta(&mut |m| {
                change(counter(m, user));
                Ok(())
            })
            .map(drop)
        };
        let reserved = {
            let mut store = self.store();
            let s = store.as_mut().ok_or(err(CKR_TOKEN_NOT_RECOGNIZED))?;
            if volatile {
                let mut m = s.meta()?;
                wrapped_pin(&m, user)?;
                let mut failures = self.volatile_failures.lock();
                if counter(&mut m, user).saturating_add(failures[slot]) >= MAX_PIN_FAILURES {
                    return Err(err(CKR_PIN_LOCKED));
                }
                failures[slot] += 1;
                m
            } else {
                s.update_meta(&mut |m| {
                    wrapped_pin(m, user)?;
                    let c = counter(m, user);
                    if *c >= MAX_PIN_FAILURES {
                        return Err(err(CKR_PIN_LOCKED));
                    }
                    *c += 1;
                    Ok(())
                })?
            }
        };
        let wrapped = wrapped_pin(&reserved, user)?;
        // The key derivation is slow by design: no lock is held during it.
        let outcome = if check_pin_len(pin).is_ok() {
            wrapped.unwrap(pin)
        } else {
            Err(err(CKR_PIN_INCORRECT))
        };
        match outcome {
            Ok(key) => {
                settle(&mut |c| *c = 0)?;
                Ok(key)
            }
            Err(e) if e.rv() == CKR_PIN_INCORRECT => Err(e),
            Err(e) => {
                // Not a verdict on the PIN (e.g. a damaged wrapped key): the
                // try is given back if that can be recorded.
                let _ = settle(&mut |c| *c = c.saturating_sub(1));
                Err(e)
            }
        }
    }

    /// `C_Login` for the SO or the user (§5.6). `ro_sessions` is the number
    /// of read-only sessions open on this token.
    pub fn login(&self, user: CK_USER_TYPE, pin: &[u8]) -> Result<()> {
        if user != CKU_SO && user != CKU_USER {
            return Err(err(CKR_USER_TYPE_INVALID));
        }
        let check = |current: Option<CK_USER_TYPE>| match current {
            Some(u) if u == user => Err(err(CKR_USER_ALREADY_LOGGED_IN)),
            Some(_) => Err(err(CKR_USER_ANOTHER_ALREADY_LOGGED_IN)),
            None => Ok(()),
        };
        check(self.logged_in())?;
        // One PIN check at a time; threads that waited for another's login
        // find it done and answer CKR_USER_ALREADY_LOGGED_IN at once.
        let _checking = self.pin_checks.lock();
        check(self.logged_in())?;
        if user == CKU_SO
            && self.sessions.load(Ordering::SeqCst) > self.rw_sessions.load(Ordering::SeqCst)
        {
            return Err(err(CKR_SESSION_READ_ONLY_EXISTS));
        }
        self.refresh()?;
        let key = self.verify_pin_checking(user, pin)?;
        let mut login = self.login.write();
        check(login.user)?;
        // The last session may have closed during the PIN check: its close
        // logged nobody out (nobody was in yet), so logging in now would
        // leave the token logged in with no session (§5.6). Closing
        // decrements the count before it takes this lock to log out.
        if self.sessions.load(Ordering::SeqCst) == 0 {
            return Err(err(CKR_SESSION_CLOSED));
        }
        login.user = Some(user);
        login.key = Some(Arc::new(key));
        Ok(())
    }

    /// Checks the user's PIN again (`CKU_CONTEXT_SPECIFIC`).
    pub fn reauthenticate(&self, pin: &[u8]) -> Result<()> {
        if !self.user_logged_in() {
            return Err(err(CKR_USER_NOT_LOGGED_IN));
        }
        self.verify_pin(CKU_USER, pin).map(drop)
    }

    /// `C_Logout`: forgets the token key and every cached key, and destroys
    /// private session objects (§5.6).
    pub fn logout(&self) -> Result<()> {
        let mut login = self.login.write();
        if login.user.is_none() {
            return Err(err(CKR_USER_NOT_LOGGED_IN));
        }
        login.user = None;
        login.key = None;
        drop(login);
        for o in self.objects.read().by_handle.values() {
            o.forget_key();
        }
        self.iv_counters.forget_parsed_keys();
        // The blocks of the key and of every parsed key are zeroed as they
        // are freed (`ffi::alloc`); what sealing and unsealing left on this
        // thread's stack was wiped as each call returned (`crate::hygiene`).
        self.drop_session_objects(None, true);
        Ok(())
    }

    /// Logs out without error if nobody is logged in (last session closed).
    pub fn logout_quietly(&self) {
        let _ = self.logout();
    }

    /// `C_InitToken` (§5.5): creates the token in a free slot, or erases an
    /// existing one after checking the SO PIN. The caller checked that no
    /// session is open.
    pub fn init_token(&self, so_pin: &[u8], label: &str) -> Result<()> {
        if self.write_protected() {
            return Err(err(CKR_TOKEN_WRITE_PROTECTED));
        }
        check_pin_len(so_pin)?;
        let existing = self.initialized();
        if existing {
            self.verify_pin(CKU_SO, so_pin)?;
        }
        let key = TokenKey::generate()?;
        let so_wrap = key.wrap(so_pin, self.config.pin_kdf_iterations)?;
        let mut store = self.store();
        let meta = TokenMeta {
            label: label.to_string(),
            serial: match store.as_mut() {
                Some(s) => s.meta()?.serial,
                None => random_hex(8)?,
            },
            epoch: random_hex(16)?,
            so_pin: Some(so_wrap),
            user_pin: None,
            so_failures: 0,
            user_failures: 0,
            integrity: Some(random_hex(32)?),
        };
        match store.as_mut() {
            Some(s) => s.reinitialize(&meta)?,
            None => *store = Some(storage::create(&self.config, &meta)?),
        }
        self.note_public_seal(store.as_deref());
        drop(store);
        let mut login = self.login.write();
        login.user = None;
        login.key = None;
        drop(login);
        {
            let mut t = self.objects.write();
            t.take_where(|_| true);
            t.epoch.clear();
        }
        self.refresh()
    }

    /// `C_InitPIN`: the SO sets the user PIN (re-wrapping the token key) and
    /// clears the user's failure count.
    pub fn init_pin(&self, pin: &[u8]) -> Result<()> {
        if self.logged_in() != Some(CKU_SO) {
            return Err(err(CKR_USER_NOT_LOGGED_IN));
        }
        check_pin_len(pin)?;
        let key = self.token_key().ok_or(err(CKR_USER_NOT_LOGGED_IN))?;
        let wrapped = key.wrap(pin, self.config.pin_kdf_iterations)?;
        let mut store = self.store();
        store
            .as_mut()
            .ok_or(err(CKR_TOKEN_NOT_RECOGNIZED))?
            .update_meta(&mut |m| {
                m.user_pin = Some(wrapped.clone());
                m.user_failures = 0;
                Ok(())
            })?;
        Ok(())
    }

    /// `C_SetPIN`: changes the SO PIN if the SO is logged in, else the user PIN.
    pub fn set_pin(&self, old: &[u8], new: &[u8]) -> Result<()> {
        let user = if self.logged_in() == Some(CKU_SO) {
            CKU_SO
        } else {
            CKU_USER
        };
        check_pin_len(new)?;
        let key = self.verify_pin(user, old)?;
        let wrapped = key.wrap(new, self.config.pin_kdf_iterations)?;
        let mut store = self.store();
        store
            .as_mut()
            .ok_or(err(CKR_TOKEN_NOT_RECOGNIZED))?
            .update_meta(&mut |m| {
                if user == CKU_SO {
                    m.so_pin = Some(wrapped.clone());
                } else {
                    m.user_pin = Some(wrapped.clone());
                }
                Ok(())
            })?;
        Ok(())
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
