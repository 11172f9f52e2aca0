//! Module-wide state: configuration, slots and sessions, created by
//! `C_Initialize` and dropped by `C_Finalize`.
//!
//! Slot numbering: the tokens found in the token directory take slots
//! 0..n in serial order; one more slot always holds an uninitialised token,
//! so `C_InitToken` always has somewhere to create a new one (as SoftHSM2
//! does). Tokens created later (by us or by another process) take the next
//! free numbers; a slot keeps its number for the life of the process.

use super::fork_gate::{self, storage_gate};
use super::handles::HandleMap;
use super::session::Session;
use super::token::{HandleAllocator, Token};
use crate::config::Config;
use crate::error::{Result, err};
use crate::storage;
use cryptoki_sys::*;
use parking_lot::{Mutex, RwLock};
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{PoisonError, RwLock as StdRwLock};

/// The module's state between `C_Initialize` and `C_Finalize`.
pub struct Module {
    /// Effective configuration.
    pub config: Arc<Config>,
    handles: Arc<HandleAllocator>,
    slots: RwLock<Vec<Arc<Token>>>,
    sessions: RwLock<HandleMap<Arc<Session>>>,
    next_session: AtomicU64,
    /// Held for a whole rescan (two threads never add one token twice);
    /// holds the serials of token files refused once (not retried, not
    /// logged again, until the next `C_Initialize`).
    rescan: Mutex<HashSet<String>>,
    /// Slot events for `C_WaitForSlotEvent`.
    events: super::events::SlotEvents,
    /// States saved by `C_GetOperationState`.
    saved_states: Mutex<super::opstate::SavedStates>,
}

/// The module while initialised. A `std` lock (futex based, no global
/// tables), held only for a moment by each call (which clones the `Arc`):
/// the fork handlers hold it across `fork()`, so a child always inherits it
/// free.
static MODULE: StdRwLock<Option<Arc<Module>>> = StdRwLock::new(None);
static FORKED: AtomicBool = AtomicBool::new(false);

fn module_read() -> std::sync::RwLockReadGuard<'static, Option<Arc<Module>>> {
    MODULE.read().unwrap_or_else(PoisonError::into_inner)
}

fn module_write() -> std::sync::RwLockWriteGuard<'static, Option<Arc<Module>>> {
    MODULE.write().unwrap_or_else(PoisonError::into_inner)
}

/// What the forking thread holds across `fork()`.
struct ForkHold {
    _log: crate::log::SinkHold,
    _gate: std::sync::RwLockWriteGuard<'static, ()>,
    _module: std::sync::RwLockWriteGuard<'static, Option<Arc<Module>>>,
}

thread_local! {
    static FORK_HOLD: std::cell::RefCell<Option<ForkHold>> =
        const { std::cell::RefCell::new(None) };
}

/// `pthread_atfork` prepare handler: waits until no thread is initialising,
/// finalising, rescanning or using a token's database, and keeps it so
/// until the fork is done (locks taken in the module's order).
pub fn before_fork() {
    let module = module_write();
    let gate = fork_gate::close_for_fork();
    let log = crate::log::hold_sink();
    let _ = FORK_HOLD.try_with(|h| {
        *h.borrow_mut() = Some(ForkHold {
            _log: log,
            _gate: gate,
            _module: module,
        })
    });
}

/// `pthread_atfork` parent and child handler: releases what
/// [`before_fork`] took (the child's only thread is the one that took it).
/// In the child, also marks the inherited state as unusable.
pub fn after_fork(child: bool) {
    if child {
        mark_forked();
    }
    let _ = FORK_HOLD.try_with(|h| h.borrow_mut().take());
}

/// Bumped after any session leaves the session table (close, close-all,
/// finalize) and at initialise (handles restart at 1): a thread's cached
/// session is valid only while this has not moved.
static SESSIONS_GENERATION: AtomicU64 = AtomicU64::new(0);

/// A thread's last session lookup, so that the calls of an operation
/// (`C_SignInit`, `C_Sign`, ...) on one session take no shared lock: two
/// loads of shared atomics nobody writes on the hot path, and a weak
/// reference upgraded for the call. Weak, so that the cache never keeps a
/// session alive: once `C_CloseSession` or `C_Finalize` drops the table's
/// reference, the session — its operations, keys and token, and through the
/// token its database files — is gone, whatever other threads cached.
struct CachedSession {
    generation: u64,
    handle: CK_SESSION_HANDLE,
    session: std::sync::Weak<Session>,
}

thread_local! {
    static SESSION_CACHE: std::cell::RefCell<Option<CachedSession>> =
        const { std::cell::RefCell::new(None) };
}

fn invalidate_cached_sessions() {
    SESSIONS_GENERATION.fetch_add(1, Ordering::SeqCst);
    // This thread's entry goes now; other threads drop theirs at their next call.
    let _ = SESSION_CACHE.try_with(|c| c.try_borrow_mut().map(|mut c| c.take()));
}

/// Runs `f` with the session `handle` (`CKR_SESSION_HANDLE_INVALID` if
/// there is none, `CKR_CRYPTOKI_NOT_INITIALIZED` before `C_Initialize`).
///
/// The lookup is cached per thread: a repeated call on the thread's last
/// session takes neither the module lock nor the session table's lock.
/// Calling `C_Finalize` while another thread is inside a call is not
/// allowed by the spec (§5.4); should it happen, the running call finishes
/// on its own reference to the session, which stays memory-safe.
#[inline]
pub fn with_session<T>(
    handle: CK_SESSION_HANDLE,
    f: impl FnOnce(&Arc<Session>) -> Result<T>,
) -> Result<T> {
    if FORKED.load(Ordering::Relaxed) {
        return Err(err(CKR_CRYPTOKI_NOT_INITIALIZED));
    }
    let generation = SESSIONS_GENERATION.load(Ordering::SeqCst);
    let mut f = Some(f);
    let hit = SESSION_CACHE.with(|c| {
        // A shared borrow for the call: nothing inside `f` replaces the
        // entry (invalidation only tries, and the generation covers it).
        let c = c.borrow();
        match &*c {
            Some(e) if e.generation == generation && e.handle == handle => {
                let session = e.session.upgrade()?;
                if session.of_an_old_token() {
                    return None;
                }
                Some((f.take().expect("unused"))(&session))
            }
            _ => None,
        }
    });
    if let Some(result) = hit {
        return result;
    }
    let session = with(|m| m.session(handle))?;
    SESSION_CACHE.with(|c| {
        if let Ok(mut c) = c.try_borrow_mut() {
            *c = Some(CachedSession {
                generation,
                handle,
                session: Arc::downgrade(&session),
            });
        }
    });
    (f.take().expect("unused"))(&session)
}

/// Marks the state inherited by a forked child as unusable (called from
/// the `pthread_atfork` child handler, which the FFI layer installs).
pub fn mark_forked() {
    FORKED.store(true, Ordering::SeqCst);
    crate::mechanisms::random::note_fork();
}

/// Runs `f` with the module, or fails with `CKR_CRYPTOKI_NOT_INITIALIZED`
/// (also in a forked child that has not called `C_Initialize`).
#[inline]
pub fn with<T>(f: impl FnOnce(&Module) -> Result<T>) -> Result<T> {
    if FORKED.load(Ordering::Relaxed) {
        return Err(err(CKR_CRYPTOKI_NOT_INITIALIZED));
    }
    let m = module_read()
        .clone()
        .ok_or(err(CKR_CRYPTOKI_NOT_INITIALIZED))?;
    f(&m)
}

/// `C_Initialize` after the FFI layer validated the arguments.
pub fn initialize() -> Result<()> {
    initialize_with(Config::load()?)
}

/// [`initialize`] with a configuration the caller loaded (and perhaps
/// adjusted: `dalek-pkcs11-util set-kdf` raises `pin_kdf_iterations`).
pub fn initialize_with(config: Config) -> Result<()> {
    let mut guard = module_write();
    if FORKED.swap(false, Ordering::SeqCst)
        && let Some(old) = guard.take()
    {
        // State copied from the parent, in which other threads may have
        // held locks: it is leaked, not dropped. Only its database
        // connections are closed (they were idle at the fork, see
        // `before_fork`): SQLite keeps per-process lock bookkeeping, and
        // connections this process opens must not share the parent's, or
        // the parent would think itself alone on the file.
        for t in old.slots.read().iter() {
            t.abandon_store();
        }
        std::mem::forget(old);
    }
    if guard.is_some() {
        return Err(err(CKR_CRYPTOKI_ALREADY_INITIALIZED));
    }
    let config = Arc::new(config);
    let log_file = match &config.log_file {
        Some(p) => std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .ok(),
        None => None,
    };
    crate::log::configure(config.log_level, log_file);
    crate::log::info(format_args!(
        "initialising, tokens in {} ({:?})",
        config.token_dir.display(),
        config.storage
    ));
    let module = Module {
        handles: Arc::new(HandleAllocator::default()),
        slots: RwLock::new(Vec::new()),
        sessions: RwLock::new(HandleMap::default()),
        next_session: AtomicU64::new(1),
        rescan: Mutex::new(HashSet::new()),
        events: Default::default(),
        saved_states: Mutex::new(super::opstate::SavedStates::new()?),
        config,
    };
    for found in storage::discover(&module.config)? {
        module.add_found(found)?;
    }
    module.ensure_free_slot()?;
    *guard = Some(Arc::new(module));
    invalidate_cached_sessions();
    Ok(())
}

/// `C_Finalize`.
pub fn finalize() -> Result<()> {
    if FORKED.load(Ordering::SeqCst) {
        return Err(err(CKR_CRYPTOKI_NOT_INITIALIZED));
    }
    let module = module_write()
        .take()
        .ok_or(err(CKR_CRYPTOKI_NOT_INITIALIZED))?;
    module.events.close();
    module.sessions.write().clear();
    invalidate_cached_sessions();
    for t in module.slots.read().iter() {
        t.shutdown();
    }
    Ok(())
}

impl Module {
    /// A new slot at the end: a token over `store` (`None`: the free
    /// slot), or the damaged file `damaged`.
    fn add_slot(
        &self,
        store: Option<Box<dyn storage::TokenStore>>,
        damaged: Option<storage::DamagedFile>,
    ) -> Result<Arc<Token>> {
        let mut slots = self.slots.write();
        let id = slots.len() as CK_SLOT_ID;
        let (config, handles) = (self.config.clone(), self.handles.clone());
        let token = Arc::new(match damaged {
            Some(file) => Token::damaged(id, config, handles, file)?,
            None => Token::new(id, config, handles, store)?,
        });
        slots.push(token.clone());
        Ok(token)
    }

    /// A slot for a token file found in the token directory: its token,
    /// or the damaged file, listed.
    fn add_found(&self, found: storage::Found) -> Result<Arc<Token>> {
        match found {
            storage::Found::Token(store) => self.add_slot(Some(store), None),
            storage::Found::Damaged(file) => self.add_slot(None, Some(file)),
        }
    }

    /// Opens again the damaged token files that changed since they were
    /// found damaged (restored, repaired, replaced): one that opens now
    /// serves its token in the same slot (a slot event).
    fn recheck_damaged(&self) {
        let damaged: Vec<_> = self
            .slots
            .read()
            .iter()
            .filter_map(|t| t.damaged_file().map(|d| (t.clone(), d)))
            .filter(|(_, d)| d.changed())
            .collect();
        for (token, file) in damaged {
            match storage::open_found(&self.config, &file.serial) {
                Ok(storage::Found::Token(store)) => {
                    crate::log::info(format_args!(
                        "token {} opens again (its file changed): served",
                        file.serial
                    ));
                    token.attach(store);
                    self.events.record(token.slot_id);
                }
                Ok(storage::Found::Damaged(now)) => token.still_damaged(now),
                Err(e) => crate::log::warn(format_args!(
                    "token {} not opened this time (tried again at the next scan): {e}",
                    file.serial
                )),
            }
        }
    }

    fn ensure_free_slot(&self) -> Result<()> {
        if self.slots.read().iter().all(|t| t.occupied()) {
            self.add_slot(None, None)?;
        }
        Ok(())
    }

    /// Picks up tokens created by other processes and keeps one free slot.
    /// A token file that is not a token of its name (a copy, a foreign or
    /// damaged file: `CKR_TOKEN_NOT_RECOGNIZED`) is logged once and skipped
    /// until the next `C_Initialize` (the slot list stays stable however
    /// often it is asked for); any other failure to open it (another
    /// process holding its lock past the busy timeout, a full disk) is
    /// logged and tried again at the next scan, so a passing condition never
    /// hides a token for the life of the process.
    ///
    /// Not once `C_Finalize` ran (a `C_WaitForSlotEvent` or `C_GetSlotList`
    /// still in progress): finalize closed every token, which then looks
    /// unknown here, and they would all be opened again. A token seen
    /// closed means finalize's close of the events came first, so the
    /// check after the look at the slots cannot miss it.
    ///
    /// The directory is listed before the slots are looked at: a token this
    /// process is creating holds its slot's store lock from before its file
    /// appears until the slot knows it, so the look waits for it instead of
    /// opening it again in another slot.
    pub fn rescan(&self) -> Result<()> {
        let _gate = storage_gate();
        let mut refused = self.rescan.lock();
        let found = storage::list_serials(&self.config);
        let known: Vec<String> = self
            .slots
            .read()
            .iter()
            .filter_map(|t| t.serial())
            .collect();
        if self.events.is_closed() {
            return Ok(());
        }
        for serial in found {
            if !known.contains(&serial) && !refused.contains(&serial) {
                match storage::open_found(&self.config, &serial) {
                    Ok(found) => {
                        let token = self.add_found(found)?;
                        // Another process made this token: a slot event.
                        self.events.record(token.slot_id);
                    }
                    Err(e) if e.rv() == CKR_TOKEN_NOT_RECOGNIZED => {
                        crate::log::warn(format_args!("token {serial} not opened: {e}"));
                        refused.insert(serial);
                    }
                    Err(e) => crate::log::warn(format_args!(
                        "token {serial} not opened this time (tried again at the next scan): {e}"
                    )),
                }
            }
        }
        self.recheck_damaged();
        self.ensure_free_slot()
    }

    /// Slot ids, in order.
    pub fn slot_ids(&self) -> Vec<CK_SLOT_ID> {
        self.slots.read().iter().map(|t| t.slot_id).collect()
    }

    /// The token in `slot`.
    pub fn token(&self, slot: CK_SLOT_ID) -> Result<Arc<Token>> {
        self.slots
            .read()
            .get(slot as usize)
            .cloned()
            .ok_or(err(CKR_SLOT_ID_INVALID))
    }

    /// The session `handle`.
    #[inline]
    pub fn session(&self, handle: CK_SESSION_HANDLE) -> Result<Arc<Session>> {
        let session = self
            .sessions
            .read()
            .get(&handle)
            .cloned()
            .ok_or(err(CKR_SESSION_HANDLE_INVALID))?;
        if session.of_an_old_token() {
            // The token was re-initialised by another process: the
            // session ends as `C_CloseSession` would end it.
            drop(session);
            let _ = self.close_session(handle);
            return Err(err(CKR_SESSION_HANDLE_INVALID));
        }
        Ok(session)
    }

    /// Sessions open on `token`.
    pub fn sessions_of(&self, token: &Token) -> Vec<Arc<Session>> {
        self.sessions
            .read()
            .values()
            .filter(|s| s.token.slot_id == token.slot_id)
            .cloned()
            .collect()
    }

    /// `C_OpenSession` (§5.6).
    pub fn open_session(&self, slot: CK_SLOT_ID, flags: CK_FLAGS) -> Result<CK_SESSION_HANDLE> {
        let token = self.token(slot)?;
        if flags & CKF_SERIAL_SESSION == 0 {
            return Err(err(CKR_SESSION_PARALLEL_NOT_SUPPORTED));
        }
        if let Some(file) = token.damaged_file() {
            crate::log::warn(format_args!(
                "C_OpenSession refused: token {} is damaged ({})",
                file.serial, file.reason
            ));
            return Err(err(CKR_TOKEN_NOT_RECOGNIZED));
        }
        if !token.initialized() {
            return Err(err(CKR_TOKEN_NOT_RECOGNIZED));
        }
        let rw = flags & CKF_RW_SESSION != 0;
        if rw && token.write_protected() {
            return Err(err(CKR_TOKEN_WRITE_PROTECTED));
        }
        if !rw && token.logged_in() == Some(CKU_SO) {
            return Err(err(CKR_SESSION_READ_WRITE_SO_EXISTS));
        }
        token.refresh()?;
        // Not while `C_InitToken` re-initialises the token: wait for it.
        let init = token.init_lock.lock();
        if !token.initialized() {
            return Err(err(CKR_TOKEN_NOT_RECOGNIZED));
        }
        let handle = self.next_session.fetch_add(1, Ordering::Relaxed) as CK_SESSION_HANDLE;
        token.sessions.fetch_add(1, Ordering::SeqCst);
        if rw {
            token.rw_sessions.fetch_add(1, Ordering::SeqCst);
        }
        let session = Arc::new(Session {
            handle,
            token: Arc::clone(&token),
            rw,
            ops: Default::default(),
            open: true.into(),
            incarnation: token.incarnation.load(Ordering::SeqCst),
        });
        self.sessions.write().insert(handle, session);
        drop(init);
        Ok(handle)
    }

    fn forget_session(&self, session: &Session) {
        let token = &session.token;
        // Marked closed before its objects go (see `objects::insert_objects`),
        // and its operations end now, not when the last reference drops.
        session.open.store(false, Ordering::SeqCst);
        session.ops.lock().cancel_all();
        token.drop_session_objects(Some(session.handle), false);
        if session.rw {
            token.rw_sessions.fetch_sub(1, Ordering::SeqCst);
        }
        if token.sessions.fetch_sub(1, Ordering::SeqCst) == 1 {
            // §5.6: when the last session closes, the user is logged out.
            token.logout_quietly();
            self.saved_states.lock().forget_private(token.slot_id);
        }
    }

    /// `C_CloseSession`.
    pub fn close_session(&self, handle: CK_SESSION_HANDLE) -> Result<()> {
        let session = self
            .sessions
            .write()
            .remove(&handle)
            .ok_or(err(CKR_SESSION_HANDLE_INVALID))?;
        invalidate_cached_sessions();
        self.forget_session(&session);
        Ok(())
    }

    /// `C_CloseAllSessions`.
    pub fn close_all_sessions(&self, slot: CK_SLOT_ID) -> Result<()> {
        let token = self.token(slot)?;
        let closed: Vec<_> = {
            let mut sessions = self.sessions.write();
            let handles: Vec<_> = sessions
                .values()
                .filter(|s| s.token.slot_id == token.slot_id)
                .map(|s| s.handle)
                .collect();
            handles.iter().filter_map(|h| sessions.remove(h)).collect()
        };
        invalidate_cached_sessions();
        for s in closed {
            self.forget_session(&s);
        }
        Ok(())
    }

    /// `C_Logout`: also ends the operations of every session of the token
    /// and forgets the saved states of its private MAC keys, so that no
    /// key the user logged in for stays in memory.
    pub fn logout(&self, token: &Token) -> Result<()> {
        token.logout()?;
        for s in self.sessions_of(token) {
            s.ops.lock().cancel_all();
        }
        self.saved_states.lock().forget_private(token.slot_id);
        Ok(())
    }

    /// `C_InitToken`.
    pub fn init_token(&self, slot: CK_SLOT_ID, so_pin: &[u8], label: &str) -> Result<()> {
        let token = self.token(slot)?;
        // Held throughout: no session opens on the token while it is being
        // (re-)initialised (`C_OpenSession` waits for the lock).
        let _init = token.init_lock.lock();
        if let Some(file) = token.damaged_file() {
            // Its SO PIN cannot be checked: an operator deletes or restores
            // the file (`dalek-pkcs11-util`).
            crate::log::warn(format_args!(
                "C_InitToken refused: token {} is damaged ({})",
                file.serial, file.reason
            ));
            return Err(err(CKR_TOKEN_NOT_RECOGNIZED));
        }
        if !self.sessions_of(&token).is_empty() {
            return Err(err(CKR_SESSION_EXISTS));
        }
        token.init_token(so_pin, label)?;
        self.events.record(slot);
        self.ensure_free_slot()
    }

    /// The states `C_GetOperationState` saved.
    pub fn saved_states(&self) -> &Mutex<super::opstate::SavedStates> {
        &self.saved_states
    }

    /// `C_WaitForSlotEvent` (§5.5): the next slot whose token was
    /// initialised, here or by another process, since the last call.
    pub fn wait_for_slot_event(&self, flags: CK_FLAGS) -> Result<CK_SLOT_ID> {
        self.events.wait(flags, || {
            if let Err(e) = self.rescan() {
                crate::log::warn(format_args!("rescan for slot events failed: {e}"));
            }
        })
    }
}
