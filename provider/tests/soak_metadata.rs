//! Soak of the token's metadata under concurrent logins and
//! re-initialisations (issue 27 items 1 and 2).
//!
//! Logins:
//! processes log in and out (a wrong PIN, then the right one: every login
//! writes the PIN-failure counter into the metadata) while this process
//! polls `C_GetTokenInfo`, and now and then starts afresh (`C_Finalize`,
//! `C_Initialize`) and looks for the token in `C_GetSlotList`, as a
//! monitoring process does. No poll may fail and the token may never be
//! missing: a metadata row read apart from its MAC was taken for an edit
//! (`CKR_DEVICE_ERROR`, the token dropped from the slot list).
//!
//! Re-initialisations: in each round one process re-initialises the token
//! (same SO PIN, same user PIN set again) and stores an object while another,
//! logged in to the old token, keeps storing objects. Afterwards every
//! object the token lists must read back and the user PIN must work: a
//! write made through the old token's login (its token key, its integrity
//! keys) must never land in the new token.
//!
//! Sizes: `SOAK_SECONDS` (default 2: the smoke run `cargo test` makes),
//! `SOAK_PROCESSES` (default 2), `SOAK_REINITS` (rounds, default 3);
//! `scripts/soak` runs the long ones. The second processes are this binary
//! again (`--ignored --exact worker`).

mod common;

use common::*;
use cryptoki::session::UserType;
use std::time::{Duration, Instant};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Entry point of the login processes (skipped in a normal run).
#[test]
#[ignore = "runs only as a second process of the test below"]
fn worker() {
    let Ok(spec) = std::env::var("SOAK_META_WORKER") else {
        return;
    };
    match spec.split_once(' ') {
        Some(("reinit", round)) => return reinit_worker(round),
        Some(("writer", round)) => return writer_worker(round),
        _ => {}
    }
    let millis: u64 = spec.parse().unwrap();
    let (p, slot) = worker_module("meta");
    let until = Instant::now() + Duration::from_millis(millis);
    let (mut logins, mut errors) = (0u64, 0u64);
    while Instant::now() < until {
        let s = p.open_rw_session(slot).unwrap();
        // A wrong PIN raises the failure counter, the right one clears it:
        // two metadata writes, and never near the lockout.
        let wrong = s.login(UserType::User, Some(&pin("0000")));
        let right = s.login(UserType::User, Some(&pin(USER_PIN)));
        errors += u64::from(wrong.is_ok()) + u64::from(right.is_err());
        logins += 2;
        let _ = s.logout();
    }
    println!("logins {logins}");
    println!("errors {errors}");
}

#[test]
fn soak_metadata_token_info_beside_logins_never_fails() {
    let seconds = env_or("SOAK_SECONDS", 2);
    let processes = env_or("SOAK_PROCESSES", 2);
    let mut f = Fixture::new();
    f.token("meta");
    let children: Vec<_> = (0..processes)
        .map(|_| f.spawn_worker("SOAK_META_WORKER", &(seconds * 1000).to_string()))
        .collect();
    let until = Instant::now() + Duration::from_secs(seconds);
    let (mut polls, mut failed, mut scans, mut missing) = (0u64, 0u64, 0u64, 0u64);
    let mut first_failure = None;
    while Instant::now() < until {
        // A monitoring process's first look: is the token there?
        f.restart();
        scans += 1;
        let slot = f
            .p()
            .get_slots_with_token()
            .unwrap()
            .into_iter()
            .find(|s| f.p().get_token_info(*s).is_ok_and(|t| t.label() == "meta"));
        let Some(slot) = slot else {
            missing += 1;
            continue;
        };
        for _ in 0..500 {
            polls += 1;
            if let Err(e) = f.p().get_token_info(slot) {
                failed += 1;
                first_failure.get_or_insert(e.to_string());
            }
        }
    }
    let (mut logins, mut errors) = (0u64, 0u64);
    for c in children {
        for line in finish_worker(c).lines() {
            if let Some(n) = line.strip_prefix("logins ") {
                logins += n.parse::<u64>().unwrap();
            } else if let Some(n) = line.strip_prefix("errors ") {
                errors += n.parse::<u64>().unwrap();
            }
        }
    }
    println!(
        "soak metadata: {processes} processes x {seconds} s: {logins} logins ({errors} wrong \
         outcomes), {polls} C_GetTokenInfo polls ({failed} failed{}), {scans} fresh scans \
         ({missing} without the token)",
        first_failure
            .map(|e| format!(", first: {e}"))
            .unwrap_or_default()
    );
    assert!(logins > 0);
    assert_eq!((errors, failed, missing), (0, 0, 0));
}

/// A private token data object labelled `label`.
fn data_object(s: &cryptoki::session::Session, label: &str) -> cryptoki::error::Result<()> {
    use cryptoki::object::{Attribute, ObjectClass};
    s.create_object(&[
        Attribute::Class(ObjectClass::DATA),
        Attribute::Token(true),
        Attribute::Private(true),
        Attribute::Label(label.as_bytes().to_vec()),
        Attribute::Value(label.as_bytes().to_vec()),
    ])
    .map(|_| ())
}

/// Re-initialise the token "race" and store one object.
fn reinit_worker(round: &str) {
    let (p, slot) = worker_module("race");
    p.init_token(slot, &pin(SO_PIN), "race").unwrap();
    let s = p.open_rw_session(slot).unwrap();
    s.login(UserType::So, Some(&pin(SO_PIN))).unwrap();
    s.init_pin(&pin(USER_PIN)).unwrap();
    s.logout().unwrap();
    s.login(UserType::User, Some(&pin(USER_PIN))).unwrap();
    data_object(&s, &format!("{round}-reinit")).unwrap();
    println!("stored 1");
}

/// Logged in to the token as it is now, store an object every few
/// milliseconds until a call fails (the token was re-initialised under it)
/// or two seconds have passed.
fn writer_worker(round: &str) {
    let (p, slot) = worker_module("race");
    let Ok(s) = p.open_rw_session(slot) else {
        println!("stored 0");
        return;
    };
    if s.login(UserType::User, Some(&pin(USER_PIN))).is_err() {
        println!("stored 0");
        return;
    }
    let mut stored = 0;
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        if data_object(&s, &format!("{round}-writer-{stored}")).is_err() {
            break;
        }
        stored += 1;
        std::thread::sleep(Duration::from_millis(2));
    }
    println!("stored {stored}");
}

#[test]
fn soak_reinit_races_leave_every_object_readable() {
    use cryptoki::object::{Attribute, AttributeType};
    let rounds = env_or("SOAK_REINITS", 3);
    let mut f = Fixture::new();
    let slot = f.token("race");
    let (mut unreadable, mut listed, mut pin_failures) = (0u64, 0u64, 0u64);
    for round in 0..rounds {
        let writer = f.spawn_worker("SOAK_META_WORKER", &format!("writer r{round}"));
        // The writer logs in (a PIN check) and writes; the re-initialisation
        // lands somewhere in its run.
        std::thread::sleep(Duration::from_millis(400 + 97 * (round % 7)));
        let reinit = f.spawn_worker("SOAK_META_WORKER", &format!("reinit r{round}"));
        finish_worker(writer);
        finish_worker(reinit);
        f.restart();
        let s = f.p().open_rw_session(slot).unwrap();
        if s.login(UserType::User, Some(&pin(USER_PIN))).is_err() {
            pin_failures += 1;
            continue;
        }
        let Ok(found) = s.find_objects(&[]) else {
            unreadable += 1;
            continue;
        };
        for h in found {
            listed += 1;
            let read = s.get_attributes(h, &[AttributeType::Value]);
            if !matches!(read.as_deref(), Ok([Attribute::Value(_)])) {
                unreadable += 1;
            }
        }
    }
    println!(
        "soak reinit: {rounds} rounds: {listed} objects listed after them, {unreadable} \
         unreadable, {pin_failures} rounds whose user PIN failed"
    );
    assert_eq!((unreadable, pin_failures), (0, 0));
}
