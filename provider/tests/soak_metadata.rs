//! Soak of the token's metadata under concurrent logins (issue 27 item 1):
//! processes log in and out (a wrong PIN, then the right one: every login
//! writes the PIN-failure counter into the metadata) while this process
//! polls `C_GetTokenInfo`, and now and then starts afresh (`C_Finalize`,
//! `C_Initialize`) and looks for the token in `C_GetSlotList`, as a
//! monitoring process does. No poll may fail and the token may never be
//! missing: a metadata row read apart from its MAC was taken for an edit
//! (`CKR_DEVICE_ERROR`, the token dropped from the slot list).
//!
//! Sizes: `SOAK_SECONDS` (default 2: the smoke run `cargo test` makes),
//! `SOAK_PROCESSES` (default 2); `scripts/soak` runs the long one. The
//! loggers are this binary again (`--ignored --exact worker`).

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
