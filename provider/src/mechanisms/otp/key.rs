//! The HOTP key (`CKO_OTP_KEY` / `CKK_HOTP`, base spec 3.0 §4.12 "OTP key
//! objects", mechanisms spec "OATH HOTP") and the RFC 4226 computation:
//! `HOTP(K, C) = Truncate(HMAC(K, C)) mod 10^Digit`, with the dynamic
//! truncation of RFC 4226 §5.3. Pure: plain values in, digits out.
//!
//! The hash follows the key length, as kryoptic does: 20 bytes is
//! HMAC-SHA-1 (RFC 4226), 32 bytes HMAC-SHA-256 and 64 bytes HMAC-SHA-512
//! (the key lengths RFC 6238 Appendix B uses for the TOTP variants, whose
//! values are HOTP values at counter T).

use super::super::hmac::prepared::{HmacHash, PreparedHmac};
use crate::attributes::{Attributes, decode_ulong};
use crate::error::{Result, err};
use cryptoki_sys::*;
use subtle::{ConditionallySelectable, ConstantTimeEq};
use zeroize::Zeroizing;

/// The key lengths an HOTP key may have, in bytes (SHA-1, SHA-256, SHA-512).
pub const KEY_LENS: [usize; 3] = [20, 32, 64];
/// The length an HOTP key generation makes when the template gives none
/// (RFC 4226 §4 R6: 160 bits recommended).
pub const DEFAULT_KEY_LEN: usize = 20;
/// Fewest digits of an OTP (RFC 4226 §4 R4: at least six).
pub const MIN_DIGITS: CK_ULONG = 6;
/// Most digits (RFC 4226 §5.3 defines up to eight with 31-bit truncation;
/// a ninth digit would not be uniform).
pub const MAX_DIGITS: CK_ULONG = 8;
/// How many counter values `C_Verify` tries from the stored one (RFC 4226
/// §7.4 "look-ahead" resynchronisation window).
pub const LOOK_AHEAD: u64 = 5;

/// A parsed HOTP key: its value, the HMAC hash its length selects, the
/// default number of digits (`CKA_OTP_LENGTH`) and
/// `CKA_OTP_COUNTER_REQUIREMENT`. The value is zeroized on drop (the
/// prepared HMAC states by the hmac crate).
pub struct HotpKey {
    value: Zeroizing<Vec<u8>>,
    hash: HmacHash,
    digits: CK_ULONG,
    counter_requirement: CK_ULONG,
    prepared: PreparedHmac,
}

/// The HMAC hash of a key of `len` bytes, if HOTP takes such a key.
fn hash_for(len: usize) -> Option<HmacHash> {
    match len {
        20 => Some(HmacHash::Sha1),
        32 => Some(HmacHash::Sha256),
        64 => Some(HmacHash::Sha512),
        _ => None,
    }
}

/// A `CK_ULONG` attribute value (native encoding) or the error.
fn ulong_of(bytes: Option<&[u8]>) -> Result<CK_ULONG> {
    decode_ulong(bytes.ok_or(err(CKR_KEY_HANDLE_INVALID))?)
}

impl HotpKey {
    /// A key from its stored values (`CKA_VALUE`, `CKA_OTP_LENGTH`,
    /// `CKA_OTP_COUNTER_REQUIREMENT`), checked again as at creation.
    pub fn new(
        value: Zeroizing<Vec<u8>>,
        length: Option<&[u8]>,
        counter_requirement: Option<&[u8]>,
    ) -> Result<HotpKey> {
        let hash = hash_for(value.len()).ok_or(err(CKR_KEY_SIZE_RANGE))?;
        let digits = ulong_of(length)?;
        check_digits(digits).map_err(|_| err(CKR_KEY_TYPE_INCONSISTENT))?;
        let counter_requirement = ulong_of(counter_requirement)?;
        check_requirement(counter_requirement).map_err(|_| err(CKR_KEY_TYPE_INCONSISTENT))?;
        Ok(HotpKey {
            value,
            hash,
            digits,
            counter_requirement,
            prepared: PreparedHmac::default(),
        })
    }

    /// The key length in bytes.
    pub fn len(&self) -> usize {
        self.value.len()
    }

    /// Always false (a key has 20, 32 or 64 bytes); for clippy's pairing.
    pub fn is_empty(&self) -> bool {
        self.value.is_empty()
    }

    /// `CKA_OTP_LENGTH`: the digits of an OTP unless the mechanism
    /// parameter asks for another length.
    pub fn digits(&self) -> CK_ULONG {
        self.digits
    }

    /// `CKA_OTP_COUNTER_REQUIREMENT` (`CK_OTP_PARAM_IGNORED`, `_OPTIONAL`
    /// or `_MANDATORY`).
    pub fn counter_requirement(&self) -> CK_ULONG {
        self.counter_requirement
    }

    /// The OTP for `counter` with `digits` digits (6 to 8), as ASCII
    /// decimal digits in the first `digits` bytes of the result.
    pub fn otp(&self, counter: u64, digits: CK_ULONG) -> Result<Zeroizing<[u8; 8]>> {
        check_digits(digits)?;
        let mut mac = Zeroizing::new([0u8; 64]);
        let n = self
            .prepared
            .mac(self.hash, &self.value, &counter.to_be_bytes(), &mut mac[..])?;
        let code = truncate(&mac[..n]);
        Ok(decimal(code, digits))
    }

    /// The first counter of `start .. start + window` (stopping before
    /// `u64::MAX`, whose successor cannot be stored) whose OTP of `digits`
    /// digits is `candidate`. Every counter of the window is computed and
    /// compared in constant time whatever matches, so the time taken does
    /// not tell which one did (or how many leading digits agreed).
    pub fn find(
        &self,
        start: u64,
        window: u64,
        digits: CK_ULONG,
        candidate: &[u8],
    ) -> Result<Option<u64>> {
        let n = usize::try_from(digits).map_err(|_| err(CKR_GENERAL_ERROR))?;
        if candidate.len() != n {
            return Err(err(CKR_SIGNATURE_LEN_RANGE));
        }
        let mut found = subtle::Choice::from(0);
        let mut which = 0u64;
        for i in 0..window {
            let Some(counter) = start.checked_add(i).filter(|&c| c != u64::MAX) else {
                break;
            };
            let otp = self.otp(counter, digits)?;
            let hit = otp[..n].ct_eq(candidate) & !found;
            which.conditional_assign(&counter, hit);
            found |= hit;
        }
        Ok(bool::from(found).then_some(which))
    }
}

/// RFC 4226 §5.3 dynamic truncation: the 31-bit number at the offset the
/// low four bits of the last MAC byte give.
pub fn truncate(mac: &[u8]) -> u32 {
    let offset = usize::from(mac[mac.len() - 1] & 0x0f);
    let b = &mac[offset..offset + 4];
    u32::from_be_bytes([b[0] & 0x7f, b[1], b[2], b[3]])
}

/// `code mod 10^digits` as `digits` ASCII digits, zero-padded on the left
/// (in the first `digits` bytes).
fn decimal(code: u32, digits: CK_ULONG) -> Zeroizing<[u8; 8]> {
    let mut out = Zeroizing::new([b'0'; 8]);
    let mut v = code;
    let n = digits as usize;
    for i in (0..n).rev() {
        out[i] = b'0' + (v % 10) as u8;
        v /= 10;
    }
    out
}

/// `CKR_MECHANISM_PARAM_INVALID` unless `digits` is 6 to 8.
pub fn check_digits(digits: CK_ULONG) -> Result<()> {
    if (MIN_DIGITS..=MAX_DIGITS).contains(&digits) {
        Ok(())
    } else {
        Err(err(CKR_MECHANISM_PARAM_INVALID))
    }
}

/// `CKR_ATTRIBUTE_VALUE_INVALID` unless `v` is one of the three
/// `CK_OTP_PARAM_*` requirement values.
fn check_requirement(v: CK_ULONG) -> Result<()> {
    match v {
        CK_OTP_PARAM_IGNORED | CK_OTP_PARAM_OPTIONAL | CK_OTP_PARAM_MANDATORY => Ok(()),
        _ => Err(err(CKR_ATTRIBUTE_VALUE_INVALID)),
    }
}

/// The usage flags an HOTP key may not hold: it computes OTPs only, so it
/// neither encrypts, wraps nor derives (base spec §4.12 leaves this to the
/// token; docs/SECURITY.md "HOTP keys").
pub const FORBIDDEN_USAGE: [CK_ATTRIBUTE_TYPE; 5] =
    [CKA_ENCRYPT, CKA_DECRYPT, CKA_WRAP, CKA_UNWRAP, CKA_DERIVE];

/// Checks a new HOTP key's attributes (made by `C_CreateObject` or
/// `C_GenerateKey`, defaults already filled in) and completes them:
/// `CKA_VALUE` of 20, 32 or 64 bytes (`CKA_VALUE_LEN` set to match),
/// decimal format only, 6 to 8 digits, no user-friendly mode, the time,
/// challenge and PIN requirements `CK_OTP_PARAM_IGNORED`, a valid counter
/// requirement, `CKA_OTP_COUNTER` of 8 bytes (zero if absent), no
/// `CKA_OTP_TIME`, none of [`FORBIDDEN_USAGE`] and not copyable (a copy
/// would share the counter and repeat its OTPs).
pub fn complete_import(attrs: &mut Attributes) -> Result<()> {
    let len = attrs
        .bytes(CKA_VALUE)
        .map(<[u8]>::len)
        .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    if hash_for(len).is_none() {
        return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
    }
    match attrs.ulong(CKA_VALUE_LEN) {
        Some(l) if l as usize != len => return Err(err(CKR_TEMPLATE_INCONSISTENT)),
        _ => attrs.set_ulong(CKA_VALUE_LEN, len as CK_ULONG),
    }
    let invalid = err(CKR_ATTRIBUTE_VALUE_INVALID);
    if attrs.ulong(CKA_OTP_FORMAT) != Some(CK_OTP_FORMAT_DECIMAL) {
        return Err(invalid);
    }
    let digits = attrs
        .ulong(CKA_OTP_LENGTH)
        .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    if check_digits(digits).is_err() {
        return Err(invalid);
    }
    if attrs.flag(CKA_OTP_USER_FRIENDLY_MODE) {
        return Err(invalid);
    }
    for ty in [
        CKA_OTP_TIME_REQUIREMENT,
        CKA_OTP_CHALLENGE_REQUIREMENT,
        CKA_OTP_PIN_REQUIREMENT,
    ] {
        if attrs.ulong(ty) != Some(CK_OTP_PARAM_IGNORED) {
            return Err(invalid);
        }
    }
    check_requirement(
        attrs
            .ulong(CKA_OTP_COUNTER_REQUIREMENT)
            .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?,
    )?;
    match attrs.bytes(CKA_OTP_COUNTER).map(<[u8]>::len) {
        None => attrs.set_bytes(CKA_OTP_COUNTER, &[0u8; 8]),
        Some(8) => {}
        Some(_) => return Err(invalid),
    }
    if attrs.bytes(CKA_OTP_TIME).is_some_and(|t| !t.is_empty()) {
        return Err(invalid);
    }
    if FORBIDDEN_USAGE.iter().any(|&ty| attrs.flag(ty)) || attrs.flag(CKA_COPYABLE) {
        return Err(err(CKR_TEMPLATE_INCONSISTENT));
    }
    Ok(())
}

/// The counter stored in an HOTP key's attributes (`CKA_OTP_COUNTER`, 8
/// bytes big-endian).
pub fn stored_counter(attrs: &Attributes) -> Result<u64> {
    let bytes = attrs.bytes(CKA_OTP_COUNTER).ok_or(err(CKR_GENERAL_ERROR))?;
    let array: [u8; 8] = bytes.try_into().map_err(|_| err(CKR_GENERAL_ERROR))?;
    Ok(u64::from_be_bytes(array))
}

#[cfg(test)]
mod tests {
    use super::*;
    fn encode_ulong(v: CK_ULONG) -> [u8; 8] {
        v.to_ne_bytes()
    }

    fn key(value: &[u8], digits: CK_ULONG) -> HotpKey {
        HotpKey::new(
            Zeroizing::new(value.to_vec()),
            Some(&encode_ulong(digits)),
            Some(&encode_ulong(CK_OTP_PARAM_OPTIONAL)),
        )
        .unwrap()
    }

    /// RFC 4226 Appendix D: the truncated values and the six-digit HOTPs.
    #[test]
    fn rfc4226_appendix_d() {
        let k = key(b"12345678901234567890", 6);
        let expected = [
            "755224", "287082", "359152", "969429", "338314", "254676", "287922", "162583",
            "399871", "520489",
        ];
        for (c, want) in expected.iter().enumerate() {
            assert_eq!(&k.otp(c as u64, 6).unwrap()[..6], want.as_bytes(), "{c}");
        }
        // Table 2's truncated value for count 0 (0x4c93cf18) from Table 1's HMAC.
        let mac = crate::mechanisms::test_util::unhex("cc93cf18508d94934c64b65d8ba7667fb7cde4b0");
        assert_eq!(truncate(&mac), 0x4c93cf18);
    }

    #[test]
    fn the_window_finds_the_first_match_and_no_other() {
        let k = key(b"12345678901234567890", 6);
        assert_eq!(k.find(0, LOOK_AHEAD, 6, b"338314").unwrap(), Some(4));
        assert_eq!(
            k.find(0, LOOK_AHEAD, 6, b"254676").unwrap(),
            None,
            "counter 5 is outside 0..5"
        );
        assert_eq!(k.find(5, LOOK_AHEAD, 6, b"254676").unwrap(), Some(5));
        assert_eq!(
            k.find(1, LOOK_AHEAD, 6, b"755224").unwrap(),
            None,
            "no going back"
        );
        assert_eq!(
            k.find(0, LOOK_AHEAD, 6, b"75522").unwrap_err().rv(),
            CKR_SIGNATURE_LEN_RANGE
        );
        // The last counter value cannot be used (its successor is not storable).
        assert_eq!(k.find(u64::MAX, LOOK_AHEAD, 6, b"000000").unwrap(), None);
    }

    #[test]
    fn lengths_and_digits_are_checked() {
        let d = encode_ulong(6);
        let r = encode_ulong(CK_OTP_PARAM_IGNORED);
        for len in [16usize, 19, 21, 48, 65] {
            assert!(HotpKey::new(Zeroizing::new(vec![1; len]), Some(&d), Some(&r)).is_err());
        }
        let k = key(&[7; 32], 8);
        assert!(k.otp(0, 5).is_err());
        assert!(k.otp(0, 9).is_err());
        assert_eq!(k.otp(0, 8).unwrap().len(), 8);
    }
}
