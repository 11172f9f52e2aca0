//! Role-separated wrapping keys: what hsm-bench makes for the key-wrap ops
//! when a token refuses its usual wrapping keys (an AES key imported by
//! value that also encrypts, decrypts, signs and verifies; an RSA pair
//! whose public half also encrypts and private half also decrypts).
//!
//! Tokens with role separation — many hardware HSMs, and dalek-pkcs11 under
//! `key_policy = strict` (docs/SECURITY.md, "Key-management policy") — follow
//! the "secure templates" of Bortolozzo, Centenaro, Focardi and Steel
//! ("Attacking and fixing PKCS#11 security tokens", CCS 2010): one key never
//! holds wrap with decrypt, unwrap with encrypt, or either with derive, and
//! only a key no caller can know wraps (generated on the token and never
//! extractable; PKCS#11 3.0 §4.9 `CKA_WRAP`, `CKA_NEVER_EXTRACTABLE`). The
//! keys here are such keys: generated on the token (`C_GenerateKey`,
//! `C_GenerateKeyPair`), sensitive, not extractable, and allowed to wrap and
//! unwrap only — every other usage flag is given as false, since tokens
//! default some of them (`CKA_ENCRYPT`, `CKA_DECRYPT`) to true.

use cryptoki_sys::*;

use super::alg::KeySpec;
use super::failure::Failure;
use super::failure::ck;
use super::keyset::KeyHandles;
use crate::token::raw::{Mech, RawModule, Template};

/// How the keys here are made, for notes and the run's `keys` line.
pub const DESCRIPTION: &str =
    "generated on the token, sensitive, not extractable, allowed to wrap and unwrap only";

/// Usage flags of a secret wrapping key: wraps and unwraps, nothing else.
pub const SECRET_USAGE: &[(CK_ATTRIBUTE_TYPE, bool)] = &[
    (CKA_WRAP, true),
    (CKA_UNWRAP, true),
    (CKA_ENCRYPT, false),
    (CKA_DECRYPT, false),
    (CKA_SIGN, false),
    (CKA_VERIFY, false),
    (CKA_DERIVE, false),
];

/// Usage flags of the public half of an RSA wrapping pair: wraps only.
pub const PUBLIC_USAGE: &[(CK_ATTRIBUTE_TYPE, bool)] =
    &[(CKA_WRAP, true), (CKA_ENCRYPT, false), (CKA_VERIFY, false)];

/// Usage flags of the private half of an RSA wrapping pair: unwraps only.
pub const PRIVATE_USAGE: &[(CK_ATTRIBUTE_TYPE, bool)] =
    &[(CKA_UNWRAP, true), (CKA_DECRYPT, false), (CKA_SIGN, false)];

/// `t` with the flags `flags`.
fn with_flags(t: Template, flags: &[(CK_ATTRIBUTE_TYPE, bool)]) -> Template {
    flags.iter().fold(t, |t, &(ty, v)| t.bool(ty, v))
}

/// What every object here carries: token or session object, label, private.
fn common(label: &[u8], token: bool) -> Template {
    Template::new()
        .bool(CKA_TOKEN, token)
        .bytes(CKA_LABEL, label)
        .bool(CKA_PRIVATE, true)
}

/// Mechanism and template to generate an AES wrapping key of `bytes` bytes.
pub fn aes_template(bytes: u32, label: &[u8], token: bool) -> (Mech, Template) {
    let t = with_flags(common(label, token), SECRET_USAGE)
        .bool(CKA_SENSITIVE, true)
        .bool(CKA_EXTRACTABLE, false)
        .ulong(CKA_VALUE_LEN, bytes as CK_ULONG);
    (Mech::plain(CKM_AES_KEY_GEN), t)
}

/// Mechanism, public and private templates to generate an RSA wrapping pair
/// of `bits` bits (public exponent 65537); the private half is sensitive and
/// not extractable, so the public half may wrap on a token that asks that of
/// it.
pub fn rsa_templates(bits: u32, label: &[u8], token: bool) -> (Mech, Template, Template) {
    let public = with_flags(
        Template::new()
            .bool(CKA_TOKEN, token)
            .bytes(CKA_LABEL, label),
        PUBLIC_USAGE,
    )
    .ulong(CKA_MODULUS_BITS, bits as CK_ULONG)
    .bytes(CKA_PUBLIC_EXPONENT, &[0x01, 0x00, 0x01]);
    let private = with_flags(common(label, token), PRIVATE_USAGE)
        .bool(CKA_SENSITIVE, true)
        .bool(CKA_EXTRACTABLE, false);
    (Mech::plain(CKM_RSA_PKCS_KEY_PAIR_GEN), public, private)
}

/// Make the role-separated wrapping key for `spec` (`KeySpec::WrapAes` or
/// `KeySpec::WrapRsa`) labelled `label`, a token object when `token`. Its
/// value is unknown to hsm-bench.
pub fn make(
    raw: &RawModule,
    s: CK_SESSION_HANDLE,
    spec: KeySpec,
    label: &str,
    token: bool,
) -> Result<KeyHandles, Failure> {
    let made = KeyHandles {
        generated: true,
        token,
        label: Some(label.to_string()),
        ..Default::default()
    };
    match spec {
        KeySpec::WrapAes(n) => {
            let (mut m, mut t) = aes_template(n, label.as_bytes(), token);
            let (rv, h) = raw.generate_key(s, &mut m, &mut t);
            ck(rv)?;
            Ok(KeyHandles {
                secret: Some(h),
                ..made
            })
        }
        KeySpec::WrapRsa(bits) => {
            let (mut m, mut public, mut private) = rsa_templates(bits, label.as_bytes(), token);
            let (rv, hp, hs) = raw.generate_key_pair(s, &mut m, &mut public, &mut private);
            ck(rv)?;
            Ok(KeyHandles {
                public: Some(hp),
                private: Some(hs),
                ..made
            })
        }
        other => Err(Failure::Check(format!(
            "{} is not a wrapping key",
            other.name()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The roles a role-separating token refuses on one key (CCS 2010;
    /// dalek-pkcs11's `strict`).
    const CONFLICTS: &[(CK_ATTRIBUTE_TYPE, CK_ATTRIBUTE_TYPE)] = &[
        (CKA_WRAP, CKA_DECRYPT),
        (CKA_UNWRAP, CKA_ENCRYPT),
        (CKA_WRAP, CKA_DERIVE),
        (CKA_UNWRAP, CKA_DERIVE),
    ];

    fn on(flags: &[(CK_ATTRIBUTE_TYPE, bool)], ty: CK_ATTRIBUTE_TYPE) -> bool {
        flags.iter().any(|&(t, v)| t == ty && v)
    }

    #[test]
    fn wrapping_keys_hold_no_conflicting_roles() {
        for flags in [SECRET_USAGE, PUBLIC_USAGE, PRIVATE_USAGE] {
            for &(a, b) in CONFLICTS {
                assert!(!(on(flags, a) && on(flags, b)), "{a:#x} with {b:#x}");
            }
            // Only wrap and unwrap are switched on.
            assert!(
                flags
                    .iter()
                    .all(|&(t, v)| !v || t == CKA_WRAP || t == CKA_UNWRAP)
            );
        }
        assert!(on(SECRET_USAGE, CKA_WRAP) && on(SECRET_USAGE, CKA_UNWRAP));
        // The usage a token may default to true is given as false.
        for ty in [CKA_ENCRYPT, CKA_DECRYPT, CKA_SIGN, CKA_VERIFY, CKA_DERIVE] {
            assert!(SECRET_USAGE.contains(&(ty, false)), "{ty:#x}");
        }
        assert!(on(PUBLIC_USAGE, CKA_WRAP) && !on(PUBLIC_USAGE, CKA_UNWRAP));
        assert!(PUBLIC_USAGE.contains(&(CKA_ENCRYPT, false)));
        assert!(on(PRIVATE_USAGE, CKA_UNWRAP) && !on(PRIVATE_USAGE, CKA_WRAP));
        assert!(PRIVATE_USAGE.contains(&(CKA_DECRYPT, false)));
    }
}
