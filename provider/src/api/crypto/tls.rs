//! The TLS 1.2 derivations that make a master secret or several keys
//! (mechanisms spec 3.0 §2.42 "TLS 1.2 mechanisms"; docs/SECURITY.md
//! "TLS 1.2"): `CKM_TLS12_MASTER_KEY_DERIVE[_DH]`,
//! `CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE[_DH]`,
//! `CKM_TLS12_KEY_AND_MAC_DERIVE` and `CKM_TLS12_KEY_SAFE_DERIVE`. The
//! master secret and every key below it keep their base's protection;
//! the version bytes and the IVs, which come back in the clear, are
//! returned only where they cannot reveal a protected key.

use super::derive::prf_base_protection;
use super::key_use::single_call_key;
use super::new_key::{BaseProtection, insert_secret, with_key_template};
use crate::api::key_policy::{self, Rules};
use crate::api::session::Session;
use crate::api::template::{self, Origin};
use crate::api::tls_binding;
use crate::attributes::{Attr, decode_bool, decode_ulong};
use crate::error::{Result, err};
use crate::mechanisms::kdf::tls::{self, KeyMatParams, MASTER_LEN, MasterParams};
use crate::mechanisms::keys::KeyMaterial;
use crate::mechanisms::{self, Mechanism, Param, strength};
use cryptoki_sys::*;
use zeroize::Zeroizing;

/// The mechanisms a master secret may be used with when its template does
/// not say (and, for a protected master, the only ones it may list).
pub const MASTER_MECHANISMS: [CK_MECHANISM_TYPE; 6] = [
    CKM_TLS12_KEY_AND_MAC_DERIVE,
    CKM_TLS12_KEY_SAFE_DERIVE,
    CKM_TLS_KDF,
    CKM_TLS12_KDF,
    CKM_TLS_MAC,
    CKM_TLS12_MAC,
];

/// What a protected master may list besides [`MASTER_MECHANISMS`]: the
/// master-secret derivations, whose output is again a master restricted
/// to these mechanisms. A consumer that gives pre-masters and masters one
/// list (SunPKCS11 applies one attribute set to every generic secret it
/// makes) can so keep HMAC off both (docs/consumers.md, "Java").
const MASTER_MAY_ALSO_LIST: [CK_MECHANISM_TYPE; 4] = [
    CKM_TLS12_MASTER_KEY_DERIVE,
    CKM_TLS12_MASTER_KEY_DERIVE_DH,
    CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE,
    CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE_DH,
];

/// A key whose value was never known outside the token: protected, and
/// `CKA_ALWAYS_SENSITIVE` and `CKA_NEVER_EXTRACTABLE` (an imported,
/// unwrapped or PBKDF2 key is not).
fn token_secret(p: BaseProtection) -> bool {
    p.protected() && p.always_sensitive && p.never_extractable
}

/// The value of a generic secret base, else `CKR_KEY_TYPE_INCONSISTENT`.
fn generic_value(material: &KeyMaterial) -> Result<&[u8]> {
    match material {
        KeyMaterial::Secret {
            key_type: CKK_GENERIC_SECRET,
            value,
            ..
        } => Ok(value),
        _ => Err(err(CKR_KEY_TYPE_INCONSISTENT)),
    }
}

/// A `CK_ULONG` attribute of the template must be `want` if given.
fn agrees(template: &[Attr], ty: CK_ATTRIBUTE_TYPE, want: CK_ULONG) -> Result<()> {
    match template::template_value(template, ty)? {
        Some(v) if decode_ulong(v)? != want => Err(err(CKR_TEMPLATE_INCONSISTENT)),
        _ => Ok(()),
    }
}

/// Adds `(ty, true)` when the template does not give `ty`.
fn default_true(template: &mut Vec<Attr>, ty: CK_ATTRIBUTE_TYPE) {
    if !template.iter().any(|a| a.ty == ty) {
        template.push(Attr::bool(ty, true));
    }
}

/// `C_DeriveKey` with a master-secret mechanism: the 48-byte generic
/// secret's handle, and the version bytes when `pVersion` was given (the
/// first two bytes of the pre-master; refused for a token-secret base).
pub fn derive_master(
    session: &Session,
    mech: &Mechanism<'_>,
    base: CK_OBJECT_HANDLE,
    template: &[Attr],
) -> Result<(CK_OBJECT_HANDLE, Option<[u8; 2]>)> {
    mechanisms::require(mech, CKF_DERIVE)?;
    let Param::TlsMaster(p) = mech.param else {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    };
    let material = single_call_key(session, base, mech, CKA_DERIVE)?;
    let pre_master = generic_value(&material)?;
    // The RSA pre-master is 48 bytes (RFC 5246 §7.4.7.1); a DH one any length.
    let dh = matches!(
        mech.ty,
        CKM_TLS12_MASTER_KEY_DERIVE_DH | CKM_TLS12_EXTENDED_MASTER_KEY_DERIVE_DH
    );
    if !dh && pre_master.len() != MASTER_LEN {
        return Err(err(CKR_KEY_SIZE_RANGE));
    }
    let base_key = session.token.key(base)?;
    // pVersion reads the base's own bytes: judged on the base as it is.
    let version = check_version(p, BaseProtection::of(&base_key), pre_master)?;
    let protection = prf_base_protection(session, &base_key, &material, mech)?;
    let mut template = with_key_template(&base_key, CKA_DERIVE_TEMPLATE, template)?;
    drop(base_key);
    agrees(&template, CKA_CLASS, CKO_SECRET_KEY)?;
    agrees(&template, CKA_KEY_TYPE, CKK_GENERIC_SECRET)?;
    agrees(&template, CKA_VALUE_LEN, MASTER_LEN as CK_ULONG)?;
    template.retain(|a| a.ty != CKA_VALUE_LEN);
    master_usage(&mut template, protection.protected())?;
    protection.impose_on(&mut template);
    let value = tls::master_secret(p, pre_master)?;
    key_policy::check_derived_strength(
        protection.protected(),
        strength::strength(&material),
        MASTER_LEN,
        strength::secret_strength(CKK_GENERIC_SECRET, MASTER_LEN),
    )?;
    let h = insert_secret(
        session,
        &template,
        Some(CKK_GENERIC_SECRET),
        Origin::Derive,
        mech.ty,
        &value,
        Some(protection),
    )?;
    Ok((h, version))
}

/// `pVersion`: the first two bytes of the pre-master, but never of a
/// token-secret one (they could be any two bytes of a protected key
/// shifted there by other derivations): `CKR_MECHANISM_PARAM_INVALID`.
fn check_version(
    p: &MasterParams,
    protection: BaseProtection,
    pre_master: &[u8],
) -> Result<Option<[u8; 2]>> {
    if !p.version {
        return Ok(None);
    }
    if token_secret(protection) || pre_master.len() < 2 {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    Ok(Some([pre_master[0], pre_master[1]]))
}

/// The master secret's usage: `CKA_DERIVE`, `CKA_SIGN` and `CKA_VERIFY`
/// unless the template says otherwise (JSSE asks for none of them), and
/// `CKA_ALLOWED_MECHANISMS` the TLS mechanisms unless the template gives
/// a list; a protected master may list only TLS mechanisms (an HMAC under
/// the master secret computes the key block: CKR_TEMPLATE_INCONSISTENT),
/// the master-secret derivations included ([`MASTER_MAY_ALSO_LIST`]).
fn master_usage(template: &mut Vec<Attr>, protected: bool) -> Result<()> {
    for ty in [CKA_DERIVE, CKA_SIGN, CKA_VERIFY] {
        default_true(template, ty);
    }
    match template::template_value(template, CKA_ALLOWED_MECHANISMS)? {
        None => {
            let list: Vec<u8> = MASTER_MECHANISMS
                .iter()
                .flat_map(|m| m.to_ne_bytes())
                .collect();
            template.push(Attr::new(CKA_ALLOWED_MECHANISMS, &list));
        }
        Some(list) if protected => {
            let size = std::mem::size_of::<CK_ULONG>();
            let only_tls = !list.is_empty()
                && list.len().is_multiple_of(size)
                && list.chunks_exact(size).all(|c| {
                    c.try_into().map(CK_ULONG::from_ne_bytes).is_ok_and(|m| {
                        MASTER_MECHANISMS.contains(&m) || MASTER_MAY_ALSO_LIST.contains(&m)
                    })
                });
            if !only_tls {
                return Err(err(CKR_TEMPLATE_INCONSISTENT));
            }
        }
        Some(_) => {}
    }
    Ok(())
}

/// What `CKM_TLS12_KEY_AND_MAC_DERIVE` / `CKM_TLS12_KEY_SAFE_DERIVE` made:
/// client MAC, server MAC, client write, server write key handles
/// (`CK_INVALID_HANDLE` for absent keys) and the client and server IVs.
pub struct KeyMaterialOut {
    /// `hClientMacSecret`, `hServerMacSecret`, `hClientKey`, `hServerKey`.
    pub handles: [CK_OBJECT_HANDLE; 4],
    /// The client IV then the server IV (empty when none).
    pub ivs: Zeroizing<Vec<u8>>,
}

/// IV policy (docs/SECURITY.md "TLS 1.2"): for a token-secret master, IVs
/// only from a session object under `default` and only for the first
/// split of the tuple; never under `strict`. Every split of a
/// token-secret master is recorded under `default`.
fn check_split(
    rules: Rules,
    secret: bool,
    token_object: bool,
    p: &KeyMatParams,
    master: &[u8],
) -> Result<()> {
    if !secret {
        return Ok(());
    }
    if p.iv_len > 0 && (rules.strict() || token_object) {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    }
    if rules.strict() {
        return Ok(());
    }
    tls_binding::bind(
        master,
        p.prf,
        &p.client,
        &p.server,
        (p.mac_len, p.key_len, p.iv_len),
    )
}

/// `C_DeriveKey` with `CKM_TLS12_KEY_AND_MAC_DERIVE` or
/// `CKM_TLS12_KEY_SAFE_DERIVE` from the master secret `base`. The template
/// types the write keys; the MAC keys are generic secrets for signing,
/// verifying and deriving. All four keys have the base's `CKA_SENSITIVE`
/// and `CKA_EXTRACTABLE` (a template giving other values is
/// `CKR_TEMPLATE_INCONSISTENT`). All or nothing.
pub fn derive_key_material(
    session: &Session,
    mech: &Mechanism<'_>,
    base: CK_OBJECT_HANDLE,
    template: &[Attr],
) -> Result<KeyMaterialOut> {
    mechanisms::require(mech, CKF_DERIVE)?;
    let Param::TlsKeyMat(p) = mech.param else {
        return Err(err(CKR_MECHANISM_PARAM_INVALID));
    };
    let mut p = p.clone();
    if mech.ty == CKM_TLS12_KEY_SAFE_DERIVE {
        p.iv_len = 0;
    }
    let material = single_call_key(session, base, mech, CKA_DERIVE)?;
    let master = generic_value(&material)?;
    if master.len() != MASTER_LEN {
        return Err(err(CKR_KEY_SIZE_RANGE));
    }
    let base_key = session.token.key(base)?;
    let protection = prf_base_protection(session, &base_key, &material, mech)?;
    let token_object = base_key.flag(CKA_TOKEN);
    let mut write = with_key_template(&base_key, CKA_DERIVE_TEMPLATE, template)?;
    drop(base_key);
    for (ty, want) in [
        (CKA_SENSITIVE, protection.sensitive),
        (CKA_EXTRACTABLE, protection.extractable),
    ] {
        if let Some(v) = template::template_value(&write, ty)?
            && decode_bool(v)? != want
        {
            return Err(err(CKR_TEMPLATE_INCONSISTENT));
        }
        write.retain(|a| a.ty != ty);
        write.push(Attr::bool(ty, want));
    }
    agrees(&write, CKA_CLASS, CKO_SECRET_KEY)?;
    let key_type = template::template_value(&write, CKA_KEY_TYPE)?
        .map(decode_ulong)
        .transpose()?
        .unwrap_or(CKK_GENERIC_SECRET);
    if p.key_len > 0 {
        agrees(&write, CKA_VALUE_LEN, p.key_len as CK_ULONG)?;
        mechanisms::check_secret_len(key_type, p.key_len)?;
    }
    write.retain(|a| a.ty != CKA_VALUE_LEN);
    for ty in [CKA_ENCRYPT, CKA_DECRYPT, CKA_DERIVE] {
        default_true(&mut write, ty);
    }
    // MAC keys: generic secrets for signing, verifying and deriving, with
    // the write keys' storage attributes and protection.
    let mut mac: Vec<Attr> = write
        .iter()
        .filter(|a| {
            matches!(
                a.ty,
                CKA_TOKEN | CKA_PRIVATE | CKA_SENSITIVE | CKA_EXTRACTABLE | CKA_MODIFIABLE
            )
        })
        .cloned()
        .collect();
    for ty in [CKA_SIGN, CKA_VERIFY, CKA_DERIVE] {
        mac.push(Attr::bool(ty, true));
    }
    // Key-length reduction (Clulow 2003): each key keeps the floor.
    for (ty, len) in [(CKK_GENERIC_SECRET, p.mac_len), (key_type, p.key_len)] {
        if len > 0 {
            key_policy::check_derived_strength(
                protection.protected(),
                strength::strength(&material),
                len,
                strength::secret_strength(ty, len),
            )?;
        }
    }
    let rules = Rules::of(session.token.config());
    check_split(rules, token_secret(protection), token_object, &p, master)?;
    let block = tls::key_block(&p, master)?;
    let (m, k, i) = (p.mac_len, p.key_len, p.iv_len);
    let mut parts = [
        (
            &mac,
            CKK_GENERIC_SECRET,
            Zeroizing::new(block[..m].to_vec()),
        ),
        (
            &mac,
            CKK_GENERIC_SECRET,
            Zeroizing::new(block[m..2 * m].to_vec()),
        ),
        (
            &write,
            key_type,
            Zeroizing::new(block[2 * m..2 * m + k].to_vec()),
        ),
        (
            &write,
            key_type,
            Zeroizing::new(block[2 * m + k..2 * (m + k)].to_vec()),
        ),
    ];
    let mut handles = [CK_INVALID_HANDLE; 4];
    for (n, (t, ty, value)) in parts.iter_mut().enumerate() {
        if value.is_empty() {
            continue;
        }
        mechanisms::shape_derived_value(*ty, value);
        match insert_secret(
            session,
            t,
            Some(*ty),
            Origin::Derive,
            mech.ty,
            value,
            Some(protection),
        ) {
            Ok(h) => handles[n] = h,
            Err(e) => {
                for h in handles.into_iter().filter(|&h| h != CK_INVALID_HANDLE) {
                    if let Ok(obj) = session.token.object(h) {
                        let _ = session.token.remove(&obj);
                    }
                }
                return Err(e);
            }
        }
    }
    let ivs = Zeroizing::new(block[2 * (m + k)..2 * (m + k + i)].to_vec());
    Ok(KeyMaterialOut { handles, ivs })
}
