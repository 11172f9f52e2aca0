//! Nothing lost: the token stays consistent when a writer is killed at any
//! moment, and two processes using one token see each other's changes.
//!
//! The second process is this test binary run again with
//! `--ignored --exact worker` and the role in `KEYSTORE_WORKER`: it loads
//! the module like any consumer and hammers one token.

mod common;

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::eddsa::{EddsaParams, EddsaSignatureScheme};
use cryptoki::object::{Attribute, AttributeType, ObjectClass, ObjectHandle};
use cryptoki::session::{Session, UserType};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn eddsa() -> Mechanism<'static> {
    Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Pure))
}

fn label_of(s: &Session, h: ObjectHandle) -> Option<Vec<u8>> {
    match s.get_attributes(h, &[AttributeType::Label]).ok()?.pop()? {
        Attribute::Label(l) => Some(l),
        _ => None,
    }
}

fn writer(s: &Session, n: usize) -> Result<(), String> {
    let mut out = std::io::stdout();
    for i in 0..n {
        let label = format!("w-{}-{i}", std::process::id()).into_bytes();
        let (public, private) = s
            .generate_key_pair(
                &Mechanism::EccEdwardsKeyPairGen,
                &[
                    Attribute::Token(true),
                    Attribute::EcParams(b"\x13\x0cedwards25519".to_vec()),
                    Attribute::Label(label.clone()),
                ],
                &[Attribute::Token(true), Attribute::Label(label)],
            )
            .map_err(|e| format!("keygen {i}: {e}"))?;
        if i % 2 == 1 {
            s.destroy_object(private)
                .map_err(|e| format!("destroy {i}: {e}"))?;
            s.destroy_object(public)
                .map_err(|e| format!("destroy {i}: {e}"))?;
        }
        writeln!(out, "step {i}")
            .and_then(|_| out.flush())
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn reader(s: &Session, millis: u64) -> Result<(), String> {
    let end = Instant::now() + Duration::from_millis(millis);
    let mut signed = 0usize;
    while Instant::now() < end {
        let privates = s
            .find_objects(&[Attribute::Class(ObjectClass::PRIVATE_KEY)])
            .map_err(|e| format!("find: {e}"))?;
        for key in privates {
            let Some(label) = label_of(s, key) else {
                continue;
            };
            let msg = b"reader message";
            // The writer may destroy the key at any moment: a vanished key is
            // fine, a wrong signature is not.
            let Ok(sig) = s.sign(&eddsa(), key, msg) else {
                continue;
            };
            let publics = s
                .find_objects(&[
                    Attribute::Class(ObjectClass::PUBLIC_KEY),
                    Attribute::Label(label.clone()),
                ])
                .map_err(|e| format!("find public: {e}"))?;
            for public in publics {
                if let Err(e) = s.verify(&eddsa(), public, msg, &sig)
                    && !matches!(
                        e,
                        cryptoki::error::Error::Pkcs11(
                            cryptoki::error::RvError::KeyHandleInvalid,
                            _
                        )
                    )
                {
                    return Err(format!("verify {}: {e}", String::from_utf8_lossy(&label)));
                }
            }
            signed += 1;
        }
    }
    println!("signed {signed}");
    Ok(())
}

/// Entry point of the worker process (skipped in a normal run).
#[test]
#[ignore = "runs only as the second process of the tests below"]
fn worker() {
    let Ok(spec) = std::env::var("KEYSTORE_WORKER") else {
        return;
    };
    let args: Vec<&str> = spec.split(' ').collect();
    let (label, role, n) = (args[0], args[1], args[2].parse::<u64>().unwrap());
    let (p, slot) = worker_module(label);
    let s = p.open_rw_session(slot).unwrap();
    s.login(UserType::User, Some(&pin(USER_PIN))).unwrap();
    let r = match role {
        "writer" => writer(&s, n as usize),
        _ => reader(&s, n),
    };
    if let Err(e) = r {
        eprintln!("worker: {e}");
        std::process::exit(1);
    }
}

fn spawn(f: &Fixture, label: &str, role: &str, n: u64) -> std::process::Child {
    f.spawn_worker("KEYSTORE_WORKER", &format!("{label} {role} {n}"))
}

/// Every key pair on the token is whole and works; the database passes
/// SQLite's integrity check. Returns the number of pairs. The integrity
/// check runs while the module is finalized: this test process links its own
/// copy of SQLite (through rusqlite) besides the module's, and two SQLite
/// copies in one process must not hold the same database open at once
/// (POSIX locks are per process, so closing one copy's file drops the other
/// copy's locks).
fn check_token(f: &mut Fixture, slot: cryptoki::slot::Slot) -> usize {
    f.stop();
    let db = std::fs::read_dir(f.dir.path().join("tokens"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "sqlite"))
        .unwrap();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let verdict: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(verdict, "ok");
    drop(conn);
    f.start();
    let s = f.user(slot);
    let mech = Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Pure));
    let label_of = |h| match s.get_attributes(h, &[AttributeType::Label]).unwrap().pop() {
        Some(Attribute::Label(l)) => String::from_utf8(l).unwrap(),
        other => panic!("{other:?}"),
    };
    let privates = s
        .find_objects(&[Attribute::Class(ObjectClass::PRIVATE_KEY)])
        .unwrap();
    let publics = s
        .find_objects(&[Attribute::Class(ObjectClass::PUBLIC_KEY)])
        .unwrap();
    let private_labels: std::collections::HashSet<String> =
        privates.iter().map(|h| label_of(*h)).collect();
    // A pair is generated in one transaction, so every private key has its
    // public key. Destroying a pair takes two calls (private first); a kill
    // between them may leave the public half of an odd-numbered pair.
    for key in &privates {
        let label = label_of(*key);
        let sig = s.sign(&mech, *key, b"check").unwrap();
        let public = s
            .find_objects(&[
                Attribute::Class(ObjectClass::PUBLIC_KEY),
                Attribute::Label(label.clone().into_bytes()),
            ])
            .unwrap();
        assert_eq!(public.len(), 1, "{label} has its public key");
        s.verify(&mech, public[0], b"check", &sig).unwrap();
    }
    for key in &publics {
        let label = label_of(*key);
        if !private_labels.contains(&label) {
            let index: u64 = label.rsplit('-').next().unwrap().parse().unwrap();
            assert_eq!(
                index % 2,
                1,
                "orphan public key {label} was not being destroyed"
            );
        }
    }
    privates.len()
}

#[test]
fn killed_writers_leave_a_consistent_token() {
    let mut f = Fixture::new();
    let slot = f.token("crash");
    let mut seen_progress = 0;
    // An instrumented build (scripts/sanitizers) starts and runs the writer
    // many times slower; give it the same number of steps before the kill.
    let slowdown = if std::env::var_os("DALEK_PKCS11_SANITIZER").is_some() {
        15
    } else {
        1
    };
    for round in 0..8u64 {
        let mut child = spawn(&f, "crash", "writer", 100_000);
        // Kill at a different moment each round, mid-transaction sooner or later.
        std::thread::sleep(Duration::from_millis((150 + 37 * round) * slowdown));
        child.kill().unwrap(); // SIGKILL
        let out = child.wait_with_output().unwrap();
        seen_progress += String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("step "))
            .count();
        check_token(&mut f, slot);
    }
    assert!(
        seen_progress > 8,
        "the writer made progress before being killed ({seen_progress} steps)"
    );
}

#[test]
fn two_processes_share_one_token() {
    let mut f = Fixture::new();
    let slot = f.token("shared");
    let writer = spawn(&f, "shared", "writer", 40);
    let reader = spawn(&f, "shared", "reader", 3000);
    let w = writer.wait_with_output().unwrap();
    let r = reader.wait_with_output().unwrap();
    assert!(
        w.status.success(),
        "writer: {}",
        String::from_utf8_lossy(&w.stderr)
    );
    assert!(
        r.status.success(),
        "reader: {}",
        String::from_utf8_lossy(&r.stderr)
    );
    let stdout = String::from_utf8_lossy(&r.stdout);
    let signed: usize = stdout
        .lines()
        .find_map(|l| l.strip_prefix("signed "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count in {stdout:?}"));
    assert!(signed > 0, "the reader saw the writer's keys");
    // This process (initialised before the workers ran) sees their changes
    // without restarting.
    let s = f.user(slot);
    assert_eq!(
        s.find_objects(&[Attribute::Class(ObjectClass::PRIVATE_KEY)])
            .unwrap()
            .len(),
        20
    );
    drop(s);
    assert_eq!(check_token(&mut f, slot), 20, "writer kept every even pair");
}

#[test]
fn a_token_created_by_another_process_appears() {
    // The other process is pkcs11-tool, which cannot load a module built
    // with a sanitizer (scripts/sanitizers); every other run covers this.
    if std::env::var_os("DALEK_PKCS11_SANITIZER").is_some() {
        eprintln!("skipped under a sanitizer: pkcs11-tool cannot load an instrumented module");
        return;
    }
    let f = Fixture::new();
    assert_eq!(f.p().get_all_slots().unwrap().len(), 1);
    let status = Command::new("pkcs11-tool")
        .args([
            "--module",
            module_path().to_str().unwrap(),
            "--init-token",
            "--slot-index",
            "0",
            "--label",
            "other",
            "--so-pin",
            SO_PIN,
        ])
        .env("DALEK_PKCS11_TOKEN_DIR", f.dir.path().join("tokens"))
        .stdout(Stdio::null())
        .status();
    let Ok(status) = status else {
        panic!("pkcs11-tool (opensc) is required for this test");
    };
    assert!(status.success());
    let slots = f.p().get_all_slots().unwrap();
    let labels: Vec<String> = slots
        .iter()
        .map(|s| f.p().get_token_info(*s).unwrap().label().to_string())
        .collect();
    assert!(labels.contains(&"other".to_string()), "{labels:?}");
    assert_eq!(
        slots
            .iter()
            .filter(|s| !f.p().get_token_info(**s).unwrap().token_initialized())
            .count(),
        1,
        "exactly one free slot"
    );
}
