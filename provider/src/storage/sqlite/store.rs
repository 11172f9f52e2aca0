//! The SQLite store itself ([`SqliteStore`]): opening a token (read-only
//! when it cannot be written, upgrading a schema 1 file), creating one
//! under a temporary name, the write transaction every change runs in,
//! the check that its files are still the ones opened, and what it knows
//! of the stored records' MACs. Its `TokenStore` methods are in `records`.

use super::connection::{
    BUSY_TIMEOUT, close_without_checkpoint, connect, connect_raw, connect_read_only,
    is_not_a_database, is_write_refusal,
};
use super::damage::{DamagedFile, OpenFailure};
use super::files::{
    BuildingHere, FileId, FileIds, building_path, claim_new_file, ensure_dir, file_ids,
    list_serials, token_path, warn_if_shared,
};
use super::schema::{
    SCHEMA_VERSION, create_tables, keys_of, read_meta, upgrade_from_1, write_meta,
};
use crate::config::Durability;
use crate::error::{Result, SqliteFault, err, is_sqlite_damage, take_sqlite_fault};
use crate::storage::fence::Fence;
use crate::storage::integrity::Integrity;
pub(super) use crate::storage::known::Known;
use crate::storage::store::{TokenMeta, TokenStore};
use cryptoki_sys::{CKR_DEVICE_ERROR, CKR_TOKEN_WRITE_PROTECTED};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use std::path::{Path, PathBuf};
use std::time::Duration;

/// A token database.
pub struct SqliteStore {
    pub(super) conn: Connection,
    pub(super) data_version: i64,
    pub(super) serial: String,
    pub(super) path: PathBuf,
    pub(super) durability: Durability,
    pub(super) files: FileIds,
    /// The next `changes_since` returns every object (after a reopen).
    pub(super) reload: bool,
    /// When a read last checked the files (writes always do).
    pub(super) files_checked: std::time::Instant,
    /// False when the file or its directory cannot be written: every
    /// write is `CKR_TOKEN_WRITE_PROTECTED`.
    pub(super) writable: bool,
    /// Keys from the token's integrity secret (`None` only for a schema 1
    /// file that could not be upgraded because it is read-only).
    pub(super) integrity: Option<Integrity>,
    /// What this connection knows of the stored records' MACs.
    pub(super) known: Known,
    /// The token's epoch its user works in (changed by a re-initialisation):
    /// a write finding another epoch stored is refused ([`Self::write`]).
    pub(super) accepted_epoch: String,
    /// A destruction's checkpoint could not truncate the log (another
    /// connection was reading an older snapshot): every later write of
    /// this connection tries again until one does.
    pub(super) wipe_pending: bool,
    /// SQLite found the file damaged outside the records (see `damage`):
    /// writes are refused while this is set.
    pub(super) structure_damage: Option<String>,
}

/// How often a read (`changes_since`) checks that the files are still the
/// ones opened: three `stat` calls, kept off the path of every
/// `C_FindObjectsInit`.
pub(super) const READ_FILE_CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// A token file found in the token directory.
pub enum Found {
    /// Opened.
    Token(Box<dyn TokenStore>),
    /// Damaged: listed as such, never served.
    Damaged(DamagedFile),
}

/// Opens every token in `dir`. A damaged file is returned as such (one
/// damaged token hides neither itself nor the others); a copy under another
/// name, or a file that cannot be opened for a passing reason, is logged
/// and skipped.
pub fn discover(dir: &Path, durability: Durability) -> Result<Vec<Found>> {
    let mut found = Vec::new();
    warn_if_shared(dir, "token directory");
    for serial in list_serials(dir) {
        match open_found(dir, &serial, durability) {
            Ok(f) => found.push(f),
            Err(e) => crate::log::error(format_args!("skipping token {serial}: {e}")),
        }
    }
    Ok(found)
}

/// Opens token `serial`, or describes its damage; an error for a copy
/// (`CKR_TOKEN_NOT_RECOGNIZED`) or a passing failure.
pub fn open_found(dir: &Path, serial: &str, durability: Durability) -> Result<Found> {
    match SqliteStore::open_classified(dir, serial, durability) {
        Ok(s) => Ok(Found::Token(Box::new(s))),
        Err(OpenFailure::Damaged(reason)) => {
            crate::log::error(format_args!(
                "token {serial} is damaged ({reason}): listed as damaged, not served; \
                 `dalek-pkcs11-util verify --serial {serial}` names the damage"
            ));
            Ok(Found::Damaged(DamagedFile::new(
                serial,
                &token_path(dir, serial),
                reason,
            )))
        }
        Err(f) => Err(f.into_error()),
    }
}

impl Drop for SqliteStore {
    /// `C_Finalize` or the end of a token: a connection whose files were
    /// deleted or replaced under it closes without a checkpoint (see
    /// `check_files`).
    fn drop(&mut self) {
        if self.files_moved() {
            crate::log::error(format_args!(
                "{}: the database or its -wal/-shm file was deleted or replaced while open; \
                 closing without a checkpoint",
                self.path.display()
            ));
            let conn = std::mem::replace(
                &mut self.conn,
                match Connection::open_in_memory() {
                    Ok(c) => c,
                    Err(_) => return,
                },
            );
            close_without_checkpoint(conn);
        }
    }
}

impl SqliteStore {
    /// Opens the existing token `serial` in `dir`; a damaged file or a
    /// copy is `CKR_TOKEN_NOT_RECOGNIZED`.
    pub fn open(dir: &Path, serial: &str, durability: Durability) -> Result<SqliteStore> {
        Self::open_classified(dir, serial, durability).map_err(OpenFailure::into_error)
    }

    /// Opens the existing token `serial` in `dir`, telling damage from a
    /// copy and from a passing failure.
    pub fn open_classified(
        dir: &Path,
        serial: &str,
        durability: Durability,
    ) -> std::result::Result<SqliteStore, OpenFailure> {
        take_sqlite_fault();
        let path = token_path(dir, serial);
        let read_only = |what| connect_read_only(&path).map_err(|e| OpenFailure::of(e, what));
        let (conn, writable) = match connect_raw(&path, false, durability) {
            Ok(c) if !c.is_readonly(rusqlite::MAIN_DB).unwrap_or(true) => (c, true),
            Ok(_) => (read_only("unreadable")?, false),
            Err(e) if is_write_refusal(&e) => (read_only("unreadable")?, false),
            Err(e) if is_not_a_database(&e) => {
                return Err(OpenFailure::Damaged("not a SQLite database".into()));
            }
            Err(e) => return Err(OpenFailure::of(e.into(), "unreadable")),
        };
        if !writable {
            crate::log::info(format_args!(
                "{} cannot be written: token {serial} is write-protected",
                path.display()
            ));
        }
        let mut conn = conn;
        let version: Option<i64> = conn
            .query_row(
                "SELECT value FROM meta NOT INDEXED WHERE name = 'schema'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| {
                if is_sqlite_damage(&e) {
                    OpenFailure::Damaged("SQLite reports the file damaged".into())
                } else if e.sqlite_error_code() == Some(rusqlite::ErrorCode::Unknown) {
                    // SQLITE_ERROR: no `meta` table.
                    OpenFailure::Damaged("no token schema (not a token file)".into())
                } else {
                    OpenFailure::Other(e.into())
                }
            })?;
        match version {
            Some(SCHEMA_VERSION) => {}
            Some(1) if writable => upgrade_from_1(&mut conn)
                .map_err(|e| OpenFailure::of(e, "the upgrade of its schema 1 records failed"))?,
            Some(1) => crate::log::warn(format_args!(
                "token {serial}: schema 1 file opened read-only: its records cannot be authenticated"
            )),
            Some(v) => {
                return Err(OpenFailure::Damaged(format!(
                    "schema version {v}, not one this module knows"
                )));
            }
            None => return Err(OpenFailure::Damaged("no schema version".into())),
        }
        let meta = read_meta(&conn).map_err(|e| {
            OpenFailure::of(
                e,
                "its metadata is missing or failed authentication (edited or corrupted)",
            )
        })?;
        let inner = meta.serial.clone();
        if inner != serial {
            crate::log::error(format_args!(
                "skipping {}: it holds token {inner}, not {serial} (a copied file?)",
                token_path(dir, serial).display()
            ));
            return Err(OpenFailure::Foreign);
        }
        warn_if_shared(&path, "token file");
        let mut store = SqliteStore {
            conn,
            data_version: -1,
            serial: serial.to_string(),
            files: file_ids(&path),
            path,
            durability,
            reload: false,
            files_checked: std::time::Instant::now(),
            writable,
            integrity: meta
                .integrity
                .as_deref()
                .map(Integrity::from_hex)
                .transpose()
                .map_err(|e| OpenFailure::of(e, "its integrity secret is unreadable"))?,
            known: Known::default(),
            accepted_epoch: meta.epoch.clone(),
            wipe_pending: false,
            structure_damage: None,
        };
        store.data_version = store
            .current_data_version()
            .map_err(|e| OpenFailure::of(e, "unreadable"))?;
        Ok(store)
    }

    /// Creates a token file for `meta.serial` in `dir` (created if missing).
    pub fn create(dir: &Path, meta: &TokenMeta, durability: Durability) -> Result<SqliteStore> {
        ensure_dir(dir)?;
        let tmp = building_path(dir, &meta.serial);
        // Dropped last: until the finished token is open, this process's
        // directory scans leave the file alone (see `remove_leftover`).
        let _here = BuildingHere::enter(&meta.serial);
        let building = claim_new_file(&tmp)?;
        {
            // Not `create`: the file exists (claimed above) and must not be
            // silently re-made with the umask's mode.
            let mut conn = connect(&tmp, false, Durability::Full)?;
            // Before any table exists: lets purged tombstones give their
            // pages back (`incremental_vacuum`).
            conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
            let tx = conn.transaction()?;
            create_tables(&tx)?;
            write_meta(&tx, meta)?;
            tx.commit()?;
            // Fold the WAL into the main file before the rename.
            conn.pragma_update(None, "journal_mode", "DELETE")?;
        }
        std::fs::rename(&tmp, token_path(dir, &meta.serial)).map_err(|e| {
            crate::log::error(format_args!("cannot create token file: {e}"));
            err(CKR_DEVICE_ERROR)
        })?;
        // Closed before the store opens the file, never after: closing any
        // descriptor of a file drops every POSIX lock this process holds on
        // it, SQLite's included (POSIX.1-2017 `close`). Closed after the
        // open, it took the connection's shared lock along, and the next
        // connection of another process to close (a `sqlite3` shell, a
        // backup script) found itself alone on the file, checkpointed it and
        // deleted its -wal and -shm under this one (see `check_files`). The
        // `flock` it holds is no longer needed: the name it guarded is gone.
        drop(building);
        Self::open(dir, &meta.serial, durability)
    }

    pub(super) fn current_data_version(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))?)
    }

    pub(super) fn write<T>(
        &mut self,
        body: impl FnOnce(&rusqlite::Transaction<'_>, Option<&Integrity>) -> Result<T>,
    ) -> Result<T> {
        // The epoch fence (`storage::fence`), checked in the write's own
        // transaction.
        let fence = Fence::new(&self.accepted_epoch);
        let out = self.write_any(|tx, keys| {
            fence.check(&read_meta(tx)?.epoch)?;
            body(tx, keys)
        });
        fence.finish(&self.serial, &mut self.reload, out)
    }

    /// A write transaction without the epoch check: the re-initialisation
    /// itself, and the inside of [`Self::write`]. After the commit, a log
    /// wipe a reader held up is tried again.
    pub(super) fn write_any<T>(
        &mut self,
        body: impl FnOnce(&rusqlite::Transaction<'_>, Option<&Integrity>) -> Result<T>,
    ) -> Result<T> {
        if !self.writable {
            return Err(err(CKR_TOKEN_WRITE_PROTECTED));
        }
        if let Some(damage) = &self.structure_damage {
            crate::log::warn(format_args!(
                "token {}: write refused: the file is damaged ({damage}); \
                 `dalek-pkcs11-util repair --serial {}` rebuilds it",
                self.serial, self.serial
            ));
            return Err(err(CKR_TOKEN_WRITE_PROTECTED));
        }
        take_sqlite_fault();
        let out = self.write_checked(body);
        self.note_failure(&out);
        out
    }

    fn write_checked<T>(
        &mut self,
        body: impl FnOnce(&rusqlite::Transaction<'_>, Option<&Integrity>) -> Result<T>,
    ) -> Result<T> {
        self.check_files()?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = body(&tx, self.integrity.as_ref())?;
        tx.commit()?;
        if self.wipe_pending {
            self.truncate_log();
        }
        Ok(out)
    }

    /// Uses the keys of the metadata's integrity secret.
    pub(super) fn use_keys_of(&mut self, meta: &TokenMeta) -> Result<()> {
        keys_of(&mut self.integrity, meta)
    }

    /// After a deletion: the deleted record was overwritten in the database
    /// (`secure_delete`), but older copies of its page are still in the
    /// log; a checkpoint that truncates the log drops them. After a purge
    /// of tombstones, free pages go back to the file system.
    pub(super) fn forget_deleted(&mut self, purged: bool) {
        self.truncate_log();
        if purged && let Err(e) = self.conn.execute_batch("PRAGMA incremental_vacuum") {
            crate::log::debug(format_args!("incremental vacuum: {e}"));
        }
    }

    /// Copies the log into the database and truncates it to zero bytes
    /// (`wal_checkpoint(TRUNCATE)`), without waiting for anyone: with the
    /// busy timeout at zero, a connection of another process reading an
    /// older snapshot (a `sqlite3` shell inside `BEGIN`, a `.backup`) makes
    /// it stop at once, before the log is restarted, instead of holding
    /// the write lock for the whole busy timeout (30 s) while every other
    /// writer waits until its own busy timeout fails its call ("database
    /// is locked"). Until one completes, `wipe_pending` makes
    /// every later write of this connection try again: the destroyed
    /// values leave the files at the first write after the last such
    /// reader has ended (<https://sqlite.org/c3ref/wal_checkpoint_v2.html>).
    pub(super) fn truncate_log(&mut self) {
        let checkpoint = self.conn.busy_timeout(Duration::ZERO).and_then(|()| {
            self.conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                    r.get::<_, i64>(0)
                })
        });
        self.wipe_pending = !matches!(checkpoint, Ok(0));
        match checkpoint {
            Ok(0) => {}
            Ok(_) => crate::log::debug(format_args!(
                "log checkpoint: another connection is reading an older snapshot; \
                 the next write tries again"
            )),
            Err(e) => crate::log::debug(format_args!("log checkpoint: {e}")),
        }
        if let Err(e) = self.conn.busy_timeout(BUSY_TIMEOUT) {
            crate::log::warn(format_args!("busy timeout: {e}"));
        }
    }

    /// True when a file this connection opened is no longer at its path.
    pub(super) fn files_moved(&self) -> bool {
        self.moved_in(&file_ids(&self.path))
    }

    /// True when `now` lacks a file this connection opened.
    pub(super) fn moved_in(&self, now: &FileIds) -> bool {
        let moved = |then: Option<FileId>, now: Option<FileId>| then.is_some() && then != now;
        moved(self.files.db, now.db)
            || moved(self.files.wal, now.wal)
            || moved(self.files.shm, now.shm)
    }

    /// Refuses to go on when the database, its WAL or its shared-memory
    /// file is no longer the file this connection opened (deleted or
    /// replaced while the token was open, which SQLite cannot survive: a
    /// new process would build a fresh index of the log and the two would
    /// overwrite each other's commits). The call fails with
    /// `CKR_DEVICE_ERROR` and a log line; the connection is reopened on the
    /// files as they are now, and the next look at the store reloads every
    /// object from them.
    ///
    /// SQLite's own cleanup is never taken for such a deletion: it deletes
    /// the log files only when the last connection closes, and while this
    /// connection is open it holds SQLite's shared lock on the database,
    /// which tells every other connection closing that it is not the last
    /// (a `sqlite3` shell or a backup script reading the file leaves them in
    /// place). That lock lasts as long as this process closes no descriptor
    /// of the file outside SQLite (see `create` and `remove_leftover`).
    pub(super) fn check_files(&mut self) -> Result<()> {
        let now = file_ids(&self.path);
        if !self.moved_in(&now) {
            // A file SQLite made since (the log after a checkpoint) is adopted.
            self.files = FileIds {
                db: self.files.db.or(now.db),
                wal: self.files.wal.or(now.wal),
                shm: self.files.shm.or(now.shm),
            };
            return Ok(());
        }
        crate::log::error(format_args!(
            "{}: the database or its -wal/-shm file was deleted or replaced while open; \
             the call is refused and the token reopened",
            self.path.display()
        ));
        // The old connection goes first (a second one in this process would
        // share its stale lock and shared-memory state), without the
        // checkpoint a closing connection makes: from its stale index of
        // the log it would copy only the frames it knows of and then delete
        // the log, other processes' commits with it.
        let stale = std::mem::replace(&mut self.conn, Connection::open_in_memory()?);
        close_without_checkpoint(stale);
        self.conn = connect(&self.path, false, self.durability)?;
        read_meta(&self.conn)?;
        self.files = file_ids(&self.path);
        self.data_version = -1;
        self.reload = true;
        Err(err(CKR_DEVICE_ERROR))
    }
}

/// At a re-initialisation to `meta`, in its transaction: the GCM IV
/// counters move from the outgoing integrity secret (read from the file,
/// as another process may have changed it) to `meta`'s (see
/// `iv_counters::carry_over`).
pub(super) fn carry_iv_counters(tx: &Connection, meta: &TokenMeta, serial: &str) -> Result<()> {
    let Some(new) = meta.integrity.as_deref() else {
        return Ok(());
    };
    let old = read_meta(tx)
        .ok()
        .and_then(|m| m.integrity)
        .and_then(|s| Integrity::from_hex(&s).ok());
    crate::storage::iv_counters::carry_over(tx, old.as_ref(), &Integrity::from_hex(new)?, serial)
}

impl SqliteStore {
    /// Records the outcome of SQLite's integrity check
    /// (`damage::integrity_complaints`): damage found makes the store read-only
    /// (logged once), a clean check after damage gives writes back.
    pub(super) fn note_structure(&mut self, complaints: Vec<String>) {
        match (complaints.first(), &self.structure_damage) {
            (Some(first), None) => {
                crate::log::error(format_args!(
                    "token {}: SQLite's integrity check of {} failed ({} complaint(s), first: {first}); \
                     the records authenticate, so the token is served read-only until \
                     `dalek-pkcs11-util repair --serial {}` rebuilds its indexes",
                    self.serial,
                    self.path.display(),
                    complaints.len(),
                    self.serial
                ));
                self.structure_damage = Some(format!("SQLite integrity check: {first}"));
            }
            (None, Some(_)) => {
                crate::log::info(format_args!(
                    "token {}: its file checks out again (repaired): writes are allowed",
                    self.serial
                ));
                self.structure_damage = None;
            }
            _ => {}
        }
    }

    /// After a failed call: SQLite reporting the file damaged makes the
    /// store read-only, as a failed integrity check does.
    pub(super) fn note_failure<T>(&mut self, r: &crate::error::Result<T>) {
        if r.is_err()
            && take_sqlite_fault() == SqliteFault::Damage
            && self.structure_damage.is_none()
        {
            crate::log::error(format_args!(
                "token {}: SQLite reported its file damaged; the token is read-only in this \
                 process (see `dalek-pkcs11-util verify --serial {}`)",
                self.serial, self.serial
            ));
            self.structure_damage = Some("SQLite reported the file damaged during a call".into());
        }
    }
}
