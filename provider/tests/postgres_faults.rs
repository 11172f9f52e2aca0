//! The PostgreSQL token store through the module with a fault proxy
//! (`common/fault_proxy.rs`) between it and the server `scripts/test`
//! starts: connections reset mid-transaction, before and after `COMMIT`,
//! between calls; traffic stalled mid-statement; latency. A call the fault
//! hits fails with `CKR_DEVICE_ERROR`, never leaves part of an object,
//! and the next call works on a new connection, without `C_Finalize`.
//! Skipped without a server unless `DALEK_PKCS11_REQUIRE_POSTGRES` is set.

mod common;
#[path = "common/fault_proxy.rs"]
mod fault_proxy;
#[path = "common/pg.rs"]
mod pg;

use common::*;
use cryptoki::error::RvError;
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, ObjectClass, ObjectHandle};
use cryptoki::session::Session;
use fault_proxy::{Fault, FaultProxy};
use pg::*;
use std::time::{Duration, Instant};

/// A fixture whose module reaches schema `name` through a new proxy.
fn proxied(name: &str) -> Option<(Fixture, FaultProxy)> {
    let uri = pg_schema(name)?;
    let proxy = FaultProxy::in_front_of(&uri);
    Some((Fixture::with_storage(&proxy.uri(&uri)), proxy))
}

const P256: [u8; 10] = [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];

fn key_pair(s: &Session, label: &str) -> cryptoki::error::Result<(ObjectHandle, ObjectHandle)> {
    let l = Attribute::Label(label.as_bytes().to_vec());
    s.generate_key_pair(
        &Mechanism::EccKeyPairGen,
        &[
            Attribute::Token(true),
            Attribute::EcParams(P256.to_vec()),
            l.clone(),
        ],
        &[Attribute::Token(true), Attribute::Sign(true), l],
    )
}

/// How many halves of the pair `label` the token holds: (private, public).
fn halves(s: &Session, label: &str) -> (usize, usize) {
    let count = |class| {
        s.find_objects(&[
            Attribute::Class(class),
            Attribute::Label(label.as_bytes().to_vec()),
        ])
        .unwrap()
        .len()
    };
    (
        count(ObjectClass::PRIVATE_KEY),
        count(ObjectClass::PUBLIC_KEY),
    )
}

/// A write cut before it commits (at its first statement, a few
/// statements in, or in place of its `COMMIT`) fails, and leaves nothing:
/// the server rolled the transaction back. A write whose `COMMIT` reached
/// the server but whose reply was lost fails too (the module cannot know),
/// and leaves the whole pair. Either way the next calls work.
#[test]
fn a_connection_cut_mid_write_leaves_all_or_nothing() {
    let Some((f, proxy)) = proxied("cuts") else {
        return;
    };
    let slot = f.token("cuts");
    let s = f.user(slot);
    let cuts = [
        (Fault::CutInTransaction(1), (0, 0)),
        (Fault::CutInTransaction(3), (0, 0)),
        (Fault::CutInTransaction(6), (0, 0)),
        (Fault::CutBeforeCommit, (0, 0)),
        (Fault::CutAfterCommit, (1, 1)),
    ];
    for (i, (fault, left)) in cuts.into_iter().enumerate() {
        let label = format!("cut-{i}");
        let before = proxy.fired();
        proxy.set(fault);
        let r = key_pair(&s, &label);
        assert_eq!(proxy.fired(), before + 1, "{fault:?} did not fire");
        proxy.set(Fault::None);
        let Err(e) = r else {
            panic!("{fault:?}: the write succeeded")
        };
        assert_eq!(rv_of(e), RvError::DeviceError, "{fault:?}");
        assert_eq!(halves(&s, &label), left, "{fault:?}");
        // The next write works, on a new connection.
        let (_, private) = key_pair(&s, &format!("after-{i}")).unwrap();
        s.sign(&Mechanism::Ecdsa, private, &[7; 32]).unwrap();
    }
    // What a new process sees.
    drop(s);
    let mut f = f;
    f.restart();
    let s = f.user(f.slot_labelled("cuts"));
    for (i, (_, left)) in cuts.into_iter().enumerate() {
        assert_eq!(halves(&s, &format!("cut-{i}")), left);
        assert_eq!(halves(&s, &format!("after-{i}")), (1, 1));
    }
}

/// Connections reset between calls (an idle connection dropped by a
/// firewall or a failover): the next call notices, connects again and
/// succeeds; nothing reached the server, so trying once more is safe.
#[test]
fn connections_reset_between_calls_are_made_again_unnoticed() {
    let Some((f, proxy)) = proxied("resets") else {
        return;
    };
    let slot = f.token("resets");
    let s = f.user(slot);
    for i in 0..5 {
        assert!(proxy.reset_all() >= 1, "the module holds a connection");
        data_object(&s, &format!("r-{i}"), b"v");
        assert!(proxy.reset_all() >= 1);
        assert_eq!(find(&s, &format!("r-{i}")).len(), 1);
    }
}

/// Traffic stalled mid-statement (a network partition that drops nothing
/// and delivers nothing): the call fails with `CKR_DEVICE_ERROR` once the
/// timeout (`postgres_timeout`, 5 s by default) has passed, not later
/// than a generous bound; a key the session holds still signs; after the
/// stall the next call works and the stalled write is whole or absent.
#[test]
fn a_stall_fails_calls_after_the_timeout_and_they_work_after() {
    let Some((f, proxy)) = proxied("stall") else {
        return;
    };
    let slot = f.token("stall");
    let s = f.user(slot);
    let (_, held) = key_pair(&s, "held").unwrap();
    proxy.set(Fault::Stall);
    let started = Instant::now();
    let r = key_pair(&s, "stalled");
    assert_eq!(rv_of(r.unwrap_err()), RvError::DeviceError);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "a stalled call must end (it took {:?})",
        started.elapsed()
    );
    let find = s.find_objects(&[Attribute::Label(b"held".to_vec())]);
    assert_eq!(rv_of(find.unwrap_err()), RvError::DeviceError);
    s.sign(&Mechanism::Ecdsa, held, &[1; 32]).unwrap();
    proxy.set(Fault::None);
    assert_eq!(halves(&s, "held"), (1, 1));
    let (pr, pu) = halves(&s, "stalled");
    assert_eq!(pr, pu, "the stalled pair is whole or absent");
    key_pair(&s, "after").unwrap();
}

/// Latency on every message: slower, and nothing else changes.
#[test]
fn latency_changes_nothing_but_the_time() {
    let Some((f, proxy)) = proxied("latency") else {
        return;
    };
    let slot = f.token("latency");
    let s = f.user(slot);
    proxy.set(Fault::Latency(Duration::from_millis(15)));
    let (_, private) = key_pair(&s, "slow").unwrap();
    s.sign(&Mechanism::Ecdsa, private, &[2; 32]).unwrap();
    let h = data_object(&s, "slow-data", b"x");
    assert_eq!(find(&s, "slow-data"), vec![h]);
    s.destroy_object(h).unwrap();
    assert!(find(&s, "slow-data").is_empty());
    assert_eq!(halves(&s, "slow"), (1, 1));
}
