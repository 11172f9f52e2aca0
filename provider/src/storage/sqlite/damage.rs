//! Damage to a token file that the record MACs do not cover, and what the
//! store does about it (docs/SECURITY.md, "A damaged token").
//!
//! - A file named as a token that cannot be opened as one (not a SQLite
//!   database, no schema, metadata that fails authentication, pages SQLite
//!   reports corrupt) is a [`DamagedFile`]: the module lists it in a slot of
//!   its own, flagged, and refuses sessions on it, instead of letting the
//!   token vanish from the slot list.
//! - Damage SQLite's own integrity check finds in a file whose metadata and
//!   records authenticate (most often an index: the MACs cover the rows,
//!   not SQLite's indexes over them) makes the store read-only
//!   (`SqliteStore::note_structure`, `note_failure`): every record was read and
//!   authenticated, so reads and searches stay right, but a write through a
//!   damaged index can miss the row it replaces or deletes. The check runs
//!   at every full read of the records (a process's first look, a reload),
//!   and again after each change of the file while the damage lasts, so a
//!   `dalek-pkcs11-util repair` by another process gives writes back.
//!   SQLite reporting `SQLITE_CORRUPT` during any call does the same.

use crate::error::{Error, SqliteFault, err, take_sqlite_fault};
use cryptoki_sys::{CKR_DEVICE_ERROR, CKR_TOKEN_NOT_RECOGNIZED};
use rusqlite::Connection;
use std::path::{Path, PathBuf};

/// At most this many lines of `PRAGMA integrity_check` are kept.
const MAX_COMPLAINTS: usize = 100;

/// What SQLite's `PRAGMA integrity_check` says is wrong with the database
/// `conn` reads (empty: nothing). An error running it is a complaint too.
pub(crate) fn integrity_complaints(conn: &Connection) -> Vec<String> {
    let run = || -> rusqlite::Result<Vec<String>> {
        let mut stmt = conn.prepare(&format!("PRAGMA integrity_check({MAX_COMPLAINTS})"))?;
        let lines = stmt
            .query_map([], |r| r.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(lines.into_iter().filter(|l| l != "ok").collect())
    };
    run().unwrap_or_else(|e| vec![format!("the check itself failed: {e}")])
}

/// Why a token file could not be opened as its token.
#[derive(Debug)]
pub enum OpenFailure {
    /// The file is damaged (the reason, for logs and `C_GetTokenInfo`'s
    /// reader): it stays so until the file changes.
    Damaged(String),
    /// The file is a token of another name (a copy): skipped.
    Foreign,
    /// A passing failure (another process holding a lock past the busy
    /// timeout, I/O, a full disk): tried again later.
    Other(Error),
}

impl OpenFailure {
    /// The return value a caller of `open` sees.
    pub fn into_error(self) -> Error {
        match self {
            OpenFailure::Damaged(_) | OpenFailure::Foreign => err(CKR_TOKEN_NOT_RECOGNIZED),
            OpenFailure::Other(e) => e,
        }
    }

    /// Classifies `e`, a failure while opening: SQLite reporting damage,
    /// or no SQLite error at all (the metadata failed its checks: `what`),
    /// is damage; any other SQLite error passes.
    pub(super) fn of(e: Error, what: &str) -> OpenFailure {
        match take_sqlite_fault() {
            SqliteFault::Damage => OpenFailure::Damaged("SQLite reports the file damaged".into()),
            SqliteFault::Other => OpenFailure::Other(e),
            SqliteFault::None
                if e.rv() == CKR_DEVICE_ERROR || e.rv() == CKR_TOKEN_NOT_RECOGNIZED =>
            {
                OpenFailure::Damaged(what.into())
            }
            SqliteFault::None => OpenFailure::Other(e),
        }
    }
}

/// A token file that could not be opened because it is damaged.
#[derive(Debug, Clone)]
pub struct DamagedFile {
    /// The serial number its name gives.
    pub serial: String,
    /// What is wrong, in a few words.
    pub reason: String,
    path: PathBuf,
    stamp: Option<FileStamp>,
}

/// Identity, length and modification time of a database and its log: any
/// change (a restore, a repair, an edit) changes it.
type FileStamp = [(u64, u64, u64, i64, i64); 2];

fn file_stamp(db: &Path) -> Option<FileStamp> {
    use std::os::unix::fs::MetadataExt;
    let one = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| (m.dev(), m.ino(), m.len(), m.mtime(), m.mtime_nsec()))
            .unwrap_or_default()
    };
    std::fs::metadata(db).ok()?;
    Some([one(db), one(Path::new(&format!("{}-wal", db.display())))])
}

impl DamagedFile {
    pub(super) fn new(serial: &str, path: &Path, reason: String) -> DamagedFile {
        DamagedFile {
            serial: serial.to_string(),
            reason,
            path: path.to_path_buf(),
            stamp: file_stamp(path),
        }
    }

    /// True when the file is no longer the one found damaged (restored,
    /// repaired, replaced or deleted): worth opening again.
    pub fn changed(&self) -> bool {
        file_stamp(&self.path) != self.stamp
    }
}
