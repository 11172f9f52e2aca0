//! `C_EncapsulateKey` and `C_DecapsulateKey` at the C level: the size
//! query of the ciphertext, `CKR_BUFFER_TOO_SMALL`, and that neither makes
//! a key, and the pointer checks.

use super::*;

/// The module's 3.2 function list.
fn list_3_2() -> &'static CK_FUNCTION_LIST_3_2 {
    // SAFETY: loading the module under test (it stays loaded); valid
    // pointers; the module's interface table and lists are static.
    unsafe {
        let lib = cryptoki_sys::Pkcs11::new(module_path()).unwrap();
        let mut iface: *mut CK_INTERFACE = std::ptr::null_mut();
        let mut v = CK_VERSION { major: 3, minor: 2 };
        let mut name = *b"PKCS 11\0";
        assert_eq!(
            lib.C_GetInterface(name.as_mut_ptr(), &mut v, &mut iface, 0),
            CKR_OK
        );
        std::mem::forget(lib);
        &*((*iface).pFunctionList as *const CK_FUNCTION_LIST_3_2)
    }
}

fn secret_key_count(s: &Session) -> usize {
    s.find_objects(&[Attribute::Class(ObjectClass::SECRET_KEY)])
        .unwrap()
        .len()
}

#[test]
fn the_ciphertext_length_is_queried_and_a_short_buffer_makes_no_key() {
    let f = Fixture::new();
    let s = f.user(f.token("raw"));
    let (public, private) = generate(&s, MlKemParameterSetType::ML_KEM_768);
    let l = list_3_2();
    let h = s.handle();
    let mut mech = CK_MECHANISM {
        mechanism: CKM_ML_KEM,
        pParameter: std::ptr::null_mut(),
        ulParameterLen: 0,
    };
    let mut class = CKO_SECRET_KEY;
    let mut key_type = CKK_GENERIC_SECRET;
    let mut no = CK_FALSE;
    let mut yes = CK_TRUE;
    let mut template = [
        CK_ATTRIBUTE {
            type_: CKA_CLASS,
            pValue: (&raw mut class).cast(),
            ulValueLen: std::mem::size_of::<CK_ULONG>() as CK_ULONG,
        },
        CK_ATTRIBUTE {
            type_: CKA_KEY_TYPE,
            pValue: (&raw mut key_type).cast(),
            ulValueLen: std::mem::size_of::<CK_ULONG>() as CK_ULONG,
        },
        CK_ATTRIBUTE {
            type_: CKA_TOKEN,
            pValue: (&raw mut no).cast(),
            ulValueLen: 1,
        },
        CK_ATTRIBUTE {
            type_: CKA_EXTRACTABLE,
            pValue: (&raw mut yes).cast(),
            ulValueLen: 1,
        },
    ];
    let count = template.len() as CK_ULONG;
    let before = secret_key_count(&s);
    let mut len: CK_ULONG = 0;
    let mut key: CK_OBJECT_HANDLE = CK_INVALID_HANDLE;
    let encapsulate = |buf: *mut u8,
                       len: &mut CK_ULONG,
                       key: *mut CK_OBJECT_HANDLE,
                       mech: &mut CK_MECHANISM,
                       t: &mut [CK_ATTRIBUTE]| {
        // SAFETY: valid pointers for the lengths given.
        unsafe {
            l.C_EncapsulateKey.unwrap()(
                h,
                mech,
                public.handle(),
                t.as_mut_ptr(),
                t.len() as CK_ULONG,
                buf,
                len,
                key,
            )
        }
    };
    assert_eq!(
        encapsulate(
            std::ptr::null_mut(),
            &mut len,
            &mut key,
            &mut mech,
            &mut template
        ),
        CKR_OK
    );
    assert_eq!(len, 1088);
    assert_eq!(key, CK_INVALID_HANDLE);
    let mut buf = vec![0u8; 1088];
    len = 100;
    assert_eq!(
        encapsulate(
            buf.as_mut_ptr(),
            &mut len,
            &mut key,
            &mut mech,
            &mut template
        ),
        CKR_BUFFER_TOO_SMALL
    );
    assert_eq!(len, 1088);
    assert_eq!(
        secret_key_count(&s),
        before,
        "no key for a query or a short buffer"
    );
    // A buffer but no place for the handle.
    assert_eq!(
        encapsulate(
            buf.as_mut_ptr(),
            &mut len,
            std::ptr::null_mut(),
            &mut mech,
            &mut template
        ),
        CKR_ARGUMENTS_BAD
    );
    assert_eq!(
        encapsulate(
            buf.as_mut_ptr(),
            &mut len,
            &mut key,
            &mut mech,
            &mut template
        ),
        CKR_OK
    );
    assert_eq!(len, 1088);
    assert_ne!(key, CK_INVALID_HANDLE);
    assert_eq!(secret_key_count(&s), before + 1);
    let sent = bytes_of(&s, unsafe_handle(key), AttributeType::Value);
    assert_eq!(decapsulated_value(&s, private, &buf), sent);
    // Decapsulation: a null ciphertext with a length, a null handle pointer.
    let mut got: CK_OBJECT_HANDLE = CK_INVALID_HANDLE;
    // SAFETY: as above; the null pointers are what is tested.
    unsafe {
        assert_eq!(
            l.C_DecapsulateKey.unwrap()(
                h,
                &mut mech,
                private.handle(),
                template.as_mut_ptr(),
                count,
                std::ptr::null_mut(),
                1088,
                &mut got
            ),
            CKR_ARGUMENTS_BAD
        );
        assert_eq!(
            l.C_DecapsulateKey.unwrap()(
                h,
                &mut mech,
                private.handle(),
                template.as_mut_ptr(),
                count,
                buf.as_mut_ptr(),
                1088,
                std::ptr::null_mut()
            ),
            CKR_ARGUMENTS_BAD
        );
        // A parameter where CKM_ML_KEM takes none.
        let mut junk = [0u8; 4];
        let mut with_param = CK_MECHANISM {
            mechanism: CKM_ML_KEM,
            pParameter: junk.as_mut_ptr().cast(),
            ulParameterLen: 4,
        };
        assert_eq!(
            l.C_DecapsulateKey.unwrap()(
                h,
                &mut with_param,
                private.handle(),
                template.as_mut_ptr(),
                count,
                buf.as_mut_ptr(),
                1088,
                &mut got
            ),
            CKR_MECHANISM_PARAM_INVALID
        );
    }
    // The refused calls made nothing (the two keys: encapsulated, decapsulated).
    assert_eq!(secret_key_count(&s), before + 2);
}

/// An object handle from its raw value (the module's).
fn unsafe_handle(h: CK_OBJECT_HANDLE) -> ObjectHandle {
    // SAFETY: `h` is a handle the module just returned.
    unsafe { ObjectHandle::new_from_raw(h) }
}
