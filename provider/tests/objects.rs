//! Object management (base spec §5.7) and the attribute rules of §4.

mod common;

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass};
use cryptoki::session::UserType;
use cryptoki_sys::*;

const ED25519_OID: [u8; 5] = [0x06, 0x03, 0x2b, 0x65, 0x70];

fn data_object(token: bool, private: bool, label: &str) -> Vec<Attribute> {
    vec![
        Attribute::Class(ObjectClass::DATA),
        Attribute::Token(token),
        Attribute::Private(private),
        Attribute::Label(label.as_bytes().to_vec()),
        Attribute::Value(b"payload".to_vec()),
    ]
}

fn ed_private(token: bool, sensitive: bool, extractable: bool) -> Vec<Attribute> {
    vec![
        Attribute::Class(ObjectClass::PRIVATE_KEY),
        Attribute::KeyType(KeyType::EC_EDWARDS),
        Attribute::EcParams(ED25519_OID.to_vec()),
        Attribute::Value(vec![7; 32]),
        Attribute::Token(token),
        Attribute::Sensitive(sensitive),
        Attribute::Extractable(extractable),
        Attribute::Label(b"imported".to_vec()),
        Attribute::Id(vec![1, 2]),
    ]
}

#[test]
fn create_find_destroy_with_visibility() {
    let f = Fixture::new();
    let slot = f.token("objects");
    let user = f.user(slot);
    let public = user
        .create_object(&data_object(true, false, "pub"))
        .unwrap();
    let private = user
        .create_object(&data_object(true, true, "priv"))
        .unwrap();
    let session_obj = user
        .create_object(&data_object(false, false, "sess"))
        .unwrap();
    assert_eq!(user.find_objects(&[]).unwrap().len(), 3);
    assert_eq!(
        user.find_objects(&[Attribute::Label(b"priv".to_vec())])
            .unwrap(),
        vec![private]
    );
    assert_eq!(
        user.find_objects(&[Attribute::Token(false)]).unwrap(),
        vec![session_obj]
    );
    assert!(
        user.find_objects(&[Attribute::Label(b"nothing".to_vec())])
            .unwrap()
            .is_empty()
    );
    user.logout().unwrap();
    // Private objects vanish when logged out.
    let found = user.find_objects(&[]).unwrap();
    assert!(found.contains(&public) && found.contains(&session_obj) && !found.contains(&private));
    assert_rv!(
        user.get_attributes(private, &[AttributeType::Label]),
        ObjectHandleInvalid
    );
    // Public session cannot create private objects; R/O cannot create token objects.
    assert_rv!(
        user.create_object(&data_object(false, true, "p")),
        UserNotLoggedIn
    );
    let ro = f.p().open_ro_session(slot).unwrap();
    assert_rv!(
        ro.create_object(&data_object(true, false, "t")),
        SessionReadOnly
    );
    assert_rv!(ro.destroy_object(public), SessionReadOnly);
    ro.create_object(&data_object(false, false, "ro-session-object"))
        .unwrap();
    user.destroy_object(public).unwrap();
    assert_rv!(user.destroy_object(public), ObjectHandleInvalid);
}

#[test]
fn session_objects_die_with_their_session() {
    let f = Fixture::new();
    let slot = f.token("sessobj");
    let a = f.user(slot);
    let b = f.p().open_rw_session(slot).unwrap();
    let obj = b.create_object(&data_object(false, false, "mine")).unwrap();
    assert_eq!(
        a.find_objects(&[Attribute::Label(b"mine".to_vec())])
            .unwrap(),
        vec![obj],
        "visible to the whole application"
    );
    b.close().unwrap();
    assert!(
        a.find_objects(&[Attribute::Label(b"mine".to_vec())])
            .unwrap()
            .is_empty()
    );
    // Private session objects are destroyed at logout.
    let p = a
        .create_object(&data_object(false, true, "private-session"))
        .unwrap();
    a.logout().unwrap();
    a.login(UserType::User, Some(&pin(USER_PIN))).unwrap();
    assert_rv!(
        a.get_attributes(p, &[AttributeType::Label]),
        ObjectHandleInvalid
    );
}

#[test]
fn get_attribute_value_follows_the_spec_rules() {
    let f = Fixture::new();
    let slot = f.token("getattr");
    let s = f.user(slot);
    let key = s.create_object(&ed_private(true, true, false)).unwrap();
    let l = raw();
    let h = s.handle();
    let mut label = [0u8; 3];
    let mut value = [0u8; 32];
    let mut class: CK_ULONG = 0;
    let mut template = [
        CK_ATTRIBUTE {
            type_: CKA_CLASS,
            pValue: (&mut class as *mut CK_ULONG).cast(),
            ulValueLen: 8,
        },
        CK_ATTRIBUTE {
            type_: CKA_VALUE,
            pValue: value.as_mut_ptr().cast(),
            ulValueLen: 32,
        },
        CK_ATTRIBUTE {
            type_: CKA_MODULUS,
            pValue: std::ptr::null_mut(),
            ulValueLen: 0,
        },
        CK_ATTRIBUTE {
            type_: CKA_LABEL,
            pValue: label.as_mut_ptr().cast(),
            ulValueLen: 3,
        },
        CK_ATTRIBUTE {
            type_: CKA_ID,
            pValue: std::ptr::null_mut(),
            ulValueLen: 0,
        },
    ];
    // SAFETY: every pValue points at a buffer of ulValueLen bytes.
    let rv = unsafe { l.C_GetAttributeValue.unwrap()(h, key.handle(), template.as_mut_ptr(), 5) };
    assert_eq!(rv, CKR_ATTRIBUTE_SENSITIVE, "first failure wins");
    assert_eq!(
        class, CKO_PRIVATE_KEY,
        "valid attributes are still returned"
    );
    assert_eq!(template[0].ulValueLen, 8);
    assert_eq!(template[1].ulValueLen, CK_UNAVAILABLE_INFORMATION);
    assert_eq!(value, [0; 32], "nothing revealed");
    assert_eq!(template[2].ulValueLen, CK_UNAVAILABLE_INFORMATION);
    assert_eq!(
        template[3].ulValueLen, CK_UNAVAILABLE_INFORMATION,
        "label 'imported' does not fit in 3 bytes"
    );
    assert_eq!(template[4].ulValueLen, 2, "size query");
    let mut only_small = [CK_ATTRIBUTE {
        type_: CKA_LABEL,
        pValue: label.as_mut_ptr().cast(),
        ulValueLen: 3,
    }];
    // SAFETY: as above.
    let rv = unsafe { l.C_GetAttributeValue.unwrap()(h, key.handle(), only_small.as_mut_ptr(), 1) };
    assert_eq!(rv, CKR_BUFFER_TOO_SMALL);
    let mut only_invalid = [CK_ATTRIBUTE {
        type_: CKA_MODULUS,
        pValue: std::ptr::null_mut(),
        ulValueLen: 0,
    }];
    // SAFETY: as above.
    let rv =
        unsafe { l.C_GetAttributeValue.unwrap()(h, key.handle(), only_invalid.as_mut_ptr(), 1) };
    assert_eq!(rv, CKR_ATTRIBUTE_TYPE_INVALID);
    // SAFETY: null template with a count is rejected before use.
    let rv = unsafe { l.C_GetAttributeValue.unwrap()(h, key.handle(), std::ptr::null_mut(), 1) };
    assert_eq!(rv, CKR_ARGUMENTS_BAD);

    // Computed attributes of an imported key.
    let attrs = s
        .get_attributes(
            key,
            &[
                AttributeType::Local,
                AttributeType::AlwaysSensitive,
                AttributeType::NeverExtractable,
                AttributeType::EcPoint,
                AttributeType::UniqueId,
            ],
        )
        .unwrap();
    assert_eq!(attrs[0], Attribute::Local(false));
    assert_eq!(attrs[1], Attribute::AlwaysSensitive(false));
    assert_eq!(attrs[2], Attribute::NeverExtractable(false));
    match &attrs[3] {
        Attribute::EcPoint(p) => assert_eq!((p.len(), p[0], p[1]), (34, 0x04, 0x20)),
        other => panic!("{other:?}"),
    }
    match &attrs[4] {
        Attribute::UniqueId(u) => assert_eq!(u.len(), 32),
        other => panic!("{other:?}"),
    }
}

#[test]
fn extractable_values_are_revealed_and_survive_sealing() {
    let mut f = Fixture::new();
    let slot = f.token("extract");
    let key = {
        let s = f.user(slot);
        s.create_object(&ed_private(true, false, true)).unwrap()
    };
    f.restart();
    let s = f.user(slot);
    let key = s
        .find_objects(&[Attribute::Id(vec![1, 2])])
        .unwrap()
        .pop()
        .unwrap_or(key);
    assert_eq!(
        s.get_attributes(key, &[AttributeType::Value]).unwrap(),
        vec![Attribute::Value(vec![7; 32])]
    );
    // The key bytes are not stored in the clear.
    let db = std::fs::read_dir(f.dir.path().join("tokens"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "sqlite"))
        .unwrap();
    let mut bytes = std::fs::read(&db).unwrap();
    let wal = db.with_extension("sqlite-wal");
    if let Ok(w) = std::fs::read(wal) {
        bytes.extend(w);
    }
    assert!(
        !bytes.windows(32).any(|w| w == [7u8; 32]),
        "key material on disk in the clear"
    );
}

#[test]
fn set_and_copy_enforce_policy() {
    let f = Fixture::new();
    let slot = f.token("setcopy");
    let s = f.user(slot);
    let key = s.create_object(&ed_private(false, true, false)).unwrap();
    s.update_attributes(key, &[Attribute::Label(b"renamed".to_vec())])
        .unwrap();
    assert_eq!(
        s.get_attributes(key, &[AttributeType::Label]).unwrap(),
        vec![Attribute::Label(b"renamed".to_vec())]
    );
    assert_rv!(
        s.update_attributes(key, &[Attribute::Sensitive(false)]),
        AttributeReadOnly
    );
    assert_rv!(
        s.update_attributes(key, &[Attribute::Extractable(true)]),
        AttributeReadOnly
    );
    assert_rv!(
        s.update_attributes(key, &[Attribute::Value(vec![1; 32])]),
        AttributeReadOnly
    );
    assert_rv!(
        s.update_attributes(key, &[Attribute::Token(true)]),
        AttributeReadOnly
    );
    assert_rv!(
        s.update_attributes(key, &[Attribute::Modulus(vec![1])]),
        AttributeTypeInvalid
    );
    // Copy to a token object, with a new label.
    let copy = s
        .copy_object(
            key,
            &[Attribute::Token(true), Attribute::Label(b"copy".to_vec())],
        )
        .unwrap();
    let a = s
        .get_attributes(
            copy,
            &[
                AttributeType::Token,
                AttributeType::Label,
                AttributeType::Sensitive,
            ],
        )
        .unwrap();
    assert_eq!(
        a,
        vec![
            Attribute::Token(true),
            Attribute::Label(b"copy".to_vec()),
            Attribute::Sensitive(true)
        ]
    );
    // Not modifiable / not copyable / not destroyable.
    let mut t = data_object(false, false, "locked");
    t.push(Attribute::Modifiable(false));
    t.push(Attribute::Copyable(false));
    t.push(Attribute::Destroyable(false));
    let locked = s.create_object(&t).unwrap();
    assert_rv!(
        s.update_attributes(locked, &[Attribute::Label(b"x".to_vec())]),
        ActionProhibited
    );
    assert_rv!(s.copy_object(locked, &[]), ActionProhibited);
    assert_rv!(s.destroy_object(locked), ActionProhibited);
    let mut size: CK_ULONG = 0;
    // SAFETY: valid out-pointer.
    assert_eq!(
        unsafe { raw().C_GetObjectSize.unwrap()(s.handle(), key.handle(), &mut size) },
        CKR_OK
    );
    assert!(size > 32);
}

#[test]
fn bad_templates_get_the_right_codes() {
    let f = Fixture::new();
    let slot = f.token("templates");
    let s = f.user(slot);
    assert_rv!(
        s.create_object(&[Attribute::Label(b"no class".to_vec())]),
        TemplateIncomplete
    );
    let mut t = ed_private(false, true, false);
    t.retain(|a| a.attribute_type() != AttributeType::Value);
    assert_rv!(s.create_object(&t), TemplateIncomplete);
    let mut t = ed_private(false, true, false);
    t.push(Attribute::Local(true));
    assert_rv!(s.create_object(&t), AttributeReadOnly);
    let mut t = ed_private(false, true, false);
    t.push(Attribute::Token(true));
    assert_rv!(s.create_object(&t), TemplateInconsistent);
    let mut t = ed_private(false, true, false);
    t.push(Attribute::Modulus(vec![1, 2]));
    assert_rv!(s.create_object(&t), AttributeTypeInvalid);
    let mut t = ed_private(false, true, false);
    t.retain(|a| a.attribute_type() != AttributeType::EcParams);
    // X448's OID on an Edwards key (Ed448, 1.3.101.113, is supported).
    t.push(Attribute::EcParams(vec![0x06, 0x03, 0x2b, 0x65, 0x6f]));
    assert_rv!(s.create_object(&t), CurveNotSupported);
    let mut t = ed_private(false, true, false);
    t.retain(|a| a.attribute_type() != AttributeType::Value);
    t.push(Attribute::Value(vec![1; 31]));
    assert_rv!(s.create_object(&t), AttributeValueInvalid);
    assert_rv!(
        s.create_object(&[
            Attribute::Class(ObjectClass::SECRET_KEY),
            Attribute::KeyType(KeyType::DES3),
            Attribute::Value(vec![0; 24])
        ]),
        AttributeValueInvalid
    );
    // Only the SO may mark a key trusted.
    let public = [
        Attribute::Class(ObjectClass::PUBLIC_KEY),
        Attribute::KeyType(KeyType::EC_EDWARDS),
        Attribute::EcParams(ED25519_OID.to_vec()),
        Attribute::EcPoint(vec![
            0x3d, 0x40, 0x17, 0xc3, 0xe8, 0x43, 0x89, 0x5a, 0x92, 0xb7, 0x0a, 0xa7, 0x4d, 0x1b,
            0x7e, 0xbc, 0x9c, 0x98, 0x2c, 0xcf, 0x2e, 0xc4, 0x96, 0x8c, 0xc0, 0xcd, 0x55, 0xf1,
            0x2a, 0xf4, 0x66, 0x0c,
        ]),
        Attribute::Trusted(true),
    ];
    assert_rv!(s.create_object(&public), AttributeReadOnly);
    // Raw: an attribute with a null value and a length.
    let l = raw();
    let mut class: CK_ULONG = CKO_DATA;
    let mut template = [
        CK_ATTRIBUTE {
            type_: CKA_CLASS,
            pValue: (&mut class as *mut CK_ULONG).cast(),
            ulValueLen: 8,
        },
        CK_ATTRIBUTE {
            type_: CKA_LABEL,
            pValue: std::ptr::null_mut(),
            ulValueLen: 5,
        },
    ];
    let mut out: CK_OBJECT_HANDLE = 0;
    // SAFETY: pointers valid except the deliberately null label.
    unsafe {
        assert_eq!(
            l.C_CreateObject.unwrap()(s.handle(), template.as_mut_ptr(), 2, &mut out),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            l.C_CreateObject.unwrap()(s.handle(), template.as_mut_ptr(), 1, std::ptr::null_mut()),
            CKR_ARGUMENTS_BAD
        );
        template[0].ulValueLen = 4;
        assert_eq!(
            l.C_CreateObject.unwrap()(s.handle(), template.as_mut_ptr(), 1, &mut out),
            CKR_ATTRIBUTE_VALUE_INVALID
        );
    }
    let _ = Mechanism::Sha256;
}

#[test]
fn find_operations_are_stateful() {
    let f = Fixture::new();
    let slot = f.token("find");
    let s = f.user(slot);
    for i in 0..5 {
        s.create_object(&data_object(false, false, &format!("obj{i}")))
            .unwrap();
    }
    let l = raw();
    let h = s.handle();
    let mut out = [0 as CK_OBJECT_HANDLE; 2];
    let mut n: CK_ULONG = 0;
    // SAFETY: valid buffers.
    unsafe {
        assert_eq!(
            l.C_FindObjects.unwrap()(h, out.as_mut_ptr(), 2, &mut n),
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(
            l.C_FindObjectsInit.unwrap()(h, std::ptr::null_mut(), 0),
            CKR_OK
        );
        assert_eq!(
            l.C_FindObjectsInit.unwrap()(h, std::ptr::null_mut(), 0),
            CKR_OPERATION_ACTIVE
        );
        let mut total = 0;
        loop {
            assert_eq!(
                l.C_FindObjects.unwrap()(h, out.as_mut_ptr(), 2, &mut n),
                CKR_OK
            );
            if n == 0 {
                break;
            }
            total += n;
        }
        assert_eq!(total, 5);
        assert_eq!(
            l.C_FindObjects.unwrap()(h, std::ptr::null_mut(), 2, &mut n),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(l.C_FindObjectsFinal.unwrap()(h), CKR_OK);
        assert_eq!(
            l.C_FindObjectsFinal.unwrap()(h),
            CKR_OPERATION_NOT_INITIALIZED
        );
    }
}

/// `CKA_UNIQUE_ID` (base spec 3.0 §4.4.1): assigned by the token, different
/// for every object (a copy gets its own), the same after a restart (as
/// another process sees it), usable in a search, and never set by a caller:
/// neither in a template (`CKR_ATTRIBUTE_READ_ONLY`) nor afterwards.
#[test]
fn unique_ids_are_assigned_stable_and_read_only() {
    let mut f = Fixture::new();
    let slot = f.token("uniqueid");
    let unique_id = |s: &cryptoki::session::Session, h| match &s
        .get_attributes(h, &[AttributeType::UniqueId])
        .unwrap()[0]
    {
        Attribute::UniqueId(u) => u.clone(),
        other => panic!("{other:?}"),
    };
    let (token_id, session_id, copy_id) = {
        let s = f.user(slot);
        let token_obj = s.create_object(&data_object(true, false, "u1")).unwrap();
        let session_obj = s.create_object(&data_object(false, false, "u2")).unwrap();
        let copy = s
            .copy_object(token_obj, &[Attribute::Label(b"u3".to_vec())])
            .unwrap();
        let ids = (
            unique_id(&s, token_obj),
            unique_id(&s, session_obj),
            unique_id(&s, copy),
        );
        assert_ne!(ids.0, ids.1);
        assert_ne!(ids.0, ids.2);
        assert_ne!(ids.1, ids.2);
        assert!(!ids.0.is_empty());
        // Never set by a caller, at creation, in a copy, or later.
        let mut with_id = data_object(true, false, "u4");
        with_id.push(Attribute::UniqueId(b"chosen".to_vec()));
        assert_rv!(s.create_object(&with_id), AttributeReadOnly);
        assert_rv!(
            s.copy_object(token_obj, &[Attribute::UniqueId(b"chosen".to_vec())]),
            AttributeReadOnly
        );
        assert_rv!(
            s.update_attributes(token_obj, &[Attribute::UniqueId(b"chosen".to_vec())]),
            AttributeReadOnly
        );
        assert_eq!(unique_id(&s, token_obj), ids.0);
        ids
    };
    f.restart();
    let s = f.user(slot);
    let found = s
        .find_objects(&[Attribute::UniqueId(token_id.clone())])
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(unique_id(&s, found[0]), token_id);
    let copy = s.find_objects(&[Attribute::Label(b"u3".to_vec())]).unwrap();
    assert_eq!(unique_id(&s, copy[0]), copy_id);
    // The session object ended with its session; its id is not reused.
    assert!(
        s.find_objects(&[Attribute::UniqueId(session_id)])
            .unwrap()
            .is_empty()
    );
}
