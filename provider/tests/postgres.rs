//! The PostgreSQL token store through the module, against a real server:
//! the one `scripts/test` starts (`scripts/postgres`), named by
//! `DALEK_PKCS11_TEST_POSTGRES` with its password in `PGPASSFILE`. Without
//! one the tests skip, unless `DALEK_PKCS11_REQUIRE_POSTGRES` is set (as
//! `scripts/test` sets it). Each test keeps its tokens in a schema of its
//! own (`search_path` in the connection string's options), emptied first.
//!
//! Second processes ("hosts": each with its own connection) are this test
//! binary run again with `--ignored --exact worker` and the role in
//! `PG_WORKER`.

mod common;
#[path = "common/pg.rs"]
mod pg;

use common::*;
use cryptoki::error::RvError;
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass};
use cryptoki::session::UserType;
use pg::*;

#[test]
fn keys_persist_in_the_database_and_sign_after_a_restart() {
    let Some((mut f, uri)) = pg_fixture("persist") else {
        return;
    };
    let slot = f.token("pg");
    let s = f.user(slot);
    let (public, private) = s
        .generate_key_pair(
            &Mechanism::EccKeyPairGen,
            &[
                Attribute::Token(true),
                Attribute::EcParams(vec![
                    0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07,
                ]),
                Attribute::Label(b"k".to_vec()),
            ],
            &[
                Attribute::Token(true),
                Attribute::Sign(true),
                Attribute::Label(b"k".to_vec()),
            ],
        )
        .unwrap();
    let sig = s.sign(&Mechanism::Ecdsa, private, &[7; 32]).unwrap();
    s.verify(&Mechanism::Ecdsa, public, &[7; 32], &sig).unwrap();
    drop(s);
    assert_eq!(psql(&uri, "SELECT count(*) FROM dalek_objects"), "2");
    assert_eq!(psql(&uri, "SELECT count(*) FROM dalek_tokens"), "1");
    f.restart();
    let slot = f.slot_labelled("pg");
    let s = f.user(slot);
    let keys = s
        .find_objects(&[
            Attribute::Label(b"k".to_vec()),
            Attribute::Class(ObjectClass::PRIVATE_KEY),
        ])
        .unwrap();
    assert_eq!(keys.len(), 1);
    let publics = s
        .find_objects(&[
            Attribute::Label(b"k".to_vec()),
            Attribute::Class(ObjectClass::PUBLIC_KEY),
        ])
        .unwrap();
    let sig = s.sign(&Mechanism::Ecdsa, keys[0], &[8; 32]).unwrap();
    s.verify(&Mechanism::Ecdsa, publics[0], &[8; 32], &sig)
        .unwrap();
    // The private value is sealed in the row, not stored as it is.
    let attrs = psql(
        &uri,
        "SELECT encode(attrs, 'hex') FROM dalek_objects WHERE class = 3",
    );
    assert!(!attrs.is_empty());
    match s
        .get_attributes(keys[0], &[AttributeType::KeyType])
        .unwrap()
        .pop()
    {
        Some(Attribute::KeyType(k)) => assert_eq!(k, KeyType::EC),
        other => panic!("{other:?}"),
    }
}

/// Entry point of the worker process (skipped in a normal run).
#[test]
#[ignore = "runs only as the second process of the tests below"]
fn worker() {
    let Ok(spec) = std::env::var("PG_WORKER") else {
        return;
    };
    let args: Vec<&str> = spec.split(' ').collect();
    let (label, role) = (args[0], args[1]);
    let (p, slot) = worker_module(label);
    match role {
        "destroy-and-create" => {
            let s = p.open_rw_session(slot).unwrap();
            s.login(UserType::User, Some(&pin(USER_PIN))).unwrap();
            let found = find(&s, "from-a");
            assert_eq!(found.len(), 1, "the worker sees the parent's object");
            s.destroy_object(found[0]).unwrap();
            data_object(&s, "from-b", b"b");
            println!("done");
        }
        "guess" => {
            let start = std::sync::Barrier::new(10);
            let outcomes: Vec<RvError> = std::thread::scope(|sc| {
                let workers: Vec<_> = (0..10)
                    .map(|i| {
                        let (p, start) = (&p, &start);
                        sc.spawn(move || {
                            let s = p.open_rw_session(slot);
                            start.wait();
                            let r = s
                                .unwrap()
                                .login(UserType::User, Some(&pin(&format!("wrong-{i}"))));
                            rv_of(r.expect_err("a wrong PIN never logs in"))
                        })
                    })
                    .collect();
                workers.into_iter().map(|w| w.join().unwrap()).collect()
            });
            let count = |rv| outcomes.iter().filter(|o| **o == rv).count();
            println!(
                "wrong {} locked {}",
                count(RvError::PinIncorrect),
                count(RvError::PinLocked)
            );
        }
        other => panic!("unknown role {other}"),
    }
}

#[test]
fn another_process_sees_changes_and_a_destroyed_handle_is_invalid() {
    let Some((f, _uri)) = pg_fixture("hosts") else {
        return;
    };
    let slot = f.token("shared");
    let s = f.user(slot);
    let mine = data_object(&s, "from-a", b"a");
    assert_eq!(find(&s, "from-a"), vec![mine]);
    let text = finish_worker(f.spawn_worker("PG_WORKER", "shared destroy-and-create"));
    assert!(text.contains("done"), "{text}");
    // Seen at the next look, without a restart.
    assert_eq!(find(&s, "from-b").len(), 1);
    assert!(find(&s, "from-a").is_empty());
    assert_eq!(
        rv_of(s.get_attributes(mine, &[AttributeType::Value]).unwrap_err()),
        RvError::ObjectHandleInvalid
    );
}

/// The same with every process listening (`postgres_max_staleness` of an
/// hour, so only the writers' notifications bring changes): the other
/// process's destroy and create reach this one by notification, promptly.
#[test]
fn listening_processes_learn_of_each_others_changes_by_notification() {
    struct Unset;
    impl Drop for Unset {
        fn drop(&mut self) {
            // SAFETY: as in the fixture: tests here hold SERIAL meanwhile.
            unsafe { std::env::remove_var("DALEK_PKCS11_POSTGRES_MAX_STALENESS") };
        }
    }
    let Some(uri) = pg_schema("listening") else {
        return;
    };
    let _unset = Unset;
    // SAFETY: no other thread of this binary reads the environment until
    // the fixture (which takes the lock tests here share) is made.
    unsafe { std::env::set_var("DALEK_PKCS11_POSTGRES_MAX_STALENESS", "3600") };
    let f = Fixture::with_storage(&uri);
    let slot = f.token("listened");
    let s = f.user(slot);
    let mine = data_object(&s, "from-a", b"a");
    assert_eq!(find(&s, "from-a"), vec![mine]);
    let text = finish_worker(f.spawn_worker("PG_WORKER", "listened destroy-and-create"));
    assert!(text.contains("done"), "{text}");
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while find(&s, "from-b").is_empty() {
        assert!(std::time::Instant::now() < give_up, "no notification came");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(find(&s, "from-a").is_empty());
    assert_eq!(
        rv_of(s.get_attributes(mine, &[AttributeType::Value]).unwrap_err()),
        RvError::ObjectHandleInvalid
    );
}

#[test]
fn wrong_pins_from_four_processes_lock_after_exactly_ten() {
    let Some((f, _uri)) = pg_fixture("lockout") else {
        return;
    };
    let slot = f.token("guessed");
    let workers: Vec<_> = (0..4)
        .map(|_| f.spawn_worker("PG_WORKER", "guessed guess"))
        .collect();
    let (mut wrong, mut locked) = (0, 0);
    for w in workers {
        let text = finish_worker(w);
        let line = text.lines().find(|l| l.starts_with("wrong ")).expect(&text);
        let n: Vec<usize> = line.split(' ').filter_map(|x| x.parse().ok()).collect();
        wrong += n[0];
        locked += n[1];
    }
    assert_eq!((wrong, locked), (10, 30), "40 guesses from 4 processes");
    assert!(f.p().get_token_info(slot).unwrap().user_pin_locked());
}

/// As with a token file: the record fails authentication, is never served,
/// and a search is refused (`CKR_DEVICE_ERROR`) rather than silently miss
/// it (docs/SECURITY.md).
#[test]
fn an_edited_row_is_refused_and_flagged() {
    let Some((mut f, uri)) = pg_fixture("edited") else {
        return;
    };
    let slot = f.token("edited");
    let s = f.user(slot);
    data_object(&s, "kept", b"kept");
    data_object(&s, "edited", b"edited");
    drop(s);
    // One byte of the record changed outside the module.
    let n = psql(
        &uri,
        "UPDATE dalek_objects SET attrs = set_byte(attrs, 20, get_byte(attrs, 20) # 1)
         WHERE uid = (SELECT uid FROM dalek_objects ORDER BY generation DESC LIMIT 1)
         RETURNING 1",
    );
    assert_eq!(n, "1");
    f.restart();
    let s = f.user(f.slot_labelled("edited"));
    let found = s.find_objects(&[Attribute::Label(b"kept".to_vec())]);
    assert_eq!(rv_of(found.unwrap_err()), RvError::DeviceError);
    // Put back as it was, the record is served again.
    psql(
        &uri,
        "UPDATE dalek_objects SET attrs = set_byte(attrs, 20, get_byte(attrs, 20) # 1)
         WHERE uid = (SELECT uid FROM dalek_objects ORDER BY generation DESC LIMIT 1)",
    );
    drop(s);
    f.restart();
    let s = f.user(f.slot_labelled("edited"));
    assert_eq!(find(&s, "kept").len(), 1);
    assert_eq!(find(&s, "edited").len(), 1);
}

/// `scripts/postgres <what> DIR` on the test server.
/// The server restarted (`-m fast`, `-m immediate`), killed (SIGKILL of
/// the postmaster, then started again: it recovers from its log) or
/// stopped under an open session: while it is down a call that needs it
/// fails with `CKR_DEVICE_ERROR`; once it is back the next call succeeds
/// (the module connects again by itself, no `C_Finalize`), and nothing
/// acknowledged is lost; a key the session holds signs while it is down.
#[test]
fn the_module_reconnects_after_the_server_restarts_or_is_killed() {
    let Some((mut f, _uri)) = pg_fixture("restarts") else {
        return;
    };
    if std::env::var_os("DALEK_PKCS11_TEST_POSTGRES_DIR").is_none() {
        eprintln!("SKIPPED: the server's directory is not known (scripts/test sets it)");
        return;
    }
    let slot = f.token("restarts");
    let s = f.user(slot);
    data_object(&s, "before", b"0");
    let (_, held) = s
        .generate_key_pair(
            &Mechanism::EccKeyPairGen,
            &[
                Attribute::Token(true),
                Attribute::EcParams(vec![
                    0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07,
                ]),
            ],
            &[Attribute::Token(true), Attribute::Sign(true)],
        )
        .unwrap();
    let mut written = vec!["before".to_string()];
    for (i, how) in [
        &["restart", "fast"][..],
        &["restart", "immediate"],
        &["kill"],
        &["stop"],
    ]
    .into_iter()
    .enumerate()
    {
        server_control(how);
        if how[0] == "stop" {
            let down = s.find_objects(&[Attribute::Label(b"before".to_vec())]);
            assert_eq!(rv_of(down.unwrap_err()), RvError::DeviceError);
            // A key the session holds still signs.
            s.sign(&Mechanism::Ecdsa, held, &[1; 32]).unwrap();
        }
        if how[0] != "restart" {
            server_control(&["start-again"]);
        }
        assert_eq!(find(&s, "before").len(), 1, "after {how:?}");
        let label = format!("after-{i}");
        data_object(&s, &label, b"1");
        written.push(label);
    }
    drop(s);
    f.restart();
    let s = f.user(f.slot_labelled("restarts"));
    for label in &written {
        assert_eq!(find(&s, label).len(), 1, "{label} lost");
    }
}
