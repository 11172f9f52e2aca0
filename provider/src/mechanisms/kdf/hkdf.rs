//! HKDF (RFC 5869) as `CKM_HKDF_DERIVE` and `CKM_HKDF_DATA` (PKCS #11 3.0
//! mechanisms spec §2.43.2–2.43.3, `CK_HKDF_PARAMS`).
//!
//! - `bExtract` and `bExpand` both true: HKDF-Extract then HKDF-Expand, the
//!   output is `CKA_VALUE_LEN` bytes;
//! - extract only: the output is the pseudo-random key, the hash's length;
//! - expand only: the base key is the pseudo-random key (at least the
//!   hash's length, else `CKR_KEY_SIZE_RANGE`);
//! - neither: `CKR_MECHANISM_PARAM_INVALID`.
//!
//! The salt is none (`CKF_HKDF_SALT_NULL`: a hash-length string of zeros,
//! RFC 5869 §2.2), the caller's bytes (`CKF_HKDF_SALT_DATA`), or the value
//! of another key (`CKF_HKDF_SALT_KEY`, resolved by the caller). The PRF is
//! one of `CKM_SHA_1`, `CKM_SHA224`, `CKM_SHA256`, `CKM_SHA384`,
//! `CKM_SHA512`.

use crate::error::{Result, err};
use cryptoki_sys::*;
use hkdf::Hkdf;
use zeroize::Zeroizing;

/// Where the extract step's salt comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Salt<'a> {
    /// `CKF_HKDF_SALT_NULL`.
    Null,
    /// `CKF_HKDF_SALT_DATA`: `pSalt`.
    Data(&'a [u8]),
    /// `CKF_HKDF_SALT_KEY`: the key `hSaltKey`, whose value the caller
    /// passes as `salt_key` to [`derive`].
    Key(CK_OBJECT_HANDLE),
}

/// `CK_HKDF_PARAMS`, read from the caller's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params<'a> {
    /// `bExtract`.
    pub extract: bool,
    /// `bExpand`.
    pub expand: bool,
    /// `prfHashMechanism`.
    pub prf: CK_MECHANISM_TYPE,
    /// `ulSaltType` with `pSalt` / `hSaltKey`.
    pub salt: Salt<'a>,
    /// `pInfo`.
    pub info: &'a [u8],
}

/// Output length of the PRF's hash, or `CKR_MECHANISM_PARAM_INVALID`.
pub fn hash_len(prf: CK_MECHANISM_TYPE) -> Result<usize> {
    match prf {
        CKM_SHA_1 => Ok(20),
        CKM_SHA224 => Ok(28),
        CKM_SHA256 => Ok(32),
        CKM_SHA384 => Ok(48),
        CKM_SHA512 => Ok(64),
        _ => Err(err(CKR_MECHANISM_PARAM_INVALID)),
    }
}

/// The output length: `wanted` (the template's `CKA_VALUE_LEN`) when
/// expanding, the hash length when only extracting (a different `wanted`
/// is `CKR_TEMPLATE_INCONSISTENT`).
pub fn output_len(p: &Params<'_>, wanted: Option<usize>) -> Result<usize> {
    let hash = hash_len(p.prf)?;
    if !p.expand {
        return match wanted {
            None => Ok(hash),
            Some(l) if l == hash => Ok(hash),
            Some(_) => Err(err(CKR_TEMPLATE_INCONSISTENT)),
        };
    }
    let len = wanted.ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    // RFC 5869 §2.3: L <= 255 * HashLen.
    if len == 0 || len > 255 * hash {
        return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
    }
    Ok(len)
}

/// Derives `len` bytes (from [`output_len`]) from the base key's value
/// `ikm`; `salt_key` is the salt key's value for [`Salt::Key`].
pub fn derive(
    p: &Params<'_>,
    ikm: &[u8],
    salt_key: Option<&[u8]>,
    len: usize,
) -> Result<Zeroizing<Vec<u8>>> {
    if !p.extract && !p.expand {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    let salt = match p.salt {
        Salt::Null => None,
        Salt::Data(d) => Some(d),
        Salt::Key(_) => Some(salt_key.ok_or(err(CKR_MECHANISM_PARAM_INVALID))?),
    };
    match p.prf {
        CKM_SHA_1 => run::<sha1::Sha1>(p, ikm, salt, len),
        CKM_SHA224 => run::<sha2::Sha224>(p, ikm, salt, len),
        CKM_SHA256 => run::<sha2::Sha256>(p, ikm, salt, len),
        CKM_SHA384 => run::<sha2::Sha384>(p, ikm, salt, len),
        CKM_SHA512 => run::<sha2::Sha512>(p, ikm, salt, len),
        _ => Err(err(CKR_MECHANISM_PARAM_INVALID)),
    }
}

fn run<H>(p: &Params<'_>, ikm: &[u8], salt: Option<&[u8]>, len: usize) -> Result<Zeroizing<Vec<u8>>>
where
    H: hmac::EagerHash + Clone,
    hmac::Hmac<H>: Clone + hmac::digest::OutputSizeUser,
{
    let mut out = Zeroizing::new(vec![0u8; len]);
    if !p.expand {
        // Extract only: the PRK is the output. Zero-length salts count as
        // absent (RFC 5869 §2.2: "if not provided, ... HashLen zeros").
        let (prk, _) = Hkdf::<H>::extract(salt.filter(|s| !s.is_empty()), ikm);
        let prk = Zeroizing::new(prk);
        if prk.len() != len {
            return Err(err(CKR_TEMPLATE_INCONSISTENT));
        }
        out.copy_from_slice(&prk);
        return Ok(out);
    }
    let hk = if p.extract {
        Hkdf::<H>::new(salt.filter(|s| !s.is_empty()), ikm)
    } else {
        Hkdf::<H>::from_prk(ikm).map_err(|_| err(CKR_KEY_SIZE_RANGE))?
    };
    hk.expand(p.info, &mut out)
        .map_err(|_| err(CKR_ATTRIBUTE_VALUE_INVALID))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::test_util::unhex;

    /// RFC 5869 A.1 (SHA-256) through every extract/expand combination.
    #[test]
    fn rfc5869_case_1_in_parts() {
        let ikm = unhex("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b");
        let salt = unhex("000102030405060708090a0b0c");
        let info = unhex("f0f1f2f3f4f5f6f7f8f9");
        let prk = unhex("077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5");
        let okm = unhex(
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865",
        );
        let p = |extract, expand| Params {
            extract,
            expand,
            prf: CKM_SHA256,
            salt: Salt::Data(&salt),
            info: &info,
        };
        let both = p(true, true);
        let len = output_len(&both, Some(42)).unwrap();
        assert_eq!(*derive(&both, &ikm, None, len).unwrap(), okm);
        let extract = p(true, false);
        assert_eq!(output_len(&extract, None).unwrap(), 32);
        assert_eq!(*derive(&extract, &ikm, None, 32).unwrap(), prk);
        assert_eq!(
            output_len(&extract, Some(16)).unwrap_err().rv(),
            CKR_TEMPLATE_INCONSISTENT
        );
        let expand = p(false, true);
        assert_eq!(*derive(&expand, &prk, None, 42).unwrap(), okm);
        // Expand needs a PRK of at least the hash length.
        assert_eq!(
            derive(&expand, &prk[..31], None, 42).unwrap_err().rv(),
            CKR_KEY_SIZE_RANGE
        );
        assert_eq!(
            derive(&p(false, false), &ikm, None, 42).unwrap_err().rv(),
            CKR_MECHANISM_PARAM_INVALID
        );
        // The salt from a key gives what the same bytes give as data.
        let keyed = Params {
            salt: Salt::Key(7),
            ..both
        };
        assert_eq!(*derive(&keyed, &ikm, Some(&salt), 42).unwrap(), okm);
        assert_eq!(
            derive(&keyed, &ikm, None, 42).unwrap_err().rv(),
            CKR_MECHANISM_PARAM_INVALID
        );
    }

    fn extract_and_expand<'a>(
        prf: CK_MECHANISM_TYPE,
        salt: Salt<'a>,
        info: &'a [u8],
    ) -> Params<'a> {
        Params {
            extract: true,
            expand: true,
            prf,
            salt,
            info,
        }
    }

    /// RFC 5869 A.3 (no salt, no info) and A.4 (SHA-1).
    #[test]
    fn rfc5869_null_salt_and_sha1() {
        let ikm = unhex("0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b");
        let p = extract_and_expand(CKM_SHA256, Salt::Null, &[]);
        assert_eq!(
            *derive(&p, &ikm, None, 42).unwrap(),
            unhex(
                "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"
            )
        );
        let ikm = unhex("0b0b0b0b0b0b0b0b0b0b0b");
        let salt = unhex("000102030405060708090a0b0c");
        let info = unhex("f0f1f2f3f4f5f6f7f8f9");
        let p = extract_and_expand(CKM_SHA_1, Salt::Data(&salt), &info);
        assert_eq!(
            *derive(&p, &ikm, None, 42).unwrap(),
            unhex(
                "085a01ea1b10f36933068b56efa5ad81a4f14b822f5b091568a9cdd4f155fda2c22e422478d305f3f896"
            )
        );
    }

    #[test]
    fn lengths_and_hashes_are_checked() {
        let p = extract_and_expand(CKM_SHA256, Salt::Null, &[]);
        assert_eq!(
            output_len(&p, None).unwrap_err().rv(),
            CKR_TEMPLATE_INCOMPLETE
        );
        assert_eq!(
            output_len(&p, Some(0)).unwrap_err().rv(),
            CKR_ATTRIBUTE_VALUE_INVALID
        );
        assert_eq!(output_len(&p, Some(255 * 32)).unwrap(), 255 * 32);
        assert_eq!(
            output_len(&p, Some(255 * 32 + 1)).unwrap_err().rv(),
            CKR_ATTRIBUTE_VALUE_INVALID
        );
        let md5 = Params { prf: CKM_MD5, ..p };
        assert_eq!(
            output_len(&md5, Some(16)).unwrap_err().rv(),
            CKR_MECHANISM_PARAM_INVALID
        );
    }
}
