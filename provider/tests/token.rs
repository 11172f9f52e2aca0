//! Slots, tokens, sessions and login (base spec §5.5, §5.6).

mod common;

use common::*;
use cryptoki::session::{SessionState, UserType};
use cryptoki_sys::*;

#[test]
fn fresh_install_has_one_free_slot() {
    let f = Fixture::new();
    let slots = f.p().get_all_slots().unwrap();
    assert_eq!(slots.len(), 1);
    let info = f.p().get_token_info(slots[0]).unwrap();
    assert!(!info.token_initialized());
    assert!(info.rng() && info.login_required());
    assert_eq!((info.min_pin_length(), info.max_pin_length()), (4, 255));
    assert_rv!(f.p().open_rw_session(slots[0]), TokenNotRecognized);
    let slot_info = f.p().get_slot_info(slots[0]).unwrap();
    assert!(slot_info.token_present());
    assert_rv!(
        f.p()
            .get_token_info(cryptoki::slot::Slot::try_from(99u64).unwrap()),
        SlotIdInvalid
    );
}

#[test]
fn init_token_adds_a_free_slot_and_flags_follow() {
    let f = Fixture::new();
    let slot = f.free_slot();
    assert_rv!(f.p().init_token(slot, &pin("123"), "short"), PinLenRange);
    f.p().init_token(slot, &pin(SO_PIN), "first").unwrap();
    let info = f.p().get_token_info(slot).unwrap();
    assert!(info.token_initialized());
    assert!(!info.user_pin_initialized());
    assert_eq!(info.label(), "first");
    assert_eq!(info.serial_number().len(), 16);
    assert_eq!(
        f.p().get_all_slots().unwrap().len(),
        2,
        "a new free slot appears"
    );
    let s = f.p().open_rw_session(slot).unwrap();
    assert_rv!(
        s.login(UserType::User, Some(&pin(USER_PIN))),
        UserPinNotInitialized
    );
    s.login(UserType::So, Some(&pin(SO_PIN))).unwrap();
    assert_rv!(s.init_pin(&pin("12")), PinLenRange);
    s.init_pin(&pin(USER_PIN)).unwrap();
    assert!(f.p().get_token_info(slot).unwrap().user_pin_initialized());
    // C_InitToken with sessions open.
    assert_rv!(f.p().init_token(slot, &pin(SO_PIN), "x"), SessionExists);
}

#[test]
fn login_state_machine() {
    let f = Fixture::new();
    let slot = f.token("login");
    let ro = f.p().open_ro_session(slot).unwrap();
    let rw = f.p().open_rw_session(slot).unwrap();
    assert_eq!(
        ro.get_session_info().unwrap().session_state(),
        SessionState::RoPublic
    );
    assert_eq!(
        rw.get_session_info().unwrap().session_state(),
        SessionState::RwPublic
    );
    assert_rv!(
        rw.login(UserType::So, Some(&pin(SO_PIN))),
        SessionReadOnlyExists
    );
    assert_rv!(rw.login(UserType::User, Some(&pin("0000"))), PinIncorrect);
    rw.login(UserType::User, Some(&pin(USER_PIN))).unwrap();
    assert_eq!(
        ro.get_session_info().unwrap().session_state(),
        SessionState::RoUser,
        "login is per application"
    );
    assert_eq!(
        rw.get_session_info().unwrap().session_state(),
        SessionState::RwUser
    );
    assert_rv!(
        ro.login(UserType::User, Some(&pin(USER_PIN))),
        UserAlreadyLoggedIn
    );
    rw.logout().unwrap();
    assert_rv!(rw.logout(), UserNotLoggedIn);
    ro.close().unwrap();
    rw.login(UserType::So, Some(&pin(SO_PIN))).unwrap();
    assert_eq!(
        rw.get_session_info().unwrap().session_state(),
        SessionState::RwSecurityOfficer
    );
    assert_rv!(
        rw.login(UserType::User, Some(&pin(USER_PIN))),
        UserAnotherAlreadyLoggedIn
    );
    assert_rv!(f.p().open_ro_session(slot), SessionReadWriteSoExists);
    // Closing the last session logs out.
    rw.close().unwrap();
    let again = f.p().open_ro_session(slot).unwrap();
    assert_eq!(
        again.get_session_info().unwrap().session_state(),
        SessionState::RoPublic
    );
}

#[test]
fn raw_login_errors_and_session_flags() {
    let f = Fixture::new();
    let slot = f.token("raw");
    let l = raw();
    let mut h: CK_SESSION_HANDLE = 0;
    // SAFETY: module calls with valid or deliberately bad pointers.
    unsafe {
        let open = l.C_OpenSession.unwrap();
        assert_eq!(
            open(
                slot.id() as CK_SLOT_ID,
                0,
                std::ptr::null_mut(),
                None,
                &mut h
            ),
            CKR_SESSION_PARALLEL_NOT_SUPPORTED
        );
        assert_eq!(
            open(
                slot.id() as CK_SLOT_ID,
                CKF_SERIAL_SESSION,
                std::ptr::null_mut(),
                None,
                std::ptr::null_mut()
            ),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            open(77, CKF_SERIAL_SESSION, std::ptr::null_mut(), None, &mut h),
            CKR_SLOT_ID_INVALID
        );
        assert_eq!(
            open(
                slot.id() as CK_SLOT_ID,
                CKF_SERIAL_SESSION | CKF_RW_SESSION,
                std::ptr::null_mut(),
                None,
                &mut h
            ),
            CKR_OK
        );
        let login = l.C_Login.unwrap();
        let mut p = *b"1234";
        assert_eq!(login(h, 7, p.as_mut_ptr(), 4), CKR_USER_TYPE_INVALID);
        assert_eq!(
            login(h, CKU_USER, std::ptr::null_mut(), 4),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            login(h, CKU_CONTEXT_SPECIFIC, p.as_mut_ptr(), 4),
            CKR_OPERATION_NOT_INITIALIZED
        );
        assert_eq!(
            login(h + 1000, CKU_USER, p.as_mut_ptr(), 4),
            CKR_SESSION_HANDLE_INVALID
        );
        let mut info: CK_SESSION_INFO = std::mem::zeroed();
        assert_eq!(l.C_GetSessionInfo.unwrap()(h, &mut info), CKR_OK);
        assert_eq!(info.flags, CKF_SERIAL_SESSION | CKF_RW_SESSION);
        assert_eq!(info.state, CKS_RW_PUBLIC_SESSION);
        assert_eq!(
            l.C_GetSessionInfo.unwrap()(h, std::ptr::null_mut()),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(l.C_CloseSession.unwrap()(h), CKR_OK);
        assert_eq!(l.C_CloseSession.unwrap()(h), CKR_SESSION_HANDLE_INVALID);
        let mut t: CK_TOKEN_INFO = std::mem::zeroed();
        assert_eq!(
            l.C_GetTokenInfo.unwrap()(slot.id() as CK_SLOT_ID, &mut t),
            CKR_OK
        );
        assert_eq!(t.ulSessionCount, 0);
    }
}

#[test]
fn pin_lockout_survives_restart_and_is_cleared() {
    let mut f = Fixture::new();
    let slot = f.token("lock");
    {
        let s = f.p().open_rw_session(slot).unwrap();
        for i in 0..9 {
            assert_rv!(s.login(UserType::User, Some(&pin("9999"))), PinIncorrect);
            let info = f.p().get_token_info(slot).unwrap();
            assert!(info.user_pin_count_low(), "after {} failures", i + 1);
        }
        assert!(f.p().get_token_info(slot).unwrap().user_pin_final_try());
    }
    f.restart();
    {
        let s = f.p().open_rw_session(slot).unwrap();
        assert_rv!(s.login(UserType::User, Some(&pin("9999"))), PinIncorrect);
        assert!(f.p().get_token_info(slot).unwrap().user_pin_locked());
        assert_rv!(s.login(UserType::User, Some(&pin(USER_PIN))), PinLocked);
    }
    f.restart();
    let s = f.p().open_rw_session(slot).unwrap();
    assert_rv!(s.login(UserType::User, Some(&pin(USER_PIN))), PinLocked);
    s.login(UserType::So, Some(&pin(SO_PIN))).unwrap();
    s.init_pin(&pin("4321")).unwrap();
    s.logout().unwrap();
    let info = f.p().get_token_info(slot).unwrap();
    assert!(!info.user_pin_locked() && !info.user_pin_count_low());
    s.login(UserType::User, Some(&pin("4321"))).unwrap();
}

#[test]
fn good_login_resets_the_counter() {
    let f = Fixture::new();
    let slot = f.token("reset");
    let s = f.p().open_rw_session(slot).unwrap();
    assert_rv!(s.login(UserType::User, Some(&pin("99999"))), PinIncorrect);
    assert_rv!(s.login(UserType::User, Some(&pin("1"))), PinIncorrect);
    assert!(f.p().get_token_info(slot).unwrap().user_pin_count_low());
    s.login(UserType::User, Some(&pin(USER_PIN))).unwrap();
    assert!(!f.p().get_token_info(slot).unwrap().user_pin_count_low());
}

#[test]
fn set_pin_for_user_and_so() {
    let mut f = Fixture::new();
    let slot = f.token("setpin");
    {
        let ro = f.p().open_ro_session(slot).unwrap();
        assert_rv!(ro.set_pin(&pin(USER_PIN), &pin("5555")), SessionReadOnly);
        ro.close().unwrap();
        let s = f.p().open_rw_session(slot).unwrap();
        assert_rv!(s.set_pin(&pin("0000"), &pin("5555")), PinIncorrect);
        assert_rv!(s.set_pin(&pin(USER_PIN), &pin("55")), PinLenRange);
        s.set_pin(&pin(USER_PIN), &pin("5555")).unwrap();
        s.login(UserType::So, Some(&pin(SO_PIN))).unwrap();
        s.set_pin(&pin(SO_PIN), &pin("so-new-pin")).unwrap();
    }
    f.restart();
    let s = f.p().open_rw_session(slot).unwrap();
    assert_rv!(s.login(UserType::User, Some(&pin(USER_PIN))), PinIncorrect);
    s.login(UserType::User, Some(&pin("5555"))).unwrap();
    s.logout().unwrap();
    s.login(UserType::So, Some(&pin("so-new-pin"))).unwrap();
}

#[test]
fn reinitialising_erases_the_token() {
    let mut f = Fixture::new();
    let slot = f.token("erase");
    {
        let s = f.user(slot);
        let t = [
            cryptoki::object::Attribute::Class(cryptoki::object::ObjectClass::DATA),
            cryptoki::object::Attribute::Token(true),
            cryptoki::object::Attribute::Label(b"d".to_vec()),
        ];
        s.create_object(&t).unwrap();
        assert_eq!(s.find_objects(&[]).unwrap().len(), 1);
    }
    assert_rv!(
        f.p().init_token(slot, &pin("wrong-so"), "erase"),
        PinIncorrect
    );
    f.p().init_token(slot, &pin(SO_PIN), "erased").unwrap();
    assert_eq!(f.p().get_token_info(slot).unwrap().label(), "erased");
    assert!(!f.p().get_token_info(slot).unwrap().user_pin_initialized());
    f.restart();
    let s = f.p().open_rw_session(slot).unwrap();
    assert!(s.find_objects(&[]).unwrap().is_empty());
    assert_eq!(
        f.p().get_all_slots().unwrap().len(),
        2,
        "still one token and one free slot"
    );
}

#[test]
fn memory_storage_keeps_nothing() {
    let mut f = Fixture::with_storage("memory");
    let slot = f.token("mem");
    {
        let s = f.user(slot);
        s.create_object(&[
            cryptoki::object::Attribute::Class(cryptoki::object::ObjectClass::DATA),
            cryptoki::object::Attribute::Token(true),
        ])
        .unwrap();
        assert_eq!(s.find_objects(&[]).unwrap().len(), 1);
    }
    assert!(
        std::fs::read_dir(f.dir.path()).unwrap().next().is_none(),
        "nothing on disk"
    );
    f.restart();
    let slots = f.p().get_all_slots().unwrap();
    assert_eq!(slots.len(), 1);
    assert!(!f.p().get_token_info(slots[0]).unwrap().token_initialized());
}

#[test]
fn mechanism_list_and_info() {
    let f = Fixture::new();
    let slot = f.free_slot();
    let mechs = f.p().get_mechanism_list(slot).unwrap();
    assert!(mechs.contains(&cryptoki::mechanism::MechanismType::EDDSA));
    assert!(mechs.contains(&cryptoki::mechanism::MechanismType::SHA256));
    let info = f
        .p()
        .get_mechanism_info(slot, cryptoki::mechanism::MechanismType::EDDSA)
        .unwrap();
    assert!(info.sign() && info.verify() && !info.digest());
    assert_eq!((info.min_key_size(), info.max_key_size()), (255, 448));
    // X25519 and X448: Montgomery key pairs; ECDH's range (192–521) covers
    // 255 and 448.
    let info = f
        .p()
        .get_mechanism_info(
            slot,
            cryptoki::mechanism::MechanismType::ECC_MONTGOMERY_KEY_PAIR_GEN,
        )
        .unwrap();
    assert!(info.generate_key_pair());
    assert_eq!((info.min_key_size(), info.max_key_size()), (255, 448));
    let info = f
        .p()
        .get_mechanism_info(slot, cryptoki::mechanism::MechanismType::ECDH1_DERIVE)
        .unwrap();
    assert!(info.derive());
    assert!(info.min_key_size() <= 255 && info.max_key_size() >= 255);
    let info = f
        .p()
        .get_mechanism_info(slot, cryptoki::mechanism::MechanismType::SHA512)
        .unwrap();
    assert!(info.digest() && !info.sign());
    let unknown = cryptoki::mechanism::MechanismType::new_vendor_defined(
        cryptoki_sys::CKM_VENDOR_DEFINED + 0x30,
    )
    .unwrap();
    assert_rv!(f.p().get_mechanism_info(slot, unknown), MechanismInvalid);
    let info = f
        .p()
        .get_mechanism_info(slot, cryptoki::mechanism::MechanismType::AES_CFB128)
        .unwrap();
    assert!(info.encrypt() && info.decrypt() && !info.wrap());
}
