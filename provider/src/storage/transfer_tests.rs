//! Tokens moved between SQLite and PostgreSQL (the server `scripts/test`
//! starts; skipped without it unless `DALEK_PKCS11_REQUIRE_POSTGRES`).

use super::*;
use crate::config::{Config, StorageKind};
use crate::storage::maintenance::{copy_token, verify};
use crate::storage::postgres::PgStore;
use crate::storage::postgres::tests::{run_sql, settings};
use crate::storage::sqlite::SqliteStore;
use crate::storage::sqlite::tests::{meta, rec};
use crate::storage::store::TokenStore;

fn sqlite_config(dir: &Path) -> Config {
    let mut c = Config::load().unwrap();
    c.storage = StorageKind::Sqlite;
    c.token_dir = dir.to_path_buf();
    c
}

fn postgres_config(settings: PostgresSettings) -> Config {
    let mut c = Config::load().unwrap();
    c.storage = StorageKind::Postgres;
    c.postgres = settings;
    c
}

fn all_records(store: &mut dyn TokenStore) -> usize {
    store
        .changes_since("", u64::MAX)
        .unwrap()
        .unwrap()
        .upserts
        .len()
}

/// SQLite → PostgreSQL → SQLite keeps every record and its authentication,
/// and the GCM IV counters carry on past every value handed out before the
/// copy (a counter that started again would repeat IVs under one key).
#[test]
fn a_token_moves_both_ways_with_its_records_and_counters() {
    let (Some(pg), Some(pg2)) = (settings("transfer_a"), settings("transfer_b")) else {
        return;
    };
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (lite, lite2) = (sqlite_config(a.path()), sqlite_config(b.path()));
    let (pgc, pgc2) = (postgres_config(pg.clone()), postgres_config(pg2.clone()));
    let key = [9u8; 32];
    {
        let mut s = SqliteStore::create(a.path(), &meta("mv1"), lite.durability).unwrap();
        s.put(&[&rec(1), &rec(2)], &[]).unwrap();
        assert_eq!(s.reserve_iv_counter(&key, 10).unwrap(), 0);
    }
    let r = copy_token(&lite, "mv1", &pgc, false).unwrap();
    assert!(r.ok() && r.records == 2, "{r:?}");
    {
        let mut p = PgStore::open(&pg, "mv1").unwrap();
        assert_eq!(all_records(&mut p), 2);
        assert_eq!(p.reserve_iv_counter(&key, 5).unwrap(), 10);
        p.put(&[&rec(3)], &[]).unwrap();
    }
    assert!(copy_token(&lite, "mv1", &pgc, false).is_err(), "exists");
    let r = copy_token(&pgc, "mv1", &lite2, false).unwrap();
    assert!(r.ok() && r.records == 3, "{r:?}");
    let mut back = SqliteStore::open(b.path(), "mv1", lite2.durability).unwrap();
    assert_eq!(all_records(&mut back), 3);
    assert_eq!(back.reserve_iv_counter(&key, 1).unwrap(), 15);
    drop(back);
    assert!(copy_token(&pgc, "mv1", &lite2, false).is_err(), "exists");
    assert!(
        copy_token(&pgc, "mv1", &lite2, true).unwrap().ok(),
        "replaced"
    );

    // A backup of the PostgreSQL token is a SQLite token file; restored
    // into another database it is the same token.
    let out = a.path().join("backup.sqlite");
    crate::storage::maintenance::backup(&pgc, "mv1", &out, &mut |_, _| ()).unwrap();
    assert!(
        crate::storage::maintenance::backup(&pgc, "mv1", &out, &mut |_, _| ()).is_err(),
        "no overwrite"
    );
    let (serial, r) = crate::storage::maintenance::restore(&pgc2, &out, false).unwrap();
    assert_eq!(serial, "mv1");
    assert!(r.ok() && r.records == 3, "{r:?}");
    let mut restored = PgStore::open(&pg2, "mv1").unwrap();
    assert_eq!(all_records(&mut restored), 3);
    assert_eq!(restored.reserve_iv_counter(&key, 1).unwrap(), 15);
    assert!(crate::storage::maintenance::restore(&pgc2, &out, false).is_err());
    assert!(crate::storage::maintenance::restore(&pgc2, &out, true).is_ok());
}

/// An edited row is reported by `verify` and never copied.
#[test]
fn an_edited_postgres_row_is_reported_and_not_copied() {
    let Some(pg) = settings("transfer_edit") else {
        return;
    };
    let pgc = postgres_config(pg.clone());
    let dir = tempfile::tempdir().unwrap();
    let lite = sqlite_config(dir.path());
    let mut p = PgStore::create(&pg, &meta("ed2")).unwrap();
    p.put(&[&rec(1), &rec(2)], &[]).unwrap();
    assert!(verify(&pgc, "ed2").unwrap().ok());
    run_sql(
        &pg,
        "UPDATE dalek_objects SET attrs = '\\x000000' \
         WHERE uid = '\\x01010101010101010101010101010101'",
    );
    let r = verify(&pgc, "ed2").unwrap();
    assert_eq!((r.records, r.unauthentic), (2, 1), "{r:?}");
    assert!(!r.ok());
    assert!(copy_token(&pgc, "ed2", &lite, false).is_err());
    assert!(!crate::storage::sqlite::token_path(dir.path(), "ed2").exists());
}
