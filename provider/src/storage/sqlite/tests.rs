//! Unit tests of the SQLite store, and the fixtures other storage tests
//! use (`meta`, `rec`).

use super::files::*;
use super::schema::*;
use super::store::*;
use crate::config::Durability;
use crate::storage::store::*;
use cryptoki_sys::*;
use rusqlite::{Connection, params};
use std::path::Path;

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
    assert_eq!(e.rv(), CKR_TOKEN_NOT_RECOGNIZED);
    // Damage, not a passing failure: the module lists the file as damaged.
    match open_found(dir.path(), "md", Durability::Normal) {
        Ok(Found::Damaged(d)) => assert!(d.reason.contains("authentication"), "{}", d.reason),
        _ => panic!("not reported as damaged"),
    }
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
    // Named as a token but no database: listed as a damaged token, never
    // opened; other names are not looked at.
    let found = discover(dir.path(), Durability::Normal).unwrap();
    assert_eq!(found.len(), 1);
    match &found[0] {
        Found::Damaged(d) => {
            assert_eq!(d.serial, "junk");
            assert_eq!(d.reason, "not a SQLite database");
        }
        Found::Token(_) => panic!("served"),
    }
}

/// Damages an index of token `serial`'s file outside SQLite (the way a
/// flipped bit on disk would): the `objects_label` index loses its
/// entries while the table keeps its rows. Returns the file's path.
pub(crate) fn damage_label_index(dir: &Path, serial: &str) -> std::path::PathBuf {
    let path = token_path(dir, serial);
    {
        let conn = raw(dir, serial);
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
    }
    let conn = raw(dir, serial);
    let root: i64 = conn
        .query_row(
            "SELECT rootpage FROM sqlite_schema WHERE name = 'objects_label'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let page: i64 = conn
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .unwrap();
    drop(conn);
    // An empty leaf page in place of the index's root: the table's rows
    // are all missing from the index.
    let mut bytes = std::fs::read(&path).unwrap();
    let at = ((root - 1) * page) as usize;
    bytes[at] = 0x0a; // leaf index b-tree page
    bytes[at + 1..at + 8].fill(0); // no free block, no cells
    bytes[at + 5] = (page >> 8) as u8; // cell content area at the page's end
    bytes[at + 6] = page as u8;
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn damage_outside_the_records_makes_the_store_read_only_until_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = SqliteStore::create(dir.path(), &meta("ix"), Durability::Normal).unwrap();
    a.put(&[&rec(1), &rec(2)], &[]).unwrap();
    drop(a);
    damage_label_index(dir.path(), "ix");
    let complaints = super::damage::integrity_complaints(&raw(dir.path(), "ix"));
    assert!(!complaints.is_empty(), "the damage is SQLite's to see");
    // The records authenticate: the token opens, every record is served.
    let mut b = SqliteStore::open(dir.path(), "ix", Durability::Normal).unwrap();
    assert!(b.writable(), "nothing is known before the first read");
    let c = b.changes_since("", u64::MAX).unwrap().unwrap();
    assert_eq!(c.upserts.len(), 2);
    assert_eq!(b.damage(), None, "the records are whole");
    assert!(b.file_damage().unwrap().contains("integrity check"));
    assert!(!b.writable());
    assert_eq!(
        b.put(&[&rec(3)], &[]).err().map(|e| e.rv()),
        Some(CKR_TOKEN_WRITE_PROTECTED)
    );
    // Rebuilt by another connection (what `repair` does): writes are back
    // at the next look.
    raw(dir.path(), "ix").execute_batch("REINDEX").unwrap();
    b.changes_since("e1", c.generation).unwrap();
    assert_eq!(b.file_damage(), None);
    assert!(b.writable());
    b.put(&[&rec(3)], &[]).unwrap();
}

/// Metadata read while another connection rewrites it (a login writing its
/// failure counter, in another process) is never a torn pair of row and MAC:
/// the reader got `CKR_DEVICE_ERROR` ("metadata failed authentication") when
/// a commit fell between its two statements.
#[test]
fn metadata_read_beside_a_writer_is_never_a_false_tamper_alarm() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = SqliteStore::create(dir.path(), &meta("torn"), Durability::Normal).unwrap();
    let mut r = SqliteStore::open(dir.path(), "torn", Durability::Normal).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                w.update_meta(&mut |m| {
                    m.user_failures = (m.user_failures + 1) % 7;
                    Ok(())
                })
                .unwrap();
                n += 1;
            }
            n
        })
    };
    let mut failed = 0;
    for _ in 0..30_000 {
        if r.meta().is_err() {
            failed += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let writes = writer.join().unwrap();
    assert!(writes > 0);
    assert_eq!(
        failed, 0,
        "{failed} of 30000 reads failed beside {writes} writes"
    );
}

/// After another connection re-initialised the token, this one writes
/// nothing of the old token into the new one — metadata, objects,
/// deletions — until its user accepts the new epoch; then its writes land
/// and authenticate for the other connection.
#[test]
fn a_connection_of_the_old_token_writes_nothing_into_the_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = SqliteStore::create(dir.path(), &meta("epo"), Durability::Normal).unwrap();
    let mut b = SqliteStore::open(dir.path(), "epo", Durability::Normal).unwrap();
    assert!(matches!(a.put(&[&rec(1)], &[]).unwrap(), Written::At(_)));
    let mut m = meta("epo");
    m.epoch = "e2".into();
    m.integrity = Some("6b".repeat(32));
    m.user_failures = 2;
    b.reinitialize(&m).unwrap();
    assert!(matches!(b.put(&[&rec(2)], &[]).unwrap(), Written::At(_)));
    let refused = |r: crate::error::Result<()>| assert_eq!(r.unwrap_err().rv(), CKR_DEVICE_REMOVED);
    refused(
        a.update_meta(&mut |m| {
            m.user_failures = 0;
            Ok(())
        })
        .map(|_| ()),
    );
    refused(a.put(&[&rec(3)], &[]).map(|_| ()));
    refused(a.delete(&[2; UID_LEN]).map(|_| ()));
    // Nothing of it reached the file.
    assert_eq!(b.meta().unwrap().user_failures, 2);
    let c = b.changes_since("e2", u64::MAX).unwrap().unwrap();
    let uids: Vec<Uid> = c.upserts.iter().map(|r| r.uid).collect();
    assert_eq!(uids, vec![[2; UID_LEN]]);
    // Accepted (its user dropped the old token's state): writes land.
    let c = a.changes_since("e1", 0).unwrap().unwrap();
    assert!(c.reset);
    a.accept_epoch("e2");
    assert!(matches!(a.put(&[&rec(4)], &[]).unwrap(), Written::At(_)));
    let c = b.changes_since("e2", u64::MAX).unwrap().unwrap();
    assert!(c.damaged.is_empty(), "{:?}", c.damaged);
    assert_eq!(c.upserts.len(), 2);
}

/// A destruction while another connection holds an older snapshot neither
/// waits for it nor fails; the log, where the destroyed record's older
/// pages stay while that snapshot needs them, is truncated by the first
/// write after the reader ends (not only by the next destruction).
#[test]
fn a_held_reader_delays_the_log_wipe_to_the_next_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::create(dir.path(), &meta("held"), Durability::Normal).unwrap();
    store.put(&[&rec(1), &rec(2)], &[]).unwrap();
    let wal = format!("{}-wal", token_path(dir.path(), "held").display());
    let reader = raw(dir.path(), "held");
    reader.execute_batch("BEGIN").unwrap();
    let _: i64 = reader
        .query_row("SELECT count(*) FROM objects", [], |r| r.get(0))
        .unwrap();
    let started = std::time::Instant::now();
    store.delete(&[1; UID_LEN]).unwrap().expect("deleted");
    assert!(
        started.elapsed() < super::connection::BUSY_TIMEOUT,
        "the deletion waited for the reader"
    );
    assert!(store.wipe_pending, "the reader's snapshot kept the log");
    assert!(std::fs::metadata(&wal).unwrap().len() > 0);
    // Still reading: writes go on, the wipe stays pending.
    store.put(&[&rec(3)], &[]).unwrap();
    assert!(store.wipe_pending);
    reader.execute_batch("COMMIT").unwrap();
    store.put(&[&rec(4)], &[]).unwrap();
    assert!(
        !store.wipe_pending,
        "the first write after the reader wiped"
    );
    assert_eq!(std::fs::metadata(&wal).unwrap().len(), 0, "log truncated");
    drop(reader);
}
