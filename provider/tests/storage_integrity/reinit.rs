//! A token another process re-initialises is a new token (issue 27 item
//! 2): nothing this process held of the old one — an SO or user login, the
//! token key it unwrapped, its view of the objects — may be written into
//! the new one. Before, a stale SO login's `C_InitPIN` replaced the new
//! token's user PIN with a wrap of the old token key, and objects the new
//! token's user had stored became unreadable.

use super::*;
use cryptoki::session::UserType;

const NEW_USER_PIN: &str = "2222";

/// In the worker: re-initialise the token `label` (same SO PIN), set the
/// user PIN to [`NEW_USER_PIN`] and store a private data object `b-obj`.
pub fn reinit_worker(label: &str) {
    let (p, slot) = worker_module(label);
    p.init_token(slot, &pin(SO_PIN), label).unwrap();
    let s = p.open_rw_session(slot).unwrap();
    s.login(UserType::So, Some(&pin(SO_PIN))).unwrap();
    s.init_pin(&pin(NEW_USER_PIN)).unwrap();
    s.logout().unwrap();
    s.login(UserType::User, Some(&pin(NEW_USER_PIN))).unwrap();
    s.create_object(&[
        Attribute::Class(ObjectClass::DATA),
        Attribute::Token(true),
        Attribute::Private(true),
        Attribute::Label(b"b-obj".to_vec()),
        Attribute::Value(b"b-value".to_vec()),
    ])
    .unwrap();
}

/// What a fresh process sees: the new user PIN works, the re-initialising
/// process's object reads back, and `stray` (written through the old
/// token's state) is not there.
fn new_token_is_intact(f: &mut Fixture, slot: cryptoki::slot::Slot, stray: &[u8]) {
    f.restart();
    let s = f.p().open_rw_session(slot).unwrap();
    s.login(UserType::User, Some(&pin(NEW_USER_PIN)))
        .expect("the new token's user PIN still works");
    let b = find(&s, b"b-obj");
    assert_eq!(b.len(), 1, "the new token's object is there");
    assert_eq!(get(&s, b[0], AttributeType::Value), b"b-value");
    assert!(
        find(&s, stray).is_empty(),
        "nothing of the old token landed"
    );
}

#[test]
fn a_stale_so_login_cannot_set_the_pin_of_a_re_initialised_token() {
    let mut f = Fixture::new();
    let slot = f.token("reinit-so");
    let a = f.p().open_rw_session(slot).unwrap();
    a.login(UserType::So, Some(&pin(SO_PIN))).unwrap();
    finish_worker(spawn(&f, "reinit-so reinit"));
    // The old token's SO login is over: its C_InitPIN is refused.
    let e = a
        .init_pin(&pin("1111"))
        .expect_err("C_InitPIN through a stale SO login");
    assert!(
        matches!(
            e,
            cryptoki::error::Error::Pkcs11(RvError::DeviceRemoved | RvError::UserNotLoggedIn, _)
        ),
        "{e}"
    );
    // The session belonged to the old token: it is over.
    let e = a.init_pin(&pin("1111")).expect_err("a second C_InitPIN");
    assert!(
        matches!(
            e,
            cryptoki::error::Error::Pkcs11(RvError::SessionHandleInvalid, _)
        ),
        "{e}"
    );
    std::mem::forget(a);
    // A new session is on the new token, logged out; PIN 1111 was never set.
    let s = f.p().open_rw_session(slot).unwrap();
    let wrong = s.login(UserType::User, Some(&pin("1111")));
    assert!(
        matches!(
            wrong,
            Err(cryptoki::error::Error::Pkcs11(RvError::PinIncorrect, _))
        ),
        "{wrong:?}"
    );
    drop(s);
    new_token_is_intact(&mut f, slot, b"a-obj");
}

#[test]
fn a_stale_user_login_cannot_store_objects_in_a_re_initialised_token() {
    let mut f = Fixture::new();
    let slot = f.token("reinit-user");
    let a = f.user(slot);
    finish_worker(spawn(&f, "reinit-user reinit"));
    // Sealed under the old token key: it must not land in the new token.
    let made = a.create_object(&[
        Attribute::Class(ObjectClass::DATA),
        Attribute::Token(true),
        Attribute::Private(true),
        Attribute::Label(b"a-obj".to_vec()),
        Attribute::Value(b"a-value".to_vec()),
    ]);
    assert!(
        made.is_err(),
        "a private token object through a stale login"
    );
    let key = a.generate_key(
        &Mechanism::AesKeyGen,
        &[
            Attribute::Token(true),
            Attribute::Private(true),
            Attribute::ValueLen(32.into()),
            Attribute::Label(b"a-obj".to_vec()),
        ],
    );
    assert!(key.is_err(), "a token key through a stale login");
    // Its session objects went with the session.
    std::mem::forget(a);
    new_token_is_intact(&mut f, slot, b"a-obj");
}
