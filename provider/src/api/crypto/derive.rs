//! Key derivation (base spec §5.15 `C_DeriveKey`; mechanisms spec 3.0
//! §2.42 SP 800-108 with additional keys, §2.43 HKDF with
//! `CKM_HKDF_DATA`, and the other `C_DeriveKey` mechanisms of
//! `mechanisms::secret`, the IKE derivations): the base and any second
//! key a parameter names,
//! the derived key's length and strength floor (Clulow 2003), and what it
//! inherits from its bases.

use super::key_use::{self, single_call_key};
use super::new_key::{BaseProtection, insert_secret, with_key_template};
use crate::api::key_policy::{self, Rules};
use crate::api::object::Object;
use crate::api::session::Session;
use crate::api::template::{self, Origin};
use crate::attributes::Attr;
use crate::error::{Result, err};
use crate::mechanisms::keys::KeyMaterial;
use crate::mechanisms::{self, Mechanism, strength};
use cryptoki_sys::*;
use std::sync::Arc;
use zeroize::Zeroizing;

/// The attributes of a public key that `CKM_PUB_KEY_FROM_PRIV_KEY` computes
/// from the private key; a template may not give them.
const PUBLIC_MATERIAL: [CK_ATTRIBUTE_TYPE; 10] = [
    CKA_MODULUS,
    CKA_PUBLIC_EXPONENT,
    CKA_EC_POINT,
    CKA_EC_PARAMS,
    CKA_PRIME,
    CKA_SUBPRIME,
    CKA_BASE,
    CKA_VALUE,
    CKA_PARAMETER_SET,
    CKA_PUBLIC_KEY_INFO,
];

/// `C_DeriveKey` with `CKM_PUB_KEY_FROM_PRIV_KEY` (PKCS#11 3.2): the public
/// key of the private key `base`, made as `C_CreateObject` makes a public
/// key from the template and the public values computed from the private
/// key (docs/SECURITY.md, "Public key from a private key"). The base must
/// be a private key this session can see and whose
/// `CKA_ALLOWED_MECHANISMS` (if any) lists the mechanism; `CKA_DERIVE` is
/// not needed (kryoptic's rule): the result holds only what the private
/// key object already shows (`CKA_EC_POINT`, `CKA_MODULUS`,
/// `CKA_PUBLIC_KEY_INFO`, …). The template may set the public key's own
/// attributes (`CKA_TOKEN`, `CKA_LABEL`, `CKA_ID`, `CKA_VERIFY`, …) but
/// not its class (other than `CKO_PUBLIC_KEY`), key type (other than the
/// base's) or key values: `CKR_TEMPLATE_INCONSISTENT`.
fn public_from_private(
    session: &Session,
    mech: &Mechanism<'_>,
    base: CK_OBJECT_HANDLE,
    template: &[Attr],
) -> Result<CK_OBJECT_HANDLE> {
    if mech.param != mechanisms::Param::None {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    let key = session.token.key(base)?;
    if key.class != CKO_PRIVATE_KEY {
        return Err(err(CKR_KEY_TYPE_INCONSISTENT));
    }
    if !key.allows_mechanism(mech.ty) {
        return Err(err(CKR_MECHANISM_INVALID));
    }
    let key_type = key.key_type.ok_or(err(CKR_KEY_TYPE_INCONSISTENT))?;
    for (ty, want) in [(CKA_CLASS, CKO_PUBLIC_KEY), (CKA_KEY_TYPE, key_type)] {
        if let Some(v) = template::template_value(template, ty)?
            && crate::attributes::decode_ulong(v)? != want
        {
            return Err(err(CKR_TEMPLATE_INCONSISTENT));
        }
    }
    if template.iter().any(|a| PUBLIC_MATERIAL.contains(&a.ty)) {
        return Err(err(CKR_TEMPLATE_INCONSISTENT));
    }
    let material = super::key_use::material_of(&session.token, &key)?;
    let public = mechanisms::keys::public_half(&material)?;
    drop(material);
    let mut full: Vec<Attr> = template
        .iter()
        .filter(|a| a.ty != CKA_CLASS && a.ty != CKA_KEY_TYPE)
        .cloned()
        .collect();
    full.push(Attr::ulong(CKA_CLASS, CKO_PUBLIC_KEY));
    full.push(Attr::ulong(CKA_KEY_TYPE, key_type));
    // The curve, as the private key names it (a public attribute).
    let copied = [CKA_EC_PARAMS]
        .into_iter()
        .chain((!template.iter().any(|a| a.ty == CKA_ID)).then_some(CKA_ID));
    for ty in copied {
        if let Some(v) = key.with_attrs(|a| a.bytes(ty).map(<[u8]>::to_vec)) {
            full.push(Attr::new(ty, &v));
        }
    }
    drop(key);
    full.extend(
        public
            .iter()
            .filter_map(|(ty, v)| v.as_plain().map(|b| Attr::new(*ty, b))),
    );
    crate::api::objects::create(session, &full)
}

/// `C_DeriveKey`: a secret key from a base key (ECDH).
pub fn derive_key(
    session: &Session,
    mech: &Mechanism<'_>,
    base: CK_OBJECT_HANDLE,
    template: &[Attr],
) -> Result<CK_OBJECT_HANDLE> {
    mechanisms::require(mech, CKF_DERIVE)?;
    if mech.ty == CKM_PUB_KEY_FROM_PRIV_KEY {
        return public_from_private(session, mech, base, template);
    }
    let material = single_call_key(session, base, mech, CKA_DERIVE)?;
    let base_key = session.token.key(base)?;
    let mut protection = BaseProtection::of(&base_key);
    let rules = Rules::of(session.token.config());
    if mechanisms::derives_by_encrypting_data(mech.ty) {
        let reveals = base_key.with_attrs(key_policy::encrypt_data_base_reveals)
            || key_use::may_derive_a_copy(&base_key);
        key_policy::check_revealing_base(rules, reveals)?;
        if reveals {
            protection = protection.value_may_be_known();
        }
    }
    // A PRF keyed by the base over data the caller chose: a signature with
    // that HMAC or CMAC under the base computes the output (weighed below,
    // once the second keys are known).
    let signs_output =
        protection.always_sensitive && key_use::signs_derived_output(&base_key, &material, mech);
    let mut template = with_key_template(&base_key, CKA_DERIVE_TEMPLATE, template)?;
    drop(base_key);
    // The second key a parameter names (the HKDF salt key, the key of
    // CKM_CONCATENATE_BASE_AND_KEY) must allow derivation and this
    // mechanism, as the base key must.
    // Bytes of the second key that are secret: they count towards the
    // derived key's strength like the base's.
    let mut other_secret_len = 0;
    // The IKE mechanisms' second keys (hNewKey, hKeygxy, hPrevKey,
    // hSeedKey), in the order their parameters give them.
    let mut seconds = Vec::new();
    // A second key no caller knows: the PRF output then needs its value too.
    let mut unknown_second = false;
    let other = match mech.param {
        mechanisms::Param::Hkdf(mechanisms::kdf::hkdf::Params {
            salt: mechanisms::kdf::hkdf::Salt::Key(handle),
            ..
        }) => Some(kdf_key_value(&*single_call_key(
            session, handle, mech, CKA_DERIVE,
        )?)?),
        mechanisms::Param::Handle(handle) => {
            let (value, second) = second_key(session, handle, mech)?;
            if second.protected() {
                other_secret_len = value.len();
            }
            protection = protection.and(second);
            Some(value)
        }
        mechanisms::Param::Ike(p) => {
            for handle in p.second_keys() {
                let (value, second) = second_key(session, handle, mech)?;
                if second.protected() {
                    other_secret_len += value.len();
                }
                unknown_second |= second.protected() && second.always_sensitive;
                protection = protection.and(second);
                seconds.push(value);
            }
            None
        }
        _ => None,
    };
    let reveals = signs_output && !unknown_second;
    key_policy::check_revealing_base(rules, reveals)?;
    if reveals {
        protection = protection.value_may_be_known();
    }
    let ike = mechanisms::is_ike(mech.ty);
    // Mechanisms spec 3.0, "IKE": the derived keys are made from secrets
    // by a PRF; like the simple derivations, the result is never less
    // protected than any of its bases (the template is overruled). The TLS
    // KDFs run under a master secret (or a key below one): their output
    // keeps the base's protection too (docs/SECURITY.md "TLS 1.2").
    if mechanisms::derives_by_simple_function(mech.ty)
        || ike
        || matches!(mech.ty, CKM_TLS_KDF | CKM_TLS12_KDF)
    {
        protection.impose_on(&mut template);
    }
    let template = &template;
    let given = template::template_value(template, CKA_KEY_TYPE)?
        .map(crate::attributes::decode_ulong)
        .transpose()?;
    let key_type = given.unwrap_or(CKK_GENERIC_SECRET);
    let len = template::template_value(template, CKA_VALUE_LEN)?
        .map(crate::attributes::decode_ulong)
        .transpose()?;
    let len = match (key_type, len) {
        (_, Some(l)) => Some(usize::try_from(l).map_err(|_| err(CKR_ATTRIBUTE_VALUE_INVALID))?),
        (_, None) => mechanisms::default_derived_len(key_type),
    };
    // The length drives the KDF's output buffer and loop: bounded first.
    if let Some(l) = len {
        mechanisms::check_secret_len(key_type, l)?;
    }
    let mut value = if ike {
        let seconds: Vec<&[u8]> = seconds.iter().map(|v| v.as_slice()).collect();
        mechanisms::derive_ike(mech, &material, len, &seconds)?
    } else {
        mechanisms::derive(mech, &material, len, other.as_ref().map(|v| v.as_slice()))?
    };
    // The strength the floor keeps: the base's, and for the IKE
    // mechanisms also that of the protected second keys' bytes (a
    // protected g^ir named by hKeygxy or hSeedKey is as much a base).
    let base_strength = if ike {
        strength::strength(&material).saturating_add(strength::secret_strength(
            CKK_GENERIC_SECRET,
            other_secret_len,
        ))
    } else {
        strength::strength(&material)
    };
    if mech.ty != CKM_HKDF_DATA {
        // Key-length reduction (Clulow 2003): the new key keeps at least
        // the floor of its base's strength. (HKDF_DATA makes a data object,
        // not a key: a PRF output that reveals nothing of its base.)
        key_policy::check_derived_strength(
            protection.protected(),
            base_strength,
            mechanisms::secret_bytes_in_derived(mech, &material, other_secret_len, value.len()),
            strength::secret_strength(key_type, value.len()),
        )?;
    }
    mechanisms::shape_derived_value(key_type, &mut value);
    let mut template: Vec<Attr> = template
        .iter()
        .filter(|a| a.ty != CKA_VALUE_LEN)
        .cloned()
        .collect();
    if mech.ty == CKM_HKDF_DATA {
        // Mechanisms spec 3.0 §2.43.3: the output is a data object.
        if template
            .iter()
            .any(|a| a.ty == CKA_VALUE || a.ty == CKA_KEY_TYPE)
        {
            return Err(err(CKR_TEMPLATE_INCONSISTENT));
        }
        if !template.iter().any(|a| a.ty == CKA_CLASS) {
            template.push(Attr::ulong(CKA_CLASS, CKO_DATA));
        }
        if template::template_value(&template, CKA_CLASS)?
            .map(crate::attributes::decode_ulong)
            .transpose()?
            != Some(CKO_DATA)
        {
            return Err(err(CKR_TEMPLATE_INCONSISTENT));
        }
        template.push(Attr::new(CKA_VALUE, &value));
        return crate::api::objects::create(session, &template);
    }
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

/// SP 800-108 derivation (mechanisms spec 3.0 §2.42 "SP 800-108 Key
/// Derivation"): the key of `template` and one key for each of
/// `additional` (the `CK_DERIVED_KEY` templates), from consecutive,
/// disjoint segments of one KDF output ("Deriving Additional Keys"). Each
/// key follows the protection rules of the primary key ("Key Derivation
/// Attribute Rules"). All or nothing: if any key cannot be made, the keys
/// already made are removed and the error returned. Returns the primary
/// key's handle and then the additional keys' handles.
pub fn derive_keys_sp800_108(
    session: &Session,
    mech: &Mechanism<'_>,
    base: CK_OBJECT_HANDLE,
    template: &[Attr],
    additional: &[Vec<Attr>],
) -> Result<Vec<CK_OBJECT_HANDLE>> {
    mechanisms::require(mech, CKF_DERIVE)?;
    let material = single_call_key(session, base, mech, CKA_DERIVE)?;
    let base_key = session.token.key(base)?;
    let protection = prf_base_protection(session, &base_key, &material, mech)?;
    let mut templates = std::iter::once(template)
        .chain(additional.iter().map(Vec::as_slice))
        .map(|t| with_key_template(&base_key, CKA_DERIVE_TEMPLATE, t))
        .collect::<Result<Vec<_>>>()?;
    // "Key Derivation Attribute Rules": CKA_SENSITIVE and CKA_EXTRACTABLE
    // left out of a template take the base key's values.
    for t in &mut templates {
        if !t.iter().any(|a| a.ty == CKA_SENSITIVE) {
            t.push(Attr::bool(CKA_SENSITIVE, protection.sensitive));
        }
        if !t.iter().any(|a| a.ty == CKA_EXTRACTABLE) {
            t.push(Attr::bool(CKA_EXTRACTABLE, protection.extractable));
        }
    }
    drop(base_key);
    let mut shapes = Vec::with_capacity(templates.len());
    for t in &templates {
        let key_type = template::template_value(t, CKA_KEY_TYPE)?
            .map(crate::attributes::decode_ulong)
            .transpose()?
            .unwrap_or(CKK_GENERIC_SECRET);
        let len = match template::template_value(t, CKA_VALUE_LEN)?
            .map(crate::attributes::decode_ulong)
            .transpose()?
        {
            Some(l) => usize::try_from(l).map_err(|_| err(CKR_ATTRIBUTE_VALUE_INVALID))?,
            None => {
                mechanisms::default_derived_len(key_type).ok_or(err(CKR_TEMPLATE_INCOMPLETE))?
            }
        };
        // Bounded before it reaches the KDF's buffer and loop.
        mechanisms::check_secret_len(key_type, len)?;
        // Each key keeps the floor of its base's strength (as C_DeriveKey).
        key_policy::check_derived_strength(
            protection.protected(),
            strength::strength(&material),
            len,
            strength::secret_strength(key_type, len),
        )?;
        shapes.push((key_type, len));
    }
    let lens: Vec<usize> = shapes.iter().map(|&(_, l)| l).collect();
    let mut values = mechanisms::derive_sp800_108(mech, &material, &lens)?;
    for (value, (key_type, _)) in values.iter_mut().zip(&shapes) {
        mechanisms::shape_derived_value(*key_type, value);
    }
    let mut made = Vec::with_capacity(values.len());
    for ((t, (key_type, _)), value) in templates.iter().zip(&shapes).zip(&values) {
        let t: Vec<Attr> = t
            .iter()
            .filter(|a| a.ty != CKA_VALUE_LEN)
            .cloned()
            .collect();
        match insert_secret(
            session,
            &t,
            Some(*key_type),
            Origin::Derive,
            mech.ty,
            value,
            Some(protection),
        ) {
            Ok(h) => made.push(h),
            Err(e) => {
                for h in made {
                    if let Ok(obj) = session.token.object(h) {
                        let _ = session.token.remove(&obj);
                    }
                }
                return Err(e);
            }
        }
    }
    Ok(made)
}

/// What a key derived by a PRF keyed by `base` over data the caller chose
/// (SP 800-108, TLS 1.2) inherits from it: a base that may also sign with
/// that PRF's HMAC or CMAC computes the derived value for its caller, so
/// under `strict` the derivation is refused (`CKR_KEY_FUNCTION_NOT_PERMITTED`)
/// and under `default` the new key is marked as one whose value may be
/// known (docs/SECURITY.md, "Derived keys"). A base that was not always
/// sensitive passes on that mark anyway: the rule only weighs bases whose
/// value no caller ever saw.
pub(super) fn prf_base_protection(
    session: &Session,
    base: &Object,
    material: &Arc<KeyMaterial>,
    mech: &Mechanism<'_>,
) -> Result<BaseProtection> {
    let protection = BaseProtection::of(base);
    let reveals =
        protection.always_sensitive && key_use::signs_derived_output(base, material, mech);
    key_policy::check_revealing_base(Rules::of(session.token.config()), reveals)?;
    Ok(if reveals {
        protection.value_may_be_known()
    } else {
        protection
    })
}

/// A second key a derivation parameter names (the key of
/// `CKM_CONCATENATE_BASE_AND_KEY`, the IKE mechanisms' hNewKey, hKeygxy,
/// hPrevKey and hSeedKey): it must allow derivation and the mechanism, as
/// the base must, and be a secret key. Its value and protection.
fn second_key(
    session: &Session,
    handle: CK_OBJECT_HANDLE,
    mech: &Mechanism<'_>,
) -> Result<(Zeroizing<Vec<u8>>, BaseProtection)> {
    let value = secret_key_value(&*single_call_key(session, handle, mech, CKA_DERIVE)?)?;
    Ok((value, BaseProtection::of(&*session.token.key(handle)?)))
}

/// The value of any secret key a derivation parameter names (the second
/// key of `CKM_CONCATENATE_BASE_AND_KEY`), else `CKR_KEY_TYPE_INCONSISTENT`.
fn secret_key_value(material: &KeyMaterial) -> Result<Zeroizing<Vec<u8>>> {
    mechanisms::secret_value(material).map(|v| Zeroizing::new(v.to_vec()))
}

/// The value of a secret key a KDF parameter names (a generic secret or
/// HKDF key), else `CKR_KEY_TYPE_INCONSISTENT`.
fn kdf_key_value(material: &KeyMaterial) -> Result<Zeroizing<Vec<u8>>> {
    match material {
        KeyMaterial::Secret {
            key_type: CKK_GENERIC_SECRET | CKK_HKDF,
            value,
            ..
        } => Ok(value.clone()),
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}
