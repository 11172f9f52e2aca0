//! `dalek-pkcs11-util` on PostgreSQL tokens, against the server
//! `scripts/test` starts (skipped without one unless
//! `DALEK_PKCS11_REQUIRE_POSTGRES` is set): `init-token`, `list`, `verify`,
//! `backup` to a SQLite file, `restore` from one, and `copy-token` from
//! PostgreSQL to SQLite and back, all while the module has the token open.

#[path = "../../provider/tests/common/mod.rs"]
mod common;
#[path = "../../provider/tests/common/pg.rs"]
mod pg;
mod tool;

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, ObjectClass};
use pg::*;
use serde_json::Value;
use tool::*;

const P256: [u8; 10] = [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];

/// The objects labelled `label` of the token `token` on `storage`, seen
/// through the module, and whether its private key `label` signs.
fn seen(storage: &str, token: &str, label: &str) -> (usize, bool) {
    let f = Fixture::with_storage(storage);
    let s = f.user(f.slot_labelled(token));
    let found = s
        .find_objects(&[Attribute::Label(label.as_bytes().to_vec())])
        .unwrap();
    let key = s
        .find_objects(&[
            Attribute::Class(ObjectClass::PRIVATE_KEY),
            Attribute::Label(label.as_bytes().to_vec()),
        ])
        .unwrap();
    let signs = key
        .first()
        .is_some_and(|k| s.sign(&Mechanism::Ecdsa, *k, &[3; 32]).is_ok());
    (found.len(), signs)
}

#[test]
fn postgres_tokens_are_made_checked_backed_up_restored_and_moved() {
    let (Some(uri), Some(other)) = (pg_schema("util_pg"), pg_schema("util_pg2")) else {
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("tokens");
    let on = |storage: &str, args: &[&str]| util_on(storage, &dir, args);

    ok(&on(&uri, &init_args("fleet")));
    let listed: Value = serde_json::from_str(&ok(&on(&uri, &["list", "--json"]))).unwrap();
    let serial = listed["tokens"][0]["serial"].as_str().unwrap().to_string();
    assert_eq!(listed["tokens"][0]["label"], "fleet", "{listed}");
    let database = listed["database"].as_str().unwrap();
    assert!(database.starts_with("dalek@127.0.0.1:"), "{listed}");

    // A key and a data object, made through the module; the module keeps
    // the token open (a session logged in) through everything below.
    let f = Fixture::with_storage(&uri);
    let s = f.user(f.slot_labelled("fleet"));
    let label = Attribute::Label(b"k".to_vec());
    s.generate_key_pair(
        &Mechanism::EccKeyPairGen,
        &[
            Attribute::Token(true),
            Attribute::EcParams(P256.to_vec()),
            label.clone(),
        ],
        &[Attribute::Token(true), Attribute::Sign(true), label],
    )
    .unwrap();
    let listed: Value = serde_json::from_str(&ok(&on(&uri, &["list", "--json"]))).unwrap();
    assert_eq!(listed["tokens"][0]["objects"]["private key"], 1, "{listed}");

    let verified = ok(&on(&uri, &["verify", "--token", "fleet"]));
    assert!(
        verified.contains("2 records, 0 failed authentication"),
        "{verified}"
    );

    // backup: a SQLite file, the token as it was.
    let backup = scratch.path().join("fleet.sqlite");
    let b = backup.to_str().unwrap();
    ok(&on(&uri, &["backup", "--token", "fleet", "--out", b]));
    refused(&on(&uri, &["backup", "--token", "fleet", "--out", b]));

    // copy-token to SQLite: the module on that directory has the token.
    let lite_dir = scratch.path().join("lite");
    let to_lite = format!("sqlite:{}", lite_dir.display());
    ok(&on(
        &uri,
        &["copy-token", "--token", "fleet", "--to", &to_lite],
    ));
    refused(&on(
        &uri,
        &["copy-token", "--token", "fleet", "--to", &to_lite],
    ));
    ok(&on(
        &uri,
        &[
            "copy-token",
            "--token",
            "fleet",
            "--to",
            &to_lite,
            "--replace",
        ],
    ));
    let lite_verified = ok(&util_in(&lite_dir, &["verify", "--token", "fleet"]));
    assert!(lite_verified.contains("2 records"), "{lite_verified}");

    // An edited row: verify fails (exit 1), nothing is copied from it.
    psql(
        &uri,
        "UPDATE dalek_objects SET attrs = decode('00', 'hex') \
         WHERE class = 3",
    );
    let damaged = on(&uri, &["verify", "--serial", &serial]);
    assert_eq!(damaged.status.code(), Some(1));
    let text = String::from_utf8_lossy(&damaged.stdout);
    assert!(text.contains("1 failed authentication"), "{text}");
    refused(&on(
        &other,
        &["copy-token", "--serial", &serial, "--to", &uri],
    ));

    // restore puts the backup back over the damaged token.
    refused(&on(&uri, &["restore", "--file", b]));
    ok(&on(&uri, &["restore", "--file", b, "--replace"]));
    ok(&on(&uri, &["verify", "--token", "fleet"]));
    drop(s);
    drop(f);
    assert_eq!(seen(&uri, "fleet", "k"), (2, true));

    // And back: from the SQLite copy into another database.
    let lite = |args: &[&str]| util_on("sqlite", &lite_dir, args);
    ok(&lite(&["copy-token", "--token", "fleet", "--to", &other]));
    ok(&on(&other, &["verify", "--token", "fleet"]));
    assert_eq!(seen(&other, "fleet", "k"), (2, true));
    let bad = refused(&lite(&[
        "copy-token",
        "--token",
        "fleet",
        "--to",
        "nowhere",
    ]));
    assert!(bad.contains("neither sqlite:DIR"), "{bad}");
}
