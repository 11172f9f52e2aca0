//! Storage integrity across processes and failures: a failed
//! `C_SetAttributeValue` changes nothing, a stale handle never revives an
//! object another process destroyed, and two processes changing one object
//! keep each other's changes.
//!
//! Second processes are this test binary run again with `--ignored --exact
//! worker` and the role in `STORAGE_WORKER`.
//!
//! The tests are grouped by subject in the modules below; this file holds
//! the helpers they share and the worker (which `--exact worker` must find
//! at the crate root).

#[path = "../common/mod.rs"]
mod common;

mod concurrent_changes;
mod damage;
mod fork;
mod reinit;
mod sealing;
mod token_files;

use common::*;
use cryptoki::error::RvError;
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::Session;
use cryptoki_sys::{CK_ULONG, CKR_OK};

fn spawn(f: &Fixture, spec: &str) -> std::process::Child {
    f.spawn_worker("STORAGE_WORKER", spec)
}

fn find(s: &Session, label: &[u8]) -> Vec<ObjectHandle> {
    s.find_objects(&[Attribute::Label(label.to_vec())]).unwrap()
}

fn get(s: &Session, h: ObjectHandle, ty: AttributeType) -> Vec<u8> {
    match s.get_attributes(h, &[ty]).unwrap().pop().unwrap() {
        Attribute::Label(v) | Attribute::Id(v) | Attribute::Value(v) => v,
        other => panic!("unexpected {other:?}"),
    }
}

/// A token secret key labelled `label`.
fn secret_key(s: &Session, label: &[u8]) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::GENERIC_SECRET),
        Attribute::Token(true),
        Attribute::Label(label.to_vec()),
        Attribute::Value(vec![7; 32]),
    ])
    .unwrap()
}

/// An Ed25519 token key pair, both halves labelled `label`.
fn key_pair(s: &Session, label: &[u8]) -> (ObjectHandle, ObjectHandle) {
    s.generate_key_pair(
        &Mechanism::EccEdwardsKeyPairGen,
        &[
            Attribute::Token(true),
            Attribute::EcParams(b"\x13\x0cedwards25519".to_vec()),
            Attribute::Label(label.to_vec()),
        ],
        &[Attribute::Token(true), Attribute::Label(label.to_vec())],
    )
    .unwrap()
}

fn tokens_dir(f: &Fixture) -> std::path::PathBuf {
    f.dir.path().join("tokens")
}

fn serial_of(f: &Fixture, slot: cryptoki::slot::Slot) -> String {
    f.p()
        .get_token_info(slot)
        .unwrap()
        .serial_number()
        .to_string()
}

fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn count(s: &Session, label: &[u8]) -> usize {
    find(s, label).len()
}

/// The bytes of a token's database and log files.
fn token_file_bytes(f: &Fixture, serial: &str) -> Vec<u8> {
    ["", "-wal"]
        .iter()
        .filter_map(|side| std::fs::read(tokens_dir(f).join(format!("{serial}.sqlite{side}"))).ok())
        .flatten()
        .collect()
}

/// Entry point of the worker process (skipped in a normal run).
#[test]
#[ignore = "runs only as the second process of the tests below"]
fn worker() {
    let Ok(spec) = std::env::var("STORAGE_WORKER") else {
        return;
    };
    let args: Vec<&str> = spec.split(' ').collect();
    if args[1] == "read-only" {
        read_only_worker(args[0]);
        println!("done");
        return;
    }
    if args[1] == "reinit" {
        reinit::reinit_worker(args[0]);
        println!("done");
        return;
    }
    let (p, slot) = worker_module(args[0]);
    let s = p.open_rw_session(slot).unwrap();
    s.login(cryptoki::session::UserType::User, Some(&pin(USER_PIN)))
        .unwrap();
    match args[1] {
        "destroy" => {
            for h in find(&s, args[2].as_bytes()) {
                s.destroy_object(h).unwrap();
            }
        }
        "relabel" => {
            let h = find(&s, args[2].as_bytes())[0];
            s.update_attributes(h, &[Attribute::Label(args[3].as_bytes().to_vec())])
                .unwrap();
        }
        "failed-set" => failed_set(&s),
        "create" => {
            secret_key(&s, args[2].as_bytes());
        }
        other => panic!("unknown role {other}"),
    }
    println!("done");
}

/// In the worker: a set the file refuses leaves the object as it was, in
/// this process and in the file (a later successful set must not carry the
/// failed value along).
fn failed_set(s: &Session) {
    let h = secret_key(s, b"before");
    limit_file_size(0);
    let e = rv_of(
        s.update_attributes(h, &[Attribute::Label(b"failed".to_vec())])
            .expect_err("the file takes no writes"),
    );
    assert!(
        matches!(e, RvError::DeviceMemory | RvError::DeviceError),
        "{e:?}"
    );
    limit_file_size(libc::RLIM_INFINITY);
    assert_eq!(
        get(s, h, AttributeType::Label),
        b"before",
        "the failed set changed the object"
    );
    s.update_attributes(h, &[Attribute::Id(b"later".to_vec())])
        .unwrap();
}

/// In the worker: the token's files are read-only to this process (as
/// nobody when run as root, since root writes anyway).
fn read_only_worker(label: &str) {
    // SAFETY: plain system calls on this process, before any thread uses
    // the module.
    unsafe {
        if libc::geteuid() == 0 {
            assert_eq!(libc::setgid(65534), 0);
            assert_eq!(libc::setuid(65534), 0);
        }
    }
    let (p, slot) = worker_module(label);
    let info = p.get_token_info(slot).unwrap();
    assert!(info.write_protected(), "CKF_WRITE_PROTECTED");
    assert_rv!(p.open_rw_session(slot), TokenWriteProtected);
    let s = p.open_ro_session(slot).unwrap();
    // Tries cannot be recorded: counted in this process.
    for _ in 0..3 {
        assert_rv!(
            s.login(cryptoki::session::UserType::User, Some(&pin("wrong-pin"))),
            PinIncorrect
        );
    }
    s.login(cryptoki::session::UserType::User, Some(&pin(USER_PIN)))
        .unwrap();
    let key = s
        .find_objects(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::Label(b"ro-key".to_vec()),
        ])
        .unwrap();
    assert_eq!(key.len(), 1, "the stored key is readable");
    let sig = s
        .sign(
            &Mechanism::Eddsa(cryptoki::mechanism::eddsa::EddsaParams::new(
                cryptoki::mechanism::eddsa::EddsaSignatureScheme::Pure,
            )),
            key[0],
            b"read-only",
        )
        .unwrap();
    assert_eq!(sig.len(), 64);
    // Session objects work; token objects need a read/write session.
    s.create_object(&[
        Attribute::Class(ObjectClass::DATA),
        Attribute::Token(false),
        Attribute::Value(b"x".to_vec()),
    ])
    .unwrap();
    assert_rv!(
        s.create_object(&[
            Attribute::Class(ObjectClass::DATA),
            Attribute::Token(true),
            Attribute::Value(b"x".to_vec()),
        ]),
        SessionReadOnly
    );
}
