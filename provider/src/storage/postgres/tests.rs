//! The PostgreSQL store against a real server (the one `scripts/test`
//! starts: `DALEK_PKCS11_TEST_POSTGRES`, `PGPASSFILE`; skipped without it
//! unless `DALEK_PKCS11_REQUIRE_POSTGRES` is set). Each test keeps its
//! tokens in a schema of its own; two stores of one token are two
//! connections, as two hosts have.

use super::PgStore;
use crate::config::PostgresSettings;
use crate::storage::sqlite::tests::{meta, rec};
use crate::storage::store::{TokenMeta, TokenStore, Written};
use cryptoki_sys::*;
use std::time::Duration;

/// Settings for schema `name` (emptied), or `None` to skip.
pub(crate) fn settings(name: &str) -> Option<PostgresSettings> {
    let base = match std::env::var("DALEK_PKCS11_TEST_POSTGRES") {
        Ok(u) if !u.is_empty() => u,
        _ => {
            assert!(
                std::env::var_os("DALEK_PKCS11_REQUIRE_POSTGRES").is_none(),
                "DALEK_PKCS11_REQUIRE_POSTGRES is set, DALEK_PKCS11_TEST_POSTGRES is not"
            );
            eprintln!("SKIPPED: no PostgreSQL server (scripts/test starts one)");
            return None;
        }
    };
    let plain = PostgresSettings {
        conninfo: base.clone(),
        password_file: None,
        timeout: Duration::from_secs(10),
        max_staleness: std::time::Duration::ZERO,
    };
    let target = std::sync::Arc::new(super::target::Target::of(&plain).unwrap());
    let mut db = super::db::Db::connect(target).unwrap();
    db.batch(&format!(
        "DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"
    ))
    .unwrap();
    Some(PostgresSettings {
        conninfo: format!("{base}?options=-csearch_path%3D{name}"),
        ..plain
    })
}

fn two_stores(name: &str) -> Option<(PostgresSettings, PgStore, PgStore)> {
    let s = settings(name)?;
    let a = PgStore::create(&s, &meta("pg1")).unwrap();
    let b = PgStore::open(&s, "pg1").unwrap();
    Some((s, a, b))
}

#[test]
fn writes_are_seen_by_another_connection_with_deletions() {
    let Some((_, mut a, mut b)) = two_stores("unit_feed") else {
        return;
    };
    let first = b.changes_since("e1", u64::MAX).unwrap().unwrap();
    assert!(first.upserts.is_empty());
    let g0 = first.generation;
    assert!(
        b.changes_since("e1", g0).unwrap().is_none(),
        "nothing changed"
    );
    let g1 = match a.put(&[&rec(1), &rec(2)], &[]).unwrap() {
        Written::At(g) => g,
        w => panic!("{w:?}"),
    };
    let c = b.changes_since("e1", g0).unwrap().unwrap();
    assert_eq!(c.generation, g1);
    assert_eq!(c.upserts.len(), 2);
    assert_eq!(c.upserts[0].attrs, vec![1, 2, 3]);
    assert_eq!(a.delete(&[1; 16]).unwrap(), Some(g1 + 1));
    assert_eq!(a.delete(&[1; 16]).unwrap(), None);
    let c = b.changes_since("e1", g1).unwrap().unwrap();
    assert_eq!(c.deletes, vec![[1; 16]]);
    assert!(c.upserts.is_empty());
    assert_eq!(b.damage(), None);
}

#[test]
fn conditional_writes_refuse_a_stale_or_vanished_view() {
    let Some((_, mut a, mut b)) = two_stores("unit_cond") else {
        return;
    };
    let g = match a.put(&[&rec(1)], &[]).unwrap() {
        Written::At(g) => g,
        w => panic!("{w:?}"),
    };
    // b read the object at g; a rewrites it; b's write through its view lands not.
    a.put(&[&rec(1)], &[([1; 16], g)]).unwrap();
    assert_eq!(b.put(&[&rec(1)], &[([1; 16], g)]).unwrap(), Written::Stale);
    a.delete(&[1; 16]).unwrap();
    assert_eq!(
        b.put(&[&rec(1)], &[([1; 16], g + 1)]).unwrap(),
        Written::Gone
    );
}

#[test]
fn a_reinitialisation_fences_the_other_connections_writes() {
    let Some((_, mut a, mut b)) = two_stores("unit_epoch") else {
        return;
    };
    a.put(&[&rec(1)], &[]).unwrap();
    let fresh = TokenMeta {
        epoch: "e2".into(),
        integrity: Some("6b".repeat(32)),
        ..meta("pg1")
    };
    a.reinitialize(&fresh).unwrap();
    assert_eq!(b.put(&[&rec(2)], &[]).unwrap_err().rv(), CKR_DEVICE_REMOVED);
    assert_eq!(
        b.update_meta(&mut |m| {
            m.user_failures += 1;
            Ok(())
        })
        .unwrap_err()
        .rv(),
        CKR_DEVICE_REMOVED
    );
    let c = b.changes_since("e1", 1).unwrap().unwrap();
    assert!(c.reset);
    b.accept_epoch("e2");
    b.put(&[&rec(2)], &[]).unwrap();
    let all = a.changes_since("e2", u64::MAX).unwrap().unwrap();
    assert_eq!(all.upserts.len(), 1, "the old token's object is gone");
    assert_eq!(a.damage(), None);
}

#[test]
fn iv_counters_never_repeat_across_connections_or_reinitialisation() {
    let Some((_, mut a, mut b)) = two_stores("unit_iv") else {
        return;
    };
    let mut seen = Vec::new();
    for i in 0..20 {
        let s = if i % 2 == 0 { &mut a } else { &mut b };
        seen.push(s.reserve_iv_counter(b"key", 10).unwrap());
    }
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 20);
    let highest = *seen.last().unwrap();
    let fresh = TokenMeta {
        epoch: "e2".into(),
        integrity: Some("6b".repeat(32)),
        ..meta("pg1")
    };
    a.reinitialize(&fresh).unwrap();
    assert!(a.reserve_iv_counter(b"key", 1).unwrap() >= highest + 10);
}

#[test]
fn pin_counts_from_many_connections_add_up() {
    let Some((s, _a, _b)) = two_stores("unit_pins") else {
        return;
    };
    std::thread::scope(|sc| {
        for _ in 0..8 {
            let s = &s;
            sc.spawn(move || {
                let mut store = PgStore::open(s, "pg1").unwrap();
                for _ in 0..5 {
                    store
                        .update_meta(&mut |m| {
                            m.user_failures += 1;
                            Ok(())
                        })
                        .unwrap();
                }
            });
        }
    });
    let mut store = PgStore::open(&s, "pg1").unwrap();
    assert_eq!(store.meta().unwrap().user_failures, 40);
}

#[test]
fn edited_metadata_is_refused() {
    let Some((s, _a, _b)) = two_stores("unit_meta") else {
        return;
    };
    let target = std::sync::Arc::new(super::target::Target::of(&s).unwrap());
    let mut db = super::db::Db::connect(target).unwrap();
    db.batch("UPDATE dalek_tokens SET meta = convert_to(replace(convert_from(meta, 'UTF8'), '\"t\"', '\"x\"'), 'UTF8')")
        .unwrap();
    assert_eq!(
        PgStore::open(&s, "pg1").err().unwrap().rv(),
        CKR_DEVICE_ERROR
    );
}

#[test]
fn a_server_that_does_not_answer_fails_the_call_within_the_timeout() {
    // A listener that accepts and never speaks: the connection waits for
    // the server's first message until the timeout.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let s = PostgresSettings {
        conninfo: format!("postgresql://nobody:pw@127.0.0.1:{port}/none"),
        password_file: None,
        timeout: Duration::from_millis(300),
        max_staleness: Duration::ZERO,
    };
    assert_eq!(PgStore::open(&s, "x").err().unwrap().rv(), CKR_DEVICE_ERROR);
    drop(listener);
    // Nothing listens now: refused at once.
    assert_eq!(PgStore::open(&s, "x").err().unwrap().rv(), CKR_DEVICE_ERROR);
}

/// Each `sslmode` as libpq gives it, against the test server's TLS (its CA
/// in DIR/ca.crt; DIR/other-ca.crt signed nothing of it).
#[cfg(feature = "aws-lc")]
#[test]
fn tls_is_used_and_verified_as_sslmode_says() {
    use super::db::Db;
    use super::target::Target;
    use std::sync::Arc;
    let Some(s) = settings("unit_tls") else {
        return;
    };
    let Ok(dir) = std::env::var("DALEK_PKCS11_TEST_POSTGRES_DIR") else {
        eprintln!("SKIPPED: the server's directory is not known (scripts/test sets it)");
        return;
    };
    let with = |q: String| PostgresSettings {
        conninfo: format!("{}&{q}", s.conninfo),
        ..s.clone()
    };
    let encrypted = |q: String| -> crate::error::Result<bool> {
        let mut db = Db::connect(Arc::new(Target::of(&with(q))?))?;
        Ok(db
            .query_opt(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )?
            .is_some_and(|r| r.get::<_, bool>(0)))
    };
    let ca = format!("{dir}/ca.crt");
    let other = format!("{dir}/other-ca.crt");
    assert!(encrypted(format!("sslmode=verify-full&sslrootcert={ca}")).unwrap());
    assert!(encrypted(format!("sslmode=verify-ca&sslrootcert={ca}")).unwrap());
    assert!(encrypted("sslmode=require".into()).unwrap());
    assert!(encrypted("sslmode=prefer".into()).unwrap());
    assert!(!encrypted("sslmode=disable".into()).unwrap());
    // A chain to another root is refused, whichever mode checks it.
    for mode in ["verify-full", "verify-ca", "require"] {
        let r = encrypted(format!("sslmode={mode}&sslrootcert={other}"));
        assert_eq!(r.unwrap_err().rv(), CKR_DEVICE_ERROR, "{mode}");
    }
    // verify-full without any root certificate is a configuration error.
    let r = Target::of(&with("sslmode=verify-full&sslrootcert=/nonexistent".into()));
    assert_eq!(r.err().unwrap().rv(), CKR_GENERAL_ERROR);
    // The store itself over TLS.
    let tls = with(format!("sslmode=verify-full&sslrootcert={ca}"));
    let mut store = PgStore::create(&tls, &meta("tls1")).unwrap();
    store.put(&[&rec(1)], &[]).unwrap();
    assert_eq!(
        PgStore::open(&tls, "tls1")
            .unwrap()
            .changes_since("e1", u64::MAX)
            .unwrap()
            .unwrap()
            .upserts
            .len(),
        1
    );
}

/// A connection lost in the middle of a transaction fails the rest of it:
/// no later statement runs on a new connection (it would run outside the
/// transaction, committed statement by statement), the commit is never
/// claimed, and the server rolls back what the transaction did. The next
/// use connects again.
#[test]
fn a_connection_lost_mid_transaction_fails_it_and_nothing_of_it_stays() {
    let Some(s) = settings("unit_lost") else {
        return;
    };
    let target = std::sync::Arc::new(super::target::Target::of(&s).unwrap());
    let mut db = super::db::Db::connect(target.clone()).unwrap();
    let mut killer = super::db::Db::connect(target).unwrap();
    db.batch("CREATE TABLE t(v int)").unwrap();
    let pid: i32 = db.query("SELECT pg_backend_pid()", &[]).unwrap()[0].get(0);
    let mut after_loss = None;
    let out = db.transaction("BEGIN", |db| {
        db.execute("INSERT INTO t VALUES (1)", &[])?;
        let killed: bool = killer
            .query("SELECT pg_terminate_backend($1)", &[&pid])
            .unwrap()[0]
            .get(0);
        assert!(killed);
        let lost = db.execute("INSERT INTO t VALUES (2)", &[]);
        assert!(lost.is_err(), "the terminated connection fails");
        after_loss = Some(db.execute("INSERT INTO t VALUES (3)", &[]));
        Ok(())
    });
    assert_eq!(out.unwrap_err().rv(), CKR_DEVICE_ERROR);
    assert!(
        after_loss.unwrap().is_err(),
        "a statement after the loss must not run on a new connection"
    );
    let rows: i64 = db.query("SELECT count(*) FROM t", &[]).unwrap()[0].get(0);
    assert_eq!(rows, 0, "nothing of the lost transaction stays");
}

/// Runs `sql` on the database of `settings` (a test's edits behind the
/// module's back).
pub(crate) fn run_sql(settings: &PostgresSettings, sql: &str) {
    let target = std::sync::Arc::new(super::target::Target::of(settings).unwrap());
    super::db::Db::connect(target).unwrap().batch(sql).unwrap();
}

/// `settings` listening (`postgres_max_staleness`), its connections named
/// `app` (to find them in `pg_stat_activity`).
fn listening(settings: &PostgresSettings, staleness: Duration, app: &str) -> PostgresSettings {
    PostgresSettings {
        conninfo: format!("{}&application_name={app}", settings.conninfo),
        max_staleness: staleness,
        ..settings.clone()
    }
}

/// Looks until one finds changes (at most 5 s).
fn changes_within(store: &mut PgStore, since: u64) -> Option<crate::storage::Changes> {
    let give_up = std::time::Instant::now() + Duration::from_secs(5);
    while std::time::Instant::now() < give_up {
        if let Some(c) = store.changes_since("e1", since).unwrap() {
            return Some(c);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

/// Listening, a look reads nothing while no writer has notified (a row
/// changed behind the module's back, without a notification, goes unseen
/// for up to the staleness bound), and a write's notification makes the
/// next look read it.
#[test]
fn a_listening_store_reads_only_when_notified() {
    let Some(s) = settings("unit_notify") else {
        return;
    };
    let mut a = PgStore::create(&s, &meta("pgn")).unwrap();
    let l = listening(&s, Duration::from_secs(3600), "unit_notify");
    let mut b = PgStore::open(&l, "pgn").unwrap();
    let g0 = b.changes_since("e1", u64::MAX).unwrap().unwrap().generation;
    assert!(b.changes_since("e1", g0).unwrap().is_none());
    run_sql(&s, "UPDATE dalek_tokens SET generation = generation + 1");
    for _ in 0..20 {
        assert!(
            b.changes_since("e1", g0).unwrap().is_none(),
            "no notification, within the bound: not read"
        );
    }
    a.put(&[&rec(7)], &[]).unwrap();
    let seen = changes_within(&mut b, g0).expect("the notification makes the look read");
    assert!(seen.upserts.iter().any(|r| r.uid == [7; 16]));
}

/// Listening with a short bound: a change nobody notified is read once the
/// bound has passed; and after the connection was lost (notifications sent
/// meanwhile are lost with it) the next look reads.
#[test]
fn a_listening_store_reads_after_the_bound_and_after_a_lost_connection() {
    let Some(s) = settings("unit_notify_lost") else {
        return;
    };
    let mut a = PgStore::create(&s, &meta("pgl")).unwrap();
    let l = listening(&s, Duration::from_millis(300), "unit_notify_lost");
    let mut b = PgStore::open(&l, "pgl").unwrap();
    let g0 = b.changes_since("e1", u64::MAX).unwrap().unwrap().generation;
    assert!(b.changes_since("e1", g0).unwrap().is_none());
    run_sql(&s, "UPDATE dalek_tokens SET generation = generation + 1");
    std::thread::sleep(Duration::from_millis(350));
    let c = b
        .changes_since("e1", g0)
        .unwrap()
        .expect("read after the bound");
    let g1 = c.generation;
    assert!(b.changes_since("e1", g1).unwrap().is_none());
    run_sql(
        &s,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE application_name = 'unit_notify_lost'",
    );
    a.put(&[&rec(8)], &[]).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let c = b
        .changes_since("e1", g1)
        .unwrap()
        .expect("read after the loss");
    assert!(c.upserts.iter().any(|r| r.uid == [8; 16]));
}

/// The server ended the session between two calls (`pg_terminate_backend`,
/// as `idle_session_timeout` or a fast shutdown do: a `FATAL` waits in the
/// socket for the next statement): the next read and the next write
/// connect again and succeed.
#[test]
fn a_session_the_server_ended_between_calls_is_made_again() {
    let Some(s) = settings("unit_ended") else {
        return;
    };
    let named = listening(&s, Duration::ZERO, "unit_ended");
    let mut a = PgStore::create(&named, &meta("pge")).unwrap();
    let end_sessions = || {
        run_sql(
            &s,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE application_name = 'unit_ended'",
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let g = a.changes_since("e1", u64::MAX).unwrap().unwrap().generation;
    end_sessions();
    assert!(a.changes_since("e1", g).unwrap().is_none(), "read again");
    end_sessions();
    a.put(&[&rec(3)], &[]).unwrap();
    end_sessions();
    let all = a.changes_since("", u64::MAX).unwrap().unwrap();
    assert_eq!(all.upserts.len(), 1);
}
