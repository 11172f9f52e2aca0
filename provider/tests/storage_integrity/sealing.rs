//! Sealed records (docs/SECURITY.md, "Encryption at rest"): protection
//! flags edited in the file never reveal a private key through
//! `C_GetAttributeValue` (base spec §5.7), and secret values are sealed
//! whatever `CKA_PRIVATE` says.

use super::*;

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
