//! A key that already exists on the token (`--key-label`): what it is and
//! which usage flags and mechanisms it allows.

use cryptoki_sys::*;

use super::alg::*;
use super::keys::*;
use super::keyset::KeyHandles;
use crate::token::raw::RawModule;

/// What `--key-label` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detected {
    /// Ed25519 pair (or half of it).
    Ed25519,
    /// EC key on a curve hsm-bench benchmarks.
    Ec(Curve),
    /// Triple-DES key.
    Des3,
    /// X25519 key pair (`CKK_EC_MONTGOMERY`).
    X25519,
    /// RSA key of n bits.
    Rsa(u32),
    /// AES key of n bytes (see [`secret_key`] for how it is made).
    Aes(u32),
    /// HMAC-capable secret key: a generic secret (any HMAC), or a key typed
    /// for one hash (`CKK_SHA256_HMAC`, …) that only that HMAC may use.
    Hmac(Option<CK_MECHANISM_TYPE>),
}

/// An existing key with its usage flags.
#[derive(Debug, Clone)]
pub struct ExistingKey {
    /// Key type.
    pub kind: Detected,
    /// Handles.
    pub handles: KeyHandles,
    /// CKA_SIGN of the private/secret key.
    pub can_sign: bool,
    /// CKA_VERIFY of the public/secret key.
    pub can_verify: bool,
    /// CKA_ENCRYPT.
    pub can_encrypt: bool,
    /// CKA_DECRYPT.
    pub can_decrypt: bool,
    /// CKA_DERIVE of the private key.
    pub can_derive: bool,
    /// CKA_VALUE_LEN of the secret key in bytes, when the token gives it.
    pub value_len: Option<u32>,
    /// CKA_ALLOWED_MECHANISMS of the key objects (PKCS#11 3.0 §4.7), when any
    /// of them sets a non-empty list: only these mechanisms may be used.
    pub allowed: Option<Vec<CK_MECHANISM_TYPE>>,
}

impl ExistingKey {
    /// Whether the key may be used with `m` (CKA_ALLOWED_MECHANISMS).
    pub fn allows(&self, m: CK_MECHANISM_TYPE) -> bool {
        self.allowed.as_ref().is_none_or(|a| a.contains(&m))
    }
}

/// CKA_ALLOWED_MECHANISMS of `h`: `None` when the token does not give it or
/// gives an empty list (both mean "no restriction", PKCS#11 3.0 §4.7).
fn allowed_mechanisms(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    h: CK_OBJECT_HANDLE,
) -> Option<Vec<CK_MECHANISM_TYPE>> {
    let v = raw.attribute(s, h, CKA_ALLOWED_MECHANISMS).ok()?;
    let list: Vec<CK_MECHANISM_TYPE> = v
        .chunks_exact(std::mem::size_of::<CK_MECHANISM_TYPE>())
        .map(|c| {
            let mut b = [0u8; std::mem::size_of::<CK_MECHANISM_TYPE>()];
            b.copy_from_slice(c);
            CK_MECHANISM_TYPE::from_ne_bytes(b)
        })
        .collect();
    (!list.is_empty()).then_some(list)
}

/// A CK_ULONG attribute of `h`, if the token gives it.
pub fn attr_ulong(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    h: CK_OBJECT_HANDLE,
    t: CK_ATTRIBUTE_TYPE,
) -> Option<CK_ULONG> {
    let v = raw.attribute(s, h, t).ok()?;
    let b: [u8; std::mem::size_of::<CK_ULONG>()] = v.as_slice().try_into().ok()?;
    Some(CK_ULONG::from_ne_bytes(b))
}

/// A CK_BBOOL attribute of `h` (false when the token does not give it).
pub fn attr_bool(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    h: CK_OBJECT_HANDLE,
    t: CK_ATTRIBUTE_TYPE,
) -> bool {
    raw.attribute(s, h, t)
        .map(|v| v.first() == Some(&CK_TRUE))
        .unwrap_or(false)
}

/// Detect the type and flags of the key objects `handles` (all with one label).
pub fn detect(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    handles: &[CK_OBJECT_HANDLE],
) -> Result<ExistingKey, String> {
    let mut kh = KeyHandles::default();
    let mut kind = None;
    let (mut sign, mut verify, mut enc, mut dec) = (false, false, false, false);
    let mut derive = false;
    let mut allowed: Option<Vec<CK_MECHANISM_TYPE>> = None;
    let mut value_len = None;
    for &h in handles {
        let Some(class) = attr_ulong(raw, s, h, CKA_CLASS) else {
            continue;
        };
        let Some(kt) = attr_ulong(raw, s, h, CKA_KEY_TYPE) else {
            continue;
        };
        match class {
            CKO_PUBLIC_KEY => kh.public = Some(h),
            CKO_PRIVATE_KEY => kh.private = Some(h),
            CKO_SECRET_KEY => {
                kh.secret = Some(h);
                value_len = attr_ulong(raw, s, h, CKA_VALUE_LEN)
                    .or_else(|| {
                        raw.attribute(s, h, CKA_VALUE)
                            .ok()
                            .map(|v| v.len() as CK_ULONG)
                    })
                    .map(|n| n as u32);
            }
            _ => continue,
        }
        sign |= attr_bool(raw, s, h, CKA_SIGN);
        verify |= attr_bool(raw, s, h, CKA_VERIFY);
        enc |= attr_bool(raw, s, h, CKA_ENCRYPT);
        dec |= attr_bool(raw, s, h, CKA_DECRYPT);
        derive |= class == CKO_PRIVATE_KEY && attr_bool(raw, s, h, CKA_DERIVE);
        if let Some(list) = allowed_mechanisms(raw, s, h) {
            // Objects of one label that restrict differently: only what
            // every restricting object allows is certain to work.
            allowed = Some(match allowed {
                None => list,
                Some(prev) => prev.into_iter().filter(|m| list.contains(m)).collect(),
            });
        }
        let k = match kt {
            CKK_EC_EDWARDS => Some(Detected::Ed25519),
            CKK_EC => match raw.attribute(s, h, CKA_EC_PARAMS) {
                Ok(p) => match Curve::from_params(&p) {
                    Some(c) => Some(Detected::Ec(c)),
                    None => {
                        return Err(format!(
                            "EC key on a curve hsm-bench does not benchmark ({}; it knows P-256, P-384, P-521 and secp256k1)",
                            curve_name(&p)
                        ));
                    }
                },
                Err(_) => None,
            },
            CKK_RSA => attr_ulong(raw, s, h, CKA_MODULUS_BITS)
                .or_else(|| {
                    raw.attribute(s, h, CKA_MODULUS)
                        .ok()
                        .map(|m| (m.len() * 8) as CK_ULONG)
                })
                .map(|b| Detected::Rsa(b as u32)),
            CKK_AES => attr_ulong(raw, s, h, CKA_VALUE_LEN).map(|n| Detected::Aes(n as u32)),
            CKK_DES3 => Some(Detected::Des3),
            CKK_EC_MONTGOMERY => Some(Detected::X25519),
            CKK_GENERIC_SECRET => Some(Detected::Hmac(None)),
            CKK_SHA256_HMAC => Some(Detected::Hmac(Some(CKM_SHA256_HMAC))),
            CKK_SHA512_HMAC => Some(Detected::Hmac(Some(CKM_SHA512_HMAC))),
            other => {
                return Err(format!(
                    "key type 0x{other:x} is not benchmarked by hsm-bench"
                ));
            }
        };
        if kind.is_none() {
            kind = k;
        }
    }
    let kind = kind.ok_or("no key object with that label")?;
    Ok(ExistingKey {
        kind,
        handles: kh,
        can_sign: sign,
        can_verify: verify,
        can_encrypt: enc,
        can_decrypt: dec,
        can_derive: derive,
        value_len,
        allowed,
    })
}
