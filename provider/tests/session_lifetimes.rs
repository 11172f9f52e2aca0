//! Nothing outlives what it belongs to, whatever another thread is doing:
//! sessions and their objects, operations and database handles end with
//! `C_CloseSession` / `C_Finalize`; a login, an object creation or a
//! `C_OpenSession` racing a close or a re-initialisation leaves no state the
//! spec does not allow.

mod common;

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, ObjectClass};
use cryptoki::session::{SessionState, UserType};
use std::sync::Barrier;
use std::time::Duration;

/// Files under `dir` this process holds open.
fn open_files_under(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|p| p.starts_with(dir))
        .map(|p| p.display().to_string())
        .collect()
}

/// Another thread's cached session kept the session, its operations and,
/// through its token, three database files alive after `C_Finalize`.
#[test]
fn finalize_closes_the_token_files_whatever_other_threads_cached() {
    let mut f = Fixture::new();
    let slot = f.token("files");
    let tokens = f.dir.path().join("tokens");
    let used = Barrier::new(2);
    let finalized = Barrier::new(2);
    std::thread::scope(|sc| {
        let p = f.p().clone();
        let (used, finalized) = (&used, &finalized);
        sc.spawn(move || {
            // A session used from this thread (its lookup now cached here),
            // with an operation left active.
            let s = p.open_rw_session(slot).unwrap();
            s.login(UserType::User, Some(&pin(USER_PIN))).unwrap();
            s.digest_init(&Mechanism::Sha256).unwrap();
            std::mem::forget(s);
            used.wait();
            finalized.wait();
        });
        used.wait();
        assert!(!open_files_under(&tokens).is_empty(), "the token is open");
        f.stop();
        let left = open_files_under(&tokens);
        finalized.wait();
        assert!(left.is_empty(), "still open after C_Finalize: {left:?}");
    });
}

/// A session object created while another thread closed its session
/// outlived it and showed up in other sessions.
#[test]
fn objects_never_outlive_a_session_closed_under_them() {
    let f = Fixture::new();
    let slot = f.token("orphans");
    let p = f.p();
    let keeper = f.user(slot);
    for round in 0..60u64 {
        let s = p.open_rw_session(slot).unwrap();
        let handle = s.handle();
        let start = Barrier::new(2);
        std::thread::scope(|sc| {
            let start = &start;
            let creator = sc.spawn(move || {
                start.wait();
                let mut made = 0;
                while s
                    .create_object(&[
                        Attribute::Class(ObjectClass::DATA),
                        Attribute::Label(b"orphan".to_vec()),
                        Attribute::Token(false),
                    ])
                    .is_ok()
                {
                    made += 1;
                }
                std::mem::forget(s);
                made
            });
            start.wait();
            std::thread::sleep(Duration::from_micros(200 + 37 * (round % 23)));
            // SAFETY: a plain call with a handle (closing it from here, as
            // another thread of the application would).
            let rv = unsafe { (raw().C_CloseSession.unwrap())(handle) };
            assert_eq!(rv, cryptoki_sys::CKR_OK);
            creator.join().unwrap();
        });
        let left = keeper
            .find_objects(&[Attribute::Label(b"orphan".to_vec())])
            .unwrap();
        assert!(left.is_empty(), "round {round}: {} orphans", left.len());
    }
}

/// A `C_Login` whose PIN check was still running when the last session
/// closed left the token logged in with no session at all.
#[test]
fn a_login_racing_the_last_close_leaves_nobody_logged_in() {
    let f = Fixture::new();
    let slot = f.token("login-race");
    let p = f.p();
    let s = p.open_rw_session(slot).unwrap();
    let handle = s.handle();
    let result = std::thread::scope(|sc| {
        let login = sc.spawn(move || {
            let r = s.login(UserType::User, Some(&pin(USER_PIN)));
            std::mem::forget(s);
            r.map_err(rv_of)
        });
        // The PIN derivation takes far longer than this.
        std::thread::sleep(Duration::from_millis(20));
        // SAFETY: a plain call with a handle.
        let rv = unsafe { (raw().C_CloseSession.unwrap())(handle) };
        assert_eq!(rv, cryptoki_sys::CKR_OK);
        login.join().unwrap()
    });
    assert_eq!(result, Err(cryptoki::error::RvError::SessionClosed));
    let fresh = p.open_rw_session(slot).unwrap();
    assert_eq!(
        fresh.get_session_info().unwrap().session_state(),
        SessionState::RwPublic,
        "nobody may be logged in"
    );
}

/// `C_OpenSession` while `C_InitToken` re-initialised the token opened a
/// session on a token then erased under it; it now waits for the
/// initialisation to finish.
#[test]
fn open_session_waits_for_a_running_init_token() {
    let f = Fixture::new();
    let slot = f.token("before");
    let p = f.p();
    std::thread::scope(|sc| {
        let init = sc.spawn(move || p.init_token(slot, &pin(SO_PIN), "after"));
        std::thread::sleep(Duration::from_millis(20));
        let s = p.open_rw_session(slot).unwrap();
        // Opened after the re-initialisation finished: the new label.
        assert_eq!(p.get_token_info(slot).unwrap().label(), "after");
        drop(s);
        init.join().unwrap().unwrap();
    });
}
