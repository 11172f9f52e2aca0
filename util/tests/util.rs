//! `dalek-pkcs11-util` run as an operator would, on a temporary token
//! directory: the tokens it makes are used through the module as any
//! consumer would (cryptoki on the built `.so`), and what consumers do shows
//! in its `list`.

#[path = "../../provider/tests/common/mod.rs"]
mod common;
mod tool;

use std::path::Path;

use common::*;
use cryptoki::object::Attribute;
use cryptoki::session::UserType;
use serde_json::Value;
use tool::*;

fn listed(f: &Fixture) -> Value {
    serde_json::from_str(&ok(&util(f, &["list", "--json"]))).unwrap()
}

fn token<'a>(v: &'a Value, label: &str) -> &'a Value {
    v["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["label"] == label)
        .unwrap_or_else(|| panic!("no token {label} in {v}"))
}

#[test]
fn tokens_are_made_listed_changed_and_deleted() {
    let mut f = Fixture::new();
    f.stop();
    let init = |label: &str| util(&f, &init_args(label));
    let text = ok(&init("ops"));
    assert!(
        text.contains("token 'ops'") && text.contains("slot 0"),
        "{text}"
    );
    refused(&init("ops"));
    // The module sees the token; the user PIN works; objects show in `list`.
    f.start();
    let slot = f.slot_labelled("ops");
    let s = f.user(slot);
    s.create_object(&[
        Attribute::Class(cryptoki::object::ObjectClass::DATA),
        Attribute::Token(true),
        Attribute::Label(b"note".to_vec()),
        Attribute::Value(b"hello".to_vec()),
    ])
    .unwrap();
    drop(s);
    f.stop();
    let v = listed(&f);
    let t = token(&v, "ops");
    assert_eq!(t["objects"]["data"], 1, "{t}");
    assert_eq!(t["user_pin_set"], true);
    assert_eq!(t["user_pin_kdf"], "pbkdf2-hmac-sha256 600000 iterations");
    let file = t["file"].as_str().unwrap();
    assert!(Path::new(file).is_file(), "{file}");
    assert_eq!(v["free_slots"].as_array().unwrap().len(), 1, "{v}");
    // change-pin: the old PIN is refused afterwards, the new one works.
    let change = [
        "change-pin",
        "--token",
        "ops",
        "--old-pin-env",
        "PIN_USER",
        "--new-pin-env",
        "PIN_NEW",
    ];
    ok(&util(&f, &change));
    let wrong = refused(&util(&f, &change));
    assert!(wrong.contains("CKR_PIN_INCORRECT"), "{wrong}");
    // set-kdf re-wraps under both PINs at the new cost, PINs unchanged.
    ok(&util(
        &f,
        &[
            "set-kdf",
            "--token",
            "ops",
            "--iterations",
            "700000",
            "--so-pin-env",
            "PIN_SO",
            "--pin-env",
            "PIN_NEW",
        ],
    ));
    let v = listed(&f);
    let t = token(&v, "ops");
    assert_eq!(t["so_pin_kdf"], "pbkdf2-hmac-sha256 700000 iterations");
    assert_eq!(t["user_pin_kdf"], "pbkdf2-hmac-sha256 700000 iterations");
    refused(&util(
        &f,
        &["set-kdf", "--token", "ops", "--iterations", "1000"],
    ));
    f.start();
    let s = f.p().open_rw_session(slot).unwrap();
    s.login(UserType::User, Some(&pin("9876"))).unwrap();
    drop(s);
    f.stop();
    // delete-token: refused without --yes when not interactive, then gone.
    let no = refused(&util(&f, &["delete-token", "--token", "ops"]));
    assert!(no.contains("--yes"), "{no}");
    let text = ok(&util(&f, &["delete-token", "--token", "ops", "--yes"]));
    assert!(text.contains("deleted token 'ops'"), "{text}");
    assert!(!Path::new(file).exists());
    assert!(listed(&f)["tokens"].as_array().unwrap().is_empty());
    refused(&util(
        &f,
        &["delete-token", "--serial", "0123456789abcdef", "--yes"],
    ));
    // Usage errors are one line too.
    refused(&util(&f, &["init-token", "--label", ""]));
    refused(&util(&f, &["frobnicate"]));
}

#[test]
fn a_backup_taken_under_load_restores_and_verifies_and_edits_are_found() {
    use cryptoki::mechanism::Mechanism;
    use cryptoki::object::{KeyType, ObjectClass};
    let mut f = Fixture::new();
    f.stop();
    ok(&util(&f, &init_args("live")));
    f.start();
    let slot = f.p().get_slots_with_token().unwrap()[0];
    let s = f.user(slot);
    let key = s
        .create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::GENERIC_SECRET),
            Attribute::Token(true),
            Attribute::Sign(true),
            Attribute::Label(b"mac".to_vec()),
            Attribute::Value(vec![7; 32]),
        ])
        .unwrap();
    let mac = s.sign(&Mechanism::Sha256Hmac, key, b"data").unwrap();
    // Under load: signing and adding token objects while the backup runs.
    let stop = std::sync::atomic::AtomicBool::new(false);
    let backup = f.dir.path().join("live.backup");
    let p = f.p();
    let (made, backed) = std::thread::scope(|scope| {
        let (stop, mac) = (&stop, &mac);
        let load = scope.spawn(move || {
            // A session of its own; the user is logged in on the token.
            let s = p.open_rw_session(slot).unwrap();
            let mut made = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                assert_eq!(&s.sign(&Mechanism::Sha256Hmac, key, b"data").unwrap(), mac);
                s.create_object(&[
                    Attribute::Class(ObjectClass::DATA),
                    Attribute::Token(true),
                    Attribute::Label(format!("d{made}").into_bytes()),
                ])
                .unwrap();
                made += 1;
            }
            made
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        let out = util(
            &f,
            &[
                "backup",
                "--token",
                "live",
                "--out",
                backup.to_str().unwrap(),
            ],
        );
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        (load.join().unwrap(), ok(&out))
    });
    assert!(made > 0 && backed.contains("backed up"), "{made} {backed}");
    drop(s);
    f.stop();
    // The backup restores into another directory, checks out, and the key
    // in it makes the same MAC (the data objects: as many as were there).
    let elsewhere = f.dir.path().join("elsewhere");
    let text = ok(&util_in(
        &elsewhere,
        &["restore", "--file", backup.to_str().unwrap()],
    ));
    assert!(text.contains("restored token"), "{text}");
    let v: Value = serde_json::from_str(&ok(&util_in(&elsewhere, &["list", "--json"]))).unwrap();
    let t = token(&v, "live");
    let data = t["objects"]["data"].as_u64().unwrap_or(0);
    assert!(data <= made as u64, "{data} of {made}");
    assert_eq!(t["objects"]["secret key"], 1, "{t}");
    ok(&util_in(&elsewhere, &["verify", "--token", "live"]));
    // SAFETY: the fixture's lock serialises the environment's users.
    unsafe { std::env::set_var("DALEK_PKCS11_TOKEN_DIR", &elsewhere) };
    f.start();
    let slot = f.p().get_slots_with_token().unwrap()[0];
    let s = f.user(slot);
    let k = s
        .find_objects(&[Attribute::Label(b"mac".to_vec())])
        .unwrap()[0];
    assert_eq!(s.sign(&Mechanism::Sha256Hmac, k, b"data").unwrap(), mac);
    drop(s);
    f.stop();
    // Restoring over an existing token needs --replace.
    refused(&util_in(
        &elsewhere,
        &["restore", "--file", backup.to_str().unwrap()],
    ));
    ok(&util_in(
        &elsewhere,
        &["restore", "--file", backup.to_str().unwrap(), "--replace"],
    ));
    // One edited byte in a record: verify says which token and exits 1,
    // and a backup of it is refused by restore.
    let file = token(&v, "live")["file"].as_str().unwrap().to_string();
    let file = Path::new(&file)
        .file_name()
        .map(|n| elsewhere.join(n))
        .unwrap();
    let db = rusqlite::Connection::open(&file).unwrap();
    db.execute(
        "UPDATE objects SET attrs = zeroblob(length(attrs)) WHERE uid = (SELECT uid FROM objects LIMIT 1)",
        [],
    )
    .unwrap();
    drop(db);
    let o = util_in(&elsewhere, &["verify", "--token", "live"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("1 failed authentication"));
    let bad = f.dir.path().join("bad.backup");
    ok(&util_in(
        &elsewhere,
        &["backup", "--token", "live", "--out", bad.to_str().unwrap()],
    ));
    let third = f.dir.path().join("third");
    let o = util_in(&third, &["restore", "--file", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nothing restored"));
}

/// What an operator sees of a damaged token and does about it: `list`
/// names it, `verify` says what is wrong (exit 1), `repair` rebuilds a
/// damaged index from the authenticated records (exit 0, and the token is
/// writable again), refuses what it cannot rebuild (exit 1), and
/// `delete-token --serial` removes a file that cannot be opened at all.
#[test]
fn damaged_tokens_are_listed_verified_repaired_and_deleted() {
    let mut f = Fixture::new();
    f.stop();
    ok(&util(&f, &init_args("indexed")));
    ok(&util(&f, &init_args("broken")));
    f.start();
    for label in ["indexed", "broken"] {
        let s = f.user(f.slot_labelled(label));
        for i in 0..5 {
            s.create_object(&[
                Attribute::Class(cryptoki::object::ObjectClass::DATA),
                Attribute::Token(true),
                Attribute::Label(format!("note {i}").into_bytes()),
                Attribute::Value(b"hello".to_vec()),
            ])
            .unwrap();
        }
    }
    f.stop();
    let v = listed(&f);
    let file_of = |label: &str| token(&v, label)["file"].as_str().unwrap().to_string();
    let serial_of = |label: &str| token(&v, label)["serial"].as_str().unwrap().to_string();
    let (indexed, broken) = (serial_of("indexed"), serial_of("broken"));
    damage_index(Path::new(&file_of("indexed")), "objects_label");
    std::fs::write(file_of("broken"), b"no longer a database").unwrap();

    let v = listed(&f);
    assert!(
        token(&v, "indexed")["problem"]
            .as_str()
            .is_some_and(|p| p.contains("integrity check")),
        "{v}"
    );
    let damaged = v["damaged"].as_array().unwrap();
    assert_eq!(damaged.len(), 1, "{v}");
    assert_eq!(damaged[0]["serial"], broken.as_str());
    assert_eq!(damaged[0]["reason"], "not a SQLite database");
    assert!(ok(&util(&f, &["list"])).contains(&format!("DAMAGED token file (serial {broken})")));

    for (serial, says) in [
        (&indexed, "SQLite integrity check"),
        (&broken, "cannot be opened"),
    ] {
        let o = util(&f, &["verify", "--serial", serial]);
        assert_eq!(o.status.code(), Some(1), "{o:?}");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains(says) && out.contains("DAMAGED"), "{out}");
    }
    // The index is rebuilt from the records; the file cannot be.
    let fixed = ok(&util(&f, &["repair", "--serial", &indexed]));
    assert!(fixed.contains("rebuilt the indexes"), "{fixed}");
    assert!(fixed.trim_end().ends_with("ok"), "{fixed}");
    ok(&util(&f, &["verify", "--token", "indexed"]));
    let o = util(&f, &["repair", "--serial", &broken]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("restore a backup"));
    // The repaired token takes writes; the broken file goes.
    f.start();
    let s = f.user(f.slot_labelled("indexed"));
    assert_eq!(s.find_objects(&[]).unwrap().len(), 5);
    s.create_object(&[
        Attribute::Class(cryptoki::object::ObjectClass::DATA),
        Attribute::Token(true),
        Attribute::Label(b"after".to_vec()),
        Attribute::Value(b"x".to_vec()),
    ])
    .unwrap();
    drop(s);
    f.stop();
    ok(&util(&f, &["delete-token", "--serial", &broken, "--yes"]));
    let v = listed(&f);
    assert!(v["damaged"].as_array().unwrap().is_empty(), "{v}");
    assert!(!Path::new(&file_of("broken")).exists());
}

/// A PIN piped on standard input is read up to a bound (a PIN is at most
/// 255 bytes), never to the end of whatever is piped in.
#[test]
fn a_pin_on_standard_input_is_read_up_to_a_bound() {
    use std::io::Write;
    let f = Fixture::new();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_dalek-pkcs11-util"))
        .env("DALEK_PKCS11_TOKEN_DIR", f.dir.path().join("tokens"))
        .env_remove("DALEK_PKCS11_CONFIG")
        .env("DALEK_PKCS11_STORAGE", "sqlite")
        .env("PIN_SO", SO_PIN)
        .args(["init-token", "--label", "huge", "--so-pin-env", "PIN_SO"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        // The tool stops reading at the bound: a broken pipe is expected.
        let _ = stdin.write_all(&vec![b'1'; 16 << 20]);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let err = refused(&out);
    assert!(err.contains("longer than 1024 bytes"), "{err}");
}
