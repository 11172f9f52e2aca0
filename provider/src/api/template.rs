//! Applies the policy tables (`api::policy`) to callers' templates: building
//! a new object, changing one (`C_SetAttributeValue`, `C_CopyObject`), and
//! deciding what `C_GetAttributeValue` may reveal (base spec §5.7, §4.2).

use super::policy::{self, Kind, Rule};
use crate::attributes::{Attr, Attributes, ULONG_LEN, Value, decode_bool, decode_ulong};
use crate::error::{Result, err};
use cryptoki_sys::*;

/// How an object comes into being.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// `C_CreateObject`.
    Create,
    /// `C_GenerateKey` / `C_GenerateKeyPair`.
    Generate,
    /// `C_UnwrapKey`.
    Unwrap,
    /// `C_DeriveKey`.
    Derive,
}

/// How an existing object is changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// `C_SetAttributeValue`.
    Set,
    /// The template of `C_CopyObject`.
    Copy,
}

/// The rule tables of one object.
pub type Tables = &'static [&'static [Rule]];

/// Checks a value's shape against its rule.
fn check_shape(rule: &Rule, v: &[u8]) -> Result<()> {
    let ok = match rule.kind {
        Kind::Bool => decode_bool(v).is_ok(),
        Kind::Ulong => decode_ulong(v).is_ok(),
        Kind::Bytes => true,
        Kind::Date => v.is_empty() || (v.len() == 8 && v.iter().all(u8::is_ascii_digit)),
        Kind::MechanismList => v.len().is_multiple_of(ULONG_LEN),
        Kind::Template => crate::attributes::decode_template(v).is_ok(),
    };
    if ok {
        Ok(())
    } else {
        Err(err(CKR_ATTRIBUTE_VALUE_INVALID))
    }
}

/// The single value a template gives for `ty` (`CKR_TEMPLATE_INCONSISTENT`
/// if it gives two different ones).
pub fn template_value(template: &[Attr], ty: CK_ATTRIBUTE_TYPE) -> Result<Option<&[u8]>> {
    let mut found: Option<&[u8]> = None;
    for a in template.iter().filter(|a| a.ty == ty) {
        match found {
            Some(prev) if prev != a.value.as_slice() => return Err(err(CKR_TEMPLATE_INCONSISTENT)),
            _ => found = Some(&a.value),
        }
    }
    Ok(found)
}

/// A `CK_ULONG` from the template, with `implied` (from the mechanism) as
/// fallback; the two must agree.
fn class_like(
    template: &[Attr],
    ty: CK_ATTRIBUTE_TYPE,
    implied: Option<CK_ULONG>,
) -> Result<Option<CK_ULONG>> {
    let given = template_value(template, ty)?
        .map(decode_ulong)
        .transpose()?;
    match (given, implied) {
        (Some(g), Some(i)) if g != i => Err(err(CKR_TEMPLATE_INCONSISTENT)),
        (g, i) => Ok(g.or(i)),
    }
}

/// Identifies the tables for a new object from its template (and what the
/// mechanism implies for class and key type).
pub fn tables_for_new(
    template: &[Attr],
    implied_class: Option<CK_OBJECT_CLASS>,
    implied_key_type: Option<CK_KEY_TYPE>,
) -> Result<(CK_OBJECT_CLASS, Option<CK_KEY_TYPE>, Tables)> {
    let class =
        class_like(template, CKA_CLASS, implied_class)?.ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    // Keys and domain parameters (§4.7, §4.13) carry a CKA_KEY_TYPE.
    let is_key = matches!(
        class,
        CKO_PUBLIC_KEY | CKO_PRIVATE_KEY | CKO_SECRET_KEY | CKO_OTP_KEY | CKO_DOMAIN_PARAMETERS
    );
    let key_type = if is_key {
        Some(
            class_like(template, CKA_KEY_TYPE, implied_key_type)?
                .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?,
        )
    } else {
        None
    };
    let cert_type = if class == CKO_CERTIFICATE {
        Some(
            class_like(template, CKA_CERTIFICATE_TYPE, None)?
                .ok_or(err(CKR_TEMPLATE_INCOMPLETE))?,
        )
    } else {
        None
    };
    let tables = policy::tables(class, key_type, cert_type).ok_or_else(|| {
        if implied_class.is_some() {
            err(CKR_TEMPLATE_INCONSISTENT)
        } else {
            err(CKR_ATTRIBUTE_VALUE_INVALID)
        }
    })?;
    Ok((class, key_type, tables))
}

/// Builds the attributes of a new object: every template attribute checked
/// against its rule, required ones present, defaults filled in — those of
/// `defaults` (the key-management policy's, `api::key_policy::defaults`)
/// before the tables' own. Values the token computes (key material,
/// `CKA_LOCAL`, ...) are added by the caller.
pub fn build(
    template: &[Attr],
    tables: Tables,
    origin: Origin,
    is_so: bool,
    defaults: &[(CK_ATTRIBUTE_TYPE, bool)],
) -> Result<Attributes> {
    let mut attrs = Attributes::new();
    for a in template {
        let rule = policy::find(tables, a.ty).ok_or(err(CKR_ATTRIBUTE_TYPE_INVALID))?;
        check_shape(rule, &a.value)?;
        let forbidden = match origin {
            Origin::Create => policy::NOT_ON_CREATE,
            Origin::Generate | Origin::Derive => policy::NOT_ON_GENERATE,
            Origin::Unwrap => policy::NOT_ON_UNWRAP,
        };
        if rule.flags & forbidden != 0 {
            return Err(if rule.flags & policy::COMPUTED == policy::COMPUTED {
                err(CKR_ATTRIBUTE_READ_ONLY)
            } else {
                err(CKR_TEMPLATE_INCONSISTENT)
            });
        }
        if rule.flags & policy::SO_SETS_TRUE != 0 && decode_bool(&a.value)? && !is_so {
            return Err(err(CKR_ATTRIBUTE_READ_ONLY));
        }
        if let Some(prev) = attrs.bytes(a.ty)
            && prev != a.value.as_slice()
        {
            return Err(err(CKR_TEMPLATE_INCONSISTENT));
        }
        attrs.set(a.ty, Value::plain(&a.value));
    }
    let required = match origin {
        Origin::Create => policy::REQUIRED_ON_CREATE,
        Origin::Generate => policy::REQUIRED_ON_GENERATE,
        Origin::Unwrap | Origin::Derive => 0,
    };
    for &(ty, value) in defaults {
        if !attrs.contains(ty) && policy::find(tables, ty).is_some() {
            attrs.set_flag(ty, value);
        }
    }
    // Later tables override earlier ones, so their defaults are applied first.
    for table in tables.iter().rev() {
        for rule in table.iter() {
            if attrs.contains(rule.ty) {
                continue;
            }
            if rule.flags & required != 0 {
                return Err(err(CKR_TEMPLATE_INCOMPLETE));
            }
            match rule.default {
                policy::Fallback::None => {}
                policy::Fallback::Bool(b) => attrs.set_flag(rule.ty, b),
                policy::Fallback::Ulong(u) => attrs.set_ulong(rule.ty, u),
                policy::Fallback::Empty => attrs.set_bytes(rule.ty, &[]),
            }
        }
    }
    Ok(attrs)
}

/// Applies a `C_SetAttributeValue` or `C_CopyObject` template to a copy of
/// `current` and returns the result; `current` is untouched on error. The
/// key-management policy's own limits on changes are checked on the result
/// by `api::key_policy::check_change`.
pub fn change(
    current: &Attributes,
    template: &[Attr],
    tables: Tables,
    how: Change,
    is_so: bool,
) -> Result<Attributes> {
    let mut next = current.clone();
    for a in template {
        let rule = policy::find(tables, a.ty).ok_or(err(CKR_ATTRIBUTE_TYPE_INVALID))?;
        check_shape(rule, &a.value)?;
        let may = match how {
            Change::Set => policy::MODIFIABLE,
            Change::Copy => policy::MODIFIABLE | policy::COPY_MAY_CHANGE,
        };
        if rule.flags & may == 0 {
            // Setting an attribute to the value it already has is harmless;
            // consumers such as pkcs11-tool re-send CKA_CLASS in copies.
            if how == Change::Copy && current.bytes(a.ty) == Some(a.value.as_slice()) {
                continue;
            }
            return Err(err(CKR_ATTRIBUTE_READ_ONLY));
        }
        if rule.kind == Kind::Bool {
            let new = decode_bool(&a.value)?;
            let old = current.flag(a.ty);
            let sticky_true = rule.flags & policy::STICKY_TRUE != 0 && old && !new;
            let sticky_false =
                rule.flags & policy::STICKY_FALSE != 0 && current.contains(a.ty) && !old && new;
            if sticky_true || sticky_false {
                return Err(err(CKR_ATTRIBUTE_READ_ONLY));
            }
            if rule.flags & policy::SO_SETS_TRUE != 0 && new && !old && !is_so {
                return Err(err(CKR_ATTRIBUTE_READ_ONLY));
            }
        }
        next.set(a.ty, Value::plain(&a.value));
    }
    Ok(next)
}

/// What `C_GetAttributeValue` may say about one attribute (base spec §5.7,
/// the numbered rules of C_GetAttributeValue).
#[derive(Debug, PartialEq, Eq)]
pub enum Reveal<'a> {
    /// Rule 1: sensitive or unextractable → `CKR_ATTRIBUTE_SENSITIVE`.
    Sensitive,
    /// Rule 2: not an attribute of this object → `CKR_ATTRIBUTE_TYPE_INVALID`.
    Invalid,
    /// Rules 3–5: the value (may still be sealed).
    Value(&'a Value),
}

/// Decides what may be revealed of `ty`.
pub fn reveal<'a>(attrs: &'a Attributes, tables: Tables, ty: CK_ATTRIBUTE_TYPE) -> Reveal<'a> {
    let Some(rule) = policy::find(tables, ty) else {
        return Reveal::Invalid;
    };
    if rule.flags & policy::SENSITIVE != 0
        && (attrs.flag(CKA_SENSITIVE) || !attrs.flag(CKA_EXTRACTABLE))
    {
        return Reveal::Sensitive;
    }
    match attrs.get(ty) {
        Some(v) => Reveal::Value(v),
        None => Reveal::Invalid,
    }
}

/// True if `ty` of these tables is sealed at rest in private objects.
pub fn is_sealed_attribute(tables: Tables, ty: CK_ATTRIBUTE_TYPE) -> bool {
    policy::find(tables, ty).is_some_and(|r| r.flags & policy::SENSITIVE != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ed_private_template() -> Vec<Attr> {
        vec![
            Attr::ulong(CKA_CLASS, CKO_PRIVATE_KEY),
            Attr::ulong(CKA_KEY_TYPE, CKK_EC_EDWARDS),
            Attr::new(CKA_EC_PARAMS, &[0x06, 0x03, 0x2b, 0x65, 0x70]),
            Attr::new(CKA_VALUE, &[7; 32]),
            Attr::bool(CKA_TOKEN, true),
        ]
    }

    #[test]
    fn create_fills_defaults_and_checks_required() {
        let t = ed_private_template();
        let (class, kt, tables) = tables_for_new(&t, None, None).unwrap();
        assert_eq!((class, kt), (CKO_PRIVATE_KEY, Some(CKK_EC_EDWARDS)));
        let a = build(&t, tables, Origin::Create, false, &[]).unwrap();
        assert!(
            a.flag(CKA_SENSITIVE),
            "private keys are sensitive by default"
        );
        assert!(!a.flag(CKA_EXTRACTABLE));
        assert!(a.flag(CKA_MODIFIABLE));
        assert_eq!(a.bytes(CKA_LABEL), Some(&b""[..]));
        let missing: Vec<_> = t.iter().filter(|x| x.ty != CKA_VALUE).cloned().collect();
        assert_eq!(
            build(&missing, tables, Origin::Create, false, &[])
                .unwrap_err()
                .rv(),
            CKR_TEMPLATE_INCOMPLETE
        );
    }

    #[test]
    fn create_rejects_bad_templates() {
        let base = ed_private_template();
        let (_, _, tables) = tables_for_new(&base, None, None).unwrap();
        let with = |a: Attr| {
            let mut t = base.clone();
            t.push(a);
            build(&t, tables, Origin::Create, false, &[])
                .unwrap_err()
                .rv()
        };
        assert_eq!(with(Attr::bool(CKA_LOCAL, true)), CKR_ATTRIBUTE_READ_ONLY);
        assert_eq!(
            with(Attr::new(CKA_MODULUS, &[1])),
            CKR_ATTRIBUTE_TYPE_INVALID
        );
        assert_eq!(
            with(Attr::new(CKA_SIGN, &[1, 1])),
            CKR_ATTRIBUTE_VALUE_INVALID
        );
        assert_eq!(
            with(Attr::bool(CKA_TOKEN, false)),
            CKR_TEMPLATE_INCONSISTENT
        );
        assert_eq!(
            with(Attr::new(0x8000_0001, &[1])),
            CKR_ATTRIBUTE_TYPE_INVALID
        );
        assert_eq!(
            with(Attr::new(CKA_START_DATE, b"2024")),
            CKR_ATTRIBUTE_VALUE_INVALID
        );
    }

    #[test]
    fn generate_checks_implied_class_and_forbidden_values() {
        let t = vec![Attr::ulong(CKA_CLASS, CKO_SECRET_KEY)];
        assert_eq!(
            tables_for_new(&t, Some(CKO_PUBLIC_KEY), Some(CKK_EC))
                .unwrap_err()
                .rv(),
            CKR_TEMPLATE_INCONSISTENT
        );
        let t = vec![Attr::new(CKA_EC_POINT, &[4, 1, 2])];
        let (_, _, tables) =
            tables_for_new(&t, Some(CKO_PUBLIC_KEY), Some(CKK_EC_EDWARDS)).unwrap();
        assert_eq!(
            build(&t, tables, Origin::Generate, false, &[])
                .unwrap_err()
                .rv(),
            CKR_TEMPLATE_INCONSISTENT
        );
        assert_eq!(
            build(&[], tables, Origin::Generate, false, &[])
                .unwrap_err()
                .rv(),
            CKR_TEMPLATE_INCOMPLETE
        );
    }

    #[test]
    fn set_and_copy_follow_the_footnotes() {
        let t = ed_private_template();
        let (_, _, tables) = tables_for_new(&t, None, None).unwrap();
        let a = build(&t, tables, Origin::Create, false, &[]).unwrap();
        // Modifiable.
        let b = change(
            &a,
            &[Attr::new(CKA_LABEL, b"x")],
            tables,
            Change::Set,
            false,
        )
        .unwrap();
        assert_eq!(b.bytes(CKA_LABEL), Some(&b"x"[..]));
        // Sensitive is sticky once true; extractable once false; the value
        // is not modifiable at all; CKA_TOKEN changes only through copy.
        for attr in [
            Attr::bool(CKA_SENSITIVE, false),
            Attr::bool(CKA_EXTRACTABLE, true),
            Attr::new(CKA_VALUE, &[1; 32]),
            Attr::bool(CKA_TOKEN, false),
        ] {
            let ty = attr.ty;
            let e = change(&a, &[attr], tables, Change::Set, false);
            assert_eq!(e.unwrap_err().rv(), CKR_ATTRIBUTE_READ_ONLY, "{ty:#x}");
        }
        let c = change(
            &a,
            &[Attr::bool(CKA_TOKEN, false)],
            tables,
            Change::Copy,
            false,
        )
        .unwrap();
        assert!(!c.flag(CKA_TOKEN));
        // Wrap-with-trusted sticks once true.
        let w = change(
            &a,
            &[Attr::bool(CKA_WRAP_WITH_TRUSTED, true)],
            tables,
            Change::Set,
            false,
        )
        .unwrap();
        let e = change(
            &w,
            &[Attr::bool(CKA_WRAP_WITH_TRUSTED, false)],
            tables,
            Change::Set,
            false,
        );
        assert_eq!(e.unwrap_err().rv(), CKR_ATTRIBUTE_READ_ONLY);
        // Usage flags change both ways as far as the tables go (the
        // key-management policy limits widening: api::key_policy).
        let off = change(
            &a,
            &[Attr::bool(CKA_DECRYPT, false)],
            tables,
            Change::Set,
            false,
        )
        .unwrap();
        for how in [Change::Set, Change::Copy] {
            assert!(change(&off, &[Attr::bool(CKA_DECRYPT, true)], tables, how, false).is_ok());
        }
        // Only the SO marks a public key trusted.
        let pt = vec![
            Attr::ulong(CKA_CLASS, CKO_PUBLIC_KEY),
            Attr::ulong(CKA_KEY_TYPE, CKK_EC_EDWARDS),
            Attr::new(CKA_EC_PARAMS, &[0x06, 0x03, 0x2b, 0x65, 0x70]),
            Attr::new(CKA_EC_POINT, &[1; 32]),
        ];
        let (_, _, ptables) = tables_for_new(&pt, None, None).unwrap();
        let p = build(&pt, ptables, Origin::Create, false, &[]).unwrap();
        let e = change(
            &p,
            &[Attr::bool(CKA_TRUSTED, true)],
            ptables,
            Change::Set,
            false,
        );
        assert_eq!(e.unwrap_err().rv(), CKR_ATTRIBUTE_READ_ONLY);
        assert!(
            change(
                &p,
                &[Attr::bool(CKA_TRUSTED, true)],
                ptables,
                Change::Set,
                true
            )
            .is_ok()
        );
    }

    #[test]
    fn reveal_hides_sensitive_values() {
        let t = ed_private_template();
        let (_, _, tables) = tables_for_new(&t, None, None).unwrap();
        let mut a = build(&t, tables, Origin::Create, false, &[]).unwrap();
        assert_eq!(reveal(&a, tables, CKA_VALUE), Reveal::Sensitive);
        assert_eq!(reveal(&a, tables, CKA_MODULUS), Reveal::Invalid);
        assert!(matches!(reveal(&a, tables, CKA_LABEL), Reveal::Value(_)));
        a.set_flag(CKA_SENSITIVE, false);
        assert_eq!(
            reveal(&a, tables, CKA_VALUE),
            Reveal::Sensitive,
            "still unextractable"
        );
        a.set_flag(CKA_EXTRACTABLE, true);
        assert!(matches!(reveal(&a, tables, CKA_VALUE), Reveal::Value(_)));
        assert!(is_sealed_attribute(tables, CKA_VALUE));
        assert!(!is_sealed_attribute(tables, CKA_EC_PARAMS));
    }
}
