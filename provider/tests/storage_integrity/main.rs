//! Storage integrity across processes and failures: a failed
//! `C_SetAttributeValue` changes nothing, a stale handle never revives an
//! object another process destroyed, and two processes changing one object
//! keep each other's changes.
//!
//! Second processes are this test binary run again with `--ignored --exact
//! worker` and the role in `STORAGE_WORKER`.

#[path = "../common/mod.rs"]
mod common;

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

#[test]
fn token_files_are_private_whatever_the_umask() {
    // SAFETY: umask is process-wide; the tests of this binary take turns
    // (Fixture) and it is restored below.
    let old = unsafe { libc::umask(0) };
    let mut f = Fixture::new();
    let slot = f.token("modes");
    let s = f.user(slot);
    secret_key(&s, b"k");
    let serial = serial_of(&f, slot);
    let dir = tokens_dir(&f);
    let files: Vec<_> = ["", "-wal", "-shm"]
        .iter()
        .map(|side| dir.join(format!("{serial}.sqlite{side}")))
        .collect();
    let modes: Vec<u32> = files.iter().map(|p| mode(p)).collect();
    drop(s);
    f.stop();
    // SAFETY: as above.
    unsafe { libc::umask(old) };
    assert_eq!(mode(&dir), 0o700, "token directory");
    assert_eq!(modes, vec![0o600; 3], "database, WAL and SHM files");
}

#[test]
fn a_copied_token_file_does_not_add_slots() {
    let f = Fixture::new();
    let slot = f.token("original");
    let serial = serial_of(&f, slot);
    let dir = tokens_dir(&f);
    std::fs::copy(
        dir.join(format!("{serial}.sqlite")),
        dir.join("0123ABCDCOPY.sqlite"),
    )
    .unwrap();
    let before = f.p().get_all_slots().unwrap().len();
    for _ in 0..20 {
        f.p().get_all_slots().unwrap();
    }
    assert_eq!(f.p().get_all_slots().unwrap().len(), before);
    let labels: Vec<String> = f
        .p()
        .get_slots_with_token()
        .unwrap()
        .into_iter()
        .filter_map(|s| f.p().get_token_info(s).ok())
        .filter(|t| t.token_initialized())
        .map(|t| t.label().to_string())
        .collect();
    assert_eq!(
        labels,
        vec!["original".to_string()],
        "the copy is not a token"
    );
}

#[test]
fn leftovers_of_an_unfinished_creation_are_removed() {
    let f = Fixture::new();
    f.token("present");
    let dir = tokens_dir(&f);
    let abandoned = dir.join(".DEADBEEF01.sqlite.new");
    let side_files =
        ["-wal", "-shm", "-journal"].map(|s| dir.join(format!(".DEADBEEF01.sqlite.new{s}")));
    std::fs::write(&abandoned, b"half a token").unwrap();
    for p in &side_files {
        std::fs::write(p, b"x").unwrap();
    }
    let orphan_wal = dir.join(".FEEDFACE02.sqlite.new-wal");
    std::fs::write(&orphan_wal, b"x").unwrap();
    // One being built right now (its builder holds the lock) stays.
    let busy = dir.join(".C0FFEE03.sqlite.new");
    let held = std::fs::File::create(&busy).unwrap();
    held.lock().unwrap();
    f.p().get_all_slots().unwrap();
    assert!(!abandoned.exists(), "abandoned token file kept");
    assert!(side_files.iter().all(|p| !p.exists()), "side files kept");
    assert!(!orphan_wal.exists());
    assert!(busy.exists(), "a token being built was removed");
    drop(held);
    f.p().get_all_slots().unwrap();
    assert!(!busy.exists());
}

/// Waits for `pid` for at most `secs` seconds; kills it and returns `None`
/// if it is still running then (a hang), else `Some(exited with 0)`.
fn wait_child(pid: libc::pid_t, secs: u64) -> Option<bool> {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        let mut status = 0;
        // SAFETY: waits for our own child, writing its status to a local.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            return Some(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        }
        if std::time::Instant::now() > end {
            // SAFETY: kills and reaps our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn count(s: &Session, label: &[u8]) -> usize {
    find(s, label).len()
}

/// In a forked child: the module initialised again, a user session on the
/// token labelled `label`.
fn child_session(label: &str) -> Option<(cryptoki::context::Pkcs11, Session)> {
    let p = cryptoki::context::Pkcs11::new(module_path()).ok()?;
    p.initialize(cryptoki::context::CInitializeArgs::new(
        cryptoki::context::CInitializeFlags::OS_LOCKING_OK,
    ))
    .ok()?;
    let slot = p.get_slots_with_token().ok()?.into_iter().find(|s| {
        p.get_token_info(*s)
            .map(|t| t.label() == label)
            .unwrap_or(false)
    })?;
    let s = p.open_rw_session(slot).ok()?;
    s.login(cryptoki::session::UserType::User, Some(&pin(USER_PIN)))
        .ok()?;
    Some((p, s))
}

#[test]
fn a_forked_childs_writes_are_kept_and_it_sees_others() {
    const N: usize = 8;
    let mut f = Fixture::new();
    let slot = f.token("forked");
    let s = f.user(slot);
    secret_key(&s, b"parent-early");
    let (mut to_parent, mut to_child) = ([0i32; 2], [0i32; 2]);
    // SAFETY: two pipes into local arrays; fork in a test process whose
    // child uses the module, the pipes and _exit only.
    let pid = unsafe {
        assert_eq!(libc::pipe(to_parent.as_mut_ptr()), 0);
        assert_eq!(libc::pipe(to_child.as_mut_ptr()), 0);
        libc::fork()
    };
    assert!(pid >= 0);
    if pid == 0 {
        let byte = |fd: i32, write: bool| {
            let mut b = [1u8];
            // SAFETY: one byte through a pipe end this process holds.
            let n = unsafe {
                if write {
                    libc::write(fd, b.as_ptr().cast(), 1)
                } else {
                    libc::read(fd, b.as_mut_ptr().cast(), 1)
                }
            };
            n == 1
        };
        let ok = (|| {
            let (_p, s) = child_session("forked")?;
            for _ in 0..N {
                secret_key(&s, b"child-first");
            }
            (byte(to_parent[1], true) && byte(to_child[0], false)).then_some(())?;
            // The parent finalised and initialised again meanwhile, and
            // wrote an object: the child sees it, and keeps writing.
            (count(&s, b"parent-late") == 1).then_some(())?;
            for _ in 0..N {
                secret_key(&s, b"child-second");
            }
            Some(())
        })()
        .is_some();
        // SAFETY: leaves the child without running the parent's destructors.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let mut b = [0u8];
    // SAFETY: one byte through our pipe ends.
    assert_eq!(
        unsafe { libc::read(to_parent[0], b.as_mut_ptr().cast(), 1) },
        1,
        "the child did not get through its first writes"
    );
    drop(s);
    f.restart();
    let s = f.user(slot);
    assert_eq!(count(&s, b"child-first"), N, "the child's writes vanished");
    secret_key(&s, b"parent-late");
    // SAFETY: as above.
    assert_eq!(unsafe { libc::write(to_child[1], b.as_ptr().cast(), 1) }, 1);
    assert_eq!(wait_child(pid, 60), Some(true), "child failed or hung");
    drop(s);
    f.restart();
    let s = f.user(slot);
    assert_eq!(count(&s, b"child-second"), N);
    assert_eq!(count(&s, b"parent-early"), 1);
    for fd in to_parent.into_iter().chain(to_child) {
        // SAFETY: closes our own pipe ends.
        unsafe { libc::close(fd) };
    }
}

#[test]
fn a_child_forked_while_other_threads_use_the_module_never_hangs() {
    let f = Fixture::new();
    let slot = f.token("busy-fork");
    let logged_in = f.user(slot);
    secret_key(&logged_in, b"busy");
    let stop = std::sync::atomic::AtomicBool::new(false);
    let l = raw();
    let hung = std::thread::scope(|sc| {
        for _ in 0..2 {
            sc.spawn(|| {
                let s = f.p().open_rw_session(slot).unwrap();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for h in find(&s, b"busy") {
                        let _ = s.get_attributes(h, &[AttributeType::Label]);
                    }
                    s.update_attributes(find(&s, b"busy")[0], &[Attribute::Id(vec![1])])
                        .unwrap();
                }
            });
        }
        let mut hung = 0;
        for _ in 0..20 {
            std::thread::sleep(std::time::Duration::from_millis(5));
            // SAFETY: fork in a test process; the child calls the module
            // through its function list, then _exit.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0);
            if pid == 0 {
                // SAFETY: C calls with valid arguments, then _exit.
                unsafe {
                    let mut count: CK_ULONG = 0;
                    let ok = l.C_Initialize.unwrap()(std::ptr::null_mut()) == CKR_OK
                        && l.C_GetSlotList.unwrap()(0, std::ptr::null_mut(), &mut count) == CKR_OK
                        && l.C_Finalize.unwrap()(std::ptr::null_mut()) == CKR_OK;
                    libc::_exit(if ok { 0 } else { 1 });
                }
            }
            match wait_child(pid, 20) {
                Some(true) => {}
                Some(false) => panic!("a child got an error"),
                None => hung += 1,
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        hung
    });
    assert_eq!(hung, 0, "children hung in C_Initialize");
}

/// The bytes of a token's database and log files.
fn token_file_bytes(f: &Fixture, serial: &str) -> Vec<u8> {
    ["", "-wal"]
        .iter()
        .filter_map(|side| std::fs::read(tokens_dir(f).join(format!("{serial}.sqlite{side}"))).ok())
        .flatten()
        .collect()
}

#[test]
fn destroyed_objects_leave_nothing_in_the_files() {
    let f = Fixture::new();
    let slot = f.token("shred");
    let serial = serial_of(&f, slot);
    let s = f.user(slot);
    let marker = b"SHRED-ME-7f3a9c".to_vec();
    let keep = secret_key(&s, b"kept");
    let doomed = s
        .create_object(&[
            Attribute::Class(ObjectClass::DATA),
            Attribute::Token(true),
            Attribute::Private(false),
            Attribute::Label(marker.clone()),
            Attribute::Value(marker.repeat(4)),
        ])
        .unwrap();
    let has_marker = |bytes: &[u8]| bytes.windows(marker.len()).any(|w| w == &marker[..]);
    assert!(has_marker(&token_file_bytes(&f, &serial)), "marker written");
    s.destroy_object(doomed).unwrap();
    assert!(
        !has_marker(&token_file_bytes(&f, &serial)),
        "a destroyed object's attributes are still in the token's files"
    );
    assert_eq!(get(&s, keep, AttributeType::Label), b"kept");
}

/// Deletes `sides` of the token's files under this open process, lets
/// another process write, then writes here: every write reported done must
/// survive, and the other process's write too.
fn delete_under_open_token(sides: &[&str]) {
    let mut f = Fixture::new();
    let slot = f.token("shm");
    let serial = serial_of(&f, slot);
    let s = f.user(slot);
    secret_key(&s, b"before");
    // A destruction checkpoints the log into the database: deleting the
    // log now loses no commit (deleting it with commits in it would, and
    // nothing can prevent that).
    let scratch = secret_key(&s, b"scratch");
    s.destroy_object(scratch).unwrap();
    for side in sides {
        std::fs::remove_file(tokens_dir(&f).join(format!("{serial}.sqlite{side}"))).unwrap();
    }
    // Another process starts on the files as they are now and writes.
    finish_worker(spawn(&f, "shm create from-other"));
    // This process's writes: refused while its view is stale, never
    // reported done and then lost.
    let mut succeeded = Vec::new();
    for i in 0..3 {
        let label = format!("from-this-{i}").into_bytes();
        if s.create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Token(true),
            Attribute::Label(label.clone()),
            Attribute::Value(vec![9; 32]),
        ])
        .is_ok()
        {
            succeeded.push(label);
        }
    }
    assert!(!succeeded.is_empty(), "the token never recovered");
    drop(s);
    f.restart();
    let s = f.user(slot);
    assert_eq!(count(&s, b"before"), 1);
    assert_eq!(
        count(&s, b"from-other"),
        1,
        "the other process's write was lost"
    );
    for label in &succeeded {
        assert_eq!(
            count(&s, label),
            1,
            "{} was reported stored and is gone",
            String::from_utf8_lossy(label)
        );
    }
}

#[test]
fn a_deleted_shared_memory_file_never_loses_a_write_that_succeeded() {
    delete_under_open_token(&["-shm"]);
}

#[test]
fn deleted_log_files_never_lose_a_write_that_succeeded() {
    delete_under_open_token(&["-shm", "-wal"]);
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

#[test]
fn a_read_only_token_is_listed_write_protected_and_usable() {
    use std::os::unix::fs::PermissionsExt;
    let mut f = Fixture::new();
    let slot = f.token("read-only");
    let serial = serial_of(&f, slot);
    key_pair(&f.user(slot), b"ro-key");
    // Closed everywhere: the log is folded into the database and removed.
    f.stop();
    let dir = tokens_dir(&f);
    let set = |p: &std::path::Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    set(f.dir.path(), 0o755);
    set(&dir.join(format!("{serial}.sqlite")), 0o444);
    set(&dir, 0o555);
    let out = finish_worker(spawn(&f, "read-only read-only"));
    set(&dir, 0o700);
    assert!(out.contains("done"), "{out}");
}

/// The database of the token `serial`, opened directly, as someone with
/// access to the files would.
fn open_file(f: &Fixture, serial: &str) -> rusqlite::Connection {
    rusqlite::Connection::open(tokens_dir(f).join(format!("{serial}.sqlite"))).unwrap()
}

/// Turns the stored `CKA_SENSITIVE` off and `CKA_EXTRACTABLE` on in every
/// private-key record; with `remac`, also recomputes the record MACs and
/// the digest with the integrity secret read from the same file (what an
/// attacker who knows the format can do).
fn unprotect_private_keys(conn: &rusqlite::Connection, remac: bool) {
    use dalek_pkcs11::attributes::Attributes;
    use dalek_pkcs11::storage::integrity::{Integrity, toggle};
    let json: Vec<u8> = conn
        .query_row("SELECT value FROM meta WHERE name = 'token'", [], |r| {
            r.get(0)
        })
        .unwrap();
    let meta: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let keys = Integrity::from_hex(meta["integrity"].as_str().unwrap()).unwrap();
    let mut digest: Vec<u8> = conn
        .query_row(
            "SELECT value FROM meta WHERE name = 'objects_digest'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    /// uid, generation, class, private, attrs, mac.
    type Row = (Vec<u8>, i64, i64, bool, Vec<u8>, Vec<u8>);
    let rows: Vec<Row> = conn
        .prepare("SELECT uid, generation, class, private, attrs, mac FROM objects WHERE class = 3")
        .unwrap()
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(!rows.is_empty());
    for (uid, g, class, private, attrs, old_mac) in rows {
        let mut a = Attributes::decode(&attrs).unwrap();
        assert!(a.flag(cryptoki_sys::CKA_SENSITIVE));
        a.set_flag(cryptoki_sys::CKA_SENSITIVE, false);
        a.set_flag(cryptoki_sys::CKA_EXTRACTABLE, true);
        let edited = a.encode();
        let mac = if remac {
            let mac = keys.record_mac(&uid, g as u64, class as u64, private, &edited);
            let d: &mut [u8; 32] = (&mut digest[..]).try_into().unwrap();
            toggle(d, &old_mac);
            toggle(d, &mac);
            mac.to_vec()
        } else {
            old_mac
        };
        conn.execute(
            "UPDATE objects SET attrs = ?1, mac = ?2 WHERE uid = ?3",
            rusqlite::params![edited, mac, uid],
        )
        .unwrap();
    }
    conn.execute(
        "UPDATE meta SET value = ?1 WHERE name = 'objects_digest'",
        rusqlite::params![digest],
    )
    .unwrap();
}

/// The attack: the stored protection flags of a private key edited
/// in the file. Never does `C_GetAttributeValue` return the key.
fn edited_flags_never_reveal_the_key(remac: bool) {
    let mut f = Fixture::new();
    let slot = f.token("edited");
    let serial = serial_of(&f, slot);
    key_pair(&f.user(slot), b"guarded");
    f.stop();
    unprotect_private_keys(&open_file(&f, &serial), remac);
    f.start();
    let s = f.user(slot);
    let found = s.find_objects(&[
        Attribute::Class(ObjectClass::PRIVATE_KEY),
        Attribute::Label(b"guarded".to_vec()),
    ]);
    if !remac {
        // The record no longer authenticates: not served, and searches say so.
        assert_rv!(found, DeviceError);
        return;
    }
    // The record was re-MACed with the secret from the file: it is served,
    // with the edited flags, but its value was sealed bound to the original
    // flags under the token key, which the file does not give away.
    let found = found.unwrap();
    assert_eq!(found.len(), 1);
    let attrs = s
        .get_attributes(found[0], &[AttributeType::Sensitive])
        .unwrap();
    assert_eq!(
        attrs,
        vec![Attribute::Sensitive(false)],
        "the edit is visible"
    );
    assert_rv!(
        s.get_attributes(found[0], &[AttributeType::Value]),
        DeviceError
    );
}

#[test]
fn edited_protection_flags_are_refused() {
    edited_flags_never_reveal_the_key(false);
}

#[test]
fn re_authenticated_protection_flags_still_never_reveal_the_key() {
    edited_flags_never_reveal_the_key(true);
}

#[test]
fn secret_values_are_sealed_whatever_cka_private_says() {
    let mut f = Fixture::new();
    let slot = f.token("sealed");
    let serial = serial_of(&f, slot);
    let s = f.user(slot);
    let key_marker = b"PUBLIC-OBJECT-SECRET-KEY-VALUE-1".to_vec();
    let data_marker = b"PRIVATE-DATA-OBJECT-VALUE-MARKER".to_vec();
    let public_secret = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Token(true),
            Attribute::Private(false),
            Attribute::Sensitive(true),
            Attribute::Label(b"public-secret".to_vec()),
            Attribute::Value(key_marker.clone()),
        ])
        .unwrap();
    // Copied with CKA_PRIVATE false, as the issue found.
    let copy = s
        .copy_object(public_secret, &[Attribute::Label(b"copy".to_vec())])
        .unwrap();
    s.create_object(&[
        Attribute::Class(ObjectClass::DATA),
        Attribute::Token(true),
        Attribute::Private(true),
        Attribute::Label(b"private-data".to_vec()),
        Attribute::Value(data_marker.clone()),
    ])
    .unwrap();
    drop(s);
    f.stop();
    let bytes = token_file_bytes(&f, &serial);
    for marker in [&key_marker, &data_marker] {
        assert!(
            !bytes.windows(marker.len()).any(|w| w == &marker[..]),
            "{} is stored in the clear",
            String::from_utf8_lossy(marker)
        );
    }
    f.start();
    let s = f.user(slot);
    // Still usable: the data object reads back and is found by its value.
    let found = s
        .find_objects(&[
            Attribute::Class(ObjectClass::DATA),
            Attribute::Value(data_marker.clone()),
        ])
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(get(&s, found[0], AttributeType::Value), data_marker);
    assert_eq!(count(&s, b"copy"), 1);
    let _ = copy;
}

#[test]
fn threads_setting_one_object_all_succeed_and_keep_each_others_changes() {
    let f = Fixture::new();
    let slot = f.token("set-race");
    let s = f.user(slot);
    let h = secret_key(&s, b"raced");
    const ROUNDS: usize = 200;
    const THREADS: u8 = 6;
    let f = &f;
    std::thread::scope(|sc| {
        for t in 0..THREADS {
            sc.spawn(move || {
                let s = f.p().open_rw_session(slot).unwrap();
                for i in 0..ROUNDS {
                    let v = format!("{t}-{i}").into_bytes();
                    let attr = match t {
                        0 => Attribute::Label(v),
                        // A usage flag the key-management policy lets
                        // widen on a protected key (CKA_DERIVE would not).
                        1 => Attribute::Sign(i.is_multiple_of(2)),
                        _ => Attribute::Id(v),
                    };
                    // Every set succeeds: no retry budget runs out because
                    // the other threads keep writing the same object.
                    s.update_attributes(h, &[attr]).unwrap();
                    s.find_objects(&[]).unwrap();
                }
            });
        }
    });
    let last = |t: u8| format!("{t}-{}", ROUNDS - 1).into_bytes();
    assert_eq!(get(&s, h, AttributeType::Label), last(0));
    assert_eq!(
        s.get_attributes(h, &[AttributeType::Sign]).unwrap(),
        vec![Attribute::Sign((ROUNDS - 1).is_multiple_of(2))]
    );
    let id = get(&s, h, AttributeType::Id);
    assert!((2..THREADS).any(|t| id == last(t)), "{id:?}");
}
