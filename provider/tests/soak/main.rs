//! Soak: the storage measured from outside, as an operator would.
//!
//! - kills: a writer journals every call that returned `CKR_OK` and is
//!   SIGKILLed at random moments; after each kill a fresh process checks that
//!   the token is exactly the journal's state (or that plus the one call in
//!   flight);
//! - load: processes × threads of keygen/sign/find/set/destroy on one token
//!   with a reader, then every thread's final state is checked;
//! - corruption: single-bit flips in copies of a token, each opened by a
//!   fresh module: every outcome is classified (identical, refused, silently
//!   different, silently missing, crash, hang);
//! - fork: children forked while the parent's threads use the module write
//!   objects and exit; none may hang and none of their writes may be lost.
//!
//! Every phase prints its counts. The sizes come from the environment
//! (`SOAK_KILLS`, `SOAK_SECONDS`, `SOAK_PROCESSES`, `SOAK_THREADS`,
//! `SOAK_CORRUPTIONS`, `SOAK_FORKS`); the defaults are a smoke run that
//! `cargo test` makes, `scripts/soak` runs the long one. `SOAK_STORAGE`
//! (a PostgreSQL connection URI) runs kills, load and fork on a
//! PostgreSQL-backed token (`scripts/soak --storage`), and `SOAK_FAULTS`
//! lets the load phase meet failed calls (the server restarted or killed
//! under it; with `SOAK_PROXY` too, a fault proxy between the module and
//! the server resets, cuts, delays and stalls its connections): a call that failed may or may not have landed, so its object
//! may be there or not; everything acknowledged must be exactly as
//! acknowledged. Second processes are
//! this binary again (`--ignored --exact worker`, role in `SOAK_WORKER`).

#[path = "../common/mod.rs"]
mod common;
mod corruption;
#[path = "../common/fault_proxy.rs"]
mod fault_proxy;
mod forks;
mod kills;
mod load;
#[path = "../common/pg.rs"]
mod pg;

use common::*;
use cryptoki::context::Pkcs11;
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::eddsa::{EddsaParams, EddsaSignatureScheme};
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::{Session, UserType};
use fault_proxy::{Fault, FaultProxy};
use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::time::{Duration, Instant};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A generator seeded from the clock (or `SOAK_SEED`), the seed printed so
/// a failing run can be replayed.
fn seeded_rng(phase: &str) -> Rng {
    let seed = env_or(
        "SOAK_SEED",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1),
    ) | 1;
    println!("soak {phase}: seed {seed}");
    Rng(seed)
}

/// A fixture on `SOAK_STORAGE` (a fresh schema of that database) or, by
/// default, on SQLite.
fn soak_fixture(phase: &str) -> Fixture {
    match postgres_storage(phase) {
        Some(uri) => Fixture::with_storage(&uri),
        None => Fixture::new(),
    }
}

/// `SOAK_STORAGE` with a fresh schema `soak_<phase>` (`None`: SQLite).
fn postgres_storage(phase: &str) -> Option<String> {
    let base = std::env::var("SOAK_STORAGE")
        .ok()
        .filter(|s| !s.is_empty())?;
    Some(pg::fresh_schema(&base, &format!("soak_{phase}")))
}

/// Empties the fixture's token store (module stopped meanwhile).
fn reset_tokens(f: &mut Fixture, phase: &str) {
    f.stop();
    if postgres_storage(phase).is_none() {
        std::fs::remove_dir_all(f.dir.path().join("tokens")).unwrap();
    }
    f.start();
}

fn eddsa() -> Mechanism<'static> {
    Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Pure))
}

fn key_pair(s: &Session, label: &str) -> cryptoki::error::Result<(ObjectHandle, ObjectHandle)> {
    s.generate_key_pair(
        &Mechanism::EccEdwardsKeyPairGen,
        &[
            Attribute::Token(true),
            Attribute::EcParams(b"\x13\x0cedwards25519".to_vec()),
            Attribute::Label(label.as_bytes().to_vec()),
        ],
        &[
            Attribute::Token(true),
            Attribute::Label(label.as_bytes().to_vec()),
        ],
    )
}

fn by_label(s: &Session, class: ObjectClass, label: &str) -> Vec<ObjectHandle> {
    s.find_objects(&[
        Attribute::Class(class),
        Attribute::Label(label.as_bytes().to_vec()),
    ])
    .unwrap_or_default()
}

/// Entry point of the worker processes (skipped in a normal run).
#[test]
#[ignore = "runs only as a second process of the tests below"]
fn worker() {
    let Ok(spec) = std::env::var("SOAK_WORKER") else {
        return;
    };
    let args: Vec<String> = spec.split(' ').map(str::to_string).collect();
    match args[0].as_str() {
        "journal" => kills::journal_writer(&args[1]),
        "load" => load::load_worker(&args[1], args[2].parse().unwrap(), args[3].parse().unwrap()),
        "corrupt" => corruption::corruption_worker(&args[1..]),
        other => panic!("unknown role {other}"),
    }
}

/// The token as found: label → (private keys, public keys, CKA_ID of the
/// private key); each private key also signs and its public key verifies.
/// Label → (private keys, public keys, CKA_ID of the private key).
type Seen = BTreeMap<String, (usize, usize, Vec<u8>)>;

fn observed(s: &Session) -> Result<Seen, String> {
    let mut seen = Seen::new();
    for (class, private) in [
        (ObjectClass::PRIVATE_KEY, true),
        (ObjectClass::PUBLIC_KEY, false),
    ] {
        let handles = s
            .find_objects(&[Attribute::Class(class)])
            .map_err(|e| format!("find: {e}"))?;
        for h in handles {
            let attrs = s
                .get_attributes(h, &[AttributeType::Label, AttributeType::Id])
                .map_err(|e| format!("get: {e}"))?;
            let (mut label, mut id) = (String::new(), Vec::new());
            for a in attrs {
                match a {
                    Attribute::Label(l) => label = String::from_utf8_lossy(&l).into_owned(),
                    Attribute::Id(i) => id = i,
                    _ => {}
                }
            }
            let e = seen.entry(label).or_default();
            if private {
                e.0 += 1;
                e.2 = id;
            } else {
                e.1 += 1;
            }
        }
    }
    Ok(seen)
}
