//! What an operator does to a token's file that PKCS#11 has no call for:
//! check it ([`verify`]), rebuild what SQLite keeps beside the records
//! ([`repair`]), copy it while it is in use ([`backup`]) and put a copy
//! back ([`restore`]). `verify`, `backup` and `restore` serve PostgreSQL
//! tokens too (`transfer`: a backup is a SQLite file either way); `repair`
//! is SQLite's alone (PostgreSQL's indexes are the server's to rebuild).
//! The records stay sealed and authenticated as at rest throughout
//! (nothing here needs a PIN).

use std::path::{Path, PathBuf};

use cryptoki_sys::{CKR_DEVICE_ERROR, CKR_TOKEN_NOT_PRESENT, CKR_TOKEN_NOT_RECOGNIZED};
use rusqlite::{Connection, OpenFlags};

use super::sqlite::{
    OpenFailure, SqliteStore, building_path, connect_read_only, integrity_complaints, is_serial,
    read_meta, token_path,
};
use super::store::TokenStore;
use crate::config::{Config, Durability, StorageKind};
use crate::error::{Result, err};

pub use super::report::Report;
use super::transfer;

fn sqlite_dir(config: &Config) -> Result<&Path> {
    match config.storage {
        StorageKind::Sqlite => Ok(&config.token_dir),
        // `repair` of a PostgreSQL token: its indexes are the server's
        // (`REINDEX`); its records are checked by `verify` (`transfer`).
        StorageKind::Postgres | StorageKind::Memory => Err(err(CKR_TOKEN_NOT_PRESENT)),
    }
}

fn storage_error(what: impl std::fmt::Display) -> crate::error::Error {
    crate::log::error(format_args!("{what}"));
    err(CKR_DEVICE_ERROR)
}

/// Checks token `serial` of `config`: every record's authentication, the
/// record set's digest, SQLite's own integrity check, tombstones of live
/// objects, and leftover temporary files.
pub fn verify(config: &Config, serial: &str) -> Result<Report> {
    if config.storage == StorageKind::Postgres {
        return transfer::verify_postgres(&config.postgres, serial);
    }
    verify_in(sqlite_dir(config)?, serial, config.durability)
}

fn verify_in(dir: &Path, serial: &str, durability: Durability) -> Result<Report> {
    if !is_serial(serial) {
        return Err(err(CKR_TOKEN_NOT_RECOGNIZED));
    }
    let path = token_path(dir, serial);
    if !path.is_file() {
        return Err(err(CKR_TOKEN_NOT_PRESENT));
    }
    let mut report = Report {
        serial: serial.to_string(),
        ..Report::default()
    };
    let building = building_path(dir, serial);
    for side in ["", "-wal", "-shm", "-journal"] {
        let p = PathBuf::from(format!("{}{side}", building.display()));
        if p.exists() {
            report.temporary_files.push(p.display().to_string());
        }
    }
    crate::error::take_sqlite_fault();
    let conn = match connect_read_only(&path) {
        Ok(c) => c,
        Err(_) if crate::error::take_sqlite_fault() == crate::error::SqliteFault::Damage => {
            report.unopenable = Some("SQLite cannot read the file (not a database)".into());
            return Ok(report);
        }
        Err(e) => return Err(e),
    };
    report.sqlite = integrity_complaints(&conn);
    match conn.query_row(
        "SELECT COUNT(*) FROM tombstones t JOIN objects o ON o.uid = t.uid",
        [],
        |r| r.get::<_, i64>(0),
    ) {
        Ok(n) => report.orphaned_tombstones = n.max(0) as usize,
        Err(e) => report.sqlite.push(format!("tombstones unreadable: {e}")),
    }
    drop(conn);
    let mut store = match SqliteStore::open_classified(dir, serial, durability) {
        Ok(s) => s,
        Err(OpenFailure::Damaged(why)) => {
            report.unopenable = Some(why);
            return Ok(report);
        }
        Err(OpenFailure::Foreign) => {
            report.unopenable = Some("it holds another token (a copy under this name)".into());
            return Ok(report);
        }
        Err(OpenFailure::Other(e)) => return Err(e),
    };
    // An epoch that is not the token's reads every record; `u64::MAX`
    // skips the "nothing changed since this connection opened" shortcut.
    match store.changes_since("", u64::MAX) {
        Ok(Some(c)) => {
            report.records = c.upserts.len() + c.damaged.len();
            report.unauthentic = c.damaged.len();
        }
        Ok(None) => {}
        Err(e) if e.rv() == CKR_DEVICE_ERROR => {
            report.damage = Some("the records cannot be read (see the log)".into());
            return Ok(report);
        }
        Err(e) => return Err(e),
    }
    report.damage = store.damage();
    Ok(report)
}

/// What [`repair`] did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Repair {
    /// The check before.
    pub before: Report,
    /// The check after the rebuild (`None`: nothing was changed).
    pub after: Option<Report>,
    /// Why nothing could be rebuilt, when that is so.
    pub refused: Option<String>,
}

/// Rebuilds what SQLite keeps beside the records of token `serial`, from
/// the records themselves, when every record authenticates and the set of
/// records matches its digest: every index (`REINDEX`), and tombstones of
/// objects that still exist are dropped; one write transaction, so other
/// processes keep using the token (theirs wait for it as for any write),
/// and those that found the file damaged take writes back at their next
/// look. Records that fail authentication, or a file that cannot be opened
/// as its token, cannot be rebuilt from themselves: refused (restore a
/// backup). Checks again afterwards.
pub fn repair(config: &Config, serial: &str) -> Result<Repair> {
    let dir = sqlite_dir(config)?;
    let before = verify_in(dir, serial, config.durability)?;
    let refuse = |why: String| Repair {
        before: before.clone(),
        after: None,
        refused: Some(why),
    };
    if let Some(why) = &before.unopenable {
        return Ok(refuse(format!(
            "the file cannot be opened as its token ({why}): restore a backup"
        )));
    }
    if before.unauthentic > 0 || before.damage.is_some() {
        return Ok(refuse(
            "records fail authentication or are missing: they cannot be rebuilt from \
             themselves; restore a backup"
                .into(),
        ));
    }
    if before.sqlite.is_empty() && before.orphaned_tombstones == 0 {
        return Ok(Repair {
            before,
            after: None,
            refused: None,
        });
    }
    let path = token_path(dir, serial);
    let mut conn =
        super::sqlite::connect_raw(&path, false, config.durability).map_err(storage_error)?;
    let rebuilt = (|| -> rusqlite::Result<()> {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        tx.execute_batch(
            "REINDEX;
             DELETE FROM tombstones WHERE uid IN (SELECT uid FROM objects);",
        )?;
        tx.commit()?;
        // The rebuilt pages into the file itself, and the old ones out of
        // the log.
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(())
    })();
    drop(conn);
    if let Err(e) = rebuilt {
        return Ok(refuse(format!(
            "SQLite could not rebuild the file ({e}): restore a backup"
        )));
    }
    let after = verify_in(dir, serial, config.durability)?;
    Ok(Repair {
        before,
        after: Some(after),
        refused: None,
    })
}

/// Copies token `serial` of `config` to `out` with SQLite's online backup:
/// a consistent copy while other processes keep using the token (a write
/// during the copy restarts it). `progress` gets (pages copied, pages in
/// all) after every step. The copy holds the records as at rest: sealed
/// values stay sealed. `out` must not exist.
pub fn backup(
    config: &Config,
    serial: &str,
    out: &Path,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<()> {
    if config.storage == StorageKind::Postgres {
        if out.exists() {
            return Err(storage_error(format_args!(
                "{} exists: not overwritten",
                out.display()
            )));
        }
        transfer::backup_postgres(&config.postgres, serial, out)?;
        progress(1, 1);
        return Ok(());
    }
    let dir = sqlite_dir(config)?;
    if !is_serial(serial) || !token_path(dir, serial).is_file() {
        return Err(err(CKR_TOKEN_NOT_PRESENT));
    }
    if out.exists() {
        return Err(storage_error(format_args!(
            "{} exists: not overwritten",
            out.display()
        )));
    }
    let src = connect_read_only(&token_path(dir, serial))?;
    let mut dst = Connection::open_with_flags(
        out,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
    )
    .map_err(storage_error)?;
    restrict(out)?;
    {
        use rusqlite::backup::{Backup, StepResult};
        let b = Backup::new(&src, &mut dst).map_err(storage_error)?;
        loop {
            let step = b.step(64).map_err(storage_error)?;
            let p = b.progress();
            let total = p.pagecount.max(0) as u64;
            progress(total.saturating_sub(p.remaining.max(0) as u64), total);
            match step {
                StepResult::Done => break,
                StepResult::More => {}
                _ => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
    }
    // A standalone file: no log beside it.
    dst.pragma_update(None, "journal_mode", "DELETE")
        .map_err(storage_error)?;
    drop(dst);
    Ok(())
}

/// The file holds only its owner's data (0600), as token files do.
fn restrict(p: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600)).map_err(storage_error)
}

/// The serial number of the token a backup file holds.
pub fn backup_serial(file: &Path) -> Result<String> {
    let conn = connect_read_only(file).map_err(|_| err(CKR_TOKEN_NOT_RECOGNIZED))?;
    Ok(read_meta(&conn)
        .map_err(|_| err(CKR_TOKEN_NOT_RECOGNIZED))?
        .serial)
}

/// Puts the backup `file` back as its token in `config`'s directory: checked
/// first ([`verify`] of a copy; a damaged backup is refused with its
/// report), then moved into place under a temporary name and renamed, so a
/// crash leaves either no token or the whole one. An existing token of that
/// serial is refused unless `replace` (then it is deleted first). Returns
/// the serial and the check's report.
pub fn restore(config: &Config, file: &Path, replace: bool) -> Result<(String, Report)> {
    let postgres = config.storage == StorageKind::Postgres;
    let dir = if postgres {
        &std::env::temp_dir().join("dalek-pkcs11")
    } else {
        sqlite_dir(config)?
    };
    let serial = backup_serial(file)?;
    if !is_serial(&serial) {
        return Err(err(CKR_TOKEN_NOT_RECOGNIZED));
    }
    // Check a copy under its own name, outside the token directory.
    let scratch = tempfile_dir(dir)?;
    let staged = token_path(scratch.path(), &serial);
    std::fs::copy(file, &staged).map_err(storage_error)?;
    let report = verify_in(scratch.path(), &serial, config.durability)?;
    if !report.ok() {
        return Ok((serial, report));
    }
    if postgres {
        let written = transfer::restore_postgres(&config.postgres, &staged, replace)?;
        return Ok((serial, written));
    }
    let target = token_path(dir, &serial);
    if target.exists() {
        if !replace {
            return Err(storage_error(format_args!(
                "token {serial} exists: not replaced"
            )));
        }
        super::sqlite::delete_token(dir, &serial, config.durability)?;
    }
    std::fs::create_dir_all(dir).map_err(storage_error)?;
    let building = building_path(dir, &serial);
    std::fs::copy(&staged, &building).map_err(storage_error)?;
    restrict(&building)?;
    std::fs::File::open(&building)
        .and_then(|f| f.sync_all())
        .map_err(storage_error)?;
    std::fs::rename(&building, &target).map_err(storage_error)?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok((serial, report))
}

/// A private scratch directory beside `dir` (same file system).
fn tempfile_dir(dir: &Path) -> Result<TempDir> {
    let parent = dir.parent().unwrap_or(dir);
    for _ in 0..8 {
        let mut n = [0u8; 8];
        getrandom::fill(&mut n).map_err(storage_error)?;
        let p = parent.join(format!(
            ".dalek-pkcs11-restore-{}",
            n.iter().map(|b| format!("{b:02x}")).collect::<String>()
        ));
        match std::fs::create_dir(&p) {
            Ok(()) => {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700))
                    .map_err(storage_error)?;
                return Ok(TempDir(p));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(storage_error(e)),
        }
    }
    Err(storage_error("no scratch directory could be made"))
}

/// A directory removed with its contents on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Copies token `serial` of `from` into the store of `to` (SQLite to
/// PostgreSQL or back, or between two databases or directories), as it is
/// at one moment; a token of that serial in `to` is refused unless
/// `replace`. A source that fails its checks is refused (`verify` says
/// why). Returns the check of the copy, read back from `to`.
pub fn copy_token(from: &Config, serial: &str, to: &Config, replace: bool) -> Result<Report> {
    if !super::sqlite::is_serial(serial) {
        return Err(err(CKR_TOKEN_NOT_RECOGNIZED));
    }
    let image = match from.storage {
        StorageKind::Sqlite => {
            let path = super::sqlite::token_path(&from.token_dir, serial);
            if !path.is_file() {
                return Err(err(CKR_TOKEN_NOT_PRESENT));
            }
            super::sqlite::read_image(&super::sqlite::connect_read_only(&path)?)?
        }
        StorageKind::Postgres => super::postgres::read_image(&from.postgres, serial)?,
        StorageKind::Memory => return Err(err(CKR_TOKEN_NOT_PRESENT)),
    };
    image
        .check()
        .map_err(|why| transfer::refused(serial, &why))?;
    match to.storage {
        StorageKind::Sqlite => {
            if super::sqlite::token_path(&to.token_dir, serial).exists() {
                if !replace {
                    return Err(transfer::refused(serial, "it exists in the destination"));
                }
                super::sqlite::delete_token(&to.token_dir, serial, to.durability)?;
            }
            super::sqlite::write_token(&to.token_dir, &image)?;
        }
        StorageKind::Postgres => super::postgres::write_image(&to.postgres, &image, replace)?,
        StorageKind::Memory => return Err(err(CKR_TOKEN_NOT_PRESENT)),
    }
    verify(to, serial)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::sqlite::tests::{meta, rec};

    fn config(dir: &Path) -> Config {
        let mut c = Config::load().unwrap();
        c.token_dir = dir.to_path_buf();
        c.storage = StorageKind::Sqlite;
        c
    }

    #[test]
    fn a_backup_verifies_and_restores_into_an_empty_directory() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let (ca, cb) = (config(&a.path().join("t")), config(&b.path().join("t")));
        let mut s = SqliteStore::create(&ca.token_dir, &meta("abc1"), Durability::Normal).unwrap();
        s.put(&[&rec(1), &rec(2)], &[]).unwrap();
        let r = verify(&ca, "abc1").unwrap();
        assert!(r.ok(), "{r:?}");
        assert_eq!(r.records, 2);
        let out = a.path().join("copy.sqlite");
        let mut steps = 0;
        backup(&ca, "abc1", &out, &mut |_, _| steps += 1).unwrap();
        assert!(steps > 0);
        assert!(
            backup(&ca, "abc1", &out, &mut |_, _| ()).is_err(),
            "no overwrite"
        );
        assert_eq!(backup_serial(&out).unwrap(), "abc1");
        let (serial, report) = restore(&cb, &out, false).unwrap();
        assert_eq!(serial, "abc1");
        assert!(report.ok(), "{report:?}");
        assert_eq!(verify(&cb, "abc1").unwrap().records, 2);
        assert!(restore(&cb, &out, false).is_err(), "exists");
        assert!(restore(&cb, &out, true).is_ok(), "replaced");
    }

    #[test]
    fn an_edited_record_is_reported() {
        let a = tempfile::tempdir().unwrap();
        let c = config(a.path());
        let mut s = SqliteStore::create(&c.token_dir, &meta("ed1"), Durability::Normal).unwrap();
        s.put(&[&rec(1), &rec(2)], &[]).unwrap();
        drop(s);
        let db = Connection::open(token_path(&c.token_dir, "ed1")).unwrap();
        db.execute(
            "UPDATE objects SET attrs = zeroblob(length(attrs)) WHERE uid = ?1",
            [&[1u8; 16][..]],
        )
        .unwrap();
        drop(db);
        let r = verify(&c, "ed1").unwrap();
        assert_eq!((r.records, r.unauthentic), (2, 1), "{r:?}");
        assert!(!r.ok());
        // Nothing to rebuild an edited record from.
        let fix = repair(&c, "ed1").unwrap();
        assert!(fix.refused.unwrap().contains("restore a backup"));
        assert!(fix.after.is_none());
    }

    #[test]
    fn repair_rebuilds_a_damaged_index_from_the_records() {
        let a = tempfile::tempdir().unwrap();
        let c = config(a.path());
        let mut s = SqliteStore::create(&c.token_dir, &meta("ix1"), Durability::Normal).unwrap();
        s.put(&[&rec(1), &rec(2), &rec(3)], &[]).unwrap();
        drop(s);
        crate::storage::sqlite::tests::damage_label_index(&c.token_dir, "ix1");
        let r = verify(&c, "ix1").unwrap();
        assert!(!r.sqlite.is_empty(), "{r:?}");
        assert_eq!(
            (r.records, r.unauthentic, r.damage.as_deref()),
            (3, 0, None)
        );
        assert!(!r.ok());
        let fix = repair(&c, "ix1").unwrap();
        assert_eq!(fix.refused, None);
        let after = fix.after.expect("rebuilt");
        assert!(after.ok(), "{after:?}");
        assert_eq!(after.records, 3);
        // Nothing left to do.
        let again = repair(&c, "ix1").unwrap();
        assert!(again.before.ok() && again.after.is_none() && again.refused.is_none());
    }

    #[test]
    fn a_file_that_is_no_token_is_reported_not_an_error() {
        let a = tempfile::tempdir().unwrap();
        let c = config(a.path());
        let mut s = SqliteStore::create(&c.token_dir, &meta("md1"), Durability::Normal).unwrap();
        s.put(&[&rec(1)], &[]).unwrap();
        drop(s);
        let db = Connection::open(token_path(&c.token_dir, "md1")).unwrap();
        db.execute("UPDATE meta SET value = x'00' WHERE name = 'token_mac'", [])
            .unwrap();
        drop(db);
        let r = verify(&c, "md1").unwrap();
        assert!(r.unopenable.unwrap().contains("metadata"));
        std::fs::write(token_path(&c.token_dir, "md1"), b"garbage").unwrap();
        let r = verify(&c, "md1").unwrap();
        assert!(!r.ok(), "{r:?}");
        let fix = repair(&c, "md1").unwrap();
        assert!(fix.refused.is_some() && fix.after.is_none());
    }
}
