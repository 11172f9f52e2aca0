//! The key-management policy (`key_policy`, `docs/SECURITY.md`
//! "Key-management policy"): the rules beyond the attribute tables of
//! `policy.rs` that stop the published PKCS#11 key-management attacks —
//! Clulow (CHES 2003), Bortolozzo, Centenaro, Focardi and Steel ("Attacking
//! and fixing PKCS#11 security tokens", CCS 2010) and the filters of Caml
//! Crush (CARDIS 2014). Each rule refuses a call the base specification
//! would allow.
//!
//! Under both levels:
//! - no derivation yields a key weaker than its protected base, and no
//!   sensitive MAC key is shorter than [`FLOOR_BITS`] (key-length reduction);
//! - a wrapping key is at least as strong as the key it wraps, and single
//!   DES never wraps (weak wrapping keys);
//! - the key-management usage flags (`CKA_DERIVE`, `CKA_WRAP`,
//!   `CKA_UNWRAP`) of a protected key are never switched on after it was
//!   made, nor `CKA_DECRYPT` of any key under wrap separation.
//!
//! Under `strict`, in addition (the secure configuration of CCS 2010, and
//! more):
//! - every usage flag is sticky: switched off, never on;
//! - conflicting roles are refused on one key: wrap and decrypt, unwrap and
//!   encrypt, and wrap or unwrap with derive (a derived copy could take the
//!   other role);
//! - only a key no caller can know wraps: a secret key generated on the
//!   token that never was extractable, or a public key the SO marked
//!   trusted or generated here with a private half that never was
//!   extractable; so `CKA_WRAP` is refused on keys made any other way, and
//!   `CKA_WRAP`/`CKA_UNWRAP` default to false;
//! - an unwrapped key is always sensitive (no re-import in the clear);
//! - a private object is never copied into a public one.

use super::template::{Origin, Tables};
use crate::attributes::{Attr, Attributes};
use crate::config::{Config, KeyPolicy};
use crate::error::{Result, err};
use crate::mechanisms::strength::FLOOR_BITS;
use cryptoki_sys::*;

/// Every usage flag of a key (base spec §4.7–§4.10).
const USAGE: &[CK_ATTRIBUTE_TYPE] = &[
    CKA_ENCRYPT,
    CKA_DECRYPT,
    CKA_SIGN,
    CKA_SIGN_RECOVER,
    CKA_VERIFY,
    CKA_VERIFY_RECOVER,
    CKA_WRAP,
    CKA_UNWRAP,
    CKA_DERIVE,
];

/// The usage flags that make a key a key-management key: what they allow
/// reaches other keys' values.
const KEY_MANAGEMENT_USAGE: &[CK_ATTRIBUTE_TYPE] = &[CKA_DERIVE, CKA_WRAP, CKA_UNWRAP];

/// The usage flags under which a secret key computes what a derivation
/// from it outputs: `E_K(data)` of the encryption-of-data derivations
/// (encrypting, or decrypting a keystream), and the HMAC or CMAC block of
/// the PRF-based ones (signing). Checked when a key derives
/// (`crypto::derive`); on a protected secret key they never widen
/// afterwards, or a key derived while they were off would be computed
/// after all. (Only switching `CKA_DERIVE` off first would not help: it can
/// be switched off at any time, so the rule holds for every protected
/// secret key, not only those that may derive now.)
const DERIVATION_ORACLE_USAGE: &[CK_ATTRIBUTE_TYPE] = &[
    CKA_DERIVE,
    CKA_WRAP,
    CKA_UNWRAP,
    CKA_ENCRYPT,
    CKA_DECRYPT,
    CKA_SIGN,
];

/// Pairs of roles one key may not hold together under `strict`.
const CONFLICTS: &[(CK_ATTRIBUTE_TYPE, CK_ATTRIBUTE_TYPE)] = &[
    (CKA_WRAP, CKA_DECRYPT),
    (CKA_UNWRAP, CKA_ENCRYPT),
    (CKA_WRAP, CKA_DERIVE),
    (CKA_UNWRAP, CKA_DERIVE),
];

/// The rules in force for one token: the configured level and key-wrap
/// separation (`wrap_separation`).
#[derive(Clone, Copy, Debug)]
pub struct Rules {
    /// `key_policy`.
    pub policy: KeyPolicy,
    /// `wrap_separation`.
    pub wrap_separation: bool,
}

impl Rules {
    /// The rules a token's configuration sets.
    pub fn of(config: &Config) -> Rules {
        Rules {
            policy: config.key_policy,
            wrap_separation: config.wrap_separation,
        }
    }

    /// True under `strict`.
    pub fn strict(self) -> bool {
        self.policy.is_strict()
    }
}

/// True for a key whose secret value no caller may read (`CKA_SENSITIVE`,
/// or not `CKA_EXTRACTABLE`): what must not leak through another key or an
/// oracle.
pub fn is_protected(attrs: &Attributes) -> bool {
    attrs.flag(CKA_SENSITIVE) || !attrs.flag(CKA_EXTRACTABLE)
}

fn is_key(attrs: &Attributes) -> bool {
    matches!(
        attrs.ulong(CKA_CLASS),
        Some(CKO_SECRET_KEY | CKO_PRIVATE_KEY | CKO_PUBLIC_KEY)
    )
}

/// Defaults the level sets before the attribute tables' own
/// (`template::build`): under `strict`, `CKA_WRAP` and `CKA_UNWRAP` are
/// false unless asked for, and an unwrapped key is sensitive.
pub fn defaults(origin: Origin, rules: Rules) -> &'static [(CK_ATTRIBUTE_TYPE, bool)] {
    match (rules.strict(), origin) {
        (false, _) => &[],
        (true, Origin::Unwrap) => &[
            (CKA_WRAP, false),
            (CKA_UNWRAP, false),
            (CKA_SENSITIVE, true),
        ],
        (true, _) => &[(CKA_WRAP, false), (CKA_UNWRAP, false)],
    }
}

/// The attributes of a new object of `origin` from the caller's template
/// (`template::build` with this level's [`defaults`], then
/// [`check_built`]).
pub fn build(
    template: &[Attr],
    tables: Tables,
    origin: Origin,
    is_so: bool,
    rules: Rules,
) -> Result<Attributes> {
    let attrs = super::template::build(template, tables, origin, is_so, defaults(origin, rules))?;
    check_built(&attrs, origin, rules)?;
    Ok(attrs)
}

/// Checks the attributes `template::build` made from a caller's template
/// for a key of `origin`: under `strict`, an unwrapped secret or private
/// key is sensitive (`CKR_TEMPLATE_INCONSISTENT`), so a wrapped key is never
/// re-imported in the clear (CCS 2010, "re-import under other attributes").
pub fn check_built(attrs: &Attributes, origin: Origin, rules: Rules) -> Result<()> {
    if rules.strict()
        && origin == Origin::Unwrap
        && attrs.contains(CKA_SENSITIVE)
        && !attrs.flag(CKA_SENSITIVE)
    {
        return Err(err(CKR_TEMPLATE_INCONSISTENT));
    }
    Ok(())
}

/// Checks a new key (any origin, copies included) once every attribute is
/// known: under `strict`, no conflicting roles, and wrapping only for keys
/// no caller can know (`CKR_TEMPLATE_INCONSISTENT`).
pub fn check_new(attrs: &Attributes, rules: Rules) -> Result<()> {
    if !rules.strict() || !is_key(attrs) {
        return Ok(());
    }
    check_conflicts(attrs)?;
    if attrs.flag(CKA_WRAP) && !may_wrap(attrs) {
        return Err(err(CKR_TEMPLATE_INCONSISTENT));
    }
    Ok(())
}

/// Under `strict`: may a key made with these attributes hold `CKA_WRAP`?
/// A secret key only if generated on the token and never extractable; a
/// public key only if generated here (its private half is checked when it
/// wraps, [`may_wrap_sensitive`]) or marked trusted by the SO.
fn may_wrap(attrs: &Attributes) -> bool {
    match attrs.ulong(CKA_CLASS) {
        Some(CKO_SECRET_KEY) => attrs.flag(CKA_LOCAL) && !attrs.flag(CKA_EXTRACTABLE),
        Some(CKO_PUBLIC_KEY) => attrs.flag(CKA_LOCAL) || attrs.flag(CKA_TRUSTED),
        _ => false,
    }
}

fn check_conflicts(attrs: &Attributes) -> Result<()> {
    if CONFLICTS
        .iter()
        .any(|&(a, b)| attrs.flag(a) && attrs.flag(b))
    {
        return Err(err(CKR_TEMPLATE_INCONSISTENT));
    }
    Ok(())
}

/// How an existing object is changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// `C_SetAttributeValue`.
    Set,
    /// `C_CopyObject`.
    Copy,
}

/// Checks a change of `current` into `next` (`C_SetAttributeValue`, or the
/// copy `C_CopyObject` makes) after the attribute tables allowed it:
/// usage flags widened where the level forbids it, and under `strict` a
/// private object copied public, are `CKR_ATTRIBUTE_READ_ONLY`; conflicting
/// roles under `strict` are `CKR_TEMPLATE_INCONSISTENT`.
pub fn check_change(
    current: &Attributes,
    next: &Attributes,
    how: ChangeKind,
    rules: Rules,
) -> Result<()> {
    if !is_key(current) {
        return Ok(());
    }
    let widened = |ty: CK_ATTRIBUTE_TYPE| next.flag(ty) && !current.flag(ty);
    let sticky: &[CK_ATTRIBUTE_TYPE] = if rules.strict() {
        USAGE
    } else if is_protected(current) && current.ulong(CKA_CLASS) == Some(CKO_SECRET_KEY) {
        DERIVATION_ORACLE_USAGE
    } else if is_protected(current) {
        KEY_MANAGEMENT_USAGE
    } else {
        &[]
    };
    if sticky.iter().any(|&ty| widened(ty)) {
        return Err(err(CKR_ATTRIBUTE_READ_ONLY));
    }
    // Key-wrap separation: a key kept from decrypting so that it may wrap
    // sensitive keys never gains decryption (`crypto::wrap_key`).
    if rules.wrap_separation && widened(CKA_DECRYPT) {
        return Err(err(CKR_ATTRIBUTE_READ_ONLY));
    }
    if rules.strict() {
        if how == ChangeKind::Copy && current.flag(CKA_PRIVATE) && !next.flag(CKA_PRIVATE) {
            return Err(err(CKR_ATTRIBUTE_READ_ONLY));
        }
        check_conflicts(next)?;
    }
    Ok(())
}

/// The key-length floor of derivation: a key derived from a protected base
/// must keep at least `min(FLOOR_BITS, strength of the base)` bits of
/// strength, counting only the output bits that come from secret key
/// material (`secret_bytes`, see `mechanisms::secret_bytes_in_derived`) and
/// the strength of the new key's type (`new_strength`, e.g. 56 for single
/// DES). Else `CKR_KEY_SIZE_RANGE`: deriving 1-byte keys from a 256-bit key
/// and testing each by brute force through a MAC would read the key out a
/// byte at a time (Clulow 2003, key-length reduction).
pub fn check_derived_strength(
    base_protected: bool,
    base_strength: u32,
    secret_bytes: usize,
    new_strength: u32,
) -> Result<()> {
    if !base_protected {
        return Ok(());
    }
    let secret_bits = u32::try_from(secret_bytes.saturating_mul(8)).unwrap_or(u32::MAX);
    let kept = secret_bits.min(new_strength);
    if kept < FLOOR_BITS.min(base_strength) {
        return Err(err(CKR_KEY_SIZE_RANGE));
    }
    Ok(())
}

/// Does a base key of an encryption-of-data derivation
/// ([`mechanisms::derives_by_encrypting_data`]) tell its caller the
/// derived value by another route? The derived value is `E_K(data)`, the
/// block cipher run forward on data the caller chose. Encryption gives it
/// directly (ECB, CBC with the data as IV, the CTR/OFB/CFB keystream);
/// decryption too (CTR, OFB and CFB decrypt with the same keystream); a
/// CBC-MAC of one block is that block's encryption (`CKM_AES_MAC_GENERAL`);
/// wrapping a key of known value under ECB encrypts it, and unwrapping
/// under CTR then reading the key reveals the keystream.
pub fn encrypt_data_base_reveals(base: &Attributes) -> bool {
    [CKA_ENCRYPT, CKA_DECRYPT, CKA_SIGN, CKA_WRAP, CKA_UNWRAP]
        .into_iter()
        .any(|ty| base.flag(ty))
}

/// Under `strict`, a derivation from a base that computes the derived value
/// for its caller by another route is refused
/// (`CKR_KEY_FUNCTION_NOT_PERMITTED`): an encryption-of-data derivation
/// from a base that also runs the cipher ([`encrypt_data_base_reveals`]),
/// or a PRF-based one from a base that may also sign with the PRF's HMAC
/// or CMAC. The key it would make is one whose value the caller can learn.
/// (Under `default` the key is made and marked as a key that was not always
/// secret.)
pub fn check_revealing_base(rules: Rules, reveals: bool) -> Result<()> {
    if rules.strict() && reveals {
        return Err(err(CKR_KEY_FUNCTION_NOT_PERMITTED));
    }
    Ok(())
}

/// The shortest MAC a key verifies without being allowed to sign (8 bytes,
/// SP 800-107 Rev. 1 §5.3.5's recommended 64 bits).
pub const MIN_VERIFY_ONLY_MAC_LEN: CK_ULONG = 8;

/// A truncated MAC (`_GENERAL` length, `CK_TLS_MAC_PARAMS`' `ulMacLength`)
/// is a prefix of the full one, and `C_Verify` tells whether a guessed
/// prefix is right: with a 1-byte length, 256 guesses find the first byte,
/// and each longer length one more byte, so `C_Verify` computes the whole
/// MAC. A verification shorter than [`MIN_VERIFY_ONLY_MAC_LEN`] is therefore
/// taken only from a key that may sign with the same mechanism (it tells
/// nothing a signature would not); else `CKR_MECHANISM_PARAM_INVALID`.
pub fn check_short_mac_verify(
    mac_len: Option<CK_ULONG>,
    may_sign: impl FnOnce() -> bool,
) -> Result<()> {
    match mac_len {
        Some(n) if n < MIN_VERIFY_ONLY_MAC_LEN && !may_sign() => {
            Err(err(CKR_MECHANISM_PARAM_INVALID))
        }
        _ => Ok(()),
    }
}

/// The floor of MAC keys: a sensitive secret key of less than
/// [`FLOOR_BITS`] (a short HMAC key, a two-key Triple DES key for
/// `CKM_DES3_MAC` / `CKM_DES3_CMAC`) is not used to sign or verify
/// (`CKR_KEY_SIZE_RANGE`), so no MAC oracle is weaker than 112 bits. A key that is not sensitive may
/// be short (RFC 4231's test keys are); its protection is the caller's.
pub fn check_mac_key(sensitive: bool, strength: u32) -> Result<()> {
    if sensitive && strength < FLOOR_BITS {
        return Err(err(CKR_KEY_SIZE_RANGE));
    }
    Ok(())
}

/// The wrapping-key floor: a key is wrapped only under a key at least as
/// strong (SP 800-57 Part 1 §5.6.1.1), and never under single DES; else
/// `CKR_KEY_NOT_WRAPPABLE` (Clulow 2003: wrapping a strong key under a weak
/// one, then breaking the weak one, reads the strong one). Applies to keys
/// the caller cannot read otherwise (`target_protected`).
pub fn check_wrapping_strength(
    target_protected: bool,
    wrapping_strength: u32,
    wrapping_is_single_des: bool,
    target_strength: u32,
) -> Result<()> {
    if target_protected && (wrapping_is_single_des || wrapping_strength < target_strength) {
        return Err(err(CKR_KEY_NOT_WRAPPABLE));
    }
    Ok(())
}

/// Under `strict`: may `wrapping` wrap a key? Only if no caller can know
/// its value (see [`may_wrap`]): a secret key generated here that never was
/// extractable, a public key the SO marked trusted, or a public key
/// generated here whose private half is on the token and never was
/// extractable (`private_halves_unknowable`). Else `CKR_KEY_NOT_WRAPPABLE`.
/// (Checked at each wrap as well as when the key is made: a key made
/// before the level was raised is held to it too.)
pub fn check_strict_wrapping_key(
    rules: Rules,
    wrapping: &Attributes,
    private_halves_unknowable: bool,
) -> Result<()> {
    if !rules.strict() {
        return Ok(());
    }
    let ok = match wrapping.ulong(CKA_CLASS) {
        Some(CKO_SECRET_KEY) => wrapping.flag(CKA_LOCAL) && wrapping.flag(CKA_NEVER_EXTRACTABLE),
        Some(CKO_PUBLIC_KEY) => {
            wrapping.flag(CKA_TRUSTED) || (wrapping.flag(CKA_LOCAL) && private_halves_unknowable)
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(err(CKR_KEY_NOT_WRAPPABLE))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULT: Rules = Rules {
        policy: KeyPolicy::Default,
        wrap_separation: true,
    };
    const STRICT: Rules = Rules {
        policy: KeyPolicy::Strict,
        wrap_separation: true,
    };

    fn secret(flags: &[(CK_ATTRIBUTE_TYPE, bool)]) -> Attributes {
        let mut a = Attributes::new();
        a.set_ulong(CKA_CLASS, CKO_SECRET_KEY);
        a.set_ulong(CKA_KEY_TYPE, CKK_AES);
        for &ty in USAGE {
            a.set_flag(ty, false);
        }
        a.set_flag(CKA_SENSITIVE, true);
        a.set_flag(CKA_EXTRACTABLE, false);
        a.set_flag(CKA_PRIVATE, true);
        for &(ty, v) in flags {
            a.set_flag(ty, v);
        }
        a
    }

    #[test]
    fn key_management_flags_of_protected_keys_never_widen() {
        let cur = secret(&[]);
        for ty in [CKA_DERIVE, CKA_WRAP, CKA_UNWRAP, CKA_DECRYPT] {
            let next = secret(&[(ty, true)]);
            for how in [ChangeKind::Set, ChangeKind::Copy] {
                assert_eq!(
                    check_change(&cur, &next, how, DEFAULT).unwrap_err().rv(),
                    CKR_ATTRIBUTE_READ_ONLY,
                    "{ty:#x}"
                );
            }
        }
        // On a protected secret key, the flags that compute a derivation's
        // output never widen either; verification may widen under default,
        // never under strict.
        for ty in [CKA_SIGN, CKA_ENCRYPT] {
            let next = secret(&[(ty, true)]);
            for how in [ChangeKind::Set, ChangeKind::Copy] {
                assert!(check_change(&cur, &next, how, DEFAULT).is_err(), "{ty:#x}");
            }
        }
        let next = secret(&[(CKA_VERIFY, true)]);
        assert!(check_change(&cur, &next, ChangeKind::Set, DEFAULT).is_ok());
        assert!(check_change(&cur, &next, ChangeKind::Set, STRICT).is_err());
        // A readable key may gain derive under default (its value is known).
        let open = secret(&[(CKA_SENSITIVE, false), (CKA_EXTRACTABLE, true)]);
        let next = secret(&[
            (CKA_SENSITIVE, false),
            (CKA_EXTRACTABLE, true),
            (CKA_DERIVE, true),
        ]);
        assert!(check_change(&open, &next, ChangeKind::Set, DEFAULT).is_ok());
        assert!(check_change(&open, &next, ChangeKind::Set, STRICT).is_err());
        // Switching off is always allowed.
        let on = secret(&[(CKA_WRAP, true)]);
        assert!(check_change(&on, &secret(&[]), ChangeKind::Set, STRICT).is_ok());
        // Decrypt separation follows wrap_separation alone.
        let lax = Rules {
            wrap_separation: false,
            ..DEFAULT
        };
        let open_dec = secret(&[
            (CKA_SENSITIVE, false),
            (CKA_EXTRACTABLE, true),
            (CKA_DECRYPT, true),
        ]);
        assert!(check_change(&open, &open_dec, ChangeKind::Set, DEFAULT).is_err());
        assert!(check_change(&open, &open_dec, ChangeKind::Set, lax).is_ok());
    }

    #[test]
    fn strict_refuses_conflicts_and_private_to_public_copies() {
        for (a, b) in CONFLICTS {
            let k = secret(&[(*a, true), (*b, true), (CKA_LOCAL, true)]);
            assert_eq!(
                check_new(&k, STRICT).unwrap_err().rv(),
                CKR_TEMPLATE_INCONSISTENT
            );
            assert!(check_new(&k, DEFAULT).is_ok());
        }
        let k = secret(&[]);
        let mut public = k.clone();
        public.set_flag(CKA_PRIVATE, false);
        assert!(check_change(&k, &public, ChangeKind::Copy, STRICT).is_err());
        assert!(check_change(&k, &public, ChangeKind::Copy, DEFAULT).is_ok());
    }

    #[test]
    fn strict_wrapping_keys_are_unknowable() {
        let generated = secret(&[(CKA_WRAP, true), (CKA_LOCAL, true)]);
        assert!(check_new(&generated, STRICT).is_ok());
        let imported = secret(&[(CKA_WRAP, true)]);
        assert!(check_new(&imported, STRICT).is_err());
        let leaving = secret(&[(CKA_WRAP, true), (CKA_LOCAL, true), (CKA_EXTRACTABLE, true)]);
        assert!(check_new(&leaving, STRICT).is_err());
        let mut unwrapped = secret(&[(CKA_SENSITIVE, false)]);
        assert!(check_built(&unwrapped, Origin::Unwrap, STRICT).is_err());
        assert!(check_built(&unwrapped, Origin::Create, STRICT).is_ok());
        assert!(check_built(&unwrapped, Origin::Unwrap, DEFAULT).is_ok());
        unwrapped.set_flag(CKA_SENSITIVE, true);
        assert!(check_built(&unwrapped, Origin::Unwrap, STRICT).is_ok());
        // At wrap time: generated and never extractable.
        let mut w = secret(&[(CKA_WRAP, true), (CKA_LOCAL, true)]);
        assert!(check_strict_wrapping_key(STRICT, &w, false).is_err());
        w.set_flag(CKA_NEVER_EXTRACTABLE, true);
        assert!(check_strict_wrapping_key(STRICT, &w, false).is_ok());
        assert!(check_strict_wrapping_key(DEFAULT, &imported, false).is_ok());
        let mut public = secret(&[(CKA_WRAP, true), (CKA_LOCAL, true)]);
        public.set_ulong(CKA_CLASS, CKO_PUBLIC_KEY);
        assert!(check_strict_wrapping_key(STRICT, &public, false).is_err());
        assert!(check_strict_wrapping_key(STRICT, &public, true).is_ok());
        public.set_flag(CKA_LOCAL, false);
        assert!(check_strict_wrapping_key(STRICT, &public, true).is_err());
        public.set_flag(CKA_TRUSTED, true);
        assert!(check_strict_wrapping_key(STRICT, &public, false).is_ok());
    }

    #[test]
    fn floors() {
        // 1 byte of a 256-bit protected base: refused; 14 bytes: kept.
        assert!(check_derived_strength(true, 256, 1, 256).is_err());
        assert!(check_derived_strength(true, 256, 14, 256).is_ok());
        // Single DES (56) from AES-256: refused; from a single-DES base: as
        // strong as the base, kept.
        assert!(check_derived_strength(true, 256, 8, 56).is_err());
        assert!(check_derived_strength(true, 56, 8, 56).is_ok());
        // Known data in front of one secret byte: the bits count, not the length.
        assert!(check_derived_strength(true, 256, 1, 256).is_err());
        // An unprotected base may give anything.
        assert!(check_derived_strength(false, 256, 1, 8).is_ok());
        assert!(check_mac_key(true, 32).is_err());
        assert!(check_mac_key(false, 32).is_ok());
        assert!(check_mac_key(true, 112).is_ok());
        assert!(check_wrapping_strength(true, 128, false, 256).is_err());
        assert!(check_wrapping_strength(true, 256, false, 256).is_ok());
        assert!(check_wrapping_strength(true, 256, true, 56).is_err());
        assert!(check_wrapping_strength(false, 56, true, 256).is_ok());
    }
}
