//! Storage integrity across processes and failures: a failed
//! `C_SetAttributeValue` changes nothing, a stale handle never revives an
//! object another process destroyed, and two processes changing one object
//! keep each other's changes.
//!
//! Second processes are this test binary run again with `--ignored --exact
//! worker` and the role in `STORAGE_WORKER`.

mod common;

use common::*;
use cryptoki::error::RvError;
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::Session;

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

/// Entry point of the worker process (skipped in a normal run).
#[test]
#[ignore = "runs only as the second process of the tests below"]
fn worker() {
    let Ok(spec) = std::env::var("STORAGE_WORKER") else {
        return;
    };
    let args: Vec<&str> = spec.split(' ').collect();
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

#[test]
fn a_failed_set_changes_nothing() {
    let mut f = Fixture::new();
    f.token("failed");
    finish_worker(spawn(&f, "failed failed-set"));
    f.restart();
    let slot = f.p().get_slots_with_token().unwrap()[0];
    let s = f.user(slot);
    assert!(
        find(&s, b"failed").is_empty(),
        "the failed label was stored"
    );
    let h = find(&s, b"before");
    assert_eq!(h.len(), 1);
    assert_eq!(get(&s, h[0], AttributeType::Id), b"later");
}

#[test]
fn a_stale_handle_never_revives_a_destroyed_object() {
    let mut f = Fixture::new();
    let slot = f.token("stale");
    let s = f.user(slot);
    let (public, private) = key_pair(&s, b"doomed");
    let data = secret_key(&s, b"doomed-data");
    finish_worker(spawn(&f, "stale destroy doomed"));
    finish_worker(spawn(&f, "stale destroy doomed-data"));
    // This process still holds handles from before the destruction.
    assert_rv!(
        s.update_attributes(private, &[Attribute::Label(b"back".to_vec())]),
        ObjectHandleInvalid
    );
    assert_rv!(
        s.update_attributes(public, &[Attribute::Id(b"back".to_vec())]),
        ObjectHandleInvalid
    );
    assert_rv!(
        s.copy_object(data, &[Attribute::Label(b"back".to_vec())]),
        ObjectHandleInvalid
    );
    assert_rv!(s.destroy_object(data), ObjectHandleInvalid);
    drop(s);
    f.restart();
    let s = f.user(slot);
    assert!(find(&s, b"back").is_empty(), "a destroyed object came back");
    assert!(find(&s, b"doomed").is_empty());
    assert!(
        s.find_objects(&[Attribute::Id(b"back".to_vec())])
            .unwrap()
            .is_empty()
    );
}

#[test]
fn two_processes_keep_each_others_changes() {
    let mut f = Fixture::new();
    let slot = f.token("lost");
    let s = f.user(slot);
    let h = secret_key(&s, b"first");
    // Another process relabels the object; this one, on its old view, sets
    // only CKA_ID and must not put the old label back.
    finish_worker(spawn(&f, "lost relabel first second"));
    s.update_attributes(h, &[Attribute::Id(b"mine".to_vec())])
        .unwrap();
    assert_eq!(get(&s, h, AttributeType::Label), b"second");
    drop(s);
    f.restart();
    let s = f.user(slot);
    let found = find(&s, b"second");
    assert_eq!(found.len(), 1, "the other process's label was lost");
    assert_eq!(get(&s, found[0], AttributeType::Id), b"mine");
    // A copy through the old view copies the object as it is now.
    let copy = s.copy_object(found[0], &[Attribute::Token(false)]).unwrap();
    assert_eq!(get(&s, copy, AttributeType::Label), b"second");
}
