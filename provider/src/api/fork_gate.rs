//! The storage gate (base spec §5.4 on `fork()`: a child process must call
//! `C_Initialize` before any other function; see docs/ARCHITECTURE.md,
//! "Locking"): a lock taken shared around every use of a token's database
//! and exclusively by the `pthread_atfork` prepare handler, so that a child
//! never inherits a database connection in the middle of a statement, nor a
//! store lock held by a thread it does not have.
//!
//! It sits below both `token` (every store access takes it) and `module`
//! (the fork handlers hold it across `fork()`).

use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Taken (shared) around every use of a token's database, and exclusively
/// by the fork handlers across `fork()`: a child never inherits a database
/// connection in the middle of a statement, nor a store lock held by a
/// thread it does not have.
static FORK_GATE: RwLock<()> = RwLock::new(());

/// Shared hold on [`FORK_GATE`] for one use of a token's database. Take it
/// before the store's own lock, and never twice in one thread.
pub fn storage_gate() -> RwLockReadGuard<'static, ()> {
    FORK_GATE.read().unwrap_or_else(PoisonError::into_inner)
}

/// Exclusive hold on [`FORK_GATE`], for the `pthread_atfork` prepare
/// handler (after the module lock, before the log sink): waits until no
/// thread uses a token's database.
pub fn close_for_fork() -> RwLockWriteGuard<'static, ()> {
    FORK_GATE.write().unwrap_or_else(PoisonError::into_inner)
}
