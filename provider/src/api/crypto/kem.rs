//! Key encapsulation (PKCS#11 3.2 base spec §5.18 `C_EncapsulateKey`,
//! `C_DecapsulateKey`; mechanisms spec 3.2 ML-KEM): the key each call
//! takes (`CKA_ENCAPSULATE` / `CKA_DECAPSULATE`, allowed mechanisms), the
//! secret key made from the shared secret with the caller's template and
//! the key's `CKA_ENCAPSULATE_TEMPLATE` / `CKA_DECAPSULATE_TEMPLATE`, and
//! what that key inherits.
//!
//! The new key: `CKA_KEY_TYPE` from the template (generic secret if
//! absent); `CKA_VALUE_LEN` at most the 32 bytes of the shared secret, whose
//! first bytes it takes (the whole secret if absent); `CKA_LOCAL` false.
//! A decapsulated key keeps the protection rules of a derived key: always
//! sensitive / never extractable only if the private key was, and no
//! shorter than the strength floor when the private key is protected
//! (Clulow 2003, key-length reduction). An encapsulated key is never
//! "always sensitive": whoever holds the private key can make it too.

use super::key_use::single_call_key;
use super::new_key::{BaseProtection, insert_secret, with_key_template};
use crate::api::key_policy;
use crate::api::session::Session;
use crate::api::template::{self, Origin};
use crate::attributes::{Attr, decode_ulong};
use crate::error::{Error, Result, err};
use crate::mechanisms::mlkem::SharedSecret;
use crate::mechanisms::{self, Mechanism, kem, strength};
use cryptoki_sys::*;
use zeroize::Zeroizing;

/// The key type and value of the new key: `secret` cut to the template's
/// `CKA_VALUE_LEN`, and the template without it.
fn new_key_value(
    template: &[Attr],
    secret: &SharedSecret,
) -> Result<(CK_KEY_TYPE, Zeroizing<Vec<u8>>, Vec<Attr>)> {
    let key_type = template::template_value(template, CKA_KEY_TYPE)?
        .map(decode_ulong)
        .transpose()?
        .unwrap_or(CKK_GENERIC_SECRET);
    let len = match template::template_value(template, CKA_VALUE_LEN)? {
        Some(v) => {
            usize::try_from(decode_ulong(v)?).map_err(|_| err(CKR_ATTRIBUTE_VALUE_INVALID))?
        }
        None => mechanisms::default_derived_len(key_type).unwrap_or(secret.len()),
    };
    if len > secret.len() {
        return Err(err(CKR_ATTRIBUTE_VALUE_INVALID));
    }
    mechanisms::check_secret_len(key_type, len)?;
    let mut value = Zeroizing::new(secret[..len].to_vec());
    mechanisms::shape_derived_value(key_type, &mut value);
    let rest = template
        .iter()
        .filter(|a| a.ty != CKA_VALUE_LEN)
        .cloned()
        .collect();
    Ok((key_type, value, rest))
}

/// `C_EncapsulateKey`: the ciphertext's length when `out` is `None` (no
/// key is made); else the ciphertext in `out` (`CKR_BUFFER_TOO_SMALL`
/// with the length if it does not fit, no key made) and the new key.
pub fn encapsulate_key(
    session: &Session,
    mech: &Mechanism<'_>,
    public: CK_OBJECT_HANDLE,
    template: &[Attr],
    out: Option<&mut [u8]>,
) -> Result<(usize, Option<CK_OBJECT_HANDLE>)> {
    mechanisms::require(mech, CKF_ENCAPSULATE)?;
    let material = single_call_key(session, public, mech, CKA_ENCAPSULATE)?;
    let len = kem::ciphertext_len(mech, &material)?;
    let Some(out) = out else {
        return Ok((len, None));
    };
    if out.len() < len {
        return Err(Error::buffer_too_small(len));
    }
    let template = with_key_template(
        &*session.token.key(public)?,
        CKA_ENCAPSULATE_TEMPLATE,
        template,
    )?;
    let (ciphertext, secret) = kem::encapsulate(mech, &material)?;
    let (key_type, value, template) = new_key_value(&template, &secret)?;
    let handle = insert_secret(
        session,
        &template,
        Some(key_type),
        Origin::Derive,
        mech.ty,
        &value,
        None,
    )?;
    out[..ciphertext.len()].copy_from_slice(&ciphertext);
    Ok((ciphertext.len(), Some(handle)))
}

/// `C_DecapsulateKey`: the key the shared secret of `ciphertext` makes
/// (a ciphertext of the wrong length: `CKR_ENCRYPTED_DATA_LEN_RANGE`; one
/// not made for this key gives ML-KEM's implicit-rejection secret, as
/// FIPS 203 asks, not an error).
pub fn decapsulate_key(
    session: &Session,
    mech: &Mechanism<'_>,
    private: CK_OBJECT_HANDLE,
    template: &[Attr],
    ciphertext: &[u8],
) -> Result<CK_OBJECT_HANDLE> {
    mechanisms::require(mech, CKF_DECAPSULATE)?;
    let material = single_call_key(session, private, mech, CKA_DECAPSULATE)?;
    let key = session.token.key(private)?;
    let protection = BaseProtection::of(&key);
    let template = with_key_template(&key, CKA_DECAPSULATE_TEMPLATE, template)?;
    drop(key);
    let secret = kem::decapsulate(mech, &material, ciphertext)?;
    let (key_type, value, template) = new_key_value(&template, &secret)?;
    key_policy::check_derived_strength(
        protection.protected(),
        strength::strength(&material),
        value.len(),
        strength::secret_strength(key_type, value.len()),
    )?;
    insert_secret(
        session,
        &template,
        Some(key_type),
        Origin::Derive,
        mech.ty,
        &value,
        Some(protection),
    )
}
