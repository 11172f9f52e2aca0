//! The PIN lockout holds under concurrency: every try is counted before its
//! key derivation runs, so no more than ten wrong PINs are ever evaluated,
//! however many threads or processes guess at once; and a try that cannot be
//! counted (the token file cannot be written) is not evaluated at all.
//!
//! Second processes are this test binary run again with `--ignored --exact
//! worker` and the role in `PIN_WORKER`.

mod common;

use common::*;
use cryptoki::context::Pkcs11;
use cryptoki::error::RvError;
use cryptoki::session::UserType;
use cryptoki::slot::Slot;
use std::sync::Barrier;

const THREADS: usize = 20;

/// `threads` sessions on `slot`, each trying one wrong PIN for `user` at the
/// same moment; returns (wrong PIN results, locked results).
fn guess_at_once(p: &Pkcs11, slot: Slot, user: UserType, threads: usize) -> (usize, usize) {
    let start = Barrier::new(threads);
    let outcomes: Vec<RvError> = std::thread::scope(|sc| {
        let start = &start;
        let workers: Vec<_> = (0..threads)
            .map(|i| {
                sc.spawn(move || {
                    // Every thread reaches the barrier, so that one failing
                    // to open its session fails the test instead of leaving
                    // the others waiting for it for ever.
                    let s = p.open_rw_session(slot);
                    start.wait();
                    let s = s.unwrap();
                    let r = s.login(user, Some(&pin(&format!("wrong-{i:02}"))));
                    rv_of(r.expect_err("a wrong PIN never logs in"))
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let count = |rv: RvError| outcomes.iter().filter(|o| **o == rv).count();
    let (wrong, locked) = (count(RvError::PinIncorrect), count(RvError::PinLocked));
    assert_eq!(wrong + locked, threads, "{outcomes:?}");
    (wrong, locked)
}

#[test]
fn parallel_wrong_pins_are_counted_before_they_are_evaluated() {
    let f = Fixture::new();
    let slot = f.token("race");
    // Twenty threads at once: ten evaluated, ten refused as locked (before
    // the fix all twenty read a count of 0 and were evaluated).
    assert_eq!(
        guess_at_once(f.p(), slot, UserType::User, THREADS),
        (10, 10)
    );
    let info = f.p().get_token_info(slot).unwrap();
    assert!(info.user_pin_locked());
    let s = f.p().open_rw_session(slot).unwrap();
    assert_rv!(s.login(UserType::User, Some(&pin(USER_PIN))), PinLocked);
    // C_SetPIN by the user goes through the same count.
    assert_rv!(s.set_pin(&pin(USER_PIN), &pin("5678")), PinLocked);
    // The SO PIN has its own count, kept the same way.
    drop(s);
    assert_eq!(guess_at_once(f.p(), slot, UserType::So, THREADS), (10, 10));
    assert!(f.p().get_token_info(slot).unwrap().so_pin_locked());
    let s = f.p().open_rw_session(slot).unwrap();
    assert_rv!(s.login(UserType::So, Some(&pin(SO_PIN))), PinLocked);
}

#[test]
fn a_right_pin_among_parallel_wrong_ones_is_never_called_wrong() {
    let f = Fixture::new();
    let slot = f.token("mixed");
    let start = Barrier::new(THREADS);
    let p = f.p();
    let outcomes: Vec<(bool, Result<(), RvError>)> = std::thread::scope(|sc| {
        let start = &start;
        let workers: Vec<_> = (0..THREADS)
            .map(|i| {
                sc.spawn(move || {
                    let s = p.open_rw_session(slot).unwrap();
                    let right = i == THREADS / 2;
                    let guess = if right {
                        USER_PIN.to_string()
                    } else {
                        format!("wrong-{i:02}")
                    };
                    start.wait();
                    let r = s.login(UserType::User, Some(&pin(&guess)));
                    (right, r.map_err(rv_of))
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let right = outcomes.iter().find(|o| o.0).unwrap().1;
    let wrong = outcomes
        .iter()
        .filter(|o| !o.0 && o.1 == Err(RvError::PinIncorrect))
        .count();
    match right {
        // Evaluated among the first ten tries: it logs in and clears the
        // count, after which at most ten more wrong ones are evaluated.
        Ok(()) => assert!(wrong <= 2 * 10, "{outcomes:?}"),
        // Ten wrong ones were counted before it: it is refused unevaluated.
        Err(RvError::PinLocked) => assert_eq!(wrong, 10, "{outcomes:?}"),
        Err(e) => panic!("the right PIN got {e:?}"),
    }
}

#[test]
fn parallel_right_pins_never_lock_the_pin() {
    // cryptoki's `login_feast`: many threads log in with the right PIN at
    // once. Each try is reserved as a failure until its PIN is evaluated;
    // before PIN checks ran one at a time per process, the eleventh thread
    // found ten reserved tries and got CKR_PIN_LOCKED for the right PIN.
    let f = Fixture::new();
    let slot = f.token("feast");
    let start = Barrier::new(THREADS);
    let p = f.p();
    let outcomes: Vec<Result<(), RvError>> = std::thread::scope(|sc| {
        let start = &start;
        let workers: Vec<_> = (0..THREADS)
            .map(|_| {
                sc.spawn(move || {
                    let s = p.open_rw_session(slot).unwrap();
                    start.wait();
                    let r = s.login(UserType::User, Some(&pin(USER_PIN))).map_err(rv_of);
                    // Keep the session (and so the login) until all have tried.
                    start.wait();
                    r
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, Ok(()) | Err(RvError::UserAlreadyLoggedIn))),
        "{outcomes:?}"
    );
    assert_eq!(
        outcomes.iter().filter(|o| o.is_ok()).count(),
        1,
        "{outcomes:?}"
    );
    let info = f.p().get_token_info(slot).unwrap();
    assert!(!info.user_pin_locked() && !info.user_pin_count_low());
}

/// Entry point of the worker process (skipped in a normal run).
#[test]
#[ignore = "runs only as the second process of the tests below"]
fn worker() {
    let Ok(spec) = std::env::var("PIN_WORKER") else {
        return;
    };
    let args: Vec<&str> = spec.split(' ').collect();
    let (label, role) = (args[0], args[1]);
    let (p, slot) = worker_module(label);
    match role {
        "guess" => {
            let (wrong, locked) = guess_at_once(&p, slot, UserType::User, 10);
            println!("wrong {wrong} locked {locked}");
        }
        "unwritable" => unwritable(&p, slot),
        other => panic!("unknown role {other}"),
    }
}

fn spawn(f: &Fixture, label: &str, role: &str) -> std::process::Child {
    f.spawn_worker("PIN_WORKER", &format!("{label} {role}"))
}

#[test]
fn processes_guessing_at_once_share_the_ten_tries() {
    let f = Fixture::new();
    let slot = f.token("procs");
    let workers = [spawn(&f, "procs", "guess"), spawn(&f, "procs", "guess")];
    let mut wrong = 0;
    for w in workers {
        let text = finish_worker(w);
        let line = text.lines().find(|l| l.starts_with("wrong ")).expect(&text);
        let n: Vec<usize> = line.split(' ').filter_map(|x| x.parse().ok()).collect();
        assert_eq!(n[0] + n[1], 10, "{line}");
        wrong += n[0];
    }
    assert_eq!(wrong, 10, "two processes evaluated {wrong} wrong PINs");
    assert!(f.p().get_token_info(slot).unwrap().user_pin_locked());
}

/// In the worker: the token's files cannot be written (see
/// [`limit_file_size`]).
fn unwritable(p: &Pkcs11, slot: Slot) {
    let s = p.open_rw_session(slot).unwrap();
    let login = |guess: &str| s.login(UserType::User, Some(&pin(guess))).map_err(rv_of);
    limit_file_size(0);
    // Neither PIN is evaluated while its try cannot be counted: before the
    // fix the right one logged in (nothing to write at a count of 0).
    let e = login(USER_PIN).expect_err("right PIN while the token cannot be written");
    assert!(
        matches!(e, RvError::DeviceMemory | RvError::DeviceError),
        "{e:?}"
    );
    let e = login("wrong-pin").expect_err("wrong PIN");
    assert!(
        matches!(e, RvError::DeviceMemory | RvError::DeviceError),
        "{e:?}"
    );
    limit_file_size(libc::RLIM_INFINITY);
    // Nine counted failures, then the file stops taking writes: the tenth
    // guess is refused without being evaluated or counted...
    for _ in 0..9 {
        assert_eq!(login("wrong-pin"), Err(RvError::PinIncorrect));
    }
    limit_file_size(0);
    for _ in 0..5 {
        let e = login("wrong-pin").expect_err("wrong PIN");
        assert_ne!(e, RvError::PinIncorrect);
        assert_ne!(e, RvError::PinLocked);
    }
    limit_file_size(libc::RLIM_INFINITY);
    // ...so the right PIN still has its try.
    assert_eq!(login(USER_PIN), Ok(()));
    println!("unwritable ok");
}

#[test]
fn a_try_that_cannot_be_counted_is_not_evaluated() {
    let f = Fixture::new();
    f.token("nowrite");
    let text = finish_worker(spawn(&f, "nowrite", "unwritable"));
    assert!(text.contains("unwritable ok"), "{text}");
}
