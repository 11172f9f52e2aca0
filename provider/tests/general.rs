//! General-purpose functions and interfaces (base spec §5.4), through the
//! raw function list.

mod common;

use common::*;
use cryptoki_sys::*;
use std::ptr::{null, null_mut};

#[test]
fn function_list_and_interfaces() {
    let _f = Fixture::new();
    let list = raw();
    assert_eq!((list.version.major, list.version.minor), (2, 40));
    let get_list = list.C_GetFunctionList.unwrap();
    // SAFETY: calls into the module with valid or deliberately null pointers.
    unsafe {
        assert_eq!(get_list(null_mut()), CKR_ARGUMENTS_BAD);
        let lib = cryptoki_sys::Pkcs11::new(module_path()).unwrap();
        let mut count: CK_ULONG = 0;
        assert_eq!(lib.C_GetInterfaceList(null_mut(), &mut count), CKR_OK);
        assert_eq!(count, 4);
        let mut small = [std::mem::zeroed::<CK_INTERFACE>(); 1];
        let mut one: CK_ULONG = 1;
        assert_eq!(
            lib.C_GetInterfaceList(small.as_mut_ptr(), &mut one),
            CKR_BUFFER_TOO_SMALL
        );
        assert_eq!(one, 4);
        let mut all = [std::mem::zeroed::<CK_INTERFACE>(); 4];
        assert_eq!(lib.C_GetInterfaceList(all.as_mut_ptr(), &mut count), CKR_OK);
        let listed: Vec<(String, u8, u8)> = all
            .iter()
            .map(|i| {
                let v = *(i.pFunctionList as *const CK_VERSION);
                let name = std::ffi::CStr::from_ptr(i.pInterfaceName as *const std::ffi::c_char);
                (name.to_str().unwrap().to_string(), v.major, v.minor)
            })
            .collect();
        assert_eq!(
            listed,
            vec![
                ("PKCS 11".to_string(), 3, 2),
                ("PKCS 11".to_string(), 3, 0),
                ("PKCS 11".to_string(), 2, 40),
                ("Vendor dalek-pkcs11".to_string(), 1, 1)
            ]
        );

        let mut iface: *mut CK_INTERFACE = null_mut();
        assert_eq!(
            lib.C_GetInterface(null_mut(), null_mut(), &mut iface, 0),
            CKR_OK
        );
        // The default is 3.2 (cryptoki and python-pkcs11 use its
        // functions only when it is).
        let list32 = &*((*iface).pFunctionList as *const CK_FUNCTION_LIST_3_2);
        assert_eq!((list32.version.major, list32.version.minor), (3, 2));
        assert!(
            list32.C_LoginUser.is_some()
                && list32.C_SessionCancel.is_some()
                && list32.C_MessageVerifyFinal.is_some()
                && list32.C_VerifySignatureInit.is_some()
                && list32.C_UnwrapKeyAuthenticated.is_some()
        );
        let mut info: CK_INFO = std::mem::zeroed();
        assert_eq!(list32.C_GetInfo.unwrap()(&mut info), CKR_OK);
        assert_eq!(
            (info.cryptokiVersion.major, info.cryptokiVersion.minor),
            (3, 2)
        );
        let mut v30 = CK_VERSION { major: 3, minor: 0 };
        let mut name30 = *b"PKCS 11\0";
        assert_eq!(
            lib.C_GetInterface(name30.as_mut_ptr(), &mut v30, &mut iface, 0),
            CKR_OK
        );
        let list30 = &*((*iface).pFunctionList as *const CK_FUNCTION_LIST_3_0);
        assert_eq!((list30.version.major, list30.version.minor), (3, 0));
        assert_eq!(list30.C_GetInfo.unwrap()(&mut info), CKR_OK);
        assert_eq!(
            (info.cryptokiVersion.major, info.cryptokiVersion.minor),
            (3, 0)
        );
        let mut v240 = CK_VERSION {
            major: 2,
            minor: 40,
        };
        let mut name = *b"PKCS 11\0";
        assert_eq!(
            lib.C_GetInterface(name.as_mut_ptr(), &mut v240, &mut iface, 0),
            CKR_OK
        );
        let v = *((*iface).pFunctionList as *const CK_VERSION);
        assert_eq!((v.major, v.minor), (2, 40));
        let mut other = *b"Vendor X\0";
        assert_eq!(
            lib.C_GetInterface(other.as_mut_ptr(), null_mut(), &mut iface, 0),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            lib.C_GetInterface(null_mut(), null_mut(), null_mut(), 0),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            lib.C_GetInterface(null_mut(), null_mut(), &mut iface, CKF_INTERFACE_FORK_SAFE),
            CKR_ARGUMENTS_BAD
        );
        std::mem::forget(lib);
    }
}

#[test]
fn every_table_entry_is_present() {
    let _f = Fixture::new();
    let list = raw();
    // A CK_FUNCTION_LIST is a version followed by function pointers.
    let n = (std::mem::size_of::<CK_FUNCTION_LIST>() - 8) / 8;
    // SAFETY: reading the pointer-sized slots of the module's static table.
    let entries = unsafe {
        std::slice::from_raw_parts(
            (list as *const CK_FUNCTION_LIST as *const u8).add(8) as *const usize,
            n,
        )
    };
    assert_eq!(n, 68);
    assert!(entries.iter().all(|&p| p != 0), "a 2.40 entry is null");
    // And every entry of the 3.2 list (the 3.0 list is its prefix).
    // SAFETY: the module's own interface table and static function list.
    unsafe {
        let lib = cryptoki_sys::Pkcs11::new(module_path()).unwrap();
        let mut iface: *mut CK_INTERFACE = null_mut();
        let mut v32 = CK_VERSION { major: 3, minor: 2 };
        let mut name = *b"PKCS 11\0";
        assert_eq!(
            lib.C_GetInterface(name.as_mut_ptr(), &mut v32, &mut iface, 0),
            CKR_OK
        );
        let n32 = (std::mem::size_of::<CK_FUNCTION_LIST_3_2>() - 8) / 8;
        let entries32 = std::slice::from_raw_parts(
            ((*iface).pFunctionList as *const u8).add(8) as *const usize,
            n32,
        );
        assert_eq!(n32, 104);
        assert!(entries32.iter().all(|&p| p != 0), "a 3.2 entry is null");
        std::mem::forget(lib);
    }
}

#[test]
fn initialize_arguments_and_states() {
    let mut f = Fixture::new();
    let l = raw();
    // SAFETY: module calls with valid or deliberately bad pointers.
    unsafe {
        assert_eq!(
            l.C_Initialize.unwrap()(null_mut()),
            CKR_CRYPTOKI_ALREADY_INITIALIZED
        );
        f.pkcs11.take().unwrap().finalize().unwrap();
        let mut info: CK_INFO = std::mem::zeroed();
        assert_eq!(
            l.C_GetInfo.unwrap()(&mut info),
            CKR_CRYPTOKI_NOT_INITIALIZED
        );
        assert_eq!(
            l.C_Finalize.unwrap()(null_mut()),
            CKR_CRYPTOKI_NOT_INITIALIZED
        );
        let mut slots: CK_ULONG = 0;
        assert_eq!(
            l.C_GetSlotList.unwrap()(0, null_mut(), &mut slots),
            CKR_CRYPTOKI_NOT_INITIALIZED
        );

        unsafe extern "C" fn create(_: *mut *mut std::ffi::c_void) -> CK_RV {
            CKR_OK
        }
        unsafe extern "C" fn other(_: *mut std::ffi::c_void) -> CK_RV {
            CKR_OK
        }
        let mut args = CK_C_INITIALIZE_ARGS {
            CreateMutex: Some(create),
            DestroyMutex: Some(other),
            LockMutex: Some(other),
            UnlockMutex: None,
            flags: CKF_OS_LOCKING_OK,
            pReserved: null_mut(),
        };
        let init = l.C_Initialize.unwrap();
        assert_eq!(
            init((&mut args as *mut CK_C_INITIALIZE_ARGS).cast()),
            CKR_ARGUMENTS_BAD
        );
        args.UnlockMutex = Some(other);
        args.flags = 0;
        assert_eq!(
            init((&mut args as *mut CK_C_INITIALIZE_ARGS).cast()),
            CKR_CANT_LOCK
        );
        args.flags = CKF_OS_LOCKING_OK;
        let mut x = 1u8;
        args.pReserved = (&mut x as *mut u8).cast();
        assert_eq!(
            init((&mut args as *mut CK_C_INITIALIZE_ARGS).cast()),
            CKR_ARGUMENTS_BAD
        );
        args.pReserved = null_mut();
        assert_eq!(
            init((&mut args as *mut CK_C_INITIALIZE_ARGS).cast()),
            CKR_OK
        );
        assert_eq!(l.C_GetInfo.unwrap()(&mut info), CKR_OK);
        assert_eq!(
            (info.cryptokiVersion.major, info.cryptokiVersion.minor),
            (2, 40),
            "2.40 table reports 2.40"
        );
        assert_eq!(l.C_GetInfo.unwrap()(null_mut()), CKR_ARGUMENTS_BAD);
        let mut reserved = 0u8;
        assert_eq!(
            l.C_Finalize.unwrap()((&mut reserved as *mut u8).cast()),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(l.C_Finalize.unwrap()(null_mut()), CKR_OK);
    }
    f.start();
    let info = f.p().get_library_info().unwrap();
    assert_eq!(
        info.cryptoki_version().major(),
        3,
        "3.0 interface reports 3.0"
    );
    assert_eq!(info.manufacturer_id(), "dalek-pkcs11 project");
}

#[test]
fn forked_child_must_initialize_again() {
    let f = Fixture::new();
    let slot = f.token("fork");
    let l = raw();
    // SAFETY: fork in a test process; the child only calls the module and _exit.
    unsafe {
        let pid = libc::fork();
        assert!(pid >= 0);
        if pid == 0 {
            let mut count: CK_ULONG = 0;
            let before = l.C_GetSlotList.unwrap()(0, null_mut(), &mut count);
            let init = l.C_Initialize.unwrap()(null_mut());
            let mut info: CK_TOKEN_INFO = std::mem::zeroed();
            let after = l.C_GetTokenInfo.unwrap()(slot.id() as CK_SLOT_ID, &mut info);
            let ok = before == CKR_CRYPTOKI_NOT_INITIALIZED && init == CKR_OK && after == CKR_OK;
            libc::_exit(if ok { 0 } else { 1 });
        }
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "child saw wrong codes"
        );
    }
    // The parent is unaffected.
    assert!(f.p().get_token_info(slot).is_ok());
}

/// Forks: the child runs `child` (module calls only) and hands its bytes
/// back through a pipe (`None`: it failed); the parent runs `parent`
/// meanwhile. Returns both results once the child has exited 0.
fn fork_with(
    child: impl FnOnce() -> Option<Vec<u8>>,
    parent: impl FnOnce() -> Vec<u8>,
) -> (Vec<u8>, Vec<u8>) {
    let mut fds = [0i32; 2];
    // SAFETY: pipe with a two-int array; fork in a test process whose child
    // only runs `child` (module calls with live buffers), write and _exit.
    unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        let pid = libc::fork();
        assert!(pid >= 0);
        if pid == 0 {
            let code = match child() {
                Some(out) => {
                    let written = libc::write(fds[1], out.as_ptr().cast(), out.len());
                    if written == out.len() as isize { 0 } else { 1 }
                }
                None => 1,
            };
            libc::_exit(code);
        }
        let mine = parent();
        let mut theirs = vec![0u8; 256];
        let n = libc::read(fds[0], theirs.as_mut_ptr().cast(), theirs.len());
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        libc::close(fds[0]);
        libc::close(fds[1]);
        assert!(n > 0);
        theirs.truncate(n as usize);
        (mine, theirs)
    }
}

/// A forked child never repeats its parent's random stream: both draw from
/// a generator state copied at `fork()`, so without the reseed in the
/// child both would return the same bytes.
#[test]
fn forked_child_gets_its_own_random_stream() {
    let f = Fixture::new();
    let slot = f.token("fork-random");
    let s = f.user(slot);
    let mut warm = [0u8; 32];
    s.generate_random_slice(&mut warm).unwrap();
    let l = raw();
    let (parent, child) = fork_with(
        || {
            let mut out = [0u8; 32];
            let mut session: CK_SESSION_HANDLE = 0;
            // SAFETY: module calls with live buffers.
            let ok = unsafe {
                l.C_Initialize.unwrap()(null_mut()) == CKR_OK
                    && l.C_OpenSession.unwrap()(
                        slot.id() as CK_SLOT_ID,
                        CKF_SERIAL_SESSION,
                        null_mut(),
                        None,
                        &mut session,
                    ) == CKR_OK
                    && l.C_GenerateRandom.unwrap()(session, out.as_mut_ptr(), 32) == CKR_OK
            };
            ok.then(|| out.to_vec())
        },
        || {
            let mut parent = [0u8; 32];
            s.generate_random_slice(&mut parent).unwrap();
            parent.to_vec()
        },
    );
    assert_eq!(child.len(), 32);
    assert_ne!(parent, child, "child repeated the parent's random bytes");
}

/// A forked child never repeats its parent's key pairs: in the default
/// build P-256 keys come from AWS-LC's generator, whose state is copied at
/// `fork()` like ours; AWS-LC must reseed in the child (docs/SECURITY.md,
/// "Random numbers"), else parent and child would make the same key.
#[test]
fn forked_child_generates_its_own_keys() {
    let f = Fixture::new();
    let slot = f.token("fork-keygen");
    let s = f.user(slot);
    let p256 = [0x06u8, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
    let make = || {
        let (public, _) = s
            .generate_key_pair(
                &cryptoki::mechanism::Mechanism::EccKeyPairGen,
                &[cryptoki::object::Attribute::EcParams(p256.to_vec())],
                &[cryptoki::object::Attribute::Sign(true)],
            )
            .unwrap();
        ec_point(&s, public)
    };
    // The generator's state exists before the fork, so the child copies it.
    make();
    let l = raw();
    let (parent, child) = fork_with(
        || {
            let mut session: CK_SESSION_HANDLE = 0;
            let mut user_pin = USER_PIN.as_bytes().to_vec();
            let mut params = p256;
            let mut yes: CK_BBOOL = CK_TRUE;
            let mut public_t = [CK_ATTRIBUTE {
                type_: CKA_EC_PARAMS,
                pValue: params.as_mut_ptr().cast(),
                ulValueLen: params.len() as CK_ULONG,
            }];
            let mut private_t = [CK_ATTRIBUTE {
                type_: CKA_SIGN,
                pValue: (&mut yes as *mut CK_BBOOL).cast(),
                ulValueLen: 1,
            }];
            let mut mech = CK_MECHANISM {
                mechanism: CKM_EC_KEY_PAIR_GEN,
                pParameter: null_mut(),
                ulParameterLen: 0,
            };
            let (mut public, mut private) = (0, 0);
            let mut point = [0u8; 80];
            let mut attr = [CK_ATTRIBUTE {
                type_: CKA_EC_POINT,
                pValue: point.as_mut_ptr().cast(),
                ulValueLen: point.len() as CK_ULONG,
            }];
            // SAFETY: module calls with the live buffers above.
            let ok = unsafe {
                l.C_Initialize.unwrap()(null_mut()) == CKR_OK
                    && l.C_OpenSession.unwrap()(
                        slot.id() as CK_SLOT_ID,
                        CKF_SERIAL_SESSION | CKF_RW_SESSION,
                        null_mut(),
                        None,
                        &mut session,
                    ) == CKR_OK
                    && l.C_Login.unwrap()(
                        session,
                        CKU_USER,
                        user_pin.as_mut_ptr(),
                        user_pin.len() as CK_ULONG,
                    ) == CKR_OK
                    && l.C_GenerateKeyPair.unwrap()(
                        session,
                        &mut mech,
                        public_t.as_mut_ptr(),
                        1,
                        private_t.as_mut_ptr(),
                        1,
                        &mut public,
                        &mut private,
                    ) == CKR_OK
                    && l.C_GetAttributeValue.unwrap()(session, public, attr.as_mut_ptr(), 1)
                        == CKR_OK
            };
            ok.then(|| point[..attr[0].ulValueLen as usize].to_vec())
        },
        make,
    );
    assert_eq!(child.len(), parent.len());
    assert_ne!(parent, child, "child made the parent's key pair");
}

#[test]
fn legacy_and_unsupported_functions() {
    let f = Fixture::new();
    let slot = f.token("legacy");
    let s = f.user(slot);
    let h = s.handle();
    let l = raw();
    // SAFETY: module calls with valid pointers or none.
    unsafe {
        assert_eq!(l.C_GetFunctionStatus.unwrap()(h), CKR_FUNCTION_NOT_PARALLEL);
        assert_eq!(l.C_CancelFunction.unwrap()(h), CKR_FUNCTION_NOT_PARALLEL);
        assert_eq!(
            l.C_GetFunctionStatus.unwrap()(0xdead),
            CKR_SESSION_HANDLE_INVALID
        );
        assert_eq!(
            l.C_SignRecoverInit.unwrap()(h, null_mut(), 0),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            l.C_EncryptInit.unwrap()(h, null_mut(), 0),
            CKR_ARGUMENTS_BAD
        );
        // C_SeedRandom mixes the seed in (base spec §5.17).
        assert_eq!(l.C_SeedRandom.unwrap()(h, [1u8; 4].as_mut_ptr(), 4), CKR_OK);
        assert_eq!(l.C_SeedRandom.unwrap()(h, null_mut(), 0), CKR_OK);
        assert_eq!(l.C_SeedRandom.unwrap()(h, null_mut(), 4), CKR_ARGUMENTS_BAD);
        assert_eq!(
            l.C_SeedRandom.unwrap()(0xdead, [1u8; 4].as_mut_ptr(), 4),
            CKR_SESSION_HANDLE_INVALID
        );
        let mut random = [0u8; 32];
        assert_eq!(
            l.C_GenerateRandom.unwrap()(h, random.as_mut_ptr(), 32),
            CKR_OK
        );
        assert_ne!(random, [0u8; 32]);
        // The token made above is a slot event, reported once.
        let mut slot_out: CK_SLOT_ID = 0;
        assert_eq!(
            l.C_WaitForSlotEvent.unwrap()(CKF_DONT_BLOCK, &mut slot_out, null_mut()),
            CKR_OK
        );
        assert_eq!(slot_out, slot.id());
        assert_eq!(
            l.C_WaitForSlotEvent.unwrap()(CKF_DONT_BLOCK, &mut slot_out, null_mut()),
            CKR_NO_EVENT
        );
        let _ = null::<u8>();
    }
}

/// A thread's repeated calls on one session skip the session table (a
/// per-thread cache); closing that session from another thread must still
/// make the next call fail with `CKR_SESSION_HANDLE_INVALID`, and a new
/// session must work at once.
#[test]
fn closing_a_session_elsewhere_invalidates_this_threads_lookup() {
    let f = Fixture::new();
    let slot = f.token("session-cache");
    let l = raw();
    let open = || {
        let mut h: CK_SESSION_HANDLE = 0;
        // SAFETY: valid out-pointer; no callback.
        let rv = unsafe {
            l.C_OpenSession.unwrap()(
                slot.id() as CK_SLOT_ID,
                CKF_SERIAL_SESSION,
                null_mut(),
                None,
                &mut h,
            )
        };
        assert_eq!(rv, CKR_OK);
        h
    };
    let digest_init = |h: CK_SESSION_HANDLE| {
        let mut mech = CK_MECHANISM {
            mechanism: CKM_SHA256,
            pParameter: null_mut(),
            ulParameterLen: 0,
        };
        // SAFETY: valid mechanism pointer.
        unsafe { l.C_DigestInit.unwrap()(h, &mut mech) }
    };
    let digest = |h: CK_SESSION_HANDLE| {
        let mut data = *b"abc";
        let (mut out, mut len) = ([0u8; 32], 32 as CK_ULONG);
        // SAFETY: buffers valid for their lengths.
        unsafe { l.C_Digest.unwrap()(h, data.as_mut_ptr(), 3, out.as_mut_ptr(), &mut len) }
    };
    let h = open();
    for _ in 0..3 {
        assert_eq!(digest_init(h), CKR_OK);
        assert_eq!(digest(h), CKR_OK);
    }
    // SAFETY: plain handle argument.
    std::thread::spawn(move || assert_eq!(unsafe { raw().C_CloseSession.unwrap()(h) }, CKR_OK))
        .join()
        .unwrap();
    assert_eq!(digest_init(h), CKR_SESSION_HANDLE_INVALID);
    let h2 = open();
    assert_eq!(digest_init(h2), CKR_OK);
    assert_eq!(digest(h2), CKR_OK);
    assert_eq!(digest_init(h), CKR_SESSION_HANDLE_INVALID);
}

/// Argument checks come before mechanism checks: a NULL template with a
/// non-zero count, or a NULL handle pointer, is `CKR_ARGUMENTS_BAD` whatever
/// the mechanism (supported, unsupported or unknown), as consumer suites
/// written against SoftHSM2 expect.
#[test]
fn arguments_are_checked_before_the_mechanism() {
    let f = Fixture::new();
    let slot = f.token("argorder");
    let s = f.user(slot);
    let h = s.handle();
    let l = raw();
    let mut ck_true: CK_BBOOL = CK_TRUE;
    let mut attrs = [CK_ATTRIBUTE {
        type_: CKA_TOKEN,
        pValue: (&mut ck_true as *mut CK_BBOOL).cast(),
        ulValueLen: 1,
    }; 3];
    for ty in [CKM_AES_KEY_GEN, CKM_RSA_PKCS, 0xdead_beef] {
        let mut mech = CK_MECHANISM {
            mechanism: ty,
            pParameter: null_mut(),
            ulParameterLen: 0,
        };
        let mut key: CK_OBJECT_HANDLE = 0;
        let (mut public, mut private): (CK_OBJECT_HANDLE, CK_OBJECT_HANDLE) = (0, 0);
        // SAFETY: module calls with valid pointers, or NULLs it must refuse.
        unsafe {
            assert_eq!(
                l.C_GenerateKey.unwrap()(h, &mut mech, null_mut(), 3, &mut key),
                CKR_ARGUMENTS_BAD,
                "{ty:#x}"
            );
            assert_eq!(
                l.C_GenerateKey.unwrap()(h, &mut mech, attrs.as_mut_ptr(), 3, null_mut()),
                CKR_ARGUMENTS_BAD,
                "{ty:#x}"
            );
            assert_eq!(
                l.C_GenerateKeyPair.unwrap()(
                    h,
                    &mut mech,
                    null_mut(),
                    3,
                    attrs.as_mut_ptr(),
                    3,
                    &mut public,
                    &mut private
                ),
                CKR_ARGUMENTS_BAD,
                "{ty:#x}"
            );
            assert_eq!(
                l.C_DeriveKey.unwrap()(h, &mut mech, 1, attrs.as_mut_ptr(), 3, null_mut()),
                CKR_ARGUMENTS_BAD,
                "{ty:#x}"
            );
            assert_eq!(
                l.C_UnwrapKey.unwrap()(
                    h,
                    &mut mech,
                    1,
                    null_mut(),
                    16,
                    attrs.as_mut_ptr(),
                    3,
                    &mut key
                ),
                CKR_ARGUMENTS_BAD,
                "{ty:#x}"
            );
        }
    }
}
