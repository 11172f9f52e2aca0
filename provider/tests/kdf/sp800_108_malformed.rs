//! NIST SP 800-108 KDFs (PKCS #11 3.0 mechanisms spec §2.42): malformed
//! `CK_SP800_108_*` parameters are refused.

use super::*;

/// Every malformed parameter class is CKR_MECHANISM_PARAM_INVALID.
#[test]
fn sp800_108_malformed_parameters_are_refused() {
    use cryptoki_sys::*;
    let f = Fixture::new();
    let slot = f.token("kbkdf-bad");
    let s = f.user(slot);
    let base = secret(&s, &[0x42; 32], true);
    let aes = sp800_108::aes(&s, &[0x24; 16]);
    let good = ctr(16, false);
    let (w0, w12, w40) = (ctr(0, false), ctr(12, false), ctr(40, false));
    let keys = dkm(CK_SP800_108_DKM_LENGTH_SUM_OF_KEYS, 16, false);
    let (d0, d12, d72, d8) = (
        dkm(CK_SP800_108_DKM_LENGTH_SUM_OF_KEYS, 0, false),
        dkm(CK_SP800_108_DKM_LENGTH_SUM_OF_KEYS, 12, false),
        dkm(CK_SP800_108_DKM_LENGTH_SUM_OF_KEYS, 72, false),
        dkm(CK_SP800_108_DKM_LENGTH_SUM_OF_KEYS, 8, false),
    );
    let bad_method = dkm(3, 16, false);
    let label = [1u8, 2, 3];
    let short = CK_PRF_DATA_PARAM {
        ulValueLen: 4,
        ..iter_ctr(&good)
    };
    let empty = CK_PRF_DATA_PARAM {
        ulValueLen: 0,
        ..bytes(&label)
    };
    let null = CK_PRF_DATA_PARAM {
        pValue: std::ptr::null_mut(),
        ..bytes(&label)
    };
    let valued = CK_PRF_DATA_PARAM {
        ulValueLen: 16,
        ..iter_ctr(&good)
    };
    let handle: CK_OBJECT_HANDLE = base.handle();
    let key_handle = CK_PRF_DATA_PARAM {
        type_: CK_SP800_108_KEY_HANDLE,
        pValue: &handle as *const _ as *mut _,
        ulValueLen: std::mem::size_of::<CK_OBJECT_HANDLE>() as CK_ULONG,
    };
    let unknown = CK_PRF_DATA_PARAM {
        type_: 99,
        ..bytes(&label)
    };
    let c = CKM_SP800_108_COUNTER_KDF;
    let fb = CKM_SP800_108_FEEDBACK_KDF;
    let dp = CKM_SP800_108_DOUBLE_PIPELINE_KDF;
    let cases: Vec<(
        &str,
        CK_MECHANISM_TYPE,
        CK_MECHANISM_TYPE,
        Vec<CK_PRF_DATA_PARAM>,
        u64,
    )> = vec![
        ("no data", c, CKM_SHA256_HMAC, vec![], 16),
        (
            "no iteration variable",
            c,
            CKM_SHA256_HMAC,
            vec![bytes(&label)],
            16,
        ),
        (
            "two iteration variables",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), iter_ctr(&good)],
            16,
        ),
        (
            "two iteration variables (feedback)",
            fb,
            CKM_SHA256_HMAC,
            vec![iter(), iter()],
            16,
        ),
        (
            "counter in counter mode",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), counter(&good)],
            16,
        ),
        (
            "two counters",
            dp,
            CKM_SHA256_HMAC,
            vec![iter(), counter(&good), counter(&good)],
            16,
        ),
        (
            "two DKM lengths",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), dkm_len(&keys), dkm_len(&keys)],
            16,
        ),
        (
            "counter width 0",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&w0)],
            16,
        ),
        (
            "counter width 12",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&w12)],
            16,
        ),
        (
            "counter width 40",
            fb,
            CKM_SHA256_HMAC,
            vec![iter(), counter(&w40)],
            16,
        ),
        (
            "DKM width 0",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), dkm_len(&d0)],
            16,
        ),
        (
            "DKM width 12",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), dkm_len(&d12)],
            16,
        ),
        (
            "DKM width 72",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), dkm_len(&d72)],
            16,
        ),
        (
            "DKM length overflows its width",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), dkm_len(&d8)],
            32,
        ),
        (
            "DKM method",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), dkm_len(&bad_method)],
            16,
        ),
        ("counter format length", c, CKM_SHA256_HMAC, vec![short], 16),
        (
            "iteration variable with a value (feedback)",
            fb,
            CKM_SHA256_HMAC,
            vec![valued],
            16,
        ),
        (
            "iteration variable without a format (counter)",
            c,
            CKM_SHA256_HMAC,
            vec![iter()],
            16,
        ),
        (
            "empty byte array",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), empty],
            16,
        ),
        (
            "null byte array",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), null],
            16,
        ),
        (
            "key handle data",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), key_handle],
            16,
        ),
        (
            "unknown data type",
            c,
            CKM_SHA256_HMAC,
            vec![iter_ctr(&good), unknown],
            16,
        ),
        ("PRF not a MAC", c, CKM_SHA256, vec![iter_ctr(&good)], 16),
    ];
    for (what, ty, prf, data, len) in cases {
        let k = Kdf {
            ty,
            prf,
            data,
            iv: None,
        };
        assert_eq!(
            sp800_108::derive(&s, &k, base, &[len]).unwrap_err(),
            CKR_MECHANISM_PARAM_INVALID,
            "{what}"
        );
    }
    // An 8-bit counter cannot number 17 * 512 bytes of 16-byte segments.
    let small = ctr(8, false);
    let k = Kdf {
        ty: c,
        prf: CKM_AES_CMAC,
        data: vec![iter_ctr(&small)],
        iv: None,
    };
    assert_eq!(
        sp800_108::derive(&s, &k, aes, &[512; 17]).unwrap_err(),
        CKR_MECHANISM_PARAM_INVALID
    );
    // More additional keys than the bound.
    assert_eq!(
        sp800_108::derive(&s, &k, aes, &[16; 18]).unwrap_err(),
        CKR_MECHANISM_PARAM_INVALID
    );
    // Structural errors: counts, null arrays, IV, phKey, parameter length.
    let k = Kdf {
        ty: c,
        prf: CKM_SHA256_HMAC,
        data: vec![iter_ctr(&good)],
        iv: None,
    };
    let run = |edit: &dyn Fn(&mut CK_MECHANISM)| -> CK_RV {
        let mut data = k.data.clone();
        sp800_108::with_mechanism(&k, &mut data, 0, std::ptr::null_mut(), |m| {
            edit(m);
            let mut h = 0;
            let mut t = [];
            // SAFETY: the mechanism and its parameter are live locals.
            unsafe {
                raw().C_DeriveKey.unwrap()(s.handle(), m, base.handle(), t.as_mut_ptr(), 0, &mut h)
            }
        })
    };
    fn params(m: &mut CK_MECHANISM) -> &mut CK_SP800_108_KDF_PARAMS {
        // SAFETY: the test's counter-mode mechanism points at this struct.
        unsafe { &mut *(m.pParameter as *mut CK_SP800_108_KDF_PARAMS) }
    }
    let mut dk = CK_DERIVED_KEY {
        pTemplate: std::ptr::null_mut(),
        ulAttributeCount: 0,
        phKey: std::ptr::null_mut(),
    };
    let dkp: *mut CK_DERIVED_KEY = &mut dk;
    for (what, edit) in [
        (
            "huge data count",
            Box::new(|m: &mut CK_MECHANISM| params(m).ulNumberOfDataParams = 1 << 40)
                as Box<dyn Fn(&mut CK_MECHANISM)>,
        ),
        (
            "null data array",
            Box::new(|m: &mut CK_MECHANISM| params(m).pDataParams = std::ptr::null_mut()),
        ),
        (
            "keys count without array",
            Box::new(|m: &mut CK_MECHANISM| params(m).ulAdditionalDerivedKeys = 1),
        ),
        (
            "keys array without count",
            Box::new(move |m: &mut CK_MECHANISM| params(m).pAdditionalDerivedKeys = dkp),
        ),
        (
            "null phKey",
            Box::new(move |m: &mut CK_MECHANISM| {
                params(m).ulAdditionalDerivedKeys = 1;
                params(m).pAdditionalDerivedKeys = dkp;
            }),
        ),
        (
            "huge keys count",
            Box::new(move |m: &mut CK_MECHANISM| {
                params(m).ulAdditionalDerivedKeys = 1 << 40;
                params(m).pAdditionalDerivedKeys = dkp;
            }),
        ),
        (
            "parameter length",
            Box::new(|m: &mut CK_MECHANISM| m.ulParameterLen -= 1),
        ),
        (
            "no parameter",
            Box::new(|m: &mut CK_MECHANISM| {
                m.pParameter = std::ptr::null_mut();
                m.ulParameterLen = 0;
            }),
        ),
    ] {
        assert_eq!(run(&*edit), CKR_MECHANISM_PARAM_INVALID, "{what}");
    }
    // Feedback: an IV length without an IV.
    let fk = Kdf {
        ty: fb,
        prf: CKM_SHA256_HMAC,
        data: vec![iter()],
        iv: None,
    };
    let mut data = fk.data.clone();
    let rv = sp800_108::with_mechanism(&fk, &mut data, 0, std::ptr::null_mut(), |m| {
        // SAFETY: the feedback mechanism points at this struct.
        unsafe { (*(m.pParameter as *mut CK_SP800_108_FEEDBACK_KDF_PARAMS)).ulIVLen = 16 };
        let mut h = 0;
        let mut t = [];
        // SAFETY: the mechanism and its parameter are live locals.
        unsafe {
            raw().C_DeriveKey.unwrap()(s.handle(), m, base.handle(), t.as_mut_ptr(), 0, &mut h)
        }
    });
    assert_eq!(rv, CKR_MECHANISM_PARAM_INVALID);
}
