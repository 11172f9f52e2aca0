//! A measurement, not a check (ignored by `cargo test`; `scripts/visibility`
//! runs it): how long after one process's `C_CreateObject` returns another
//! process's `C_FindObjects` finds the object, on a SQLite-backed token and
//! (with `DALEK_PKCS11_TEST_POSTGRES`) a PostgreSQL-backed one, side by side
//! in one run, and the PostgreSQL one again with every process listening
//! for the writers' notifications (`postgres_max_staleness`). The watcher
//! searches without pause; the writer makes one
//! object every 10 ms. Times are the host's realtime clock in both
//! processes (one machine). `VISIBILITY_OBJECTS` sets the count (200).
//!
//! The module's guarantee is that every call that starts after a write was
//! acknowledged sees it (docs/scale.md); what this measures is that bound
//! plus the cost of one search, as a watcher meets it.

mod common;
#[path = "common/pg.rs"]
mod pg;

use common::*;
use cryptoki::object::{Attribute, ObjectClass};
use std::io::{BufRead, BufReader};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i128
}

fn objects() -> usize {
    std::env::var("VISIBILITY_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

/// The watcher process: finds `v-0`, `v-1`, … in turn, printing when.
#[test]
#[ignore = "runs only as the watcher of the measurement below"]
fn worker() {
    let Ok(spec) = std::env::var("VISIBILITY_WORKER") else {
        return;
    };
    let (p, slot) = worker_module(&spec);
    let s = p.open_ro_session(slot).unwrap();
    println!("ready");
    for i in 0..objects() {
        let label = Attribute::Label(format!("v-{i}").into_bytes());
        loop {
            if !s
                .find_objects(std::slice::from_ref(&label))
                .unwrap()
                .is_empty()
            {
                println!("seen {i} {}", now_ns());
                break;
            }
        }
    }
}

/// (p50, p90, p99, max) in µs of `samples` (ns).
fn summary(mut samples: Vec<i128>) -> (f64, f64, f64, f64) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize] as f64 / 1e3;
    (at(0.5), at(0.9), at(0.99), at(1.0))
}

fn measure(storage: &str, name: &str) -> String {
    let f = Fixture::with_storage(storage);
    let slot = f.token("visible");
    let s = f.user(slot);
    let mut watcher = f.spawn_worker("VISIBILITY_WORKER", "visible");
    let mut out = BufReader::new(watcher.stdout.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("ready") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the watcher ended");
    }
    let n = objects();
    let mut acked = Vec::with_capacity(n);
    for i in 0..n {
        s.create_object(&[
            Attribute::Class(ObjectClass::DATA),
            Attribute::Token(true),
            Attribute::Private(false),
            Attribute::Label(format!("v-{i}").into_bytes()),
            Attribute::Value(vec![1]),
        ])
        .unwrap();
        acked.push(now_ns());
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut seen = vec![0i128; n];
    for l in out.lines() {
        let l = l.unwrap();
        let v: Vec<&str> = l.split(' ').collect();
        if v.len() == 3 && v[0] == "seen" {
            seen[v[1].parse::<usize>().unwrap()] = v[2].parse().unwrap();
        }
    }
    assert!(watcher.wait().unwrap().success());
    // Seen before the writer's call returned counts as 0.
    let lags: Vec<i128> = seen
        .iter()
        .zip(&acked)
        .map(|(s, a)| (s - a).max(0))
        .collect();
    let early = seen.iter().zip(&acked).filter(|(s, a)| s < a).count();
    let (p50, p90, p99, max) = summary(lags);
    format!(
        "visibility {name}: {n} objects: p50 {p50:.0} µs, p90 {p90:.0} µs, p99 {p99:.0} µs, \
         max {max:.0} µs ({early} seen before the writer's call returned)"
    )
}

#[test]
#[ignore = "a measurement: scripts/visibility"]
fn cross_process_visibility() {
    println!("{}", measure("sqlite", "SQLite"));
    if let Some(uri) = pg::pg_schema("visibility") {
        println!("{}", measure(&uri, "PostgreSQL"));
        // Both processes listening, a full look at least every second.
        // SAFETY: one test runs in this binary (the other is the watcher's
        // entry point, in its own process); nothing reads the environment
        // on another thread meanwhile.
        unsafe { std::env::set_var("DALEK_PKCS11_POSTGRES_MAX_STALENESS", "1") };
        let uri = pg::pg_schema("visibility_listening").unwrap();
        println!(
            "{}",
            measure(&uri, "PostgreSQL, postgres_max_staleness = 1 (notified)")
        );
        unsafe { std::env::remove_var("DALEK_PKCS11_POSTGRES_MAX_STALENESS") };
    }
}
