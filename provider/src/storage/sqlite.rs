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

use super::{Changes, Expect, ObjectRecord, TokenMeta, TokenStore, UID_LEN, Uid, Written};
use crate::config::Durability;
use crate::error::{Result, err};
use cryptoki_sys::{CKR_DEVICE_ERROR, CKR_TOKEN_NOT_RECOGNIZED};
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
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
const SCHEMA_VERSION: i64 = 1;
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
    attrs BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS objects_generation ON objects(generation);
CREATE INDEX IF NOT EXISTS objects_label ON objects(label);
CREATE INDEX IF NOT EXISTS objects_ckid ON objects(ckid);
CREATE INDEX IF NOT EXISTS objects_class ON objects(class);
CREATE TABLE IF NOT EXISTS tombstones (uid BLOB PRIMARY KEY, generation INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS tombstones_generation ON tombstones(generation);
";

/// A token database.
pub struct SqliteStore {
    conn: Connection,
    data_version: i64,
    serial: String,
}

fn token_path(dir: &Path, serial: &str) -> PathBuf {
    dir.join(format!("{serial}{SUFFIX}"))
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

fn is_serial(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric())
}

fn building_path(dir: &Path, serial: &str) -> PathBuf {
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

/// Removes the files of an abandoned token creation, unless a process is
/// still building it (it holds the lock on the main file).
fn remove_leftover(dir: &Path, serial: &str) {
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
    Ok(conn)
}

fn read_meta(conn: &Connection) -> Result<TokenMeta> {
    let json: Vec<u8> = conn
        .query_row("SELECT value FROM meta WHERE name = 'token'", [], |r| {
            r.get(0)
        })
        .optional()?
        .ok_or(err(CKR_TOKEN_NOT_RECOGNIZED))?;
    serde_json::from_slice(&json).map_err(|_| err(CKR_TOKEN_NOT_RECOGNIZED))
}

fn write_meta(conn: &Connection, meta: &TokenMeta) -> Result<()> {
    let json = serde_json::to_vec(meta).map_err(|_| err(CKR_DEVICE_ERROR))?;
    conn.execute(
        "INSERT INTO meta(name, value) VALUES('token', ?1)
         ON CONFLICT(name) DO UPDATE SET value = excluded.value",
        params![json],
    )?;
    Ok(())
}

fn generation(conn: &Connection) -> Result<u64> {
    let g: Option<i64> = conn
        .query_row(
            "SELECT value FROM meta WHERE name = 'generation'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    Ok(g.unwrap_or(0) as u64)
}

fn bump_generation(conn: &Connection) -> Result<u64> {
    let g = generation(conn)? + 1;
    conn.execute(
        "INSERT INTO meta(name, value) VALUES('generation', ?1)
         ON CONFLICT(name) DO UPDATE SET value = excluded.value",
        params![g as i64],
    )?;
    Ok(g)
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

impl SqliteStore {
    /// Opens the existing token `serial` in `dir`.
    pub fn open(dir: &Path, serial: &str, durability: Durability) -> Result<SqliteStore> {
        let conn = connect(&token_path(dir, serial), false, durability)?;
        let version: Option<i64> = conn
            .query_row("SELECT value FROM meta WHERE name = 'schema'", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|_| err(CKR_TOKEN_NOT_RECOGNIZED))?;
        if version != Some(SCHEMA_VERSION) {
            return Err(err(CKR_TOKEN_NOT_RECOGNIZED));
        }
        let inner = read_meta(&conn)?.serial;
        if inner != serial {
            crate::log::error(format_args!(
                "skipping {}: it holds token {inner}, not {serial} (a copied file?)",
                token_path(dir, serial).display()
            ));
            return Err(err(CKR_TOKEN_NOT_RECOGNIZED));
        }
        warn_if_shared(&token_path(dir, serial), "token file");
        let mut store = SqliteStore {
            conn,
            data_version: -1,
            serial: serial.to_string(),
        };
        store.data_version = store.current_data_version()?;
        Ok(store)
    }

    /// Creates a token file for `meta.serial` in `dir` (created if missing).
    pub fn create(dir: &Path, meta: &TokenMeta, durability: Durability) -> Result<SqliteStore> {
        ensure_dir(dir)?;
        let tmp = building_path(dir, &meta.serial);
        let _building = claim_new_file(&tmp)?;
        {
            // Not `create`: the file exists (claimed above) and must not be
            // silently re-made with the umask's mode.
            let mut conn = connect(&tmp, false, Durability::Full)?;
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
        Self::open(dir, &meta.serial, durability)
    }

    fn current_data_version(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))?)
    }

    fn write<T>(
        &mut self,
        body: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T>,
    ) -> Result<T> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = body(&tx)?;
        tx.commit()?;
        Ok(out)
    }
}

impl TokenStore for SqliteStore {
    fn serial(&self) -> String {
        self.serial.clone()
    }

    fn meta(&mut self) -> Result<TokenMeta> {
        read_meta(&self.conn)
    }

    fn update_meta(
        &mut self,
        change: &mut dyn FnMut(&mut TokenMeta) -> Result<()>,
    ) -> Result<TokenMeta> {
        self.write(|tx| {
            let mut m = read_meta(tx)?;
            change(&mut m)?;
            write_meta(tx, &m)?;
            Ok(m)
        })
    }

    fn reinitialize(&mut self, meta: &TokenMeta) -> Result<()> {
        self.write(|tx| {
            tx.execute("DELETE FROM objects", [])?;
            tx.execute("DELETE FROM tombstones", [])?;
            bump_generation(tx)?;
            write_meta(tx, meta)
        })
    }

    fn changes_since(&mut self, epoch: &str, since: u64) -> Result<Option<Changes>> {
        let dv = self.current_data_version()?;
        if dv == self.data_version && since != u64::MAX {
            return Ok(None);
        }
        // One read transaction, so the generation and rows agree.
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Deferred)?;
        let meta = read_meta(&tx)?;
        let current = generation(&tx)?;
        let reset = meta.epoch != epoch;
        let from = if reset { 0 } else { since };
        let mut changes = Changes {
            generation: current,
            reset,
            ..Changes::default()
        };
        if reset || current != since {
            let mut stmt = tx.prepare_cached(
                "SELECT uid, generation, class, private, attrs FROM objects WHERE generation > ?1",
            )?;
            // `label` and `ckid` are columns for queries on the file; a
            // reader rebuilds them from `attrs`, so they are not read here.
            let rows = stmt.query_map(params![from as i64], |r| {
                Ok(ObjectRecord {
                    uid: uid_from(r.get(0)?)?,
                    generation: r.get::<_, i64>(1)? as u64,
                    class: r.get::<_, i64>(2)? as u64,
                    private: r.get(3)?,
                    label: Vec::new(),
                    id: Vec::new(),
                    attrs: r.get(4)?,
                })
            })?;
            for row in rows {
                changes.upserts.push(row?);
            }
            if !reset {
                let mut stmt =
                    tx.prepare_cached("SELECT uid FROM tombstones WHERE generation > ?1")?;
                let rows = stmt.query_map(params![from as i64], |r| uid_from(r.get(0)?))?;
                for row in rows {
                    changes.deletes.push(row?);
                }
            }
        }
        drop(tx);
        self.data_version = self.current_data_version()?;
        Ok(Some(changes))
    }

    fn put(&mut self, records: &[&ObjectRecord], expect: &[Expect]) -> Result<Written> {
        self.write(|tx| {
            for (uid, generation) in expect {
                let stored: Option<i64> = tx
                    .prepare_cached("SELECT generation FROM objects WHERE uid = ?1")?
                    .query_row(params![&uid[..]], |r| r.get(0))
                    .optional()?;
                match stored {
                    None => return Ok(Written::Gone),
                    Some(g) if g as u64 != *generation => return Ok(Written::Stale),
                    Some(_) => {}
                }
            }
            let g = bump_generation(tx)?;
            let mut stmt = tx.prepare_cached(
                "INSERT INTO objects(uid, generation, class, private, label, ckid, attrs)
                 VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT(uid) DO UPDATE SET generation = excluded.generation,
                   class = excluded.class, private = excluded.private, label = excluded.label,
                   ckid = excluded.ckid, attrs = excluded.attrs",
            )?;
            for r in records {
                stmt.execute(params![
                    &r.uid[..],
                    g as i64,
                    r.class as i64,
                    r.private,
                    r.label,
                    r.id,
                    r.attrs
                ])?;
            }
            Ok(Written::At(g))
        })
    }

    fn delete(&mut self, uid: &Uid) -> Result<Option<u64>> {
        debug_assert_eq!(uid.len(), UID_LEN);
        self.write(|tx| {
            if tx.execute("DELETE FROM objects WHERE uid = ?1", params![&uid[..]])? == 0 {
                return Ok(None);
            }
            let g = bump_generation(tx)?;
            tx.execute(
                "INSERT INTO tombstones(uid, generation) VALUES(?1, ?2)
                 ON CONFLICT(uid) DO UPDATE SET generation = excluded.generation",
                params![&uid[..], g as i64],
            )?;
            Ok(Some(g))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(serial: &str) -> TokenMeta {
        TokenMeta {
            label: "t".into(),
            serial: serial.into(),
            epoch: "e1".into(),
            so_pin: None,
            user_pin: None,
            so_failures: 0,
            user_failures: 0,
        }
    }

    fn rec(uid: u8) -> ObjectRecord {
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
