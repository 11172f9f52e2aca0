//! Calls for the OATH HOTP mechanisms through the raw function list
//! (cryptoki 0.12 names neither `CKM_HOTP` nor `CK_OTP_PARAMS`): HOTP key
//! templates, `CK_OTP_PARAMS` built on the stack, and `C_Sign` output read
//! back as the `CK_OTP_SIGNATURE_INFO` the mechanisms spec lays out in the
//! caller's buffer.
#![allow(dead_code)]

use super::common::*;
use super::raw_calls::*;
use cryptoki::session::Session;
use cryptoki_sys::*;

/// The RFC 4226 Appendix D key.
pub const RFC4226_KEY: &[u8] = b"12345678901234567890";
/// RFC 4226 Appendix D: the six-digit HOTPs for counters 0 to 9.
pub const RFC4226_OTPS: [&str; 10] = [
    "755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583", "399871",
    "520489",
];

/// An HOTP session key with `value`, `CKA_OTP_COUNTER_REQUIREMENT` =
/// `requirement`, `CKA_SIGN` and `CKA_VERIFY`, then `more` (which
/// replaces any of those it names, `CKA_TOKEN` included).
pub fn hotp_key(
    s: &Session,
    value: &[u8],
    requirement: CK_ULONG,
    more: Vec<A>,
) -> Result<CK_OBJECT_HANDLE, CK_RV> {
    let mut t = vec![
        ul(CKA_CLASS, CKO_OTP_KEY),
        ul(CKA_KEY_TYPE, CKK_HOTP),
        (CKA_VALUE, value.to_vec()),
        flag(CKA_TOKEN, false),
        flag(CKA_SIGN, true),
        flag(CKA_VERIFY, true),
        ul(CKA_OTP_COUNTER_REQUIREMENT, requirement),
    ];
    t.retain(|(ty, _)| more.iter().all(|(m, _)| m != ty));
    t.extend(more);
    create(s, t)
}

/// What a `CK_OTP_PARAMS` holds, for [`with_otp`].
#[derive(Clone, Copy, Default)]
pub struct Otp {
    pub counter: Option<u64>,
    pub flags: Option<CK_FLAGS>,
    pub length: Option<CK_ULONG>,
}

/// Runs `f` with a `CKM_HOTP` mechanism whose parameter holds `p` (no
/// parameter when `p` is `None`).
pub fn with_otp<R>(p: Option<Otp>, f: impl FnOnce(&mut CK_MECHANISM) -> R) -> R {
    let Some(p) = p else {
        return f(&mut mech(CKM_HOTP, None));
    };
    let mut counter = p.counter.map(u64::to_be_bytes);
    let mut flags = p.flags;
    let mut length = p.length;
    let mut list = Vec::new();
    if let Some(c) = counter.as_mut() {
        list.push(CK_OTP_PARAM {
            type_: CK_OTP_COUNTER,
            pValue: c.as_mut_ptr().cast(),
            ulValueLen: 8,
        });
    }
    for (ty, v) in [
        (CK_OTP_FLAGS, &mut flags),
        (CK_OTP_OUTPUT_LENGTH, &mut length),
    ] {
        if let Some(v) = v.as_mut() {
            list.push(CK_OTP_PARAM {
                type_: ty,
                pValue: (v as *mut CK_ULONG).cast(),
                ulValueLen: size_of::<CK_ULONG>() as CK_ULONG,
            });
        }
    }
    let mut params = CK_OTP_PARAMS {
        pParams: list.as_mut_ptr(),
        ulCount: list.len() as CK_ULONG,
    };
    let mut m = CK_MECHANISM {
        mechanism: CKM_HOTP,
        pParameter: (&mut params as *mut CK_OTP_PARAMS).cast(),
        ulParameterLen: size_of::<CK_OTP_PARAMS>() as CK_ULONG,
    };
    f(&mut m)
}

/// `C_SignInit` with `CKM_HOTP` and `p`.
pub fn hotp_sign_init(s: &Session, key: CK_OBJECT_HANDLE, p: Option<Otp>) -> CK_RV {
    // SAFETY: valid session and mechanism (its parameter lives for the call).
    with_otp(p, |m| unsafe {
        raw().C_SignInit.unwrap()(s.handle(), m, key)
    })
}

/// `C_VerifyInit` with `CKM_HOTP` and `p`.
pub fn hotp_verify_init(s: &Session, key: CK_OBJECT_HANDLE, p: Option<Otp>) -> CK_RV {
    // SAFETY: as above.
    with_otp(p, |m| unsafe {
        raw().C_VerifyInit.unwrap()(s.handle(), m, key)
    })
}

/// `C_Sign` on the active operation with empty data into a buffer of
/// `buf_len` bytes (`None`: the size query); the return code and the
/// length the token reported.
pub fn raw_sign(s: &Session, buf: Option<&mut [u8]>) -> (CK_RV, CK_ULONG) {
    let (ptr, mut len) = match buf {
        Some(b) => (b.as_mut_ptr(), b.len() as CK_ULONG),
        None => (std::ptr::null_mut(), 0),
    };
    // SAFETY: valid session; the output buffer holds `len` bytes.
    let rv = unsafe { raw().C_Sign.unwrap()(s.handle(), std::ptr::null_mut(), 0, ptr, &mut len) };
    (rv, len)
}

/// Reads the OTP out of a `CK_OTP_SIGNATURE_INFO` the token wrote at the
/// start of `buf` (`n` bytes), checking that it holds exactly one
/// `CK_OTP_VALUE` and that every pointer points inside `buf`.
pub fn otp_value(buf: &[u8], n: usize) -> String {
    let base = buf.as_ptr() as usize;
    let inside = |p: usize, len: usize| p >= base && p + len <= base + n;
    // SAFETY: `buf` holds at least the structure (checked); unaligned reads.
    let info: CK_OTP_SIGNATURE_INFO =
        unsafe { std::ptr::read_unaligned(buf.as_ptr() as *const CK_OTP_SIGNATURE_INFO) };
    assert!(n >= size_of::<CK_OTP_SIGNATURE_INFO>() + size_of::<CK_OTP_PARAM>());
    assert_eq!(info.ulCount, 1);
    assert!(inside(info.pParams as usize, size_of::<CK_OTP_PARAM>()));
    // SAFETY: the parameter lies inside `buf` (checked).
    let param: CK_OTP_PARAM = unsafe { std::ptr::read_unaligned(info.pParams) };
    assert_eq!(param.type_, CK_OTP_VALUE);
    let len = param.ulValueLen as usize;
    assert!(inside(param.pValue as usize, len));
    assert_eq!(
        param.pValue as usize + len,
        base + n,
        "the digits end the output"
    );
    // SAFETY: the value lies inside `buf` (checked).
    let digits = unsafe { std::slice::from_raw_parts(param.pValue as *const u8, len) };
    String::from_utf8(digits.to_vec()).unwrap()
}

/// One `CKM_HOTP` signature with `p`: the OTP digits, or the code of the
/// first call that failed.
pub fn hotp_sign(s: &Session, key: CK_OBJECT_HANDLE, p: Option<Otp>) -> Result<String, CK_RV> {
    let rv = hotp_sign_init(s, key, p);
    if rv != CKR_OK {
        return Err(rv);
    }
    let (rv, need) = raw_sign(s, None);
    if rv != CKR_OK {
        return Err(rv);
    }
    let mut buf = vec![0u8; need as usize + 7];
    let (rv, n) = raw_sign(s, Some(&mut buf));
    if rv != CKR_OK {
        return Err(rv);
    }
    assert_eq!(n, need);
    Ok(otp_value(&buf, n as usize))
}

/// One `CKM_HOTP` verification of `otp` with `p`: its return code (of the
/// init if that failed).
pub fn hotp_verify(s: &Session, key: CK_OBJECT_HANDLE, p: Option<Otp>, otp: &str) -> CK_RV {
    let rv = hotp_verify_init(s, key, p);
    if rv != CKR_OK {
        return rv;
    }
    // SAFETY: valid session; the signature buffer holds its length.
    unsafe {
        raw().C_Verify.unwrap()(
            s.handle(),
            std::ptr::null_mut(),
            0,
            otp.as_ptr() as *mut u8,
            otp.len() as CK_ULONG,
        )
    }
}

/// The key's `CKA_OTP_COUNTER` as a number.
pub fn counter_of(s: &Session, key: CK_OBJECT_HANDLE) -> u64 {
    let v = attr(s, key, CKA_OTP_COUNTER).unwrap();
    u64::from_be_bytes(v.try_into().unwrap())
}

/// `C_SetAttributeValue` of one attribute.
pub fn set_attr(s: &Session, key: CK_OBJECT_HANDLE, a: A) -> CK_RV {
    let mut t = vec![a];
    let mut attrs = raw_template(&mut t);
    // SAFETY: valid session and template.
    unsafe { raw().C_SetAttributeValue.unwrap()(s.handle(), key, attrs.as_mut_ptr(), 1) }
}
