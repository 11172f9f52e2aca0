//! `CKM_HOTP` signing and verification (mechanisms spec "OATH HOTP", base
//! spec 3.0 "OTP mechanisms"): the optional `CK_OTP_PARAMS`, the OTP laid
//! out as a `CK_OTP_SIGNATURE_INFO` in the caller's signature buffer, and
//! the look-ahead check of `C_Verify`.
//!
//! The counter is not kept here: the model layer reads it from the key
//! object, stores its successor and only then lets the operation compute
//! (`api::crypto::otp`); a counter the caller supplies
//! (`CK_OTP_COUNTER`, when `CKA_OTP_COUNTER_REQUIREMENT` allows it) is
//! used as given and nothing is stored.

use super::key::{HotpKey, LOOK_AHEAD, check_digits};
use crate::error::{Result, err};
use crate::mechanisms::material::KeyMaterial;
use crate::mechanisms::operation::{SignOperation, VerifyOperation};
use crate::mechanisms::params::{Mechanism, OtpParams, Param};
use cryptoki_sys::*;
use std::mem::{offset_of, size_of};
use std::sync::Arc;

/// Bytes of the signature before the digits: a `CK_OTP_SIGNATURE_INFO`
/// and its one `CK_OTP_PARAM` (`CK_OTP_VALUE`).
pub const INFO_LEN: usize = size_of::<CK_OTP_SIGNATURE_INFO>() + size_of::<CK_OTP_PARAM>();

// The layout `lay_out` writes, word by word: the two structs are made of
// `CK_ULONG`s and pointers, all of one size.
const WORD: usize = size_of::<CK_ULONG>();
const _: () = assert!(size_of::<usize>() == WORD);
const _: () = assert!(offset_of!(CK_OTP_SIGNATURE_INFO, pParams) == 0);
const _: () = assert!(offset_of!(CK_OTP_SIGNATURE_INFO, ulCount) == WORD);
const _: () = assert!(size_of::<CK_OTP_SIGNATURE_INFO>() == 2 * WORD);
const _: () = assert!(offset_of!(CK_OTP_PARAM, type_) == 0);
const _: () = assert!(offset_of!(CK_OTP_PARAM, pValue) == WORD);
const _: () = assert!(offset_of!(CK_OTP_PARAM, ulValueLen) == 2 * WORD);
const _: () = assert!(size_of::<CK_OTP_PARAM>() == 3 * WORD);

/// The `CK_OTP_FLAGS` a caller may pass: excluding the time, challenge or
/// PIN changes nothing (HOTP uses none of them). `CKF_NEXT_OTP`,
/// `CKF_EXCLUDE_COUNTER` (HOTP needs its counter) and
/// `CKF_USER_FRIENDLY_OTP` (`CKA_OTP_USER_FRIENDLY_MODE` is false) are
/// `CKR_MECHANISM_PARAM_INVALID`, as the spec says for flags a token
/// does not support.
const ALLOWED_FLAGS: CK_FLAGS = CKF_EXCLUDE_TIME | CKF_EXCLUDE_CHALLENGE | CKF_EXCLUDE_PIN;

/// A `CKM_HOTP` signature or verification: the key, the digits and the
/// caller's counter, if any.
pub struct Hotp {
    key: Arc<KeyMaterial>,
    digits: CK_ULONG,
    counter: Option<u64>,
}

impl Hotp {
    /// Starts `CKM_HOTP` with `key` (an HOTP key, else
    /// `CKR_KEY_TYPE_INCONSISTENT`) and the mechanism's optional
    /// `CK_OTP_PARAMS`, checked against the key's requirements: a counter
    /// only when `CKA_OTP_COUNTER_REQUIREMENT` is optional or mandatory
    /// (and then required when mandatory), the output format decimal, the
    /// output length 6 to 8.
    pub fn new(mech: &Mechanism<'_>, key: Arc<KeyMaterial>) -> Result<Hotp> {
        let KeyMaterial::Hotp(k) = &*key else {
            return Err(err(CKR_KEY_TYPE_INCONSISTENT));
        };
        let p = match mech.param {
            Param::None => OtpParams::default(),
            Param::Otp(p) => p,
            _ => return Err(err(CKR_MECHANISM_PARAM_INVALID)),
        };
        let invalid = err(CKR_MECHANISM_PARAM_INVALID);
        if p.flags & !ALLOWED_FLAGS != 0 {
            return Err(invalid);
        }
        if p.format.is_some_and(|f| f != CK_OTP_FORMAT_DECIMAL) {
            return Err(invalid);
        }
        let digits = p.length.unwrap_or(k.digits());
        check_digits(digits)?;
        match (k.counter_requirement(), p.counter) {
            (CK_OTP_PARAM_IGNORED, Some(_)) | (CK_OTP_PARAM_MANDATORY, None) => Err(invalid),
            (_, counter) => Ok(Hotp {
                digits,
                counter,
                key,
            }),
        }
    }

    fn key(&self) -> Result<&HotpKey> {
        match &*self.key {
            KeyMaterial::Hotp(k) => Ok(k),
            _ => Err(err(CKR_GENERAL_ERROR)),
        }
    }

    /// The counter the caller supplied (`CK_OTP_COUNTER`), if any.
    pub fn given_counter(&self) -> Option<u64> {
        self.counter
    }

    /// The OTP at `counter` as `CK_OTP_SIGNATURE_INFO` in `out` (at least
    /// [`SignOperation::output_len`] bytes).
    pub fn sign_at(&self, counter: u64, out: &mut [u8]) -> Result<usize> {
        let n = self.digits as usize;
        let otp = self.key()?.otp(counter, self.digits)?;
        lay_out(out, &otp[..n])
    }

    /// The counter whose OTP `signature` (bare digits) is: from the
    /// caller's counter exactly, or within the look-ahead window from
    /// `stored` (`CKR_SIGNATURE_INVALID` if none,
    /// `CKR_SIGNATURE_LEN_RANGE` for the wrong number of digits).
    pub fn check(&self, stored: u64, signature: &[u8]) -> Result<u64> {
        let (start, window) = match self.counter {
            Some(c) => (c, 1),
            None => (stored, LOOK_AHEAD),
        };
        self.key()?
            .find(start, window, self.digits, signature)?
            .ok_or(err(CKR_SIGNATURE_INVALID))
    }
}

/// Writes `value` as a `CK_OTP_SIGNATURE_INFO` holding one `CK_OTP_PARAM`
/// (`CK_OTP_VALUE`) followed by the value itself, the structs' pointers
/// pointing into `out` (the caller's buffer, which the FFI layer passes
/// through: the mechanisms spec has the signature hold the structure and
/// the values it points to). Plain bytes in native order, so no
/// alignment is assumed of the caller's buffer.
fn lay_out(out: &mut [u8], value: &[u8]) -> Result<usize> {
    let total = INFO_LEN + value.len();
    let out = out.get_mut(..total).ok_or(err(CKR_GENERAL_ERROR))?;
    let base = out.as_ptr() as usize;
    let words = [
        base + size_of::<CK_OTP_SIGNATURE_INFO>(),
        1,
        CK_OTP_VALUE as usize,
        base + INFO_LEN,
        value.len(),
    ];
    for (slot, word) in out.chunks_exact_mut(WORD).zip(words) {
        slot.copy_from_slice(&word.to_ne_bytes());
    }
    out[INFO_LEN..].copy_from_slice(value);
    Ok(total)
}

/// `CKM_HOTP` as a signature ([`Hotp`] in a session's sign slot).
pub struct HotpSign(pub Hotp);

/// `CKM_HOTP` as a verification.
pub struct HotpVerify(pub Hotp);

impl SignOperation for HotpSign {
    fn output_len(&self) -> usize {
        INFO_LEN + self.0.digits as usize
    }
    /// Only with the caller's counter; the stored counter's signatures go
    /// through [`Hotp::sign_at`] after the model stored the next value.
    fn sign(&mut self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        if !data.is_empty() {
            return Err(err(CKR_DATA_LEN_RANGE));
        }
        let counter = self.0.counter.ok_or(err(CKR_GENERAL_ERROR))?;
        self.0.sign_at(counter, out)
    }
    /// Single-part only: `CKR_FUNCTION_NOT_SUPPORTED`.
    fn update(&mut self, _data: &[u8]) -> Result<()> {
        Err(err(CKR_FUNCTION_NOT_SUPPORTED))
    }
    /// Single-part only: `CKR_FUNCTION_NOT_SUPPORTED`.
    fn finish(&mut self, _out: &mut [u8]) -> Result<usize> {
        Err(err(CKR_FUNCTION_NOT_SUPPORTED))
    }
}

impl VerifyOperation for HotpVerify {
    /// Only with the caller's counter (nothing to store); the stored
    /// counter's checks go through [`Hotp::check`].
    fn verify(&mut self, data: &[u8], signature: &[u8]) -> Result<()> {
        if !data.is_empty() {
            return Err(err(CKR_DATA_LEN_RANGE));
        }
        let counter = self.0.counter.ok_or(err(CKR_GENERAL_ERROR))?;
        self.0.check(counter, signature).map(drop)
    }
    /// Single-part only: `CKR_FUNCTION_NOT_SUPPORTED`.
    fn update(&mut self, _data: &[u8]) -> Result<()> {
        Err(err(CKR_FUNCTION_NOT_SUPPORTED))
    }
    /// Single-part only: `CKR_FUNCTION_NOT_SUPPORTED`.
    fn finish(&mut self, _signature: &[u8]) -> Result<()> {
        Err(err(CKR_FUNCTION_NOT_SUPPORTED))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zeroize::Zeroizing;

    fn key(requirement: CK_ULONG) -> Arc<KeyMaterial> {
        Arc::new(KeyMaterial::Hotp(
            HotpKey::new(
                Zeroizing::new(b"12345678901234567890".to_vec()),
                Some(&6u64.to_ne_bytes()),
                Some(&requirement.to_ne_bytes()),
            )
            .unwrap(),
        ))
    }

    fn with(p: OtpParams) -> Mechanism<'static> {
        Mechanism {
            ty: CKM_HOTP,
            param: Param::Otp(p),
        }
    }

    #[test]
    fn the_signature_info_points_into_the_buffer() {
        let op = Hotp::new(&Mechanism::plain(CKM_HOTP), key(CK_OTP_PARAM_IGNORED)).unwrap();
        let mut out = vec![0u8; 64];
        let n = op.sign_at(1, &mut out).unwrap();
        assert_eq!(n, INFO_LEN + 6);
        let base = out.as_ptr() as usize;
        let word = |i: usize| usize::from_ne_bytes(out[i * 8..i * 8 + 8].try_into().unwrap());
        assert_eq!(word(0), base + 16);
        assert_eq!(word(1), 1);
        assert_eq!(word(2), CK_OTP_VALUE as usize);
        assert_eq!(word(3), base + INFO_LEN);
        assert_eq!(word(4), 6);
        assert_eq!(&out[INFO_LEN..n], b"287082");
    }

    #[test]
    fn parameters_follow_the_key_requirements() {
        let given = OtpParams {
            counter: Some(3),
            ..Default::default()
        };
        let e = |r, p| Hotp::new(&with(p), key(r)).err().map(|e| e.rv());
        assert_eq!(
            e(CK_OTP_PARAM_IGNORED, given),
            Some(CKR_MECHANISM_PARAM_INVALID)
        );
        assert_eq!(e(CK_OTP_PARAM_OPTIONAL, given), None);
        assert_eq!(
            e(CK_OTP_PARAM_MANDATORY, OtpParams::default()),
            Some(CKR_MECHANISM_PARAM_INVALID)
        );
        for flags in [CKF_NEXT_OTP, CKF_EXCLUDE_COUNTER, CKF_USER_FRIENDLY_OTP] {
            let p = OtpParams {
                flags,
                ..Default::default()
            };
            assert_eq!(
                e(CK_OTP_PARAM_OPTIONAL, p),
                Some(CKR_MECHANISM_PARAM_INVALID)
            );
        }
        for (length, ok) in [(5, false), (6, true), (8, true), (9, false)] {
            let p = OtpParams {
                length: Some(length),
                ..Default::default()
            };
            assert_eq!(e(CK_OTP_PARAM_OPTIONAL, p).is_none(), ok, "{length}");
        }
        let p = OtpParams {
            format: Some(CK_OTP_FORMAT_HEXADECIMAL),
            ..Default::default()
        };
        assert!(e(CK_OTP_PARAM_OPTIONAL, p).is_some());
        let mut op = HotpVerify(Hotp::new(&with(given), key(CK_OTP_PARAM_OPTIONAL)).unwrap());
        assert!(op.verify(b"", b"969429").is_ok());
        assert_eq!(
            op.verify(b"", b"338314").unwrap_err().rv(),
            CKR_SIGNATURE_INVALID,
            "a given counter is checked alone, without a window"
        );
    }
}
