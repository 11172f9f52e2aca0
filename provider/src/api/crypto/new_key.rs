//! What a key the token makes from other keys takes from them (base spec
//! §4.7 `CKA_DERIVE_TEMPLATE`, §4.9 `CKA_UNWRAP_TEMPLATE`; mechanisms spec
//! 3.0 §2.42 and each derivation mechanism's rules for `CKA_SENSITIVE`,
//! `CKA_EXTRACTABLE`, `CKA_ALWAYS_SENSITIVE`, `CKA_NEVER_EXTRACTABLE`), and
//! the one path by which generated and derived secret keys are built,
//! checked and stored.

use crate::api::key_policy::{self, Rules};
use crate::api::object::Object;
use crate::api::objects::{check_write_access, insert_new, set_key_origin};
use crate::api::session::Session;
use crate::api::template::{self, Origin};
use crate::attributes::{Attr, Attributes, decode_template};
use crate::error::{Result, err};
use crate::mechanisms::keys;
use cryptoki_sys::*;

/// Builds, checks and stores a new secret key holding `value` (key
/// generation and derivation share this); returns its handle.
pub(super) fn insert_secret(
    session: &Session,
    template: &[Attr],
    implied_key_type: Option<CK_KEY_TYPE>,
    origin: Origin,
    mech: CK_MECHANISM_TYPE,
    value: &[u8],
    base: Option<BaseProtection>,
) -> Result<CK_OBJECT_HANDLE> {
    let token = &session.token;
    // HOTP keys are of their own class (base spec 3.0 §4.12); only their
    // generation implies that key type.
    let class = match implied_key_type {
        Some(CKK_HOTP) => CKO_OTP_KEY,
        _ => CKO_SECRET_KEY,
    };
    let (_, key_type, tables) = template::tables_for_new(template, Some(class), implied_key_type)?;
    let mut attrs = key_policy::build(
        template,
        tables,
        origin,
        token.logged_in() == Some(CKU_SO),
        Rules::of(token.config()),
    )?;
    check_write_access(session, attrs.flag(CKA_TOKEN), attrs.flag(CKA_PRIVATE))?;
    attrs.set_ulong(CKA_CLASS, class);
    let key_type = key_type.ok_or(err(CKR_TEMPLATE_INCOMPLETE))?;
    attrs.set_ulong(CKA_KEY_TYPE, key_type);
    attrs.set_bytes(CKA_VALUE, value);
    set_key_origin(&mut attrs, origin, Some(mech));
    if let Some(base) = base {
        base.carry_to(&mut attrs);
    }
    keys::complete_import(class, Some(key_type), &mut attrs)?;
    insert_new(session, attrs, tables)
}

/// What a derived key inherits from its base keys.
#[derive(Clone, Copy, Debug)]
pub(super) struct BaseProtection {
    /// The base keys' `CKA_SENSITIVE` (any of them).
    pub(super) sensitive: bool,
    /// The base keys' `CKA_EXTRACTABLE` (all of them).
    pub(super) extractable: bool,
    /// The base keys' `CKA_ALWAYS_SENSITIVE` (all of them).
    pub(super) always_sensitive: bool,
    /// The base keys' `CKA_NEVER_EXTRACTABLE` (all of them).
    pub(super) never_extractable: bool,
}

impl BaseProtection {
    pub(super) fn of(key: &Object) -> BaseProtection {
        BaseProtection {
            sensitive: key.flag(CKA_SENSITIVE),
            extractable: key.flag(CKA_EXTRACTABLE),
            always_sensitive: key.flag(CKA_ALWAYS_SENSITIVE),
            never_extractable: key.flag(CKA_NEVER_EXTRACTABLE),
        }
    }

    /// True if the bases' value may not be read ([`key_policy::is_protected`]).
    pub(super) fn protected(self) -> bool {
        self.sensitive || !self.extractable
    }

    /// Both bases together (`CKM_CONCATENATE_BASE_AND_KEY`).
    pub(super) fn and(self, other: BaseProtection) -> BaseProtection {
        BaseProtection {
            sensitive: self.sensitive || other.sensitive,
            extractable: self.extractable && other.extractable,
            always_sensitive: self.always_sensitive && other.always_sensitive,
            never_extractable: self.never_extractable && other.never_extractable,
        }
    }

    /// For a derived value the caller may know by another route: the new key
    /// is never `CKA_ALWAYS_SENSITIVE` nor `CKA_NEVER_EXTRACTABLE`, as for a
    /// key imported in the clear.
    pub(super) fn value_may_be_known(self) -> BaseProtection {
        BaseProtection {
            always_sensitive: false,
            never_extractable: false,
            ..self
        }
    }

    /// For a value that is a simple function of the bases' values (§2.42:
    /// "if either of the two original keys has its CKA_SENSITIVE attribute
    /// set to CK_TRUE, so does the derived key ... if either has
    /// CKA_EXTRACTABLE set to CK_FALSE, so does the derived key"): the
    /// template cannot make the derived key less protected than its bases.
    pub(super) fn impose_on(self, template: &mut Vec<Attr>) {
        if self.sensitive {
            template.retain(|a| a.ty != CKA_SENSITIVE);
            template.push(Attr::bool(CKA_SENSITIVE, true));
        }
        if !self.extractable {
            template.retain(|a| a.ty != CKA_EXTRACTABLE);
            template.push(Attr::bool(CKA_EXTRACTABLE, false));
        }
    }

    /// The rule every derivation mechanism states (mechanisms spec 3.0,
    /// e.g. §2.3.11 ECDH, §2.43 HKDF): the derived key is always sensitive
    /// only if the base was and the derived key is sensitive, and never
    /// extractable only if the base never was and the derived key is not.
    pub(super) fn carry_to(self, attrs: &mut Attributes) {
        let sensitive = attrs.flag(CKA_SENSITIVE);
        let extractable = attrs.flag(CKA_EXTRACTABLE);
        attrs.set_flag(CKA_ALWAYS_SENSITIVE, self.always_sensitive && sensitive);
        attrs.set_flag(
            CKA_NEVER_EXTRACTABLE,
            self.never_extractable && !extractable,
        );
    }
}

/// The caller's template for a key made from `key` (§4.9
/// `CKA_UNWRAP_TEMPLATE` for unwrapping, §4.7 `CKA_DERIVE_TEMPLATE` for
/// derivation, `ty` names which): the key's template comes first and the
/// caller's is applied after it "as if the object has already been
/// created", so an attribute both give must agree
/// (`CKR_TEMPLATE_INCONSISTENT`). An unreadable stored template refuses.
pub(super) fn with_key_template(
    key: &Object,
    ty: CK_ATTRIBUTE_TYPE,
    user: &[Attr],
) -> Result<Vec<Attr>> {
    let Some(encoded) = key.with_attrs(|a| a.bytes(ty).map(<[u8]>::to_vec)) else {
        return Ok(user.to_vec());
    };
    let forced = decode_template(&encoded).map_err(|_| err(CKR_TEMPLATE_INCONSISTENT))?;
    let mut out = user.to_vec();
    for (t, v) in forced.iter() {
        let v = v.as_plain().ok_or(err(CKR_TEMPLATE_INCONSISTENT))?;
        match template::template_value(user, *t)? {
            Some(given) if given != v => return Err(err(CKR_TEMPLATE_INCONSISTENT)),
            Some(_) => {}
            None => out.push(Attr::new(*t, v)),
        }
    }
    Ok(out)
}
