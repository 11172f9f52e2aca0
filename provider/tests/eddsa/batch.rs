//! The vendor interface's Ed25519 batch verification
//! (`C_DalekVerifyEd25519Batch`, `ffi/vendor.rs`; docs/mechanisms.md).

use super::*;

/// The vendor interface's batch verification (`ffi/vendor.rs`).
#[test]
fn vendor_batch_verification() {
    let f = Fixture::new();
    let slot = f.token("batch");
    let s = f.user(slot);
    let pairs: Vec<_> = (0..16).map(|_| generate(&s, false)).collect();
    let messages: Vec<Vec<u8>> = (0..16u8).map(|i| vec![i; 32 + i as usize]).collect();
    let mut sigs: Vec<Vec<u8>> = pairs
        .iter()
        .zip(&messages)
        .map(|((_, k), m)| s.sign(&eddsa(), *k, m).unwrap())
        .collect();
    // SAFETY: loading the module under test; calls with live arrays of ulCount elements.
    unsafe {
        let lib = cryptoki_sys::Pkcs11::new(module_path()).unwrap();
        let mut iface: *mut CK_INTERFACE = std::ptr::null_mut();
        let mut name = *b"Vendor dalek-pkcs11\0";
        assert_eq!(
            lib.C_GetInterface(name.as_mut_ptr(), std::ptr::null_mut(), &mut iface, 0),
            CKR_OK
        );
        #[repr(C)]
        struct VendorList {
            version: CK_VERSION,
            verify_batch: Option<
                unsafe extern "C" fn(
                    CK_SESSION_HANDLE,
                    CK_ULONG,
                    *const CK_OBJECT_HANDLE,
                    *const *const CK_BYTE,
                    *const CK_ULONG,
                    *const *const CK_BYTE,
                ) -> CK_RV,
            >,
            verify_batch_mechanism: Option<
                unsafe extern "C" fn(
                    CK_SESSION_HANDLE,
                    *const CK_MECHANISM,
                    CK_ULONG,
                    *const CK_OBJECT_HANDLE,
                    *const *const CK_BYTE,
                    *const CK_ULONG,
                    *const *const CK_BYTE,
                ) -> CK_RV,
            >,
        }
        let list = &*((*iface).pFunctionList as *const VendorList);
        assert_eq!((list.version.major, list.version.minor), (1, 1));
        let batch = list.verify_batch.unwrap();
        let keys: Vec<CK_OBJECT_HANDLE> = pairs.iter().map(|(p, _)| p.handle()).collect();
        let lens: Vec<CK_ULONG> = messages.iter().map(|m| m.len() as CK_ULONG).collect();
        let run = |sigs: &Vec<Vec<u8>>, keys: &[CK_OBJECT_HANDLE]| {
            let data: Vec<*const u8> = messages.iter().map(|m| m.as_ptr()).collect();
            let sig_ptrs: Vec<*const u8> = sigs.iter().map(|x| x.as_ptr()).collect();
            batch(
                s.handle(),
                keys.len() as CK_ULONG,
                keys.as_ptr(),
                data.as_ptr(),
                lens.as_ptr(),
                sig_ptrs.as_ptr(),
            )
        };
        assert_eq!(run(&sigs, &keys), CKR_OK);
        // 1.1: the same with a mechanism; only pure Ed25519 batches.
        let batch_mech = list.verify_batch_mechanism.unwrap();
        let run_mech = |mech: &CK_MECHANISM| {
            let data: Vec<*const u8> = messages.iter().map(|m| m.as_ptr()).collect();
            let sig_ptrs: Vec<*const u8> = sigs.iter().map(|x| x.as_ptr()).collect();
            batch_mech(
                s.handle(),
                mech,
                keys.len() as CK_ULONG,
                keys.as_ptr(),
                data.as_ptr(),
                lens.as_ptr(),
                sig_ptrs.as_ptr(),
            )
        };
        let mut context = *b"foo";
        let mut params = |ph: bool, len: usize| CK_EDDSA_PARAMS {
            phFlag: ph as CK_BBOOL,
            ulContextDataLen: len as CK_ULONG,
            pContextData: context.as_mut_ptr(),
        };
        let with = |ty, p: Option<&mut CK_EDDSA_PARAMS>| CK_MECHANISM {
            mechanism: ty,
            ulParameterLen: if p.is_some() {
                std::mem::size_of::<CK_EDDSA_PARAMS>() as CK_ULONG
            } else {
                0
            },
            pParameter: p.map_or(std::ptr::null_mut(), |p| p as *mut _ as *mut _),
        };
        assert_eq!(run_mech(&with(CKM_EDDSA, None)), CKR_OK);
        assert_eq!(
            run_mech(&with(CKM_EDDSA, Some(&mut params(false, 0)))),
            CKR_OK
        );
        for (ph, len) in [(true, 0), (true, 3), (false, 3)] {
            assert_eq!(
                run_mech(&with(CKM_EDDSA, Some(&mut params(ph, len)))),
                CKR_MECHANISM_PARAM_INVALID,
                "phFlag {ph}, context {len}"
            );
        }
        assert_eq!(run_mech(&with(CKM_ECDSA, None)), CKR_MECHANISM_INVALID);
        sigs[9][0] ^= 1;
        assert_eq!(run(&sigs, &keys), CKR_SIGNATURE_INVALID);
        sigs[9][0] ^= 1;
        let mut private_keys = keys.clone();
        private_keys[3] = pairs[3].1.handle();
        assert_eq!(
            run(&sigs, &private_keys),
            CKR_KEY_FUNCTION_NOT_PERMITTED,
            "private keys have no CKA_VERIFY"
        );
        for count in [0, 2] {
            assert_eq!(
                batch(
                    s.handle(),
                    count,
                    keys.as_ptr(),
                    std::ptr::null(),
                    lens.as_ptr(),
                    std::ptr::null()
                ),
                CKR_ARGUMENTS_BAD,
                "count {count}"
            );
        }
        // A public key at the identity point with R = identity and S = 0:
        // C_Verify refuses it, and so must the batch (its equation alone
        // held for every message).
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let weak = s
            .create_object(&[
                Attribute::Class(ObjectClass::PUBLIC_KEY),
                Attribute::KeyType(KeyType::EC_EDWARDS),
                Attribute::EcParams(b"\x13\x0cedwards25519".to_vec()),
                Attribute::EcPoint(identity.to_vec()),
                Attribute::Verify(true),
            ])
            .unwrap();
        let mut forged = vec![0u8; 64];
        forged[..32].copy_from_slice(&identity);
        assert_rv!(
            s.verify(&eddsa(), weak, &messages[0], &forged),
            SignatureInvalid
        );
        let mut with_weak = keys.clone();
        with_weak[5] = weak.handle();
        sigs[5] = forged;
        assert_eq!(run(&sigs, &with_weak), CKR_SIGNATURE_INVALID);
        let all_weak = vec![weak.handle(); 16];
        let all_forged = vec![sigs[5].clone(); 16];
        assert_eq!(run(&all_forged, &all_weak), CKR_SIGNATURE_INVALID);
        std::mem::forget(lib);
    }
}
