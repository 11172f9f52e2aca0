//! IVs the token generates (base spec 3.0 §5.19, `CK_GCM_MESSAGE_PARAMS`
//! `ivGenerator`; SP 800-38D §8): a counter never repeats for a key value
//! (across operations, sessions, copies of the key, processes, restarts and
//! token re-initialisation); random IVs keep at least 64 random bits.

use super::*;

/// An AES token key labelled `label`.
fn token_aes_key(s: &Session, value: &[u8], label: &[u8]) -> ObjectHandle {
    s.create_object(&[
        Attribute::Class(ObjectClass::SECRET_KEY),
        Attribute::KeyType(KeyType::AES),
        Attribute::Token(true),
        Attribute::Label(label.to_vec()),
        Attribute::Value(value.to_vec()),
        Attribute::Encrypt(true),
        Attribute::Decrypt(true),
    ])
    .unwrap()
}

/// Every IV seen so far for one key value; a repeat fails the test.
#[derive(Default)]
struct Ivs(HashSet<Vec<u8>>);

impl Ivs {
    fn add(&mut self, ivs: Vec<Vec<u8>>, what: &str) {
        assert!(!ivs.is_empty());
        for iv in ivs {
            let h = hex(&iv);
            assert!(self.0.insert(iv), "{what}: IV {h} was already used");
        }
    }
}

/// The part of [`counter_ivs_never_repeat_for_a_key_value`] inside one
/// process: two operations in one session, a second session, a copy of
/// the key (`C_CopyObject`), and the same value imported again.
fn counter_ivs_in_one_process(f: &Fixture, slot: cryptoki::slot::Slot, seen: &mut Ivs) {
    let l = list30();
    let s = f.user(slot);
    let key = token_aes_key(&s, &unhex(KEY), b"iv-key");
    seen.add(counter_messages(l, &s, key, 20), "first operation");
    seen.add(
        counter_messages(l, &s, key, 20),
        "second operation of the session",
    );
    let s2 = f.p().open_rw_session(slot).unwrap();
    seen.add(counter_messages(l, &s2, key, 20), "second session");
    let copy = s.copy_object(key, &[Attribute::Token(false)]).unwrap();
    seen.add(counter_messages(l, &s, copy, 20), "C_CopyObject copy");
    let again = aes_key(&s, &unhex(KEY));
    seen.add(
        counter_messages(l, &s, again, 20),
        "the same value imported again",
    );
    // Operations on the key and its copy at the same time.
    let s3 = f.p().open_rw_session(slot).unwrap();
    assert_eq!(init(l, &s3, copy, true), CKR_OK);
    let mut interleaved = Vec::new();
    for round in 0..10 {
        let sess = if round % 2 == 0 { &s } else { &s3 };
        if round == 0 {
            assert_eq!(init(l, &s, key, true), CKR_OK);
        }
        let mut iv = [0u8; 12];
        iv[..4].copy_from_slice(&PREFIX);
        let mut tag = [0u8; 16];
        let mut p = params(&mut iv, 32, CKG_GENERATE_COUNTER, &mut tag);
        let mut ct = [0u8; 1];
        assert_eq!(
            message(l, sess, true, &mut p, &[], &[7], Some(&mut ct)).0,
            CKR_OK
        );
        interleaved.push(iv.to_vec());
    }
    seen.add(interleaved, "two operations at once");
}

/// `CKG_GENERATE_COUNTER` (and `_XOR` over a constant base) never gives
/// one key value the same IV twice: not across operations, sessions, a
/// `C_CopyObject` copy, the value imported again, two processes
/// encrypting at once, nor a `C_Finalize` / `C_Initialize` restart. Every
/// message decrypts with the IV written back.
#[test]
fn counter_ivs_never_repeat_for_a_key_value() {
    let mut f = Fixture::new();
    let slot = f.token("iv-counter");
    let mut seen = Ivs::default();
    counter_ivs_in_one_process(&f, slot, &mut seen);
    // Two processes at once, while this one keeps the token open.
    let workers = [
        f.spawn_worker("IV_WORKER", "iv-counter 300"),
        f.spawn_worker("IV_WORKER", "iv-counter 300"),
    ];
    for (i, w) in workers.into_iter().enumerate() {
        let out = finish_worker(w);
        assert!(out.contains("done"), "{out}");
        let ivs: Vec<Vec<u8>> = out
            .lines()
            .filter_map(|line| line.strip_prefix("iv "))
            .map(unhex)
            .collect();
        assert_eq!(ivs.len(), 300, "{out}");
        seen.add(ivs, &format!("worker process {i}"));
    }
    // A restart, as a new process would see the token.
    f.restart();
    let slot = f.slot_labelled("iv-counter");
    let s = f.user(slot);
    let key = s
        .find_objects(&[Attribute::Label(b"iv-key".to_vec())])
        .unwrap();
    assert_eq!(key.len(), 1);
    seen.add(
        counter_messages(list30(), &s, key[0], 20),
        "after a restart",
    );
    assert_eq!(seen.0.len(), 5 * 20 + 10 + 600 + 20);
}

/// The same within one process on a memory token (nothing on disk).
#[test]
fn counter_ivs_never_repeat_on_a_memory_token() {
    let f = Fixture::with_storage("memory");
    let slot = f.token("iv-memory");
    let mut seen = Ivs::default();
    counter_ivs_in_one_process(&f, slot, &mut seen);
    assert_eq!(seen.0.len(), 5 * 20 + 10);
}

/// `C_InitToken` over a token erases its keys but not the counter: the
/// same key value imported into the re-initialised token does not get an
/// IV it had before.
#[test]
fn counter_ivs_survive_token_reinitialisation() {
    let f = Fixture::new();
    let slot = f.token("iv-reinit");
    let l = list30();
    let mut seen = Ivs::default();
    {
        let s = f.user(slot);
        let key = token_aes_key(&s, &unhex(KEY), b"iv-key");
        seen.add(counter_messages(l, &s, key, 20), "before C_InitToken");
    }
    f.p()
        .init_token(slot, &pin(SO_PIN), "iv-reinit")
        .expect("C_InitToken again");
    let s = f.p().open_rw_session(slot).unwrap();
    s.login(cryptoki::session::UserType::So, Some(&pin(SO_PIN)))
        .unwrap();
    s.init_pin(&pin(USER_PIN)).unwrap();
    s.logout().unwrap();
    s.login(cryptoki::session::UserType::User, Some(&pin(USER_PIN)))
        .unwrap();
    let key = aes_key(&s, &unhex(KEY));
    seen.add(counter_messages(l, &s, key, 20), "after C_InitToken");
}

/// `CKG_GENERATE_RANDOM` and `CKG_GENERATE` fill the bits after
/// `ulIvFixedBits` from the DRBG; fewer than 64 such bits would repeat too
/// soon, so they are refused (`CKR_MECHANISM_PARAM_INVALID`), single-part
/// and at `C_EncryptMessageBegin`.
#[test]
fn random_ivs_keep_at_least_64_random_bits() {
    let f = Fixture::new();
    let s = f.user(f.token("iv-random"));
    let key = aes_key(&s, &unhex(KEY));
    let l = list30();
    assert_eq!(init(l, &s, key, true), CKR_OK);
    assert_eq!(init(l, &s, key, false), CKR_OK);
    for generator in [CKG_GENERATE_RANDOM, CKG_GENERATE] {
        for (len, fixed, accepted) in [
            (12usize, 95, false),
            (12, 65, false),
            (12, 33, false),
            (12, 32, true),
            (12, 0, true),
            (16, 64, true),
            (16, 65, false),
        ] {
            let what = format!("generator {generator}, {len}-byte IV, {fixed} fixed bits");
            let expect = if accepted {
                CKR_OK
            } else {
                CKR_MECHANISM_PARAM_INVALID
            };
            let original = vec![0x3c_u8; len];
            let mut iv = original.clone();
            let mut tag = [0u8; 16];
            let mut ct = [0u8; 3];
            let mut p = params(&mut iv, fixed, generator, &mut tag);
            assert_eq!(
                message(l, &s, true, &mut p, &[], b"abc", Some(&mut ct)).0,
                expect,
                "{what}"
            );
            if accepted {
                assert_ne!(iv, original, "{what}: random bits written");
                let mut back = [0u8; 3];
                let mut p = params(&mut iv, fixed, generator, &mut tag);
                assert_eq!(
                    message(l, &s, false, &mut p, &[], &ct, Some(&mut back)).0,
                    CKR_OK
                );
                assert_eq!(&back, b"abc", "{what}");
            } else {
                assert_eq!(iv, original, "{what}: no IV written");
            }
            let mut iv = original.clone();
            let mut p = params(&mut iv, fixed, generator, &mut tag);
            assert_eq!(begin(l, &s, true, &mut p, &[]), expect, "{what} (Begin)");
            if accepted {
                assert_eq!(
                    next(l, &s, true, Some(&mut p), b"abc", Some(&mut ct), true),
                    (CKR_OK, 3)
                );
            }
        }
    }
}

/// The token's files, for the edits below.
fn token_file(f: &Fixture, slot: cryptoki::slot::Slot) -> std::path::PathBuf {
    let serial = f
        .p()
        .get_token_info(slot)
        .unwrap()
        .serial_number()
        .to_string();
    f.dir
        .path()
        .join("tokens")
        .join(format!("{}.sqlite", serial.trim()))
}

/// A counter edited back in the file, or its row deleted, is detected:
/// counter IVs are refused (`CKR_DEVICE_ERROR`) rather than repeated,
/// while random IVs keep working.
#[test]
fn an_edited_counter_is_refused_not_repeated() {
    let mut f = Fixture::new();
    let edits = [
        ("iv-edit", "UPDATE iv_counters SET next = 0"),
        ("iv-delete", "DELETE FROM iv_counters"),
    ];
    let mut files = Vec::new();
    for (label, _) in edits {
        let slot = f.token(label);
        let s = f.user(slot);
        let key = token_aes_key(&s, &unhex(KEY), b"iv-key");
        counter_messages(list30(), &s, key, 5);
        files.push(token_file(&f, slot));
    }
    f.stop();
    for ((_, sql), file) in edits.iter().zip(&files) {
        let conn = rusqlite::Connection::open(file).unwrap();
        assert_eq!(conn.execute(sql, []).unwrap(), 1, "{sql}");
    }
    f.start();
    let l = list30();
    for (label, sql) in edits {
        let s = f.user(f.slot_labelled(label));
        let key = s
            .find_objects(&[Attribute::Label(b"iv-key".to_vec())])
            .unwrap()[0];
        assert_eq!(init(l, &s, key, true), CKR_OK);
        let mut iv = [0u8; 12];
        let mut tag = [0u8; 16];
        let mut p = params(&mut iv, 32, CKG_GENERATE_COUNTER, &mut tag);
        let mut ct = [0u8; 1];
        assert_eq!(
            message(l, &s, true, &mut p, &[], &[1], Some(&mut ct)).0,
            CKR_DEVICE_ERROR,
            "after {sql}"
        );
        let mut p = params(&mut iv, 32, CKG_GENERATE_RANDOM, &mut tag);
        assert_eq!(
            message(l, &s, true, &mut p, &[], &[1], Some(&mut ct)).0,
            CKR_OK
        );
    }
}

/// A write-protected token cannot record a counter: `CKG_GENERATE_COUNTER`
/// is refused with `CKR_TOKEN_WRITE_PROTECTED`; random IVs work.
#[test]
fn a_read_only_token_refuses_counter_ivs() {
    use std::os::unix::fs::PermissionsExt;
    let mut f = Fixture::new();
    let slot = f.token("iv-read-only");
    {
        let s = f.user(slot);
        token_aes_key(&s, &unhex(KEY), b"iv-key");
    }
    let file = token_file(&f, slot);
    f.stop();
    let dir = file.parent().unwrap().to_path_buf();
    let set = |p: &std::path::Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    set(f.dir.path(), 0o755);
    set(&file, 0o444);
    set(&dir, 0o555);
    let out = finish_worker(f.spawn_worker("IV_WORKER", "iv-read-only read-only"));
    set(&dir, 0o700);
    assert!(out.contains("done"), "{out}");
}
