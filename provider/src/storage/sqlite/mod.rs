//! The SQLite store: one database file per token, `<serial>.sqlite` in the
//! token directory.
//!
//! WAL journal (`synchronous=NORMAL` by default: a commit survives a crash
//! of the process at any moment, and a power loss can only undo the last
//! commits; `durability = "full"` adds an fsync per commit), a busy timeout so concurrent processes wait for each other
//! instead of failing, every write one `BEGIN IMMEDIATE` transaction, and a
//! generation counter bumped by each write. Destroyed objects leave a
//! tombstone so other processes learn of the deletion. `PRAGMA data_version`
//! tells without a query whether another connection committed anything.
//! A new token is built under a temporary name and renamed into place, so no
//! process ever sees a half-created token; the temporary file is locked
//! (`flock`) while it is being built, and one left behind by a killed or
//! failed `C_InitToken` is removed at the next scan of the directory once no
//! process holds that lock.
//!
//! Files are private to their owner whatever the umask: the token directory
//! is created 0700 and each database 0600 (SQLite gives its `-wal` and
//! `-shm` files the database's mode). A directory or database that group or
//! others can reach is reported in the log, not changed: the operator may
//! share a token on purpose.
//!
//! A file is a token only if the serial number inside it matches its name
//! (`<serial>.sqlite`); a copy under another name is skipped with a log
//! line, so the slot list does not grow with copies.

use super::integrity::{Integrity, MAC_LEN, Tag, toggle};
use super::seal::TokenKey;
use super::{Changes, Expect, ObjectRecord, TokenMeta, TokenStore, UID_LEN, Uid, Written};
use crate::config::Durability;
use crate::error::{Result, err};
use cryptoki_sys::{CKR_DEVICE_ERROR, CKR_TOKEN_NOT_RECOGNIZED, CKR_TOKEN_WRITE_PROTECTED};
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use std::collections::{BTreeSet, HashMap};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const SUFFIX: &str = ".sqlite";
/// Suffix of a token file being built (after `.<serial>.sqlite`).
const BUILDING: &str = ".new";
/// Files SQLite keeps beside a database.
const SIDE_FILES: [&str; 3] = ["-wal", "-shm", "-journal"];
/// Mode of the token directory the module creates.
const DIR_MODE: u32 = 0o700;
/// Mode of the database files.
const FILE_MODE: u32 = 0o600;
/// Version 2 added record MACs (`objects.mac`), the metadata MAC and the
/// object-set digest; a version 1 file is upgraded when it is opened for
/// writing.
const SCHEMA_VERSION: i64 = 2;
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS objects (
    uid BLOB PRIMARY KEY,
    generation INTEGER NOT NULL,
    class INTEGER NOT NULL,
    private INTEGER NOT NULL,
    label BLOB NOT NULL,
    ckid BLOB NOT NULL,
    attrs BLOB NOT NULL,
    mac BLOB NOT NULL DEFAULT x''
);
CREATE INDEX IF NOT EXISTS objects_generation ON objects(generation);
CREATE INDEX IF NOT EXISTS objects_label ON objects(label);
CREATE INDEX IF NOT EXISTS objects_ckid ON objects(ckid);
CREATE INDEX IF NOT EXISTS objects_class ON objects(class);
CREATE TABLE IF NOT EXISTS tombstones (uid BLOB PRIMARY KEY, generation INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS tombstones_generation ON tombstones(generation);
";

/// Generations of tombstones kept: a process that last looked longer ago
/// than this reloads the whole object list instead (see `changes_since`).
const TOMBSTONE_GENERATIONS: u64 = 1024;
/// A purge of old tombstones runs at every this many generations.
const PURGE_EVERY: u64 = 128;

/// Identity (device, inode) of a file.
type FileId = (u64, u64);

fn file_id(path: &Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The files a connection uses, as they were when it opened them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileIds {
    db: Option<FileId>,
    wal: Option<FileId>,
    shm: Option<FileId>,
}

/// A token database.
pub struct SqliteStore {
    conn: Connection,
    data_version: i64,
    serial: String,
    path: PathBuf,
    durability: Durability,
    files: FileIds,
    /// The next `changes_since` returns every object (after a reopen).
    reload: bool,
    /// When a read last checked the files (writes always do).
    files_checked: std::time::Instant,
    /// False when the file or its directory cannot be written: every
    /// write is `CKR_TOKEN_WRITE_PROTECTED`.
    writable: bool,
    /// Keys from the token's integrity secret (`None` only for a schema 1
    /// file that could not be upgraded because it is read-only).
    integrity: Option<Integrity>,
    /// What this connection knows of the stored records' MACs.
    known: Known,
}

/// The stored MACs of the records a connection knows of.
#[derive(Default)]
struct Known {
    /// Stored MAC of every record, and their XOR.
    macs: HashMap<Uid, Tag>,
    xor: Tag,
    /// Records whose MAC did not match: refused, never served.
    damaged: BTreeSet<Uid>,
    /// False when the known records do not add up to the stored digest.
    digest_off: bool,
}

impl Known {
    /// Records the stored MAC of a record.
    fn learn(&mut self, uid: Uid, stored: &[u8]) {
        let mut tag = [0u8; MAC_LEN];
        let n = stored.len().min(MAC_LEN);
        tag[..n].copy_from_slice(&stored[..n]);
        if let Some(old) = self.macs.insert(uid, tag) {
            toggle(&mut self.xor, &old);
        }
        toggle(&mut self.xor, &tag);
    }

    /// Forgets a record that no longer exists.
    fn forget(&mut self, uid: &Uid) {
        if let Some(old) = self.macs.remove(uid) {
            toggle(&mut self.xor, &old);
        }
        self.damaged.remove(uid);
    }
}

/// How often a read (`changes_since`) checks that the files are still the
/// ones opened: three `stat` calls, kept off the path of every
/// `C_FindObjectsInit`.
const READ_FILE_CHECK_INTERVAL: Duration = Duration::from_millis(100);

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
    let conn = connect_raw(&path, false, durability).map_err(|e| {
        crate::log::error(format_args!("{}: {e}", path.display()));
        err(CKR_DEVICE_ERROR)
    })?;
    // Waits (busy timeout) for another process's transaction to end; held
    // until the files are gone.
    conn.execute_batch("BEGIN EXCLUSIVE").map_err(|e| {
        crate::log::error(format_args!("{}: cannot lock: {e}", path.display()));
        err(CKR_DEVICE_ERROR)
    })?;
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
fn building_serial(name: &str) -> Option<&str> {
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
static BUILDING_HERE: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// A token creation of this process, listed in [`BUILDING_HERE`] while it
/// lives.
struct BuildingHere(String);

impl BuildingHere {
    fn enter(serial: &str) -> BuildingHere {
        building_here().insert(serial.to_string());
        BuildingHere(serial.to_string())
    }
}

impl Drop for BuildingHere {
    fn drop(&mut self) {
        building_here().remove(&self.0);
    }
}

fn building_here() -> std::sync::MutexGuard<'static, BTreeSet<String>> {
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
fn remove_leftover(dir: &Path, serial: &str) {
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
fn warn_if_shared(path: &Path, what: &str) {
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
fn ensure_dir(dir: &Path) -> Result<()> {
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

/// Opens every token in `dir`. A file that cannot be opened is logged and
/// skipped, so one damaged token does not hide the others.
pub fn discover(dir: &Path, durability: Durability) -> Result<Vec<Box<dyn TokenStore>>> {
    let mut stores: Vec<Box<dyn TokenStore>> = Vec::new();
    warn_if_shared(dir, "token directory");
    for serial in list_serials(dir) {
        match SqliteStore::open(dir, &serial, durability) {
            Ok(s) => stores.push(Box::new(s)),
            Err(e) => crate::log::error(format_args!("skipping token {serial}: {e}")),
        }
    }
    Ok(stores)
}

fn connect(path: &Path, create: bool, durability: Durability) -> Result<Connection> {
    Ok(connect_raw(path, create, durability)?)
}

pub(crate) fn connect_raw(
    path: &Path,
    create: bool,
    durability: Durability,
) -> rusqlite::Result<Connection> {
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    let sync = match durability {
        Durability::Normal => "NORMAL",
        Durability::Full => "FULL",
    };
    conn.pragma_update(None, "synchronous", sync)?;
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    // Deleted records are overwritten, not left in free pages.
    conn.pragma_update(None, "secure_delete", "ON")?;
    // The first read makes SQLite open the log and its index: a directory
    // or file that cannot be written shows here.
    conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |_| Ok(()))?;
    Ok(conn)
}

/// True for the errors of a database that can be read but not written
/// (read-only file or directory): the token is then opened read-only.
fn is_write_refusal(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(
            rusqlite::ErrorCode::CannotOpen
                | rusqlite::ErrorCode::ReadOnly
                | rusqlite::ErrorCode::PermissionDenied
        )
    )
}

/// True for a file that is not a SQLite database at all (garbage, another
/// format, an encrypted copy): such a token is not recognized, and will not
/// become one by trying again (unlike a busy or unreadable file).
fn is_not_a_database(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase)
}

/// `path` as a SQLite URI path (`%`, `?` and `#` escaped).
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for c in path.display().to_string().chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}

/// Opens an existing token's database for reading only: with SQLite's
/// usual locking when its log files exist or can be made, else (a
/// read-only directory without them, where nobody can write the token
/// either) as an immutable file.
pub(crate) fn connect_read_only(path: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let try_open = |query: &str| -> rusqlite::Result<Connection> {
        let conn = Connection::open_with_flags(format!("file:{}?{query}", uri_path(path)), flags)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        conn.query_row("SELECT COUNT(*) FROM sqlite_master", [], |_| Ok(()))?;
        Ok(conn)
    };
    let log_is_empty =
        std::fs::metadata(format!("{}-wal", path.display())).map_or(true, |m| m.len() == 0);
    match try_open("mode=ro") {
        Ok(c) => Ok(c),
        // Immutable reads ignore the log: only when it holds nothing.
        Err(_) if log_is_empty => Ok(try_open("immutable=1")?),
        Err(e) => Err(e.into()),
    }
}
fn meta_blob(conn: &Connection, name: &str) -> Result<Option<Vec<u8>>> {
    Ok(conn
        .prepare_cached("SELECT value FROM meta WHERE name = ?1")?
        .query_row(params![name], |r| r.get(0))
        .optional()?)
}

fn set_meta_blob(conn: &Connection, name: &str, value: &[u8]) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO meta(name, value) VALUES(?1, ?2)
         ON CONFLICT(name) DO UPDATE SET value = excluded.value",
    )?
    .execute(params![name, value])?;
    Ok(())
}

/// Reads the metadata; when it names an integrity secret (every token since
/// schema 2), its MAC must match or the token is refused.
pub(crate) fn read_meta(conn: &Connection) -> Result<TokenMeta> {
    let json = meta_blob(conn, "token")?.ok_or(err(CKR_TOKEN_NOT_RECOGNIZED))?;
    let meta: TokenMeta =
        serde_json::from_slice(&json).map_err(|_| err(CKR_TOKEN_NOT_RECOGNIZED))?;
    if let Some(secret) = &meta.integrity {
        let keys = Integrity::from_hex(secret)?;
        if meta_blob(conn, "token_mac")?.as_deref() != Some(&keys.meta_mac(&json)[..]) {
            crate::log::error(format_args!(
                "token {}: metadata failed authentication (corrupted or edited)",
                meta.serial
            ));
            return Err(err(CKR_DEVICE_ERROR));
        }
    }
    Ok(meta)
}

fn write_meta(conn: &Connection, meta: &TokenMeta) -> Result<()> {
    let json = serde_json::to_vec(meta).map_err(|_| err(CKR_DEVICE_ERROR))?;
    set_meta_blob(conn, "token", &json)?;
    if let Some(secret) = &meta.integrity {
        set_meta_blob(
            conn,
            "token_mac",
            &Integrity::from_hex(secret)?.meta_mac(&json),
        )?;
    }
    Ok(())
}

/// The object-set digest (see `integrity`).
fn digest(conn: &Connection) -> Result<Tag> {
    let mut d = [0u8; MAC_LEN];
    if let Some(v) = meta_blob(conn, "objects_digest")?
        && v.len() == MAC_LEN
    {
        d.copy_from_slice(&v);
    }
    Ok(d)
}

/// The stored MAC of object `uid`, if it exists.
fn stored_mac(conn: &Connection, uid: &Uid) -> Result<Option<Vec<u8>>> {
    Ok(conn
        .prepare_cached("SELECT mac FROM objects WHERE uid = ?1")?
        .query_row(params![&uid[..]], |r| r.get(0))
        .optional()?)
}

/// Upgrades a schema 1 file in place (one transaction): a fresh integrity
/// secret, the MAC of every record as it stands, the object-set digest.
/// The records are trusted as they are at this moment.
fn upgrade_from_1(conn: &mut Connection) -> Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let version = meta_number(&tx, "schema")?;
    if version == SCHEMA_VERSION as u64 {
        return Ok(()); // another process upgraded it first
    }
    tx.execute_batch("ALTER TABLE objects ADD COLUMN mac BLOB NOT NULL DEFAULT x''")?;
    let mut meta = read_meta(&tx)?;
    let mut secret = [0u8; MAC_LEN];
    super::seal::random_bytes(&mut secret)?;
    meta.integrity = Some(super::seal::hex(&secret));
    secret.fill(0);
    let keys = Integrity::from_hex(meta.integrity.as_deref().unwrap_or_default())?;
    /// uid, generation, class, private, attrs.
    type Row = (Vec<u8>, i64, i64, bool, Vec<u8>);
    let rows: Vec<Row> = tx
        .prepare("SELECT uid, generation, class, private, attrs FROM objects")?
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut d = [0u8; MAC_LEN];
    for (uid, g, class, private, attrs) in rows {
        let tag = keys.record_mac(&uid, g as u64, class as u64, private, &attrs);
        toggle(&mut d, &tag);
        tx.execute(
            "UPDATE objects SET mac = ?1 WHERE uid = ?2",
            params![&tag[..], uid],
        )?;
    }
    set_meta_blob(&tx, "objects_digest", &d)?;
    write_meta(&tx, &meta)?;
    set_meta_number(&tx, "schema", SCHEMA_VERSION as u64)?;
    tx.commit()?;
    crate::log::info(format_args!(
        "token {}: upgraded to schema 2 (record MACs)",
        meta.serial
    ));
    Ok(())
}

/// A numeric metadata row (0 when absent).
fn meta_number(conn: &Connection, name: &str) -> Result<u64> {
    let g: Option<i64> = conn
        .prepare_cached("SELECT value FROM meta WHERE name = ?1")?
        .query_row(params![name], |r| r.get(0))
        .optional()?;
    Ok(g.unwrap_or(0) as u64)
}

fn set_meta_number(conn: &Connection, name: &str, value: u64) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO meta(name, value) VALUES(?1, ?2)
         ON CONFLICT(name) DO UPDATE SET value = excluded.value",
    )?
    .execute(params![name, value as i64])?;
    Ok(())
}

fn generation(conn: &Connection) -> Result<u64> {
    meta_number(conn, "generation")
}

fn bump_generation(conn: &Connection) -> Result<u64> {
    let g = generation(conn)? + 1;
    set_meta_number(conn, "generation", g)?;
    Ok(g)
}

/// At most every [`PURGE_EVERY`] generations, drops the tombstones older
/// than [`TOMBSTONE_GENERATIONS`] and raises the floor below which readers
/// reload everything. True when it purged.
fn purge_tombstones(conn: &Connection, generation: u64) -> Result<bool> {
    let floor = generation.saturating_sub(TOMBSTONE_GENERATIONS);
    if floor < meta_number(conn, "tombstone_floor")? + PURGE_EVERY {
        return Ok(false);
    }
    conn.execute(
        "DELETE FROM tombstones WHERE generation <= ?1",
        params![floor as i64],
    )?;
    set_meta_number(conn, "tombstone_floor", floor)?;
    Ok(true)
}

fn uid_from(v: Vec<u8>) -> rusqlite::Result<Uid> {
    v.try_into().map_err(|_| {
        rusqlite::Error::InvalidColumnType(0, "uid".into(), rusqlite::types::Type::Blob)
    })
}

/// Creates `path` empty with mode 0600 (whatever the umask) and locks it,
/// so a directory scan leaves it alone until the returned file is dropped.
fn claim_new_file(path: &Path) -> Result<File> {
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

/// Makes `keys` the keys of `meta`'s integrity secret (derived again only
/// when the secret changed).
fn keys_of(keys: &mut Option<Integrity>, meta: &TokenMeta) -> Result<()> {
    let same = match (keys.as_ref(), meta.integrity.as_deref()) {
        (Some(k), Some(s)) => k.is_of(s),
        (None, None) => true,
        _ => false,
    };
    if !same {
        *keys = meta
            .integrity
            .as_deref()
            .map(Integrity::from_hex)
            .transpose()?;
    }
    Ok(())
}

/// Closes a connection whose files were deleted or replaced under it,
/// without the checkpoint (and log deletion) a last connection makes.
fn close_without_checkpoint(conn: Connection) {
    let _ = conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    );
    drop(conn);
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

/// The current identities of a database's files.
fn file_ids(db: &Path) -> FileIds {
    let side = |suffix: &str| file_id(Path::new(&format!("{}{suffix}", db.display())));
    FileIds {
        db: file_id(db),
        wal: side("-wal"),
        shm: side("-shm"),
    }
}

impl SqliteStore {
    /// Opens the existing token `serial` in `dir`.
    pub fn open(dir: &Path, serial: &str, durability: Durability) -> Result<SqliteStore> {
        let path = token_path(dir, serial);
        let (conn, writable) = match connect_raw(&path, false, durability) {
            Ok(c) if !c.is_readonly(rusqlite::MAIN_DB).unwrap_or(true) => (c, true),
            Ok(_) => (connect_read_only(&path)?, false),
            Err(e) if is_write_refusal(&e) => (connect_read_only(&path)?, false),
            Err(e) if is_not_a_database(&e) => {
                crate::log::warn(format_args!(
                    "{} is not a SQLite database: token {serial} is not recognized",
                    path.display()
                ));
                return Err(err(CKR_TOKEN_NOT_RECOGNIZED));
            }
            Err(e) => return Err(e.into()),
        };
        if !writable {
            crate::log::info(format_args!(
                "{} cannot be written: token {serial} is write-protected",
                path.display()
            ));
        }
        let mut conn = conn;
        let version: Option<i64> = conn
            .query_row("SELECT value FROM meta WHERE name = 'schema'", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|_| err(CKR_TOKEN_NOT_RECOGNIZED))?;
        match version {
            Some(SCHEMA_VERSION) => {}
            Some(1) if writable => upgrade_from_1(&mut conn)?,
            Some(1) => crate::log::warn(format_args!(
                "token {serial}: schema 1 file opened read-only: its records cannot be authenticated"
            )),
            _ => return Err(err(CKR_TOKEN_NOT_RECOGNIZED)),
        }
        let meta = read_meta(&conn)?;
        let inner = meta.serial.clone();
        if inner != serial {
            crate::log::error(format_args!(
                "skipping {}: it holds token {inner}, not {serial} (a copied file?)",
                token_path(dir, serial).display()
            ));
            return Err(err(CKR_TOKEN_NOT_RECOGNIZED));
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
                .transpose()?,
            known: Known::default(),
        };
        store.data_version = store.current_data_version()?;
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
            tx.execute_batch(SCHEMA)?;
            tx.execute(
                "INSERT INTO meta(name, value) VALUES('schema', ?1)",
                params![SCHEMA_VERSION],
            )?;
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

    fn current_data_version(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))?)
    }

    fn write<T>(
        &mut self,
        body: impl FnOnce(&rusqlite::Transaction<'_>, Option<&Integrity>) -> Result<T>,
    ) -> Result<T> {
        if !self.writable {
            return Err(err(CKR_TOKEN_WRITE_PROTECTED));
        }
        self.check_files()?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = body(&tx, self.integrity.as_ref())?;
        tx.commit()?;
        Ok(out)
    }

    /// Uses the keys of the metadata's integrity secret.
    fn use_keys_of(&mut self, meta: &TokenMeta) -> Result<()> {
        keys_of(&mut self.integrity, meta)
    }

    /// After a deletion: the deleted record was overwritten in the database
    /// (`secure_delete`), but older copies of its page are still in the
    /// log; a checkpoint that truncates the log drops them (best effort: it
    /// completes once no other connection is reading an older snapshot, and
    /// the next deletion tries again). It does not wait for such a reader
    /// (a `TRUNCATE` checkpoint otherwise waits the whole busy timeout, 30
    /// s, for a backup or a `sqlite3` shell to end its read). After a purge
    /// of tombstones, free pages go back to the file system.
    fn forget_deleted(&mut self, purged: bool) {
        let checkpoint = self.conn.busy_timeout(Duration::ZERO).and_then(|()| {
            self.conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                    r.get::<_, i64>(0)
                })
        });
        match checkpoint {
            Ok(0) => {}
            Ok(_) => crate::log::debug(format_args!(
                "checkpoint after a deletion: another connection is reading an older snapshot"
            )),
            Err(e) => crate::log::debug(format_args!("checkpoint after a deletion: {e}")),
        }
        if let Err(e) = self.conn.busy_timeout(BUSY_TIMEOUT) {
            crate::log::warn(format_args!("busy timeout: {e}"));
        }
        if purged && let Err(e) = self.conn.execute_batch("PRAGMA incremental_vacuum") {
            crate::log::debug(format_args!("incremental vacuum: {e}"));
        }
    }

    /// True when a file this connection opened is no longer at its path.
    fn files_moved(&self) -> bool {
        self.moved_in(&file_ids(&self.path))
    }

    /// True when `now` lacks a file this connection opened.
    fn moved_in(&self, now: &FileIds) -> bool {
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
    fn check_files(&mut self) -> Result<()> {
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
fn carry_iv_counters(tx: &Connection, meta: &TokenMeta, serial: &str) -> Result<()> {
    let Some(new) = meta.integrity.as_deref() else {
        return Ok(());
    };
    let old = read_meta(tx)
        .ok()
        .and_then(|m| m.integrity)
        .and_then(|s| Integrity::from_hex(&s).ok());
    super::iv_counters::carry_over(tx, old.as_ref(), &Integrity::from_hex(new)?, serial)
}

impl TokenStore for SqliteStore {
    fn serial(&self) -> String {
        self.serial.clone()
    }

    fn writable(&self) -> bool {
        self.writable
    }

    fn meta(&mut self) -> Result<TokenMeta> {
        read_meta(&self.conn)
    }

    fn update_meta(
        &mut self,
        change: &mut dyn FnMut(&mut TokenMeta) -> Result<()>,
    ) -> Result<TokenMeta> {
        let m = self.write(|tx, _| {
            let mut m = read_meta(tx)?;
            change(&mut m)?;
            write_meta(tx, &m)?;
            Ok(m)
        })?;
        self.use_keys_of(&m)?;
        Ok(m)
    }

    fn reinitialize(&mut self, meta: &TokenMeta) -> Result<()> {
        let serial = self.serial.clone();
        self.write(|tx, _| {
            carry_iv_counters(tx, meta, &serial)?;
            tx.execute("DELETE FROM objects", [])?;
            tx.execute("DELETE FROM tombstones", [])?;
            set_meta_blob(tx, "objects_digest", &[0; MAC_LEN])?;
            bump_generation(tx)?;
            write_meta(tx, meta)
        })?;
        self.known = Known::default();
        self.use_keys_of(meta)
    }

    fn changes_since(&mut self, epoch: &str, since: u64) -> Result<Option<Changes>> {
        if self.files_checked.elapsed() >= READ_FILE_CHECK_INTERVAL {
            self.files_checked = std::time::Instant::now();
            self.check_files()?;
        }
        let dv = self.current_data_version()?;
        if dv == self.data_version && since != u64::MAX && !self.reload {
            return Ok(None);
        }
        // One read transaction, so the generation and rows agree.
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Deferred)?;
        let meta = read_meta(&tx)?;
        // Another process may have re-initialised the token (a new secret).
        keys_of(&mut self.integrity, &meta)?;
        let current = generation(&tx)?;
        let reset = meta.epoch != epoch;
        // Tombstones older than the floor are purged: a reader that looked
        // before it cannot learn deletions one by one and gets every object.
        let full = !reset
            && since != u64::MAX
            && (self.reload || since < meta_number(&tx, "tombstone_floor")?);
        let from = if reset || full { 0 } else { since };
        let mut changes = Changes {
            generation: current,
            reset,
            full,
            ..Changes::default()
        };
        if reset || full || since == u64::MAX {
            // Everything is read again: so is every MAC.
            self.known = Known::default();
        }
        if reset || full || current != since {
            let mut stmt = tx.prepare_cached(
                "SELECT uid, generation, class, private, attrs, mac FROM objects
                 WHERE generation > ?1",
            )?;
            // `label` and `ckid` are columns for queries on the file; a
            // reader rebuilds them from `attrs`, so they are not read here.
            let rows = stmt.query_map(params![from as i64], |r| {
                Ok((
                    ObjectRecord {
                        uid: uid_from(r.get(0)?)?,
                        generation: r.get::<_, i64>(1)? as u64,
                        class: r.get::<_, i64>(2)? as u64,
                        private: r.get(3)?,
                        label: Vec::new(),
                        id: Vec::new(),
                        attrs: r.get(4)?,
                    },
                    r.get::<_, Vec<u8>>(5)?,
                ))
            })?;
            let mut read = Vec::new();
            for row in rows {
                read.push(row?);
            }
            drop(stmt);
            for (rec, stored) in read {
                let authentic = self.integrity.as_ref().is_none_or(|k| {
                    k.record_mac(&rec.uid, rec.generation, rec.class, rec.private, &rec.attrs)[..]
                        == stored[..]
                });
                self.known.learn(rec.uid, &stored);
                if authentic {
                    self.known.damaged.remove(&rec.uid);
                    changes.upserts.push(rec);
                } else {
                    crate::log::error(format_args!(
                        "token {}: object {} failed authentication (corrupted or edited); \
                         it is not served",
                        self.serial,
                        super::seal::hex(&rec.uid)
                    ));
                    self.known.damaged.insert(rec.uid);
                    changes.damaged.push(rec.uid);
                }
            }
            if !reset && !full {
                let mut stmt =
                    tx.prepare_cached("SELECT uid FROM tombstones WHERE generation > ?1")?;
                let rows = stmt.query_map(params![from as i64], |r| uid_from(r.get(0)?))?;
                let mut gone = Vec::new();
                for row in rows {
                    gone.push(row?);
                }
                drop(stmt);
                for uid in gone {
                    self.known.forget(&uid);
                    changes.deletes.push(uid);
                }
            }
        }
        if self.integrity.is_some() {
            let ok = digest(&tx)? == self.known.xor;
            if !ok && !self.known.digest_off {
                crate::log::error(format_args!(
                    "token {}: its objects do not add up to the stored digest \
                     (records deleted or added outside the module)",
                    self.serial
                ));
            }
            self.known.digest_off = !ok;
        }
        drop(tx);
        self.data_version = self.current_data_version()?;
        self.reload = false;
        Ok(Some(changes))
    }

    fn put(&mut self, records: &[&ObjectRecord], expect: &[Expect]) -> Result<Written> {
        let (written, tags) = self.write(|tx, keys| {
            for (uid, generation) in expect {
                let stored: Option<i64> = tx
                    .prepare_cached("SELECT generation FROM objects WHERE uid = ?1")?
                    .query_row(params![&uid[..]], |r| r.get(0))
                    .optional()?;
                match stored {
                    None => return Ok((Written::Gone, Vec::new())),
                    Some(g) if g as u64 != *generation => return Ok((Written::Stale, Vec::new())),
                    Some(_) => {}
                }
            }
            let g = bump_generation(tx)?;
            let mut d = digest(tx)?;
            let mut stmt = tx.prepare_cached(
                "INSERT INTO objects(uid, generation, class, private, label, ckid, attrs, mac)
                 VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT(uid) DO UPDATE SET generation = excluded.generation,
                   class = excluded.class, private = excluded.private, label = excluded.label,
                   ckid = excluded.ckid, attrs = excluded.attrs, mac = excluded.mac",
            )?;
            let mut tags = Vec::with_capacity(records.len());
            for r in records {
                let tag = keys
                    .map(|k| k.record_mac(&r.uid, g, r.class, r.private, &r.attrs))
                    .unwrap_or_default();
                if let Some(old) = stored_mac(tx, &r.uid)? {
                    toggle(&mut d, &old);
                }
                toggle(&mut d, &tag);
                stmt.execute(params![
                    &r.uid[..],
                    g as i64,
                    r.class as i64,
                    r.private,
                    r.label,
                    r.id,
                    r.attrs,
                    &tag[..]
                ])?;
                tags.push((r.uid, tag));
            }
            set_meta_blob(tx, "objects_digest", &d)?;
            Ok((Written::At(g), tags))
        })?;
        for (uid, tag) in tags {
            self.known.learn(uid, &tag);
            self.known.damaged.remove(&uid);
        }
        Ok(written)
    }

    fn public_seal_key(&self) -> Option<Arc<TokenKey>> {
        self.integrity.as_ref().map(Integrity::public_seal_key)
    }

    fn damage(&self) -> Option<String> {
        match (self.known.damaged.len(), self.known.digest_off) {
            (0, false) => None,
            (0, true) => Some(format!(
                "token {}: objects were deleted or added outside the module",
                self.serial
            )),
            (n, _) => Some(format!(
                "token {}: {n} object record(s) failed authentication",
                self.serial
            )),
        }
    }

    fn reserve_iv_counter(&mut self, key: &[u8], count: u64) -> Result<u64> {
        let serial = self.serial.clone();
        self.write(|tx, known| {
            // The keys of the metadata as it is now (another process may
            // have re-initialised the token since this one looked).
            let meta = read_meta(tx)?;
            let secret = meta.integrity.as_deref().ok_or(err(CKR_DEVICE_ERROR))?;
            let fresh;
            let keys = match known {
                Some(k) if k.is_of(secret) => k,
                _ => {
                    fresh = Integrity::from_hex(secret)?;
                    &fresh
                }
            };
            super::iv_counters::reserve(tx, keys, &serial, key, count)
        })
    }

    fn delete(&mut self, uid: &Uid) -> Result<Option<u64>> {
        debug_assert_eq!(uid.len(), UID_LEN);
        let done = self.write(|tx, _| {
            let Some(old) = stored_mac(tx, uid)? else {
                return Ok(None);
            };
            tx.execute("DELETE FROM objects WHERE uid = ?1", params![&uid[..]])?;
            let mut d = digest(tx)?;
            toggle(&mut d, &old);
            set_meta_blob(tx, "objects_digest", &d)?;
            let g = bump_generation(tx)?;
            tx.execute(
                "INSERT INTO tombstones(uid, generation) VALUES(?1, ?2)
                 ON CONFLICT(uid) DO UPDATE SET generation = excluded.generation",
                params![&uid[..], g as i64],
            )?;
            Ok(Some((g, purge_tombstones(tx, g)?)))
        })?;
        let Some((g, purged)) = done else {
            return Ok(None);
        };
        self.known.forget(uid);
        self.forget_deleted(purged);
        Ok(Some(g))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Metadata of a test token (with an integrity secret).
    pub(crate) fn meta(serial: &str) -> TokenMeta {
        TokenMeta {
            label: "t".into(),
            serial: serial.into(),
            epoch: "e1".into(),
            so_pin: None,
            user_pin: None,
            so_failures: 0,
            user_failures: 0,
            integrity: Some("5a".repeat(32)),
        }
    }

    /// A test record.
    pub(crate) fn rec(uid: u8) -> ObjectRecord {
        ObjectRecord {
            uid: [uid; UID_LEN],
            generation: 0,
            class: 3,
            private: true,
            label: b"l".to_vec(),
            id: vec![uid],
            attrs: vec![1, 2, 3],
        }
    }

    #[test]
    fn a_file_that_is_not_a_database_is_not_recognized() {
        let dir = tempfile::tempdir().unwrap();
        // Larger than a SQLite header, so SQLite reads it and refuses it.
        std::fs::write(token_path(dir.path(), "junk"), vec![0x5a_u8; 4096]).unwrap();
        let e = SqliteStore::open(dir.path(), "junk", Durability::Normal)
            .err()
            .expect("garbage is refused");
        assert_eq!(e.rv(), CKR_TOKEN_NOT_RECOGNIZED);
    }

    #[test]
    fn second_connection_sees_changes() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = SqliteStore::create(dir.path(), &meta("abc"), Durability::Normal).unwrap();
        let mut b = SqliteStore::open(dir.path(), "abc", Durability::Full).unwrap();
        assert!(
            b.changes_since("e1", 0).unwrap().is_none(),
            "nothing written yet"
        );
        let Written::At(g) = a.put(&[&rec(1), &rec(2)], &[]).unwrap() else {
            panic!("unconditional put")
        };
        let c = b.changes_since("e1", 0).unwrap().expect("b sees a's write");
        assert_eq!(c.generation, g);
        assert_eq!(c.upserts.len(), 2);
        assert!(!c.reset);
        a.delete(&[1; UID_LEN]).unwrap().expect("existed");
        assert_eq!(a.delete(&[1; UID_LEN]).unwrap(), None, "already gone");
        let c = b.changes_since("e1", g).unwrap().unwrap();
        assert_eq!(c.deletes, vec![[1; UID_LEN]]);
        assert!(c.upserts.is_empty());
        let mut m = meta("abc");
        m.epoch = "e2".into();
        a.reinitialize(&m).unwrap();
        let c = b.changes_since("e1", c.generation).unwrap().unwrap();
        assert!(c.reset);
        assert!(c.upserts.is_empty());
        assert_eq!(list_serials(dir.path()), vec!["abc".to_string()]);
    }

    #[test]
    fn conditional_writes_refuse_stale_and_destroyed_objects() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = SqliteStore::create(dir.path(), &meta("cw"), Durability::Normal).unwrap();
        let mut b = SqliteStore::open(dir.path(), "cw", Durability::Normal).unwrap();
        let Written::At(g1) = a.put(&[&rec(1)], &[]).unwrap() else {
            panic!()
        };
        // B read generation g1; A writes again; B's write is stale.
        let Written::At(g2) = a.put(&[&rec(1)], &[([1; UID_LEN], g1)]).unwrap() else {
            panic!()
        };
        assert!(g2 > g1);
        let mut changed = rec(1);
        changed.id = b"from b".to_vec();
        assert_eq!(
            b.put(&[&changed], &[([1; UID_LEN], g1)]).unwrap(),
            Written::Stale
        );
        // A destroys it; B's write through its old view must not bring it back.
        a.delete(&[1; UID_LEN]).unwrap().unwrap();
        assert_eq!(
            b.put(&[&changed], &[([1; UID_LEN], g2)]).unwrap(),
            Written::Gone
        );
        let all = b.changes_since("e1", u64::MAX).unwrap().unwrap();
        assert!(all.upserts.is_empty(), "nothing was written");
    }

    #[test]
    fn tombstones_are_purged_and_late_readers_reload_everything() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = SqliteStore::create(dir.path(), &meta("tp"), Durability::Normal).unwrap();
        let mut b = SqliteStore::open(dir.path(), "tp", Durability::Normal).unwrap();
        a.put(&[&rec(1)], &[]).unwrap();
        let early = b.changes_since("e1", u64::MAX).unwrap().unwrap().generation;
        for i in 0..TOMBSTONE_GENERATIONS + 2 * PURGE_EVERY {
            let mut r = rec(2);
            r.uid[..8].copy_from_slice(&i.to_le_bytes());
            a.put(&[&r], &[]).unwrap();
            a.delete(&r.uid).unwrap().unwrap();
        }
        let tombstones = a
            .conn
            .query_row("SELECT COUNT(*) FROM tombstones", [], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap() as u64;
        assert!(
            tombstones <= TOMBSTONE_GENERATIONS / 2 + PURGE_EVERY,
            "{tombstones} tombstones kept"
        );
        // B last looked before the floor: it gets the whole (one-object) list.
        let c = b.changes_since("e1", early).unwrap().unwrap();
        assert!(c.full && !c.reset);
        assert_eq!(c.upserts.len(), 1);
        assert_eq!(c.upserts[0].uid, [1; UID_LEN]);
        // A recent reader still gets deletions one by one.
        let g = c.generation;
        a.put(&[&rec(3)], &[]).unwrap();
        a.delete(&[3; UID_LEN]).unwrap().unwrap();
        let c = b.changes_since("e1", g).unwrap().unwrap();
        assert!(!c.full);
        assert_eq!(c.deletes, vec![[3; UID_LEN]]);
    }

    #[test]
    fn files_deleted_under_an_open_store_are_detected() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = SqliteStore::create(dir.path(), &meta("fd"), Durability::Normal).unwrap();
        a.put(&[&rec(1)], &[]).unwrap();
        for side in ["-shm", "-wal"] {
            std::fs::remove_file(dir.path().join(format!("fd.sqlite{side}"))).unwrap();
        }
        let e = a.put(&[&rec(2)], &[]).unwrap_err();
        assert_eq!(e.rv(), CKR_DEVICE_ERROR);
        // Reopened on the files as they are: writes work again and the
        // next look lists every object.
        a.put(&[&rec(3)], &[]).unwrap();
        let c = a.changes_since("e1", 5).unwrap().unwrap();
        assert!(c.full);
    }

    /// The POSIX (fcntl) locks this process holds on `path`, from
    /// `/proc/locks` (Linux).
    fn posix_locks_held(path: &Path) -> usize {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).unwrap();
        // /proc/locks names a file "MAJOR:MINOR:INODE" (hex device numbers).
        let file = format!(
            "{:02x}:{:02x}:{}",
            libc::major(m.dev()),
            libc::minor(m.dev()),
            m.ino()
        );
        let pid = std::process::id().to_string();
        std::fs::read_to_string("/proc/locks")
            .unwrap()
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|f| f.len() > 5 && f[1] == "POSIX" && f[4] == pid && f[5] == file)
            .count()
    }

    #[test]
    fn a_new_store_keeps_its_shared_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = token_path(dir.path(), "lk");
        let mut s = SqliteStore::create(dir.path(), &meta("lk"), Durability::Normal).unwrap();
        // SQLite's shared lock on the database, the one that tells another
        // connection closing that it is not the last (and must not delete
        // the -wal and -shm files).
        // (At least one: SQLite may hold a few byte ranges at a time.)
        assert!(
            posix_locks_held(&path) >= 1,
            "the new store's lock was dropped"
        );
        s.put(&[&rec(1)], &[]).unwrap();
        assert!(posix_locks_held(&path) >= 1);
        let opened = SqliteStore::open(dir.path(), "lk", Durability::Normal).unwrap();
        drop(s);
        assert!(posix_locks_held(&path) >= 1, "the second connection's");
        drop(opened);
        assert_eq!(posix_locks_held(&path), 0);
    }

    #[test]
    fn a_scan_never_opens_a_file_this_process_is_building() {
        let dir = tempfile::tempdir().unwrap();
        let building = building_path(dir.path(), "bh");
        let _here = BuildingHere::enter("bh");
        std::fs::write(&building, b"being built").unwrap();
        list_serials(dir.path());
        assert!(building.exists(), "removed while this process builds it");
        drop(_here);
        list_serials(dir.path());
        assert!(!building.exists(), "a leftover once nobody builds it");
    }

    /// A raw connection to the token file, as someone editing it would use.
    fn raw(dir: &Path, serial: &str) -> Connection {
        Connection::open(token_path(dir, serial)).unwrap()
    }

    #[test]
    fn edited_and_missing_records_are_refused_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = SqliteStore::create(dir.path(), &meta("ed"), Durability::Normal).unwrap();
        a.put(&[&rec(1), &rec(2), &rec(3)], &[]).unwrap();
        assert_eq!(a.damage(), None);
        // One flipped bit in record 2.
        raw(dir.path(), "ed")
            .execute(
                "UPDATE objects SET attrs = x'010203ff' WHERE uid = ?1",
                params![&[2u8; UID_LEN][..]],
            )
            .unwrap();
        let mut b = SqliteStore::open(dir.path(), "ed", Durability::Normal).unwrap();
        let c = b.changes_since("e1", u64::MAX).unwrap().unwrap();
        let mut served: Vec<u8> = c.upserts.iter().map(|r| r.uid[0]).collect();
        served.sort();
        assert_eq!(served, vec![1, 3], "the edited record is not served");
        assert_eq!(c.damaged, vec![[2; UID_LEN]]);
        assert!(b.damage().unwrap().contains("1 object record(s)"));
        // A record removed behind the module's back.
        raw(dir.path(), "ed")
            .execute(
                "DELETE FROM objects WHERE uid = ?1",
                params![&[3u8; UID_LEN][..]],
            )
            .unwrap();
        raw(dir.path(), "ed")
            .execute(
                "DELETE FROM objects WHERE uid = ?1",
                params![&[2u8; UID_LEN][..]],
            )
            .unwrap();
        let mut c2 = SqliteStore::open(dir.path(), "ed", Durability::Normal).unwrap();
        let c = c2.changes_since("e1", u64::MAX).unwrap().unwrap();
        assert_eq!(c.upserts.len(), 1);
        assert!(c2.damage().unwrap().contains("deleted or added"));
        // The module's own writes keep the digest right.
        let mut d = SqliteStore::create(dir.path(), &meta("ok"), Durability::Normal).unwrap();
        d.put(&[&rec(1), &rec(2)], &[]).unwrap();
        d.put(&[&rec(2)], &[]).unwrap();
        d.delete(&[1; UID_LEN]).unwrap();
        let mut e = SqliteStore::open(dir.path(), "ok", Durability::Normal).unwrap();
        e.changes_since("e1", u64::MAX).unwrap();
        assert_eq!(e.damage(), None);
    }

    #[test]
    fn edited_metadata_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        SqliteStore::create(dir.path(), &meta("md"), Durability::Normal).unwrap();
        let conn = raw(dir.path(), "md");
        let json: Vec<u8> = conn
            .query_row("SELECT value FROM meta WHERE name = 'token'", [], |r| {
                r.get(0)
            })
            .unwrap();
        let edited = String::from_utf8(json)
            .unwrap()
            .replace("\"user_failures\":0", "\"user_failures\":1");
        conn.execute(
            "UPDATE meta SET value = ?1 WHERE name = 'token'",
            params![edited.as_bytes()],
        )
        .unwrap();
        let e = SqliteStore::open(dir.path(), "md", Durability::Normal)
            .err()
            .expect("refused");
        assert_eq!(e.rv(), CKR_DEVICE_ERROR);
    }

    #[test]
    fn schema_1_files_are_upgraded_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let mut old = meta("v1");
        old.integrity = None;
        {
            let conn = Connection::open(token_path(dir.path(), "v1")).unwrap();
            conn.execute_batch(&SCHEMA.replace(",\n    mac BLOB NOT NULL DEFAULT x''", ""))
                .unwrap();
            conn.execute("INSERT INTO meta(name, value) VALUES('schema', 1)", [])
                .unwrap();
            write_meta(&conn, &old).unwrap();
            conn.execute(
                "INSERT INTO objects(uid, generation, class, private, label, ckid, attrs)
                 VALUES(?1, 1, 3, 1, x'', x'', x'0102')",
                params![&[7u8; UID_LEN][..]],
            )
            .unwrap();
        }
        let mut s = SqliteStore::open(dir.path(), "v1", Durability::Normal).unwrap();
        assert!(s.meta().unwrap().integrity.is_some(), "a secret was made");
        let c = s.changes_since("e1", u64::MAX).unwrap().unwrap();
        assert_eq!(c.upserts.len(), 1);
        assert_eq!(s.damage(), None);
        assert_eq!(
            meta_number(&s.conn, "schema").unwrap(),
            SCHEMA_VERSION as u64
        );
    }

    #[test]
    fn meta_updates_are_read_modify_write() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = SqliteStore::create(dir.path(), &meta("s1"), Durability::Normal).unwrap();
        let mut b = SqliteStore::open(dir.path(), "s1", Durability::Normal).unwrap();
        a.update_meta(&mut |m| {
            m.user_failures += 1;
            Ok(())
        })
        .unwrap();
        let m = b
            .update_meta(&mut |m| {
                m.user_failures += 1;
                Ok(())
            })
            .unwrap();
        assert_eq!(m.user_failures, 2);
    }

    #[test]
    fn foreign_files_are_not_tokens() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("junk.sqlite"), b"not a database").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        assert!(discover(dir.path(), Durability::Normal).unwrap().is_empty());
    }
}
