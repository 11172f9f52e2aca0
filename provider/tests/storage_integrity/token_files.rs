//! The token's files (docs/SECURITY.md, "Storage integrity"): private
//! whatever the umask, a copied file adds no slot, leftovers of an
//! unfinished creation are removed, destroyed objects leave nothing behind,
//! deleted shared-memory and log files lose no write that succeeded, and a
//! read-only token is listed write-protected (`CKF_WRITE_PROTECTED`, base
//! spec §5.5) and usable.

use super::*;

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
