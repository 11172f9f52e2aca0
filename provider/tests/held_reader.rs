//! A reader outside the module that holds a read transaction on a token
//! file (a `sqlite3 -readonly` shell inside `BEGIN`, a long `.backup`)
//! neither blocks nor fails the module's writes: WAL mode lets readers and
//! writers run together, and the checkpoint that clears destroyed values
//! out of the log (docs/SECURITY.md, "Secure deletion") must not wait for
//! such a reader while it holds the write lock.
//!
//! Two writers (this process and a worker process, this binary run again
//! with `--ignored --exact worker`) each generate and destroy token keys
//! while a Python `sqlite3` reader, a separate process (two copies of
//! SQLite in one process must not open the same file), holds its read
//! transaction. Every call must succeed and the whole must end within a
//! generous bound (a watchdog fails the test past it): a destruction whose
//! checkpoint waits out the busy timeout (30 s) for the reader, holding the
//! write lock, cannot reach it, and makes the other writer fail with
//! "database is locked". Once the reader has ended, the next write leaves
//! no trace of the objects destroyed while it read.

mod common;

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, ObjectClass, ObjectHandle};
use cryptoki::session::Session;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Generate-and-destroy rounds per writer.
const ROUNDS: usize = 100;

/// Far above what the rounds take on any machine (well under a second
/// each), far below what they take when each waits out a busy timeout.
const LIMIT: Duration = Duration::from_secs(60);

/// The reader: a read-only connection (`mode=ro`), a read transaction
/// begun and held until a line arrives on standard input (the marker file
/// says it has begun). It prints the store's generation (bumped by every
/// commit) at the start and at the end of its transaction, then after it.
const PYTHON: &str = r#"
import sqlite3, sys
path, marker = sys.argv[1:3]
c = sqlite3.connect("file:" + path + "?mode=ro", uri=True, isolation_level=None)
LOOK = "SELECT count(*), (SELECT value FROM meta WHERE name = 'generation') FROM objects"
c.execute("BEGIN")
g1 = c.execute(LOOK).fetchone()[1]
open(marker, "w").close()
sys.stdin.readline()
g2 = c.execute(LOOK).fetchone()[1]
c.execute("COMMIT")
g3 = c.execute(LOOK).fetchone()[1]
c.close()
print(g1, g2, g3)
"#;

/// Starts the reader on `db`; returns once its transaction has begun.
fn hold_reader(db: &Path, scratch: &Path) -> Child {
    let marker = scratch.join("began");
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(PYTHON)
        .arg(db)
        .arg(&marker)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run python3 ({e}); scripts/install-deps installs it"));
    for _ in 0..6000 {
        if marker.exists() {
            return child;
        }
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "the reader exited early ({status}): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    panic!("the reader never began its read transaction");
}

/// Ends the reader's transaction; the generations it saw (at the start and
/// the end of its transaction, then after it).
fn release_reader(mut child: Child) -> [u64; 3] {
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "reader: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Vec<u64> = text
        .split_whitespace()
        .map(|g| g.parse().unwrap())
        .collect();
    seen.try_into()
        .unwrap_or_else(|_| panic!("the reader printed {text}"))
}

/// `rounds` times: a token AES key generated, then destroyed. The first
/// failure panics with its code.
fn churn(s: &Session, tag: &str, rounds: usize) {
    for i in 0..rounds {
        let key = s
            .generate_key(
                &Mechanism::AesKeyGen,
                &[
                    Attribute::Token(true),
                    Attribute::ValueLen(32.into()),
                    Attribute::Label(format!("{tag}-{i}").into_bytes()),
                ],
            )
            .unwrap_or_else(|e| panic!("{tag}: C_GenerateKey {i}: {e}"));
        s.destroy_object(key)
            .unwrap_or_else(|e| panic!("{tag}: C_DestroyObject {i}: {e}"));
    }
}

fn token_db(f: &Fixture) -> PathBuf {
    std::fs::read_dir(f.dir.path().join("tokens"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "sqlite"))
        .expect("the token file")
}

/// The bytes of the token's database and log files.
fn file_bytes(db: &Path) -> Vec<u8> {
    ["", "-wal"]
        .iter()
        .filter_map(|side| std::fs::read(format!("{}{side}", db.display())).ok())
        .flatten()
        .collect()
}

/// A token data object labelled `label`.
fn data_object(s: &Session, label: &[u8]) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::DATA),
        Attribute::Token(true),
        Attribute::Label(label.to_vec()),
        Attribute::Value(b"held-reader".to_vec()),
    ])
    .unwrap()
}

/// Entry point of the worker process (skipped in a normal run).
#[test]
#[ignore = "runs only as the second process of the tests below"]
fn worker() {
    let Ok(label) = std::env::var("HELD_READER_WORKER") else {
        return;
    };
    let (p, slot) = worker_module(&label);
    let s = p.open_rw_session(slot).unwrap();
    s.login(cryptoki::session::UserType::User, Some(&pin(USER_PIN)))
        .unwrap();
    match std::env::var("HELD_READER_MILLIS") {
        Ok(ms) => {
            let until = std::time::Instant::now() + Duration::from_millis(ms.parse().unwrap());
            println!("calls {}", churn_until(&s, "worker", until));
        }
        Err(_) => churn(&s, "worker", ROUNDS),
    }
    println!("done");
}

/// Generate-and-destroy rounds until `until`; the calls made (two per
/// round). The first failure panics with its code.
fn churn_until(s: &Session, tag: &str, until: std::time::Instant) -> usize {
    let mut calls = 0;
    while std::time::Instant::now() < until {
        churn(s, tag, 1);
        calls += 2;
    }
    calls
}

/// Soak phase (`scripts/soak`; a short run here): two writers (this
/// process and a worker) churn for `SOAK_SECONDS` without an outside
/// reader, then as long again while one holds a read transaction. Every
/// call must succeed; the calls per second of both runs are printed side
/// by side (figures, never asserted: the machine may be busy).
#[test]
fn soak_held_reader_beside_writers_costs_them_nothing() {
    let seconds: u64 = std::env::var("SOAK_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let f = Fixture::new();
    let slot = f.token("held-reader");
    let s = f.user(slot);
    let db = token_db(&f);
    let scratch = tempfile::tempdir().unwrap();
    let mut rates = Vec::new();
    for held in [false, true] {
        let reader = held.then(|| hold_reader(&db, scratch.path()));
        let millis = seconds * 1000;
        let worker = worker_command()
            .env("HELD_READER_WORKER", "held-reader")
            .env("HELD_READER_MILLIS", millis.to_string())
            .env("DALEK_PKCS11_MODULE", module_path())
            .env("DALEK_PKCS11_TOKEN_DIR", f.dir.path().join("tokens"))
            .env("DALEK_PKCS11_STORAGE", "sqlite")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        let mine = churn_until(&s, "main", started + Duration::from_millis(millis));
        let out = finish_worker(worker);
        let theirs: usize = out
            .lines()
            .find_map(|l| l.strip_prefix("calls "))
            .unwrap_or_else(|| panic!("worker printed {out}"))
            .parse()
            .unwrap();
        let elapsed = started.elapsed().as_secs_f64().max(seconds as f64);
        if let Some(r) = reader {
            release_reader(r);
        }
        rates.push((mine + theirs) as f64 / elapsed);
    }
    println!(
        "soak reader: two writers, {seconds} s each way: {:.0} calls/s without an outside \
         reader, {:.0} with one holding a read transaction ({:.2}x), 0 failed calls",
        rates[0],
        rates[1],
        rates[1] / rates[0]
    );
}

#[test]
fn a_held_reader_neither_blocks_nor_fails_writers() {
    let f = Fixture::new();
    let slot = f.token("held-reader");
    let s = f.user(slot);
    churn(&s, "before", 3);
    let db = token_db(&f);
    let scratch = tempfile::tempdir().unwrap();
    let reader = hold_reader(&db, scratch.path());
    let worker = f.spawn_worker("HELD_READER_WORKER", "held-reader");
    let (done, wait) = mpsc::channel::<()>();
    let children = [reader.id(), worker.id()];
    let watchdog = std::thread::spawn(move || {
        if wait.recv_timeout(LIMIT).is_err() {
            // Not `eprintln!`: the test harness captures it, and the exit
            // below would lose it.
            let _ = writeln!(
                std::io::stderr(),
                "two writers did not finish {ROUNDS} rounds each within {LIMIT:?}"
            );
            for pid in children {
                // SAFETY: a plain system call on this test's own children.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            }
            std::process::exit(101);
        }
    });
    // Destroyed while the reader holds its snapshot: this marker may stay
    // in the log until the reader ends.
    let marker = format!("held-reader-marker-{}", std::process::id()).into_bytes();
    let doomed = data_object(&s, &marker);
    s.destroy_object(doomed).unwrap();
    churn(&s, "main", ROUNDS);
    finish_worker(worker);
    let _ = done.send(());
    watchdog.join().unwrap();
    let [start, end, after] = release_reader(reader);
    assert_eq!(
        start, end,
        "the reader held one snapshot through the writes"
    );
    assert!(
        after >= start + 4 * ROUNDS as u64,
        "the writes committed while it read ({start} then {after})"
    );
    // The reader has ended: the next write (of any kind) checkpoints the
    // log away, the marker with it.
    data_object(&s, b"next");
    let has_marker = |b: &[u8]| b.windows(marker.len()).any(|w| w == &marker[..]);
    assert!(
        !has_marker(&file_bytes(&db)),
        "an object destroyed while the reader read is still in the token's files"
    );
}
