//! `C_GetOperationState` / `C_SetOperationState` (base spec §5.6) through
//! the raw function list: digests and MACs continue from a saved state in
//! another session exactly as they would have, the MAC's key is asked for
//! again, and references that were not issued, were edited, belong to
//! another token or outlived `C_Finalize` are refused.

mod common;

use common::*;
use cryptoki::mechanism::Mechanism;
use cryptoki::object::Attribute;
use cryptoki::session::Session;
use cryptoki_sys::*;
use std::ptr::null_mut;

#[track_caller]
fn ok(rv: CK_RV) {
    assert_eq!(rv, CKR_OK);
}

fn plain(ty: CK_MECHANISM_TYPE) -> CK_MECHANISM {
    CK_MECHANISM {
        mechanism: ty,
        pParameter: null_mut(),
        ulParameterLen: 0,
    }
}

/// The session's state, after a size query.
#[track_caller]
fn get_state(s: &Session) -> Result<Vec<u8>, CK_RV> {
    let l = raw();
    let mut len: CK_ULONG = 0;
    // SAFETY: live buffers of the stated lengths.
    unsafe {
        let rv = l.C_GetOperationState.unwrap()(s.handle(), null_mut(), &mut len);
        if rv != CKR_OK {
            return Err(rv);
        }
        let mut state = vec![0u8; len as usize];
        let mut short: CK_ULONG = len - 1;
        assert_eq!(
            l.C_GetOperationState.unwrap()(s.handle(), state.as_mut_ptr(), &mut short),
            CKR_BUFFER_TOO_SMALL
        );
        ok(l.C_GetOperationState.unwrap()(
            s.handle(),
            state.as_mut_ptr(),
            &mut len,
        ));
        state.truncate(len as usize);
        Ok(state)
    }
}

fn set_state(s: &Session, state: &[u8], auth: CK_OBJECT_HANDLE) -> CK_RV {
    set_state_keys(s, state, 0, auth)
}

fn update(
    s: &Session,
    f: unsafe extern "C" fn(CK_SESSION_HANDLE, *mut u8, CK_ULONG) -> CK_RV,
    data: &[u8],
) {
    let mut data = data.to_vec();
    // SAFETY: a live buffer of the stated length.
    ok(unsafe { f(s.handle(), data.as_mut_ptr(), data.len() as CK_ULONG) });
}

fn finish(
    s: &Session,
    f: unsafe extern "C" fn(CK_SESSION_HANDLE, *mut u8, *mut CK_ULONG) -> CK_RV,
) -> Vec<u8> {
    let mut out = [0u8; 64];
    let mut len: CK_ULONG = 64;
    // SAFETY: a live buffer of the stated length.
    ok(unsafe { f(s.handle(), out.as_mut_ptr(), &mut len) });
    out[..len as usize].to_vec()
}

#[test]
fn digests_continue_from_a_saved_state_in_another_session() {
    let f = Fixture::new();
    let slot = f.token("opstate");
    let a = f.user(slot);
    let b = f.p().open_rw_session(slot).unwrap();
    let l = raw();
    let whole = a.digest(&Mechanism::Sha256, b"hello, world").unwrap();
    // SAFETY: a valid mechanism.
    ok(unsafe { l.C_DigestInit.unwrap()(a.handle(), &mut plain(CKM_SHA256)) });
    update(&a, l.C_DigestUpdate.unwrap(), b"hello, ");
    let state = get_state(&a).unwrap();
    update(&a, l.C_DigestUpdate.unwrap(), b"world");
    assert_eq!(finish(&a, l.C_DigestFinal.unwrap()), whole);
    // Restored twice in another session: the same digest each time.
    for _ in 0..2 {
        ok(set_state(&b, &state, 0));
        update(&b, l.C_DigestUpdate.unwrap(), b"world");
        assert_eq!(finish(&b, l.C_DigestFinal.unwrap()), whole);
    }
    // A digest-only state needs no key.
    let key = hmac_key(&a);
    assert_eq!(set_state(&b, &state, key.handle()), CKR_KEY_NOT_NEEDED);
    // Edited, cut or invented references.
    for i in [0, 5, state.len() - 1] {
        let mut edited = state.clone();
        edited[i] ^= 1;
        assert_eq!(
            set_state(&b, &edited, 0),
            CKR_SAVED_STATE_INVALID,
            "byte {i}"
        );
    }
    assert_eq!(set_state(&b, &state[1..], 0), CKR_SAVED_STATE_INVALID);
    assert_eq!(set_state(&b, &[0u8; 36], 0), CKR_SAVED_STATE_INVALID);
    // Another token's session cannot take it.
    let other = f.token("opstate-other");
    let c = f.user(other);
    assert_eq!(set_state(&c, &state, 0), CKR_SAVED_STATE_INVALID);
    // Nothing active, or an operation whose state is not saved.
    assert_eq!(get_state(&c).unwrap_err(), CKR_OPERATION_NOT_INITIALIZED);
    let aes = c
        .generate_key(
            &Mechanism::AesKeyGen,
            &[Attribute::ValueLen(16.into()), Attribute::Token(false)],
        )
        .unwrap();
    // AES-GCM encryption: a restored copy would encrypt twice under one IV.
    let mut iv = [0u8; 12];
    let mut gcm = CK_GCM_PARAMS {
        pIv: iv.as_mut_ptr(),
        ulIvLen: 12,
        ulIvBits: 96,
        pAAD: null_mut(),
        ulAADLen: 0,
        ulTagBits: 128,
    };
    let mut mech = CK_MECHANISM {
        mechanism: CKM_AES_GCM,
        pParameter: (&mut gcm as *mut CK_GCM_PARAMS).cast(),
        ulParameterLen: std::mem::size_of::<CK_GCM_PARAMS>() as CK_ULONG,
    };
    // SAFETY: a valid mechanism whose parameter outlives the call.
    ok(unsafe { l.C_EncryptInit.unwrap()(c.handle(), &mut mech, aes.handle()) });
    assert_eq!(get_state(&c).unwrap_err(), CKR_STATE_UNSAVEABLE);
}

/// A NULL state is `CKR_ARGUMENTS_BAD` (whatever its length), before the
/// state is looked at.
#[test]
fn a_null_state_is_arguments_bad() {
    let f = Fixture::new();
    let slot = f.token("opstatenull");
    let a = f.user(slot);
    let l = raw();
    for len in [0, STATE_LEN] {
        // SAFETY: NULL is what is tested; the module must not read it.
        let rv = unsafe { l.C_SetOperationState.unwrap()(a.handle(), null_mut(), len, 0, 0) };
        assert_eq!(rv, CKR_ARGUMENTS_BAD, "length {len}");
    }
}

const STATE_LEN: CK_ULONG = 36;

/// One cipher mode of the test with its parameter.
fn cipher_mechanisms() -> Vec<(CK_MECHANISM_TYPE, Vec<u8>, bool)> {
    let ctr = ctr_param_bytes(64, [9; 16]);
    vec![
        (CKM_AES_ECB, vec![], true),
        (CKM_AES_CBC, vec![3; 16], true),
        (CKM_AES_CBC_PAD, vec![3; 16], true),
        (CKM_AES_CTR, ctr, true),
        (CKM_DES3_ECB, vec![], false),
        (CKM_DES3_CBC_PAD, vec![5; 8], false),
    ]
}

fn cipher_call(
    s: &Session,
    f: unsafe extern "C" fn(CK_SESSION_HANDLE, *mut u8, CK_ULONG, *mut u8, *mut CK_ULONG) -> CK_RV,
    data: &[u8],
) -> Vec<u8> {
    let mut data = data.to_vec();
    let mut out = vec![0u8; data.len() + 32];
    let mut len = out.len() as CK_ULONG;
    // SAFETY: live buffers of the stated lengths.
    ok(unsafe {
        f(
            s.handle(),
            data.as_mut_ptr(),
            data.len() as CK_ULONG,
            out.as_mut_ptr(),
            &mut len,
        )
    });
    out.truncate(len as usize);
    out
}

fn cipher_final(
    s: &Session,
    f: unsafe extern "C" fn(CK_SESSION_HANDLE, *mut u8, *mut CK_ULONG) -> CK_RV,
) -> Vec<u8> {
    let mut out = vec![0u8; 64];
    let mut len: CK_ULONG = 64;
    // SAFETY: a live buffer of the stated length.
    ok(unsafe { f(s.handle(), out.as_mut_ptr(), &mut len) });
    out.truncate(len as usize);
    out
}

fn set_state_keys(
    s: &Session,
    state: &[u8],
    enc: CK_OBJECT_HANDLE,
    auth: CK_OBJECT_HANDLE,
) -> CK_RV {
    let mut state = state.to_vec();
    // SAFETY: a live buffer of the stated length.
    unsafe {
        raw().C_SetOperationState.unwrap()(
            s.handle(),
            state.as_mut_ptr(),
            state.len() as CK_ULONG,
            enc,
            auth,
        )
    }
}

/// AES (ECB, CBC, CBC-PAD, CTR) and Triple-DES encryption and decryption
/// continue from a saved state in another session, to the very output the
/// saving session produces; the key is asked for again, must be the same
/// key value and still allow the direction.
#[test]
fn ciphers_continue_from_a_saved_state_with_their_key() {
    let f = Fixture::new();
    let slot = f.token("opstatecipher");
    let a = f.user(slot);
    let b = f.p().open_rw_session(slot).unwrap();
    let l = raw();
    let secret = |m: Mechanism, len: Option<u64>| cipher_key(&a, m, len);
    let (aes, aes2) = (
        secret(Mechanism::AesKeyGen, Some(16)),
        secret(Mechanism::AesKeyGen, Some(16)),
    );
    let des3 = secret(Mechanism::Des3KeyGen, None);
    let hmac = hmac_key(&a).handle();
    let (aes_object, aes, aes2, des3) = (aes, aes.handle(), aes2.handle(), des3.handle());
    let plaintext: Vec<u8> = (0..40u8).collect();
    for (ty, mut param, is_aes) in cipher_mechanisms() {
        let key = if is_aes { aes } else { des3 };
        let other = if is_aes { aes2 } else { des3 };
        let len = if matches!(ty, CKM_AES_ECB | CKM_AES_CBC) {
            32
        } else if ty == CKM_DES3_ECB {
            40
        } else {
            37
        };
        let data = &plaintext[..len];
        let mut ciphertext = vec![];
        for encrypt in [true, false] {
            let (init, _, update_f, final_f) = cipher_fns(encrypt);
            let input = if encrypt {
                data.to_vec()
            } else {
                ciphertext.clone()
            };
            let mut mech = CK_MECHANISM {
                mechanism: ty,
                pParameter: if param.is_empty() {
                    null_mut()
                } else {
                    param.as_mut_ptr().cast()
                },
                ulParameterLen: param.len() as CK_ULONG,
            };
            // SAFETY: a valid mechanism whose parameter outlives the call.
            ok(unsafe { init(a.handle(), &mut mech, key) });
            // A partial block is pending when the state is saved.
            let mut head = cipher_call(&a, update_f, &input[..13]);
            let state = get_state(&a).unwrap();
            let mut tail = cipher_call(&a, update_f, &input[13..]);
            tail.extend(cipher_final(&a, final_f));
            head.extend(&tail);
            if encrypt {
                ciphertext = head.clone();
                assert!(ciphertext.len() >= len, "{ty:#x}");
            } else {
                assert_eq!(head, data, "{ty:#x}");
            }
            // The key is asked for again: none, another, a MAC key given
            // as the authentication key.
            assert_eq!(set_state_keys(&b, &state, 0, 0), CKR_KEY_NEEDED);
            if other != key {
                assert_eq!(set_state_keys(&b, &state, other, 0), CKR_KEY_CHANGED);
            }
            assert_eq!(set_state_keys(&b, &state, key, hmac), CKR_KEY_NOT_NEEDED);
            // Restored twice: the same continuation each time.
            for _ in 0..2 {
                ok(set_state_keys(&b, &state, key, 0));
                let mut rest = cipher_call(&b, update_f, &input[13..]);
                rest.extend(cipher_final(&b, final_f));
                assert_eq!(rest, tail, "{ty:#x} encrypt={encrypt}");
            }
        }
    }
    // A key that lost the direction since the save does not go on.
    let mut mech = CK_MECHANISM {
        mechanism: CKM_AES_ECB,
        pParameter: null_mut(),
        ulParameterLen: 0,
    };
    // SAFETY: a valid mechanism.
    ok(unsafe { l.C_EncryptInit.unwrap()(a.handle(), &mut mech, aes) });
    cipher_call(&a, l.C_EncryptUpdate.unwrap(), &[1; 5]);
    let state = get_state(&a).unwrap();
    let handle = aes_object;
    a.update_attributes(handle, &[Attribute::Encrypt(false)])
        .unwrap();
    assert_eq!(
        set_state_keys(&b, &state, aes, 0),
        CKR_KEY_FUNCTION_NOT_PERMITTED
    );
    // A destroyed key: its handle is no longer valid.
    a.destroy_object(handle).unwrap();
    assert_eq!(set_state_keys(&b, &state, aes, 0), CKR_KEY_HANDLE_INVALID);
}

#[test]
fn macs_continue_from_a_saved_state_with_their_key() {
    let mut f = Fixture::new();
    let slot = f.token("opstatemac");
    let a = f.user(slot);
    let b = f.p().open_rw_session(slot).unwrap();
    let l = raw();
    let key = hmac_key(&a);
    let other_key = hmac_key(&a);
    let whole = a
        .sign(&Mechanism::Sha256Hmac, key, b"part one, part two")
        .unwrap();
    // SAFETY: a valid mechanism.
    ok(unsafe { l.C_SignInit.unwrap()(a.handle(), &mut plain(CKM_SHA256_HMAC), key.handle()) });
    update(&a, l.C_SignUpdate.unwrap(), b"part one, ");
    let state = get_state(&a).unwrap();
    assert_eq!(set_state(&b, &state, 0), CKR_KEY_NEEDED);
    assert_eq!(set_state(&b, &state, other_key.handle()), CKR_KEY_CHANGED);
    ok(set_state(&b, &state, key.handle()));
    update(&b, l.C_SignUpdate.unwrap(), b"part two");
    assert_eq!(finish(&b, l.C_SignFinal.unwrap()), whole);
    // MAC verification likewise, and a wrong MAC still fails.
    // SAFETY: a valid mechanism.
    ok(unsafe { l.C_VerifyInit.unwrap()(a.handle(), &mut plain(CKM_SHA256_HMAC), key.handle()) });
    update(&a, l.C_VerifyUpdate.unwrap(), b"part one, ");
    let state = get_state(&a).unwrap();
    for (mac, want) in [
        (whole.clone(), CKR_OK),
        (vec![0u8; 32], CKR_SIGNATURE_INVALID),
    ] {
        ok(set_state(&b, &state, key.handle()));
        update(&b, l.C_VerifyUpdate.unwrap(), b"part two");
        let mut mac = mac;
        // SAFETY: a live buffer of the stated length.
        let rv = unsafe { l.C_VerifyFinal.unwrap()(b.handle(), mac.as_mut_ptr(), 32) };
        assert_eq!(rv, want);
    }
    // AES-CMAC likewise (a state with a partial block pending).
    let aes = a
        .generate_key(
            &Mechanism::AesKeyGen,
            &[
                Attribute::ValueLen(16.into()),
                Attribute::Token(false),
                Attribute::Sign(true),
            ],
        )
        .unwrap();
    let d = f.p().open_rw_session(slot).unwrap();
    let whole = d
        .sign(&Mechanism::AesCMac, aes, b"0123456789abcdefXYZ")
        .unwrap();
    // SAFETY: a valid mechanism.
    ok(unsafe { l.C_SignInit.unwrap()(d.handle(), &mut plain(CKM_AES_CMAC), aes.handle()) });
    update(&d, l.C_SignUpdate.unwrap(), b"0123456789abcdefX");
    let cmac_state = get_state(&d).unwrap();
    let e = f.p().open_rw_session(slot).unwrap();
    ok(set_state(&e, &cmac_state, aes.handle()));
    update(&e, l.C_SignUpdate.unwrap(), b"YZ");
    assert_eq!(finish(&e, l.C_SignFinal.unwrap()), whole);
    drop((d, e));
    // A signature's state is not saved; references die with C_Finalize.
    let (_, ed) = a
        .generate_key_pair(
            &Mechanism::EccEdwardsKeyPairGen,
            &[
                Attribute::EcParams(vec![0x06, 0x03, 0x2b, 0x65, 0x70]),
                Attribute::Token(false),
            ],
            &[Attribute::Token(false), Attribute::Sign(true)],
        )
        .unwrap();
    // (The states above carried `a`'s unfinished HMAC signature too, so
    // `b` has one now: a fresh session signs.)
    let c = f.p().open_rw_session(slot).unwrap();
    // SAFETY: a valid mechanism.
    ok(unsafe { l.C_SignInit.unwrap()(c.handle(), &mut plain(CKM_EDDSA), ed.handle()) });
    assert_eq!(get_state(&c).unwrap_err(), CKR_STATE_UNSAVEABLE);
    drop((a, b, c));
    f.restart();
    let a = f.user(slot);
    assert_eq!(set_state(&a, &state, 0), CKR_SAVED_STATE_INVALID);
}

/// A saved MAC state holds its key, parsed: for a private key it is
/// forgotten at `C_Logout` (docs/SECURITY.md, "Memory hygiene"), even if
/// the user logs in again; a public key's state stays usable.
#[test]
fn saved_states_of_private_keys_end_at_logout() {
    let f = Fixture::new();
    let slot = f.token("opstatelogout");
    let a = f.user(slot);
    let l = raw();
    let mac_key = |private: bool| {
        a.generate_key(
            &Mechanism::GenericSecretKeyGen,
            &[
                Attribute::ValueLen(32.into()),
                Attribute::Token(true),
                Attribute::Private(private),
                Attribute::Sign(true),
            ],
        )
        .unwrap()
    };
    let (private, public) = (mac_key(true), mac_key(false));
    let saved = |key: cryptoki::object::ObjectHandle| {
        // SAFETY: a valid mechanism.
        ok(unsafe { l.C_SignInit.unwrap()(a.handle(), &mut plain(CKM_SHA256_HMAC), key.handle()) });
        update(&a, l.C_SignUpdate.unwrap(), b"part one, ");
        let state = get_state(&a).unwrap();
        finish(&a, l.C_SignFinal.unwrap());
        state
    };
    let (private_state, public_state) = (saved(private), saved(public));
    a.logout().unwrap();
    a.login(cryptoki::session::UserType::User, Some(&pin(USER_PIN)))
        .unwrap();
    assert_eq!(
        set_state(&a, &private_state, private.handle()),
        CKR_SAVED_STATE_INVALID
    );
    ok(set_state(&a, &public_state, public.handle()));
}
