//! The token files on disk: names (`<serial>.sqlite`, and
//! `.<serial>.sqlite.new` while a token is being built), modes (directory
//! 0700, files 0600), identities (device and inode, to notice a file
//! replaced under an open connection), the `flock` on a file being built and
//! the removal of what a failed creation left, listing the tokens of a
//! directory, and deleting a token under an exclusive lock.

use super::connection::connect_raw;
use crate::config::Durability;
use crate::error::{Result, err};
use cryptoki_sys::{CKR_DEVICE_ERROR, CKR_TOKEN_NOT_RECOGNIZED};
use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub(super) const SUFFIX: &str = ".sqlite";
/// Suffix of a token file being built (after `.<serial>.sqlite`).
pub(super) const BUILDING: &str = ".new";
/// Files SQLite keeps beside a database.
pub(super) const SIDE_FILES: [&str; 3] = ["-wal", "-shm", "-journal"];
/// Mode of the token directory the module creates.
pub(super) const DIR_MODE: u32 = 0o700;
/// Mode of the database files.
pub(super) const FILE_MODE: u32 = 0o600;
/// Identity (device, inode) of a file.
pub(super) type FileId = (u64, u64);

pub(super) fn file_id(path: &Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The files a connection uses, as they were when it opened them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FileIds {
    pub(super) db: Option<FileId>,
    pub(super) wal: Option<FileId>,
    pub(super) shm: Option<FileId>,
}

/// The current identities of a database's files.
pub(super) fn file_ids(db: &Path) -> FileIds {
    let side = |suffix: &str| file_id(Path::new(&format!("{}{suffix}", db.display())));
    FileIds {
        db: file_id(db),
        wal: side("-wal"),
        shm: side("-shm"),
    }
}

pub(crate) fn token_path(dir: &Path, serial: &str) -> PathBuf {
    dir.join(format!("{serial}{SUFFIX}"))
}

/// The database file of token `serial` in `dir`.
pub fn token_file(dir: &Path, serial: &str) -> PathBuf {
    token_path(dir, serial)
}

/// Deletes token `serial` in `dir` (see [`crate::storage::delete_token`]):
/// the database is locked exclusively first, then the file and its side
/// files are removed, the database file last.
pub fn delete_token(dir: &Path, serial: &str, durability: Durability) -> Result<()> {
    if !is_serial(serial) {
        return Err(err(CKR_TOKEN_NOT_RECOGNIZED));
    }
    let path = token_path(dir, serial);
    if !path.is_file() {
        return Err(err(cryptoki_sys::CKR_TOKEN_NOT_PRESENT));
    }
    // Waits (busy timeout) for another process's transaction to end; held
    // until the files are gone. A file SQLite finds damaged (no database
    // at all) has no transaction to wait for: deleted without the lock.
    let conn = match connect_raw(&path, false, durability)
        .and_then(|c| c.execute_batch("BEGIN EXCLUSIVE").map(|()| c))
    {
        Ok(c) => Some(c),
        Err(e) if crate::error::is_sqlite_damage(&e) => {
            crate::log::warn(format_args!(
                "{}: {e}: a damaged file, deleted without SQLite's lock",
                path.display()
            ));
            None
        }
        Err(e) => {
            crate::log::error(format_args!("{}: cannot lock: {e}", path.display()));
            return Err(err(CKR_DEVICE_ERROR));
        }
    };
    for side in SIDE_FILES {
        let p = PathBuf::from(format!("{}{side}", path.display()));
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                crate::log::error(format_args!("{}: {e}", p.display()));
                return Err(err(CKR_DEVICE_ERROR));
            }
        }
    }
    std::fs::remove_file(&path).map_err(|e| {
        crate::log::error(format_args!("{}: {e}", path.display()));
        err(CKR_DEVICE_ERROR)
    })?;
    drop(conn);
    // Closing may have written a log beside the now unlinked file.
    for side in SIDE_FILES {
        let _ = std::fs::remove_file(format!("{}{side}", path.display()));
    }
    Ok(())
}

/// Serial numbers of the token files in `dir`, sorted. Removes what a
/// killed or failed token creation left behind on the way.
pub fn list_serials(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut serials = Vec::new();
    let mut leftovers = Vec::new();
    for name in entries.filter_map(|e| e.ok()?.file_name().into_string().ok()) {
        if let Some(serial) = name.strip_suffix(SUFFIX)
            && is_serial(serial)
        {
            serials.push(serial.to_string());
        } else if let Some(serial) = building_serial(&name) {
            leftovers.push(serial.to_string());
        }
    }
    leftovers.sort();
    leftovers.dedup();
    for serial in leftovers {
        remove_leftover(dir, &serial);
    }
    serials.sort();
    serials
}

pub(crate) fn is_serial(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric())
}

pub(crate) fn building_path(dir: &Path, serial: &str) -> PathBuf {
    dir.join(format!(".{serial}{SUFFIX}{BUILDING}"))
}

/// The serial of a token-creation file (`.<serial>.sqlite.new` or one of
/// its side files).
pub(super) fn building_serial(name: &str) -> Option<&str> {
    let rest = name.strip_prefix('.')?;
    let base = SIDE_FILES
        .iter()
        .find_map(|s| rest.strip_suffix(s))
        .unwrap_or(rest);
    let serial = base.strip_suffix(BUILDING)?.strip_suffix(SUFFIX)?;
    is_serial(serial).then_some(serial)
}

/// Serials of the tokens this process is creating, from the claim of the
/// file until the finished token is open.
pub(super) static BUILDING_HERE: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// A token creation of this process, listed in [`BUILDING_HERE`] while it
/// lives.
pub(super) struct BuildingHere(String);

impl BuildingHere {
    pub(super) fn enter(serial: &str) -> BuildingHere {
        building_here().insert(serial.to_string());
        BuildingHere(serial.to_string())
    }
}

impl Drop for BuildingHere {
    fn drop(&mut self) {
        building_here().remove(&self.0);
    }
}

pub(super) fn building_here() -> std::sync::MutexGuard<'static, BTreeSet<String>> {
    BUILDING_HERE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes the files of an abandoned token creation, unless a process is
/// still building it (it holds the lock on the main file).
///
/// A creation of this very process is skipped without opening its file, and
/// [`BUILDING_HERE`] is held while the file is open here: the descriptor
/// this opens, once closed, would drop every POSIX lock of this process on
/// that file — those of the connection `SqliteStore::create` opens on it
/// once it is renamed into place (see there).
pub(super) fn remove_leftover(dir: &Path, serial: &str) {
    let here = building_here();
    if here.contains(serial) {
        return;
    }
    let base = building_path(dir, serial);
    let _guard = match File::open(&base) {
        Ok(f) => match f.try_lock() {
            Ok(()) => Some(f),
            Err(_) => return,
        },
        // No main file: its side files cannot be in use.
        Err(_) => None,
    };
    crate::log::warn(format_args!(
        "removing the leftovers of an unfinished token creation: {}",
        base.display()
    ));
    for side in SIDE_FILES {
        let _ = std::fs::remove_file(format!("{}{side}", base.display()));
    }
    let _ = std::fs::remove_file(&base);
}

/// Warns when group or others can reach `path`.
pub(super) fn warn_if_shared(path: &Path, what: &str) {
    if let Ok(m) = std::fs::metadata(path)
        && m.permissions().mode() & 0o077 != 0
    {
        crate::log::warn(format_args!(
            "{what} {} is accessible to group or others (mode {:o}); the token's PIN-wrapped keys are in it",
            path.display(),
            m.permissions().mode() & 0o777
        ));
    }
}

/// Creates the token directory (0700) if missing; warns about one that
/// group or others can reach.
pub(super) fn ensure_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        warn_if_shared(dir, "token directory");
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .and_then(|()| std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE)))
        .map_err(|e| {
            crate::log::error(format_args!("cannot create {}: {e}", dir.display()));
            err(CKR_DEVICE_ERROR)
        })
}

/// Creates `path` empty with mode 0600 (whatever the umask) and locks it,
/// so a directory scan leaves it alone until the returned file is dropped.
pub(super) fn claim_new_file(path: &Path) -> Result<File> {
    let io = |e: std::io::Error| {
        crate::log::error(format_args!("cannot create {}: {e}", path.display()));
        err(CKR_DEVICE_ERROR)
    };
    use std::os::unix::fs::MetadataExt;
    for _ in 0..8 {
        for side in SIDE_FILES {
            let _ = std::fs::remove_file(format!("{}{side}", path.display()));
        }
        let _ = std::fs::remove_file(path);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(FILE_MODE)
            .open(path)
            .map_err(io)?;
        file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))
            .map_err(io)?;
        file.lock().map_err(io)?;
        // A scan may have taken the file for a leftover between its creation
        // and the lock: the name must still be this file.
        let ours = file.metadata().map_err(io)?;
        if std::fs::metadata(path).is_ok_and(|m| m.ino() == ours.ino() && m.dev() == ours.dev()) {
            return Ok(file);
        }
    }
    Err(err(CKR_DEVICE_ERROR))
}
