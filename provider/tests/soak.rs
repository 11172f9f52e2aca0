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
//! under it): a call that failed may or may not have landed, so its object
//! may be there or not; everything acknowledged must be exactly as
//! acknowledged. Second processes are
//! this binary again (`--ignored --exact worker`, role in `SOAK_WORKER`).

mod common;

use common::*;
use cryptoki::context::Pkcs11;
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::eddsa::{EddsaParams, EddsaSignatureScheme};
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::{Session, UserType};
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
    let schema = format!("soak_{phase}");
    let out = std::process::Command::new("psql")
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", &base, "-c"])
        .arg(format!(
            "SET client_min_messages = warning; DROP SCHEMA IF EXISTS {schema} CASCADE; \
             CREATE SCHEMA {schema}"
        ))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sep = if base.contains('?') { '&' } else { '?' };
    Some(format!("{base}{sep}options=-csearch_path%3D{schema}"))
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
        "journal" => journal_writer(&args[1]),
        "load" => load_worker(&args[1], args[2].parse().unwrap(), args[3].parse().unwrap()),
        "corrupt" => corruption_worker(&args[1..]),
        other => panic!("unknown role {other}"),
    }
}

// ---------------------------------------------------------------- kills --

/// The writer's calls, in order: for step i, create pair `k-i`; on every
/// third step set its CKA_ID; on odd steps destroy the pair of step i-1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Create(u64),
    SetId(u64),
    Destroy(u64),
}

fn ops() -> impl Iterator<Item = Op> {
    (0..).flat_map(|i| {
        let mut v = vec![Op::Create(i)];
        if i % 3 == 0 {
            v.push(Op::SetId(i));
        }
        if i % 2 == 1 {
            v.push(Op::Destroy(i - 1));
        }
        v
    })
}

/// What the token holds after the first `n` calls: label → CKA_ID of the
/// private key (the public key has the same label).
fn state_after(n: usize) -> BTreeMap<String, Vec<u8>> {
    let mut state = BTreeMap::new();
    for op in ops().take(n) {
        match op {
            Op::Create(i) => {
                state.insert(format!("k-{i}"), Vec::new());
            }
            Op::SetId(i) => {
                state.insert(format!("k-{i}"), format!("id-{i}").into_bytes());
            }
            Op::Destroy(i) => {
                state.remove(&format!("k-{i}"));
            }
        }
    }
    state
}

fn journal_writer(label: &str) {
    let (p, slot) = worker_module(label);
    let s = p.open_rw_session(slot).unwrap();
    s.login(UserType::User, Some(&pin(USER_PIN))).unwrap();
    let mut out = std::io::stdout();
    for (n, op) in ops().enumerate() {
        match op {
            Op::Create(i) => {
                key_pair(&s, &format!("k-{i}")).unwrap();
            }
            Op::SetId(i) => {
                let h = by_label(&s, ObjectClass::PRIVATE_KEY, &format!("k-{i}"));
                s.update_attributes(h[0], &[Attribute::Id(format!("id-{i}").into_bytes())])
                    .unwrap();
            }
            Op::Destroy(i) => {
                // One pair, two calls: private first, public second, each
                // journaled (a kill between them leaves the public half).
                let label = format!("k-{i}");
                for h in by_label(&s, ObjectClass::PRIVATE_KEY, &label) {
                    s.destroy_object(h).unwrap();
                }
                writeln!(out, "half {n}").and_then(|_| out.flush()).unwrap();
                for h in by_label(&s, ObjectClass::PUBLIC_KEY, &label) {
                    s.destroy_object(h).unwrap();
                }
            }
        }
        writeln!(out, "done {n}").and_then(|_| out.flush()).unwrap();
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

#[test]
fn soak_kills_lose_nothing() {
    let kills = env_or("SOAK_KILLS", 12);
    let mut rng = seeded_rng("kills");
    let mut f = soak_fixture("kills");
    let slot = f.token("journal");
    let (mut lost, mut checks, mut max_step) = (0u64, 0u64, 0usize);
    for round in 0..kills {
        let mut child = f.spawn_worker("SOAK_WORKER", "journal journal");
        std::thread::sleep(Duration::from_millis(20 + rng.below(400)));
        child.kill().unwrap();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        // Complete lines only: the last one may have been cut by the kill.
        let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
        let done = complete
            .lines()
            .filter_map(|l| l.strip_prefix("done "))
            .filter_map(|n| n.parse::<usize>().ok())
            .max()
            .map_or(0, |n| n + 1);
        let half = complete
            .lines()
            .filter_map(|l| l.strip_prefix("half "))
            .filter_map(|n| n.parse::<usize>().ok())
            .any(|n| n == done);
        f.restart();
        let s = f.user(slot);
        let seen = observed(&s).map_err(|e| format!("round {round}: {e}"));
        drop(s);
        let seen = match seen {
            Ok(seen) => seen,
            Err(e) => {
                println!("soak kills: {e}");
                lost += 1;
                continue;
            }
        };
        // Before or after the call in flight (a destroy may be half done).
        let candidates = [state_after(done), state_after(done + 1)];
        let fits = |state: &BTreeMap<String, Vec<u8>>, half_destroyed: Option<&str>| {
            let whole = seen.iter().all(|(label, (private, public, id))| {
                if Some(label.as_str()) == half_destroyed && *private == 0 && *public == 1 {
                    return true;
                }
                state
                    .get(label)
                    .is_some_and(|want| *private == 1 && *public == 1 && id == want)
            });
            whole && state.keys().all(|l| seen.contains_key(l))
        };
        let in_flight_destroy = ops().nth(done).and_then(|op| match op {
            Op::Destroy(i) => Some(format!("k-{i}")),
            _ => None,
        });
        let ok = fits(&candidates[0], None)
            || fits(&candidates[1], None)
            || (half || in_flight_destroy.is_some())
                && fits(&candidates[0], in_flight_destroy.as_deref());
        checks += 1;
        if !ok {
            lost += 1;
            println!("soak kills: round {round} after {done} calls: token {seen:?}");
        }
        max_step = max_step.max(done);
        // The next writer continues on the same token: start it afresh.
        reset_tokens(&mut f, "kills");
        f.token("journal");
    }
    println!(
        "soak kills: {kills} kills, {checks} checks, {lost} lost or inconsistent, \
         up to {max_step} committed calls before a kill"
    );
    assert_eq!(lost, 0);
}

// ----------------------------------------------------------------- load --

fn load_worker(label: &str, threads: usize, millis: u64) {
    let (p, slot) = worker_module(label);
    let login = p.open_rw_session(slot).unwrap();
    let _ = login.login(UserType::User, Some(&pin(USER_PIN)));
    let end = Instant::now() + Duration::from_millis(millis);
    let pid = std::process::id();
    type Outcome = (u64, Vec<String>, Vec<String>, Vec<String>);
    let results: Vec<Outcome> = std::thread::scope(|sc| {
        let p = &p;
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                sc.spawn(move || {
                    // A session lost to a failure (the server restarted
                    // under it) is opened again.
                    let open = || loop {
                        match p.open_rw_session(slot) {
                            Ok(s) => break s,
                            Err(_) => std::thread::sleep(Duration::from_millis(50)),
                        }
                    };
                    let s = open();
                    let (mut errors, mut live, mut gone, mut uncertain) =
                        (0u64, Vec::new(), Vec::new(), Vec::new());
                    let mut i = 0;
                    while Instant::now() < end {
                        let label = format!("l-{pid}-{t}-{i}");
                        i += 1;
                        let Ok((public, private)) = key_pair(&s, &label) else {
                            errors += 1;
                            uncertain.push(label);
                            continue;
                        };
                        let ok = s
                            .sign(&eddsa(), private, label.as_bytes())
                            .and_then(|sig| s.verify(&eddsa(), public, label.as_bytes(), &sig))
                            .is_ok()
                            && by_label(&s, ObjectClass::PRIVATE_KEY, &label).len() == 1
                            && s.update_attributes(private, &[Attribute::Id(vec![t as u8])])
                                .is_ok();
                        if !ok {
                            errors += 1;
                        }
                        if i % 2 == 0 {
                            if s.destroy_object(private).is_err()
                                || s.destroy_object(public).is_err()
                            {
                                errors += 1;
                                uncertain.push(label);
                            } else {
                                gone.push(label);
                            }
                        } else {
                            live.push(label);
                        }
                    }
                    (errors, live, gone, uncertain)
                })
            })
            .collect();
        // A reader: everything it finds signs, or was destroyed meanwhile.
        let reader = sc.spawn(move || {
            let s = p.open_ro_session(slot).unwrap();
            let mut errors = 0u64;
            while Instant::now() < end {
                let Ok(keys) = s.find_objects(&[Attribute::Class(ObjectClass::PRIVATE_KEY)]) else {
                    errors += 1;
                    continue;
                };
                for k in keys.into_iter().take(20) {
                    if let Err(cryptoki::error::Error::Pkcs11(rv, _)) = s.sign(&eddsa(), k, b"r")
                        && rv != cryptoki::error::RvError::KeyHandleInvalid
                        && rv != cryptoki::error::RvError::ObjectHandleInvalid
                    {
                        errors += 1;
                    }
                }
            }
            (errors, Vec::new(), Vec::new(), Vec::new())
        });
        let mut all: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
        all.push(reader.join().unwrap());
        all
    });
    for (errors, live, gone, uncertain) in results {
        println!("errors {errors}");
        for l in live {
            println!("live {l}");
        }
        for l in uncertain {
            println!("uncertain {l}");
        }
        for l in gone {
            println!("gone {l}");
        }
    }
}

#[test]
fn soak_processes_and_threads_lose_nothing() {
    let seconds = env_or("SOAK_SECONDS", 2);
    let processes = env_or("SOAK_PROCESSES", 2);
    let threads = env_or("SOAK_THREADS", 2);
    let faults = std::env::var_os("SOAK_FAULTS").is_some();
    let mut f = soak_fixture("load");
    let slot = f.token("load");
    let children: Vec<_> = (0..processes)
        .map(|_| {
            f.spawn_worker(
                "SOAK_WORKER",
                &format!("load load {threads} {}", seconds * 1000),
            )
        })
        .collect();
    let (mut errors, mut live, mut gone, mut uncertain) =
        (0u64, Vec::new(), Vec::new(), Vec::new());
    for c in children {
        for line in finish_worker(c).lines() {
            if let Some(n) = line.strip_prefix("errors ") {
                errors += n.parse::<u64>().unwrap();
            } else if let Some(l) = line.strip_prefix("live ") {
                live.push(l.to_string());
            } else if let Some(l) = line.strip_prefix("gone ") {
                gone.push(l.to_string());
            } else if let Some(l) = line.strip_prefix("uncertain ") {
                uncertain.push(l.to_string());
            }
        }
    }
    f.restart();
    let s = f.user(slot);
    let seen = observed(&s).unwrap();
    let lost = live
        .iter()
        .filter(|l| seen.get(*l).is_none_or(|(pr, pu, _)| *pr != 1 || *pu != 1))
        .count();
    let revived = gone.iter().filter(|l| seen.contains_key(*l)).count();
    let known: HashSet<&String> = live.iter().chain(&gone).chain(&uncertain).collect();
    let strays = seen.keys().filter(|l| !known.contains(l)).count();
    // A pair the failed call left: both halves or neither (one transaction).
    // (A destruction is two calls: one of them failing may leave half.)
    let uncertain_set: HashSet<&String> = uncertain.iter().collect();
    let torn = seen
        .iter()
        .filter(|(l, (pr, pu, _))| (*pr != 1 || *pu != 1) && !uncertain_set.contains(l))
        .count();
    println!(
        "soak load: {processes} processes x {threads} threads x {seconds} s: \
         {} pairs kept, {} destroyed, {} calls failed and were left to chance, \
         {errors} errors, {lost} lost, {revived} revived, {strays} unexplained, {torn} torn",
        live.len(),
        gone.len(),
        uncertain.len()
    );
    if !faults {
        assert_eq!(errors, 0);
    }
    assert_eq!((lost, revived, strays, torn), (0, 0, 0, 0));
}

// ----------------------------------------------------------- corruption --

/// A canonical listing of a token as a consumer sees it: every object's
/// class, label, id and public value, a signature or MAC by every key (all
/// deterministic), or the first error; and whether the token is flagged
/// damaged (`model`, docs/SECURITY.md "A damaged token").
fn listing(p: &Pkcs11) -> Result<(usize, String, bool), String> {
    let slot = p
        .get_slots_with_token()
        .map_err(|e| format!("slots: {e}"))?
        .into_iter()
        .find(|s| p.get_token_info(*s).is_ok_and(|t| t.label() == "victim"))
        .ok_or("token absent")?;
    let flagged = |p: &Pkcs11| {
        p.get_token_info(slot)
            .map(|t| t.model() == "DAMAGED")
            .map_err(|e| format!("info: {e}"))
    };
    let s = p.open_ro_session(slot).map_err(|e| format!("open: {e}"))?;
    s.login(UserType::User, Some(&pin(USER_PIN)))
        .map_err(|e| format!("login: {e}"))?;
    let handles = s.find_objects(&[]).map_err(|e| format!("find: {e}"))?;
    let mut lines = Vec::new();
    for h in &handles {
        let attrs = s
            .get_attributes(
                *h,
                &[
                    AttributeType::Class,
                    AttributeType::Label,
                    AttributeType::Id,
                    AttributeType::EcPoint,
                    AttributeType::Value,
                    AttributeType::Sensitive,
                ],
            )
            .map_err(|e| format!("get: {e}"))?;
        let mut line = format!("{attrs:?}");
        let class = attrs.iter().find_map(|a| match a {
            Attribute::Class(c) => Some(*c),
            _ => None,
        });
        let proof = match class {
            Some(ObjectClass::PRIVATE_KEY) => Some(s.sign(&eddsa(), *h, b"proof")),
            Some(ObjectClass::SECRET_KEY) => Some(s.sign(&Mechanism::Sha256Hmac, *h, b"proof")),
            _ => None,
        };
        if let Some(proof) = proof {
            line.push_str(&format!(" {:?}", proof.map_err(|e| format!("use: {e}"))?));
        }
        lines.push(line);
    }
    lines.sort();
    Ok((handles.len(), lines.join("\n"), flagged(p)?))
}

/// In the worker: one module per token copy in `dirs`, each listed.
fn corruption_worker(dirs: &[String]) {
    let mut out = std::io::stdout();
    for (i, dir) in dirs.iter().enumerate() {
        writeln!(out, "start {i}")
            .and_then(|_| out.flush())
            .unwrap();
        // SAFETY: this worker is single-threaded while it changes the
        // environment the module reads at C_Initialize.
        unsafe { std::env::set_var("DALEK_PKCS11_TOKEN_DIR", dir) };
        let p = Pkcs11::new(module_path()).unwrap();
        let r = p
            .initialize(cryptoki::context::CInitializeArgs::new(
                cryptoki::context::CInitializeFlags::OS_LOCKING_OK,
            ))
            .map_err(|e| format!("init: {e}"))
            .and_then(|()| listing(&p));
        let _ = p.finalize();
        let line = match r {
            Ok((n, text, flagged)) => {
                format!("ok {n} {:016x} {flagged}", fnv(text.as_bytes()))
            }
            Err(e) => format!("err {e}"),
        };
        writeln!(out, "result {i} {line}")
            .and_then(|_| out.flush())
            .unwrap();
    }
}

/// The offsets of the bytes that hold something in the root pages of the
/// SQLite indexes of the database `db` (read from a copy made in `scratch`).
fn used_index_bytes(db: &std::path::Path, scratch: &std::path::Path) -> Vec<usize> {
    std::fs::create_dir_all(scratch).unwrap();
    let copy = scratch.join("index-probe.sqlite");
    std::fs::copy(db, &copy).unwrap();
    let bytes = std::fs::read(&copy).unwrap();
    let c = rusqlite::Connection::open(&copy).unwrap();
    let page: usize = c
        .query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))
        .unwrap() as usize;
    let mut stmt = c
        .prepare("SELECT rootpage FROM sqlite_schema WHERE type = 'index'")
        .unwrap();
    let roots: Vec<usize> = stmt
        .query_map([], |r| r.get::<_, i64>(0))
        .unwrap()
        .map(|r| r.unwrap() as usize)
        .collect();
    roots
        .into_iter()
        .flat_map(|root| (root - 1) * page..root * page)
        .filter(|&i| i < bytes.len() && bytes[i] != 0)
        .collect()
}

/// True when SQLite's `integrity_check` fails on the database `db` (or
/// cannot run on it).
fn sqlite_sees_damage(db: &std::path::Path) -> bool {
    let Ok(c) = rusqlite::Connection::open(db) else {
        return true;
    };
    let first: rusqlite::Result<String> = c.query_row("PRAGMA integrity_check", [], |r| r.get(0));
    first.map_or(true, |l| l != "ok")
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[test]
fn soak_corruption_is_never_served_silently() {
    let trials = env_or("SOAK_CORRUPTIONS", 24) as usize;
    let mut rng = seeded_rng("corruption");
    let mut f = Fixture::new();
    let slot = f.token("victim");
    {
        let s = f.user(slot);
        for i in 0..4 {
            key_pair(&s, &format!("pair-{i}")).unwrap();
        }
        s.create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Token(true),
            Attribute::Sign(true),
            Attribute::Label(b"mac".to_vec()),
            Attribute::Value(vec![5; 32]),
        ])
        .unwrap();
        s.create_object(&[
            Attribute::Class(ObjectClass::DATA),
            Attribute::Token(true),
            Attribute::Private(false),
            Attribute::Label(b"data".to_vec()),
            Attribute::Value(b"public data".to_vec()),
        ])
        .unwrap();
    }
    f.stop(); // the log is folded into the database file
    let pristine = f.dir.path().join("tokens");
    let db_name = std::fs::read_dir(&pristine)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().into_string().unwrap())
        .find(|n| n.ends_with(".sqlite"))
        .unwrap();
    let db = std::fs::read(pristine.join(&db_name)).unwrap();
    let used: Vec<usize> = (0..db.len()).filter(|&i| db[i] != 0).collect();
    let index_bytes = used_index_bytes(&pristine.join(&db_name), &f.dir.path().join("probe"));
    assert!(!index_bytes.is_empty());
    let work = f.dir.path().join("copies");
    let mut dirs = vec![pristine.display().to_string()];
    // Per copy: whether SQLite's integrity check fails on it.
    let mut sqlite_damaged = vec![false];
    for t in 0..trials {
        let dir = work.join(format!("t{t}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut bytes = db.clone();
        // A third of the flips anywhere, a third in bytes that hold
        // something (most of a small database is empty page space), a
        // third in bytes of SQLite's indexes (damage outside the records,
        // which their MACs do not cover).
        let at = match t % 3 {
            0 => rng.below(bytes.len() as u64) as usize,
            1 => used[rng.below(used.len() as u64) as usize],
            _ => index_bytes[rng.below(index_bytes.len() as u64) as usize],
        };
        bytes[at] ^= 1 << rng.below(8);
        std::fs::write(dir.join(&db_name), bytes).unwrap();
        // What SQLite's own check says of the copy (in this process: the
        // copy is a file of its own, which the module here never opens),
        // on a copy of the copy, since a check may write a log beside it.
        let probe = work.join("probe.sqlite");
        std::fs::copy(dir.join(&db_name), &probe).unwrap();
        sqlite_damaged.push(sqlite_sees_damage(&probe));
        for side in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{side}", probe.display()));
        }
        dirs.push(dir.display().to_string());
    }
    // Batches of copies per worker process, so a crash or hang costs one
    // trial: the next batch starts after the trial that failed.
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    // The outcomes of the copies SQLite's own check finds damaged.
    let mut outside: BTreeMap<&str, usize> = BTreeMap::new();
    let mut reference: Option<(usize, String)> = None;
    let mut next = 0;
    while next < dirs.len() {
        let batch = &dirs[next..(next + 64).min(dirs.len())];
        let mut child = f.spawn_worker("SOAK_WORKER", &format!("corrupt {}", batch.join(" ")));
        let deadline = Instant::now() + Duration::from_secs(30 + 2 * batch.len() as u64);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if Instant::now() > deadline {
                child.kill().unwrap();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut finished = 0;
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("result ") else {
                continue;
            };
            let mut parts = rest.splitn(4, ' ');
            let i: usize = parts.next().unwrap().parse().unwrap();
            finished = finished.max(i + 1);
            let global = next + i;
            let kind = parts.next().unwrap();
            if global == 0 {
                assert_eq!(kind, "ok", "the pristine token must list: {line}");
                let n = parts.next().unwrap().parse().unwrap();
                let (hash, flagged) = parts.next().unwrap().split_once(' ').unwrap();
                assert_eq!(flagged, "false", "the pristine token is not flagged");
                reference = Some((n, hash.to_string()));
                continue;
            }
            let (n_ref, hash_ref) = reference.as_ref().unwrap();
            let seen_by_sqlite = sqlite_damaged[global];
            let outcome = if kind == "err" {
                "refused with an error"
            } else {
                let n: usize = parts.next().unwrap().parse().unwrap();
                let (hash, flagged) = parts.next().unwrap().split_once(' ').unwrap();
                let flagged = flagged == "true";
                if n == *n_ref && hash == hash_ref {
                    match (flagged, seen_by_sqlite) {
                        (true, _) => "identical, flagged damaged (read-only)",
                        (false, false) => "identical (unused bytes)",
                        (false, true) => "SILENTLY DAMAGED (SQLite's check fails, not flagged)",
                    }
                } else if n < *n_ref {
                    "SILENTLY MISSING"
                } else {
                    "SILENTLY DIFFERENT"
                }
            };
            *outcomes.entry(outcome).or_default() += 1;
            if seen_by_sqlite {
                *outside.entry(outcome).or_default() += 1;
            }
            if outcome.starts_with("SILENTLY") {
                println!("soak corruption: {} -> {outcome}", batch[i]);
            }
        }
        if finished < batch.len() {
            let what = if status.is_none() { "HANG" } else { "CRASH" };
            *outcomes.entry(what).or_default() += 1;
            println!("soak corruption: {} -> {what}", batch[finished]);
            finished += 1;
        }
        next += finished;
    }
    println!("soak corruption: {trials} single-bit flips: {outcomes:?}");
    println!(
        "soak damage: {} of the copies fail SQLite's integrity check (damage outside the records too): {outside:?}",
        sqlite_damaged.iter().filter(|d| **d).count()
    );
    let bad: usize = outcomes
        .iter()
        .filter(|(k, _)| k.starts_with("SILENTLY") || **k == "HANG" || **k == "CRASH")
        .map(|(_, v)| v)
        .sum();
    assert_eq!(bad, 0, "{outcomes:?}");
}

// ----------------------------------------------------------------- fork --

#[test]
fn soak_forks_neither_hang_nor_lose_writes() {
    let forks = env_or("SOAK_FORKS", 8);
    let mut f = soak_fixture("forks");
    let slot = f.token("forks");
    let logged_in = f.user(slot);
    key_pair(&logged_in, "busy").unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let l = raw();
    let (mut hung, mut failed) = (0, 0);
    std::thread::scope(|sc| {
        for _ in 0..2 {
            sc.spawn(|| {
                let s = f.p().open_rw_session(slot).unwrap();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for h in by_label(&s, ObjectClass::PRIVATE_KEY, "busy") {
                        let _ = s.sign(&eddsa(), h, b"busy");
                        let _ = s.update_attributes(h, &[Attribute::Id(vec![1])]);
                    }
                }
            });
        }
        for n in 0..forks {
            std::thread::sleep(Duration::from_millis(3));
            // SAFETY: fork in a test process; the child calls the module
            // through cryptoki and its function list, then _exit.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0);
            if pid == 0 {
                let ok = (|| {
                    let p = Pkcs11::new(module_path()).ok()?;
                    p.initialize(cryptoki::context::CInitializeArgs::new(
                        cryptoki::context::CInitializeFlags::OS_LOCKING_OK,
                    ))
                    .ok()?;
                    let slot = p
                        .get_slots_with_token()
                        .ok()?
                        .into_iter()
                        .find(|s| p.get_token_info(*s).is_ok_and(|t| t.label() == "forks"))?;
                    let s = p.open_rw_session(slot).ok()?;
                    s.login(UserType::User, Some(&pin(USER_PIN))).ok()?;
                    key_pair(&s, &format!("child-{n}")).ok()
                })()
                .is_some();
                let _ = l;
                // SAFETY: leaves the child without the parent's destructors.
                unsafe { libc::_exit(if ok { 0 } else { 1 }) };
            }
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                let mut status = 0;
                // SAFETY: waits for our own child.
                let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
                if r == pid {
                    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
                        failed += 1;
                    }
                    break;
                }
                if Instant::now() > deadline {
                    // SAFETY: kills and reaps our own child.
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                        libc::waitpid(pid, &mut status, 0);
                    }
                    hung += 1;
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    drop(logged_in);
    f.restart();
    let s = f.user(slot);
    let lost = (0..forks)
        .filter(|n| by_label(&s, ObjectClass::PRIVATE_KEY, &format!("child-{n}")).len() != 1)
        .count();
    println!(
        "soak fork: {forks} children forked under load: {hung} hung, {failed} failed, {lost} writes lost"
    );
    assert_eq!((hung, failed, lost), (0, 0, 0));
}
