//! A damaged token is flagged, never hidden and never served as if whole
//! (docs/SECURITY.md, "A damaged token"):
//!
//! - a file that cannot be opened as its token (here: metadata that fails
//!   authentication) keeps its slot, its token information says so
//!   (label, `model`, the serial its name gives), sessions and
//!   `C_InitToken` on it are `CKR_TOKEN_NOT_RECOGNIZED`, and the other
//!   tokens are untouched; once the file is restored, the next slot scan
//!   serves the token in the same slot;
//! - damage SQLite sees outside the records (an index) leaves every record
//!   readable, flags the token (`model`) and makes it write-protected,
//!   until the indexes are rebuilt — by another process, while this one
//!   keeps the token open.

use super::*;
use cryptoki::session::UserType;

fn token_file(f: &Fixture, serial: &str) -> std::path::PathBuf {
    tokens_dir(f).join(format!("{serial}.sqlite"))
}

#[test]
fn a_token_whose_metadata_fails_authentication_is_listed_as_damaged() {
    let mut f = Fixture::new();
    let victim = f.token("victim");
    let serial = serial_of(&f, victim);
    secret_key(&f.user(victim), b"kept");
    let other = f.token("other");
    secret_key(&f.user(other), b"other key");
    f.stop();
    let file = token_file(&f, &serial);
    let pristine = std::fs::read(&file).unwrap();
    {
        let db = rusqlite::Connection::open(&file).unwrap();
        db.execute(
            "UPDATE meta SET value = CAST(replace(CAST(value AS TEXT), 'victim', 'victor') AS BLOB) \
             WHERE name = 'token'",
            [],
        )
        .unwrap();
        db.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
    }
    f.start();
    let p = f.p();
    let slots = p.get_slots_with_token().unwrap();
    let damaged: Vec<_> = slots
        .iter()
        .filter(|s| p.get_token_info(**s).unwrap().serial_number() == serial)
        .collect();
    assert_eq!(damaged.len(), 1, "listed once, in its own slot");
    let slot = *damaged[0];
    let info = p.get_token_info(slot).unwrap();
    assert_eq!(info.label(), "DAMAGED TOKEN (see the log)");
    assert_eq!(info.model(), "DAMAGED");
    assert!(info.token_initialized() && info.write_protected());
    let description = p.get_slot_info(slot).unwrap();
    assert!(description.slot_description().contains("damaged"));
    assert_eq!(
        rv_of(p.open_ro_session(slot).unwrap_err()),
        RvError::TokenNotRecognized
    );
    assert_eq!(
        rv_of(p.init_token(slot, &pin(SO_PIN), "wiped").unwrap_err()),
        RvError::TokenNotRecognized,
        "its SO PIN cannot be checked"
    );
    // The other token is whole, and a free slot is still offered.
    let other = f.slot_labelled("other");
    let s = f.user(other);
    assert_eq!(
        s.find_objects(&[Attribute::Label(b"other key".to_vec())])
            .unwrap()
            .len(),
        1
    );
    drop(s);
    let _free = f.free_slot();
    // The operator restores the file: the next scan serves it again, in
    // the same slot, and nothing of it was lost.
    std::fs::write(&file, &pristine).unwrap();
    let _ = std::fs::remove_file(format!("{}-wal", file.display()));
    let _ = std::fs::remove_file(format!("{}-shm", file.display()));
    f.p().get_all_slots().unwrap();
    assert_eq!(f.p().get_token_info(slot).unwrap().label(), "victim");
    let s = f.user(slot);
    assert_eq!(
        s.find_objects(&[Attribute::Label(b"kept".to_vec())])
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn damage_outside_the_records_is_flagged_and_served_read_only_until_rebuilt() {
    let mut f = Fixture::new();
    let slot = f.token("indexed");
    let serial = serial_of(&f, slot);
    {
        let s = f.user(slot);
        for i in 0..20 {
            secret_key(&s, format!("key {i}").as_bytes());
        }
    }
    f.stop();
    let file = token_file(&f, &serial);
    damage_index(&file, "objects_label");
    f.start();
    let slot = f.slot_labelled("indexed");
    // Every record authenticates: found and usable, read-only.
    let s = f.p().open_ro_session(slot).unwrap();
    s.login(UserType::User, Some(&pin(USER_PIN))).unwrap();
    let keys = s.find_objects(&[]).unwrap();
    assert_eq!(keys.len(), 20);
    let info = f.p().get_token_info(slot).unwrap();
    assert_eq!(info.model(), "DAMAGED");
    assert!(info.write_protected(), "flagged write-protected");
    assert_eq!(
        rv_of(f.p().open_rw_session(slot).unwrap_err()),
        RvError::TokenWriteProtected
    );
    // Another process rebuilds the indexes (what `dalek-pkcs11-util
    // repair` does) while this one keeps the token open: the next look
    // gives writes back.
    // (A process of its own: a second copy of SQLite in the module's
    // process must not open the file, docs/SECURITY.md.)
    let rebuilt = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('REINDEX'); \
             c.commit(); c.close()",
        ])
        .arg(&file)
        .status()
        .unwrap();
    assert!(rebuilt.success());
    assert_eq!(s.find_objects(&[]).unwrap().len(), 20);
    let info = f.p().get_token_info(slot).unwrap();
    assert!(!info.write_protected());
    assert_eq!(info.model(), "dalek soft token");
    drop(s);
    let s = f.user(slot);
    secret_key(&s, b"after the repair");
    assert_eq!(s.find_objects(&[]).unwrap().len(), 21);
}
