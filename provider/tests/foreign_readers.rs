//! Plain SQLite readers of a token file while this process has the token
//! open: the `sqlite3` shell and Python's `sqlite3` module (a backup script,
//! someone looking at the file), each reading, `.backup` or `VACUUM INTO`.
//! Every call of the module before, while and after a reader runs succeeds
//! (no `CKR_DEVICE_ERROR`, no "deleted or replaced" alarm), every commit is
//! found again by a new process, and the readers leave the token's `-wal`
//! and `-shm` files in place (SQLite's last-connection cleanup must not
//! run while the module holds the token open).
//!
//! The readers are separate processes: a second copy of SQLite inside the
//! module's process would share its POSIX locks, which SQLite does not
//! support (<https://sqlite.org/howtocorrupt.html>, §2.2). For the same
//! reason this test never opens a token file itself, it only `stat`s them.
//!
//! The worker process (this binary run again with `--ignored --exact
//! worker`) counts objects by label in a fresh module.

mod common;

use common::*;
use cryptoki::object::{Attribute, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::Session;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The readers run, in turn.
#[derive(Clone, Copy, Debug)]
enum Reader {
    CliSelect,
    CliBackup,
    CliVacuumInto,
    PySelect,
    PyBackup,
    PyVacuumInto,
}

const READERS: [Reader; 6] = [
    Reader::CliSelect,
    Reader::PySelect,
    Reader::CliBackup,
    Reader::PyBackup,
    Reader::CliVacuumInto,
    Reader::PyVacuumInto,
];

/// What a reader looks at: the number of objects and the store's
/// generation (bumped by every commit of the module).
const LOOK: &str = "SELECT (SELECT count(*) FROM objects) || ' ' || (SELECT value FROM meta WHERE name = 'generation')";

/// Python's side of a reader: a read transaction held open until a line
/// arrives on standard input (the marker file says it has begun), then
/// the action, then the object count it saw at each step.
const PYTHON: &str = r#"
import sqlite3, sys
path, action, out, marker, LOOK = sys.argv[1:6]
c = sqlite3.connect(path, isolation_level=None)
c.execute("BEGIN")
n1 = c.execute(LOOK).fetchone()[0]
open(marker, "w").close()
sys.stdin.readline()
n2 = c.execute(LOOK).fetchone()[0]
c.execute("COMMIT")
if action == "backup":
    d = sqlite3.connect(out)
    c.backup(d)
    d.close()
elif action == "vacuum":
    c.execute("VACUUM INTO ?", (out,))
n3 = c.execute(LOOK).fetchone()[0]
c.close()
print(n1)
print(n2)
print(n3)
"#;

/// A reader process holding a read transaction on the token file.
struct Running {
    child: Child,
    reader: Reader,
    /// Where `.backup` / `VACUUM INTO` writes.
    out: PathBuf,
}

impl Reader {
    fn start(self, db: &Path, scratch: &Path, i: usize) -> Running {
        let out = scratch.join(format!("copy-{i}.sqlite"));
        let marker = scratch.join(format!("began-{i}"));
        let python = matches!(
            self,
            Reader::PySelect | Reader::PyBackup | Reader::PyVacuumInto
        );
        let mut cmd = if python {
            let action = match self {
                Reader::PyBackup => "backup",
                Reader::PyVacuumInto => "vacuum",
                _ => "select",
            };
            let mut c = Command::new("python3");
            c.arg("-c")
                .arg(PYTHON)
                .arg(db)
                .arg(action)
                .arg(&out)
                .arg(&marker)
                .arg(LOOK);
            c
        } else {
            let mut c = Command::new("sqlite3");
            c.arg(db);
            c
        };
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("{self:?}: cannot run it ({e}); scripts/install-deps installs sqlite3 and python3")
            });
        if !python {
            // The shell runs each line as it arrives: the read transaction
            // has begun once the marker exists.
            let begin = format!("BEGIN;\n{LOOK};\n.system touch '{}'\n", marker.display());
            child
                .stdin
                .as_mut()
                .unwrap()
                .write_all(begin.as_bytes())
                .unwrap();
        }
        // A generous bound, only so that a broken reader fails the test
        // instead of hanging it.
        for _ in 0..6000 {
            if marker.exists() {
                return Running {
                    child,
                    reader: self,
                    out,
                };
            }
            if let Some(status) = child.try_wait().unwrap() {
                let out = child.wait_with_output().unwrap();
                panic!(
                    "{self:?} exited early ({status}): {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = child.kill();
        panic!("{self:?} never began its read transaction");
    }
}

impl Running {
    /// Lets the reader finish; what it saw (object count, generation) in
    /// its read transaction, twice, then after it.
    fn finish(mut self) -> [(u64, u64); 3] {
        let mut stdin = self.child.stdin.take().unwrap();
        let rest = match self.reader {
            Reader::CliSelect => format!("{LOOK};\nCOMMIT;\n"),
            Reader::CliBackup => format!("{LOOK};\nCOMMIT;\n.backup '{}'\n", self.out.display()),
            Reader::CliVacuumInto => {
                format!("{LOOK};\nCOMMIT;\nVACUUM INTO '{}';\n", self.out.display())
            }
            _ => "go\n".to_string(),
        };
        let tail = if matches!(
            self.reader,
            Reader::CliSelect | Reader::CliBackup | Reader::CliVacuumInto
        ) {
            format!("{LOOK};\n.quit\n")
        } else {
            String::new()
        };
        stdin.write_all(rest.as_bytes()).unwrap();
        stdin.write_all(tail.as_bytes()).unwrap();
        drop(stdin);
        let out = self.child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{:?}: {}\n{}",
            self.reader,
            text,
            String::from_utf8_lossy(&out.stderr)
        );
        let counts: Vec<(u64, u64)> = text
            .lines()
            .map(|l| {
                let (n, g) = l.trim().split_once(' ').unwrap();
                (n.parse().unwrap(), g.parse().unwrap())
            })
            .collect();
        counts
            .try_into()
            .unwrap_or_else(|c| panic!("{:?} printed {c:?}", self.reader))
    }
}

/// A token secret key labelled `label`.
fn secret_key(s: &Session, label: &str) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::GENERIC_SECRET),
        Attribute::Token(true),
        Attribute::Label(label.as_bytes().to_vec()),
        Attribute::Value(vec![7; 32]),
    ])
    .unwrap_or_else(|e| panic!("storing {label}: {e}"))
}

/// (device, inode) of the token's database, `-wal` and `-shm` files.
fn identities(db: &Path) -> [Option<(u64, u64)>; 3] {
    use std::os::unix::fs::MetadataExt;
    ["", "-wal", "-shm"].map(|side| {
        std::fs::metadata(format!("{}{side}", db.display()))
            .ok()
            .map(|m| (m.dev(), m.ino()))
    })
}

/// `rounds` readers, each between calls of the module and with commits
/// (and a destruction) made while it holds its read transaction; returns
/// the labels stored.
fn readers_between_calls(
    f: &Fixture,
    slot: cryptoki::slot::Slot,
    db: &Path,
    prefix: &str,
    rounds: usize,
) -> Vec<String> {
    let scratch = f.dir.path().join(format!("readers-{prefix}"));
    std::fs::create_dir_all(&scratch).unwrap();
    let s = f.user(slot);
    let mut stored = Vec::new();
    let mut objects = s.find_objects(&[]).unwrap().len() as u64;
    for i in 0..rounds {
        let reader = READERS[i % READERS.len()];
        let before = format!("{prefix}-before-{i}");
        secret_key(&s, &before);
        let doomed = secret_key(&s, &format!("{prefix}-doomed-{i}"));
        objects += 2;
        stored.push(before);
        let files = identities(db);
        let running = reader.start(db, &scratch, i);
        // While the reader holds its snapshot.
        let during = format!("{prefix}-during-{i}");
        secret_key(&s, &during);
        // Its checkpoint cannot complete past the reader's snapshot: it is
        // left for later, not waited for.
        s.destroy_object(doomed).unwrap();
        stored.push(during);
        let [first, second, last] = running.finish();
        // Its snapshot held; after it, the commits made meanwhile (one
        // object more, one less).
        assert_eq!(first, second, "{reader:?}");
        assert_eq!(first.0, objects, "{reader:?}");
        assert_eq!(last.0, objects, "{reader:?}");
        assert!(last.1 > first.1, "{reader:?} saw {first:?} then {last:?}");
        assert_eq!(
            identities(db),
            files,
            "{reader:?} removed or replaced the token's files while the module had them open"
        );
        if matches!(
            reader,
            Reader::CliBackup | Reader::PyBackup | Reader::CliVacuumInto | Reader::PyVacuumInto
        ) {
            // A copy (its own file: opening it here touches no lock of the
            // token's) holds what the reader saw last.
            let copy =
                rusqlite::Connection::open(scratch.join(format!("copy-{i}.sqlite"))).unwrap();
            let n: i64 = copy
                .query_row("SELECT count(*) FROM objects", [], |r| r.get(0))
                .unwrap();
            assert_eq!(n as u64, objects, "{reader:?}'s copy");
        }
        // After the reader is gone: every call still succeeds.
        let after = format!("{prefix}-after-{i}");
        secret_key(&s, &after);
        objects += 1;
        stored.push(after);
        assert_eq!(s.find_objects(&[]).unwrap().len() as u64, objects);
    }
    stored
}

fn count_in_new_process(f: &Fixture, labels: &[String]) {
    let out = finish_worker(f.spawn_worker("FOREIGN_WORKER", &labels.join(" ")));
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("counts "))
        .unwrap_or_else(|| panic!("worker said {out}"));
    let counts: Vec<usize> = line.split(' ').map(|n| n.parse().unwrap()).collect();
    let lost: Vec<_> = labels
        .iter()
        .zip(&counts)
        .filter(|(_, n)| **n != 1)
        .collect();
    assert!(lost.is_empty(), "not stored exactly once: {lost:?}");
}

#[test]
fn plain_sqlite_readers_never_disturb_an_open_token() {
    let mut f = Fixture::new();
    let log = f.dir.path().join("module.log");
    // SAFETY: the tests of this binary take turns (Fixture); reset below.
    unsafe {
        std::env::set_var("DALEK_PKCS11_LOG", "warn");
        std::env::set_var("DALEK_PKCS11_LOG_FILE", &log);
    }
    f.restart();
    // Made by this process: its connection is the one opened at creation.
    let slot = f.token("readers");
    let serial = f
        .p()
        .get_token_info(slot)
        .unwrap()
        .serial_number()
        .to_string();
    let db = f.dir.path().join("tokens").join(format!("{serial}.sqlite"));
    let mut stored = readers_between_calls(&f, slot, &db, "created", 12);
    // Opened by C_Initialize.
    f.restart();
    stored.extend(readers_between_calls(&f, slot, &db, "opened", 6));
    count_in_new_process(&f, &stored);
    let doomed: Vec<String> = stored
        .iter()
        .filter(|l| l.contains("-during-"))
        .map(|l| l.replace("-during-", "-doomed-"))
        .collect();
    let out = finish_worker(f.spawn_worker("FOREIGN_WORKER", &doomed.join(" ")));
    assert!(
        out.contains(&format!("counts {}", vec!["0"; doomed.len()].join(" "))),
        "a destroyed object came back: {out}"
    );
    f.stop();
    // SAFETY: as above.
    unsafe {
        std::env::remove_var("DALEK_PKCS11_LOG");
        std::env::remove_var("DALEK_PKCS11_LOG_FILE");
    }
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        !logged.contains("deleted or replaced"),
        "false alarm in the module's log:\n{logged}"
    );
}

/// Worker: the number of token objects of each label in `$FOREIGN_WORKER`
/// (space separated), in a fresh module.
#[test]
#[ignore = "runs only as the second process of the test above"]
fn worker() {
    let Ok(labels) = std::env::var("FOREIGN_WORKER") else {
        return;
    };
    let (p, slot) = worker_module("readers");
    let s = p.open_ro_session(slot).unwrap();
    s.login(cryptoki::session::UserType::User, Some(&pin(USER_PIN)))
        .unwrap();
    let counts: Vec<String> = labels
        .split(' ')
        .map(|l| {
            s.find_objects(&[Attribute::Label(l.as_bytes().to_vec())])
                .unwrap()
                .len()
                .to_string()
        })
        .collect();
    println!("counts {}", counts.join(" "));
}
