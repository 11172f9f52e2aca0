//! `CKM_PKCS5_PBKD2` (mechanisms spec 3.0 §2.34, "PKCS #5 and PKCS #5-style
//! password-based encryption"; RFC 8018 §5.2 PBKDF2): a secret key made by
//! `C_GenerateKey` from a password, a salt and an iteration count, with an
//! HMAC pseudo-random function, by the pbkdf2 crate.
//!
//! Parameter: `CK_PKCS5_PBKD2_PARAMS2` (PKCS #11 3.0), read by the FFI
//! layer; the salt source must be `CKZ_SALT_SPECIFIED` and the PRF one of
//! `CKP_PKCS5_PBKD2_HMAC_SHA1`, `_SHA224`, `_SHA256`, `_SHA384`, `_SHA512`,
//! `_SHA512_224`, `_SHA512_256` (no PRF data). Every length and the
//! iteration count are bounded ([`MAX_INPUT_LEN`], [`MAX_ITERATIONS`])
//! before any work.

use crate::error::{Result, err};
use cryptoki_sys::*;
use zeroize::Zeroizing;

/// Longest password and salt accepted, in bytes.
pub const MAX_INPUT_LEN: usize = 1024;

/// Most iterations accepted: ten million (a few seconds of HMAC-SHA-512 on
/// one core; OWASP's 2023 advice for PBKDF2-HMAC-SHA1 is 1.3 million).
pub const MAX_ITERATIONS: CK_ULONG = 10_000_000;

/// The parameters of one PBKDF2 generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params<'a> {
    /// `prf` (`CKP_PKCS5_PBKD2_HMAC_*`).
    pub prf: CK_ULONG,
    /// `iterations`.
    pub iterations: CK_ULONG,
    /// `pSaltSourceData` (source `CKZ_SALT_SPECIFIED`).
    pub salt: &'a [u8],
    /// `pPassword`.
    pub password: &'a [u8],
}

/// Checks the parameters (`CKR_MECHANISM_PARAM_INVALID` otherwise).
pub fn validate(p: &Params<'_>) -> Result<()> {
    let known_prf = matches!(
        p.prf,
        CKP_PKCS5_PBKD2_HMAC_SHA1
            | CKP_PKCS5_PBKD2_HMAC_SHA224
            | CKP_PKCS5_PBKD2_HMAC_SHA256
            | CKP_PKCS5_PBKD2_HMAC_SHA384
            | CKP_PKCS5_PBKD2_HMAC_SHA512
            | CKP_PKCS5_PBKD2_HMAC_SHA512_224
            | CKP_PKCS5_PBKD2_HMAC_SHA512_256
    );
    if !known_prf
        || !(1..=MAX_ITERATIONS).contains(&p.iterations)
        || p.salt.len() > MAX_INPUT_LEN
        || p.password.len() > MAX_INPUT_LEN
    {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    Ok(())
}

/// PBKDF2 output of `len` bytes (already bounded by the caller).
pub fn derive(p: &Params<'_>, len: usize) -> Result<Zeroizing<Vec<u8>>> {
    validate(p)?;
    let rounds = u32::try_from(p.iterations).map_err(|_| err(CKR_MECHANISM_PARAM_INVALID))?;
    let mut out = Zeroizing::new(vec![0u8; len]);
    let (pw, salt) = (p.password, p.salt);
    match p.prf {
        CKP_PKCS5_PBKD2_HMAC_SHA1 => pbkdf2::pbkdf2_hmac::<sha1::Sha1>(pw, salt, rounds, &mut out),
        CKP_PKCS5_PBKD2_HMAC_SHA224 => {
            pbkdf2::pbkdf2_hmac::<sha2::Sha224>(pw, salt, rounds, &mut out)
        }
        CKP_PKCS5_PBKD2_HMAC_SHA256 => {
            pbkdf2::pbkdf2_hmac::<sha2::Sha256>(pw, salt, rounds, &mut out)
        }
        CKP_PKCS5_PBKD2_HMAC_SHA384 => {
            pbkdf2::pbkdf2_hmac::<sha2::Sha384>(pw, salt, rounds, &mut out)
        }
        CKP_PKCS5_PBKD2_HMAC_SHA512 => {
            pbkdf2::pbkdf2_hmac::<sha2::Sha512>(pw, salt, rounds, &mut out)
        }
        CKP_PKCS5_PBKD2_HMAC_SHA512_224 => {
            pbkdf2::pbkdf2_hmac::<sha2::Sha512_224>(pw, salt, rounds, &mut out)
        }
        _ => pbkdf2::pbkdf2_hmac::<sha2::Sha512_256>(pw, salt, rounds, &mut out),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(prf: CK_ULONG, iterations: CK_ULONG) -> Params<'static> {
        Params {
            prf,
            iterations,
            salt: b"salt",
            password: b"password",
        }
    }

    /// RFC 6070 §2, test case 2 (c = 2).
    #[test]
    fn rfc6070_case_2() {
        let out = derive(&p(CKP_PKCS5_PBKD2_HMAC_SHA1, 2), 20).unwrap();
        assert_eq!(
            crate::mechanisms::test_util::hex(&out),
            "ea6c014dc72d6f8ccd1ed92ace1d41f0d8de8957"
        );
    }

    #[test]
    fn bounds_are_checked_before_work() {
        for bad in [
            p(CKP_PKCS5_PBKD2_HMAC_SHA1, 0),
            p(CKP_PKCS5_PBKD2_HMAC_SHA1, MAX_ITERATIONS + 1),
            p(CKP_PKCS5_PBKD2_HMAC_GOSTR3411, 1),
            Params {
                salt: &[0; MAX_INPUT_LEN + 1],
                ..p(CKP_PKCS5_PBKD2_HMAC_SHA256, 1)
            },
        ] {
            assert_eq!(
                derive(&bad, 16).unwrap_err().rv(),
                CKR_MECHANISM_PARAM_INVALID
            );
        }
    }
}
